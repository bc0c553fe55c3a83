// Decoder: a tiny GPT. Token embedding + learned position embedding, layers DecoderBlocks, a
// final norm, and an LM head (tied to the token embedding by default). forward() returns the
// logits and, given targets, the training objective: the mean cross-entropy (fused log-softmax)
// plus the z-loss penalty when the config asks for one, with both parts reported apart.
//
// Initialisation (GPT-2, as in nanoGPT), from Rng(seed): each module's reset_parameters, visited
// in registration order, with the options DecoderConfig gives them — every Linear and Embedding
// weight ~ N(0, init_std^2); the two residual projections of each block (attn.proj.weight,
// mlp.proj.weight) ~ N(0, (init_std / sqrt(2 layers))^2), so the residual stream's variance does
// not grow with depth at init; biases 0; each norm its own constants.
//
// Embeddings: x = s * wte[token] + wpe[position], with s = 1, a constant, or a learned scalar
// (DecoderConfig::embed_scale), then an optional norm on x (embed_norm).
//
// Parameter names: wte.weight, wpe.weight, [embed_scale.weight], [embed_norm...], blocks.{i}.norm1.{weight,bias},
// blocks.{i}.attn.qkv.{weight,bias}, blocks.{i}.attn.proj.{weight,bias}, blocks.{i}.norm2...,
// blocks.{i}.mlp.fc.{weight,bias}, blocks.{i}.mlp.proj.{weight,bias}, norm_f..., lm_head.weight
// (untied only). Linear weights are (out, in), as torch.nn.Linear.
#pragma once

#include <span>
#include <vector>

#include "tapegrad/nn/block.h"
#include "tapegrad/nn/decoder_config.h"
#include "tapegrad/nn/embedding.h"
#include "tapegrad/nn/kv_cache.h"
#include "tapegrad/nn/language_model.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/ops/cross_entropy.h"

namespace tapegrad::nn {

// What a forward pass looked like, for the lab's instrumentation (a few reductions, off the tape).
struct DecoderProbe {
  std::vector<BlockProbe> blocks;  // one per block; sized by forward()
  double final_residual_rms = 0;   // the residual stream after the last block
  double output_logit_mean = 0, output_logit_max = 0;
};
// The probe of a whole batch from the probes of its parts (a data-parallel step's workers), part
// k holding the fraction weights[k] of the batch's rows: RMS values combine as the root of the
// weighted mean square, means as weighted means, maxima as maxima.
void combine_probes(std::span<const DecoderProbe> parts, std::span<const double> weights, DecoderProbe& out);

template <typename T = float>
class Decoder : public LanguageModel<T> {
 public:
  using Output = LmOutput<T>;
  Decoder(DecoderConfig config, uint64_t seed);

  // ids and targets: B*T token ids, row-major (B, T); they must outlive backward(). `probe`, if
  // given, receives the statistics of this pass. With `cache` (kv_cache.h; B = 1, no targets,
  // under Tape::no_grad), ids are the positions after the cached ones: they attend to those
  // too, their keys and values join the cache, and the logits are those of the new positions.
  Output forward(Tape<T>& tape, std::span<const int32_t> ids, int64_t B, int64_t seq_len,
                 std::span<const int32_t> targets, DecoderProbe* probe, KVCache<T>* cache = nullptr);
  Output forward(Tape<T>& tape, std::span<const int32_t> ids, int64_t B, int64_t seq_len,
                 std::span<const int32_t> targets = {}) override {
    return forward(tape, ids, B, seq_len, targets, nullptr);
  }
  // Refused: a temporary vector of ids or targets dies before backward() reads it.
  template <typename U = T>
  Output forward(Tape<T>&, std::vector<int32_t>&&, int64_t, int64_t, std::span<const int32_t> = {},
                 DecoderProbe* = nullptr, KVCache<T>* = nullptr) {
    static_assert(kept_view_of_temporary<U>, "Decoder::forward keeps a view of the ids until backward(): keep them in a variable");
  }
  template <typename U = T>
  Output forward(Tape<T>&, std::span<const int32_t>, int64_t, int64_t, std::vector<int32_t>&&,
                 DecoderProbe* = nullptr, KVCache<T>* = nullptr) {
    static_assert(kept_view_of_temporary<U>,
                  "Decoder::forward keeps a view of the targets until backward(): keep them in a variable");
  }
  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t ctx() const override { return config_.ctx; }

  // Re-draws every parameter as described above: reset_parameters(Rng(seed)).
  void init_weights(uint64_t seed);

  const DecoderConfig& config() const { return config_; }
  DecoderBlock<T>& block(int64_t i) { return *blocks_[static_cast<size_t>(i)]; }
  Embedding<T>& wte() { return *wte_; }
  Embedding<T>& wpe() { return *wpe_; }
  std::string type_name() const override { return "Decoder"; }
  std::string options_repr() const override;

 private:
  double embed_scale_value() const;  // DecoderConfig::embed_scale_value

  DecoderConfig config_;
  Embedding<T>* wte_;
  Embedding<T>* wpe_;
  UnaryModule<T>* embed_scale_ = nullptr;  // LearnedScale, with EmbedScale::kLearned
  UnaryModule<T>* embed_norm_ = nullptr;
  std::vector<DecoderBlock<T>*> blocks_;
  UnaryModule<T>* norm_f_ = nullptr;
  Linear<T>* lm_head_ = nullptr;
  std::vector<int32_t> positions_;  // 0, 1, ..., context-1
};

}  // namespace tapegrad::nn
