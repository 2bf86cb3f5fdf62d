// group_committer.cc — GroupCommitter: the queue, the committer and completer threads, the
// checks write() makes before queueing, and the existed helpers the engines share
// (store/README.md, "Group commit").
#include "store/group_committer.hh"

#include <cmath>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "store/timer_thread.hh"

namespace store {

namespace {

bool key_ok(std::string_view key) {
  return !key.empty() && key.size() <= kMaxKeyBytes;
}

// Why write() refuses a batch holding w (empty: it does not). A score that is not finite or a
// seq that a signed 64-bit integer cannot hold would not rank as the in-memory boards do.
std::string refusal(const Write& w, std::size_t max_value, const std::string& engine) {
  static_assert(kMaxKeyBytes == 250, "the messages below say 1..250");
  if (!key_ok(w.key)) {
    return std::string("store write refused: a ") + (w.is_board_op() ? "board" : "key") +
           " must be 1..250 bytes (got " + std::to_string(w.key.size()) + ")";
  }
  if (w.kind == Write::Kind::board_set || w.kind == Write::Kind::board_remove) {
    if (!key_ok(w.member)) {
      return "store write refused: a member must be 1..250 bytes (got " +
             std::to_string(w.member.size()) + ")";
    }
  }
  if (w.kind == Write::Kind::board_set) {
    if (!std::isfinite(w.score)) return "store write refused: a board score must be finite";
    if (w.seq > static_cast<std::uint64_t>(INT64_MAX)) {
      return "store write refused: a board seq must be below 2^63";
    }
  }
  if (w.kind == Write::Kind::put && w.value.size() > max_value) {
    return "store write refused: a value must be at most " + std::to_string(max_value) +
           " bytes for " + engine + " (got " + std::to_string(w.value.size()) + ")";
  }
  return {};
}

}  // namespace

GroupCommitter::GroupCommitter(Engine& engine, detail::TimerThread& timer, std::size_t max_value,
                               std::string engine_name)
    : engine_(engine), timer_(timer), max_value_(max_value), engine_name_(std::move(engine_name)) {}

GroupCommitter::~GroupCommitter() {
  stop();
  join();
}

void GroupCommitter::start() {
  completer_ = std::thread([this] { completer_main(); });
  committer_ = std::thread([this] { committer_main(); });
}

// --- submitting ------------------------------------------------------------------------------

WriteTicket GroupCommitter::write(std::vector<Write> batch, WriteDone done) {
  Op op;
  op.batch = std::move(batch);
  for (const Write& w : op.batch) {
    op.refused = refusal(w, max_value_, engine_name_);
    if (!op.refused.empty()) break;
  }
  return enqueue(std::move(op), std::move(done));
}

void GroupCommitter::abandon(WriteTicket ticket) {
  std::shared_ptr<WriteDone> callback;
  {
    std::lock_guard lock(write_mu_);
    if (ticket < queue_.first_ticket || ticket - queue_.first_ticket >= queue_.ops.size()) return;
    const std::size_t i = ticket - queue_.first_ticket;
    Op& op = queue_.ops[i];
    if (op.is_clear || op.abandoned) return;
    op.abandoned = true;
    op.refused = "abandoned";             // the engine skips it
    std::vector<Write>().swap(op.batch);  // its keys and values are freed now
    callback = std::make_shared<WriteDone>(std::move(queue_.callbacks[i]));
  }
  timer_.post([callback] {
    (*callback)(
        WriteResult{{Code::abandoned, "abandoned before its commit began: not applied"}, {}, {}});
  });
}

void GroupCommitter::clear(ClearDone done) {
  Op op;
  op.is_clear = true;
  enqueue(std::move(op), [done = std::move(done)](WriteResult r) { done(std::move(r.status)); });
}

// Hands a write or clear to the committer (returning its ticket), or completes it as closed
// after stop() (returning 0).
WriteTicket GroupCommitter::enqueue(Op op, WriteDone callback) {
  {
    std::lock_guard lock(write_mu_);
    if (!stopping_) {
      queue_.ops.push_back(std::move(op));
      queue_.callbacks.push_back(std::move(callback));
      write_cv_.notify_one();
      return queue_.first_ticket + queue_.ops.size() - 1;
    }
  }
  complete_closed(std::move(callback));
  return 0;
}

void GroupCommitter::complete_closed(WriteDone callback) {
  errors_.fetch_add(1);
  timer_.post([cb = std::make_shared<WriteDone>(std::move(callback))] {
    (*cb)(WriteResult{Status{Code::closed, "store closed"}, {}, {}});
  });
}

// --- stopping, the test hold -----------------------------------------------------------------

void GroupCommitter::stop() {
  {
    std::lock_guard lock(write_mu_);
    stopping_ = true;
  }
  write_cv_.notify_all();
}

void GroupCommitter::join() {
  if (committer_.joinable()) committer_.join();  // drains its queue first
  {
    std::lock_guard lock(complete_mu_);
    complete_stopping_ = true;
  }
  complete_cv_.notify_all();
  // After the committer: every group it committed is answered first.
  if (completer_.joinable()) completer_.join();
}

void GroupCommitter::hold_after_next_commit() {
  std::lock_guard lock(write_mu_);
  hold_after_group_ = groups_taken_ + 1;
}

void GroupCommitter::release() {
  {
    std::lock_guard lock(write_mu_);
    hold_after_group_ = 0;
  }
  write_cv_.notify_all();
}

// --- the committer ---------------------------------------------------------------------------

void GroupCommitter::committer_main() {
  engine_.committer_started();
  for (;;) {
    Group group = spare_group();
    std::uint64_t taken = 0;
    if (!take(group, taken)) return;  // stopping, and everything queued is done
    commit(group);
    // The callbacks go to the completer, so the next group's commit (its sync, mostly waiting
    // on the disk or the database) overlaps them instead of following them.
    {
      std::lock_guard lock(complete_mu_);
      completed_.push_back(std::move(group));
    }
    complete_cv_.notify_one();
    wait_while_held(taken);
  }
}

GroupCommitter::Group GroupCommitter::spare_group() {
  std::lock_guard lock(complete_mu_);
  if (spare_.empty()) return {};
  Group group = std::move(spare_.back());
  spare_.pop_back();
  return group;
}

// Takes everything queued (waiting for something first); false once stopping with nothing left.
bool GroupCommitter::take(Group& group, std::uint64_t& taken) {
  std::unique_lock lock(write_mu_);
  wait_for_work(lock);
  if (queue_.ops.empty()) return false;
  const WriteTicket next = queue_.first_ticket + queue_.ops.size();
  std::swap(group, queue_);
  queue_.first_ticket = next;  // from now on, abandon() cannot reach the taken ops
  taken = ++groups_taken_;
  return true;
}

void GroupCommitter::wait_for_work(std::unique_lock<std::mutex>& lock) {
  auto ready = [this] { return stopping_ || !queue_.ops.empty(); };
  while (!ready()) {
    const std::optional<Clock::time_point> deadline = engine_.idle_deadline();
    if (!deadline) {
      write_cv_.wait(lock, ready);
      return;
    }
    if (write_cv_.wait_until(lock, *deadline, ready)) return;
    lock.unlock();
    engine_.idle();
    lock.lock();
  }
}

// One group: refused batches are answered alone with Code::failed (refused, nothing of the batch
// applied: the durable tier must not read it as io_error, an outcome that may be unknown), every
// other op with the engine's status for the whole commit.
void GroupCommitter::commit(Group& group) {
  for (const Op& op : group.ops) {
    if (!op.refused.empty() && !op.abandoned) engine_.note_refused(op.refused);
  }
  const Status status = engine_.commit(group.ops);
  group.results.resize(group.ops.size());
  for (std::size_t i = 0; i < group.ops.size(); ++i) {
    Op& op = group.ops[i];
    Status& result = group.results[i];
    if (op.abandoned) continue;  // answered by abandon()
    if (op.refused.empty() || status.code == Code::failed) {
      result = status;
    } else {
      result = {Code::failed, op.refused};
    }
    if (!result.ok()) {
      errors_.fetch_add(1);
      op.existed.clear();
    }
  }
}

void GroupCommitter::wait_while_held(std::uint64_t taken) {
  std::unique_lock lock(write_mu_);
  write_cv_.wait(lock, [&] { return hold_after_group_ != taken || stopping_; });
}

// --- the completer ---------------------------------------------------------------------------

// Runs the callbacks of committed groups, group after group and op after op within a group:
// commit order, on one thread.
void GroupCommitter::completer_main() {
  std::vector<Group> groups;
  for (;;) {
    {
      std::unique_lock lock(complete_mu_);
      complete_cv_.wait(lock, [this] { return complete_stopping_ || !completed_.empty(); });
      if (completed_.empty()) return;  // stopping, and every committed group is answered
      groups.swap(completed_);
    }
    for (Group& group : groups) {
      for (std::size_t i = 0; i < group.ops.size(); ++i) {
        if (group.ops[i].abandoned) continue;  // answered by abandon()
        group.callbacks[i](WriteResult{std::move(group.results[i]), std::move(group.ops[i].existed),
                                       std::move(group.ops[i].batch)});
      }
      // Emptied (what the callbacks held goes now), its vectors kept for a later group.
      group.ops.clear();
      group.callbacks.clear();
      group.results.clear();
    }
    recycle(groups);
  }
}

// A few emptied groups are kept, those of a modest size: one burst of a huge group does not
// keep its vectors' memory for good.
void GroupCommitter::recycle(std::vector<Group>& groups) {
  constexpr std::size_t kSpareGroups = 4;
  constexpr std::size_t kSpareCapacity = 4096;  // ops
  {
    std::lock_guard lock(complete_mu_);
    for (Group& group : groups) {
      if (spare_.size() < kSpareGroups && group.ops.capacity() <= kSpareCapacity) {
        spare_.push_back(std::move(group));
      }
    }
  }
  groups.clear();
}

// --- existed ---------------------------------------------------------------------------------

namespace {

bool anyone_asks(const std::vector<GroupCommitter::Op>& group) {
  for (const auto& op : group) {
    if (!op.refused.empty()) continue;
    for (const Write& w : op.batch) {
      if (w.want_existed && !w.is_board_op()) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string_view> GroupCommitter::keys_to_look_up(const std::vector<Op>& group) {
  std::vector<std::string_view> lookup;
  if (!anyone_asks(group)) return lookup;  // e.g. a write-behind flush: no lookup at all
  std::unordered_set<std::string_view> touched;
  bool cleared = false;
  for (const Op& op : group) {
    if (!op.refused.empty()) continue;
    if (op.is_clear) {
      cleared = true;
      continue;
    }
    for (const Write& w : op.batch) {
      if (w.is_board_op()) continue;  // board rows are no keys
      if (!cleared && touched.insert(w.key).second && w.want_existed) lookup.push_back(w.key);
    }
  }
  return lookup;
}

void GroupCommitter::answer_existed(std::vector<Op>& group,
                                    const std::function<bool(std::string_view)>& was_present) {
  const bool asked = anyone_asks(group);           // none: all false, and no overlay to keep
  std::unordered_map<std::string_view, bool> now;  // keys the group has set, since any clear
  bool cleared = false;
  for (Op& op : group) {
    if (!op.refused.empty()) continue;
    if (op.is_clear) {
      now.clear();
      cleared = true;
      continue;
    }
    op.existed.assign(op.batch.size(), false);
    if (!asked) continue;
    for (std::size_t i = 0; i < op.batch.size(); ++i) {
      const Write& w = op.batch[i];
      if (w.is_board_op()) continue;  // no existed for board rows (store.hh)
      if (w.want_existed) {
        if (auto it = now.find(w.key); it != now.end()) {
          op.existed[i] = it->second;
        } else if (!cleared) {
          op.existed[i] = was_present(w.key);
        }
      }
      now[w.key] = w.kind == Write::Kind::put;
    }
  }
}

}  // namespace store
