// http_engine.hh — the transport-free heart of a connection: bytes in, responses out.
//
// It owns everything per connection that survives across requests — the parsed request's storage
// (request_parser.hh: target, the headers the server reads, the body), the output buffer — and
// a RequestParser rebuilt in place for each request (it holds no storage, so no heap). consume()
// parses every complete request in its input, routes it, runs the handler and appends the response;
// pipelined requests are answered in order. The Asio connection, the fuzzer and the allocation test
// all drive this same object, so what they exercise is what the server runs.
//
// The engine is a template over the request-path Variant (variant.hh): V::Dispatch routes and
// V::ValuePath reads values. All four variants are compiled in http_engine.cc; HttpEngine is the
// optimized one, which the tests and the fuzzer use.
//
// Request durations (/metrics): the connection stamps when input arrived (mark_arrival) and,
// after consume(), hands over the clock reading it takes anyway for its deadline
// (record_durations); every request answered in between is timed from that arrival to that
// reading, in the histogram of its route class. The engine only counts answers per class (no
// clock read, no allocation per request). A response that waits on the store is timed by the
// queue when it is ready (response_queue.hh).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/api/handlers.hh"
#include "server/api/variant.hh"
#include "server/server_context.hh"
#include "server/transport/request_parser.hh"
#include "server/transport/response_queue.hh"
#include "server/transport/response_writer.hh"
#include "server/transport/stats.hh"

namespace server {

// Output beyond this stops consume() until the connection has written it (bounds pipelining;
// so does kMaxQueuedResponses for responses that wait on the store).
inline constexpr std::size_t kOutputHighWater = 256 * 1024;
// The high-water mark with --write-batching off: any response stops consume(), so every
// response gets its own write (the baseline). Same loop, same test, no extra branch.
inline constexpr std::size_t kOutputHighWaterUnbatched = 1;
// Storage kept after a request; bigger bodies/outputs are released once answered.
inline constexpr std::size_t kRetainedBufferBytes = 64 * 1024;
static_assert(kUnchargedBytes == kRetainedBufferBytes, "uncharged = what a connection keeps");

template <class V>
class BasicHttpEngine {
 public:
  BasicHttpEngine(ServerContext& ctx, WorkerStats& stats);
  ~BasicHttpEngine();  // gives back what it charged to --max-inflight
  BasicHttpEngine(const BasicHttpEngine&) = delete;
  BasicHttpEngine& operator=(const BasicHttpEngine&) = delete;

  // Parses and answers the complete requests at the front of `input`; returns the bytes used.
  // Stops early when the output reaches the high-water mark (kOutputHighWater, or
  // kOutputHighWaterUnbatched with --write-batching off) or the connection must close; call
  // again with the rest after the output is written.
  std::size_t consume(std::string_view input);

  // The connection's input buffer is full and consume() could not use any of it: answer 400
  // and close (a request line or chunk header longer than the buffer).
  void input_overflow();

  std::string& output() { return out_; }
  // The slots of responses that wait on the store; the connection sets how completions reach
  // its thread (response_queue.hh).
  ResponseQueue& responses() { return queue_; }
  // Some response is still waiting on the store (a completion will resume the connection).
  bool waiting() const { return !queue_.empty(); }
  // Call once output() has been written: clears it (keeping capacity unless it grew large).
  void output_written();

  bool must_close() const { return close_; }
  // A request has started (some of its bytes were consumed) and is not answered yet.
  bool mid_request() const { return parser_ && parser_->got_some(); }
  bool header_complete() const { return parser_ && parser_->is_header_done(); }
  // Requests answered so far on this connection (tells one request's header phase from the next).
  std::size_t answered() const { return answered_; }

  // Request timing (see the top of this file). Without these calls nothing is timed.
  void mark_arrival(std::chrono::steady_clock::time_point at) { arrival_ = at; }
  void record_durations(std::chrono::steady_clock::time_point now);

 private:
  void start_parser();
  void answer();  // the parser holds a complete request
  void count_answer(RouteClass c) {
    ++untimed_[static_cast<std::size_t>(c)];
    ++untimed_total_;
  }
  void answer_parse_error(const boost::beast::error_code& ec);
  // Answers an error for a request whose framing cannot be trusted, then closes.
  void reject(boost::beast::http::status s, std::string_view reason);
  bool header_done();  // framing checks and 100-continue; false if the request was rejected
  // The complete request in the parser must wait for a pending response ahead of it.
  bool held_back() const;
  // Renders what `render` writes in order: into the output, or queued behind pending responses.
  template <class F>
  void respond_in_order(F&& render);
  // --max-inflight: charges n more body bytes if the budget has room; false otherwise.
  bool reserve_body(std::size_t n);
  // Brings the charge to what the connection holds now (output, queued responses, writes
  // waiting on the store, the current body's reservation).
  void settle();

  ServerContext& ctx_;
  WorkerStats& stats_;
  Handlers handlers_;
  Request request_;  // what the parser keeps of the current request
  std::string out_;
  ResponseWriter writer_;
  ResponseQueue queue_;
  std::string queued_out_;  // a response rendered while others are pending, before it is queued
  std::optional<RequestParser> parser_;
  std::size_t answered_ = 0;
  std::size_t header_bytes_ = 0;  // bytes the parser consumed for this request's header
  bool header_checked_ = false;   // header_done() ran for the current request
  bool close_ = false;
  const std::size_t output_high_water_;
  std::chrono::steady_clock::time_point arrival_{};        // of the input being answered
  std::array<std::uint32_t, kRouteClassCount> untimed_{};  // answered, not yet recorded
  std::uint32_t untimed_total_ = 0;
  // Bytes this connection has added to ctx.inflight (queue_ adds what the rendering of a
  // response that waited on the store admits).
  std::size_t charged_ = 0;
  std::size_t body_reserved_ = 0;  // of them, for the body being received
};

using HttpEngine = BasicHttpEngine<OptimizedVariant>;

}  // namespace server
