// response_queue.hh — the ordered response slots of one connection, for requests whose answer
// waits on the store (docs/server.md, "A request that waits").
//
// While nothing is pending the queue is empty and unused: the engine renders straight into its
// output buffer, as it always did (the GET-hit path is unchanged: no allocation, no extra
// syscall). A handler that needs the store calls defer(): that reserves a slot in request order
// and returns a DeferredResponse, which the store side finishes later from any thread. finish()
// stores the rendering in the slot and hands the slot to the connection's thread through its
// DeliveryRoute (set by the connection: completion_inbox.hh batches them per worker thread);
// the slot is rendered there and marked done.
// Responses to later requests are rendered into slots of their own behind it. drain() (called
// by the engine when the output buffer is not being written) moves every done slot at the head
// into the output buffer, so responses on one connection still go out in request order.
//
// Ordering of effects: a request that reads waits (is not run) while an earlier write of the
// same connection is pending, and a write waits while an earlier read is pending (blocks()),
// so a connection's requests take effect in the order it sent them.
// Thread safety: everything except DeferredResponse::finish runs on the connection's thread.
// --max-inflight: a slot is rendered with the engine's budget (set_budget), so an answer the
// store served is admitted, or refused with a 503, when it is rendered, as a cache hit is.
// Timing (/metrics): the engine tags a deferred slot with its request's arrival and route class
// (time_last); drain() records its duration when it moves the rendered response to the output
// (one clock read per drain that moves a tagged slot; only responses that waited pay it).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "server/handler_result.hh"
#include "server/request_timing.hh"
#include "server/response_writer.hh"

namespace server {

// Most requests a connection may have answered-but-unwritten or pending at once; past it the
// engine stops parsing (and the connection stops reading) until some are written: back-pressure.
inline constexpr std::size_t kMaxQueuedResponses = 64;

enum class DeferKind : std::uint8_t {
  read,     // a store read (GET/HEAD miss)
  write,    // a store write (PUT/DELETE)
  barrier,  // both (a reset, a write-behind DELETE that must ask the store first)
};

// Renders a deferred response on the connection's thread, as a handler would have; an error
// result is rendered as the JSON error body.
using Render = std::function<HandlerResult(ResponseWriter&)>;

class ResponseQueue;
namespace detail {
struct Slot {
  std::string out;
  bool done = false;
  DeferKind kind = DeferKind::read;
  bool keep_alive = true, http10 = false, head = false;
  std::size_t space_used = 0;
  std::size_t held = 0;  // bytes a write waiting on the store holds there (hold_last())
  bool timed = false;    // time_last() tagged it: drain() records its duration
  RouteClass timing = RouteClass::other;
  std::chrono::steady_clock::time_point arrival{};
  Render render;  // set by finish() on the store's side, run on the connection's thread
};
}  // namespace detail

// The connection, as a finished slot's destination: renders the slot on its own thread.
class SlotSink {
 public:
  virtual void complete_deferred(detail::Slot& slot) = 0;

 protected:
  ~SlotSink() = default;
};

// How a finished slot reaches its connection's thread (set by the connection, shared by its
// DeferredResponses so that a completion after the connection is gone still has a way: the
// slot is then dropped). deliver() is called from any thread.
class DeliveryRoute {
 public:
  virtual ~DeliveryRoute() = default;
  virtual void deliver(std::shared_ptr<detail::Slot> slot) = 0;
};

// The handle a handler hands to the store side. finish() must be called exactly once (a
// DeferredResponse destroyed unfinished answers 500, so a lost completion cannot hang a
// connection).
class DeferredResponse {
 public:
  DeferredResponse() = default;
  DeferredResponse(DeferredResponse&&) noexcept = default;
  DeferredResponse& operator=(DeferredResponse&&) noexcept = default;
  DeferredResponse(const DeferredResponse&) = delete;
  DeferredResponse& operator=(const DeferredResponse&) = delete;
  ~DeferredResponse();

