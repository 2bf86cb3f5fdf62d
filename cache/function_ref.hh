// function_ref.hh — a non-owning, non-allocating reference to a callable (C++26's
// std::function_ref, which C++20 lacks).
//
// The cache calls back into its caller while a shard lock is held: to hand over a value
// (ValueSink, ItemSink) or to ask whether a conditional write may go ahead (Condition). A
// std::function could allocate for large captures; this is two words and one indirect call.
// A FunctionRef must not outlive the callable it refers to: pass lambdas directly at the call
// site.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace cache {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
             std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a function param
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace cache
