// The open loop's schedule of one thread: planned send times at a constant rate (the thread's
// share of --rate), staggered across threads by schedule_offset, as wrk2 plans them. The
// connection loop (worker.cc) asks it whether a send is due and takes its planned time, which the
// request's latency is then measured from (coordinated omission corrected); when the window
// ends, the planned sends still owed are recorded at their lower bound (record_unsent). In the
// closed loop (rate 0) every send is due at once and planned at the moment it goes out.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "client/recorder.hh"

namespace client {

class OpenLoopSchedule {
 public:
  OpenLoopSchedule(double rate_rps, Clock::time_point start, std::chrono::nanoseconds offset)
      : open_(rate_rps > 0.0),
        interval_(open_ ? static_cast<std::int64_t>(1e9 / rate_rps) : 0),
        next_(start + offset) {}

  bool open() const { return open_; }
  // The next planned send time (open loop).
  Clock::time_point next() const { return next_; }
  // The planned time of a send due at `now`, and the schedule moves on; nullopt when the next
  // planned send is still ahead. Closed loop: `now`.
  std::optional<Clock::time_point> take_due(Clock::time_point now) {
    if (!open_) return now;
    if (next_ > now) return std::nullopt;
    const Clock::time_point planned = next_;
    next_ += interval_;
    return planned;
  }
  // The window ended at `deadline` with `issued` of at most `limit` (0: no limit) requests sent:
  // each planned send between next() and the deadline never went out and is recorded at
  // (deadline - planned), a lower bound of the latency it would have seen, and counted unsent.
  void record_unsent(Clock::time_point deadline, std::uint64_t limit, std::uint64_t issued,
                     Recorder& recorder) const;

 private:
  bool open_;
  std::chrono::nanoseconds interval_;
  Clock::time_point next_;
};

}  // namespace client
