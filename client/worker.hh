// One load-generating thread. It owns its connections, its random generator, its operation stream
// and its histograms: nothing on the per-request path is shared with other threads (no locks; the
// one atomic is the Ctrl-C flag, read relaxed once per loop turn, written only by the handler). It
// runs a warm-up (not recorded), meets the other workers at the start gate, then the measured
// phase, closed loop (next request as soon as a connection is free) or open loop (each request has
// a planned send time on a constant-rate schedule; latency is measured from the planned time, as
// wrk2 does, and the uncorrected figure from the actual send is kept as well). Pipelining: each
// connection keeps up to `pipeline` requests outstanding; the free slots are filled by one write
// carrying the requests back to back (closed loop: as many as there are free slots; open loop: the
// sends that are due, up to the free slots, each keeping its own planned time), and every
// complete response a read brought in is parsed before the freed slots are refilled (also the
// responses read while a write is blocked, as soon as they are read).
// With --targets (a Routing), the worker opens its connections to every node and sends each
// operation to the node the consistent-hash ring gives it (placement.hh); see Worker::fill_routed.
// With several connections the thread waits in epoll, registered once per connection, and a
// wake-up handles only the connections that are ready and refills only those with a free slot; a
// count of busy connections replaces a scan, and the timeouts are found by a scan every
// kTimeoutScan (readiness.hh). This file is the connection loop; the open loop's planned send times
// are in open_loop_schedule.hh, and what is recorded, and where, in recorder.hh.
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

#include "client/board_workload.hh"
#include "client/config.hh"
#include "client/histogram.hh"
#include "client/http.hh"
#include "client/placement.hh"
#include "client/readiness.hh"
#include "client/recorder.hh"
#include "client/verify_sampler.hh"
#include "client/workload.hh"

namespace client {

class OpenLoopSchedule;

// Where all workers of one point meet after warm-up; the completion step stamps the common start
// of the measured window and takes the starting CPU samples.
class StartGate {
 public:
  StartGate(std::ptrdiff_t workers, int server_pid);  // 0: no server CPU sampling
  // The CPU of every PID is sampled (one per --targets node, or several summed).
  StartGate(std::ptrdiff_t workers, std::vector<int> server_pids);
  void arrive_and_wait() { barrier_.arrive_and_wait(); }
  void arrive_and_drop() { barrier_.arrive_and_drop(); }
  // Valid once arrive_and_wait() has returned, or after all workers joined.
  bool started() const { return started_; }
  Clock::time_point t0() const { return t0_; }
  // The first PID's sample (nullopt without PIDs); server_cpu_starts(): one per PID.
  std::optional<double> server_cpu_start() const {
    return server_cpu_start_.empty() ? std::nullopt : server_cpu_start_.front();
  }
  const std::vector<std::optional<double>>& server_cpu_starts() const { return server_cpu_start_; }
  std::optional<double> client_cpu_start() const { return client_cpu_start_; }

 private:
  struct OnStart {
    StartGate* gate;
    void operator()() noexcept;
  };
  std::vector<int> server_pids_;
  bool started_ = false;
  Clock::time_point t0_{};
  std::vector<std::optional<double>> server_cpu_start_;  // one per PID
  std::optional<double> client_cpu_start_;
  std::barrier<OnStart> barrier_;
};

struct WorkerPlan {
  unsigned thread_index = 0;
  unsigned nthreads = 1;
  unsigned connections = 1;
  unsigned pipeline = 1;                 // requests outstanding per connection (both loops)
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

// --targets: the nodes (in --targets order) and the ring that places every operation.
struct Routing {
  Routing(std::vector<Endpoint> endpoints, const std::vector<std::string>& names, unsigned weight)
      : endpoints(std::move(endpoints)), ring(names, weight) {}
  std::vector<Endpoint> endpoints;
  HashRing ring;
  // The node of an operation: its key's (key ops, the key's bytes, which need no
  // percent-encoding) or its board's (board ops, the name b<i>).
  std::size_t node_of(const Op& op, const KeySpace& keys) const;
};

class Worker {
 public:
  // routing: --targets (null: every request goes to ep). With a routing, ep is its first node.
  Worker(const Config& cfg, const Endpoint& ep, const KeySpace& keys, WorkerPlan plan,
         StartGate& gate, const Routing* routing = nullptr);
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
    const Pending& front() const { return ring_[head_]; }
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
    Link(unsigned depth, const Endpoint& endpoint, std::uint32_t node_index, VerifyPolicy verify,
         std::uint32_t link_index)
        : pending(depth), sampler(verify), ep(&endpoint), node(node_index), index(link_index) {}
    Connection conn;
    PendingQueue pending;
    VerifySampler sampler;     // --verify: which of this connection's answers are checked in full
    std::string request;       // the bytes of the last write (one or more requests back to back)
    std::uint64_t opened = 0;  // times the connection was re-opened
    const Endpoint* ep;        // where it connects and reconnects
    std::uint32_t node;        // --targets: the node's index (0 otherwise)
    std::uint32_t index;       // in links_ (the epoll events' and issuable_'s name for it)
    // Which connection is registered in the epoll set: opened + 1 once this one is, 0 when none
    // is (a re-opened connection's socket is a new one, registered anew when it is first busy).
    std::uint64_t armed = 0;
  };

