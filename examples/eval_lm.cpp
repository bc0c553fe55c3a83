// eval_lm: the loss and perplexity of a checkpoint on a text file, and optionally the gradients
// of the loss on one batch, to compare tapegrad against another framework.
//   build/examples/eval_lm --checkpoint runs/demo --data some.txt
//   build/examples/eval_lm --checkpoint runs/demo --data some.txt --dump-grads grads.safetensors
//   build/examples/eval_lm --checkpoint runs/demo --data some.txt --sharpness
//
// The loss covers the whole file: non-overlapping windows of ctx tokens, each predicting its next
// tokens (the final partial window included), weighted by tokens. It is the cross-entropy alone,
// and the perplexity its exp; a model trained with a z-loss also gets that penalty and log Z's
// mean printed beside it, under their own names. --dump-grads takes the first
// --batch windows as the batch; their token ids are stored in the file's metadata ("ids",
// "targets", as JSON) with the loss, so the same batch can be fed to PyTorch. --sharpness measures,
// on that same batch in float64, the top eigenvalue of the loss's Hessian and, under AdamW, of the
// preconditioned P^-1 H with the checkpoint's moments (lm/sharpness.h), with their thresholds at
// the learning rate of the checkpoint's step (or --lr): a number an independent implementation
// can check on the batch --dump-grads documents.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "tapegrad/cli/cli.h"
#include "tapegrad/checked.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/safetensors.h"
#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/sharpness.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::lm;
using namespace tapegrad::cli;

