// store_tier.hh — the cache in front of a durable store (docs/server.md, "The durable tier";
// docs/api.md, "Failures of the store" has the contract this file keeps).
//
// It binds cache/ and store/, which know nothing of each other, and owns the rules that keep
// them consistent:
// - Read-through with single-flight: a miss makes at most one store read per key at a time;
//   later misses of that key wait on the first. Every key in flight has one explicit state
//   (KeyState below: writing, unknown, a read under way, a version; write-behind's dirty keys
//   are dirty_ entries): a fill enters the cache only if the key's version and the reset epoch
//   are what they were when the read began and the key is neither writing, unknown nor dirty
//   (so a fill never overwrites a newer PUT or DELETE, and never caches what the store may not
//   hold).
// - Write-through: the op is submitted to the store (group commit); when its commit succeeds the
//   cache is updated, in commit order (store write callbacks run in commit order, on one thread),
//   and only then is the request answered. A failed commit answers 503 and its outcome counts as
//   unknown (a lost connection or a failed fsync can have applied it): the key leaves the cache
//   and is not filled again until a later write of it commits or a reset, so reads go to the
//   store and agree with it.
// - Write-behind: the op updates the cache and a dirty buffer (key → latest value or tombstone,
//   coalesced) at once; a flusher thread commits the buffer flush_interval/4 after its oldest
//   write (at once if a slow flush ran past that), so no write stays only in memory longer
//   than flush_interval unless a commit itself takes longer. The dirty buffer is authoritative
//   over the store for reads (also for a read that returns after a write was made), so a dirty
//   entry evicted from the cache is never lost. Past
//   max_dirty bytes, writes wait in FIFO order (never dropped) until a flush makes room. From a
//   failed flush until one succeeds, every key write answers 503 (the store is failing: what it
//   would accept could never become durable).
// - Board rows (reserve_row, then board_write): the leaderboards' durability. Their caller
//   (BoardService's ChangeSink) reserves a row's bytes before the registry applies the change
//   (against --max-dirty: write-behind's dirty buffer, refused while flushes fail; write-through's
//   backlog), so a refused change leaves the board as it was; it then writes the row under the
//   board's lock, so one board's rows reach the store in the order they were applied.
//   Write-through submits the row and answers after its commit; write-behind keeps it in the
//   dirty board buffer (coalesced per (board, member); a dropped board replaces its rows),
//   flushed with the key buffer, and answers at once.
// - Reset is a barrier, all or nothing: the store's clear is submitted in order with writes; the
//   cache, the dirty writes made before it and the single-flight table are emptied only when the
//   clear has committed, and a failed clear changes nothing. Misses that arrive while a reset is
//   pending wait for it (so no read started before the clear commits can fill or answer after
//   the 204), and the flusher does not flush writes made before a pending reset.
// - Expiry: a PUT's expiry time (wall clock, store.hh) goes to the store with the value; every
//   answer from beyond the cache (dirty buffer, store read, existence checks) treats an expired
//   value as absent, and the cache gets the time left as the item's TTL.
// - Conditional writes (write_if): decided under mu_ after every earlier write of the key (parked
//   on its KeyState while one is in the store's hands), by the cached version, the dirty buffer
//   or one store read, then applied as the unconditional write is, in the same hold of mu_.
// - Timeout (--store-timeout): a request that has waited that long on the store is answered 503
//   (store_deadline.hh). A write-through write answered so may still take effect: its commit may
//   be under way, and the cache still follows the store's answer whenever it comes. A write
//   answered 503 before it was applied (a write-behind write waiting for room, or any write that
//   waited that long for mu_) is never applied: the answer is claimed before the write is.
// - Bounds: write-through's backlog (bytes of writes submitted and not yet answered by the
//   store, plus kOpOverhead each; board rows from their reservation) by max_dirty; the dirty
//   buffer and reserved board rows by max_dirty; write-behind's writes waiting for room and the
//   reads waiting on the store each by max_waiting (--max-inflight); keys of unknown outcome by
//   max_dirty. Past a bound a request answers 503 at once.
// Thread safety: every method may be called from any thread. One mutex (mu_) orders the
// single-flight table, the dirty buffer, pending write counts and submissions to the store, so
// the order in which ops reach the store is the order they were decided in. Store calls made
// under mu_ never call back inline (store.hh), so there is no re-entry.
// Callbacks (LookupDone, WriteDone, ResetDone) run on a store thread, the flusher or the deadline
// thread, never inline inside the call that started them: the caller posts them to its
// connection (server/THREADS.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/cache.hh"
#include "server/config.hh"
#include "server/key_results.hh"
#include "server/preconditions.hh"
#include "server/store_deadline.hh"
#include "store/store.hh"

