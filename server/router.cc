// router.cc — see router.hh. Read top to bottom: the order of the ifs is the dispatch order.
#include "server/router.hh"

namespace server {
namespace http = boost::beast::http;

namespace {

// /key/{k} or /key/{k}/{v}, split on the first '/' after the prefix. More segments: no match.
struct KeyPath {
  bool matched = false;
  bool has_value = false;
  std::string_view key;
  std::string_view value;
};

KeyPath match_key_path(std::string_view path) {
  if (!path.starts_with(kKeyPrefix)) return {};
  std::string_view rest = path.substr(kKeyPrefix.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return {true, false, rest, {}};
  std::string_view value = rest.substr(slash + 1);
  if (value.find('/') != std::string_view::npos) return {};
  return {true, true, rest.substr(0, slash), value};
}

// The route for a path no handler takes with this method: 405 if the path exists, else 404.
Route path_error(std::string_view path, const KeyPath& kp) {
  if (kp.matched) {
    return {Endpoint::method_not_allowed, {}, {}, kp.has_value ? kAllowKeyValue : kAllowKey};
  }
  if (path == "/") return {Endpoint::method_not_allowed, {}, {}, kAllowRoot};
  if (path == "/reset") return {Endpoint::method_not_allowed, {}, {}, kAllowReset};
  if (path == "/stats") return {Endpoint::method_not_allowed, {}, {}, kAllowStats};
  return {Endpoint::not_found, {}, {}, {}};
}

// The path of a request-target: origin-form as is, absolute-form ("http://host:port/path",
// which RFC 9112 says servers must accept) reduced to its path, any query dropped.
std::string_view target_path(std::string_view target) {
  for (std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
    if (target.starts_with(scheme)) {
      const auto slash = target.find('/', scheme.size());
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
      break;
    }
  }
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

}  // namespace

Route route(http::verb method, std::string_view target) {
  const std::string_view path = target_path(target);
  const KeyPath kp = match_key_path(path);
  if (method == http::verb::get) {
    if (kp.matched && !kp.has_value) return {Endpoint::key_get, kp.key, {}, {}};
    if (path == "/stats") return {Endpoint::stats, {}, {}, {}};
  } else if (method == http::verb::put) {
    if (kp.matched) {
      return {kp.has_value ? Endpoint::key_put_path : Endpoint::key_put_body, kp.key, kp.value, {}};
    }
  } else if (method == http::verb::delete_) {
    if (kp.matched && !kp.has_value) return {Endpoint::key_delete, kp.key, {}, {}};
  } else if (method == http::verb::head) {
    if (kp.matched && !kp.has_value) return {Endpoint::key_head, kp.key, {}, {}};
    if (path == "/") return {Endpoint::root_head, {}, {}, {}};
  } else if (method == http::verb::post) {
    if (path == "/reset") return {Endpoint::reset, {}, {}, {}};
  } else if (method == http::verb::unknown) {
    return {Endpoint::not_implemented, {}, {}, {}};
  }
  return path_error(path, kp);
}

// The baseline: route()'s checks in reverse frequency order. Must agree with route() everywhere.
Route route_naive(http::verb method, std::string_view target) {
  const std::string_view path = target_path(target);
  const KeyPath kp = match_key_path(path);
  if (method == http::verb::post) {
    if (path == "/reset") return {Endpoint::reset, {}, {}, {}};
  } else if (method == http::verb::head) {
    if (path == "/") return {Endpoint::root_head, {}, {}, {}};
    if (kp.matched && !kp.has_value) return {Endpoint::key_head, kp.key, {}, {}};
  } else if (method == http::verb::delete_) {
    if (kp.matched && !kp.has_value) return {Endpoint::key_delete, kp.key, {}, {}};
  } else if (method == http::verb::put) {
    if (kp.matched) {
      return {kp.has_value ? Endpoint::key_put_path : Endpoint::key_put_body, kp.key, kp.value, {}};
    }
  } else if (method == http::verb::get) {
    if (path == "/stats") return {Endpoint::stats, {}, {}, {}};
    if (kp.matched && !kp.has_value) return {Endpoint::key_get, kp.key, {}, {}};
  } else if (method == http::verb::unknown) {
    return {Endpoint::not_implemented, {}, {}, {}};
  }
  return path_error(path, kp);
}

}  // namespace server
