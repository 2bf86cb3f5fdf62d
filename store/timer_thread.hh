// timer_thread.hh — one thread that runs callbacks at (or after) their deadlines. The store uses
// it for the two completions that must not run on the thread that produced them: reads held back
// by an injected read delay (each waits for its own deadline, so concurrent delayed reads
// overlap instead of queueing behind one another), and operations started after close(), which
// complete with Code::closed here rather than inline.
// Thread safety: post() and drain() may be called from any thread, also from a callback running
// here (post only). Callbacks run one at a time, in deadline order, FIFO among equal deadlines.
// Ownership: the destructor runs every callback still queued at once (ignoring deadlines), then
// joins the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace store::detail {

class TimerThread {
 public:
  using Clock = std::chrono::steady_clock;

  TimerThread() : thread_([this] { run(); }) {}
  ~TimerThread() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  TimerThread(const TimerThread&) = delete;
  TimerThread& operator=(const TimerThread&) = delete;

  // Runs fn on the timer thread no sooner than `at`.
  void post(Clock::time_point at, std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      queue_.emplace(Key{at, next_seq_++}, std::move(fn));
    }
    wake_.notify_all();
  }
  void post(std::function<void()> fn) { post(Clock::now(), std::move(fn)); }

  // Waits until nothing is queued or running (callbacks posted meanwhile are waited for too).
  // Must not be called from a callback running here.
  void drain() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return queue_.empty() && !running_; });
  }

 private:
  struct Key {
    Clock::time_point at;
    std::uint64_t seq;
    bool operator<(const Key& o) const { return at != o.at ? at < o.at : seq < o.seq; }
  };

  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (queue_.empty()) {
        idle_.notify_all();
        if (stopping_) return;
        wake_.wait(lock);
        continue;
      }
      auto first = queue_.begin();
      if (!stopping_ && Clock::now() < first->first.at) {
        wake_.wait_until(lock, first->first.at);
        continue;  // an earlier deadline may have arrived meanwhile
      }
      std::function<void()> fn = std::move(first->second);
      queue_.erase(first);
      running_ = true;
      lock.unlock();
      fn();
      fn = nullptr;  // destroy what it captured outside the lock
      lock.lock();
      running_ = false;
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::map<Key, std::function<void()>> queue_;  // seq makes keys unique
  std::uint64_t next_seq_ = 0;
  bool running_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace store::detail
