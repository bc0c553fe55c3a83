// InlineFunction<R(Args...), N>: a type-erased callable stored inside the object itself, never
// on the heap. std::function may allocate for any capture over 16 bytes; a tape records one
// callable per op per step, so that would be thousands of allocations a step.
//
// The callable must be trivially copyable: it may capture pointers, sizes and scalars by value,
// but nothing that owns memory (no std::vector, no shared_ptr). That is the tape's contract —
// a backward closure holds only what it needs, and what it points to lives in the tape's arena —
// and it is checked at compile time, as is the capacity.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace tapegrad {

template <typename Signature, std::size_t Capacity>
class InlineFunction;

template <typename R, typename... Args, std::size_t Capacity>
class InlineFunction<R(Args...), Capacity> {
 public:
  InlineFunction() = default;

  template <typename F>
    requires(!std::is_same_v<std::decay_t<F>, InlineFunction>)
  InlineFunction(F&& f) {  // NOLINT: implicit, like std::function
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= Capacity,
                  "closure too large for InlineFunction: capture less, or put a cache struct in "
                  "the arena and capture a pointer to it");
    static_assert(alignof(Fn) <= alignof(std::max_align_t), "closure over-aligned");
    static_assert(std::is_trivially_copyable_v<Fn> && std::is_trivially_destructible_v<Fn>,
                  "closures may capture only pointers and values (nothing that owns memory)");
    ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
    invoke_ = [](const void* self, Args... args) -> R {
      return (*static_cast<const Fn*>(self))(std::forward<Args>(args)...);
    };
  }

  explicit operator bool() const { return invoke_ != nullptr; }
  R operator()(Args... args) const { return invoke_(storage_, std::forward<Args>(args)...); }

 private:
  alignas(std::max_align_t) unsigned char storage_[Capacity]{};
  R (*invoke_)(const void*, Args...) = nullptr;
};

}  // namespace tapegrad
