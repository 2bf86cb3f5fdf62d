// slot_table.hh — the index of one shard: open addressing with linear probing.
//
// Capacity is a power of two; the table doubles when size+1 would exceed max_load_factor *
// capacity. A slot is one 64-bit word: the entry's address in bits 0..47, CLOCK's referenced
// bit in bit 48, and a 15-bit tag (the hash's top bits) in bits 49..63, so most probes that do
// not match are rejected without touching the entry, and the CLOCK hand sweeps a contiguous
// array instead of chasing pointers. Deletion shifts followers back (no tombstones), so lookups
// stay short under churn. The table never owns entries; the shard creates and destroys them.
//
// Slots are std::atomic only so that readers holding a *shared* lock may set the referenced bit
// (mark_referenced); every other access happens under the exclusive lock and is relaxed.
//
// The hash of an entry is not stored (it would cost 8 bytes per item); growing and
// backward-shifting recompute it with the shard's hasher.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "cache/entry.hh"

namespace cache::detail {

template <class E>
class SlotTable {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t kInitialCapacity = 16;

  explicit SlotTable(double max_load_factor) : max_load_factor_(max_load_factor) {
    allocate(kInitialCapacity);
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return mask_ + 1; }

  // The entry in slot i, or nullptr when the slot is empty.
  E* at(std::size_t i) const { return untag(load(i & mask_)); }

  // CLOCK's bit. mark_referenced is safe under a shared lock (an atomic OR, skipped when the bit
  // is already set so a hot slot's cache line is not written on every hit).
  void mark_referenced(std::size_t i) const {
    if ((load(i) & kReferencedBit) == 0)
      slots_[i].fetch_or(kReferencedBit, std::memory_order_relaxed);
  }
  bool referenced(std::size_t i) const { return (load(i) & kReferencedBit) != 0; }
  void clear_referenced(std::size_t i) { store(i, load(i) & ~kReferencedBit); }

  // The slot holding `key`, or npos.
  std::size_t find(std::string_view key, std::uint64_t hash) const {
    const std::uint64_t tag = tag_of(hash);
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const std::uint64_t s = load(i);
      if (s == 0) return npos;
      if ((s & kTagMask) == tag && untag(s)->key() == key) return i;
    }
  }

  // The slot holding exactly entry `e` (found by address, never dereferenced), or npos. Lets a
  // policy that remembers (address, hash) pairs tell a live entry from a freed one.
  std::size_t find_entry(std::uint64_t hash, const E* e) const {
    const std::uint64_t tag = tag_of(hash);
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const std::uint64_t s = load(i);
      if (s == 0) return npos;
      if ((s & kTagMask) == tag && untag(s) == e) return i;
    }
  }

  // Makes room for one more entry, doubling if needed. Throws std::bad_alloc with the table
  // unchanged, so callers reserve before they modify anything else.
  template <class HashFn>
  void reserve_one_more(const HashFn& hash_of) {
    if (static_cast<double>(size_ + 1) <= max_load_factor_ * static_cast<double>(capacity())) {
      return;
    }
    const std::size_t old_capacity = capacity();
    auto old = std::make_unique<std::atomic<std::uint64_t>[]>(old_capacity * 2);  // may throw
    std::swap(old, slots_);
    mask_ = old_capacity * 2 - 1;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      const std::uint64_t s = old[i].load(std::memory_order_relaxed);
      if (s != 0) place(s, hash_of(untag(s)->key()));
    }
  }

  // Inserts an entry whose key is absent; room must have been reserved.
  [[gnu::always_inline]] void insert(E* e, std::uint64_t hash) {
    assert((reinterpret_cast<std::uintptr_t>(e) & ~kPointerMask) == 0);
    place(reinterpret_cast<std::uintptr_t>(e) | tag_of(hash), hash);
    ++size_;
  }

  // Empties slot i and shifts the following run back so every entry stays reachable from its
  // home slot (Knuth's algorithm R).
  template <class HashFn>
  void erase_at(std::size_t i, const HashFn& hash_of) {
    std::size_t hole = i & mask_;
    for (std::size_t j = (hole + 1) & mask_; load(j) != 0; j = (j + 1) & mask_) {
      const std::size_t home = hash_of(untag(load(j))->key()) & mask_;
      // The entry at j may move into the hole unless its home lies cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        store(hole, load(j));
        hole = j;
      }
    }
    store(hole, 0);
    --size_;
  }

  // Calls f(E*) for every entry.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i <= mask_; ++i) {
      if (const std::uint64_t s = load(i); s != 0) f(untag(s));
    }
  }

  // Forgets every entry (the caller has destroyed them) and shrinks back to the initial size.
  void clear() {
    allocate(kInitialCapacity);
    size_ = 0;
  }

 private:
  // User-space addresses fit in 48 bits on x86-64 and arm64 (Linux hands out higher ones only to
  // an mmap that asks for them).
  static constexpr std::uint64_t kPointerMask = kAddressBitsMask;  // entry.hh checks every entry
  static constexpr std::uint64_t kReferencedBit = std::uint64_t{1} << 48;
  static constexpr std::uint64_t kTagMask = ~(kPointerMask | kReferencedBit);

  static std::uint64_t tag_of(std::uint64_t hash) { return hash & kTagMask; }
  static E* untag(std::uint64_t slot) {
    return reinterpret_cast<E*>(static_cast<std::uintptr_t>(slot & kPointerMask));
  }
  std::uint64_t load(std::size_t i) const { return slots_[i].load(std::memory_order_relaxed); }
  void store(std::size_t i, std::uint64_t v) { slots_[i].store(v, std::memory_order_relaxed); }

  void allocate(std::size_t capacity) {
    slots_ = std::make_unique<std::atomic<std::uint64_t>[]>(capacity);  // zeroed: all empty
    mask_ = capacity - 1;
  }

  void place(std::uint64_t slot, std::uint64_t hash) {
    std::size_t i = hash & mask_;
    while (load(i) != 0) i = (i + 1) & mask_;
    store(i, slot);
  }

  std::unique_ptr<std::atomic<std::uint64_t>[]> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  double max_load_factor_;
};

}  // namespace cache::detail
