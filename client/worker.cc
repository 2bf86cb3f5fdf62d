// The load-generating thread (see worker.hh).
#include "client/worker.hh"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include "client/cpu.hh"
#include "client/http_request.hh"
#include "client/interrupt.hh"
#include "client/open_loop_schedule.hh"
#include "client/resp.hh"
#include "client/trace_record.hh"

namespace client {
namespace {

constexpr auto kWarmupCap = std::chrono::seconds(600);       // bound on a count-based warm-up
constexpr auto kMeasuredCap = std::chrono::hours(24);        // bound on a count-based point
constexpr auto kPollSlice = std::chrono::milliseconds(100);  // multi-connection wait slice
// How often the busy links are scanned for a response older than --timeout: a timeout is found
// at most this late. One scan reads every link, so it is not done per wake-up.
constexpr auto kTimeoutScan = std::chrono::milliseconds(10);
constexpr std::size_t kMaxEvents = 1024;              // epoll events taken per wait
constexpr unsigned kMaxConsecutiveFailures = 100;     // then the thread gives up
constexpr std::uint64_t kMaxTraceReserve = 1u << 22;  // --record-trace entries reserved up front

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
    : StartGate(workers, server_pid > 0 ? std::vector<int>{server_pid} : std::vector<int>{}) {}

StartGate::StartGate(std::ptrdiff_t workers, std::vector<int> server_pids)
    : server_pids_(std::move(server_pids)),
      server_cpu_start_(server_pids_.size()),
      barrier_(workers, OnStart{this}) {}

void StartGate::OnStart::operator()() noexcept {
  for (std::size_t i = 0; i < gate->server_pids_.size(); ++i)
    gate->server_cpu_start_[i] = process_cpu_seconds(gate->server_pids_[i]);
  gate->client_cpu_start_ = self_cpu_seconds();
  gate->t0_ = Clock::now();
  gate->started_ = true;
}

std::size_t Routing::node_of(const Op& op, const KeySpace& keys) const {
  if (op.type == OpType::kBoardSet || op.type == OpType::kBoardTop ||
      op.type == OpType::kBoardScore) {
    char name[kMaxBoardNameBytes];
    return ring.node_of(std::string_view(name, write_board_name(op.board, name)));
  }
  char key[WorkloadConfig::kMaxKeyBytes];
  return ring.node_of(std::string_view(key, keys.write_key(op.key, op.cold, key)));
}

Worker::Worker(const Config& cfg, const Endpoint& ep, const KeySpace& keys, WorkerPlan plan,
               StartGate& gate, const Routing* routing)
    : cfg_(cfg),
      ep_(ep),
      routing_(routing),
      keys_(keys),
      plan_(plan),
      gate_(gate),
      ops_(cfg.workload, plan.seed, plan.thread_index),
      recorder_(plan.rate_rps > 0.0) {
  if (plan_.pipeline == 0) plan_.pipeline = 1;
  due_.reserve(plan_.pipeline);
  if (routing_ == nullptr) {
    links_.reserve(plan_.connections);
    for (unsigned i = 0; i < plan_.connections; ++i)
      links_.emplace_back(plan_.pipeline, ep_, 0, cfg_.verify, i);
  } else {
    // Grouped by node: node n's links are [n * connections, (n + 1) * connections).
    const std::size_t nodes = routing_->endpoints.size();
    links_.reserve(nodes * plan_.connections);
    for (std::size_t n = 0; n < nodes; ++n)
      for (unsigned i = 0; i < plan_.connections; ++i)
        links_.emplace_back(plan_.pipeline, routing_->endpoints[n], static_cast<std::uint32_t>(n),
                            cfg_.verify, static_cast<std::uint32_t>(links_.size()));
    node_cursor_.assign(nodes, 0);
    stats_.nodes.resize(nodes);
  }
  if (routing_ == nullptr) {
    hosts_.push_back(ep_.host);
  } else {
    for (const auto& node : routing_->endpoints) hosts_.push_back(node.host);
  }
  // The workload's row (workload.hh): what its requests are, and how its answers are checked.
  const WorkloadSpec& spec = workload_spec(cfg_.workload.kind);
  verify_ = spec.check == AnswerCheck::kValue;
  if (spec.api == WorkloadApi::kFixedPath) {
    fixed_request_ = "GET " + cfg_.workload.path + " HTTP/1.1\r\nHost: " + ep_.text() + "\r\n\r\n";
  }
  if (spec.api == WorkloadApi::kBoards) {
    board_requests_.emplace(cfg_.workload, ep_.host);
    for (const auto& host : hosts_) node_board_requests_.emplace_back(cfg_.workload, host);
  }
  if (spec.check == AnswerCheck::kBoardAnswer) {
    board_verifier_ = std::make_unique<BoardVerifier>();
    if (cfg_.preload && spec.preload == Preload::kBoardMembers)
      board_min_members_ = cfg_.workload.members;
  }
  resp_ = cfg_.protocol == Config::Protocol::kResp;
  for (auto& link : links_) {
    link.request.reserve(1024);
    link.conn.use_resp(resp_);
  }
  issuable_ = LinkQueue(links_.size());
  record_ = !cfg_.record_trace_path.empty();
  if (record_ && plan_.requests > 0 && plan_.warmup_time.count() == 0)
    recorded_.reserve(
        std::min<std::uint64_t>(plan_.requests + plan_.warmup_requests, kMaxTraceReserve));
}

bool Worker::connect_all() {
  if (links_.size() > 1 || routing_ != nullptr) {  // a single link blocks in recv instead
    if (const int err = epoll_.open(std::min(links_.size(), kMaxEvents)); err != 0)
      return local_failure("epoll_create1", err);
  }
  for (auto& link : links_) {
    std::string err;
    if (!link.conn.connect(*link.ep, plan_.timeout, err)) {
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
  const auto t0 = gate_.t0();
  recorder_.start(t0);
  const auto deadline = plan_.requests > 0 ? t0 + kMeasuredCap : t0 + plan_.duration;
  phase(plan_.requests, deadline, t0, true);
  recorder_.finish();
}

bool Worker::local_failure(const char* what, int err) {
  stats_.fatal = true;
  stats_.fatal_message = std::string(what) + " failed: " + std::strerror(err) +
                         " (a failure of the client, not of the server)";
  return false;
}

// One phase (warm-up or measured): issue up to `limit` requests (0: no limit) until `deadline`,
// then drain the outstanding ones. Each turn of the loop fills the free slots (fill_links, or
// fill_routed with --targets), then waits for responses and handles all that arrived.
bool Worker::phase(std::uint64_t limit, Clock::time_point deadline,
                   Clock::time_point schedule_start, bool measured) {
  OpenLoopSchedule schedule(plan_.rate_rps, schedule_start, plan_.schedule_offset);
  const bool open = schedule.open();
  Turn turn{schedule, limit, deadline, measured};
  if (routing_ == nullptr)
    for (const auto& link : links_)
      if (link.pending.free() > 0) issuable_.push(link.index);

  for (;;) {
    if (interrupted()) {
      stats_.interrupted = true;
      return false;
    }
    turn.now = Clock::now();
    const bool issuing = (limit == 0 || turn.issued < limit) && turn.now < deadline;
    turn.idle_left = turn.refill = false;
    if (issuing) {
      if (routing_ == nullptr)
        fill_links(turn);
      else
        fill_routed(turn);
      if (stats_.fatal) return false;
    }
    if (busy_links_ == 0) {
      if (!issuing) {
        if (open && measured) schedule.record_unsent(deadline, limit, turn.issued, recorder_);
        return true;
      }
      if (open) sleep_until(std::min(schedule.next(), deadline));
      continue;
    }
    if (routing_ == nullptr && links_.size() == 1) {
      if (turn.refill) continue;
      if (!complete(links_[0], true, measured)) return false;
      continue;
    }
    // Several connections: wait for whichever answers first, or for the next planned send.
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(kPollSlice);
    if (open && turn.idle_left && issuing)
      wait = std::max(std::chrono::nanoseconds(0), std::min(wait, schedule.next() - turn.now));
    if (turn.refill) wait = std::chrono::nanoseconds(0);
    if (!await_links(wait, measured)) return false;
  }
}

// The links with a free slot, first freed first; each once per turn (a link freed again during
// its own write is queued for the next turn).
void Worker::fill_links(Turn& t) {
  const bool open = t.schedule.open();
  for (std::size_t left = issuable_.size(); left > 0; --left) {
    if (t.limit != 0 && t.issued >= t.limit) break;
    Link& link = links_[issuable_.front()];
    std::size_t count = link.pending.free();
    if (t.limit != 0)
      count = static_cast<std::size_t>(std::min<std::uint64_t>(count, t.limit - t.issued));
    if (count == 0) {  // full: queued again when a response frees a slot
      issuable_.pop();
      continue;
    }
    const auto planned = t.schedule.take_due(t.now);
    if (!planned) {
      t.idle_left = true;
      break;
    }
    issuable_.pop();
    if (open && count > 1) count = take_due_sends(t.schedule, *planned, t.now, count);
    const std::size_t outstanding = link.pending.size() + count;
    const bool written = issue(link, count, *planned, open, t.measured);
    if (stats_.fatal) return;
    if (plan_.pipeline > 1) {
      // A batch whose write failed is issued all the same: part of it may have reached the
      // server, and each of its requests is accounted for (answered, or an error). Sending it
      // again would exceed -n. (--pipeline 1 replaces a request whose write failed.)
      t.issued += count;
      // Responses handled during the write (or a re-opened connection) freed slots.
      if (link.pending.size() < outstanding) t.refill = true;
    } else if (written) {
      t.issued += count;
    }
    if (link.pending.free() > 0) issuable_.push(link.index);  // e.g. fewer sends were due
    if (!written) continue;
    if (links_.size() > 1) t.now = Clock::now();
  }
}

// Waits up to `wait` for whichever busy link answers first and handles the links that are ready
// (every response that arrived on each); every kTimeoutScan, a busy link silent for longer than
// the timeout fails. Returns false on a fatal error.
bool Worker::await_links(std::chrono::nanoseconds wait, bool measured) {
  auto now = Clock::now();
  if (next_timeout_scan_ == Clock::time_point{}) next_timeout_scan_ = now + kTimeoutScan;
  wait = std::min(wait, std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::max(next_timeout_scan_ - now, Clock::duration::zero())));
  const int ready = epoll_.wait(wait);
  if (ready < 0 && errno != EINTR) return local_failure("epoll_wait", errno);
  for (int i = 0; i < ready; ++i) {
    Link& link = links_[epoll_.link(i)];
    if (link.pending.empty()) {
      disarm(link);
      continue;
    }
    if (!complete(link, false, measured)) return false;
  }
  now = Clock::now();
  if (now < next_timeout_scan_) return true;
  next_timeout_scan_ = now + kTimeoutScan;
  for (auto& link : links_) {
    if (!link.pending.empty() && now - link.pending.front().sent > plan_.timeout) {
      if (!fail(link, IoResult::kTimeout, measured)) return false;
    }
  }
  return true;
}

void Worker::add_pending(Link& link, const Pending& p) {
  if (link.pending.empty()) ++busy_links_;
  link.pending.push_back(p);
}

Worker::Pending Worker::pop_pending(Link& link) {
  const Pending p = link.pending.front();
  link.pending.pop_front();
  if (link.pending.empty()) --busy_links_;
  if (routing_ == nullptr) issuable_.push(link.index);
  return p;
}

void Worker::clear_pending(Link& link) {
  if (!link.pending.empty()) --busy_links_;
  link.pending.clear();
  if (routing_ == nullptr) issuable_.push(link.index);
}

bool Worker::arm(Link& link) {
  if (!epoll_.is_open() || link.armed == link.opened + 1 || !link.conn.is_open()) return true;
  if (const int err = epoll_.add(link.conn.fd(), link.index); err != 0)
    return local_failure("epoll_ctl", err);
  link.armed = link.opened + 1;
  return true;
}

void Worker::disarm(Link& link) {
  if (link.armed == link.opened + 1) epoll_.remove(link.conn.fd());
  link.armed = 0;
}

Worker::Link* Worker::free_link(std::size_t node) {
  const std::size_t per = plan_.connections;
  std::size_t& cursor = node_cursor_[node];
  for (std::size_t k = 0; k < per; ++k) {
    Link& link = links_[node * per + (cursor + k) % per];
    if (link.pending.free() > 0) {
      cursor = (cursor + k + 1) % per;
      return &link;
    }
  }
  return nullptr;
}

// phase()'s turn with --targets (see worker.hh). The operation stream stays the single-target
// one: an operation whose node has no free slot is held (held_, kept across the warm-up/measured
// boundary) and nothing else is issued before it. In the open loop it keeps the planned time it
// was due at, so the time it waited for its node counts as schedule lag, as it should. One
// request per write, whatever --pipeline (which still bounds the requests outstanding per link).
void Worker::fill_routed(Turn& t) {
  const bool open = t.schedule.open();
  while ((t.limit == 0 || t.issued < t.limit) && t.now < t.deadline) {
    if (!held_) {
      held_ = ops_.next();
      held_node_ = routing_->node_of(*held_, keys_);
    }
    Link* link = free_link(held_node_);
    if (link == nullptr) break;  // its node's links are all busy: the operation waits
    const auto planned = t.schedule.take_due(t.now);
    if (!planned) {
      t.idle_left = true;
      break;
    }
    const Op op = *held_;
    held_.reset();
    const std::size_t outstanding = link->pending.size() + 1;
    const bool written = issue_op(*link, op, *planned, open, t.measured);
    if (stats_.fatal) return;
    // As in fill_links(): with --pipeline above 1 a request whose write failed is accounted for
    // (it may have reached the node); with 1 it is replaced by the next operation.
    if (plan_.pipeline > 1) {
      ++t.issued;
      if (link->pending.size() < outstanding) t.refill = true;
    } else if (written) {
      ++t.issued;
    }
    t.now = Clock::now();
  }
}

// Appends op's request to out (Host: the node's host with --targets, else the server's).
void Worker::write_request(const Op& op, std::string& out, std::size_t node) {
  if (board_requests_) {
    node_board_requests_[node].append(out, op);
    return;
  }
  if (record_) recorded_.push_back(trace_entry(op));
  char key[WorkloadConfig::kMaxKeyBytes];
  const std::size_t key_len = keys_.write_key(op.key, op.cold, key);
  if (op.type == OpType::kSet) make_set_value(op);
  if (resp_) {
    append_resp_key_command(out, op.type, {key, key_len}, value_, cfg_.ttl_seconds);
  } else {
    append_http_key_request(out, op.type, {key, key_len}, hosts_[node], value_, cfg_.ttl_seconds);
  }
}

// A SET's value into value_: derived from its key and a fresh version, so a GET can check it.
void Worker::make_set_value(const Op& op) {
  const std::uint32_t version = static_cast<std::uint32_t>(
      mix64((std::uint64_t{plan_.thread_index} << 32) | ++version_counter_));
  keys_.make_value(op.key, version, value_);
}

// Sends `count` requests (at most the link's free slots) back to back in one write.
// Open loop, pipelined: the first due send (planned at `first`) and the others already due at
// `now`, up to `slots` of them, into due_ (one planned time each); how many.
std::size_t Worker::take_due_sends(OpenLoopSchedule& schedule, Clock::time_point first,
                                   Clock::time_point now, std::size_t slots) {
  due_.clear();
  due_.push_back(first);
  while (due_.size() < slots) {
    const auto more = schedule.take_due(now);
    if (!more) break;
    due_.push_back(*more);
  }
  return due_.size();
}

bool Worker::issue(Link& link, std::size_t count, Clock::time_point planned, bool open,
                   bool measured) {
  const std::size_t first = link.pending.size();
  std::string_view bytes = fixed_request_;
  if (!fixed_request_.empty() && count == 1) {
    add_pending(link, Pending{});
  } else {
    link.request.clear();
    for (std::size_t i = 0; i < count; ++i) {
      Pending p;
      if (fixed_request_.empty())
        p.op = append_request(link.request);
      else
        link.request += fixed_request_;
      add_pending(link, p);
    }
    bytes = link.request;
  }
  return send(link, bytes, first, count, planned, open, measured);
}

bool Worker::issue_op(Link& link, const Op& op, Clock::time_point planned, bool open,
                      bool measured) {
  const std::size_t first = link.pending.size();
  link.request.clear();
  write_request(op, link.request, link.node);
  Pending p;
  p.op = op;
  add_pending(link, p);
  return send(link, link.request, first, 1, planned, open, measured);
}

bool Worker::send(Link& link, std::string_view bytes, std::size_t first, std::size_t count,
                  Clock::time_point planned, bool open, bool measured) {
  if (!arm(link)) return false;  // stats_.fatal is set
  // Stamped after building the requests: latency covers the wire and the server.
  const auto sent = Clock::now();
  const bool each = open && due_.size() == count;
  for (std::size_t i = first; i < link.pending.size(); ++i) {
    link.pending.at(i).sent = sent;
    link.pending.at(i).planned = !open ? sent : each ? due_[i - first] : planned;
  }
  due_.clear();
  if (plan_.pipeline == 1) {
    const IoResult r = link.conn.send_all(bytes);
    if (r != IoResult::kOk) {
      fail(link, r, measured, count);
      return false;
    }
    return true;
  }
  for (;;) {
    const IoResult r = link.conn.send_all_reading(bytes, plan_.timeout);
    if (r == IoResult::kOk) return true;
    if (r != IoResult::kNeedMore) {
      write_failed(link, r, measured);
      return false;
    }
    // The write is blocked and responses came in: they end now (latency to the parsed response),
    // not when the write is done.
    const auto opened = link.opened;
    if (!complete_buffered(link, measured)) return false;
    if (link.opened != opened) return false;  // the server closed it: the batch is accounted for
  }
}

// While the write was blocked the server answered (e.g. answered, then closed): the responses
// already buffered and those the socket still holds answer the oldest requests, which were served.
// They are finished as usual; only the requests left after them are lost. A timed-out batch is
// recorded at the time it waited, like any timed-out request.
bool Worker::write_failed(Link& link, IoResult what, bool measured) {
  Response response;
  while (!link.pending.empty()) {
    const IoResult r = link.conn.read_response(false, false, response, body_use(link, measured));
    if (r == IoResult::kBadResponse) what = r;
    if (r != IoResult::kOk) break;
    const bool closed = response.close;
    if (!finish(link, response, measured)) return false;
    if (closed) return true;  // finish() counted the rest and re-opened the connection
  }
  return fail(link, what, measured);
}

bool Worker::fail(Link& link, IoResult what, bool measured, std::size_t unsent) {
  if (what == IoResult::kError && is_local_failure(link.conn.last_errno()))
    return local_failure("a socket call", link.conn.last_errno());
  const std::size_t lost = link.pending.size();
  if (measured) {
    stats_.io_errors[static_cast<std::size_t>(what)] += lost;
    if (routing_ != nullptr)
      stats_.nodes[link.node].io_errors[static_cast<std::size_t>(what)] += lost;
  }
  // A request that timed out took at least this long; leaving it out would flatter the tail.
  if (measured && what == IoResult::kTimeout) {
    const auto now = Clock::now();
    for (std::size_t i = 0; i + unsent < lost; ++i) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - link.pending.at(i).planned);
      const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(waited.count(), 0));
      recorder_.latency(ns, now, Recorder::Sample::kTimedOut);
      if (routing_ != nullptr) stats_.nodes[link.node].latency.record(ns);
    }
  }
  clear_pending(link);
  if (++consecutive_failures_ > kMaxConsecutiveFailures) {
    stats_.fatal = true;
    stats_.fatal_message = std::string("connection keeps failing (") + io_result_name(what) + ", " +
                           std::to_string(consecutive_failures_) + " times in a row)";
    return false;
  }
  std::string err;
  if (!reopen(link, err)) {
    stats_.fatal = true;
    stats_.fatal_message =
        std::string("connection lost (") + io_result_name(what) + "), reconnect failed: " + err;
    return false;
  }
  return true;
}

