#include "walkthrough.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "tapegrad/nn/block.h"
#include "tapegrad/nn/embedding.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/text/utf8.h"

namespace tapegrad::walkthrough {

namespace {

std::vector<double> to_vector(TensorView<const double> v) { return {v.data(), v.data() + v.numel()}; }

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double rms_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s / static_cast<double>(v.size()));
}

// LayerNorm and RMSNorm (unit weights, eps = 0) of one row, through the modules.
NormedRow normalise(const std::vector<double>& x) {
  const auto C = static_cast<int64_t>(x.size());
  nn::LayerNorm<double> ln({.dim = C, .eps = 0.0});
  nn::RMSNorm<double> rms({.dim = C, .eps = 0.0});
  Tape<double> tape;
  const Tensor<double> t = Tensor<double>::from(std::span<const double>(x), {C});
  return {x, to_vector(ln.forward(tape.constant(t)).value()), to_vector(rms.forward(tape.constant(t)).value()),
          rms_of(x)};
}

std::string vec(const std::vector<double>& v, int begin = 0, int n = -1) {
  std::string s = "[";
  const int end = n < 0 ? static_cast<int>(v.size()) : begin + n;
  for (int i = begin; i < end; ++i) {
    char b[32];
    std::snprintf(b, sizeof b, "%s%6.3f", i > begin ? ", " : "", v[static_cast<size_t>(i)]);
    s += b;
  }
  return s + "]";
}

// Pads to `columns` terminal columns; CJK characters take two columns, so byte counts (printf's
// %-8s) would misalign them.
std::string pad(const std::string& s, int columns) {
  int width = 0;
  for (int32_t cp : text::decode(s)) width += cp >= 0x2E80 ? 2 : 1;
  return s + std::string(static_cast<size_t>(std::max(0, columns - width)), ' ');
}

std::string words(const std::vector<std::string>& w) {
  std::string s = "[";
  for (size_t i = 0; i < w.size(); ++i) s += (i ? ", " : "") + w[i];
  return s + "]";
}

}  // namespace

std::vector<std::string> max_match(const std::string& sentence, const std::vector<std::string>& dictionary,
                                   bool forward) {
  const std::vector<std::string> chars = text::characters(sentence, "sentence");
  const std::set<std::string> dict(dictionary.begin(), dictionary.end());
  size_t longest = 1;
  for (const auto& w : dictionary) longest = std::max(longest, text::characters(w, "dictionary").size());
  const auto join = [&](size_t b, size_t e) {
    std::string s;
    for (size_t i = b; i < e; ++i) s += chars[i];
    return s;
  };
  std::vector<std::string> out;
  if (forward) {
    for (size_t i = 0; i < chars.size();) {
      size_t len = std::min(longest, chars.size() - i);
      while (len > 1 && !dict.count(join(i, i + len))) --len;
      out.push_back(join(i, i + len));
      i += len;
    }
  } else {
    for (size_t end = chars.size(); end > 0;) {
      size_t len = std::min(longest, end);
      while (len > 1 && !dict.count(join(end - len, end))) --len;
      out.insert(out.begin(), join(end - len, end));
      end -= len;
    }
  }
  return out;
}

namespace {
// A pre-norm block with `norm` and the walkthrough's weights: N(0, 0.3^2) from Rng(seed) for linear
// maps, the norm's own initialisation, zero biases. eps: the definitions' 0, as the smallest
// positive double — it changes no result (every variance here is ~1e-2) and satisfies the norms
// that require eps > 0 (ScaleNorm's bound on 1/||x||).
std::unique_ptr<nn::DecoderBlock<double>> seeded_block(nn::NormKind norm, uint64_t seed) {
  const double eps = std::numeric_limits<double>::min();
  auto block = std::make_unique<nn::DecoderBlock<double>>(nn::BlockOptions{
      .dim = 4, .heads = 2, .norm = norm, .placement = nn::Placement::parse("pre"), .mlp_hidden = 16, .norm_eps = eps});
  Rng rng(seed);
  for (auto& [name, p] : block->named_parameters()) {
    if (name.find("norm") != std::string::npos) continue;  // the norm's own init (gains 1, DyT's alpha 0.5)
    if (name.ends_with("bias")) p->value().fill(0.0);
    else p->value() = Tensor<double>::randn(p->shape(), rng, 0.3);
  }
  return block;
}

// The regulator: X and 10 X through one block. A scale-invariant norm hands attention and the MLP
// the same input for both; DyT squashes (its tanh saturates) rather than rescales; without a norm
// the sub-layers read the 10x stream. The residual stream is 10x apart whatever the norm.
RegulatorRow regulate(nn::NormKind norm, const Tensor<double>& embeddings, uint64_t seed) {
  auto block = seeded_block(norm, seed);
  Tape<double> tape;
  RegulatorRow row{std::string(norm.name())};
  Tensor<double> big = embeddings;
  for (int64_t i = 0; i < big.numel(); ++i) big[i] *= 10;
  const auto pass = [&](const Tensor<double>& x, double& attn_in, double& mlp_in, double& stream) {
    Var<double> X = tape.constant(x.view());
    Var<double> n1 = block->norm1().forward(X);
    Var<double> X1 = add(X, block->attn().forward(n1));
    Var<double> n2 = block->norm2().forward(X1);
    Var<double> X2 = add(X1, block->mlp().forward(n2));
    attn_in = nn::rms<double>(n1.value()), mlp_in = nn::rms<double>(n2.value()), stream = nn::rms<double>(X2.value());
    return to_vector(n1.value());
  };
  const auto a = pass(embeddings, row.attn_in, row.mlp_in, row.stream);
  const auto b = pass(big, row.attn_in_10x, row.mlp_in_10x, row.stream_10x);
  for (size_t i = 0; i < a.size(); ++i) row.attn_in_diff = std::max(row.attn_in_diff, std::abs(a[i] - b[i]));
  return row;
}
}  // namespace

