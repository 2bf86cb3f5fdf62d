// log_item.hh — the layout of one item in an S3-FIFO segment (segment_log.hh): an 8-byte header
// and the item's bytes, at any byte address (no alignment, no padding, no per-item malloc).
//
//   offset 0   key_len       1 byte (1..250; a 0 here ends the segment's items)
//   offset 1   length+flags  3 bytes: value length (bits 0..17, inline values only), long
//                            expiry (18), long version (19), in small (20), has-expiry (21),
//                            dead (22), external value (23)
//   offset 4   version, low  4 bytes: bits 0..31 of the version (the server's ETag)
//   offset 8   key
//              [long version: the version's bits 32..46, 2 bytes]
//              [has-expiry: expiry, 4 bytes after the segment's base time, or (long expiry) 5
//               bytes, milliseconds since the cache's epoch]
//              the value (inline), or its length (8 bytes) and address (8 bytes) (external)
//
// What items share lives once per segment, in its 16-byte header (SegmentHeader), as Segcache
// keeps time per segment: the version's bits 32..46 (the shard's write counter's, when the
// segment was opened: a queue opens a new segment when they change, once every 2^32 writes) and
// the segment's base time (an expiry is stored relative to it when it is less than 2^31 ms, 24
// days, away). So an item of an 11-byte key and a 100-byte value is 119 bytes, 8 above key and
// value; with a TTL, 123. An item copied to another segment (promoted, or moved on at main's head)
// is re-encoded there, in the long form of its version if that segment's bits 32..46 differ.
// Values too large for a segment (over an eighth of one) live in their own allocation, made and
// filled outside the shard's lock; the item in the log holds its length and address, and the
// allocation is freed when the item dies (replaced, deleted, expired or evicted). "Dead" items
// keep their bytes in the log until their queue's head passes them: the flag lets the head skip
// them without hashing their key. Headers are written only under the shard's exclusive lock;
// readers (shared lock) only read them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace cache::detail {

// The first 16 bytes of every segment.
struct SegmentHeader {
  std::uint64_t base_ms;       // when the segment was opened (milliseconds since the epoch)
  std::uint16_t version_high;  // bits 32..46 of the versions of the items written in it
  std::uint16_t unused[3];
};
static_assert(sizeof(SegmentHeader) == 16);

struct LogItem {
  static constexpr std::size_t kHeader = 8;
  static constexpr std::uint32_t kLenMask = (1u << 18) - 1;
  static constexpr std::uint32_t kLongExpiry = 1u << 18;
  static constexpr std::uint32_t kLongVersion = 1u << 19;
  static constexpr std::uint32_t kInSmall = 1u << 20;  // in the small queue's log
  static constexpr std::uint32_t kExpires = 1u << 21;
  static constexpr std::uint32_t kDead = 1u << 22;
  static constexpr std::uint32_t kExternal = 1u << 23;
  static constexpr std::size_t kExternalBytes = 16;  // value length and address
  static constexpr std::uint64_t kMaxVersion = (std::uint64_t{1} << 47) - 1;
  static constexpr std::uint64_t kMaxExpiryMs = (std::uint64_t{1} << 40) - 1;
  // An expiry less than this far ahead is stored in 4 bytes after the segment's base time (a
  // queue's open segment is never older than this either, so the difference fits 32 bits).
  static constexpr std::uint64_t kShortExpiryMs = std::uint64_t{1} << 31;

  // How an item is written into a segment whose header has `version_high` and a base time within
  // kShortExpiryMs before `now_ms`.
  struct Form {
    std::uint32_t flags;  // kLongVersion, kLongExpiry, kExpires, kExternal, kInSmall
    constexpr bool has(std::uint32_t f) const { return (flags & f) != 0; }
  };
  // `version_high`: the bits 32..46 of the segment's versions.
  static constexpr Form form(std::uint64_t version, std::uint16_t version_high, bool expires,
                             std::uint64_t expiry_ms, std::uint64_t now_ms, bool external,
                             bool in_small) {
    std::uint32_t f = (external ? kExternal : 0) | (in_small ? kInSmall : 0);
    if ((version >> 32) != version_high) f |= kLongVersion;
    if (expires) f |= kExpires | (expiry_ms >= now_ms + kShortExpiryMs ? kLongExpiry : 0);
    return {f};
  }
  // The form of an item rewritten in place in the segment of `seg` (whatever its age).
  static constexpr Form form_at(const SegmentHeader& seg, std::uint64_t version, bool expires,
                                std::uint64_t expiry_ms) {
    std::uint32_t f = (version >> 32) != seg.version_high ? kLongVersion : 0;
    if (expires) f |= kExpires | (expiry_ms >= seg.base_ms + 2 * kShortExpiryMs ? kLongExpiry : 0);
    return {f};
  }

  // Bytes of an item in the log.
  static constexpr std::size_t size(std::size_t key_bytes, std::size_t value_bytes, Form form) {
    return kHeader + key_bytes + extras(form.flags) +
           (form.has(kExternal) ? kExternalBytes : value_bytes);
  }