// Reads the link's next response (waiting for it when blocking), then every further complete
// response that the same read brought in, without another system call.
bool Worker::complete(Link& link, bool blocking, bool measured) {
  Response response;
  IoResult r = link.conn.read_response(blocking, false, response, body_use(link, measured));
  for (;;) {
    if (r == IoResult::kNeedMore) return true;
    if (r != IoResult::kOk) return fail(link, r, measured);
    if (!finish(link, response, measured)) return false;
    if (link.pending.empty()) return true;
    r = link.conn.buffered_response(false, response, body_use(link, measured));
  }
}

bool Worker::complete_buffered(Link& link, bool measured) {
  Response response;
  while (!link.pending.empty()) {
    const IoResult r = link.conn.buffered_response(false, response, body_use(link, measured));
    if (r == IoResult::kNeedMore) return true;
    if (r != IoResult::kOk) return fail(link, r, measured);
    if (!finish(link, response, measured)) return false;
  }
  return true;
}

// One response arrived for the link's oldest request: check it, record it.
bool Worker::finish(Link& link, const Response& response, bool measured) {
  const auto done = Clock::now();
  const Pending request = pop_pending(link);
  consecutive_failures_ = 0;
  if (measured) {
    const std::uint64_t mismatches_before = stats_.mismatches;
    bool expected = true;
    switch (request.op.type) {
      case OpType::kGet:
        ++stats_.gets;
        if (response.status == 200) {
          ++stats_.get_hits;
          if (verify_) check_value(link, request.op, response);
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
      case OpType::kBoardSet:
      case OpType::kBoardTop:
      case OpType::kBoardScore:
        expected = finish_board(link, request.op, response);
        break;
    }
    const std::size_t status_slot =
        static_cast<std::size_t>(response.status) % WorkerStats::kStatusSlots;
    if (!expected) ++stats_.unexpected_status[status_slot];
    const std::uint64_t latency = recorder_.completed(request.planned, request.sent, done);
    if (routing_ != nullptr) {  // the one per-request branch of --targets here
      NodeStats& node = stats_.nodes[link.node];
      node.latency.record(latency);
      ++node.completed;
      node.mismatches += stats_.mismatches - mismatches_before;
      if (!expected) ++node.unexpected_status[status_slot];
    }
  }
  return !response.close || closed_by_server(link, measured);
}

// The server answers nothing after a "Connection: close" response: the requests behind it are
// lost, and the connection is opened again.
bool Worker::closed_by_server(Link& link, bool measured) {
  if (measured) {
    stats_.io_errors[static_cast<std::size_t>(IoResult::kClosed)] += link.pending.size();
    if (routing_ != nullptr)
      stats_.nodes[link.node].io_errors[static_cast<std::size_t>(IoResult::kClosed)] +=
          link.pending.size();
  }
  clear_pending(link);
  std::string err;
  if (!reopen(link, err)) {
    stats_.fatal = true;
    stats_.fatal_message = "server closed the connection; reconnect failed: " + err;
    return false;
  }
  return true;
}

BodyUse Worker::body_use(const Link& link, bool measured) const {
  if (!measured || link.pending.empty()) return BodyUse::kDiscard;
  const bool full = checkable(link.pending.front().op) && link.sampler.next_sampled();
  return full ? BodyUse::kKeepIfOk : BodyUse::kDiscard;
}

bool Worker::checkable(const Op& op) const {
  if (board_verifier_) return op.type == OpType::kBoardTop || op.type == OpType::kBoardScore;
  return verify_ && op.type == OpType::kGet;
}

// A GET hit of a verifying workload. Sampled (body_use kept it): every byte against the derived
// value; otherwise the length the server framed against the value's size, which needs no byte.
void Worker::check_value(Link& link, const Op& op, const Response& response) {
  const bool full = link.sampler.next_sampled();
  link.sampler.advance();
  if (full) {
    ++stats_.verified;
    if (!keys_.verify(op.key, response.body)) ++stats_.mismatches;
  } else if (response.body_bytes != keys_.value_size(op.key)) {
    ++stats_.mismatches;
  }
}

// Updates count as sets (200 or 201 expected; 507, a full board memory budget, is an unexpected
// status like any other). Reads count as gets: 200 is a hit and its body is checked when the
// sampler picks it (--verify), 404 a miss, which after the preload is also a verification failure
// (every member and board was stored).
bool Worker::finish_board(Link& link, const Op& op, const Response& response) {
  if (op.type == OpType::kBoardSet) {
    ++stats_.sets;
    return response.status == 200 || response.status == 201;
  }
  ++stats_.gets;
  if (response.status == 404) {
    ++stats_.get_misses;
    if (board_min_members_ > 0) ++stats_.mismatches;
    return true;
  }
  if (response.status != 200) return false;
  ++stats_.get_hits;
  if (!board_verifier_) return true;  // a workload that checks the status only
  const bool full = link.sampler.next_sampled();
  link.sampler.advance();
  if (!full) return true;
  ++stats_.verified;
  char name[kMaxBoardNameBytes];
  BoardVerdict verdict;
  if (op.type == OpType::kBoardTop) {
    verdict = board_verifier_->top(response.body,
                                   std::string_view(name, write_board_name(op.board, name)),
                                   cfg_.workload.top_n, board_min_members_);
  } else {
    verdict = board_verifier_->member(response.body,
                                      std::string_view(name, write_member_name(op.key, name)));
  }
  if (verdict != BoardVerdict::kOk) ++stats_.mismatches;
  return true;
}

bool Worker::reopen(Link& link, std::string& err) {
  ++link.opened;
  link.sampler.restart();  // a new connection: its first answer is checked in full
  return link.conn.connect(*link.ep, plan_.timeout, err);
}

}  // namespace client