namespace server {

struct TierOptions {
  WriteMode mode = WriteMode::through;
  std::chrono::milliseconds store_timeout{2000};
  std::chrono::milliseconds flush_interval{100};  // 0: no flusher thread (flush_step())
  std::size_t max_dirty = 64u << 20;
  // --max-inflight: bounds write-behind's writes waiting for room, and the reads waiting on the
  // store (each apart), as request bytes held for connections.
  std::size_t max_waiting = 256u << 20;
};

struct TierStats {
  const char* scheme = "none";
  store::StoreStats store;
  std::uint64_t dirty_bytes = 0;
  std::uint64_t dirty_items = 0;
  std::uint64_t readthrough_fills = 0;
  std::uint64_t write_errors = 0;  // writes refused before reaching the store (it had failed)
};

class StoreTier {
 public:
  using Lookup = KeyLookup;
  using Outcome = KeyOutcome;
  using LookupDone = std::function<void(const Lookup&)>;
  using WriteDone = std::function<void(const Outcome&)>;
  using ResetDone = std::function<void(const store::Status&)>;

  StoreTier(cache::Cache& cache, std::unique_ptr<store::Store> store, TierOptions options);
  ~StoreTier();
  StoreTier(const StoreTier&) = delete;
  StoreTier& operator=(const StoreTier&) = delete;

  WriteMode mode() const { return options_.mode; }

  // A GET/HEAD that missed the cache. Returns the answer at once when the dirty buffer holds the
  // key (write-behind); otherwise reads the store (single-flight) and calls done later.
  std::optional<Lookup> lookup(std::string_view key, LookupDone done);

  // Write-behind's fast path: the answer at once when the write can be applied now (room in
  // the dirty buffer, nobody waiting; for DELETE, the cache or the buffer knows the key);
  // nullopt otherwise (always, in write-through), and the caller then calls put()/del().
  // expires_at_ms: when a PUT's value expires (wall clock, store.hh "Expiry"; 0: never). It goes
  // to the store with the value, and the cache gets the time left as its TTL.
  std::optional<Outcome> try_put(std::string_view key, std::string_view value,
                                 std::uint64_t expires_at_ms = 0);
  std::optional<Outcome> try_del(std::string_view key);

  // PUT / DELETE. An immediate answer (write-behind with room, or a refusal) is returned;
  // otherwise done is called later (write-through after the commit; write-behind after waiting
  // for room, or for DELETE after the store says whether the key exists) or by the deadline,
  // exactly once either way.
  std::optional<Outcome> put(std::string_view key, std::string_view value, WriteDone done,
                             std::uint64_t expires_at_ms = 0);
  std::optional<Outcome> del(std::string_view key, WriteDone done);
  // The same, answering every outcome through done, an immediate one too (inline, before the
  // call returns): the caller keeps no copy of done.
  void put_via(std::string_view key, std::string_view value, WriteDone done,
               std::uint64_t expires_at_ms = 0);
  void del_via(std::string_view key, WriteDone done);

  // A PUT (kind put) or DELETE (kind del) with If-Match / If-None-Match (docs/api.md, "With a
  // store"): decided under mu_ against the key's state once every earlier write of it has been
  // answered by the store, then applied as the unconditional write would be, in the same step.
  // - a write of the key in the store's hands (write-through): it waits for that write's answer;
  // - cached: the cache's version decides (the ETag a client holds names it);
  // - not cached: the key has no version a client can know, so If-Match answers 412; a "*"
  //   asks whether it exists: the dirty buffer (write-behind) or, failing that, the store (one
  //   read; the decision is made when it returns, if nothing moved meanwhile);
  // - the key's state unknown (an earlier write's outcome is unknown), a reset pending, or a
  //   write of the key waiting for room in the dirty buffer: 503 (retry).
  // Answers precondition_failed (412) or what the write answers; at once or later via done.
  std::optional<Outcome> write_if(store::Write::Kind kind, std::string_view key,
                                  std::string_view value, std::uint64_t expires_at_ms,
                                  const Preconditions& preconditions, WriteDone done);