  bool connect_all();
  // One phase's loop state: what it issues (the schedule, up to limit until deadline), and what
  // this turn found (now, the issued count, a send not yet due, slots freed during a write).
  struct Turn {
    OpenLoopSchedule& schedule;
    std::uint64_t limit;
    Clock::time_point deadline;
    bool measured;
    Clock::time_point now{};
    std::uint64_t issued = 0;
    bool idle_left = false;  // a link was left idle: its next send is not due yet
    bool refill = false;     // responses parsed right after a write freed slots: do not wait
  };
  bool phase(std::uint64_t limit, Clock::time_point deadline, Clock::time_point schedule_start,
             bool measured);
  // A turn without --targets: every link with a free slot gets one write (as many requests as it
  // has free slots, or the sends that are due).
  void fill_links(Turn& t);
  // A turn with --targets: one operation of lookahead (held_). The next operation is drawn, its
  // node found; it goes out on a link of that node with a free slot, one request per write, or,
  // when that node has none, waits there (the issuing stops for this turn) and goes out first
  // once a response frees a slot of its node. The operation stream is the single-target one.
  void fill_routed(Turn& t);
  // A link of `node` with a free slot, round-robin among the node's links; null when none.
  Link* free_link(std::size_t node);
  // Returns false when the write failed or the server closed the connection meanwhile (the
  // link's requests are then accounted for and the connection re-opened; stats_.fatal says
  // whether the thread must stop). Pipelined, handles the responses that arrive during the write.
  bool issue(Link& link, std::size_t count, Clock::time_point planned, bool open, bool measured);
  // Open loop, pipelined: the sends due at `now` (the first planned at `first`), up to `slots`,
  // with their planned times in due_; how many.
  std::size_t take_due_sends(OpenLoopSchedule& schedule, Clock::time_point first,
                             Clock::time_point now, std::size_t slots);
  // issue() of one given operation (--targets).
  bool issue_op(Link& link, const Op& op, Clock::time_point planned, bool open, bool measured);
  // Stamps the requests [first, pending.size()) of the link and writes bytes (issue's second half).
  // Open loop: request first + i was planned at due_[i] when due_ holds count times, else at
  // `planned`.
  bool send(Link& link, std::string_view bytes, std::size_t first, std::size_t count,
            Clock::time_point planned, bool open, bool measured);
  // A pipelined write failed with `what`: finishes the requests whose responses arrived before
  // the failure, then fails the rest. Returns false on a fatal error.
  bool write_failed(Link& link, IoResult what, bool measured);
  Op append_request(std::string& out) {
    const Op op = ops_.next();
    write_request(op, out, 0);
    return op;
  }
  // Appends op's request (Host: node's host; node 0 without --targets) and records it for
  // --record-trace.
  void write_request(const Op& op, std::string& out, std::size_t node);
  void make_set_value(const Op& op);
  // Returns false on a fatal error. blocking: wait for the first response.
  bool complete(Link& link, bool blocking, bool measured);
  // Handles the complete responses already in the link's receive buffer (no system call).
  // Returns false on a fatal error.
  bool complete_buffered(Link& link, bool measured);
  bool finish(Link& link, const Response& response, bool measured);
  // What the link's next read keeps of the body: the answer to its oldest request is kept only
  // when it will be checked in full (measured, checkable, sampled), else it is only counted.
  BodyUse body_use(const Link& link, bool measured) const;
  // Whether the answer to op has a body to check (under --verify all).
  bool checkable(const Op& op) const;
  // Checks a GET hit: in full when sampled, else its length only.
  void check_value(Link& link, const Op& op, const Response& response);
  // Counts the answer to a board op; returns whether its status was an expected one.
  bool finish_board(Link& link, const Op& op, const Response& response);
  // The answer just finished said "Connection: close": the rest are lost, the link re-opened.
  // False on a fatal error.
  bool closed_by_server(Link& link, bool measured);
  // The link's connection is opened again (after a failure or the server's close).
  bool reopen(Link& link, std::string& err);
  // The connection failed: its outstanding requests are lost (the last `unsent` of them never
  // went out: a timeout does not record those in the histogram). Counts them, re-opens the
  // connection; false when the thread must stop.
  bool fail(Link& link, IoResult what, bool measured, std::size_t unsent = 0);
  // A local failure (errno of the client itself, not of the server): the point cannot go on.
  bool local_failure(const char* what, int err);
  // Waits up to `wait` for the busy links' responses and handles those of the ready links
  // (phase); every kTimeoutScan, fails the busy links silent for --timeout.
  bool await_links(std::chrono::nanoseconds wait, bool measured);
  // Every change to a link's outstanding requests goes through these three, which keep
  // busy_links_ and issuable_ (the links with a free slot) up to date.
  void add_pending(Link& link, const Pending& p);
  Pending pop_pending(Link& link);
  void clear_pending(Link& link);
  // Registers the busy link's connection in the epoll set, once per connection (several links
  // only). False on a failure of the client (stats_.fatal set).
  bool arm(Link& link);
  // An idle link's socket became readable (a close, or bytes nobody asked for): it leaves the
  // epoll set until its next request, as it would have been left unwatched before.
  void disarm(Link& link);

