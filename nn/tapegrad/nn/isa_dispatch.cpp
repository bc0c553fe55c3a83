// nn's kernel families, each compiled once per instruction set, and the entry points that run the
// active set's (tapegrad/isa.h).
#include "tapegrad/isa.h"
#include "tapegrad/nn/attention_head_kernels.h"
#include "tapegrad/nn/causal_softmax.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/nn/norm_kernels.h"

namespace tapegrad::nn {

TAPEGRAD_ISA_DISPATCH(CausalSoftmaxKernels, causal_softmax_kernels)
TAPEGRAD_ISA_DISPATCH(HeadKernels, head_kernels)
TAPEGRAD_ISA_DISPATCH(LayerNormKernels, layernorm_kernels)
TAPEGRAD_ISA_DISPATCH(RmsNormKernels, rmsnorm_kernels)
TAPEGRAD_ISA_DISPATCH(SwigluKernels, swiglu_kernels)

bool head_kernels_support(int64_t HS) { return head_kernels().supports(HS); }
int64_t head_forward_scratch(int64_t T, int64_t HS) { return head_kernels().forward_scratch(T, HS); }
int64_t head_backward_scratch(int64_t T, int64_t HS) { return head_kernels().backward_scratch(T, HS); }

float head_forward(float* P, float* y, int64_t ld_y, const float* q, const float* k, const float* v, int64_t ld_qkv,
                   int64_t T, int64_t HS, float s, float* scratch) {
  return head_kernels().forward(P, y, ld_y, q, k, v, ld_qkv, T, HS, s, scratch);
}

void head_backward(float* dq, float* dk, float* dv, const float* dy, int64_t ld_y, const float* q, const float* k,
                   const float* v, int64_t ld_qkv, const float* P, int64_t T, int64_t HS, float s, float* scratch) {
  head_kernels().backward(dq, dk, dv, dy, ld_y, q, k, v, ld_qkv, P, T, HS, s, scratch);
}

void head_products(float* S, float* y, float* dP, float* dq, float* dk, float* dv, const float* q, const float* k,
                   const float* v, const float* dy, const float* P, int64_t ld, int64_t T, int64_t HS, float s,
                   float* scratch) {
  head_kernels().products(S, y, dP, dq, dk, dv, q, k, v, dy, P, ld, T, HS, s, scratch);
}

}  // namespace tapegrad::nn