int main(int argc, char** argv) {
  CLI::App app{"Evaluate a tapegrad checkpoint on a text file", "eval_lm"};
  std::string dir, data, dump;
  int64_t batch = 0, sharpness_iters = 20;
  int threads = 0;
  bool sharpness = false;
  double lr = 0;
  app.add_option("--checkpoint", dir, "run directory written by train_lm")->required();
  app.add_option("--data", data, "UTF-8 text file to evaluate on")->required();
  app.add_option("--dump-grads", dump, "write the gradients of the loss on one batch to this .safetensors file");
  app.add_option("--batch", batch, "windows in the --dump-grads and --sharpness batch (default: the run's batch)")
      ->check(positive());
  app.add_flag("--sharpness", sharpness,
               "the top Hessian eigenvalue of the loss on that batch, plain and Adam-preconditioned (float64, Lanczos)");
  app.add_option("--sharpness-iters", sharpness_iters, "Lanczos steps at most, per eigenvalue")->check(CLI::Range(1, 1000));
  app.add_option("--lr", lr, "step size of the thresholds (default: the schedule's at the checkpoint's step)")
      ->check(positive());
  app.add_option("--threads", threads, "threads (0: one per core)")->check(non_negative());
  return run_cli(app, argc, argv, [&] {
    set_num_threads(threads);
    if (!dump.empty()) {  // never onto what this run reads: the checkpoint's own files
      namespace fs = std::filesystem;
      std::error_code ec;
      const fs::path folder = fs::weakly_canonical(dir, ec), target = fs::weakly_canonical(dump, ec).parent_path();
      if (!folder.empty() && target == folder)
        throw UsageError(cat("--dump-grads '", dump, "' is inside the checkpoint folder '", dir,
                             "' this program reads; write the gradients elsewhere"));
    }
    LoadedModel m = load_model(dir);
    const std::string text = io::read_file(data);
    check(!text.empty(), "'", data, "' is empty");
    std::vector<int32_t> tokens;
    try {
      tokens = m.tokenizer->encode(text);
    } catch (const Error& e) {
      throw Error(cat("'", data, "' cannot be encoded with this checkpoint's tokenizer: ", e.what()));
    }
    const int64_t ctx = m.model->config().ctx, n = static_cast<int64_t>(tokens.size());
    check(n >= 2, "'", data, "' holds ", n, " token(s); at least 2 are needed to predict one");
    Tape<float> tape;
    double ce = 0, penalty = 0, log_z = 0;  // token-weighted sums
    int64_t predicted = 0, windows = 0;
    for (int64_t start = 0; start + 1 < n; start += ctx) {
      const int64_t T = std::min(ctx, n - 1 - start);
      const std::span<const int32_t> ids(tokens.data() + start, static_cast<size_t>(T));
      const std::span<const int32_t> targets(tokens.data() + start + 1, static_cast<size_t>(T));
      tape.clear();
      auto guard = tape.no_grad();
      const CrossEntropyTerms t = m.model->forward(tape, ids, 1, T, targets).terms;
      const auto w = static_cast<double>(T);
      ce += t.cross_entropy * w, penalty += t.z_loss * w, log_z += t.log_z_mean * w;
      predicted += T;
      ++windows;
    }
    const double tokens_done = static_cast<double>(predicted), loss = ce / tokens_done;
    std::printf("loss %.4f  perplexity %.3f  (%lld tokens predicted in %lld windows of up to %lld)\n", loss,
                std::exp(loss), static_cast<long long>(predicted), static_cast<long long>(windows),
                static_cast<long long>(ctx));
    if (m.model->config().z_loss > 0)
      std::printf("z-loss %.6f (coefficient %g, not part of the loss)  mean log Z %.4f\n", penalty / tokens_done,
                  m.model->config().z_loss, log_z / tokens_done);

    if (dump.empty() && !sharpness) return 0;
    // The documented batch: the file's first B windows of ctx tokens, each with its next tokens.
    const int64_t B = batch > 0 ? batch : m.config.batch;
    const int64_t need = checked_add(checked_mul(B, ctx, "--batch x context"), 1, "--batch x context");
    check(n >= need, dump.empty() ? "--sharpness" : "--dump-grads", " needs ", B, " windows of ", ctx, " + 1 tokens (",
          need, ") but '", data, "' has ", n, " tokens; pass a smaller --batch");
    std::vector<int32_t> ids, targets;
    for (int64_t b = 0; b < B; ++b) {
      ids.insert(ids.end(), tokens.begin() + b * ctx, tokens.begin() + b * ctx + ctx);
      targets.insert(targets.end(), tokens.begin() + b * ctx + 1, tokens.begin() + b * ctx + ctx + 1);
    }
    if (sharpness) {
      const auto optimizer = load_optimizer(dir, m);
      const TrainConfig& c = m.config;
      const int64_t step = m.checkpoint["step"].get<int64_t>();
      const double eta = lr > 0 ? lr : schedule_for(c)->at(std::max<int64_t>(0, step - 1));
      const Sharpness h = measure_sharpness(*m.model, *optimizer, ids, targets, B, ctx, eta,
                                            {.iters = static_cast<int>(sharpness_iters)});
      std::printf("sharpness on the first %lld windows of '%s' (the --dump-grads batch), lr %.6g (step %lld):\n",
                  static_cast<long long>(B), data.c_str(), eta, static_cast<long long>(step));
      std::printf("  top eigenvalue of H           %.6g  (threshold %.6g, ratio %.3f; %d Lanczos steps, residual %.2g)\n",
                  h.value, h.threshold, h.value / h.threshold, h.iterations, h.residual);
      if (!std::isnan(h.preconditioned))
        std::printf("  top eigenvalue of P^-1 H      %.6g  (threshold %.6g, ratio %.3f; %d Lanczos steps, residual %.2g)\n",
                    h.preconditioned, h.preconditioned_threshold, h.preconditioned / h.preconditioned_threshold,
                    h.preconditioned_iterations, h.preconditioned_residual);
    }
    if (!dump.empty()) {
      tape.clear();
      m.model->zero_grad();
      const auto out = m.model->forward(tape, ids, B, ctx, targets);
      tape.backward(out.loss);
      io::NamedTensors<float> grads;
      for (auto& [name, p] : m.model->named_parameters()) grads.emplace_back(name, p->grad().view());
      // The gradients are of the objective (cross-entropy + z-loss), which "objective" holds;
      // "loss" is the cross-entropy alone, as everywhere else.
      const auto exact = [](double v) { return nlohmann::json(v).dump(); };  // every digit: reads back exactly
      io::save_safetensors<float>(dump, grads,
                                  {{"loss", exact(out.terms.cross_entropy)}, {"z_loss", exact(out.terms.z_loss)},
                                   {"objective", exact(out.loss.value()[0])},
                                   {"batch", std::to_string(B)}, {"ctx", std::to_string(ctx)},
                                   {"ids", nlohmann::json(ids).dump()}, {"targets", nlohmann::json(targets).dump()}});
      std::printf("gradients of the objective %.6f (loss %.6f + z-loss %.6f) on a (%lld, %lld) batch written to %s\n",
                  out.loss.value()[0], out.terms.cross_entropy, out.terms.z_loss, static_cast<long long>(B),
                  static_cast<long long>(ctx), dump.c_str());
    }
    return 0;
  });
}
