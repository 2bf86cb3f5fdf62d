// router.hh — maps (method, target) to an endpoint, with no allocation and no decoding.
//
// Ordered method dispatch (route): the method is tested in order of request frequency (GET, PUT,
// DELETE, HEAD, POST), and within GET the key route comes first, so a GET hit takes the fewest
// comparisons. Path errors are values: unknown path → 404, known path with the wrong method →
// 405 plus the Allow list, a method HTTP does not define → 501. The key and value segments come
// back still percent-encoded; the handlers decode them (percent_decode.hh).
//
// route_naive is its baseline (--dispatch naive): the same routes and the same result for every
// input, with the methods tested in an unfavourable order (POST, HEAD, DELETE, PUT, GET, and
// the GET key route after /stats), so a GET hit takes the most comparisons.
#pragma once

#include <ostream>  // boost/core/detail/string_view.hpp needs it before verb.hpp

#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <string_view>

namespace server {

enum class Endpoint : std::uint8_t {
  key_get,             // GET    /key/{k}
  key_put_body,        // PUT    /key/{k}          value = request body
  key_put_path,        // PUT    /key/{k}/{v}      value = decoded {v}
  key_delete,          // DELETE /key/{k}
  key_head,            // HEAD   /key/{k}
  root_head,           // HEAD   /
  reset,               // POST   /reset
  stats,               // GET    /stats
  not_found,           // error: unknown path (404)
  method_not_allowed,  // error: known path, wrong method (405, see allow)
  not_implemented,     // error: a method HTTP does not define (501)
};

struct Route {
  Endpoint endpoint;
  std::string_view key;    // percent-encoded key segment (key_* endpoints)
  std::string_view value;  // percent-encoded value segment (key_put_path)
  std::string_view allow;  // the Allow header value (method_not_allowed)
};

inline constexpr std::string_view kKeyPrefix = "/key/";
inline constexpr std::string_view kAllowKey = "GET, PUT, DELETE, HEAD";
inline constexpr std::string_view kAllowKeyValue = "PUT";
inline constexpr std::string_view kAllowRoot = "HEAD";
inline constexpr std::string_view kAllowReset = "POST";
inline constexpr std::string_view kAllowStats = "GET";

// `target` is the request-target as sent (origin-form, or absolute-form "http://host/path");
// a query ("?...") is ignored.
Route route(boost::beast::http::verb method, std::string_view target);
Route route_naive(boost::beast::http::verb method, std::string_view target);

}  // namespace server
