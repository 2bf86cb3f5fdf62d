// entry.hh — one cache entry is one heap allocation: [header][key bytes][value bytes].
//
// The header is 8 bytes for CLOCK, S3-FIFO and no-eviction (value length, key length, one byte of
// eviction state) and 24 bytes for the list policies, which add an intrusive prev/next hook.
// Keeping key and value in the same block as the header means one malloc per set, one free per
// removal, and one cache-line neighbourhood per lookup; it is what keeps per-item overhead under 48
// bytes (optimizations/README.md has the measurement).
#pragma once

#include <atomic>
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

template <class Hook>
struct Entry : Hook {
  std::uint32_t value_len;
  std::uint8_t key_len;
  // Per-entry eviction state for policies that keep it beside the entry (S3-FIFO's queue bit
  // and 2-bit frequency). It sits in what would otherwise be header padding, so it costs no
  // memory. Atomic because a hit under a shared lock may update it.
  std::atomic<std::uint8_t> meta{0};

  Entry(std::uint8_t klen, std::uint32_t vlen) : value_len(vlen), key_len(klen) {}
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  // The bytes that follow the header: key, then value.
  char* bytes() { return reinterpret_cast<char*>(this + 1); }
  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view key() const { return {bytes(), key_len}; }
  std::string_view value() const { return {bytes() + key_len, value_len}; }
  // What this entry counts toward maxmem.
  std::size_t charge() const { return std::size_t{key_len} + value_len; }
};
static_assert(sizeof(Entry<NoHook>) == 8, "the meta byte must stay inside the header padding");

// Room kept for expiry (issue 30's TTLs, not implemented yet): an entry with a TTL will carry a
// 4-byte expiry time (seconds since the cache's epoch) after its value, flagged by this meta bit,
// so entries without one pay nothing and the header, key() and value() stay as they are. Bits
// 0..2 are S3-FIFO's, bit 0 SIEVE's; this one is free in every policy (the policies that store
// the whole byte will have to keep it when TTLs come). The measured entry (11-byte
// key, 100-byte value) is 119 bytes in a 128-byte chunk (glibc and jemalloc), so the expiry fits
// in its rounding: 123 <= 128 (cache/README.md, "Bytes per item").
inline constexpr std::uint8_t kMetaHasExpiry = 0x40;
inline constexpr std::size_t kExpiryBytes = 4;
static_assert(sizeof(Entry<NoHook>) + 11 + 100 + kExpiryBytes <= 128,
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

// One allocation holding header, key and value. Caller guarantees key.size() <= 255 and
// value.size() <= UINT32_MAX. Throws std::bad_alloc, or std::runtime_error for an address the
// slot table cannot tag.
template <class E>
EntryPtr<E> make_entry(std::string_view key, std::string_view value) {
  void* block = ::operator new(sizeof(E) + key.size() + value.size());
  if ((reinterpret_cast<std::uintptr_t>(block) & ~kAddressBitsMask) != 0) {
    ::operator delete(block);
    throw std::runtime_error("cache: heap address above 2^48; slot tagging needs 48-bit addresses");
  }
  EntryPtr<E> e(::new (block) E(static_cast<std::uint8_t>(key.size()),
                                static_cast<std::uint32_t>(value.size())));
  std::memcpy(e->bytes(), key.data(), key.size());
  if (!value.empty()) std::memcpy(e->bytes() + key.size(), value.data(), value.size());
  return e;
}

}  // namespace cache::detail
