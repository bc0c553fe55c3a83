#include "tapegrad/nn/decoder.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "tapegrad/gemm_bf16.h"
#include "tapegrad/nn/learned_scale.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/ops/scale.h"
#include "tapegrad/vector_sums.h"

namespace tapegrad::nn {

template <typename T>
Decoder<T>::Decoder(DecoderConfig c, uint64_t seed) : config_(c) {
  c.validate();
  // The bf16 kernels are chosen (TAPEGRAD_BF16_GEMM read and checked) here, not inside the first
  // step's parallel region, where a bad value could not be reported.
  if (c.precision == Precision::kBf16) bf16_kernels();
  wte_ = &this->add_module("wte", std::make_unique<Embedding<T>>(EmbeddingOptions{c.vocab_size, c.dim, c.init_std}));
  wpe_ = &this->add_module("wpe", std::make_unique<Embedding<T>>(EmbeddingOptions{c.ctx, c.dim, c.init_std}));
  if (c.embed_scale == EmbedScale::kLearned)
    embed_scale_ = &this->add_module("embed_scale", std::make_unique<LearnedScale<T>>(embed_scale_value()));
  const NormSpec other_norm{.dim = c.dim, .eps = c.norm_eps, .dyt_alpha = c.dyt_alpha, .dyt_beta = c.dyt_beta};
  if (c.embed_norm && !c.norm.is_none()) embed_norm_ = &this->add_module("embed_norm", make_norm<T>(c.norm, other_norm));
  auto& list = this->add_module("blocks", std::make_unique<ModuleList<T>>());
  for (int64_t i = 0; i < c.layers; ++i)
    blocks_.push_back(&list.push_back(std::make_unique<DecoderBlock<T>>(c.block_options())));
  if (c.final_norm && !c.norm.is_none()) norm_f_ = &this->add_module("norm_f", make_norm<T>(c.norm, other_norm));
  if (!c.tie_head)
    lm_head_ = &this->add_module("lm_head", std::make_unique<Linear<T>>(LinearOptions{c.dim, c.vocab_size, false, c.init_std}));
  positions_.resize(static_cast<size_t>(c.ctx));
  std::iota(positions_.begin(), positions_.end(), 0);
  init_weights(seed);
}

template <typename T>
double Decoder<T>::embed_scale_value() const {
  return config_.embed_scale_value();
}

template <typename T>
void Decoder<T>::init_weights(uint64_t seed) {
  Rng rng(seed);
  this->reset_parameters(rng);
}

template <typename T>
typename Decoder<T>::Output Decoder<T>::forward(Tape<T>& tape, std::span<const int32_t> ids, int64_t B, int64_t Tn,
                                                std::span<const int32_t> targets, DecoderProbe* probe,
                                                KVCache<T>* cache) {
  check(B > 0 && Tn > 0, "Decoder: batch and sequence length must be positive, got B=", B, " T=", Tn);
  const int64_t past = cache ? cache->length() : 0;  // positions before these
  check(past + Tn <= config_.ctx, "Decoder: sequence length ", past ? cat(past, " + ") : std::string(), Tn,
        " exceeds the context ", config_.ctx);
  if (cache) {
    check(B == 1 && targets.empty(), "Decoder: a KV cache serves one sequence without targets (generation)");
    check(cache->layers() == config_.layers && cache->dim() == config_.dim, "Decoder: a KV cache of ", cache->layers(),
          " layers x ", cache->dim(), " for a model of ", config_.layers, " x ", config_.dim);
  }
  check(static_cast<int64_t>(ids.size()) == B * Tn, "Decoder: ", ids.size(), " token ids for B*T = ", B * Tn);
  check(targets.empty() || targets.size() == ids.size(), "Decoder: ", targets.size(), " targets for ", ids.size(),
        " token ids");
  if (probe) probe->blocks.resize(blocks_.size());  // no allocation once sized
  // The model's precision, over whatever the caller's Autocast set (float32 settings leave it).
  ComputePrecision precision = autocast_state();
  if (config_.precision == Precision::kBf16) precision.gemm = Precision::kBf16;
  if (config_.norm_precision == Precision::kBf16) precision.norms = Precision::kBf16;
  const Autocast autocast(precision);

  // The embedding scale s (learned or fixed) on the tokens alone, x = s tok + pos, or on what enters
  // the first block, x = s (tok + pos) (embed_scale_positions).
  const auto scaled = [&](Var<T> v) {
    if (embed_scale_) return (*embed_scale_)(v);
    return config_.embed_scale == EmbedScale::kFixed ? scale(v, embed_scale_value()) : v;
  };
  Var<T> tokens = wte_->forward(tape, ids, {B, Tn});
  if (!config_.embed_scale_positions) tokens = scaled(tokens);
  Var<T> x = add(tokens, wpe_->forward(tape, std::span<const int32_t>(positions_.data() + past, static_cast<size_t>(Tn)), {Tn}));
  if (config_.embed_scale_positions) x = scaled(x);
  if (embed_norm_) x = apply_norm(*embed_norm_, x);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    CausalSelfAttention<T>& attn = blocks_[i]->attn();
    if (cache) attn.attach_cache({cache->keys(static_cast<int64_t>(i)), cache->values(static_cast<int64_t>(i)), past,
                                  cache->capacity()});
    try {
      x = blocks_[i]->with_hooks(x, blocks_[i]->forward(x, probe ? &probe->blocks[i] : nullptr));
    } catch (...) {
      attn.detach_cache();
      throw;
    }
    attn.detach_cache();
  }
  if (cache) cache->advance(Tn);
  if (probe) probe->final_residual_rms = rms<T>(x.value());
  if (norm_f_) x = apply_norm(*norm_f_, x);
  Output out;
  // Tied: logits = x wte^T, the Linear op on the embedding's (vocab, dim) table, so the head's GEMMs
  // get what any Linear's do (under bf16: the table's form made once a step, x and dlogits rounded
  // once for the two GEMMs that read each).
  out.logits = lm_head_ ? (*lm_head_)(x) : linear(x, tape.param(wte_->weight()));
  if (probe) {
    const TensorView<const T> z = out.logits.value();
    double sum = 0, mx = -std::numeric_limits<double>::infinity();
    if constexpr (std::is_same_v<T, float>) {
      vector_sums().sum_max(z.data(), z.numel(), &sum, &mx);  // at the CPU's width
    } else {
      for (int64_t i = 0; i < z.numel(); ++i) sum += z[i], mx = std::max(mx, static_cast<double>(z[i]));
    }
    probe->output_logit_mean = sum / static_cast<double>(z.numel());
    probe->output_logit_max = mx;
  }
  if (!targets.empty()) out.loss = cross_entropy(out.logits, targets, config_.z_loss, &out.terms);
  return out;
}

