// registry.hh — every board of a server by name: one lock per board (updates exclusive, reads
// shared), boards created by their first member and gone with their last, and one memory budget
// for all of them (--board-maxmem). Boards are never evicted: an update that would add a member
// beyond the budget is refused (the server answers 507).
//
// Locking: the registry's own lock guards only the name -> board map; a board's lock guards the
// board. Order: registry, then board. A board removed from the map (emptied, or deleted) is
// marked gone under both locks, so an update that found it just before retries on the map
// instead of writing into a board nobody can see.
//
// Durability: a ChangeSink passed to update/remove_member/remove_board is told of the change
// while the board's exclusive lock is held, so whatever it forwards (the server's store writes)
// sees one board's changes in the order they were applied. restore() rebuilds boards from rows.
//
// Each board carries a rendered top-N cache (top_cache.hh), read through read_top(): updates and
// removals invalidate it from the first rank they disturb, under the board's exclusive lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "boards/board.hh"
#include "boards/top_cache.hh"

namespace boards {

constexpr std::size_t kDefaultMaxBytes = std::size_t{64} << 20;  // --board-maxmem default

struct UpdateOutcome {
  enum class Status {
    ok,
    no_space,    // a new member would take the boards beyond their budget; nothing changed
    not_finite,  // the result would not be a finite double (incr overflow); nothing changed
    frozen,      // a reset is pending (freeze()); nothing changed
    refused,     // the ChangeSink refused it (admit_change: no room for its row); nothing changed
  };
  Status status = Status::ok;
  Updated updated;  // when ok
};

struct RegistryStats {
  std::size_t boards = 0;
  std::size_t members = 0;
  std::size_t bytes = 0;       // Board::bytes() summed, plus each board's name
  std::uint64_t updates = 0;   // update() calls that changed or kept a score (status ok)
  std::uint64_t refused = 0;   // update() calls refused (no_space, not_finite, frozen, refused)
  std::uint64_t removals = 0;  // members removed, by remove_member or with their board
  std::uint64_t reads = 0;     // read() and read_top() calls that found their board
  std::uint64_t top_cache_hits = 0;    // read_top() calls answered from the cache
  std::uint64_t top_cache_misses = 0;  // read_top() calls that rendered (cache on)
  std::size_t top_cache_bytes = 0;     // text held by every board's top-N cache
};

// Told of each change under the board's exclusive lock (see above). Calls must not block long
// (they hold the board) and must not call back into the registry.
class ChangeSink {
 public:
  // Asked before a change is applied, under the same locks (member empty: the whole board is
  // dropped). false refuses it and nothing changes: a durable sink with no room for the
  // change's row (or a failed store) says so here, not after the board has moved.
  virtual bool admit_change(std::string_view /*board*/, std::string_view /*member*/) {
    return true;
  }
  // The member's row after an update that succeeded (also when its score and place were kept:
  // the row is the same, and a durable caller still waits for it to be committed).
  virtual void member_set(std::string_view board, std::string_view member, const Stored& row) = 0;
  // A member removed (its board may have gone with it).
  virtual void member_removed(std::string_view board, std::string_view member) = 0;
  // A whole board removed.
  virtual void board_removed(std::string_view board) = 0;
  // A remove_member/remove_board refused because the registry is frozen (nothing changed).
  virtual void refused_frozen() {}

 protected:
  ~ChangeSink() = default;
};

class Registry {
 public:
  // top_cache: keep rendered top-N texts (read_top). Their bytes are bounded apart from the
  // members' budget, by max_bytes / 8 (kTopCacheShare), so a cache never refuses an update.
  explicit Registry(std::size_t max_bytes = kDefaultMaxBytes, bool top_cache = true)
      : max_bytes_(max_bytes), top_cache_(top_cache) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Applies op to the member of the board, creating the board on its first member.
  // want_ranks false: the caller reads no rank (ZADD, ZINCRBY over RESP); the outcome's ranks
  // are then worked out only within the board's cached top (Board::update's within), the
  // others read kBeyond.
  UpdateOutcome update(std::string_view board, std::string_view member, Op op, double value,
                       ChangeSink* sink = nullptr, bool want_ranks = true);

  // Inserts or replaces members with their stored rows (a restart's rebuild), creating the
  // board. Rows in rank order are fastest (Board::restore). A new member that would not fit in
  // the budget is skipped; returns how many were.
  struct RestoreRow {
    std::string_view member;
    Stored row;
  };
  [[nodiscard]] std::size_t restore_board(std::string_view board, std::span<const RestoreRow> rows);
  // One row: false, changing nothing, when a new member would not fit in the budget.
  [[nodiscard]] bool restore(std::string_view board, std::string_view member, const Stored& row) {
    const RestoreRow one{member, row};
    return restore_board(board, std::span(&one, 1)) == 0;
  }

