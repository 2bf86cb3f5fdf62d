// sim_store.hh — a store::Store whose world the test scripts: nothing completes until the test
// says so, and then in the way it says (ok, refused, or failed with the write applied anyway, as
// a commit whose outcome is unknown). Used by tier_sim_test.cc, FoundationDB-style: the
// tier's real code runs, only the store around it is replaced by a deterministic one.
//
// Completions run on the thread that asks for them (the test's), never inline inside the call
// that started the operation (store.hh's contract). Writes and clears complete in the order they
// were submitted (one commit queue, as the real group committer). A read, as a real store's,
// runs (takes its snapshot of the data) at one moment and is delivered at a later one, with
// commits completing in between: run_read() takes the snapshot, complete_read() delivers it
// (a read not yet run runs then). Reads run and complete in any order the test picks.
// A commit, as the group committer's, may be applied (durable, visible to reads) some steps
// before its callback runs, and several may be applied before the first callback runs (one
// group): apply_commit() applies the oldest queued one, complete_commit() runs the oldest
// callback due (applying the next commit first when none is).
// The store keeps every state each key went through, in commit order (history()), so a test
// can tell how old an answer is.
// Thread safety: every method may be called from any thread (the tier's flusher calls write()).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/store.hh"

namespace sim {

// How a commit (a write batch or a clear) ends.
enum class Commit {
  ok,                 // applied, acknowledged
  refused,            // not applied, io_error
  unknown_applied,    // applied, but the caller gets io_error (a lost connection after COMMIT)
  unknown_unapplied,  // not applied, io_error (the same loss before COMMIT)
};

class SimStore final : public store::Store {
 public:
  const char* scheme() const override { return "sim"; }

  void read(std::string key, store::ReadDone done) override {
    std::lock_guard lock(mu_);
    reads_.push_back(Read{std::move(key), std::move(done), std::nullopt});
    changed_.notify_all();
  }
  ~SimStore() override {
    for (auto& t : closers_) t.join();
  }

  store::WriteTicket write(std::vector<store::Write> batch, store::WriteDone done) override {
    hold_if_asked();
    std::lock_guard lock(mu_);
    if (closed_) {  // as the real stores: closed, on a thread of the store's
      closers_.emplace_back([done = std::move(done)] {
        done(store::WriteResult{{store::Code::closed, "closed"}, {}, {}});
      });
      return 0;
    }
    commits_.push_back(Op{false, std::move(batch), std::move(done), {}, ++tickets_, {}, {}, {}});
    changed_.notify_all();
    return tickets_;
  }
  // As the group committer: a write not yet completed is dropped, answered abandoned on a
  // thread of the store's.
  void abandon(store::WriteTicket ticket) override {
    std::lock_guard lock(mu_);
    for (auto it = commits_.begin(); it != commits_.end(); ++it) {
      if (it->clear || it->ticket != ticket) continue;
      closers_.emplace_back([done = std::move(it->write_done)] {
        done(store::WriteResult{{store::Code::abandoned, "abandoned"}, {}, {}});
      });
      commits_.erase(it);
      ++abandoned_;
      changed_.notify_all();
      return;
    }
  }
  std::size_t abandoned() const {
    std::lock_guard lock(mu_);
    return abandoned_;
  }
  void clear(store::ClearDone done) override {
    hold_if_asked();
    std::lock_guard lock(mu_);
    commits_.push_back(Op{true, {}, {}, std::move(done), 0, {}, {}, {}});
    changed_.notify_all();
  }
  store::Status load_boards(const store::BoardVisitor&) override { return {}; }
  void close() override {
    std::unique_lock lock(mu_);
    closed_ = true;
    while (!applied_.empty()) {  // durable already: their callbacks run as they would have
      Op op = std::move(applied_.front());
      applied_.pop_front();
      lock.unlock();
      deliver(op);
      lock.lock();
    }
    while (!commits_.empty()) {
      Op op = std::move(commits_.front());
      commits_.pop_front();
      lock.unlock();
      finish(op, store::Status{store::Code::closed, "closed"}, {});
      lock.lock();
    }
    auto reads = std::move(reads_);
    reads_.clear();
    // As the real stores' close(): every completion already handed to a thread of the store's
    // (abandoned writes, writes after close) has run when close() returns.
    std::vector<std::thread> closers;
    closers.swap(closers_);
    lock.unlock();
    for (auto& r : reads) r.done(store::ReadResult{{store::Code::closed, "closed"}, {}});
    for (auto& t : closers) t.join();
  }
  store::StoreStats stats() const override {
    std::lock_guard lock(mu_);
    store::StoreStats s;
    s.failed = failed_;
    s.last_error = failed_ ? "sim: failed" : "";
    return s;
  }

