// store.cc — the engine-independent part of store.hh: the clock, code names and the split of a
// store URI. It includes no engine: open_store, which does, is open_store.cc's.
#include "store/store.hh"

namespace store {

std::uint64_t unix_now_ms() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count());
}

const char* to_string(Code c) {
  switch (c) {
    case Code::ok:
      return "ok";
    case Code::not_found:
      return "not_found";
    case Code::io_error:
      return "io_error";
    case Code::no_space:
      return "no_space";
    case Code::failed:
      return "failed";
    case Code::closed:
      return "closed";
    case Code::unavailable:
      return "unavailable";
    case Code::abandoned:
      return "abandoned";
  }
  return "unknown";
}

std::optional<StoreUriParts> split_store_uri(std::string_view uri) {
  for (std::string_view scheme : {"rocksdb", "postgres"}) {
    if (uri.size() > scheme.size() + 1 && uri.starts_with(scheme) && uri[scheme.size()] == ':') {
      return StoreUriParts{scheme, uri.substr(scheme.size() + 1)};
    }
  }
  return std::nullopt;
}

}  // namespace store
