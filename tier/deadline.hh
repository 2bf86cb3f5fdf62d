// deadline.hh — --store-timeout: a request that waits on the store answers 503 once it has
// waited that long, whether or not the store answers later.
//
// Every request the tier hands to the store gets an Answer: a callback that runs at most once,
// either with the store's outcome or, at the deadline, with a timeout outcome. The deadline
// thread keeps the pending answers in a FIFO: the timeout is the same for every request and
// deadlines are stamped under one lock, so the FIFO is in deadline order and the thread only ever
// looks at its front. It wakes at most once per `slack` (timeout / 16, 1..50 ms), so under load
// it handles answers in batches instead of once per request; a timeout answer is late by at most
// that slack. Answers the store already gave stay in the FIFO until their deadline (a pointer
// each) and are dropped then.
// Thread safety: everything may be called from any thread. The destructor joins the thread
// without running the pending timeouts (the store's close() has answered every request by then).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tier {

class StoreDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  // abandon: called with the ticket of a request the deadline answered (Answer::set_ticket), so
  // the store can drop it if it has not begun (Store::abandon); may be empty.
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
  }
  StoreDeadline(const StoreDeadline&) = delete;
  StoreDeadline& operator=(const StoreDeadline&) = delete;

  std::chrono::milliseconds timeout() const { return timeout_; }

  // A request in the FIFO: fired at its deadline (answered then unless the store was first).
  struct Pending {
    virtual ~Pending() = default;
    virtual void fire(const std::function<void(std::uint64_t)>& abandon) = 0;
  };

  // A callback answering a request once: operator() passes the store's outcome on unless the
  // deadline answered first; at the deadline, arm()'s `on_timeout` is passed on unless the
  // store answered first. Copyable (copies share the once).
  template <class Outcome>
  class Answer {
   public:
    void operator()(const Outcome& outcome) const { state_->answer(outcome); }
    // For a caller that answers by itself (an outcome known at once): true if the deadline had
    // not answered yet, and then it never will; false if the request was answered already.
    // Armed with hand_back: done is kept for the caller, who answers with deliver().
    bool settle() const {
      if (!claim()) return false;
      if (!state_->hand_back) state_->done = nullptr;
      return true;
    }
    // Takes the right to answer before acting on the request (a waiting write about to be
    // applied): true, and the deadline will not answer; then deliver() answers. False: the
    // deadline answered already, and the request must not take effect.
    bool claim() const { return !state_->answered.exchange(true, std::memory_order_acq_rel); }
    void deliver(const Outcome& outcome) const {
      auto d = std::move(state_->done);
      d(outcome);
    }
    // True once answered or claimed (by either side).
    bool answered() const { return state_->answered.load(std::memory_order_acquire); }
    // The store's ticket for the request (store::WriteTicket): if the deadline answers, the
    // store is told to abandon it, so what it holds is released at once. Set after submitting;
    // a deadline that fires before it is set abandons nothing (the request just completes).
    void set_ticket(std::uint64_t ticket) const {
      state_->ticket.store(ticket, std::memory_order_release);
    }

   private:
    friend class StoreDeadline;
    struct State final : Pending {
      std::atomic<bool> answered{false};
      std::atomic<std::uint64_t> ticket{0};
      std::function<void(const Outcome&)> done;
      const Outcome* on_timeout = nullptr;  // arm()'s: outlives the deadline
      bool hand_back = false;               // arm()'s: settle() keeps done
      // The winner of the exchange owns done from then on: it moves it out, so what it holds
      // (the request's response slot) is freed now, not at the deadline.
      void answer(const Outcome& outcome) {
        if (answered.exchange(true, std::memory_order_acq_rel)) return;
        auto d = std::move(done);
        d(outcome);
      }
      // At the deadline: answers the request unless the store did, and then has the store
      // abandon it.
      void fire(const std::function<void(std::uint64_t)>& abandon) override {
        if (answered.exchange(true, std::memory_order_acq_rel)) return;
        auto d = std::move(done);
        d(*on_timeout);
        if (!abandon) return;
        if (const std::uint64_t t = ticket.load(std::memory_order_acquire); t != 0) abandon(t);
      }
    };
    explicit Answer(std::shared_ptr<State> s) : state_(std::move(s)) {}
    std::shared_ptr<State> state_;
  };

  // on_timeout is kept by reference: it must outlive this deadline (the tier's members are
  // built once, so arming a request allocates nothing but its State). hand_back: an outcome the
  // caller settles is still answered through done (Answer::deliver), so the caller need not
  // keep a copy of done for it.
  template <class Outcome>
  Answer<Outcome> arm(std::function<void(const Outcome&)> done, const Outcome& on_timeout,
                      bool hand_back = false) {
    using State = typename Answer<Outcome>::State;
    auto state = std::make_shared<State>();
    state->done = std::move(done);
    state->on_timeout = &on_timeout;
    state->hand_back = hand_back;
    push(state);
    return Answer<Outcome>(std::move(state));
  }
  template <class Outcome>  // a temporary would dangle: pass a member of the caller
  Answer<Outcome> arm(std::function<void(const Outcome&)> done, const Outcome&& on_timeout,
                      bool hand_back = false) = delete;

 private:
  void push(std::shared_ptr<Pending> pending) {
    bool was_empty;
    {
      std::lock_guard lock(mu_);
      was_empty = queue_.empty();
      queue_.emplace_back(Clock::now() + timeout_, std::move(pending));
    }
    if (was_empty) wake_.notify_one();
  }

  void run() {
    std::unique_lock lock(mu_);
    std::vector<std::shared_ptr<Pending>> due;
    while (!stopping_) {
      if (queue_.empty()) {
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        continue;
      }
      const Clock::time_point now = Clock::now();
      if (queue_.front().first > now) {
        // Sleep past the front's deadline by the slack, so the answers due meanwhile go in one
        // batch.
        wake_.wait_until(lock, queue_.front().first + slack_, [this] { return stopping_; });
        continue;
      }
      while (!queue_.empty() && queue_.front().first <= now) {
        due.push_back(std::move(queue_.front().second));
        queue_.pop_front();
      }
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
  std::deque<std::pair<Clock::time_point, std::shared_ptr<Pending>>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace tier
