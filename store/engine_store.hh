// engine_store.hh — EngineStore, what RocksStore and PostgresStore share around their engines:
// the GroupCommitter (write(), clear()), read()'s queue in front of the engine's reader threads
// and the read delay, the timer thread, the counters behind stats(), and close()'s order. An
// engine supplies how one group commits (GroupCommitter::Engine), its reader threads, what it
// adds to stats() and how it shuts down. Private to store/: users see store.hh's Store.
// Thread safety: as Store's. The protected members say which lock guards them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "store/group_committer.hh"
#include "store/store.hh"
#include "store/timer_thread.hh"

namespace store::detail {

class EngineStore : public Store, protected GroupCommitter::Engine {
 public:
  using Clock = std::chrono::steady_clock;

  void read(std::string key, ReadDone done) final;
  WriteTicket write(std::vector<Write> batch, WriteDone done) final;
  void abandon(WriteTicket ticket) final { committer_.abandon(ticket); }
  void clear(ClearDone done) final;
  // Stops taking operations, then shut_down(), then runs the delayed reads still held.
  void close() final;
  StoreStats stats() const final;

  // Tests only (a seam, like the fault injection): after committing the next group it takes (the
  // one holding the next write submitted) the committer waits until release_committer() (or
  // close()), so everything submitted meanwhile forms one group.
  void hold_committer_after_next_commit() { committer_.hold_after_next_commit(); }
  void release_committer() { committer_.release(); }

 protected:
  struct ReadOp {
    std::string key;
    ReadDone done;
    Clock::time_point issued;
  };

  // max_value, engine_name: GroupCommitter's.
  EngineStore(std::chrono::milliseconds read_delay, std::size_t max_value, std::string engine_name);
  // Runs the completions of operations started after close() and joins the timer thread. The
  // engine's destructor calls close() first.
  ~EngineStore() override;

  // The end of the engine's constructor: the committer may call commit() from now on.
  void start_committer() { committer_.start(); }
  // close(), once the committer and the readers are told to stop (the readers drain what is
  // queued, then return): joins the committer (committer_.join()) and the readers, and lets the
  // engine go.
  virtual void shut_down() = 0;
  // stats(): the engine's fields (failed, connected, reconnects).
  virtual void add_stats(StoreStats& s) const = 0;

  // A read a reader served: completed at once, or on the timer thread at issued + read delay.
  template <class Result, class Done>
  void deliver(Clock::time_point issued, Done& done, Result result, Clock::time_point now) {
    const auto due = issued + read_delay_;
    if (read_delay_.count() > 0 && now < due) {
      timer_->post(
          due, [done = std::move(done), r = std::move(result)]() mutable { done(std::move(r)); });
    } else {
      done(std::move(result));
    }
  }
  void deliver(ReadOp& op, ReadResult result, Clock::time_point now) {
    deliver(op.issued, op.done, std::move(result), now);
  }
  // An operation that completed with an error other than not_found (stats().errors).
  void count_error() { errors_.fetch_add(1); }
  // stats().last_error.
  void note_error(const std::string& why);

  const std::chrono::milliseconds read_delay_;
  std::unique_ptr<TimerThread> timer_;

  std::mutex read_mu_;  // guards the three below, and whatever else an engine's readers take
  std::condition_variable read_cv_;
  std::vector<ReadOp> read_queue_;
  bool read_stopping_ = false;

  std::mutex close_mu_;  // serializes close(); held for its whole duration
  bool closed_ = false;

  std::atomic<std::uint64_t> reads_{0};
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> errors_{0};  // reads (the committer counts its own)
  mutable std::mutex error_mu_;
  std::string last_error_;

  GroupCommitter committer_;  // after the timer: its closed operations complete there
};

}  // namespace store::detail