SeedWalkthrough run_seed_walkthrough(uint64_t block_seed, const std::string& norm) {
  SeedWalkthrough w;
  // 1. The sentence and its two readings: "the ping-pong paddles are sold out" or "the ping-pong
  //    balls have been auctioned off". Greedy matching from either end finds one each.
  w.sentence = "乒乓球拍卖完了。";
  w.dictionary = {"乒乓", "乒乓球", "乒乓球拍", "球拍", "拍卖", "卖", "完", "了", "。"};
  const std::string words_only = "乒乓球拍卖完了";
  w.segmentations = {{"forward maximum matching", max_match(words_only, w.dictionary, true)},
                     {"backward maximum matching", max_match(words_only, w.dictionary, false)}};

  // 2. Token ids for the second reading, from an illustrative vocabulary.
  const std::map<std::string, int32_t> vocab{{"乒乓球", 18432}, {"拍卖", 9271}, {"完", 643}, {"了", 352}, {"。", 17}};
  w.tokens = w.segmentations[1].words;
  w.tokens.push_back("。");
  for (const auto& t : w.tokens) w.ids.push_back(vocab.at(t));

  // 3. The embedding lookup, (B, T, D) = (1, 5, 4), through nn::Embedding.
  const std::vector<std::vector<double>> vectors{{0.10, 0.25, -0.05, 0.20},
                                                 {-0.30, 0.15, 0.40, 0.05},
                                                 {0.12, -0.18, 0.22, 0.31},
                                                 {0.08, 0.11, -0.14, 0.27},
                                                 {-0.06, 0.09, 0.03, -0.12}};
  nn::Embedding<double> table({.num = 18433, .dim = 4});
  for (size_t t = 0; t < w.ids.size(); ++t)
    std::copy(vectors[t].begin(), vectors[t].end(), table.weight().value().data() + w.ids[t] * 4);
  Tape<double> tape;
  w.embeddings = Tensor<double>::copy_of(table.forward(tape, w.ids, {1, 5}).value());

  // 4. Each row through LayerNorm and RMSNorm.
  for (int t = 0; t < 5; ++t)
    w.rows.push_back(normalise({w.embeddings.data() + t * 4, w.embeddings.data() + t * 4 + 4}));

  // 5. Scale drift: the same direction at 10x the size normalises to the same output.
  w.drift = normalise({1, 2, 3, 4});
  w.drift10 = normalise({10, 20, 30, 40});

  // 6. The comparison table for x = [1, 2, 3, 4].
  for (const auto& [name, out] : {std::pair{"none (x itself)", w.drift.x}, std::pair{"LayerNorm", w.drift.layernorm},
                                  std::pair{"RMSNorm", w.drift.rmsnorm}})
    w.table.push_back({name, out, mean_of(out), rms_of(out), std::abs(mean_of(out)) < 1e-12});

  // 7. One pre-norm block on the (1, 5, 4) embeddings, stage by stage.
  auto block_ptr = seeded_block(nn::NormKind::parse("layernorm"), block_seed);
  nn::DecoderBlock<double>& block = *block_ptr;
  Var<double> X = tape.constant(w.embeddings);
  Var<double> n1 = block.norm1().forward(X);
  Var<double> a = block.attn().forward(n1);
  Var<double> X1 = add(X, a);
  Var<double> n2 = block.norm2().forward(X1);
  Var<double> m = block.mlp().forward(n2);
  Var<double> X2 = add(X1, m);
  for (const auto& [name, v] : {std::pair{"X", X}, std::pair{"Norm1(X)", n1}, std::pair{"Attn(Norm1(X))", a},
                                std::pair{"X1 = X + Attn", X1}, std::pair{"Norm2(X1)", n2},
                                std::pair{"MLP(Norm2(X1))", m}, std::pair{"X2 = X1 + MLP", X2}}) {
    w.block.push_back({name, to_vector(v.value()), nn::rms<double>(v.value())});
  }

  // 8. The regulator: X and 10 X through the block, per norm.
  for (const nn::NormKind k : nn::all_norms())
    if (norm.empty() || k.name() == norm) w.regulator.push_back(regulate(k, w.embeddings, block_seed));
  if (!norm.empty() && w.regulator.empty()) w.regulator.push_back(regulate(nn::NormKind::parse(norm), w.embeddings, block_seed));
  return w;
}

