// value_sink.hh — a non-owning, non-allocating reference to "something that takes a value".
//
// Cache::get hands the stored bytes to a ValueSink while the shard lock is held, so the caller
// decides where they go (a response buffer, a socket write, a comparison) with one memcpy at most
// and no heap allocation. std::function could allocate for large captures; std::function_ref is
// C++26, so this is the 20-line equivalent. A ValueSink must not outlive the callable it refers
// to; pass lambdas directly at the call site.
#pragma once

#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

namespace cache {

class ValueSink {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, ValueSink> &&
             std::is_invocable_v<F&, std::string_view>)
  ValueSink(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a function param
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, std::string_view value) {
          (*static_cast<std::remove_reference_t<F>*>(object))(value);
        }) {}

  void operator()(std::string_view value) const { call_(object_, value); }

 private:
  void* object_;
  void (*call_)(void*, std::string_view);
};

}  // namespace cache
