// Recording one thread's measurements (see recorder.hh).
#include "client/recorder.hh"

#include <algorithm>

#include "client/config.hh"

namespace client {

std::uint64_t WorkerStats::errors() const {
  std::uint64_t total = mismatches;
  for (auto n : unexpected_status) total += n;
  for (auto n : io_errors) total += n;
  return total;
}

std::uint64_t NodeStats::errors() const {
  std::uint64_t total = mismatches;
  for (auto n : unexpected_status) total += n;
  for (auto n : io_errors) total += n;
  return total;
}

std::uint64_t Recorder::completed(Clock::time_point planned, Clock::time_point sent,
                                  Clock::time_point done) {
  const auto from_planned =
      std::chrono::duration_cast<std::chrono::nanoseconds>(done - planned).count();
  const auto from_sent = std::chrono::duration_cast<std::chrono::nanoseconds>(done - sent).count();
  const auto corrected = static_cast<std::uint64_t>(std::max<std::int64_t>(from_planned, 0));
  latency(corrected, done, Sample::kCompleted);
  if (open_loop_) {
    stats_.latency_uncorrected.record(
        static_cast<std::uint64_t>(std::max<std::int64_t>(from_sent, 0)));
    const auto lag = std::chrono::duration_cast<std::chrono::nanoseconds>(sent - planned).count();
    stats_.send_lag.record(static_cast<std::uint64_t>(std::max<std::int64_t>(lag, 0)));
  }
  ++stats_.completed;
  stats_.last_completion = std::max(stats_.last_completion, done);
  return corrected;
}

void Recorder::latency(std::uint64_t ns, Clock::time_point at, Sample kind) {
  stats_.latency.record(ns);
  const auto since = std::chrono::duration_cast<std::chrono::seconds>(at - t0_).count();
  const auto second = static_cast<std::uint32_t>(std::max<std::int64_t>(since, 0));
  if (second != current_second_) {
    flush_second();
    current_second_ = second;
  }
  if (second < static_cast<std::uint32_t>(Config::kMaxSeriesSeconds.count())) {
    second_hist_.record(ns);
    ++second_counts_[static_cast<std::size_t>(kind)];
  }
}

void Recorder::finish() {
  flush_second();
  // Unsent planned sends go to the window's last second after later completions were flushed.
  std::stable_sort(
      stats_.series.begin(), stats_.series.end(),
      [](const SecondSample& a, const SecondSample& b) { return a.second < b.second; });
}

void Recorder::flush_second() {
  if (second_hist_.count() == 0) return;
  stats_.series.push_back(SecondSample{current_second_, second_hist_.nonzero_buckets(),
                                       second_counts_[0], second_counts_[1], second_counts_[2]});
  second_hist_.reset();
  second_counts_ = {};
}

}  // namespace client
