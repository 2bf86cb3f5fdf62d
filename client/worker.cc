// The load-generating thread (see worker.hh).
#include "worker.hh"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <thread>

#include "cpu.hh"

namespace bench {
namespace {

constexpr auto kWarmupCap = std::chrono::seconds(600);       // bound on a count-based warm-up
constexpr auto kMeasuredCap = std::chrono::hours(24);        // bound on a count-based point
constexpr auto kPollSlice = std::chrono::milliseconds(100);  // multi-connection wait slice
constexpr unsigned kMaxConsecutiveFailures = 100;            // then the thread gives up

void append_number(std::string& out, std::uint64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, static_cast<std::size_t>(end - buf));
}

void sleep_until(Clock::time_point when) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  // steady_clock is CLOCK_MONOTONIC on Linux/libstdc++.
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace

StartGate::StartGate(std::ptrdiff_t workers, int server_pid)
    : server_pid_(server_pid), barrier_(workers, OnStart{this}) {}

void StartGate::OnStart::operator()() noexcept {
  gate->server_cpu_start_ = process_cpu_seconds(gate->server_pid_);
  gate->client_cpu_start_ = self_cpu_seconds();
  gate->t0_ = Clock::now();
  gate->started_ = true;
}

std::uint64_t WorkerStats::errors() const {
  std::uint64_t total = mismatches;
  for (auto n : unexpected_status) total += n;
  for (auto n : io_errors) total += n;
  return total;
}

Worker::Worker(const Config& cfg, const Endpoint& ep, const KeySpace& keys, WorkerPlan plan,
               StartGate& gate)
    : cfg_(cfg),
      ep_(ep),
      keys_(keys),
      plan_(plan),
      gate_(gate),
      ops_(cfg.workload, plan.seed, plan.thread_index) {
  slots_.resize(plan_.connections);
  verify_ = defaults_for(cfg_.workload.kind).verify;
  if (cfg_.workload.kind == WorkloadKind::kFixedGet) {
    fixed_request_ = "GET " + cfg_.workload.path + " HTTP/1.1\r\nHost: " + ep_.text() + "\r\n\r\n";
  }
  for (auto& slot : slots_) slot.request.reserve(1024);
}

bool Worker::connect_all() {
  for (auto& slot : slots_) {
    std::string err;
    if (!slot.conn.connect(ep_, plan_.timeout, err)) {
      stats_.fatal = true;
      stats_.fatal_message = err;
      return false;
    }
  }
  return true;
}

void Worker::run() {
  // Precise sleeps for the open-loop schedule (the default timer slack is 50 us).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (plan_.pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(plan_.pin_cpu, &set);
    ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
  }
  if (!connect_all()) {
    gate_.arrive_and_drop();
    return;
  }
  // Warm-up: same traffic, not recorded.
  const auto warm_start = Clock::now();
  bool ok = true;
  if (plan_.warmup_time.count() > 0) {
    ok = phase(0, warm_start + plan_.warmup_time, warm_start, false);
  } else if (plan_.warmup_requests > 0) {
    ok = phase(plan_.warmup_requests, warm_start + kWarmupCap, warm_start, false);
  }
  if (!ok) {
    gate_.arrive_and_drop();
    return;
  }
  gate_.arrive_and_wait();
  t0_ = gate_.t0();
  stats_.last_completion = t0_;
  const auto deadline = plan_.requests > 0 ? t0_ + kMeasuredCap : t0_ + plan_.duration;
  phase(plan_.requests, deadline, t0_, true);
  flush_second();
}

