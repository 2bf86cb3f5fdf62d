// preconditions.hh — a write's If-Match and If-None-Match (RFC 9110 13.1.1-2; docs/api.md,
// "Versions and conditional requests"): parsed by the handler, then tested by whoever knows the
// key's current version: the cache under its shard's lock (memory only), or the durable tier
// (store_tier.hh), which may first have to ask the store whether the key exists. A value type,
// so the tier can keep it while it waits.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "server/etag.hh"

namespace server {

struct Preconditions {
  bool has_if_match = false, has_if_none_match = false;
  EtagList if_match, if_none_match;

  // An empty view when both parse (or are absent), else the 400's reason.
  std::string_view parse(const Etags& etags, bool if_match_present, std::string_view if_match_value,
                         bool if_none_match_present, std::string_view if_none_match_value) {
    has_if_match = if_match_present;
    has_if_none_match = if_none_match_present;
    if (has_if_match && !etags.parse(if_match_value, if_match)) return "malformed If-Match";
    if (has_if_none_match && !etags.parse(if_none_match_value, if_none_match)) {
      return "malformed If-None-Match";
    }
    return {};
  }
  bool any() const { return has_if_match || has_if_none_match; }
  // current: the key's version, or nullptr when it has none (absent or expired).
  bool allow(const std::uint64_t* current) const {
    if (has_if_match && !if_match.matches_strong(current)) return false;
    return !(has_if_none_match && if_none_match.matches_weak(current));
  }

  // A version no ETag can name (they carry 47 bits): a key that exists but whose version no
  // client can know (it is in the store, not the cache). Etags::parse keeps no tag above
  // kMaxEtagVersion, so no If-Match can name this one, forged or not.
  static constexpr std::uint64_t kUnknowable = std::numeric_limits<std::uint64_t>::max();
  static_assert(kUnknowable > kMaxEtagVersion, "no parsed tag names kUnknowable");
  // Whether the answer depends on the key existing ("*" in either header): only then must a
  // key that is not cached be looked up in the store.
  bool needs_existence() const { return allow(nullptr) != allow(&kUnknowable); }
};

}  // namespace server
