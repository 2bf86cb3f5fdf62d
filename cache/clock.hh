// clock.hh — the cache's time for expiry: milliseconds since the cache was built.
//
// Expiry times are stored in 40 bits as milliseconds since this epoch (entry.hh). The source is
// steady_clock (immune to wall-clock steps) unless Options::clock supplies another, which the
// tests use to move time by hand.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>

namespace cache::detail {

class CacheClock {
 public:
  using Source = std::function<std::chrono::milliseconds()>;

  explicit CacheClock(Source source) : source_(std::move(source)), epoch_(read()) {}

  // Milliseconds since the epoch (never negative: a source that steps back reads as the epoch).
  std::uint64_t now_ms() const {
    const auto ms = read() - epoch_;
    return ms.count() > 0 ? static_cast<std::uint64_t>(ms.count()) : 0;
  }

 private:
  std::chrono::milliseconds read() const {
    if (source_) return source_();
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now().time_since_epoch());
  }

  Source source_;
  std::chrono::milliseconds epoch_;
};

}  // namespace cache::detail