  // A board row (store::Write::Kind::board_set, board_remove, board_drop), in two steps so a
  // refused row changes nothing (boards::ChangeSink::admit_change asks before the board moves):
  // reserve_row() holds the bytes the row can add against --max-dirty (write-behind: the dirty
  // buffer, nothing for a row already dirty, and every change refused while flushes fail;
  // write-through: the backlog), or says why not; then board_write() consumes the reservation,
  // or release_row() gives it back. member empty: the whole board is dropped.
  // board_write: write-through returns nullopt and calls done after the commit (kind replaced)
  // or with an error (503); write-behind returns Outcome{replaced} at once.
  struct RowReservation {
    std::size_t bytes = 0;
    std::optional<Outcome> refused;  // set: nothing was reserved
  };
  RowReservation reserve_row(std::string_view board, std::string_view member);
  void release_row(std::size_t bytes);
  std::optional<Outcome> board_write(store::Write row, std::size_t reserved, WriteDone done);

  // Startup only, before any board_write: every board row in the store (store.hh).
  [[nodiscard]] store::Status load_boards(const store::BoardVisitor& visit) {
    return store_->load_boards(visit);
  }
  // The store's own board reads (--board-source store), or nullptr.
  store::BoardSource* board_source() { return store_->board_source(); }

  // POST /reset: empties the store (durably), then the cache and the dirty writes made before
  // the call, then done(ok). A failed clear changes nothing: done gets the error. Misses that
  // arrive meanwhile wait for the clear (the barrier), then read the store. settled(cleared)
  // runs once the store has answered (also after the deadline answered done), before done:
  // the boards follow the store there.
  void reset(ResetDone done, std::function<void(bool cleared)> settled = {});
  // POST /reset?scope=cache: empties only the cache (dirty writes stay pending and are flushed).
  void reset_cache();

  TierStats stats() const;

  // Write-behind with flush_interval 0 has no flusher thread: each call is one step of its loop
  // (admit waiting writes, or submit a flush unless one is in flight or a reset is pending),
  // without waiting for the commit. For the deterministic simulation, which orders the commits.
  void flush_step();

  // Flushes every dirty write (write-behind), then closes the store. Idempotent. Returns the
  // number of dirty writes that could not be made durable (0 unless the store failed).
  // Bounded: a store whose close() has not returned within --store-timeout + kCloseGrace (5 s;
  // a thread stuck in
  // a sync that never returns) is abandoned, still open: store_abandoned() says so, and the
  // process must then end without destroying anything that thread may touch (std::_Exit).
  std::size_t shutdown();
  bool store_abandoned() const { return store_abandoned_.load(); }

