// Sequential: modules applied in order, each one's output the next one's input
// (torch.nn.Sequential). Children are named "0", "1", ... so parameters read "0.weight".
//
//   nn::Sequential<float> mlp{nn::Linear<float>(2, 32), nn::ReLU<float>(), nn::Dropout<float>(0.1),
//                             nn::Linear<float>(32, 2)};
//   mlp.emplace_back<nn::Tanh<float>>();   // or one at a time
//   Var<float> logits = mlp(tape.constant(x));
#pragma once

#include <memory>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/nn/module.h"

namespace tapegrad::nn {

template <typename T = float>
class Sequential : public UnaryModule<T> {
 public:
  Sequential() = default;
  // The given modules, moved in, in order. Use braces, Sequential<T>{a, b, c}: a braced list is
  // evaluated left to right, so the modules draw their initial weights in the order written (as
  // torch.nn.Sequential's); in parentheses C++ leaves the order to the compiler (GCC goes right
  // to left) and the same seed would give other weights.
  template <typename... Ms>
    requires(sizeof...(Ms) > 0 && (std::is_base_of_v<UnaryModule<T>, std::remove_cvref_t<Ms>> && ...) &&
             (!std::is_lvalue_reference_v<Ms> && ...))
  explicit Sequential(Ms&&... modules) {
    (push_back(std::make_unique<std::remove_cvref_t<Ms>>(std::move(modules))), ...);
  }
  // Appends a module (any UnaryModule) and returns it typed.
  template <typename M>
  M& push_back(std::unique_ptr<M> module) {
    static_assert(std::is_base_of_v<UnaryModule<T>, M>, "Sequential holds modules that map one tensor to one tensor");
    M& ref = this->add_module(std::to_string(layers_.size()), std::move(module));
    layers_.push_back(&ref);
    return ref;
  }
  template <typename M, typename... Args>
  M& emplace_back(Args&&... args) {
    return push_back(std::make_unique<M>(std::forward<Args>(args)...));
  }

  Var<T> forward(Var<T> x) override {
    for (UnaryModule<T>* layer : layers_) x = (*layer)(x);
    return x;
  }
  size_t size() const { return layers_.size(); }
  UnaryModule<T>& operator[](size_t i) const { return *layers_.at(i); }
  // Layer i as the module type it was added as (seq.at<Linear<float>>(0).weight()); an Error names
  // the layer's type when it is another.
  template <typename M>
  M& at(size_t i) const {
    check(i < layers_.size(), "Sequential::at(", i, "): it holds ", layers_.size(), " layers");
    M* m = dynamic_cast<M*>(layers_[i]);
    check(m != nullptr, "Sequential::at(", i, "): layer ", i, " is a ", layers_[i]->type_name(),
          ", not the type asked for");
    return *m;
  }
  std::string type_name() const override { return "Sequential"; }

 private:
  std::vector<UnaryModule<T>*> layers_;
};

}  // namespace tapegrad::nn
