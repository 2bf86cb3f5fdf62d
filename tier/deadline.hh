// deadline.hh — a request's one completion, and --store-timeout: a request that waits on the
// store answers 503 once it has waited that long, whether or not the store answers later.
//
// Completion<Outcome> is the request's answer, given exactly once: by whoever finishes its work
// (a store thread, the flusher) or by the deadline. The server makes it one object per request
// that is also the response's place in its connection (server's DeferredReply), so a request
// that waits on the store costs one allocation for its whole way back. Arming it
// (StoreDeadline::arm) links it into the deadline's list; the side that answers first unlinks
// it, so an answered request is freed with its answer, not at its deadline.
// The list is in deadline order (the timeout is the same for every request and deadlines are
// stamped under one lock), so the deadline thread only looks at its head. It wakes at most once
// per `slack` (timeout / 16, 1..50 ms), so under load it handles answers in batches; a timeout
// answer is late by at most that slack.
// Thread safety: everything may be called from any thread. The destructor joins the thread
// without running the pending timeouts (the store's close() has answered every request by then).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tier {

class StoreDeadline;

// An armed request in the deadline's list: fired at its deadline (answered then unless its work
// was answered first). The links are the deadline's, under its lock.
class Pending {
 public:
  virtual ~Pending() = default;

 private:
  friend class StoreDeadline;
  template <class Outcome>
  friend class Completion;
  virtual void fire(const std::function<void(std::uint64_t)>& abandon) = 0;
  Pending* prev_ = nullptr;
  Pending* next_ = nullptr;
  std::chrono::steady_clock::time_point due_{};
  std::shared_ptr<Pending> keep_;  // the list's reference, while linked
  StoreDeadline* deadline_ = nullptr;
};

// A request's answer, given exactly once. complete() is the answer itself (a derived class says
// what it does: render the response, run a function); answer() and the deadline call it, the
// first of them only.
template <class Outcome>
class Completion : public Pending {
 public:
  // Answers with `outcome` unless the request was answered (or claimed) already; true if this
  // call answered it.
  bool answer(const Outcome& outcome) {
    if (!claim()) return false;
    complete(outcome);
    return true;
  }
  // Takes the right to answer before acting on the request (a waiting write about to be
  // applied, an outcome known at once): true, and nobody else will answer; the caller then
  // answers with complete(). False: answered already, and the request must not take effect.
  bool claim();
  // True once answered or claimed (by either side).
  bool answered() const { return answered_.load(std::memory_order_acquire); }
  // The store's ticket for the request (store::WriteTicket): if the deadline answers, the
  // store is told to abandon it, so what it holds is released at once. Set after submitting;
  // a deadline that fires before it is set abandons nothing (the request just completes).
  void set_ticket(std::uint64_t ticket) { ticket_.store(ticket, std::memory_order_release); }

  // The answer itself; runs once, on the thread that answered.
  virtual void complete(const Outcome& outcome) = 0;

 private:
  friend class StoreDeadline;
  void fire(const std::function<void(std::uint64_t)>& abandon) override {
    if (answered_.exchange(true, std::memory_order_acq_rel)) return;
    complete(*on_timeout_);
    if (!abandon) return;
    if (const std::uint64_t t = ticket_.load(std::memory_order_acquire); t != 0) abandon(t);
  }
  std::atomic<bool> answered_{false};
  std::atomic<std::uint64_t> ticket_{0};
  const Outcome* on_timeout_ = nullptr;  // arm()'s: outlives the deadline
};

// A completion that runs a function: for callers that have no object of their own to answer
// (the board service's store reads, tests).
template <class Outcome>
class FunctionCompletion final : public Completion<Outcome> {
 public:
  explicit FunctionCompletion(std::function<void(const Outcome&)> f) : f_(std::move(f)) {}
  void complete(const Outcome& outcome) override {
    auto f = std::move(f_);  // what it holds goes with the answer
    f(outcome);
  }

 private:
  std::function<void(const Outcome&)> f_;
};

// What a request hands the tier: its completion.
template <class Outcome>
using Done = std::shared_ptr<Completion<Outcome>>;

template <class Outcome>
Done<Outcome> completion_of(std::function<void(const Outcome&)> f) {
  return std::make_shared<FunctionCompletion<Outcome>>(std::move(f));
}

class StoreDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  // abandon: called with the ticket of a request the deadline answered (Completion::set_ticket),
  // so the store can drop it if it has not begun (Store::abandon); may be empty.
  explicit StoreDeadline(std::chrono::milliseconds timeout,
                         std::function<void(std::uint64_t)> abandon = {})
      : timeout_(timeout),
        abandon_(std::move(abandon)),
        slack_(std::clamp<Clock::duration>(timeout / 16, std::chrono::milliseconds(1),
                                           std::chrono::milliseconds(50))),
        thread_([this] { run(); }) {}
  ~StoreDeadline() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    std::lock_guard lock(mu_);
    while (head_ != nullptr) (void)unlink_locked(*head_);  // never fired: close() answered them
  }
  StoreDeadline(const StoreDeadline&) = delete;
  StoreDeadline& operator=(const StoreDeadline&) = delete;

  std::chrono::milliseconds timeout() const { return timeout_; }

  // A handle on an armed completion, as the tier passes it around: copyable (copies share the
  // once).
  template <class Outcome>
  class Answer {
   public:
    // Answers with the outcome unless the deadline answered first.
    void operator()(const Outcome& outcome) const { c_->answer(outcome); }
    // For a caller that answers by itself (an outcome known at once, a waiting write about to
    // be applied): true if nobody had answered yet, and then nobody else will; the caller then
    // answers with deliver(). False: the request was answered already and must not take effect.
    bool claim() const { return c_->claim(); }
    void deliver(const Outcome& outcome) const { c_->complete(outcome); }
    bool answered() const { return c_->answered(); }
    void set_ticket(std::uint64_t ticket) const { c_->set_ticket(ticket); }

   private:
    friend class StoreDeadline;
    explicit Answer(Done<Outcome> c) : c_(std::move(c)) {}
    Done<Outcome> c_;
  };

  // Links `done` into the list: at the deadline it is answered with on_timeout (kept by
  // reference: it must outlive this deadline) unless answered first. No allocation.
  template <class Outcome>
  Answer<Outcome> arm(Done<Outcome> done, const Outcome& on_timeout) {
    done->on_timeout_ = &on_timeout;
    push(done);
    return Answer<Outcome>(std::move(done));
  }
  template <class Outcome>  // a temporary would dangle: pass a member of the caller
  Answer<Outcome> arm(Done<Outcome> done, const Outcome&& on_timeout) = delete;
  // The same for a function (one allocation: its completion).
  template <class Outcome>
  Answer<Outcome> arm(std::function<void(const Outcome&)> f, const Outcome& on_timeout) {
    return arm(completion_of(std::move(f)), on_timeout);
  }
  template <class Outcome>
  Answer<Outcome> arm(std::function<void(const Outcome&)> f, const Outcome&& on_timeout) = delete;

 private:
  template <class Outcome>
  friend class Completion;

  void push(std::shared_ptr<Pending> pending) {
    Pending& p = *pending;
    bool was_empty;
    {
      std::lock_guard lock(mu_);
      was_empty = head_ == nullptr;
      p.deadline_ = this;
      p.due_ = Clock::now() + timeout_;
      p.keep_ = std::move(pending);
      p.prev_ = tail_;
      p.next_ = nullptr;
      (tail_ != nullptr ? tail_->next_ : head_) = &p;
      tail_ = &p;
    }
    if (was_empty) wake_.notify_one();
  }

  // Takes p out of the list if it is still in it; returns the list's reference (released by the
  // caller outside the lock), or null.
  std::shared_ptr<Pending> unlink_locked(Pending& p) {
    if (!p.keep_) return nullptr;
    (p.prev_ != nullptr ? p.prev_->next_ : head_) = p.next_;
    (p.next_ != nullptr ? p.next_->prev_ : tail_) = p.prev_;
    p.prev_ = p.next_ = nullptr;
    return std::move(p.keep_);
  }
  void unlink(Pending& p) {
    std::shared_ptr<Pending> keep;
    std::lock_guard lock(mu_);
    keep = unlink_locked(p);
  }

  void run() {
    std::unique_lock lock(mu_);
    std::vector<std::shared_ptr<Pending>> due;
    while (!stopping_) {
      if (head_ == nullptr) {
        wake_.wait(lock, [this] { return stopping_ || head_ != nullptr; });
        continue;
      }
      const Clock::time_point now = Clock::now();
      if (head_->due_ > now) {
        // Sleep past the head's deadline by the slack, so the answers due meanwhile go in one
        // batch.
        wake_.wait_until(lock, head_->due_ + slack_, [this] { return stopping_; });
        continue;
      }
      while (head_ != nullptr && head_->due_ <= now) due.push_back(unlink_locked(*head_));
      lock.unlock();
      for (auto& pending : due) pending->fire(abandon_);
      due.clear();
      lock.lock();
    }
  }

  const std::chrono::milliseconds timeout_;
  const std::function<void(std::uint64_t)> abandon_;
  const Clock::duration slack_;
  std::mutex mu_;
  std::condition_variable wake_;
  Pending* head_ = nullptr;  // the list, in deadline order
  Pending* tail_ = nullptr;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above exists
};

template <class Outcome>
bool Completion<Outcome>::claim() {
  if (answered_.exchange(true, std::memory_order_acq_rel)) return false;
  if (deadline_ != nullptr) deadline_->unlink(*this);
  return true;
}

}  // namespace tier