 private:
  using Kind = store::Write::Kind;
  struct CondWrite;  // a conditional write waiting for its decision (write_if)
  struct Inflight {  // one store read and the misses waiting on it
    std::vector<LookupDone> waiters;
    std::vector<std::shared_ptr<CondWrite>> decisions;  // conditional writes waiting on the read
    std::size_t charged = 0;    // its misses' costs, in read_bytes_ until the store answers
    std::uint64_t version = 0;  // the key's KeyState::version when the read began
    std::uint64_t epoch = 0;    // epoch_ when the read began
  };
  // The state of a key in flight, the one record that writes, read fills and resets consult.
  // A key absent from keys_ (and from write-behind's dirty_) is clean: nothing of it is
  // pending, and the cache, if it holds the key, holds what the store holds.
  //   clean ──write submitted──► writing (n > 0) ──commit──► clean
  //                                             └──outcome unknown──► unknown ──a write of it
  //                                                commits, or a reset──► clean
  //   write-behind: clean ──write──► dirty(v) in dirty_ ──flushed at v──► clean
  //                 (rewritten during its flush: dirty(v'), flushed later)
  // Independently, a store read may be under way (single-flight). Its fill enters the cache only
  // if the key's version and the reset epoch are what they were when the read began (no write
  // was submitted, applied or completed meanwhile, no reset voided it) and the key is neither
  // writing, unknown nor dirty.
  struct KeyState {
    std::uint32_t writing = 0;       // write-through: submitted, not yet answered by the store
    bool unknown = false;            // the last write's outcome is unknown (in unknown_bytes_)
    std::shared_ptr<Inflight> read;  // the store read under way, if any
    // Bumped by every write submitted, applied or completed, from key_clock_: unique across
    // the key's entries (a key forgotten and entered again never repeats a version).
    std::uint64_t version = 0;
    // Conditional writes waiting for `writing` to reach 0 (write_if), decided then in order.
    std::vector<std::shared_ptr<CondWrite>> parked;
    // Write-behind: DELETEs asking the store whether the key exists (read_for_delete_locked);
    // the entry, and so its version, stays while they are out.
    std::uint32_t deletes_reading = 0;
    bool clean() const {
      return writing == 0 && !unknown && !read && parked.empty() && deletes_reading == 0;
    }
  };
  struct Dirty {  // write-behind: the latest state of one key not yet durable
    std::string value;
    std::uint64_t expires_at_ms = 0;  // the value's expiry (0: never); an expired one is absent
    bool tombstone = false;
    std::uint64_t version = 0;  // tells a rewrite during a flush from the flushed state
  };
  using Answer = StoreDeadline::Answer<Outcome>;
  struct DirtyRow {  // write-behind: the latest state of one board row not yet durable
    double score = 0;
    std::uint64_t seq = 0;
    bool tombstone = false;
    std::uint64_t version = 0;
  };
  struct Waiting {  // a write-behind write waiting for room under max_dirty
    Kind kind;
    std::string key;
    std::string value;
    std::uint64_t expires_at_ms = 0;
    Answer done;  // claimed when admitted; a write whose deadline answered first is dropped
  };
  struct ParkedRead {  // a miss that arrived while a reset was pending
    std::string key;
    LookupDone answer;
    std::size_t cost = 0;  // in read_bytes_
  };
  // A write-through op between its submission and its commit's callback.
  // A write-through write in the store's hands. Its key is its keys_ entry's (kept there while
  // writing > 0), its value the batch's (the store hands the batch back with the result).
  struct ThroughWrite {
    Kind kind;
    std::pair<const std::string, KeyState>* entry;
    bool want_existed = false;
    std::size_t bytes = 0;  // counted in through_bytes_
  };
  // A write-through write while the store holds it. The store's callback names it by a raw
  // pointer (the callback is two pointers, which std::function keeps without allocating) and
  // takes it back when it runs (the store runs every callback exactly once); it then becomes a
  // spare for a later write (take_record_locked).
  struct ThroughRecord {
    ThroughWrite write;
    std::optional<Answer> done;
  };
  using Ready = std::vector<std::pair<LookupDone, Lookup>>;  // answers to give outside mu_

  // Bytes a queued operation is counted for beyond its key and value (its bookkeeping).
  static constexpr std::size_t kOpOverhead = 64;
  // What close() gets beyond --store-timeout before the store is abandoned (shutdown()).
  static constexpr std::chrono::milliseconds kCloseGrace{5000};

