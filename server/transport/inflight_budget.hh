// inflight_budget.hh — the --max-inflight budget: one count of every byte the server holds for
// its connections (request bodies being received, responses not yet written, JSON renderings
// included, and write bodies waiting on the store), shared by all connections (docs/server.md,
// "Limits").
//
// Each connection's engine keeps what it has charged and reconciles it with what it holds at a
// few points (http_engine.cc, settle()); the decisions that refuse work ask try_add() first:
// a body announced by Content-Length before it is read, a chunked body as it grows, a
// rendered response of a request that changed nothing. Bytes that already exist (a write's
// response, output behind a slow reader) are add()ed unconditionally: the budget then reads
// over its maximum and new work is refused until they are written. One atomic, touched a few
// times per request, never on the GET-hit path's allocation-free guarantee.
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>

namespace server {

// A body announced at or below this size, a response body at or below it, and a connection's
// output while it stays at or below it are part of the connection's fixed footprint (the
// buffers it keeps anyway, kRetainedBufferBytes in http_engine.hh) and are not charged: GET hits
// and small PUTs never touch the shared budget. Above it every byte counts.
inline constexpr std::size_t kUnchargedBytes = 64 * 1024;

// The error a refused request gets (503).
inline constexpr std::string_view kInflightFull =
    "server busy: --max-inflight bytes are held for connections, retry later";

class InflightBudget {
 public:
  explicit InflightBudget(std::size_t max) : max_(max) {}
  InflightBudget(const InflightBudget&) = delete;
  InflightBudget& operator=(const InflightBudget&) = delete;

  // Adds n if the total stays within the maximum; false (nothing added) otherwise.
  bool try_add(std::size_t n) {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (n > max_ || used > max_ - n) return false;
    } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    note_high(used + n);
    return true;
  }
  // Adds n whatever the total (bytes the server already holds).
  void add(std::size_t n) { note_high(used_.fetch_add(n, std::memory_order_relaxed) + n); }
  void sub(std::size_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }

  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t high_water() const { return high_.load(std::memory_order_relaxed); }
  std::size_t max() const { return max_; }

 private:
  void note_high(std::size_t now) {
    std::size_t high = high_.load(std::memory_order_relaxed);
    while (now > high && !high_.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
    }
  }

  const std::size_t max_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::size_t> high_{0};
};

}  // namespace server
