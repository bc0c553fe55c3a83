#include "tapegrad/tape.h"

#include "tapegrad/parallel.h"
#include "tapegrad/vector_ops.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

namespace tapegrad {

template <typename T>
const typename Tape<T>::Slot& Tape<T>::slot(Var<T> v, const char* who) const {
  check(v.tape_ == this, who, ": the value belongs to another tape");
  check(v.generation_ == generation_ && v.id_ >= 0 && v.id_ < static_cast<int32_t>(slots_.size()),
        who, ": stale value %", v.id_, " (the tape was cleared after it was recorded)");
  return slots_[v.id_];
}

template <typename T>
Var<T> Tape<T>::push_slot(Slot s) {
  slots_.push_back(s);
  return Var<T>(this, static_cast<int32_t>(slots_.size() - 1), generation_);
}

template <typename T>
Var<T> Tape<T>::constant(TensorView<const T> value) {
  return push_slot({const_cast<T*>(value.data()), nullptr, value.shape(), false});
}

template <typename T>
Var<T> Tape<T>::constant(Tensor<T>&& value) {
  T* kept = arena_.allocate<T>(value.numel());
  std::copy(value.data(), value.data() + value.numel(), kept);
  return push_slot({kept, nullptr, value.shape(), false});
}

template <typename T>
Var<T> Tape<T>::leaf(TensorView<T> value, TensorView<T> grad) {
  check(grad.shape() == value.shape(), "leaf: gradient shape ", grad.shape(),
        " differs from value shape ", value.shape());
  return push_slot({value.data(), grad.data(), value.shape(), grad_enabled_});
}

template <typename T>
Var<T> Tape<T>::param(Parameter<T>& p) {
  if (!p.requires_grad) return constant(p.value().view());
  check(p.grad().shape() == p.value().shape(), "param '", p.name, "': gradient shape ", p.grad().shape(),
        " differs from value shape ", p.value().shape());
  if (param_grads_ == nullptr) return leaf(p.value().view(), p.grad().view());
  const auto lazy = param_grads_->lazy_grad_for(p);
  Var<T> v = leaf(p.value().view(), lazy.grad);
  slots_[v.id_].unwritten = lazy.unwritten;
  return v;
}

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

template <typename T>
typename Tape<T>::OpTime& Tape<T>::op_time(const char* op) {
  for (OpTime& t : profile_)
    if (t.op == op || std::strcmp(t.op, op) == 0) return t;
  profile_.push_back({op, 0, 0, 0});
  return profile_.back();
}

template <typename T>
Var<T> Tape<T>::make_output(const char* op, Shape shape, std::span<const Var<T>> inputs) {
  if (profiling_) op_start_ns_ = now_ns();
  bool requires_grad = false;
  for (const Var<T>& in : inputs) requires_grad |= slot(in, op).requires_grad;
  T* data = arena_.allocate<T>(shape.numel());
  return push_slot({data, nullptr, shape, requires_grad && grad_enabled_});
}

template <typename T>
Var<T> Tape<T>::make_alias(const char* op, Var<T> input, Shape shape) {
  const Slot& in = slot(input, op);
  check(shape.numel() == in.shape.numel(), op, ": cannot view ", in.shape, " as ", shape);
  return push_slot({in.data, nullptr, shape, in.requires_grad && grad_enabled_});
}

template <typename T>
void Tape<T>::record(const char* op, std::span<const Var<T>> inputs, Var<T> output, Backward backward,
                     uint32_t assigns) {
  if (profiling_) {
    OpTime& t = op_time(op);
    ++t.calls;
    t.forward_ms += static_cast<double>(now_ns() - op_start_ns_) / 1e6;
  }
  if (!slot(output, op).requires_grad) return;
  check(inputs.size() <= kMaxInputs, op, ": ", inputs.size(), " inputs, at most ", kMaxInputs);
  Node n;
  n.op = op;
  for (const Var<T>& in : inputs) {
    slot(in, op);  // validates: same tape, not stale
    n.inputs[n.n_inputs++] = in.id_;
  }
  n.output = output.id_;
  n.assigns = assigns;
  n.backward = backward;
  nodes_.push_back(n);
}

template <typename T>
void Tape<T>::fill_unwritten(const Slot& s) const {
  if (s.unwritten == nullptr || !*s.unwritten) return;
  T* const g = s.grad;
  parallel_for(s.shape.numel(), 1, [g](int64_t b, int64_t e) { std::fill(g + b, g + e, T(0)); });
  *s.unwritten = false;
}

template <typename T>
T* Tape<T>::ensure_grad(int32_t id, bool fill_zeros) {
  Slot& s = slots_[id];
  if (s.grad == nullptr) {
    const int64_t n = s.shape.numel();
    T* g = nullptr;
    // The most recently taken-back buffer of this size: the one most likely still in cache.
    for (auto it = free_grads_.rbegin(); it != free_grads_.rend(); ++it)
      if (it->first == n) {
        g = it->second;
        free_grads_.erase(std::next(it).base());
        break;
      }
    if (g == nullptr) g = arena_.allocate<T>(n);
    s.grad = g;
    s.tape_owns_grad = true;
    if (fill_zeros) parallel_for(n, 1, [&](int64_t b, int64_t e) { std::fill(g + b, g + e, T(0)); });
  } else if (fill_zeros) {
    fill_unwritten(s);
  }
  return s.grad;
}

template <typename T>
void Tape<T>::backward(Var<T> loss) {
  const Slot& s = slot(loss, "backward");
  check(s.shape.numel() == 1, "backward: the loss must have one element, got shape ", s.shape,
        "; for other outputs pass an upstream gradient: backward(output, dy)");
  T* one = arena_.allocate<T>(1);  // in the arena: tape.grad(loss) must stay readable afterwards
  *one = T(1);
  backward(loss, TensorView<const T>(one, s.shape));
}

template <typename T>
void Tape<T>::backward(Var<T> output, TensorView<const T> upstream) {
  check(!consumed_, "backward: this tape was already used by backward(); call clear() and record "
                    "the forward pass again");
  const Slot& out = slot(output, "backward");
  check(out.requires_grad, "backward: the output does not require grad (no input requires grad, "
                           "or it was computed inside a no_grad() scope)");
  check(upstream.shape() == out.shape, "backward: upstream gradient shape ", upstream.shape(),
        " differs from output shape ", out.shape);
  consumed_ = true;
  struct InNode {  // a flag set for a scope, exception or not
    bool& flag;
    explicit InNode(bool& f) : flag(f) { flag = true; }
    ~InNode() { flag = false; }
  };
  // For the whole pass: recording off (a node appended now would move the vector under the loop
  // below, and could never run), clear() refused.
  const NoGradGuard no_record(*this);
  const InNode in_backward(in_backward_);
  Slot& seed = slots_[output.id_];
  if (seed.grad == nullptr) {
    // The output's gradient is only ever read during this pass: nodes recorded after it cannot
    // receive a gradient, and none before it consumed it. So it can be the caller's array itself,
    // with no copy (it must stay alive while tape.grad(output) is read).
    seed.grad = const_cast<T*>(upstream.data());
  } else {
    // A leaf with its own gradient storage (a parameter): accumulate, as everywhere else.
    fill_unwritten(seed);
    T* g = seed.grad;
    const T* u = upstream.data();
    const auto add_into = vector_ops().get<T>().add_into;
    parallel_for(out.shape.numel(), 1, [&](int64_t b, int64_t e) { add_into(g + b, u + b, e - b); });
  }

  std::array<T*, kMaxInputs> din{};
  for (auto node = nodes_.rbegin(); node != nodes_.rend(); ++node) {
    const T* dout = slots_[node->output].grad;
    if (dout == nullptr) continue;  // no gradient flows through this node
    fresh_.fill(false);
    for (int i = 0; i < node->n_inputs; ++i) {
      const int32_t id = node->inputs[i];
      Slot& in = slots_[id];
      if (!in.requires_grad) {
        din[i] = nullptr;
        continue;
      }
      // The node may write input i's gradient if it holds none yet — unless the same value is
      // another of its inputs too (add(x, x)): then both add.
      bool may_assign = (node->assigns >> i & 1u) != 0 && (in.grad == nullptr || (in.unwritten && *in.unwritten));
      for (int j = 0; j < node->n_inputs && may_assign; ++j)
        if (j != i && node->inputs[j] == id) may_assign = false;
      din[i] = ensure_grad(id, !may_assign);
      if (may_assign) {
        fresh_[static_cast<size_t>(i)] = true;
        if (in.unwritten) *in.unwritten = false;  // written by this node
      }
    }
    workspace_.reset();
    const InNode running(in_backward_node_);  // workspace() is open exactly while a closure runs
    if (profiling_) {
      const int64_t t0 = now_ns();
      node->backward(dout, din.data());
      op_time(node->op).backward_ms += static_cast<double>(now_ns() - t0) / 1e6;
    } else {
      node->backward(dout, din.data());
    }
    // Every consumer of this node's output was recorded after it, so has run already: nothing
    // reads or adds to the output's gradient from here on.
    Slot& done = slots_[node->output];
    if (!retain_intermediate_grads_ && done.tape_owns_grad) {
      free_grads_.emplace_back(done.shape.numel(), done.grad);
      // Bounded, so that a graph of many sizes never matched cannot make each lookup a long scan;
      // a buffer dropped here simply stays unused in the arena until clear().
      if (free_grads_.size() > kMaxFreeGrads) free_grads_.erase(free_grads_.begin());
      done.grad = nullptr;
      done.grad_released = true;
    }
  }
}

template <typename T>
TensorView<T> Tape<T>::grad(Var<T> v) const {
  const Slot& s = slot(v, "grad");
  check(!s.grad_released, "grad: the gradient of intermediate value %", v.id_, " of shape ", s.shape,
        " was released after its op's backward (this tape has retain_intermediate_grads(false))");
  check(s.grad != nullptr, "grad: no gradient reached value %", v.id_, " of shape ", s.shape,
        s.requires_grad ? " (backward has not run, or the loss does not depend on it)"
                        : " (it does not require grad)");
  fill_unwritten(s);  // a parameter no op reached: zero
  return {s.grad, s.shape};
}

template <typename T>
void Tape<T>::clear() {
  check(!in_backward_, "clear: this tape is running backward() (clear() was called from a backward closure or hook); "
                       "clear it after backward() returns");
  slots_.clear();
  nodes_.clear();
  kept_.clear();
  free_grads_.clear();
  arena_.reset();
  ++generation_;
  consumed_ = false;
}

template <typename T>
std::string Tape<T>::dump() const {
  std::ostringstream os;
  for (const Node& n : nodes_) {
    os << '%' << n.output << " = " << n.op << '(';
    for (int i = 0; i < n.n_inputs; ++i) os << (i ? ", %" : "%") << n.inputs[i];
    os << ") " << slots_[n.output].shape << '\n';
  }
  return os.str();
}

template class Tape<float>;
template class Tape<double>;

}  // namespace tapegrad