  Outcome timeout_outcome() const;
  store::Status reset_timeout_status() const;
  Outcome refusal(std::string why);
  std::optional<Lookup> read_locked(const ParkedRead& parked);
  // Counts a store read of `cost` bytes into read_bytes_, or says why it cannot wait (the
  // backlog is at --max-inflight). Misses and conditional writes share the bound.
  std::optional<std::string> admit_read_locked(std::size_t cost);
  // A store read of the key (single-flight), for a miss (answer) or a conditional write
  // (decision) or both.
  // `cost`: what the request was admitted for (admit_read_locked), released with the read.
  void start_read_locked(const std::string& key, const LookupDone* answer,
                         std::shared_ptr<CondWrite> decision = nullptr, std::size_t cost = 0);
  void on_read_done(const std::string& key, Inflight& entry, store::ReadResult& r);
  Lookup on_read_locked(const std::string& key, store::ReadResult& r, const Inflight& entry);
  // A write of the key was submitted, applied or completed: a read under way may not fill.
  void moved_locked(std::string_view key);
  void erase_if_clean_locked(std::string_view key);  // forgets a key back to clean
  bool may_fill_locked(const std::string& key) const;
  void mark_unknown_locked(const std::string& key);
  void clear_unknown_locked(const std::string& key);
  // A key write as it travels through the tier: what a PUT or DELETE asks of the store.
  struct KeyWrite {
    Kind kind;
    std::string_view key;
    std::string_view value{};         // put only
    std::uint64_t expires_at_ms = 0;  // put only
  };
  // What the dirty buffer says a read of the key gets (write-behind).
  static Lookup dirty_lookup(const Dirty& d);
  // Conditional writes decided under mu_, answered once it is released: settled (applied with
  // an outcome known at once, the answer taken from the deadline: delivered) or not
  // (412 or 503: through the deadline's answer, unless it answered first).
  struct Decided {
    std::shared_ptr<CondWrite> op;
    Outcome outcome;
    bool settled = false;
  };
  using DecidedList = std::vector<Decided>;
  // How many store reads one conditional write may make before it answers 503 (each read whose
  // key moved meanwhile is followed by another).
  static constexpr int kMaxConditionReads = 3;
  // exists_in_store: what a store read that nothing overtook says (nullopt: no such read).
  void decide_locked(const std::shared_ptr<CondWrite>& op, std::optional<bool> exists_in_store,
                     DecidedList& decided);
  void apply_decided_locked(const std::shared_ptr<CondWrite>& op, DecidedList& decided);
  // Gives back what a conditional write was admitted for (write_if): once it is decided.
  void release_locked(CondWrite& op);
  void answer_decided(DecidedList& decided);
  DecidedList decided_;  // filled by commit callbacks under mu_ (parked writes), drained after
  std::optional<Outcome> write(const KeyWrite& w, WriteDone done);
  void write_via(const KeyWrite& w, WriteDone done);
  // Write-through's backlog bound: bytes counted in (nullopt), or the refusal.
  std::optional<Outcome> admit_through_locked(std::size_t bytes);
  // An immediate refusal (the backlog bound), or nullopt: submitted, done is called later.
  std::optional<Outcome> submit_through_locked(const KeyWrite& kw, const Answer& done);
  Outcome on_through_commit_locked(const ThroughWrite& w, const store::WriteResult& r);
  Outcome through_outcome_locked(const ThroughWrite& w, const store::WriteResult& r);
  std::optional<Outcome> behind_locked(const KeyWrite& w, const Answer& done);
  std::optional<Outcome> queue_waiting_locked(const KeyWrite& w, const Answer& done);
  bool fits_locked(std::string_view key, std::string_view value) const;
  bool nothing_dirty_locked() const {
    return dirty_.empty() && dirty_rows_.empty() && dirty_drops_.empty();
  }
  void board_behind_locked(const store::Write& row);
  std::optional<Outcome> board_through_locked(store::Write row, std::size_t bytes, WriteDone done);
  bool store_failed_locked() const;
  Outcome apply_dirty_locked(const KeyWrite& w);
  // `claimed`: the caller has claimed `done` already (an admitted waiting write).
  std::optional<Outcome> del_behind_locked(std::string_view key, const Answer& done, bool claimed);
  bool delete_known_locked(std::string_view key) const;
  Outcome delete_dirty_locked(std::string_view key);
  void read_for_delete_locked(std::string key, Answer done, bool claimed, int reads);
  void log_error_locked(const std::string& message);
  // reset(): the clear committed (apply) or failed (nothing changes); the parked reads go on.
  void on_clear(std::uint64_t version, store::Status& s);
  void apply_reset_locked(std::uint64_t version);
  Ready unpark_reads_locked();
  void flusher_main();
  // Commits the dirty buffer once (waits for the commit with mu_ released); true on success.
  // bounded: shutdown's final flush (past --store-timeout the store is closed, which fails the
  // commit in flight); a periodic flush becomes bounded once shutdown begins.
  bool flush_once(std::unique_lock<std::mutex>& lock, bool bounded = false);
  struct FlushSnapshot;
  FlushSnapshot snapshot_dirty_locked() const;
  void forget_flushed_locked(const FlushSnapshot& f);
  void start_flush_locked();
  void on_flushed_locked(const FlushSnapshot& f, std::chrono::steady_clock::time_point snapshot_at,
                         const store::WriteResult& r);
  void wait_flushed(std::unique_lock<std::mutex>& lock, std::uint64_t n, bool bounded);
  void final_flush_locked(std::unique_lock<std::mutex>& lock);
  void close_store_bounded();
  void drop_timed_out_waiting_locked();
  void pop_waiting_locked();
  void admit_and_answer(std::unique_lock<std::mutex>& lock, bool force);

