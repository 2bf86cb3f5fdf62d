// variant.hh — the request path's compile-time policies: each optimization next to its baseline,
// so a measurement can show what each one buys (docs/server.md, "Variants").
//
// The request path (HttpEngine → router → Handlers) is a template over Variant<ValuePath,
// Dispatch>. Each of the four combinations is compiled once (explicit instantiations in
// http_engine.cc and connection.cc); with_variant() turns the run-time Config into one of them
// once, at start-up, when the server picks the connection type. Inside a request there is no
// flag to test: the policy calls below are direct calls the compiler inlines. The third
// optimization, shared_lock reads, is a constructor option of the cache (Config::lock).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cache/cache.hh"
#include "server/api/router.hh"
#include "server/config.hh"

namespace server {

// Value path policies: read(cache, key, on_item) calls on_item(const cache::Item&) on a hit and
// returns whether it was one.

// The optimization: on_item runs inside the cache's sink, on the stored bytes themselves,
// so the response is written straight from the cache (no allocation).
struct CStringValue {
  static constexpr ValuePathKind kind = ValuePathKind::cstring;
  template <class OnItem>
  static bool read(const cache::Cache& cache, std::string_view key, OnItem&& on_item) {
    return cache.get_item(key, on_item);
  }
};

// The baseline: the value is first copied into a std::string built for this request (a heap
// allocation for anything past the small-string buffer), and the response written from that.
struct StringValue {
  static constexpr ValuePathKind kind = ValuePathKind::string;
  template <class OnItem>
  static bool read(const cache::Cache& cache, std::string_view key, OnItem&& on_item) {
    std::optional<std::string> value;
    cache::Item copy;
    cache.get_item(key, [&](const cache::Item& item) {
      value.emplace(item.value);
      copy = item;
    });
    if (!value) return false;
    copy.value = *value;
    std::forward<OnItem>(on_item)(static_cast<const cache::Item&>(copy));
    return true;
  }
};

// Dispatch policies: route(method, target), the same Route for every input (router.hh).
struct OrderedDispatch {
  static constexpr DispatchKind kind = DispatchKind::ordered;
  static Route route(boost::beast::http::verb method, std::string_view target) {
    return server::route(method, target);
  }
};

struct NaiveDispatch {
  static constexpr DispatchKind kind = DispatchKind::naive;
  static Route route(boost::beast::http::verb method, std::string_view target) {
    return server::route_naive(method, target);
  }
};

template <class ValuePathPolicy, class DispatchPolicy>
struct Variant {
  using ValuePath = ValuePathPolicy;
  using Dispatch = DispatchPolicy;
};

using OptimizedVariant = Variant<CStringValue, OrderedDispatch>;
using BaselineVariant = Variant<StringValue, NaiveDispatch>;

// Calls f(V{}) with the Variant the config selects; returns what f returns. Call it once, at
// start-up, never per request.
template <class F>
auto with_variant(const Config& config, F&& f) {
  const bool cstring = config.value_path == ValuePathKind::cstring;
  if (config.dispatch == DispatchKind::ordered) {
    return cstring ? f(Variant<CStringValue, OrderedDispatch>{})
                   : f(Variant<StringValue, OrderedDispatch>{});
  }
  return cstring ? f(Variant<CStringValue, NaiveDispatch>{})
                 : f(Variant<StringValue, NaiveDispatch>{});
}

// Explicit instantiation of a class template for all four variants (in one .cc file).
#define SERVER_INSTANTIATE_VARIANTS(Template)                                                    \
  template class Template<::server::Variant<::server::CStringValue, ::server::OrderedDispatch>>; \
  template class Template<::server::Variant<::server::StringValue, ::server::OrderedDispatch>>;  \
  template class Template<::server::Variant<::server::CStringValue, ::server::NaiveDispatch>>;   \
  template class Template<::server::Variant<::server::StringValue, ::server::NaiveDispatch>>

}  // namespace server
