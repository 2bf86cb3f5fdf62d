// key_hasher.hh — turns the user's hasher (or std::hash) into 64 well-mixed bits.
//
// The cache takes three things from one hash: the shard (bits 32..47), the home slot (low bits)
// and the slot tag (top 15 bits). An injected hasher may be weak (the course's tests use 32-bit
// and even constant ones), so its output goes through a 64-bit finaliser (splitmix64's) first.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

#include "cache/cache.hh"

namespace cache::detail {

class KeyHasher {
 public:
  explicit KeyHasher(Hasher user) : user_(std::move(user)) {}

  // noexcept: the table rehashes keys in the middle of moving entries (growth, backward shift),
  // where a throw would lose entries; a throwing hasher terminates the program instead.
  std::uint64_t operator()(std::string_view key) const noexcept {
    const std::uint64_t h = user_ ? user_(key) : std::hash<std::string_view>{}(key);
    return mix(h);
  }

  static std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
  }

 private:
  Hasher user_;
};

}  // namespace cache::detail