bool Worker::phase(std::uint64_t limit, Clock::time_point deadline,
                   Clock::time_point schedule_start, bool measured) {
  const bool open = plan_.rate_rps > 0.0;
  const auto interval =
      std::chrono::nanoseconds(open ? static_cast<std::int64_t>(1e9 / plan_.rate_rps) : 0);
  Clock::time_point next_planned = schedule_start + plan_.schedule_offset;
  std::uint64_t issued = 0;
  std::vector<pollfd> fds;
  std::vector<Slot*> polled;

  for (;;) {
    auto now = Clock::now();
    const bool issuing = (limit == 0 || issued < limit) && now < deadline;
    bool idle_left = false;
    if (issuing) {
      for (auto& slot : slots_) {
        if (slot.busy) continue;
        if (limit != 0 && issued >= limit) break;
        Clock::time_point planned = now;
        if (open) {
          if (next_planned > now) {
            idle_left = true;
            break;
          }
          planned = next_planned;
          next_planned += interval;
        }
        if (!issue(slot, planned, open, measured)) {
          if (stats_.fatal) return false;
          continue;
        }
        ++issued;
        if (slots_.size() > 1) now = Clock::now();
      }
    }
    const bool any_busy =
        std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; });
    if (!any_busy) {
      if (!issuing) {
        if (open && measured) record_unsent(next_planned, interval, deadline, limit, issued);
        return true;
      }
      if (open) sleep_until(std::min(next_planned, deadline));
      continue;
    }
    if (slots_.size() == 1) {
      if (!complete(slots_[0], true, measured)) return false;
      continue;
    }
    // Several connections: wait for whichever answers first, or for the next planned send.
    fds.clear();
    polled.clear();
    for (auto& slot : slots_) {
      if (!slot.busy) continue;
      fds.push_back(pollfd{slot.conn.fd(), POLLIN, 0});
      polled.push_back(&slot);
    }
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(kPollSlice);
    if (open && idle_left && issuing)
      wait = std::max(std::chrono::nanoseconds(0), std::min(wait, next_planned - now));
    timespec ts{static_cast<time_t>(wait.count() / 1'000'000'000),
                static_cast<long>(wait.count() % 1'000'000'000)};
    const int ready = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (ready < 0 && errno != EINTR) return false;
    const auto after = Clock::now();
    for (std::size_t i = 0; i < fds.size(); ++i) {
      Slot& slot = *polled[i];
      if (fds[i].revents != 0) {
        if (!complete(slot, false, measured)) return false;
      } else if (after - slot.sent > plan_.timeout) {
        if (!fail(slot, IoResult::kTimeout, measured)) return false;
      }
    }
  }
}

void Worker::build_request(Slot& slot) {
  if (!fixed_request_.empty()) {
    slot.op = Op{};
    return;
  }
  slot.op = ops_.next();
  std::string& out = slot.request;
  out.clear();
  char key[WorkloadConfig::kMaxKeyBytes];
  const std::size_t key_len = keys_.write_key(slot.op.key, slot.op.cold, key);
  switch (slot.op.type) {
    case OpType::kGet:
      out += "GET /key/";
      break;
    case OpType::kSet:
      out += "PUT /key/";
      break;
    case OpType::kDelete:
      out += "DELETE /key/";
      break;
  }
  out.append(key, key_len);
  out += " HTTP/1.1\r\nHost: ";
  out += ep_.host;
  if (slot.op.type == OpType::kSet) {
    const std::uint32_t version = static_cast<std::uint32_t>(
        mix64((std::uint64_t{plan_.thread_index} << 32) | ++version_counter_));
    keys_.make_value(slot.op.key, version, value_);
    out += "\r\nContent-Length: ";
    append_number(out, value_.size());
    out += "\r\n\r\n";
    out += value_;
  } else {
    out += "\r\n\r\n";
  }
}

bool Worker::issue(Slot& slot, Clock::time_point planned, bool open, bool measured) {
  build_request(slot);
  slot.sent = Clock::now();  // after building the request: latency covers the wire and the server
  slot.planned = open ? planned : slot.sent;
  slot.head = false;
  const std::string& bytes = fixed_request_.empty() ? slot.request : fixed_request_;
  const IoResult r = slot.conn.send_all(bytes);
  if (r != IoResult::kOk) {
    fail(slot, r, measured);
    return false;
  }
  slot.busy = true;
  return true;
}

// The planned sends between `next` and the end of the window that were never issued, each
// recorded at (end - planned): a lower bound of the latency it would have seen.
void Worker::record_unsent(Clock::time_point next, std::chrono::nanoseconds interval,
                           Clock::time_point deadline, std::uint64_t limit, std::uint64_t issued) {
  if (interval.count() <= 0) return;
  for (; next < deadline && (limit == 0 || issued < limit); next += interval, ++issued) {
    stats_.latency.record(static_cast<std::uint64_t>((deadline - next).count()));
    ++stats_.unsent;
  }
}

bool Worker::fail(Slot& slot, IoResult what, bool measured) {
  if (measured) ++stats_.io_errors[static_cast<std::size_t>(what)];
  // A request that timed out took at least this long; leaving it out would flatter the tail.
  if (measured && what == IoResult::kTimeout && slot.busy) {
    const auto waited =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - slot.planned);
    stats_.latency.record(static_cast<std::uint64_t>(std::max<std::int64_t>(waited.count(), 0)));
  }
  slot.busy = false;
  if (++consecutive_failures_ > kMaxConsecutiveFailures) {
    stats_.fatal = true;
    stats_.fatal_message = std::string("connection keeps failing (") + io_result_name(what) + ", " +
                           std::to_string(consecutive_failures_) + " times in a row)";
    return false;
  }
  std::string err;
  if (!slot.conn.connect(ep_, plan_.timeout, err)) {
    stats_.fatal = true;
    stats_.fatal_message =
        std::string("connection lost (") + io_result_name(what) + "), reconnect failed: " + err;
    return false;
  }
  return true;
}

