// train_lm: train a tiny decoder-only transformer on UTF-8 text (the embedded corpus by default).
//
//   build/examples/train_lm --out runs/demo                       # defaults: L4 H4 C128 T64 B12, 2000 steps
//   build/examples/train_lm --data ../shared/data/tinyshakespeare.txt --norm rmsnorm --out runs/rms
//   build/examples/train_lm --resume runs/demo --steps 3000       # continue (bitwise as if never stopped)
//   mpirun -np 2 build/examples/train_lm --out runs/dp             # data-parallel over 2 processes
//
// Writes to --out: config.json (every flag; feed it back with --config), metrics.jsonl (one line
// per step, one per evaluation), and a checkpoint (model.safetensors, optimizer.safetensors,
// checkpoint.json) every --checkpoint-every steps and at the end. Ctrl-C saves a checkpoint and
// exits; `--resume DIR` continues from it. Under mpirun every rank trains its slice of the global
// --batch and rank 0 alone writes (see Trainer for the one allreduce per step).

#include <CLI/CLI.hpp>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <optional>
#include <set>

#include "tapegrad/cli/cli.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/io/file.h"
#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/sharpness.h"
#include "tapegrad/lm/communicator.h"
#include "tapegrad/lm/divergence.h"
#include "tapegrad/lm/flops.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/lm/run.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/lm/run_log.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/lm/step_record.h"
#include "tapegrad/progress.h"
#include "tapegrad/threads.h"
#include "tapegrad/cli/train_flags.h"

using namespace tapegrad;
using namespace tapegrad::lm;
using namespace tapegrad::cli;

