// flusher.hh — write-behind's flusher: commits the dirty buffer flush_interval/4 after its
// oldest write (at once if a slow flush ran past that), so no write stays only in memory longer
// than flush_interval unless a commit itself takes longer; admits the writes waiting for room.
// Invariants:
// - at most one flush is in flight; its snapshot's versions tell what it made durable;
// - dirty writes made before a pending reset are not flushed until its clear has completed;
// - a failed flush keeps the dirty data, makes every write answer 503 until a flush succeeds
//   (failing_locked), and is retried after a full period;
// - once shutdown has begun a flush gets --store-timeout, then the store is closed (which fails
//   the commit in flight): a store that does not answer does not hold the process's exit.
// With flush_interval 0 there is no thread: step() is one turn of its loop (the simulation).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "tier/parts.hh"

namespace tier {

class Flusher {
 public:
  Flusher(const Parts& parts, WriteBehindBuffer& buffer) : p_(parts), buffer_(buffer) {}
  ~Flusher() { stop(); }

  void start();  // the thread, unless flush_interval is 0
  void stop();   // wakes and joins it (TierCore::stopping set first)
  void wake() { wake_.notify_one(); }
  // One turn of the loop without waiting for the commit (flush_interval 0).
  void step();
  // Shutdown's last flush, retried for up to --store-timeout while the store may come back.
  void final_flush_locked(std::unique_lock<std::mutex>& lock);

  bool failing_locked() const { return failing_; }
  const std::string& error_locked() const { return error_; }
  void clear_failing_locked() { failing_ = false; }

 private:
  void main();
  // Commits the dirty buffer once (waits for the commit with mu released); true on success.
  // bounded: shutdown's final flush; a periodic flush becomes bounded once shutdown begins.
  bool flush_once(std::unique_lock<std::mutex>& lock, bool bounded = false);
  void start_flush_locked();
  void wait_flushed(std::unique_lock<std::mutex>& lock, std::uint64_t n, bool bounded);

  const Parts& p_;
  WriteBehindBuffer& buffer_;
  std::condition_variable wake_;
  std::condition_variable flushed_;
  bool in_flight_ = false;
  std::uint64_t started_ = 0, done_ = 0;
  // The last flush failed (why); key writes answer 503 until one succeeds.
  bool failing_ = false;
  std::string error_;
  store::Code error_code_ = store::Code::ok;
  std::thread thread_;
};

}  // namespace tier