  // Maps keyed by std::string that a std::string_view can look up without a copy.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const noexcept {
      return std::hash<std::string_view>{}(k);
    }
  };
  template <class T>
  using KeyMap = std::unordered_map<std::string, T, KeyHash, std::equal_to<>>;

  // Write-through's steady state allocates nothing of its own per write beyond what the store
  // and the response need: a key entering keys_ takes a spare entry, and a write's batch a spare
  // batch (the store hands each batch back with its result). Both bounded.
  static constexpr std::size_t kSpareKeys = 1024;
  static constexpr std::size_t kSpareBatches = 1024;
  static constexpr std::size_t kSpareRecords = 1024;
  std::unique_ptr<ThroughRecord> take_record_locked();
  void on_through_done(ThroughRecord* record, store::WriteResult& r);
  KeyMap<KeyState>::iterator insert_key_locked(std::string_view key);
  KeyState& key_state_locked(std::string_view key);  // finds or inserts (insert_key_locked)
  void bump_locked(KeyState& state) { state.version = ++key_clock_; }
  std::vector<store::Write> batch_locked(const KeyWrite& kw, bool want_existed);
  void recycle_batch_locked(std::vector<store::Write>& batch);

  cache::Cache& cache_;
  std::unique_ptr<store::Store> store_;
  const TierOptions options_;
  // What a request the deadline answers gets, built once (deadline_ keeps them by reference).
  const Lookup timeout_lookup_;
  const Outcome timeout_outcome_;
  const store::Status reset_timeout_;
  StoreDeadline deadline_;  // --store-timeout

  mutable std::mutex mu_;
  KeyMap<KeyState> keys_;        // every key in flight; the others are clean
  std::uint64_t key_clock_ = 0;  // KeyState::version's source
  std::vector<KeyMap<KeyState>::node_type> spare_keys_;        // insert_key_locked
  std::vector<std::vector<store::Write>> spare_batches_;       // batch_locked
  std::vector<std::unique_ptr<ThroughRecord>> spare_records_;  // take_record_locked
  std::uint64_t epoch_ = 0;  // bumped when a reset (or a reset of unknown outcome) voids reads
  std::size_t unknown_bytes_ = 0;  // keys with KeyState::unknown, kOpOverhead each
  bool all_unknown_ = false;       // unknown keys outgrew max_dirty: no key is filled until a reset
  KeyMap<Dirty> dirty_;
  // Write-behind board rows: key [board length byte][board][member] (row_key in the .cc).
  KeyMap<DirtyRow> dirty_rows_;
  KeyMap<std::uint64_t> dirty_drops_;  // boards dropped since the last flush -> version
  std::deque<Waiting> waiting_;
  std::size_t waiting_bytes_ = 0;
  std::size_t dirty_bytes_ = 0;
  std::size_t reserved_rows_ = 0;  // write-behind: board rows admitted, not yet written
  // When the oldest write still in dirty_ was made (at most: after a flush, the snapshot's time).
  std::chrono::steady_clock::time_point dirty_since_{};
  std::size_t through_bytes_ = 0;  // write-through: submitted to the store, not yet answered
  // What waits on the store for reads: key + kOpOverhead per miss, released when the store
  // answers the read it waits on (not at its deadline: the store holds the read until then);
  // key + body + kOpOverhead per conditional write, from write_if until it is decided.
  std::atomic<std::size_t> read_bytes_{0};
  std::uint64_t dirty_version_ = 0;
  std::uint32_t resets_pending_ = 0;  // clears submitted, not yet completed
  std::vector<ParkedRead> parked_reads_;
  std::condition_variable resets_done_;
  bool flush_in_flight_ = false;
  std::uint64_t flushes_started_ = 0, flushes_done_ = 0;
  std::condition_variable flushed_;
  // Write-behind: the last flush failed (why); key writes answer 503 until one succeeds.
  bool flush_failing_ = false;
  std::string flush_error_;
  store::Code flush_error_code_ = store::Code::ok;
  std::uint64_t fills_ = 0;
  std::uint64_t write_errors_ = 0;
  bool stopping_ = false;
  std::atomic<bool> shutting_down_{false};  // stopping_, readable without mu_ (flush_once)
  bool closed_ = false;
  // close() did not return in time: store_ is leaked, never destroyed (a thread is inside it).
  std::atomic<bool> store_abandoned_{false};
  std::string last_logged_error_;
  std::condition_variable flusher_wake_;
  std::thread flusher_;
};

}  // namespace server