  // Removes a member; its rank before, or nullopt if the board or the member is absent. The
  // board goes with its last member.
  std::optional<std::size_t> remove_member(std::string_view board, std::string_view member,
                                           ChangeSink* sink = nullptr);

  // Removes a whole board; false if absent.
  bool remove_board(std::string_view board, ChangeSink* sink = nullptr);

  // Calls f(const Board&) under the board's shared lock; false (f not called) if absent.
  template <class F>
  bool read(std::string_view board, F&& f) const {
    std::shared_ptr<const Slot> slot = find(board);
    if (!slot) return false;
    std::shared_lock lock(slot->mu);
    if (slot->gone) return false;  // removed between the lookup and the lock
    reads_.fetch_add(1, std::memory_order_relaxed);
    f(slot->board);
    return true;
  }

  // The top-N read: calls f(const Board&, const std::string& text) under the board's shared
  // lock, where text is render(const Board&)'s rendering of ranks offset+1 .. offset+n, from the
  // board's cache when it is valid (top_cache on) and rendered, then kept, when not. false (f not
  // called) if the board is absent. form: which rendering it is (top_cache.hh; 0: JSON).
  template <class Render, class F>
  bool read_top(std::string_view board, std::size_t offset, std::size_t n, Render&& render, F&& f,
                std::uint8_t form = 0) const {
    std::shared_ptr<Slot> slot = find(board);
    if (!slot) return false;
    std::shared_lock lock(slot->mu);
    if (slot->gone) return false;
    reads_.fetch_add(1, std::memory_order_relaxed);
    // Past the end there is nothing to render (and offset + n could overflow): never cached.
    if (!top_cache_ || offset >= slot->board.size()) {
      const std::string text = render(std::as_const(slot->board));
      f(std::as_const(slot->board), text);
      return true;
    }
    if (auto hit = slot->top.find(offset, n, form)) {
      top_hits_.fetch_add(1, std::memory_order_relaxed);
      f(std::as_const(slot->board), *hit);
      return true;
    }
    top_misses_.fetch_add(1, std::memory_order_relaxed);
    auto text = std::make_shared<const std::string>(render(std::as_const(slot->board)));
    f(std::as_const(slot->board), *text);
    slot->top.put(offset, n, std::move(text), top_bytes_, max_bytes_ / kTopCacheShare, form);
    return true;
  }

  // Removes every board (POST /reset), then calls then() (if set) while still holding the
  // registry's lock: no update can start on any board until it returns, so a store cleared from
  // then() never loses a write that memory keeps.
  void clear(const std::function<void()>& then = {});

  // A reset that must be all or nothing (POST /reset with a store): freeze() waits for every
  // change in progress, calls then() (which submits the store's clear) and from then on refuses
  // every change (update: Status::frozen; remove_member/remove_board: nullopt/false after
  // sink->refused_frozen()) until thaw(). thaw(true) empties every board first (the clear
  // committed); thaw(false) keeps them (it failed). Freezes nest.
  void freeze(const std::function<void()>& then);
  void thaw(bool clear_boards);

  RegistryStats stats() const;
  std::size_t max_bytes() const { return max_bytes_; }
  bool top_cache() const { return top_cache_; }

  static constexpr std::size_t kTopCacheShare = 8;  // top-N texts: at most max_bytes / 8

 private:
  struct Slot {
    mutable std::shared_mutex mu;
    Board board;           // guarded by mu
    bool gone = false;     // removed from the map; guarded by mu (set under the registry's too)
    mutable TopCache top;  // its own mutex; invalidated under mu held exclusively
  };
  // Hashes std::string and std::string_view alike (lookups by view, no copy).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, std::shared_ptr<Slot>, NameHash, std::equal_to<>>;

  std::shared_ptr<Slot> find(std::string_view board) const;
  std::shared_ptr<Slot> find_or_create(std::string_view board);
  // Registry lock held exclusively: takes an emptied or deleted board out of the map.
  void unlink_locked(Map::iterator it);
  // Claims bytes against the budget; false if they do not fit.
  bool reserve(std::size_t bytes);
  void release(std::size_t bytes) { used_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

  const std::size_t max_bytes_;
  const bool top_cache_;
  mutable std::shared_mutex mu_;  // guards map_
  Map map_;
  std::atomic<std::size_t> used_bytes_{0};  // members' Board::bytes() plus board names
  std::atomic<std::size_t> members_{0};
  std::atomic<std::uint64_t> updates_{0}, refused_{0}, removals_{0};
  // freeze() depth: read under a board's lock (update) or the registry's (removals), set under
  // the registry's lock before every board's lock is taken once, so a change either finished
  // before then() or sees it.
  std::atomic<int> frozen_{0};
  mutable std::atomic<std::uint64_t> reads_{0}, top_hits_{0}, top_misses_{0};
  mutable std::atomic<std::size_t> top_bytes_{0};
};

}  // namespace boards
