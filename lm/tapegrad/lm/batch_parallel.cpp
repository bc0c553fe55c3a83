#include "tapegrad/lm/batch_parallel.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <optional>

#include "tapegrad/threads.h"

namespace tapegrad::lm {

int batch_workers(int64_t B) { return static_cast<int>(std::min<int64_t>(num_threads(), B)); }

BatchShare batch_share(int64_t B, int workers, int k) { return {B * k / workers, B * (k + 1) / workers}; }

template <typename T>
BatchParallelStep<T>::BatchParallelStep(nn::LanguageModel<T>& model, std::vector<Parameter<T>*> params)
    : model_(model), decoder_(dynamic_cast<nn::Decoder<T>*>(&model)), params_(std::move(params)) {
  ensure_workers(1);
}

template <typename T>
void BatchParallelStep<T>::ensure_workers(int n) {
  while (static_cast<int>(workers_.size()) < n) {
    auto w = std::make_unique<Worker>();
    w->tape.retain_intermediate_grads(false);  // a step reads only the parameters' gradients
    w->grads = ParamGrads<T>(params_, workers_.empty() ? ParamGrads<T>::Storage::kParameters : ParamGrads<T>::Storage::kPrivate);
    w->tape.set_param_grads(&w->grads);
    workers_.push_back(std::move(w));
  }
  probes_.resize(static_cast<size_t>(n));
  weights_.resize(static_cast<size_t>(n));
  hook_calls_.resize(static_cast<size_t>(n));
}

template <typename T>
CrossEntropyTerms BatchParallelStep<T>::forward_backward(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B,
                                              int64_t Tn, nn::DecoderProbe* probe, double scale, bool add) {
  check(B > 0 && Tn > 0 && static_cast<int64_t>(ids.size()) == B * Tn && targets.size() == ids.size(),
        "BatchParallelStep: ", ids.size(), " ids and ", targets.size(), " targets for a batch of ", B, " x ", Tn);
  check(!probe || decoder_, "BatchParallelStep: statistics (a probe) come from a Decoder; the model is a ",
        model_.type_name());
  const int n = batch_workers(B);
  ensure_workers(n);
  used_ = n;
  for (int k = 0; k < n; ++k) {
    const BatchShare s = batch_share(B, n, k);
    weights_[static_cast<size_t>(k)] = static_cast<double>(s.end - s.begin) / static_cast<double>(B);
  }
  const bool collect = n > 1 && !nn::hooks_per_worker();
  operand_cache_.invalidate();  // the optimizer may have moved every weight since the last step
  const auto run = [&](int k) {
    Worker& w = *workers_[static_cast<size_t>(k)];
    const UseBf16OperandCache use_cache(&operand_cache_);
    std::optional<typename nn::HookCalls<T>::Collect> collecting;
    if (collect) collecting.emplace(hook_calls_[static_cast<size_t>(k)]);
    try {
      const BatchShare s = batch_share(B, n, k);
      const auto part = [&](std::span<const int32_t> all) {
        return all.subspan(static_cast<size_t>(s.begin * Tn), static_cast<size_t>((s.end - s.begin) * Tn));
      };
      w.tape.clear();
      if (k > 0 || !add) w.grads.zero();  // lazily: the first op to reach a gradient writes it
      auto out = probe ? decoder_->forward(w.tape, part(ids), s.end - s.begin, Tn, part(targets),
                                           &probes_[static_cast<size_t>(k)])
                       : model_.forward(w.tape, part(ids), s.end - s.begin, Tn, part(targets));
      check(out.loss.defined() && out.loss.shape().numel() == 1, model_.type_name(),
            "::forward must return a scalar loss for a batch with targets (nn::lm_output(logits, targets))");
      check(&out.loss.tape() == &w.tape, model_.type_name(), "::forward must record on the tape it is given");
      w.terms = out.terms;
      // As the tape's precision holds them; without a z-loss the cross-entropy is the taped value.
      w.terms.cross_entropy = out.terms.z_loss == 0 ? static_cast<double>(out.loss.value()[0])
                                                    : static_cast<double>(static_cast<T>(out.terms.cross_entropy));
      w.terms.z_loss = static_cast<T>(out.terms.z_loss);
      // d loss / d (this share's mean loss); scale == 1 keeps the float division of a whole batch.
      const T seed = scale == 1.0 ? static_cast<T>(s.end - s.begin) / static_cast<T>(B)
                                  : static_cast<T>(scale * static_cast<double>(s.end - s.begin) / static_cast<double>(B));
      w.tape.backward(out.loss, TensorView<const T>(&seed, out.loss.shape()));
    } catch (...) {
      w.error = std::current_exception();
    }
  };
  if (n == 1) {
    run(0);
  } else {
    // A team can come out smaller than asked (inside another parallel region, say): then its
    // threads take the remaining workers in turn, so every share is still computed.
#pragma omp parallel num_threads(n)
    for (int k = omp_get_thread_num(); k < n; k += omp_get_num_threads()) run(k);
  }
  std::exception_ptr error;  // the first, in worker order; every worker's is cleared
  for (int k = 0; k < n; ++k) {
    Worker& w = *workers_[static_cast<size_t>(k)];
    if (w.error && !error) error = w.error;
    w.error = nullptr;
  }
  workers_[0]->grads.fill_unwritten();  // parameters no op reached (or, after an error, not yet): zero
  const std::span<nn::HookCalls<T>> calls(hook_calls_.data(), static_cast<size_t>(n));
  if (error) {
    for (nn::HookCalls<T>& c : calls) c.calls.clear();
    std::rethrow_exception(error);
  }
  if (collect) nn::run_collected(calls, hook_tape_);
  CrossEntropyTerms terms{.log_z_min = std::numeric_limits<double>::infinity()};
  for (int k = 0; k < n; ++k) {
    const double wk = weights_[static_cast<size_t>(k)];
    const CrossEntropyTerms& t = workers_[static_cast<size_t>(k)]->terms;
    terms.cross_entropy += wk * t.cross_entropy, terms.z_loss += wk * t.z_loss, terms.log_z_mean += wk * t.log_z_mean;
    if (!(t.log_z_min >= terms.log_z_min)) terms.log_z_min = t.log_z_min;  // NaN propagates
  }
  for (int k = 1; k < n; ++k) workers_[static_cast<size_t>(k)]->grads.add_into_params();
  if (probe) {
    const auto used = static_cast<size_t>(n);
    nn::combine_probes(std::span<const nn::DecoderProbe>(probes_.data(), used), std::span(weights_.data(), used), *probe);
  }
  return terms;
}

template class BatchParallelStep<float>;
template class BatchParallelStep<double>;

}  // namespace tapegrad::lm
