// write_mode.hh — --write-mode: when a write (PUT/DELETE) is answered with a durable store
// behind the cache. Here, not in tier/, because both the tier (tier/options.hh, which acts on
// it) and the server's Config (server/config.hh, which the transport includes and which must not
// reach tier/ or store/: tests/server/test_layers.py) name it.
#pragma once

#include <cstdint>

namespace common {

enum class WriteMode : std::uint8_t {
  through,  // once it is durable in the store
  behind,   // once it is in the cache; it reaches the store within --flush-interval
};
inline const char* to_string(WriteMode m) {  // "through" / "behind"
  return m == WriteMode::through ? "through" : "behind";
}

}  // namespace common
