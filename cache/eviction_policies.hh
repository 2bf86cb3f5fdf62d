// eviction_policies.hh — which entry leaves when a shard is full: none, FIFO, LRU, CLOCK.
//
// A policy is a type the shard is instantiated with. The shard calls, with its lock held:
//   on_insert(e), on_remove(e)   exclusive lock
//   on_hit(e)                    read lock (shared under SharedReads!) — must be thread-safe
//   pick_victim(table, hash_of)  exclusive lock, table not empty; returns a slot index
//   clear()                      exclusive lock, after every entry was destroyed
// FIFO and LRU keep an intrusive doubly linked list (16 bytes per entry). LRU's hit moves the
// entry to the front under a small per-shard mutex when readers share the shard lock, because a
// list cannot be spliced under a shared lock. CLOCK needs no list: the hand sweeps the hash
// table's slots, and a hit only sets an atomic bit, so its read path takes no exclusive lock.
#pragma once

#include <cstddef>
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
  void on_hit(E*) const {}
  template <class E, class HashFn>
  std::size_t pick_victim(const SlotTable<E>&, const HashFn&) {
    return SlotTable<E>::npos;  // never called: kEvicts is false
  }
  void clear() {}
};

// Evicts the oldest insertion. A replaced value counts as a new insertion.
class FifoEviction {
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
  template <class E>
  void on_hit(E*) const {}
  template <class E, class HashFn>
  std::size_t pick_victim(const SlotTable<E>& table, const HashFn& hash_of) {
    const E* oldest = static_cast<const E*>(list_.back());
    return table.find(oldest->key(), hash_of(oldest->key()));
  }
  void clear() { list_.clear(); }

 private:
  IntrusiveList list_;
};

// Evicts the least recently used (set or hit).
template <class Lock>
class LruEviction {
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
  template <class E>
  void on_hit(E* e) const {
    if constexpr (Lock::kReadersShare) {
      std::lock_guard touch(touch_mutex_);  // other readers hold the same shared lock
      list_.move_to_front(e);
    } else {
      list_.move_to_front(e);  // the shard lock is exclusive already
    }
  }
  template <class E, class HashFn>
  std::size_t pick_victim(const SlotTable<E>& table, const HashFn& hash_of) {
    const E* lru = static_cast<const E*>(list_.back());
    return table.find(lru->key(), hash_of(lru->key()));
  }
  void clear() { list_.clear(); }

 private:
  mutable IntrusiveList list_;     // guarded by the shard lock, plus touch_mutex_ for readers
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
  void on_insert(E* e) {
    e->referenced.store(0, std::memory_order_relaxed);
  }
  template <class E>
  void on_remove(E*) {}
  template <class E>
  void on_hit(E* e) const {
    // Read first so a hot entry's cache line is not written on every hit.
    if (e->referenced.load(std::memory_order_relaxed) == 0) {
      e->referenced.store(1, std::memory_order_relaxed);
    }
  }
  template <class E, class HashFn>
  std::size_t pick_victim(const SlotTable<E>& table, const HashFn&) {
    // Terminates within two sweeps: the first clears every bit it meets.
    for (;; ++hand_) {
      hand_ &= table.capacity() - 1;
      E* e = table.at(hand_);
      if (e == nullptr) continue;
      if (e->referenced.load(std::memory_order_relaxed) == 0) return hand_;
      e->referenced.store(0, std::memory_order_relaxed);
    }
  }
  void clear() { hand_ = 0; }

 private:
  std::size_t hand_ = 0;
};

}  // namespace cache::detail