  // Writes an item at p, in a segment whose header is `seg`, in `form` (size(...) bytes of
  // room). With kExternal, value.data() is the value's own allocation, recorded by address.
  [[gnu::always_inline]] static void write(char* p, const SegmentHeader& seg, std::string_view key,
                                           std::string_view value, std::uint64_t version,
                                           std::uint64_t expiry_ms, Form form) {
    const std::uint32_t word =
        form.flags | (form.has(kExternal) ? 0 : static_cast<std::uint32_t>(value.size()));
    const std::uint64_t head = static_cast<std::uint64_t>(key.size()) |
                               (static_cast<std::uint64_t>(word) << 8) | (version << 32);
    std::memcpy(p, &head, 8);
    char* q = p + kHeader;
    std::memcpy(q, key.data(), key.size());
    q += key.size();
    if (form.has(kLongVersion)) {
      const auto high = static_cast<std::uint16_t>(version >> 32);
      std::memcpy(q, &high, 2);
      q += 2;
    }
    if (form.has(kExpires)) {
      if (form.has(kLongExpiry)) {
        std::memcpy(q, &expiry_ms, 5);  // little-endian: the low 5 bytes
        q += 5;
      } else {  // an expiry before the base (already past) is stored as the base: past too
        const auto rel =
            static_cast<std::uint32_t>(expiry_ms > seg.base_ms ? expiry_ms - seg.base_ms : 0);
        std::memcpy(q, &rel, 4);
        q += 4;
      }
    }
    if (form.has(kExternal)) {
      const std::uint64_t len = value.size();
      const char* data = value.data();
      std::memcpy(q, &len, 8);
      std::memcpy(q + 8, &data, 8);
    } else if (!value.empty()) {
      std::memcpy(q, value.data(), value.size());
    }
  }

  [[gnu::always_inline]] static std::uint32_t word(const char* p) {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    return w >> 8;
  }
  [[gnu::always_inline]] static std::size_t key_len(const char* p) {
    return static_cast<unsigned char>(*p);
  }
  [[gnu::always_inline]] static bool expires(const char* p) { return (word(p) & kExpires) != 0; }
  static bool dead(const char* p) { return (word(p) & kDead) != 0; }
  static bool external(const char* p) { return (word(p) & kExternal) != 0; }
  [[gnu::always_inline]] static bool in_small(const char* p) { return (word(p) & kInSmall) != 0; }
  // The flags write() takes (the form the item was written in).
  static Form form_of(const char* p) {
    return {word(p) & (kLongVersion | kLongExpiry | kExpires | kExternal | kInSmall)};
  }

  [[gnu::always_inline]] static const char* key_data(const char* p) { return p + kHeader; }
  [[gnu::always_inline]] static std::string_view key(const char* p) {
    return {p + kHeader, key_len(p)};
  }
  [[gnu::always_inline]] static std::string_view value(const char* p) {
    const std::uint32_t w = word(p);
    const char* v = p + kHeader + key_len(p) + extras(w);
    if ((w & kExternal) != 0) [[unlikely]] {
      std::uint64_t len;
      const char* data;
      std::memcpy(&len, v, 8);
      std::memcpy(&data, v + 8, 8);
      return {data, static_cast<std::size_t>(len)};
    }
    return {v, w & kLenMask};
  }
  [[gnu::always_inline]] static std::uint64_t version(const char* p, const SegmentHeader& seg) {
    std::uint32_t low;
    std::memcpy(&low, p + 4, 4);
    std::uint16_t high = seg.version_high;
    if ((word(p) & kLongVersion) != 0) [[unlikely]] {
      std::memcpy(&high, p + kHeader + key_len(p), 2);
    }
    return (static_cast<std::uint64_t>(high) << 32) | low;
  }
  // Milliseconds since the cache's epoch; only when expires(p).
  [[gnu::always_inline]] static std::uint64_t expiry_ms(const char* p, const SegmentHeader& seg) {
    const std::uint32_t w = word(p);
    const char* e = p + kHeader + key_len(p) + ((w & kLongVersion) != 0 ? 2 : 0);
    if ((w & kLongExpiry) != 0) {
      std::uint64_t ms = 0;
      std::memcpy(&ms, e, 5);
      return ms;
    }
    std::uint32_t rel;
    std::memcpy(&rel, e, 4);
    return seg.base_ms + rel;
  }
  static bool expired_at(const char* p, const SegmentHeader& seg, std::uint64_t now_ms) {
    return expires(p) && expiry_ms(p, seg) <= now_ms;
  }
  // What the item counts toward maxmem: key and value bytes.
  static std::size_t charge(const char* p) { return key_len(p) + value(p).size(); }
  // Bytes the item takes in the log.
  static std::size_t bytes(const char* p) {
    const std::uint32_t w = word(p);
    return kHeader + key_len(p) + extras(w) +
           ((w & kExternal) != 0 ? kExternalBytes : (w & kLenMask));
  }
  // The value's own allocation, or nullptr for an inline value.
  static char* external_data(const char* p) {
    const std::uint32_t w = word(p);
    if ((w & kExternal) == 0) return nullptr;
    char* data;
    std::memcpy(&data, p + kHeader + key_len(p) + extras(w) + 8, 8);
    return data;
  }
  // Exclusive lock held. The item stays in the log, skipped by its queue's head.
  static void mark_dead(char* p) {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    w |= kDead << 8;
    std::memcpy(p, &w, 4);
  }

 private:
  // Bytes between the key and the value: the long version's and the expiry's.
  [[gnu::always_inline]] static constexpr std::size_t extras(std::uint32_t w) {
    return ((w & kLongVersion) != 0 ? 2 : 0) +
           ((w & kExpires) != 0 ? ((w & kLongExpiry) != 0 ? 5 : 4) : 0);
  }
};
static_assert(std::endian::native == std::endian::little, "the header is read little-endian");
static_assert(LogItem::size(11, 100, LogItem::Form{0}) == 119, "the measured item: 8 B above k+v");

}  // namespace cache::detail
