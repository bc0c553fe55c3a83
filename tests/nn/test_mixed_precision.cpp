// Mixed precision in the modules: the norms computed as a bf16 implementation would, the
// boundary op's gradient, and a decoder forward under its precision setting.
#include "nn_support.h"
#include "tapegrad/bf16.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/norm.h"
#include "tapegrad/ops/to_bf16.h"
#include "tapegrad/precision.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {
bool is_bf16(float v) { return round_bf16(v) == v; }
}  // namespace

TEST_CASE("to_bf16: rounds the value and the gradient crossing it, and double tapes pass through", "[nn][bf16]") {
  Tape<float> tape;
  auto x = Tensor<float>::from({1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f, -3.14159f}, {3});
  Tensor<float> dx(Shape{3});
  Var<float> xv = tape.leaf(x.view(), dx.view());
  Var<float> y = to_bf16(xv);
  CHECK(y.value()[0] == 1.0f);                // tie to even
  CHECK(y.value()[1] == 1.0f + 0x1p-6f);      // tie to even, upward
  CHECK(y.value()[2] == round_bf16(-3.14159f));
  const auto up = Tensor<float>::from({0.1f, 1.0f + 0x1p-8f, -7.77f}, {3});
  tape.backward(y, up);
  for (int i = 0; i < 3; ++i) CHECK(dx[i] == round_bf16(up[i]));
  Tape<double> t64;
  Var<double> d = t64.constant(Tensor<double>::from({1.0 + 0x1p-8}, {1}));
  CHECK(to_bf16(d).value()[0] == 1.0 + 0x1p-8);
}

TEST_CASE("apply_norm: under Autocast the norm reads and writes bf16 values, float32 otherwise", "[nn][bf16]") {
  LayerNorm<float> ln({.dim = 64});
  Rng rng(3);
  Tensor<float> x(Shape{4, 64});
  // A large mean over a small spread: where rounding the input costs a bf16 LayerNorm most.
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = 40.0f + static_cast<float>(rng.normal());
  Tape<float> tape;
  const Var<float> exact = apply_norm<float>(ln, tape.constant(x));
  Var<float> mixed;
  {
    const Autocast bf16({.gemm = Precision::kFp32, .norms = Precision::kBf16});
    mixed = apply_norm<float>(ln, tape.constant(x));
  }
  CHECK(autocast_state() == ComputePrecision{});  // restored
  double worst = 0, exact_not_bf16 = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    CHECK(is_bf16(mixed.value()[i]));
    exact_not_bf16 += !is_bf16(exact.value()[i]);
    worst = std::max(worst, std::abs(static_cast<double>(mixed.value()[i]) - exact.value()[i]));
  }
  CHECK(exact_not_bf16 > 200);
  // No norm ("none", the identity): nothing computed, nothing rounded.
  const auto none = make_norm<float>(NormKind::none(), {.dim = 64});
  {
    const Autocast bf16({.gemm = Precision::kBf16, .norms = Precision::kBf16});
    const Var<float> y = apply_norm<float>(*none, tape.constant(x));
    for (int64_t i = 0; i < x.numel(); ++i) CHECK(y.value()[i] == x[i]);
  }  // the float32 norm's outputs are not bf16 values
  // The input rounded at |x| ~ 40 carries up to 2^-9 * 64 = 0.125 of error in x - mu, against a unit
  // spread: the output moves by up to ~0.13 here (what the lab measures as the norm's drift).
  CHECK(worst > 0.01);
  CHECK(worst < 0.3);
}

TEST_CASE("decoder: precision bf16 changes the loss by bf16 rounding only, and leaves the thread's state", "[nn][bf16]") {
  DecoderConfig c;
  c.layers = 2, c.dim = 64, c.ctx = 32;
  Decoder<float> fp32(c, 42);
  c.precision = Precision::kBf16;
  Decoder<float> bf16(c, 42);  // same seed: same weights
  c.norm_precision = Precision::kBf16;
  Decoder<float> bf16_norms(c, 42);
  const TokenBatch b = random_batch(4 * 32, c.vocab_size, 1);
  Tape<float> tape;
  const float l32 = fp32.forward(tape, b.ids, 4, 32, b.targets).loss.value()[0];
  const float l16 = bf16.forward(tape, b.ids, 4, 32, b.targets).loss.value()[0];
  const float l16n = bf16_norms.forward(tape, b.ids, 4, 32, b.targets).loss.value()[0];
  CHECK(autocast_state() == ComputePrecision{});
  CHECK(l16 != l32);
  CHECK(l16n != l16);
  CHECK_THAT(l16, Catch::Matchers::WithinAbs(l32, 5e-3));
  CHECK_THAT(l16n, Catch::Matchers::WithinAbs(l32, 1e-2));
  CHECK(decoder_config_from_json(to_json(c)) == c);  // the precision settings round-trip
  nlohmann::json j = to_json(c);
  j["precision"] = "fp16";
  CHECK_THROWS_WITH(decoder_config_from_json(j), Catch::Contains("config: precision 'fp16'") && Catch::Contains("fp32, bf16"));
}