bool Worker::complete(Slot& slot, bool blocking, bool measured) {
  Response response;
  const IoResult r = slot.conn.read_response(blocking, slot.head, response);
  if (r == IoResult::kNeedMore) return true;
  if (r != IoResult::kOk) return fail(slot, r, measured);
  const auto done = Clock::now();
  slot.busy = false;
  consecutive_failures_ = 0;
  if (measured) {
    bool expected = true;
    switch (slot.op.type) {
      case OpType::kGet:
        ++stats_.gets;
        if (response.status == 200) {
          ++stats_.get_hits;
          if (verify_ && !keys_.verify(slot.op.key, response.body)) ++stats_.mismatches;
        } else if (response.status == 404 && fixed_request_.empty()) {
          ++stats_.get_misses;
        } else {
          expected = false;
        }
        break;
      case OpType::kSet:
        ++stats_.sets;
        expected = response.status == 201 || response.status == 204 || response.status == 200;
        break;
      case OpType::kDelete:
        ++stats_.deletes;
        expected = response.status == 204 || response.status == 404 || response.status == 200;
        break;
    }
    if (!expected)
      ++stats_.unexpected_status[static_cast<std::size_t>(response.status) %
                                 WorkerStats::kStatusSlots];
    record(slot, done);
  }
  if (response.close) {
    std::string err;
    if (!slot.conn.connect(ep_, plan_.timeout, err)) {
      stats_.fatal = true;
      stats_.fatal_message = "server closed the connection; reconnect failed: " + err;
      return false;
    }
  }
  return true;
}

void Worker::record(const Slot& slot, Clock::time_point done) {
  const auto from_planned =
      std::chrono::duration_cast<std::chrono::nanoseconds>(done - slot.planned).count();
  const auto from_sent =
      std::chrono::duration_cast<std::chrono::nanoseconds>(done - slot.sent).count();
  const auto corrected = static_cast<std::uint64_t>(std::max<std::int64_t>(from_planned, 0));
  stats_.latency.record(corrected);
  if (plan_.rate_rps > 0.0) {
    stats_.latency_uncorrected.record(
        static_cast<std::uint64_t>(std::max<std::int64_t>(from_sent, 0)));
    const auto lag =
        std::chrono::duration_cast<std::chrono::nanoseconds>(slot.sent - slot.planned).count();
    stats_.send_lag.record(static_cast<std::uint64_t>(std::max<std::int64_t>(lag, 0)));
  }
  ++stats_.completed;
  stats_.last_completion = std::max(stats_.last_completion, done);
  const auto since = std::chrono::duration_cast<std::chrono::seconds>(done - t0_).count();
  const auto second = static_cast<std::uint32_t>(std::max<std::int64_t>(since, 0));
  if (second != current_second_) {
    flush_second();
    current_second_ = second;
  }
  if (second < static_cast<std::uint32_t>(Config::kMaxSeriesSeconds.count()))
    second_hist_.record(corrected);
}

void Worker::flush_second() {
  if (second_hist_.count() == 0) return;
  stats_.series.push_back(SecondSample{current_second_, second_hist_.nonzero_buckets()});
  second_hist_.reset();
}

}  // namespace bench
