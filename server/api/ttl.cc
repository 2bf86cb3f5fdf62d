// ttl.cc — see ttl.hh.
#include "server/api/ttl.hh"

#include "server/transport/http_ows.hh"

namespace server {

namespace {

constexpr std::string_view kBadTtl = "ttl must be a whole number of seconds from 1 to 315360000";
constexpr std::string_view kBadMaxAge =
    "Cache-Control max-age must be a whole number of seconds from 1 to 315360000";
constexpr std::string_view kDisagree = "ttl and Cache-Control max-age disagree";

// 1..kMaxTtlSeconds in decimal digits only; 0 when s is anything else.
long long parse_seconds(std::string_view s) {
  if (s.empty() || s.size() > 9) return 0;  // 10 digits or more is over ten years
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v <= kMaxTtlSeconds ? v : 0;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Folds one more value into `seconds` (0: none yet); false if it disagrees.
bool agree(long long& seconds, long long value) {
  if (seconds != 0 && seconds != value) return false;
  seconds = value;
  return true;
}

}  // namespace

TtlRequest parse_ttl(std::string_view query, std::string_view cache_control) {
  long long seconds = 0;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (param != "ttl" && !param.starts_with("ttl=")) continue;
    const long long v = parse_seconds(param.size() > 3 ? param.substr(4) : std::string_view());
    if (v == 0) return {std::chrono::seconds(0), kBadTtl};
    if (!agree(seconds, v)) return {std::chrono::seconds(0), "ttl given twice with two values"};
  }
  bool from_query = seconds != 0;
  while (!cache_control.empty()) {
    const std::size_t comma = cache_control.find(',');
    const std::string_view directive = trim_ows(cache_control.substr(0, comma));
    cache_control =
        comma == std::string_view::npos ? std::string_view() : cache_control.substr(comma + 1);
    const std::size_t eq = directive.find('=');
    if (!iequals(trim_ows(directive.substr(0, eq)), "max-age")) continue;
    std::string_view arg =
        eq == std::string_view::npos ? std::string_view() : trim_ows(directive.substr(eq + 1));
    if (arg.size() >= 2 && arg.front() == '"' && arg.back() == '"') {  // quoted-string form
      arg = arg.substr(1, arg.size() - 2);
    }
    const long long v = parse_seconds(arg);
    if (v == 0) return {std::chrono::seconds(0), kBadMaxAge};
    if (!agree(seconds, v)) {
      return {std::chrono::seconds(0),
              from_query ? kDisagree : "max-age given twice with two values"};
    }
  }
  return {std::chrono::seconds(seconds), {}};
}

}  // namespace server