  const Config& cfg_;
  const Endpoint& ep_;
  const Routing* routing_;
  std::optional<Op> held_;  // --targets: the operation drawn but not yet sent
  std::size_t held_node_ = 0;
  std::vector<std::size_t> node_cursor_;  // --targets: round-robin position per node
  const KeySpace& keys_;
  WorkerPlan plan_;
  StartGate& gate_;
  OpGenerator ops_;
  std::vector<Link> links_;
  std::vector<Clock::time_point> due_;  // open loop, pipelined: the planned times of one write
  // Readiness (readiness.hh): the busy links' sockets, the links with a free slot (phase(); the
  // routed phase picks a free link of the operation's node, free_link()), how many links have
  // requests outstanding, and when the next timeout scan is due.
  Epoll epoll_;
  LinkQueue issuable_;
  std::size_t busy_links_ = 0;
  Clock::time_point next_timeout_scan_{};
  Recorder recorder_;
  WorkerStats& stats_ = recorder_.stats();  // the recorder's: counts by operation and error
  bool verify_ = true;
  bool resp_ = false;  // --protocol resp: requests are RESP commands (resp.hh)
  std::uint32_t version_counter_ = 0;
  unsigned consecutive_failures_ = 0;  // connection failures since the last response
  std::string value_;
  std::string fixed_request_;
  // Board workloads: the request builder, the answer checker (null otherwise), and the members
  // every board holds at least (the preload's; 0 without a preload).
  std::optional<BoardRequests> board_requests_;
  // Per node (one without --targets): the Host header, and the board request builder with it.
  std::vector<std::string> hosts_;
  std::vector<BoardRequests> node_board_requests_;
  std::unique_ptr<BoardVerifier> board_verifier_;
  std::uint64_t board_min_members_ = 0;
  bool record_ = false;                  // --record-trace given
  std::vector<std::uint64_t> recorded_;  // grows amortised; merged by the caller after join
};

}  // namespace client
