// One load-generating thread. It owns its connections, its random generator, its operation stream
// and its histograms: nothing on the per-request path is shared with other threads (no locks; the
// one atomic is the Ctrl-C flag, read relaxed once per loop turn, written only by the handler). It
// runs a warm-up (not recorded), meets the other workers at the start gate, then the measured
// phase, closed loop (next request as soon as a connection is free) or open loop (each request has
// a planned send time on a constant-rate schedule; latency is measured from the planned time, as
// wrk2 does, and the uncorrected figure from the actual send is kept as well). Pipelining (closed
// loop): each connection keeps up to `pipeline` requests outstanding; the free slots are filled by
// one write carrying the requests back to back, and every complete response a read brought in is
// parsed before the freed slots are refilled (also the responses read while a write is blocked, as
// soon as they are read).
#pragma once

#include <array>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "board_workload.hh"
#include "config.hh"
#include "histogram.hh"
#include "http.hh"
#include "workload.hh"

namespace bench {

using Clock = std::chrono::steady_clock;

// Where all workers of one point meet after warm-up; the completion step stamps the common start
// of the measured window and takes the starting CPU samples.
class StartGate {
 public:
  StartGate(std::ptrdiff_t workers, int server_pid);
  void arrive_and_wait() { barrier_.arrive_and_wait(); }
  void arrive_and_drop() { barrier_.arrive_and_drop(); }
  // Valid once arrive_and_wait() has returned, or after all workers joined.
  bool started() const { return started_; }
  Clock::time_point t0() const { return t0_; }
  std::optional<double> server_cpu_start() const { return server_cpu_start_; }
  std::optional<double> client_cpu_start() const { return client_cpu_start_; }

 private:
  struct OnStart {
    StartGate* gate;
    void operator()() noexcept;
  };
  int server_pid_;
  bool started_ = false;
  Clock::time_point t0_{};
  std::optional<double> server_cpu_start_;
  std::optional<double> client_cpu_start_;
  std::barrier<OnStart> barrier_;
};

struct WorkerPlan {
  unsigned thread_index = 0;
  unsigned nthreads = 1;
  unsigned connections = 1;
  unsigned pipeline = 1;  // requests outstanding per connection (closed loop; the open loop uses 1)
  std::uint64_t requests = 0;            // measured requests; 0 = until duration
  std::chrono::nanoseconds duration{0};  // measured window when requests == 0
  std::uint64_t warmup_requests = 0;
  std::chrono::nanoseconds warmup_time{0};
  double rate_rps = 0.0;  // this thread's share of the open-loop rate; 0 = closed
  std::chrono::nanoseconds schedule_offset{0};  // staggers the threads' open-loop schedules
  std::chrono::milliseconds timeout{5000};
  std::uint64_t seed = 1;
  int pin_cpu = -1;
};

// Latencies of one second of the measured window, as sparse histogram buckets: the completed
// requests, and, exactly as in the headline histogram, the timed-out requests (at the time they
// waited, in the second they were given up) and the open loop's unsent planned sends (at their
// lower bound, in the window's last second).
struct SecondSample {
  std::uint32_t second = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> buckets;
  std::uint64_t completed = 0, timed_out = 0, unsent = 0;
};

struct WorkerStats {
  static constexpr std::size_t kStatusSlots = 1000;
  Histogram latency;              // closed loop: from send; open loop: from planned send
  Histogram latency_uncorrected;  // open loop only: from the actual send
  Histogram send_lag;             // open loop only: actual send - planned send
  std::uint64_t completed = 0;    // responses received in the measured window
  // Open loop: planned sends the window ended before (every connection was busy). Each is in
  // `latency` at its lower bound, window end - planned time, so an end-of-run stall is not hidden.
  std::uint64_t unsent = 0;
  std::uint64_t gets = 0, get_hits = 0, get_misses = 0, sets = 0, deletes = 0;
  // GET hits whose bytes differ from the derived value; board reads whose answer fails its check
  // (board_workload.hh), and, after the preload, board reads answered 404.
  std::uint64_t mismatches = 0;
  std::array<std::uint64_t, kStatusSlots> unexpected_status{};
  std::array<std::uint64_t, 6> io_errors{};  // indexed by IoResult
  Clock::time_point last_completion{};
  std::vector<SecondSample> series;  // in second order (sorted when the thread ends)
  bool fatal = false;
  std::string fatal_message;
  bool interrupted = false;  // stopped by SIGINT/SIGTERM (interrupt.hh); the point is unfinished

