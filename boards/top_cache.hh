// top_cache.hh — a board's rendered top-N cache (--board-top-cache): the text a reader rendered
// for ranks offset+1 .. offset+n, kept until an update moves a member within those ranks.
//
// Top-N is the hot read, and most updates of a large board land far below its top: those leave
// the cached text valid, so a top-100 read costs a lookup and a copy instead of walking and
// rendering 100 entries. The PostgreSQL-backed leaderboard service this project answers for kept
// a top-100 cache for the same reason.
//
// Validity, under the board's lock (registry.hh):
//   - put() runs under the board's shared lock, so the text matches the board as it is;
//   - every update that changes a member's place runs under the exclusive lock and calls
//     invalidate_from(r) with the first rank it disturbed (a member moving between ranks a and b
//     shifts every rank from min(a, b) on; a new member at rank r shifts r on; a removal at r
//     shifts r on), which drops every entry covering a rank ≥ r.
// So a cached entry always equals what rendering the board now would give.
//
// An entry is a rendering of one form (`form`: the HTTP front's JSON is 0; the RESP front's
// ZREVRANGE ... WITHSCORES in RESP2 and in RESP3 are others, server/resp/board_commands.cc), so
// two fronts reading the same ranks keep one entry each.
// Bounded: at most kEntriesPerBoard (offset, n, form) entries per board, and a global byte limit
// shared by all boards (a put that would exceed it is skipped, never evicting). Its own mutex
// guards the entries, because readers holding the shared board lock insert concurrently.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace boards {

class TopCache {
 public:
  static constexpr std::size_t kEntriesPerBoard = 4;

  // The cached text for (offset, n) in `form`, or null.
  std::shared_ptr<const std::string> find(std::size_t offset, std::size_t n,
                                          std::uint8_t form = 0) const {
    std::lock_guard lock(mu_);
    for (const Entry& e : entries_) {
      if (e.text && e.offset == offset && e.n == n && e.form == form) return e.text;
    }
    return nullptr;
  }

  // Keeps text for (offset, n) unless the global budget (bytes, shared by every board's cache)
  // has no room; replaces this board's oldest entry when all slots are taken.
  void put(std::size_t offset, std::size_t n, std::shared_ptr<const std::string> text,
           std::atomic<std::size_t>& bytes, std::size_t limit, std::uint8_t form = 0) {
    const std::size_t size = text->size();
    std::lock_guard lock(mu_);
    for (const Entry& e : entries_) {
      if (e.text && e.offset == offset && e.n == n && e.form == form) return;  // put first
    }
    Entry& slot = entries_[next_];
    const std::size_t freed = slot.text ? slot.text->size() : 0;
    std::size_t used = bytes.load(std::memory_order_relaxed);
    do {
      if (used - freed + size > limit) return;
    } while (!bytes.compare_exchange_weak(used, used - freed + size, std::memory_order_relaxed));
    slot = Entry{offset, n, form, std::move(text)};
    next_ = (next_ + 1) % kEntriesPerBoard;
  }

  // The highest rank any entry covers (0: none), which an update must know exactly to keep the
  // entries valid; read under the board's exclusive lock, so no put() runs meanwhile.
  std::size_t covered() const {
    std::lock_guard lock(mu_);
    std::size_t last = 0;
    for (const Entry& e : entries_) {
      if (e.text) last = std::max(last, e.offset + e.n);
    }
    return last;
  }

  // The board's exclusive lock held: ranks from `rank` on moved; drops the entries covering any.
  void invalidate_from(std::size_t rank, std::atomic<std::size_t>& bytes) {
    std::lock_guard lock(mu_);
    for (Entry& e : entries_) {
      if (e.text && rank <= e.offset + e.n) drop_locked(e, bytes);
    }
  }

  void clear(std::atomic<std::size_t>& bytes) {
    std::lock_guard lock(mu_);
    for (Entry& e : entries_) {
      if (e.text) drop_locked(e, bytes);
    }
  }

 private:
  struct Entry {
    std::size_t offset = 0;
    std::size_t n = 0;
    std::uint8_t form = 0;
    std::shared_ptr<const std::string> text;  // null: an empty slot
  };

  static void drop_locked(Entry& e, std::atomic<std::size_t>& bytes) {
    bytes.fetch_sub(e.text->size(), std::memory_order_relaxed);
    e.text.reset();
  }

  mutable std::mutex mu_;
  std::array<Entry, kEntriesPerBoard> entries_{};
  std::size_t next_ = 0;  // the slot the next put replaces
};

}  // namespace boards
