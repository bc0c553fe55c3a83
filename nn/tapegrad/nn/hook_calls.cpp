#include "tapegrad/nn/hook_calls.h"

#include <algorithm>

#include "tapegrad/nn/module.h"

namespace tapegrad::nn {

namespace {
std::atomic<bool> g_per_worker{false};

// The shares' tensors end to end along the first axis (every other axis alike).
template <typename T>
Tensor<T> concat_shares(std::span<HookCalls<T>> shares, size_t i, Tensor<T> HookCall<T>::*part, const char* what) {
  const Shape& first = (shares[0].calls[i].*part).shape();
  check(first.rank() >= 1, "hooks: the ", what, " of call ", i, " is a scalar; a share's tensors join along the batch axis");
  int64_t rows = 0;
  for (const HookCalls<T>& s : shares) {
    const Shape& shape = (s.calls[i].*part).shape();
    bool same = shape.rank() == first.rank();
    for (int d = 1; same && d < first.rank(); ++d) same = shape[d] == first[d];
    check(same, "hooks: call ", i, " (", shares[0].calls[i].module->type_name(), ") has ", what, " ", shape, " on one worker and ",
          first, " on another; a module's tensors must keep the batch on their first axis");
    rows += shape[0];
  }
  Shape whole = first;
  whole[0] = rows;
  Tensor<T> out(whole);
  T* to = out.data();
  for (const HookCalls<T>& s : shares) {
    const Tensor<T>& t = s.calls[i].*part;
    to = std::copy(t.data(), t.data() + t.numel(), to);
  }
  return out;
}
}  // namespace

void set_hooks_per_worker(bool per_worker) { g_per_worker = per_worker; }
bool hooks_per_worker() { return g_per_worker; }

template <typename T>
void run_collected(std::span<HookCalls<T>> shares, Tape<T>& scratch) {
  if (shares.empty()) return;
  const size_t n = shares[0].calls.size();
  for (const HookCalls<T>& s : shares)
    check(s.calls.size() == n, "hooks: the workers made ", n, " and ", s.calls.size(),
          " hooked calls in one step; every share must run the same modules");
  // Forward calls first, in their order, then backward ones: as each would have run.
  for (const bool backward : {false, true})
    for (size_t i = 0; i < n; ++i) {
      const HookCall<T>& c = shares[0].calls[i];
      if (c.backward != backward) continue;
      for (const HookCalls<T>& s : shares)
        check(s.calls[i].module == c.module && s.calls[i].backward == c.backward, "hooks: call ", i,
              " differs between workers (", c.module->type_name(), " / ", s.calls[i].module->type_name(), ")");
      Tensor<T> out = concat_shares(shares, i, &HookCall<T>::output, backward ? "gradient" : "output");
      if (backward) {
        c.module->call_backward_hooks(out.view());
      } else {
        scratch.clear();
        auto guard = scratch.no_grad();
        const Var<T> x = scratch.constant(concat_shares(shares, i, &HookCall<T>::input, "input"));
        const Var<T> y = scratch.constant(std::move(out));
        c.module->call_forward_hooks(x, y);
      }
    }
  scratch.clear();
  for (HookCalls<T>& s : shares) s.calls.clear();
}

template void run_collected<float>(std::span<HookCalls<float>>, Tape<float>&);
template void run_collected<double>(std::span<HookCalls<double>>, Tape<double>&);

}  // namespace tapegrad::nn
