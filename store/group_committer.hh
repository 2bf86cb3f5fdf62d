// group_committer.hh — GroupCommitter, the write path every engine shares (store.hh's contract
// for write() and clear(); store/README.md, "Group commit"): one queue, one committer thread
// that takes everything queued since its last commit and hands it to the engine as ONE group,
// one completer thread that runs the callbacks of committed groups in commit order (so the next
// group's commit overlaps them), stop()/join() that commit what is queued first, and operations
// started after stop() completing with Code::closed on the store's timer thread.
// The engine (RocksStore, PostgresStore) supplies only how one group is written
// (Engine::commit) and, if it needs them, hooks for its committer thread.
// Thread safety: write(), clear(), errors() and the test hooks may be called from any thread;
// start(), stop() and join() by the owning store (serialized by it).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/store.hh"

namespace store {

namespace detail {
class TimerThread;
}

class GroupCommitter {
 public:
  using Clock = std::chrono::steady_clock;

  // One op of a group: a write() batch, or a clear() when is_clear.
  struct Op {
    std::vector<Write> batch;
    bool is_clear = false;
    std::string refused;  // non-empty: write() refused the batch; answered alone with failed
    // Engine::commit's answer to want_existed for a write that commits: batch.size() entries.
    std::vector<bool> existed;
    bool abandoned = false;  // abandon(): batch emptied, refused set, callback already answered
  };

  // What an engine supplies. Every call runs on the committer thread.
  class Engine {
   public:
    virtual ~Engine() = default;
    // Writes every op of the group that is not refused, in order, as one atomic durable commit.
    // Returns ok (and has filled existed of each write op), or the error every op that is not
    // refused completes with. Code::failed (sticky: the store takes no more writes) answers the
    // refused ops too.
    virtual Status commit(std::vector<Op>& group) = 0;
    // A refused batch of the group about to be committed: for the store's last_error.
    virtual void note_refused(const std::string& why) = 0;
    // Once, on the committer thread, before its first wait.
    virtual void committer_started() {}
    // While the committer waits for work, idle() runs (without the queue's lock) each time
    // idle_deadline() passes; nullopt (the default): no deadline, the committer just waits.
    virtual std::optional<Clock::time_point> idle_deadline() { return std::nullopt; }
    virtual void idle() {}
  };

  // max_value: the longest value a put may hold (a longer one: the batch is refused), and the
  // engine's name for the refusal's message. The threads start with start().
  GroupCommitter(Engine& engine, detail::TimerThread& timer, std::size_t max_value = SIZE_MAX,
                 std::string engine_name = {});
  ~GroupCommitter();  // stop(), join()
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Starts the committer and the completer (once the engine can commit).
  void start();
  // Queue a batch (checked first: keys, board rows, value size) or a clear; after stop(), they
  // complete with Code::closed on the timer thread. write() returns the batch's ticket (0 after
  // stop()): tickets count up in queue order.
  WriteTicket write(std::vector<Write> batch, WriteDone done);
  void clear(ClearDone done);
  // Store::abandon: a write still queued (the committer has not taken it) is dropped now, its
  // batch freed, and done gets Code::abandoned on the timer thread; otherwise nothing changes.
  void abandon(WriteTicket ticket);
  // Refuses new operations; join() then commits everything queued, runs every callback and
  // joins both threads. Both idempotent.
  void stop();
  void join();

  // Write operations (batches, clears) completed with an error, closed ones included.
  std::uint64_t errors() const { return errors_.load(); }

  // Tests only: after committing the next group it takes (the one holding the next write
  // submitted), the committer waits until release() (or stop()), so everything submitted
  // meanwhile forms one group.
  void hold_after_next_commit();
  void release();

  // For Engine::commit. The keys whose existed answer needs the engine's state before the group:
  // asked (want_existed) by the first op of the group that touches the key, before any clear.
  // Empty when no op asks.
  static std::vector<std::string_view> keys_to_look_up(const std::vector<Op>& group);
  // Fills existed of every write op that is not refused, walking the group in order with an
  // overlay (key -> present) that every put, delete and clear updates; a key the group has not
  // touched yet (and no clear before it) is answered by was_present(key).
  static void answer_existed(std::vector<Op>& group,
                             const std::function<bool(std::string_view)>& was_present);

 private:
  struct Group {
    WriteTicket first_ticket = 1;  // the ticket of ops[0]; ops[i] has first_ticket + i
    std::vector<Op> ops;
    // One per op: a clear's ClearDone is wrapped in one (clear() is rare), so a write's is
    // the caller's WriteDone itself.
    std::vector<WriteDone> callbacks;
    std::vector<Status> results;  // one per op, set after the commit
  };

  // A group to take the queue into: a spare one, or a new one.
  Group spare_group();
  WriteTicket enqueue(Op op, WriteDone callback);
  void complete_closed(WriteDone callback);
  void committer_main();
  bool take(Group& group, std::uint64_t& taken);
  void wait_for_work(std::unique_lock<std::mutex>& lock);
  void commit(Group& group);
  void wait_while_held(std::uint64_t taken);
  void completer_main();
  void recycle(std::vector<Group>& groups);

  Engine& engine_;
  detail::TimerThread& timer_;
  const std::size_t max_value_;
  const std::string engine_name_;

  std::mutex write_mu_;
  std::condition_variable write_cv_;
  Group queue_;
  bool stopping_ = false;
  std::uint64_t groups_taken_ = 0;      // by the committer, under write_mu_
  std::uint64_t hold_after_group_ = 0;  // hold_after_next_commit(); 0: none

  std::mutex complete_mu_;
  std::condition_variable complete_cv_;
  std::vector<Group> completed_;  // committed groups, callbacks not yet run
  bool complete_stopping_ = false;
  // Groups the completer has answered, emptied with their vectors' capacity kept: the committer
  // takes its next group into one, so a steady stream of groups allocates no vectors.
  std::vector<Group> spare_;  // guarded by complete_mu_

  std::atomic<std::uint64_t> errors_{0};
  std::thread completer_;
  std::thread committer_;
};

}  // namespace store