template <typename T>
std::string Decoder<T>::options_repr() const {
  const auto& c = config_;
  return cat("vocab=", c.vocab_size, ", ctx=", c.ctx, ", layers=", c.layers, ", heads=", c.heads,
             ", dim=", c.dim, ", norm=", to_string(c.norm), ", placement=", to_string(c.placement),
             ", mlp=", to_string(c.mlp), ", tie_head=", c.tie_head ? "true" : "false",
             c.embed_scale == EmbedScale::kNone ? "" : cat(", embed_scale=", to_string(c.embed_scale), "(", embed_scale_value(), ")",
                                                           c.embed_scale_positions ? " on token+position" : ""),
             c.embed_norm ? ", embed_norm=true" : "", c.final_norm ? "" : ", final_norm=false");
}

void combine_probes(std::span<const DecoderProbe> parts, std::span<const double> weights, DecoderProbe& out) {
  check(!parts.empty() && parts.size() == weights.size(), "combine_probes: ", parts.size(), " probes and ",
        weights.size(), " weights");
  const auto rms = [&](auto field) {
    double sq = 0;
    for (size_t k = 0; k < parts.size(); ++k) sq += weights[k] * field(parts[k]) * field(parts[k]);
    return std::sqrt(sq);
  };
  const auto mean = [&](auto field) {
    double m = 0;
    for (size_t k = 0; k < parts.size(); ++k) m += weights[k] * field(parts[k]);
    return m;
  };
  const auto max = [&](auto field) {
    double m = -std::numeric_limits<double>::infinity();
    for (const DecoderProbe& p : parts) m = std::max(m, field(p));
    return m;
  };
  out.blocks.resize(parts[0].blocks.size());
  for (size_t i = 0; i < out.blocks.size(); ++i) {
    out.blocks[i].residual_rms = rms([i](const DecoderProbe& p) { return p.blocks[i].residual_rms; });
    out.blocks[i].norm_out_rms = rms([i](const DecoderProbe& p) { return p.blocks[i].norm_out_rms; });
    out.blocks[i].attention_logit = max([i](const DecoderProbe& p) { return p.blocks[i].attention_logit; });
  }
  out.final_residual_rms = rms([](const DecoderProbe& p) { return p.final_residual_rms; });
  out.output_logit_mean = mean([](const DecoderProbe& p) { return p.output_logit_mean; });
  out.output_logit_max = max([](const DecoderProbe& p) { return p.output_logit_max; });
}

template class Decoder<float>;
template class Decoder<double>;

}  // namespace tapegrad::nn
