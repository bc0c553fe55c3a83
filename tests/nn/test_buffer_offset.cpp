// Bitwise determinism must not depend on where the data lies. A whole training step of a decoder —
// forward, fused cross-entropy, backward, gradient norm, AdamW — runs with every heap buffer
// (parameters, optimizer state, the tape's arena) shifted 0..15 floats off the 64-byte line
// (buffer.h) and this thread's stack shifted in 16-byte steps (kernels keep small blocks on the
// stack: GELU's tanh, SwiGLU's sigmoid — the stack was what moved between the ASan runs that
// disagreed, with the environment's size under ASLR), and must give the same bits each time. Row
// lengths are chosen off the 16-float block (head size 10, T 19, V 37) so that loops peeled or
// blocked by address would show.
#include <alloca.h>

#include "nn_support.h"
#include "tapegrad/buffer.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/clip.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {

struct StepBits {
  float loss = 0;
  double grad_norm = 0;
  std::vector<float> grads, params;  // every parameter's gradient, then its value after AdamW
};

// Restores the default offset however the step ends.
struct OffsetScope {
  explicit OffsetScope(int floats) { set_buffer_offset_for_testing(floats); }
  ~OffsetScope() { set_buffer_offset_for_testing(0); }
};

[[gnu::noinline]] StepBits one_step(const DecoderConfig& c, int offset) {
  OffsetScope scope(offset);
  Decoder<float> model(c, 5);
  std::vector<Parameter<float>*> params = model.parameters();
  AdamW<float> opt(params);
  const int64_t B = 3, T = c.ctx;
  Rng rng(9);
  std::vector<int32_t> ids, targets;
  for (int64_t i = 0; i < B * T; ++i) {
    ids.push_back(static_cast<int32_t>(rng.below(c.vocab_size)));
    targets.push_back(static_cast<int32_t>(rng.below(c.vocab_size)));
  }
  StepBits bits;
  for (int step = 0; step < 2; ++step) {  // two steps: the second runs on a reused arena
    Tape<float> tape;
    for (Parameter<float>* p : params) p->grad().fill(0);
    Var<float> loss = model.forward(tape, ids, B, T, targets).loss;
    tape.backward(loss);
    bits.loss = loss.value()[0];
    bits.grad_norm = grad_norm<float>(params);
    opt.step(1e-2);
  }
  for (Parameter<float>* p : params) bits.grads.insert(bits.grads.end(), p->grad().span().begin(), p->grad().span().end());
  for (Parameter<float>* p : params)
    bits.params.insert(bits.params.end(), p->value().span().begin(), p->value().span().end());
  return bits;
}

// The same step with the stack below this frame moved by 16 * (offset % 4) bytes: the ABI keeps
// frames 16-byte aligned, so that is every position of a frame on a 64-byte line.
StepBits one_step_moved(const DecoderConfig& c, int offset) {
  void* pad = alloca(16 * static_cast<std::size_t>(offset % 4) + 16);
  asm volatile("" : : "r"(pad) : "memory");  // the allocation must not be optimised away
  return one_step(c, offset);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

}  // namespace

TEST_CASE("determinism: a decoder training step is bitwise the same at every buffer offset", "[nn][determinism]") {
  DecoderConfig c;
  c.vocab_size = 37, c.ctx = 19, c.layers = 2, c.heads = 4, c.dim = 40;
  const int variant = GENERATE(0, 1, 2);
  if (variant == 0) c.norm = NormKind::parse("layernorm"), c.placement = Placement::parse("pre");
  if (variant == 1)
    c.norm = NormKind::parse("rmsnorm"), c.placement = Placement::parse("post"), c.mlp = MlpKind::parse("swiglu"), c.bias = false,
    c.qk_norm = NormKind::parse("rmsnorm");
  if (variant == 2) c.norm = NormKind::none(), c.tie_head = false, c.qk_norm = NormKind::parse("layernorm");
  INFO("variant " << variant << ": norm " << to_string(c.norm) << ", qk-norm " << to_string(c.qk_norm));

  const StepBits ref = one_step(c, 0);
  REQUIRE(std::isfinite(ref.loss));
  for (int offset = 1; offset < 16; ++offset) {
    INFO("buffer offset " << offset << " floats");
    const StepBits b = one_step_moved(c, offset);
    CHECK(std::memcmp(&b.loss, &ref.loss, sizeof b.loss) == 0);
    CHECK(std::memcmp(&b.grad_norm, &ref.grad_norm, sizeof b.grad_norm) == 0);
    CHECK(same_bits(b.grads, ref.grads));
    CHECK(same_bits(b.params, ref.params));
  }
}

TEST_CASE("buffers: start on a 64-byte line plus the test offset, bad offsets are refused", "[nn][determinism]") {
  {
    Tensor<float> t(Shape{3, 5});
    CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % kBufferAlignment == 0);
    Tape<float> tape;
    CHECK(reinterpret_cast<std::uintptr_t>(tape.scratch<float>(7)) % kBufferAlignment == 0);
  }
  {
    OffsetScope scope(3);
    Tensor<float> t(Shape{3, 5});
    CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % kBufferAlignment == 3 * sizeof(float));
    Tape<float> tape;
    CHECK(reinterpret_cast<std::uintptr_t>(tape.scratch<float>(7)) % kBufferAlignment == 3 * sizeof(float));
    CHECK(reinterpret_cast<std::uintptr_t>(tape.scratch<float>(70)) % kBufferAlignment == 3 * sizeof(float));
  }
  CHECK_THROWS_WITH(set_buffer_offset_for_testing(16), Catch::Contains("16 is not in 0..15"));
  CHECK_THROWS_WITH(set_buffer_offset_for_testing(-1), Catch::Contains("-1 is not in 0..15"));
  CHECK(buffer_offset_for_testing() == 0);
}