  std::uint64_t errors() const;
};

class Worker {
 public:
  Worker(const Config& cfg, const Endpoint& ep, const KeySpace& keys, WorkerPlan plan,
         StartGate& gate);
  void run();  // the thread body
  const WorkerStats& stats() const { return stats_; }
  // With --record-trace: the key of every request this thread sent, in send order
  // (trace_record.hh encoding); empty otherwise.
  const std::vector<std::uint64_t>& recorded() const { return recorded_; }

 private:
  // One request on the wire: what it asked and when it was (planned to be) sent.
  struct Pending {
    Op op;
    Clock::time_point planned{}, sent{};
  };
  // The requests outstanding on one connection, oldest first (a fixed-capacity ring: no
  // allocation on the request path).
  class PendingQueue {
   public:
    explicit PendingQueue(std::size_t capacity) : ring_(capacity) {}
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    std::size_t free() const { return ring_.size() - size_; }
    Pending& front() { return ring_[head_]; }
    Pending& at(std::size_t i) { return ring_[(head_ + i) % ring_.size()]; }  // 0 = oldest
    void push_back(const Pending& p) { ring_[(head_ + size_++) % ring_.size()] = p; }
    void pop_front() {
      head_ = (head_ + 1) % ring_.size();
      --size_;
    }
    void clear() { head_ = size_ = 0; }

   private:
    std::vector<Pending> ring_;
    std::size_t head_ = 0, size_ = 0;
  };
  // One keep-alive connection, its outstanding requests and its write buffer.
  struct Link {
    explicit Link(unsigned depth) : pending(depth) {}
    Connection conn;
    PendingQueue pending;
    std::string request;       // the bytes of the last write (one or more requests back to back)
    std::uint64_t opened = 0;  // times the connection was re-opened
  };

  bool connect_all();
  bool phase(std::uint64_t limit, Clock::time_point deadline, Clock::time_point schedule_start,
             bool measured);
  // Returns false when the write failed or the server closed the connection meanwhile (the
  // link's requests are then accounted for and the connection re-opened; stats_.fatal says
  // whether the thread must stop). Pipelined, handles the responses that arrive during the write.
  bool issue(Link& link, std::size_t count, Clock::time_point planned, bool open, bool measured);
  // A pipelined write failed with `what`: finishes the requests whose responses arrived before
  // the failure, then fails the rest. Returns false on a fatal error.
  bool write_failed(Link& link, IoResult what, bool measured);
  Op append_request(std::string& out);
  // Returns false on a fatal error. blocking: wait for the first response.
  bool complete(Link& link, bool blocking, bool measured);
  // Handles the complete responses already in the link's receive buffer (no system call).
  // Returns false on a fatal error.
  bool complete_buffered(Link& link, bool measured);
  bool finish(Link& link, const Response& response, bool measured);
  // Counts the answer to a board op; returns whether its status was an expected one.
  bool finish_board(const Op& op, const Response& response);
  // The connection failed: its outstanding requests are lost (the last `unsent` of them never
  // went out: a timeout does not record those in the histogram). Counts them, re-opens the
  // connection; false when the thread must stop.
  bool fail(Link& link, IoResult what, bool measured, std::size_t unsent = 0);
  void record_unsent(Clock::time_point next, std::chrono::nanoseconds interval,
                     Clock::time_point deadline, std::uint64_t limit, std::uint64_t issued);
  void record(const Pending& request, Clock::time_point done);
  enum class Sample { kCompleted, kTimedOut, kUnsent };
  // Records a measured latency in the headline histogram and in the series' second of `at`.
  void record_latency(std::uint64_t ns, Clock::time_point at, Sample kind);
  void flush_second();
  // A local failure (errno of the client itself, not of the server): the point cannot go on.
  bool local_failure(const char* what, int err);

  const Config& cfg_;
  const Endpoint& ep_;
  const KeySpace& keys_;
  WorkerPlan plan_;
  StartGate& gate_;
  OpGenerator ops_;
  std::vector<Link> links_;
  WorkerStats stats_;
  Histogram second_hist_;
  std::uint32_t current_second_ = 0;
  std::array<std::uint64_t, 3> second_counts_{};  // by Sample, for current_second_
  bool verify_ = true;
  std::uint32_t version_counter_ = 0;
  unsigned consecutive_failures_ = 0;  // connection failures since the last response
  std::string value_;
  std::string fixed_request_;
  // Board workloads: the request builder, the answer checker (null otherwise), and the members
  // every board holds at least (the preload's; 0 without a preload).
  std::optional<BoardRequests> board_requests_;
  std::unique_ptr<BoardVerifier> board_verifier_;
  std::uint64_t board_min_members_ = 0;
  bool record_ = false;                  // --record-trace given
  std::vector<std::uint64_t> recorded_;  // grows amortised; merged by the caller after join
  Clock::time_point t0_{};
};

}  // namespace bench
