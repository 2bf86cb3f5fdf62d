// eviction_policies.hh — which entry leaves when a shard is full: none, FIFO, LRU, CLOCK, SIEVE
// (S3-FIFO has a shard of its own, s3fifo.hh: its queues are segment logs).
//
// A policy is a type the shard is instantiated with. The shard calls, with its lock held:
//   on_insert(e), on_remove(e)   exclusive lock
//   on_hit(table, slot, e)       read lock (shared under SharedReads!) — must be thread-safe
//   pick_victim(table, hash_of)  exclusive lock, table not empty; returns a slot index
//   clear()                      exclusive lock, after every entry was destroyed
// FIFO and LRU keep an intrusive doubly linked list (16 bytes per entry). LRU's hit moves the
// entry to the front under a small per-shard mutex when readers share the shard lock, because a
// list cannot be spliced under a shared lock. CLOCK needs no list: its bit lives in the hash
// table's slot word, the hand sweeps the slot array, and a hit only sets the bit atomically, so
// its read path takes no exclusive lock. SIEVE keeps FIFO's list but, like CLOCK, marks a hit with
// an atomic bit (in the entry's meta byte), so its read path takes no lock either.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "cache/entry.hh"
#include "cache/slot_table.hh"

namespace cache::detail {

// A circular list around a sentinel: sentinel.next is the newest, sentinel.prev the oldest.
// Not movable (the sentinel's address is in the list).
class IntrusiveList {
 public:
  IntrusiveList() { sentinel_.prev = sentinel_.next = &sentinel_; }
  IntrusiveList(const IntrusiveList&) = delete;
  IntrusiveList& operator=(const IntrusiveList&) = delete;

  bool empty() const { return sentinel_.next == &sentinel_; }
  ListHook* front() { return empty() ? nullptr : sentinel_.next; }
  ListHook* back() { return empty() ? nullptr : sentinel_.prev; }

  void push_front(ListHook* h) {
    h->prev = &sentinel_;
    h->next = sentinel_.next;
    sentinel_.next->prev = h;
    sentinel_.next = h;
  }
  static void unlink(ListHook* h) {
    h->prev->next = h->next;
    h->next->prev = h->prev;
    h->prev = h->next = nullptr;
  }
  void move_to_front(ListHook* h) {
    if (sentinel_.next == h) return;
    unlink(h);
    push_front(h);
  }
  void clear() { sentinel_.prev = sentinel_.next = &sentinel_; }
  const ListHook* sentinel() const { return &sentinel_; }

 private:
  ListHook sentinel_;
};

// Never evicts; the shard refuses a set that does not fit.
class NoEviction {
 public:
  using Hook = NoHook;
  static constexpr bool kEvicts = false;
  template <class E>
  void on_insert(E*) {}
  template <class E>
  void on_remove(E*) {}
  template <class E>
  void on_hit(const SlotTable<E>&, std::size_t, E*) const {}
  template <class E, class HashFn>
  std::size_t pick_victim(SlotTable<E>&, const HashFn&) {
    return SlotTable<E>::npos;  // never called: kEvicts is false
  }
  void clear() {}
};

// The list-ordered policies (FIFO, LRU): an entry joins the front when inserted, leaves when
// removed, and the victim is the back. What a hit does is the policy's own on_hit.
class ListEviction {
 public:
  using Hook = ListHook;
  static constexpr bool kEvicts = true;
  template <class E>
  void on_insert(E* e) {
    list_.push_front(e);
  }
  template <class E>
  void on_remove(E* e) {
    IntrusiveList::unlink(e);
  }
  template <class E, class HashFn>
  std::size_t pick_victim(SlotTable<E>& table, const HashFn& hash_of) {
    const E* last = static_cast<const E*>(list_.back());
    return table.find(last->key(), hash_of(last->key()));
  }
  void clear() { list_.clear(); }

 protected:
  // LRU moves an entry on a hit, under the shard's read lock: guarded by the shard lock, plus
  // LruEviction's touch_mutex_ for readers that share it.
  mutable IntrusiveList list_;
};

// Evicts the oldest insertion. A replaced value counts as a new insertion.
class FifoEviction : public ListEviction {
 public:
  template <class E>
  void on_hit(const SlotTable<E>&, std::size_t, E*) const {}
};

// Evicts the least recently used (set or hit).
template <class Lock>
class LruEviction : public ListEviction {
 public:
  template <class E>
  void on_hit(const SlotTable<E>&, std::size_t, E* e) const {
    if constexpr (Lock::kReadersShare) {
      std::lock_guard touch(touch_mutex_);  // other readers hold the same shared lock
      list_.move_to_front(e);
    } else {
      list_.move_to_front(e);  // the shard lock is exclusive already
    }
  }

