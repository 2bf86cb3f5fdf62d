// entry.hh — one cache entry is one heap allocation: [header][key][value][version][expiry?].
//
// The header is 8 bytes for CLOCK, S3-FIFO and no-eviction (value length, key length, one byte of
// eviction state, the has-expiry flag and the version's top 15 bits) and 24 bytes for the
// list policies, which add an intrusive prev/next hook. After the value come the version's low
// 32 bits (every entry) and, only for an entry with a TTL, its expiry (5 bytes). Keeping it all
// in one block means one malloc per set, one free per removal, and one cache-line neighbourhood
// per lookup (cache/README.md, "Bytes per item", has the measurement).
//
// The version (47 bits) is what the server's ETag names: the shard's write counter when the
// entry was written, so it changes on every write of a key, even one of the same bytes, and at
// a million writes a second a shard takes 4.5 years to wrap it. The expiry is milliseconds since
// the cache's epoch (40 bits: 34 years), unaligned, read with memcpy.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string_view>

namespace cache::detail {

// Hooks an eviction policy may need inside each entry.
struct NoHook {};
struct ListHook {
  ListHook* prev = nullptr;
  ListHook* next = nullptr;
};

inline constexpr std::size_t kVersionLowBytes = 4;
inline constexpr std::size_t kExpiryBytes = 5;
inline constexpr std::uint64_t kMaxVersion = (std::uint64_t{1} << 47) - 1;
inline constexpr std::uint64_t kMaxExpiryMs = (std::uint64_t{1} << 40) - 1;

template <class Hook>
struct Entry : Hook {
  std::uint32_t value_len;
  std::uint8_t key_len;
  // Per-entry eviction state for policies that keep it beside the entry (S3-FIFO's queue bit
  // and 2-bit frequency, SIEVE's visited bit). Atomic because a hit under a shared lock may
  // update it.
  std::atomic<std::uint8_t> meta{0};
  // Bit 15: the entry has an expiry; bits 0..14: the version's bits 32..46. Plain fields rather
  // than bitfields: callgrind counted 22 instructions more per set with bitfields (issue 30).
  std::uint16_t high;

  static constexpr std::uint16_t kHasExpiry = 0x8000;

  Entry(std::uint8_t klen, std::uint32_t vlen, bool expires)
      : value_len(vlen), key_len(klen), high(expires ? kHasExpiry : 0) {}
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  // The bytes that follow the header: key, value, version, expiry.
  char* bytes() { return reinterpret_cast<char*>(this + 1); }
  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view key() const { return {bytes(), key_len}; }
  std::string_view value() const { return {bytes() + key_len, value_len}; }
  // What this entry counts toward maxmem.
  std::size_t charge() const { return std::size_t{key_len} + value_len; }

  std::uint64_t version() const {
    std::uint32_t low;
    std::memcpy(&low, trailer(), sizeof low);
    return (static_cast<std::uint64_t>(high & ~kHasExpiry) << 32) | low;
  }
  void set_version(std::uint64_t v) {  // v <= kMaxVersion
    high = static_cast<std::uint16_t>((high & kHasExpiry) | (v >> 32));
    const auto low = static_cast<std::uint32_t>(v);
    std::memcpy(trailer(), &low, sizeof low);
  }
  bool expires() const { return (high & kHasExpiry) != 0; }
  // Milliseconds since the cache's epoch; only when expires().
  std::uint64_t expiry_ms() const {
    std::uint64_t ms = 0;
    std::memcpy(&ms, trailer() + kVersionLowBytes, kExpiryBytes);  // little-endian
    return ms;
  }
  void set_expiry_ms(std::uint64_t ms) {
    std::memcpy(trailer() + kVersionLowBytes, &ms, kExpiryBytes);
  }
  // Expired at `now_ms` (milliseconds since the cache's epoch)?
  bool expired_at(std::uint64_t now_ms) const { return expires() && expiry_ms() <= now_ms; }

  // Bytes of one entry with this key and value.
  static constexpr std::size_t block_size(std::size_t key_bytes, std::size_t value_bytes,
                                          bool expires) {
    return sizeof(Entry) + key_bytes + value_bytes + kVersionLowBytes +
           (expires ? kExpiryBytes : 0);
  }

 private:
  char* trailer() { return bytes() + key_len + value_len; }
  const char* trailer() const { return bytes() + key_len + value_len; }
};
static_assert(sizeof(Entry<NoHook>) == 8, "the header is 8 bytes for the policies without a hook");
static_assert(std::endian::native == std::endian::little,
              "expiry_ms() reads 5 little-endian bytes");
// The measured entry (11-byte key, 100-byte value; cache/README.md, "Bytes per item") stays in
// jemalloc's 128-byte class with its version and with an expiry too.
static_assert(Entry<NoHook>::block_size(11, 100, true) <= 128,
              "the measured entry with an expiry must stay in the 128-byte size class");

// Frees an entry made by make_entry. Entries live in the slot table as raw (tagged) pointers, so
// ownership is explicit: whoever unlinks an entry from the table destroys it.
template <class E>
void destroy_entry(E* e) noexcept {
  e->~E();
  ::operator delete(static_cast<void*>(e));
}

template <class E>
struct EntryDeleter {
  void operator()(E* e) const noexcept { destroy_entry(e); }
};
template <class E>
using EntryPtr = std::unique_ptr<E, EntryDeleter<E>>;

// The slot table keeps tags in address bits 48..63 (slot_table.hh): user-space heap addresses
// fit in 48 bits on x86-64 and arm64 Linux unless something (5-level paging with high mmap hints,
// arm64 pointer tagging) hands out others. Checked on every allocation, in release builds too.
inline constexpr std::uintptr_t kAddressBitsMask = (std::uintptr_t{1} << 48) - 1;

// One allocation holding header, key, value and trailer (version, and expiry if `expires`; the
// caller sets them). Caller guarantees key.size() <= 255 and value.size() <= UINT32_MAX. Throws
// std::bad_alloc, or std::runtime_error for an address the slot table cannot tag.
template <class E>
[[gnu::always_inline]] inline EntryPtr<E> make_entry(std::string_view key, std::string_view value,
                                                     bool expires = false) {
  void* block = ::operator new(E::block_size(key.size(), value.size(), expires));
  if ((reinterpret_cast<std::uintptr_t>(block) & ~kAddressBitsMask) != 0) {
    ::operator delete(block);
    throw std::runtime_error("cache: heap address above 2^48; slot tagging needs 48-bit addresses");
  }
  EntryPtr<E> e(::new (block) E(static_cast<std::uint8_t>(key.size()),
                                static_cast<std::uint32_t>(value.size()), expires));
  std::memcpy(e->bytes(), key.data(), key.size());
  if (!value.empty()) std::memcpy(e->bytes() + key.size(), value.data(), value.size());
  return e;
}

}  // namespace cache::detail
