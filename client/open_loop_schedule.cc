// The open loop's planned send times (see open_loop_schedule.hh).
#include "client/open_loop_schedule.hh"

namespace client {

void OpenLoopSchedule::record_unsent(Clock::time_point deadline, std::uint64_t limit,
                                     std::uint64_t issued, Recorder& recorder) const {
  if (interval_.count() <= 0) return;
  // Counted in the window's last second (the deadline itself starts the second after it).
  const auto last_moment = deadline - std::chrono::nanoseconds(1);
  for (Clock::time_point next = next_; next < deadline && (limit == 0 || issued < limit);
       next += interval_, ++issued) {
    recorder.latency(static_cast<std::uint64_t>((deadline - next).count()), last_moment,
                     Recorder::Sample::kUnsent);
    ++recorder.stats().unsent;
  }
}

}  // namespace client