std::string render(const SeedWalkthrough& w) {
  std::string s;
  char b[256];
  s += "1. Sentence: " + w.sentence + "\n   Two segmentations over the dictionary " + words(w.dictionary) + ":\n";
  for (const auto& seg : w.segmentations) s += "     " + seg.method + ": " + words(seg.words) + "\n";
  s += "   (\"ping-pong paddles are sold out\" vs \"ping-pong balls have been auctioned\")\n\n";
  s += "2. Tokens of the second reading, with the full stop: " + words(w.tokens) + "\n   Token ids: [";
  for (size_t i = 0; i < w.ids.size(); ++i) s += (i ? ", " : "") + std::to_string(w.ids[i]);
  s += "]\n\n3. Embedding lookup -> (B, T, D) = (1, 5, 4):\n";
  for (int t = 0; t < 5; ++t) {
    std::vector<double> row(w.embeddings.data() + t * 4, w.embeddings.data() + t * 4 + 4);
    std::snprintf(b, sizeof b, "id %5d  %s\n", w.ids[static_cast<size_t>(t)], vec(row).c_str());
    s += "   t=" + std::to_string(t) + " " + pad(w.tokens[static_cast<size_t>(t)], 7) + b;
  }
  s += "\n4. Each row normalised (unit weights, eps = 0):\n   t  RMS(x)  LayerNorm(x)                        RMSNorm(x)\n";
  for (size_t t = 0; t < w.rows.size(); ++t) {
    std::snprintf(b, sizeof b, "   %zu  %.3f   %s  %s\n", t, w.rows[t].x_rms, vec(w.rows[t].layernorm).c_str(),
                  vec(w.rows[t].rmsnorm).c_str());
    s += b;
  }
  std::snprintf(b, sizeof b, "\n5. Scale drift: x = [1, 2, 3, 4] (RMS %.3f) and 10x (RMS %.3f)\n", w.drift.x_rms,
                w.drift10.x_rms);
  s += b;
  s += "   LayerNorm(x)  " + vec(w.drift.layernorm) + "   LayerNorm(10x) " + vec(w.drift10.layernorm) + "\n";
  s += "   RMSNorm(x)    " + vec(w.drift.rmsnorm) + "   RMSNorm(10x)   " + vec(w.drift10.rmsnorm) + "\n";
  s += "   Both norms undo the 10x: what the next layer reads no longer depends on the scale.\n\n";
  s += "6. The comparison for x = [1, 2, 3, 4]:\n   method            output                              mean    RMS    centred\n";
  for (const auto& r : w.table) {
    std::snprintf(b, sizeof b, "   %-16s  %s  %6.3f  %5.3f  %s\n", r.method.c_str(), vec(r.output).c_str(), r.mean,
                  r.rms, r.centred ? "yes" : "no");
    s += b;
  }
  s += "\n7. One pre-norm block (LayerNorm, 2 heads, GELU MLP of 16) on the (1, 5, 4) input:\n";
  for (const auto& st : w.block) {
    std::snprintf(b, sizeof b, "   %-16s RMS %.3f   t=0 %s  t=4 %s\n", st.name.c_str(), st.rms,
                  vec(st.values, 0, 4).c_str(), vec(st.values, 16, 4).c_str());
    s += b;
  }
  s += "   The residual stream (X, X1, X2) keeps its own scale; each sub-layer reads a normalised copy\n"
       "   (RMS 1): the norm regulates what the sub-layers see, not the stream itself.\n";
  s += "\n8. The regulator: X and 10 X through that block, per norm (RMS; 10x/1x = the ratio):\n"
       "   norm        attention reads (X, 10X, ratio)   MLP reads (X, 10X, ratio)   residual stream (X, 10X, ratio)\n";
  for (const auto& r : w.regulator) {
    std::snprintf(b, sizeof b, "   %-10s  %6.3f %7.3f  x%-6.3f            %6.3f %7.3f  x%-6.3f      %6.3f %7.3f  x%-6.3f\n",
                  r.norm.c_str(), r.attn_in, r.attn_in_10x, r.attn_in_10x / r.attn_in, r.mlp_in, r.mlp_in_10x,
                  r.mlp_in_10x / r.mlp_in, r.stream, r.stream_10x, r.stream_10x / r.stream);
    s += b;
  }
  s += "   A norm is the Transformer's voltage regulator: whatever the stream's scale, a scale-invariant norm\n"
       "   (LayerNorm, RMSNorm, ScaleNorm) hands attention exactly the same input (x1.000); DyT squashes rather\n"
       "   than rescales (tanh saturates: 10x comes out less than 10x larger, the less the larger the input);\n"
       "   with no norm the sub-layers read the 10x stream. The residual stream is not regulated: it carries\n"
       "   the 10x X plus the sub-layers' outputs (the same for both inputs under a scale-invariant norm).\n";
  return s;
}

}  // namespace tapegrad::walkthrough
