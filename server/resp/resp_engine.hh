// resp_engine.hh — the Redis-protocol front's heart: bytes in, replies out, with the interface
// the connection drives (connection.hh is a template over its engine: BasicHttpEngine or this).
//
// consume() feeds the parser (resp_parser.hh), looks each complete command up in the command
// table (commands.hh), checks its arity and runs it; its reply goes straight into the output
// buffer, or, behind a reply that waits on the store, into a slot of the same ResponseQueue the
// HTTP front uses (response_queue.hh): pipelined replies keep their order, and a read waits for
// an earlier write of the connection (and the other way round) exactly as HTTP requests do.
// A protocol error is answered ("-ERR Protocol error: ...") and closes the connection, as Redis
// does; so does a bulk string longer than --max-value (the parser's max_bulk).
// --max-inflight: the bytes a command holds while it arrives, replies rendered and not yet
// written, and writes waiting on the store are charged as the HTTP engine charges them
// (settle()); a command whose bytes do not fit is answered "-OOM" and the connection closed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/resp/commands.hh"
#include "server/resp/resp_parser.hh"
#include "server/server_context.hh"
#include "server/transport/response_queue.hh"
#include "server/transport/response_writer.hh"
#include "server/transport/stats.hh"

namespace server::resp {

class RespEngine {
 public:
  RespEngine(ServerContext& ctx, WorkerStats& stats);
  ~RespEngine();  // gives back what it charged to --max-inflight
  RespEngine(const RespEngine&) = delete;
  RespEngine& operator=(const RespEngine&) = delete;

  // Parses and answers the complete commands at the front of `input`; returns the bytes used
  // (all of them unless it stopped: the output reached its high-water mark, a command waits
  // behind pending replies, or the connection must close).
  std::size_t consume(std::string_view input);
  // The connection's input buffer is full and consume() used none of it (cannot happen: the
  // parser copies what a command needs). Answered as a protocol error.
  void input_overflow();

  std::string& output() { return out_; }
  ResponseQueue& responses() { return queue_; }
  bool waiting() const { return !queue_.empty(); }
  void output_written();

  bool must_close() const { return close_; }
  bool mid_request() const { return parser_.got_some() || held_; }
  // A command's array header was read and its arguments are arriving: the idle deadline is
  // the header timeout from the last progress (connection.cc, update_deadline).
  bool header_complete() const { return parser_.held_bytes() > 0; }
  std::size_t answered() const { return answered_; }

  void mark_arrival(std::chrono::steady_clock::time_point at) { arrival_ = at; }
  void record_durations(std::chrono::steady_clock::time_point now);

  const Session& session() const { return session_; }

 private:
  // Runs the command the parser holds; false if it must wait behind a pending reply.
  bool run_command();
  void protocol_error(std::string_view text);
  void settle();

  ServerContext& ctx_;
  WorkerStats& stats_;
  RespParser parser_;
  Session session_;
  std::string out_;
  ResponseWriter writer_;  // the byte sink commands render through (no HTTP is written)
  ResponseQueue queue_;
  std::string queued_out_;
  std::size_t answered_ = 0;
  std::uint32_t untimed_ = 0;
  bool held_ = false;  // a parsed command waits behind a pending reply
  bool close_ = false;
  std::chrono::steady_clock::time_point arrival_{};
  std::size_t charged_ = 0;
};

}  // namespace server::resp