 private:
  mutable std::mutex touch_mutex_;  // serialises hits that share the shard lock
};

// CLOCK (second chance) with the hash table as the clock face. A new entry starts unreferenced,
// so a key seen once is the first to go (scan resistance); a hit sets the bit; the hand clears
// set bits as it passes and evicts the first entry whose bit is clear.
class ClockEviction {
 public:
  using Hook = NoHook;
  static constexpr bool kEvicts = true;
  template <class E>
  void on_insert(E*) {}  // a new slot starts with its bit clear
  template <class E>
  void on_remove(E*) {}
  template <class E>
  void on_hit(const SlotTable<E>& table, std::size_t slot, E*) const {
    table.mark_referenced(slot);
  }
  template <class E, class HashFn>
  std::size_t pick_victim(SlotTable<E>& table, const HashFn&) {
    // The hand visits slots with a stride near capacity/phi, coprime with the capacity
    // (SlotTable::next_hand): a full cycle over the table in scattered order. Sweeping in index
    // order would free slots only just behind the hand, leaving the region ahead of it nearly full
    // for a whole revolution, and linear probing degrades sharply near full (measured: 738 hash
    // calls per operation instead of 5 under a scan). Scattered, the freed slots are spread evenly
    // and probe runs stay short. Terminates within two cycles: the first clears every bit it meets.
    if (hand_ >= table.capacity()) hand_ = 0;
    for (;; hand_ = table.next_hand(hand_)) {
      if (table.at(hand_) == nullptr) continue;
      if (!table.referenced(hand_)) return hand_;
      table.clear_referenced(hand_);
    }
  }
  void clear() { hand_ = 0; }

 private:
  std::size_t hand_ = 0;
};

// SIEVE (Zhang et al., NSDI 2024): a FIFO list plus a hand. A hit sets a visited bit in the
// entry's meta byte with an atomic OR (no lock; skipped when already set). To evict, the hand
// walks from the oldest entry toward the newest, clearing visited bits, and evicts the first
// unvisited entry; it stays there for the next eviction and wraps to the oldest at the newest.
// Unlike CLOCK, survivors keep their place: new keys are examined before old hot ones. Needs the
// list hook (insertion order), so it costs what FIFO costs per entry.
class SieveEviction {
 public:
  using Hook = ListHook;
  static constexpr bool kEvicts = true;
  static constexpr std::uint8_t kVisited = 0x1;
  template <class E>
  void on_insert(E* e) {
    e->meta.store(0, std::memory_order_relaxed);
    list_.push_front(e);
  }
  template <class E>
  void on_remove(E* e) {
    if (hand_ == e) hand_ = newer(e);
    IntrusiveList::unlink(e);
  }
  template <class E>
  void on_hit(const SlotTable<E>&, std::size_t, E* e) const {
    if ((e->meta.load(std::memory_order_relaxed) & kVisited) == 0)
      e->meta.fetch_or(kVisited, std::memory_order_relaxed);
  }
  template <class E, class HashFn>
  std::size_t pick_victim(SlotTable<E>& table, const HashFn& hash_of) {
    // Terminates within one lap plus one entry: the lap clears every bit it meets.
    ListHook* h = hand_ != nullptr ? hand_ : list_.back();
    for (;;) {
      E* e = static_cast<E*>(h);
      if ((e->meta.load(std::memory_order_relaxed) & kVisited) == 0) break;
      e->meta.store(0, std::memory_order_relaxed);
      h = newer(h);
      if (h == nullptr) h = list_.back();
    }
    hand_ = h;  // on_remove moves it on to the next newer entry
    const E* victim = static_cast<const E*>(h);
    return table.find(victim->key(), hash_of(victim->key()));
  }
  void clear() {
    list_.clear();
    hand_ = nullptr;
  }

 private:
  // The entry inserted just after h, or nullptr if h is the newest.
  ListHook* newer(ListHook* h) { return h->prev == list_.sentinel() ? nullptr : h->prev; }

  IntrusiveList list_;
  ListHook* hand_ = nullptr;  // nullptr: start at the oldest
};

}  // namespace cache::detail
