// response_queue.hh — the ordered response slots of one connection, for requests whose answer
// waits on the store (docs/server.md, "A request that waits").
//
// While nothing is pending the queue is empty and unused: the engine renders straight into its
// output buffer, as it always did (the GET-hit path is unchanged: no allocation, no extra
// syscall). A request that needs the store gets a PendingResponse (made by the API, one object
// that is also the request's completion: reply.hh), which defer() places in request order.
// Whoever finishes the work calls its finished() from any thread: it goes to the connection's
// thread through the route the connection set (completion_inbox.hh batches them per thread),
// is rendered there and marked done.
// Responses to later requests are rendered into slots of their own behind it. drain() (called
// by the engine when the output buffer is not being written) moves every done response at the
// head into the output buffer, so responses on one connection still go out in request order.
//
// Ordering of effects: a request that reads waits (is not run) while an earlier write of the
// same connection is pending, and a write waits while an earlier read is pending (blocks()),
// so a connection's requests take effect in the order it sent them.
// Thread safety: everything except PendingResponse::finished runs on the connection's thread.
// --max-inflight: a response is rendered with the engine's budget (set_budget), so an answer the
// store served is admitted, or refused with a 503, when it is rendered, as a cache hit is.
// Timing (/metrics): the engine tags a deferred response with its request's arrival and route class
// (time_last); drain() records its duration when it moves the rendered response to the output
// (one clock read per drain that moves a tagged one; only responses that waited pay it).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include "server/transport/handler_result.hh"
#include "server/transport/request_timing.hh"
#include "server/transport/response_writer.hh"

namespace server {

// Most requests a connection may have answered-but-unwritten or pending at once; past it the
// engine stops parsing (and the connection stops reading) until some are written: back-pressure.
inline constexpr std::size_t kMaxQueuedResponses = 64;

enum class DeferKind : std::uint8_t {
  read,     // a store read (GET/HEAD miss)
  write,    // a store write (PUT/DELETE)
  barrier,  // both (a reset, a write-behind DELETE that must ask the store first)
};

class CompletionInbox;  // completion_inbox.hh
class PendingResponse;

// The connection, as a finished response's destination: renders it on its own thread.
class SlotSink {
 public:
  virtual void complete_deferred(PendingResponse& response) = 0;

 protected:
  ~SlotSink() = default;
};

// How a finished response reaches its connection's thread: that thread's inbox, and the
// connection by a weak reference (a completion after the connection is gone is dropped). Set by
// the connection, shared by its pending responses.
struct ResponseRoute {
  std::weak_ptr<SlotSink> sink;
  std::shared_ptr<CompletionInbox> inbox;
};

// A response's place among its connection's responses, for a request whose answer waits on the
// store. The API makes it (server's DeferredReply is one, and is also the request's completion:
// one object per waiting request) and registers it with defer(); whoever finishes the work calls
// finished() once, from any thread; the connection's thread then renders it (render()) and
// marks it done.
class PendingResponse : public std::enable_shared_from_this<PendingResponse> {
 public:
  virtual ~PendingResponse() = default;
  // Any thread, once the answer is known: hands this response to its connection's thread
  // (through its route's inbox: defined in completion_inbox.cc).
  void finished();

 protected:
  PendingResponse() = default;
  // On the connection's thread: renders the response, as a handler would have; an error result
  // is rendered as the JSON error body. kDeferred: nothing rendered, the response continues
  // (it started more work whose answer calls finished() again).
  virtual HandlerResult render(ResponseWriter& out) = 0;

 private:
  friend class ResponseQueue;
  friend class CompletionInbox;
  std::string out_;
  bool done_ = false;
  DeferKind kind_ = DeferKind::read;
  bool keep_alive_ = true, http10_ = false, head_ = false;
  std::size_t space_used_ = 0;
  std::size_t held_ = 0;  // bytes a write waiting on the store holds there (hold_last())
  bool timed_ = false;    // time_last() tagged it: drain() records its duration
  RouteClass timing_ = RouteClass::other;
  std::chrono::steady_clock::time_point arrival_{};
  std::shared_ptr<const ResponseRoute> route_;  // set by defer()
};

class ResponseQueue {
 public:
  explicit ResponseQueue(std::string& out) : out_(out) {}
  ResponseQueue(const ResponseQueue&) = delete;
  ResponseQueue& operator=(const ResponseQueue&) = delete;

  // Set by the connection before any request runs: how a finished response reaches its thread.
  void set_route(std::shared_ptr<const ResponseRoute> route) { route_ = std::move(route); }
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

  // Reserves the current request's place for `response` (the writer's per-request flags are
  // kept for the rendering).
  void defer(DeferKind kind, const ResponseWriter& writer,
             std::shared_ptr<PendingResponse> response);
  // A response rendered at once while earlier ones are pending: queued behind them.
  void push_ready(std::string response);
  // Tags the slot defer() reserved last: its request arrived at `arrival`, of class `c`.
  void time_last(std::chrono::steady_clock::time_point arrival, RouteClass c);
  // The slot defer() reserved last is a write whose body (n bytes) waits in the store.
  void hold_last(std::size_t n) {
    if (!slots_.empty() && !slots_.back()->done_) slots_.back()->held_ = n;
  }
  // Bytes the queue holds: rendered responses waiting their turn, and bodies of pending writes
  // (for --max-inflight; walks at most kMaxQueuedResponses slots, only while some are queued).
  std::size_t held_bytes() const {
    std::size_t n = 0;
    for (const auto& s : slots_) n += s->done_ ? s->out_.size() : s->held_;
    return n;
  }
  // Moves the done slots at the head into the output buffer. Call only while the output
  // buffer is not being written. A large rendering (a value read from the store) into an empty
  // output buffer is swapped in, not copied.
  void drain();
  // Renders a response that was finished (the connection's SlotSink calls it on the
  // connection's thread).
  void complete(PendingResponse& response);

  std::string& out_;
  std::deque<std::shared_ptr<PendingResponse>> slots_;
  std::size_t pending_reads_ = 0;
  std::size_t pending_writes_ = 0;
  std::shared_ptr<const ResponseRoute> route_;
  RequestTimings* timings_ = nullptr;
  std::string_view served_by_;
  InflightBudget* budget_ = nullptr;
  std::size_t* charged_ = nullptr;
};

}  // namespace server