  // --- the test's side ---------------------------------------------------------------------------
  std::size_t pending_reads() const {
    std::lock_guard lock(mu_);
    return reads_.size();
  }
  // Commits whose callback has not run (queued, or applied and due).
  std::size_t pending_commits() const {
    std::lock_guard lock(mu_);
    return commits_.size() + applied_.size();
  }
  std::size_t queued_commits() const {  // not yet applied
    std::lock_guard lock(mu_);
    return commits_.size();
  }
  bool next_commit_is_clear() const {
    std::lock_guard lock(mu_);
    if (!applied_.empty()) return applied_.front().clear;
    return !commits_.empty() && commits_.front().clear;
  }
  // Waits (bounded) until n commits are queued (a flusher thread submits them).
  bool wait_commits(std::size_t n, std::chrono::milliseconds limit) const {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return commits_.size() >= n; });
  }
  // Read i (0-based among the pending ones) runs: it sees the data as it is now, and is
  // delivered later (complete_read). A read that has run already is left as it is.
  void run_read(std::size_t i) {
    std::lock_guard lock(mu_);
    run_read_locked(reads_.at(i));
  }
  bool read_has_run(std::size_t i) const {
    std::lock_guard lock(mu_);
    return reads_.at(i).result.has_value();
  }
  // Completes read i (0-based among the pending ones) with what it saw when it ran (running it
  // now if it has not); error: with io_error instead.
  void complete_read(std::size_t i, bool error = false) {
    std::unique_lock lock(mu_);
    Read r = std::move(reads_.at(i));
    reads_.erase(reads_.begin() + static_cast<std::ptrdiff_t>(i));
    run_read_locked(r);
    store::ReadResult result = std::move(*r.result);
    if (error) result = {{store::Code::io_error, "sim: read failed"}, {}};
    lock.unlock();
    r.done(std::move(result));
  }
  // Applies the oldest queued write or clear, ending `how`; its callback runs later, at a
  // complete_commit(), in commit order.
  void apply_commit(Commit how) {
    std::lock_guard lock(mu_);
    Op op = std::move(commits_.front());
    commits_.pop_front();
    if (how == Commit::ok || how == Commit::unknown_applied) op.existed = apply_locked(op);
    op.status = how == Commit::ok ? store::Status{}
                                  : store::Status{store::Code::io_error, "sim: commit failed"};
    if (how != Commit::ok) op.existed.clear();
    applied_.push_back(std::move(op));
  }
  // Runs the oldest callback due; when none is, applies the oldest queued commit (ending `how`)
  // and runs its callback.
  void complete_commit(Commit how) {
    std::unique_lock lock(mu_);
    const bool due = !applied_.empty();
    lock.unlock();
    if (!due) apply_commit(how);
    lock.lock();
    Op op = std::move(applied_.front());
    applied_.pop_front();
    lock.unlock();
    deliver(op);
  }
  // The next write()/clear() call blocks the caller this long before it queues (the tier calls
  // them under its lock: this holds the lock, as a long flush or reset would).
  void hold_next_call(std::chrono::milliseconds d) {
    std::lock_guard lock(mu_);
    hold_ = d;
  }
  void set_failed(bool f) {
    std::lock_guard lock(mu_);
    failed_ = f;
  }
  std::optional<std::string> value(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = data_.find(key);
    if (it == data_.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, std::string> data() const {
    std::lock_guard lock(mu_);
    return data_;
  }
  // Every state the key has been in, in commit order, from its first (absent): what a
  // linearizable reader may see, and in which order.
  using State = std::optional<std::string>;  // nullopt: absent
  // The index in history(key) of the key's state after the last commit of it whose callback
  // has run: a cache that follows the callbacks may lag behind the store by the commits
  // applied since, but never further.
  std::size_t delivered_state(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = delivered_.find(key);
    return it == delivered_.end() ? 0 : it->second;
  }
  std::vector<State> history(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = history_.find(key);
    if (it == history_.end()) return {State{}};
    return it->second;
  }

 private:
  struct Read {
    std::string key;
    store::ReadDone done;
    std::optional<store::ReadResult> result;  // set when the read has run
  };

  void run_read_locked(Read& r) const {
    if (r.result) return;
    r.result.emplace();
    if (auto it = data_.find(r.key); it != data_.end()) {
      r.result->value = it->second;
    } else {
      r.result->status = {store::Code::not_found, {}};
    }
  }

  // Records key's state now, after a commit changed it.
  void record_locked(const std::string& key) {
    auto& h = history_[key];
    if (h.empty()) h.push_back(State{});
    auto it = data_.find(key);
    h.push_back(it == data_.end() ? State{} : State{it->second});
  }
  struct Op {
    bool clear = false;
    std::vector<store::Write> batch;
    store::WriteDone write_done;
    store::ClearDone clear_done;
    store::WriteTicket ticket = 0;
    store::Status status;       // set when applied (apply_commit)
    std::vector<bool> existed;  // likewise
    // The history index each key it changed reached (apply_locked), for delivered_state().
    std::vector<std::pair<std::string, std::size_t>> reached;
  };

  void deliver(Op& op) {
    {
      std::lock_guard lock(mu_);
      for (const auto& [key, at] : op.reached) {
        auto& d = delivered_[key];
        d = std::max(d, at);
      }
    }
    finish(op, op.status, std::move(op.existed));
  }

  void hold_if_asked() {
    std::chrono::milliseconds d{0};
    {
      std::lock_guard lock(mu_);
      std::swap(d, hold_);
    }
    if (d.count() > 0) std::this_thread::sleep_for(d);
  }

  std::vector<bool> apply_locked(Op& op) {
    std::vector<bool> existed;
    if (op.clear) {
      data_.clear();
      for (auto& [key, h] : history_) {
        record_locked(key);
        op.reached.emplace_back(key, h.size() - 1);
      }
      return existed;
    }
    for (const store::Write& w : op.batch) {
      existed.push_back(data_.contains(w.key));
      if (w.kind == store::Write::Kind::put) {
        data_[w.key] = w.value;
      } else if (w.kind == store::Write::Kind::del) {
        data_.erase(w.key);
      }
      if (w.kind == store::Write::Kind::put || w.kind == store::Write::Kind::del) {
        record_locked(w.key);
        op.reached.emplace_back(w.key, history_[w.key].size() - 1);
      }
    }
    return existed;
  }

  static void finish(Op& op, store::Status s, std::vector<bool> existed) {
    if (op.clear) {
      op.clear_done(std::move(s));
    } else {
      // As the real stores: the batch comes back with a settled commit, not when closed.
      const bool settled = s.code != store::Code::closed;
      op.write_done(
          store::WriteResult{std::move(s), std::move(existed),
                             settled ? std::move(op.batch) : std::vector<store::Write>{}});
    }
  }

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::map<std::string, std::string> data_;
  std::map<std::string, std::vector<State>> history_;  // key -> its states, in commit order
  std::vector<Read> reads_;
  std::deque<Op> commits_;
  std::deque<Op> applied_;  // applied, their callbacks not yet run (commit order)
  std::map<std::string, std::size_t> delivered_;  // delivered_state()
  std::chrono::milliseconds hold_{0};
  bool failed_ = false;
  bool closed_ = false;
  std::vector<std::thread> closers_;
  store::WriteTicket tickets_ = 0;
  std::size_t abandoned_ = 0;
};

}  // namespace sim