  void finish(Render render);  // any thread

 private:
  friend class ResponseQueue;
  DeferredResponse(std::shared_ptr<detail::Slot> slot, std::shared_ptr<DeliveryRoute> route)
      : slot_(std::move(slot)), route_(std::move(route)) {}
  std::shared_ptr<detail::Slot> slot_;
  std::shared_ptr<DeliveryRoute> route_;
};

class ResponseQueue {
 public:
  explicit ResponseQueue(std::string& out) : out_(out) {}
  ResponseQueue(const ResponseQueue&) = delete;
  ResponseQueue& operator=(const ResponseQueue&) = delete;

  // Set by the connection before any request runs: how to reach its thread, and what to do
  // there after a slot completes (resume writing).
  void set_route(std::shared_ptr<DeliveryRoute> route) { route_ = std::move(route); }
  void set_on_complete(std::function<void()> f) { on_complete_ = std::move(f); }
  bool can_defer() const { return route_ != nullptr; }
  // Where drain() records the durations of tagged slots (the worker's histograms).
  void set_timings(RequestTimings* timings) { timings_ = timings; }
  // --served-by: the header line every deferred response carries too (response_writer.hh).
  void set_served_by(std::string_view line) { served_by_ = line; }
  // --max-inflight: a deferred response's body is admitted when it is rendered (complete()),
  // against the same budget as an immediate one (ResponseWriter::admit): refused, the handler's
  // render answers 503 instead. What is admitted is added to *charged, the engine's count of
  // what it has charged (http_engine.hh), which its settle() reconciles with what it holds.
  void set_budget(InflightBudget* budget, std::size_t* charged) {
    budget_ = budget;
    charged_ = charged;
  }

  bool empty() const { return slots_.empty(); }
  bool full() const { return slots_.size() >= kMaxQueuedResponses; }
  // Must a request of this kind wait for the pending ones ahead of it?
  bool blocks(bool is_write) const { return is_write ? pending_reads_ > 0 : pending_writes_ > 0; }

  // Reserves the current request's slot (the writer's per-request flags are kept for the
  // rendering).
  DeferredResponse defer(DeferKind kind, const ResponseWriter& writer);
  // A response rendered at once while earlier ones are pending: queued behind them.
  void push_ready(std::string response);
  // Tags the slot defer() reserved last: its request arrived at `arrival`, of class `c`.
  void time_last(std::chrono::steady_clock::time_point arrival, RouteClass c);
  // The slot defer() reserved last is a write whose body (n bytes) waits in the store.
  void hold_last(std::size_t n) {
    if (!slots_.empty() && !slots_.back()->done) slots_.back()->held = n;
  }
  // Bytes the queue holds: rendered responses waiting their turn, and bodies of pending writes
  // (for --max-inflight; walks at most kMaxQueuedResponses slots, only while some are queued).
  std::size_t held_bytes() const {
    std::size_t n = 0;
    for (const auto& s : slots_) n += s->done ? s->out.size() : s->held;
    return n;
  }
  // Moves the done slots at the head into the output buffer. Call only while the output
  // buffer is not being written. A large rendering (a value read from the store) into an empty
  // output buffer is swapped in, not copied.
  void drain();
  // Renders a slot its DeferredResponse finished (the connection's SlotSink calls it on the
  // connection's thread).
  void complete(detail::Slot& slot);

  std::string& out_;
  std::deque<std::shared_ptr<detail::Slot>> slots_;
  std::size_t pending_reads_ = 0;
  std::size_t pending_writes_ = 0;
  std::shared_ptr<DeliveryRoute> route_;
  std::function<void()> on_complete_;
  RequestTimings* timings_ = nullptr;
  std::string_view served_by_;
  InflightBudget* budget_ = nullptr;
  std::size_t* charged_ = nullptr;
};

}  // namespace server
