// LanguageModel: what lm::Trainer trains — any module that maps B sequences of T token ids to
// logits over a vocabulary and, given the next tokens, to a loss. nn::Decoder is one; a model of
// your own derives from it, writes forward, and trains through lm::Trainer, run, checkpoints and
// generate like the decoder (docs/library.md).
//
//   class MyLm : public nn::LanguageModel<float> {
//     Output forward(Tape<float>& tape, std::span<const int32_t> ids, int64_t B, int64_t seq_len,
//                    std::span<const int32_t> targets) override {
//       Var<float> logits = ...;                 // (B, T, vocab_size())
//       return lm_output(logits, targets);       // the loss when targets are given
//     }
//     int64_t vocab_size() const override { ... }
//     int64_t ctx() const override { ... }  // the longest T forward accepts
//   };
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/nn/module.h"
#include "tapegrad/ops/cross_entropy.h"

namespace tapegrad::nn {

template <typename T>
struct LmOutput {
  Var<T> logits;  // (B, T, V)
  Var<T> loss;    // scalar, the training objective (cross-entropy + any penalty); undefined without targets
  CrossEntropyTerms terms;  // its parts: the cross-entropy alone is the model's loss (with targets)
};

// The output of a forward pass from its logits: with targets, the mean cross-entropy over them
// (plus z_loss times the mean squared log-partition, when given) and its parts.
template <typename T>
LmOutput<T> lm_output(Var<T> logits, std::span<const int32_t> targets, double z_loss = 0) {
  LmOutput<T> out;
  out.logits = logits;
  if (!targets.empty()) out.loss = cross_entropy(logits, targets, z_loss, &out.terms);
  return out;
}

template <typename T = float>
class LanguageModel : public Module<T> {
 public:
  using Output = LmOutput<T>;
  // ids and targets: B*T token ids, row-major (B, T); they must outlive backward(). Without
  // targets only the logits are computed.
  virtual Output forward(Tape<T>& tape, std::span<const int32_t> ids, int64_t B, int64_t seq_len,
                         std::span<const int32_t> targets) = 0;
  Output forward(Tape<T>& tape, std::span<const int32_t> ids, int64_t B, int64_t seq_len) {
    return forward(tape, ids, B, seq_len, std::span<const int32_t>{});
  }
  // Refused: a temporary vector of ids or targets dies before backward() reads it.
  template <typename U = T>
  Output forward(Tape<T>&, std::vector<int32_t>&&, int64_t, int64_t, std::span<const int32_t> = {}) {
    static_assert(kept_view_of_temporary<U>, "LanguageModel::forward keeps a view of the ids until backward(): keep them in a variable");
  }
  template <typename U = T>
  Output forward(Tape<T>&, std::span<const int32_t>, int64_t, int64_t, std::vector<int32_t>&&) {
    static_assert(kept_view_of_temporary<U>,
                  "LanguageModel::forward keeps a view of the targets until backward(): keep them in a variable");
  }
  virtual int64_t vocab_size() const = 0;
  virtual int64_t ctx() const = 0;  // the longest sequence forward accepts
};

}  // namespace tapegrad::nn