namespace {

// One metrics.jsonl line: the step's record (lm/step_record.h) and the model's GFLOP/s.
nlohmann::json step_line(const StepResult& s, double flops, const StepStats* stats) {
  nlohmann::json j = lm::step_record(s, stats);
  j["gflops_per_s"] = flops / (s.step_ms / 1000.0) / 1e9;
  return j;
}

// The bf16 run's kernels, and on a CPU without bf16 arithmetic what the emulated path buys: the
// numerics of bf16 hardware (operands rounded, float32 sums), not its speed (docs/training.md).
std::string bf16_banner() {
  if (bf16_kernels() == Bf16Kernels::kEmulated)
    return ", bf16 GEMMs (emulated: float32 arithmetic on bf16 operands, bf16's numerics but not its speed)";
  return cat(", bf16 GEMMs (", bf16_kernels_name(), ")");
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const std::unique_ptr<Communicator> processes = cli::start_communicator(&argc, &argv);
  const Communicator& comm = *processes;
  const bool root = comm.root();
  CLI::App app{"Train a tiny decoder-only transformer (tapegrad)", "train_lm"};
  TrainConfig config;
  std::string out = "runs/train_lm", resume;
  int64_t stop_after = 0;
  bool allow_data_change = false;
  add_train_flags(app, config);
  app.add_option("--out", out, "output directory (config, metrics, checkpoints)");
  app.add_option("--resume", resume, "continue the run saved in this directory (its config is used; "
                                     "--steps and --threads may be changed)");
  app.add_option("--stop-after", stop_after, "stop after this step with a checkpoint, as if interrupted "
                                             "(the schedule still spans --steps; continue with --resume)")
      ->check(positive());
  app.add_flag("--allow-data-change", allow_data_change, "with --resume: continue although the training text differs "
                                                        "from the one the run was trained on (size or SHA-256)")
      ->default_str("false");
  return run_cli(app, argc, argv, [&]() -> int {
    std::unique_ptr<Trainer> trainer;
    std::optional<RunLock> lock;  // one writer per run folder (rank 0 writes)
    if (!resume.empty()) {
      const std::set<std::string> adjustable{"--resume", "--steps", "--threads", "--eval-every", "--eval-iters",
                                             "--checkpoint-every", "--stop-after", "--allow-data-change"};
      for (const CLI::Option* opt : app.get_options())
        check(opt->count() == 0 || adjustable.count(opt->get_name()), "--resume continues the saved run with its own "
              "settings; ", opt->get_name(), " cannot be changed (--steps, --threads, --eval-every, --eval-iters, "
              "--checkpoint-every and --stop-after can)");
      ResumeOverrides o;
      o.allow_data_change = allow_data_change;
      if (app.count("--steps")) o.steps = config.steps;
      if (app.count("--threads")) o.threads = config.threads;
      if (app.count("--eval-every")) o.eval_every = config.eval_every;
      if (app.count("--eval-iters")) o.eval_iters = config.eval_iters;
      if (app.count("--checkpoint-every")) o.checkpoint_every = config.checkpoint_every;
      if (root) lock.emplace(resume, /*create=*/false);  // before resume_trainer, which may repair the folder
      trainer = resume_trainer(resume, o, &comm);
      out = resume;
      check(trainer->step() < trainer->config().steps, "the run in '", resume, "' already finished its ",
            trainer->config().steps, " steps; pass --steps N with a larger N to continue it");
    } else {
      if (allow_data_change) throw UsageError("--allow-data-change applies to --resume only");
      const std::set<std::string> given = given_settings(app);
      config = configure(config, given);  // the recipe, then every check; flags given win over the recipe's
      if (root)
        for (const std::string& w : config.warnings())
          std::fprintf(stderr, "train_lm: warning: %s\n", render_settings(w, "--").c_str());
      if (root) lock.emplace(out);
      const std::string what = config.data.empty() ? std::string("embedded corpus") : config.data;
      const std::string text = load_text(config.data);
      auto tokenizer = build_tokenizer(config, text, what);
      trainer = std::make_unique<Trainer>(config, tokenizer, make_token_data(config, *tokenizer, text), &comm);
      if (root) io::write_file_atomic(out + "/config.json", to_json(trainer->config()).dump(2) + "\n");
    }
    const TrainConfig& c = trainer->config();
    auto& model = *trainer->decoder();  // train_lm trains tapegrad's decoder
    const double flops = flops_per_step(model.config(), c.batch, c.model.ctx);
    // The step's own GEMMs, as this process runs them (its share of the batch, split over its
    // threads): the limit a step's FLOP/s is measured against (lm/flops.h).
    const int64_t ranks = comm.distributed() ? comm.size() : 1;
    const double gemm_peak = measure_step_gemm_gflops(model.config(), c.batch / ranks, c.model.ctx, StepSplit::kBatch, 0.1);
    if (root) {
      std::fprintf(stderr, "%s(%s)\n%lld parameters, vocab %lld (%s tokenizer), %d threads%s%s; %.2f GFLOP/step, step-GEMM limit %.0f GFLOP/s\n",
                   model.type_name().c_str(), model.options_repr().c_str(),
                   static_cast<long long>(model.num_parameters()), static_cast<long long>(trainer->tokenizer().vocab_size()),
                   c.tokenizer.c_str(), num_threads(),
                   comm.distributed() ? (" per rank x " + std::to_string(comm.size()) + " ranks (data-parallel)").c_str() : "",
                   model.config().precision == Precision::kBf16 ? bf16_banner().c_str() : "",
                   flops / 1e9, gemm_peak);
      if (!resume.empty()) std::fprintf(stderr, "resuming at step %lld of %lld\n", static_cast<long long>(trainer->step()),
                                        static_cast<long long>(c.steps));
    }

    // Rank 0 alone writes metrics and checkpoints and draws progress.
    std::optional<MetricsLog> metrics;
    if (root) metrics.emplace(out, resume.empty() ? -1 : trainer->step());
    const auto log = [&](const nlohmann::json& line) {
      if (metrics) metrics->write(line);
    };
    Progress progress(trainer->step(), c.steps, root && Progress::stderr_is_terminal(), root);
    install_stop_handlers();
    bool saved = !resume.empty();  // whether `out` holds a checkpoint of this run
    double ms_sum = 0, tok_sum = 0, comm_sum = 0;
    int64_t timed = 0;
    StepResult diverged_step;
    RunHooks hooks;
    hooks.stop_requested = [] { return stop_signal() != 0; };
    hooks.stop_after = stop_after;
    hooks.on_checkpoint = [&](int64_t) {
      if (root) save_checkpoint(*trainer, out);
      saved = true;
    };
    hooks.on_step = [&](const StepReport& report) {
      const StepResult& s = report.result;
      if (report.divergence) {
        diverged_step = s;
        log({{"step", s.step}, {"loss", s.loss}, {"grad_norm", s.grad_norm}, {"diverged", true},
             {"divergence", report.divergence->quantity}});
        return;
      }
      log(step_line(s, flops, report.stats));
      if (s.step > 1) ms_sum += s.step_ms, tok_sum += s.tokens_per_s, comm_sum += s.comm_ms, ++timed;  // step 1: warm-up
      progress.update(s.step, s.loss, s.tokens_per_s, "tok/s");
      if (const auto& e = report.eval) {
        const bool train = !std::isnan(e->train_loss);  // estimated only with --eval-train
        nlohmann::json line = {{"step", s.step}, {"val_loss", e->val_loss}};
        if (train) line["train_loss"] = e->train_loss;
        log(line);
        progress.message(train ? fmt("step %5.0f: train loss %.4f, val loss %.4f", static_cast<double>(s.step),
                                     e->train_loss, e->val_loss)
                               : fmt("step %5.0f: val loss %.4f", static_cast<double>(s.step), e->val_loss));
      }
      if (const auto& h = report.sharpness) {
        log(sharpness_line(s.step, *h));
        progress.message(fmt("step %5.0f: sharpness %.4g (%.2f of 2/lr)", static_cast<double>(s.step), h->value,
                             h->value / h->threshold) +
                         (std::isnan(h->preconditioned) ? std::string()
                                                        : fmt(", preconditioned %.4g (%.2f of its threshold)",
                                                              h->preconditioned, h->preconditioned / h->preconditioned_threshold)) +
                         (std::isnan(h->batch_sharpness) ? std::string()
                                                         : fmt(", batch sharpness %.4g (%.2f of 2/lr)", h->batch_sharpness,
                                                               h->batch_sharpness * s.lr / 2)));
      }
    };
    const RunOutcome outcome = run(*trainer, hooks);
    progress.finish();
    switch (outcome.end) {
      case RunEnd::kDiverged: {
        if (!root) return 1;  // the same reduced loss on every rank: rank 0 reports it
        const Divergence& d = *outcome.divergence;
        const std::string kept = saved ? cat("the last checkpoint in '", out, "' is intact")
                                       : cat("no checkpoint was saved yet (--checkpoint-every ", c.checkpoint_every, ")");
        const StepResult& s = diverged_step;
        throw Error(cat("training diverged at step ", d.step, ": ", d.detail, " (loss ", s.loss, ", gradient norm ",
                        s.grad_norm, "); ", s.finite ? "" : "the weights were not updated with it and ", kept, " (try a lower --lr", trainer->last_stats() ? ")" : ", or --instrument to see which layer)"));
      }
      case RunEnd::kStoppedAfter:
        if (root)
          std::fprintf(stderr, "stopped after step %lld as asked; checkpoint saved in '%s' (continue with --resume %s)\n",
                       static_cast<long long>(outcome.step), out.c_str(), out.c_str());
        return 0;
      case RunEnd::kStopRequested: {  // a signal reached some rank; all stopped at this same step
        const int sig = stop_signal() ? stop_signal() : SIGTERM;
        if (root)
          std::fprintf(stderr, "stopped by signal %d at step %lld; checkpoint saved in '%s' (continue with --resume %s)\n",
                       sig, static_cast<long long>(outcome.step), out.c_str(), out.c_str());
        return 128 + sig;
      }
      case RunEnd::kFinished: break;
    }
    if (!root) return 0;
    if (timed > 0) {
      const double ms = ms_sum / static_cast<double>(timed);
      std::fprintf(stderr, "done: %lld steps, %.1f ms/step, %.0f tokens/s, %.1f GFLOP/s (%.0f%% of the step-GEMM limit)%s\n",
                   static_cast<long long>(c.steps), ms, tok_sum / static_cast<double>(timed), flops / (ms / 1000) / 1e9,
                   100 * flops / static_cast<double>(ranks) / (ms / 1000) / 1e9 / gemm_peak,
                   comm.distributed() ? fmt(", allreduce %.2f ms/step", comm_sum / static_cast<double>(timed)).c_str() : "");
    }
    std::fprintf(stderr, "checkpoint: %s/{model.safetensors,optimizer.safetensors,checkpoint.json}\n", out.c_str());
    return 0;
  }, &comm);
}
