// preconditions.hh — a write's If-Match and If-None-Match (RFC 9110 13.1.1-2; docs/api.md,
// "Versions and conditional requests") as the version tests they are: parsed by the server's
// handler (with server/transport/etag.hh, which knows what a tag of this process looks like),
// tested by whoever knows the key's current version: the cache under its shard's lock (memory
// only), or the durable tier (tier/conditional_writes.hh), which may first have to ask the store
// whether the key exists. Value types with no dependency beyond the standard library, so the tier
// can keep one while it waits and neither tier/ nor the server's transport depends on the other for
// them.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace common {

// The largest version an ETag names: the cache's versions have 47 bits (cache/entry.hh).
inline constexpr std::uint64_t kMaxEtagVersion = (std::uint64_t{1} << 47) - 1;

// A parsed If-Match or If-None-Match header.
struct EtagList {
  struct Tag {
    std::uint64_t version;
    bool weak;  // W/"..."
  };
  bool any = false;       // "*"
  std::vector<Tag> tags;  // this process's tags only, version <= kMaxEtagVersion (the others
                          // can match nothing)

  // If-Match (RFC 9110 13.1.1): strong comparison; "*" matches any current item.
  // current: the key's version, or nullptr when it has none (absent or expired).
  bool matches_strong(const std::uint64_t* current) const {
    if (current == nullptr) return false;
    if (any) return true;
    for (const Tag& t : tags) {
      if (!t.weak && t.version == *current) return true;
    }
    return false;
  }
  // If-None-Match (13.1.2): weak comparison (W/"x" matches "x"); "*" matches any current item.
  bool matches_weak(const std::uint64_t* current) const {
    if (current == nullptr) return false;
    if (any) return true;
    for (const Tag& t : tags) {
      if (t.version == *current) return true;
    }
    return false;
  }
};

struct Preconditions {
  bool has_if_match = false, has_if_none_match = false;
  EtagList if_match, if_none_match;

  // An empty view when both parse (or are absent), else the 400's reason. TagParser: has
  // `bool parse(std::string_view header, EtagList& out) const` (server::Etags).
  template <class TagParser>
  std::string_view parse(const TagParser& etags, bool if_match_present,
                         std::string_view if_match_value, bool if_none_match_present,
                         std::string_view if_none_match_value) {
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

}  // namespace common
