// connection_limit.hh — the --max-connections cap: how many connections are open, and the
// admission each one holds while it is (docs/server.md, "Limits").
//
// The listeners ask for an Admission before they start a connection; the Connection owns it for
// its whole life and its destruction gives the place back, so the count cannot leak whatever
// way a connection ends. Past the cap the listener answers 503 and closes the socket
// (listener.cc) while the open connections keep being served. One atomic shared by every
// listener (per-thread acceptors admit concurrently); a refusal briefly holds a place it then
// returns, so at the boundary a racing accept may be refused one connection early, never
// admitted past the cap.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

namespace server {

class ConnectionLimit {
 public:
  // One open connection's place under the cap; empty (false) when the cap refused it.
  class Admission {
   public:
    Admission() = default;
    Admission(Admission&& other) noexcept : limit_(std::exchange(other.limit_, nullptr)) {}
    Admission& operator=(Admission&& other) noexcept {
      if (this != &other) {
        release();
        limit_ = std::exchange(other.limit_, nullptr);
      }
      return *this;
    }
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    ~Admission() { release(); }

    explicit operator bool() const { return limit_ != nullptr; }

   private:
    friend class ConnectionLimit;
    explicit Admission(ConnectionLimit* limit) : limit_(limit) {}
    void release() {
      if (limit_ != nullptr) limit_->open_.fetch_sub(1, std::memory_order_relaxed);
      limit_ = nullptr;
    }
    ConnectionLimit* limit_ = nullptr;
  };

  explicit ConnectionLimit(std::size_t max) : max_(max) {}
  ConnectionLimit(const ConnectionLimit&) = delete;
  ConnectionLimit& operator=(const ConnectionLimit&) = delete;

  Admission try_admit() {
    if (open_.fetch_add(1, std::memory_order_relaxed) >= max_) {
      open_.fetch_sub(1, std::memory_order_relaxed);
      return {};
    }
    return Admission(this);
  }
  std::size_t open() const { return open_.load(std::memory_order_relaxed); }
  std::size_t max() const { return max_; }

 private:
  const std::size_t max_;
  std::atomic<std::size_t> open_{0};
};

}  // namespace server
