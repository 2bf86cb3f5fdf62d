// connection.cc — see connection.hh.
#include "server/transport/connection.hh"

#include "server/resp/resp_engine.hh"
#include "server/transport/completion_inbox.hh"

#include <boost/asio/post.hpp>
#include <functional>

namespace server {
namespace asio = boost::asio;
using boost::system::error_code;

template <class Engine>
Connection<Engine>::Connection(asio::ip::tcp::socket socket, ServerContext& ctx, WorkerStats& stats,
                               ConnectionLimit::Admission admission)
    : admission_(std::move(admission)),
      socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      input_(kInputLimitBytes),
      engine_(ctx, stats),
      ctx_(ctx),
      stats_(stats) {
  WorkerStats::bump(stats_.connections_opened);
}

template <class Engine>
Connection<Engine>::~Connection() {
  set_busy(false);
  WorkerStats::bump(stats_.connections_closed);
}

template <class Engine>
void Connection<Engine>::start() {
  // A response that waited on the store is finished on a store thread; its rendering hops to
  // this connection's thread through the worker's inbox (per-thread model: a group's answers
  // cross in one post), or an inbox of its own over its strand (shared model). The weak
  // reference lets a closed connection go: the completion is then dropped.
  std::shared_ptr<CompletionInbox> inbox;
  if (CompletionInbox* current = CompletionInbox::current(); current != nullptr) {
    inbox = current->shared_from_this();
  } else {
    inbox = std::make_shared<CompletionInbox>(socket_.get_executor());
  }
  engine_.responses().set_route(std::make_shared<const ResponseRoute>(
      ResponseRoute{this->weak_from_this(), std::move(inbox)}));
  error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  update_deadline(clock::now());
  arm_timer(deadline_);
  read();
}

template <class Engine>
void Connection<Engine>::read() {
  if (ctx_.stopping.load(std::memory_order_relaxed) && !busy_) return close();
  const std::size_t room = input_.max_size() - input_.size();
  if (room == 0) {  // the parser needs more bytes than the buffer can hold
    engine_.input_overflow();
    const auto now = clock::now();
    engine_.record_durations(now);  // the 400 it answered
    return write(now);
  }
  reading_ = true;
  socket_.async_read_some(input_.prepare(std::min(room, kReadChunkBytes)),
                          [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                            self->on_read(ec, n);
                          });
}

template <class Engine>
void Connection<Engine>::on_read(const error_code& ec, std::size_t n) {
  reading_ = false;
  if (ec) return close();  // EOF, reset, or cancelled by a timeout
  WorkerStats::bump(stats_.reads);
  input_.commit(n);
  engine_.mark_arrival(clock::now());
  process();
}

template <class Engine>
void Connection<Engine>::process() {
  const auto data = input_.data();
  const std::size_t used =
      engine_.consume(std::string_view(static_cast<const char*>(data.data()), data.size()));
  input_.consume(used);
  set_busy(engine_.mid_request() || input_.size() > 0 || !engine_.output().empty() ||
           engine_.waiting());
  const auto now = clock::now();  // ends the answered requests' timing, and sets the deadline
  engine_.record_durations(now);
  if (!engine_.output().empty()) return write(now);
  if (engine_.waiting()) return update_deadline(now);  // on_response_ready() resumes
  if (engine_.must_close()) return linger();
  update_deadline(now);
  read();
}

// A response that waited on the store is ready (on this thread). While reading or writing, the
// chain in progress picks it up (on_write → process); otherwise the connection was waiting.
template <class Engine>
void Connection<Engine>::on_response_ready() {
  if (closed_ || lingering_ || reading_ || writing_) return;
  process();
}

template <class Engine>
void Connection<Engine>::write(clock::time_point now) {
  WorkerStats::bump(stats_.writes);
  writing_ = true;
  written_ = 0;
  write_some(now);
}

// A response's deadline is the idle timeout from its last progress, not the one left by the
// read (which could be about to expire): a large value to a slow reader lives while bytes
// move, and a reader that stops reading is cut off one idle timeout after it stopped. A small
// response goes out in one write_some, as async_write would have sent it.
template <class Engine>
void Connection<Engine>::write_some(clock::time_point now) {
  deadline_ = now + ctx_.config.idle_timeout;
  if (deadline_ < timer_.expiry()) arm_timer(deadline_);
  const std::string& out = engine_.output();
  socket_.async_write_some(asio::buffer(out.data() + written_, out.size() - written_),
                           [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                             self->on_write_some(ec, n);
                           });
}

template <class Engine>
void Connection<Engine>::on_write_some(const error_code& ec, std::size_t n) {
  if (ec) return close();
  written_ += n;
  if (written_ < engine_.output().size()) return write_some(clock::now());
  on_write();
}

template <class Engine>
void Connection<Engine>::on_write() {
  writing_ = false;
  engine_.output_written();
  // Responses still waiting on the store go out before a closing connection lingers.
  if (engine_.must_close() && !engine_.waiting()) return linger();
  if (input_.size() > 0 || engine_.waiting()) return process();  // pipelined or pending left
  set_busy(engine_.mid_request());
  update_deadline(clock::now());
  read();
}

// Half-close so the peer sees our last response and EOF, then discard what it still sends
// (bounded in bytes and time) before closing: closing with unread input would send a reset
// that can destroy the response in flight.
template <class Engine>
void Connection<Engine>::linger() {
  if (!lingering_) {
    lingering_ = true;
    set_busy(false);
    error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    deadline_ = clock::now() + kLingerTime;
    if (deadline_ < timer_.expiry()) arm_timer(deadline_);
  }
  input_.clear();
  socket_.async_read_some(input_.prepare(kReadChunkBytes),
                          [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                            self->lingered_bytes_ += n;
                            if (ec || self->lingered_bytes_ > kLingerMaxBytes) return self->close();
                            self->linger();
                          });
}

template <class Engine>
void Connection<Engine>::close() {
  if (closed_) return;
  closed_ = true;
  reading_ = writing_ = false;
  set_busy(false);
  error_code ignored;
  timer_.cancel();
  socket_.close(ignored);
}

template <class Engine>
void Connection<Engine>::set_busy(bool busy) {
  if (busy == busy_) return;
  busy_ = busy;
  WorkerStats::bump(busy ? stats_.busy_started : stats_.busy_finished);
}

// Idle between requests: the idle timeout from now. A request header in progress: the header
// timeout from when that request's first bytes arrived (dribbling does not extend it). A body in
// progress: the header timeout from the last progress.
template <class Engine>
void Connection<Engine>::update_deadline(clock::time_point now) {
  const bool in_header = (engine_.mid_request() && !engine_.header_complete()) || input_.size() > 0;
  if (in_header) {
    if (!in_header_ || header_request_ != engine_.answered()) {
      in_header_ = true;
      header_request_ = engine_.answered();
      header_started_ = now;
    }
    deadline_ = header_started_ + ctx_.config.header_timeout;
  } else {
    in_header_ = false;
    deadline_ =
        now + (engine_.mid_request() ? ctx_.config.header_timeout : ctx_.config.idle_timeout);
  }
  if (deadline_ < timer_.expiry()) arm_timer(deadline_);
}

template <class Engine>
void Connection<Engine>::arm_timer(clock::time_point at) {
  timer_.expires_at(at);
  timer_.async_wait(
      [self = this->shared_from_this()](const error_code& ec) { self->on_timer(ec); });
}

template <class Engine>
void Connection<Engine>::on_timer(const error_code& ec) {
  if (ec == asio::error::operation_aborted || closed_) return;
  if (clock::now() >= deadline_) return close();
  arm_timer(deadline_);
}

namespace {
template <class Engine>
void start_connection(asio::ip::tcp::socket socket, ServerContext& ctx, WorkerStats& stats,
                      ConnectionLimit::Admission admission) {
  std::make_shared<Connection<Engine>>(std::move(socket), ctx, stats, std::move(admission))
      ->start();
}
}  // namespace

ConnectionStarter connection_starter(const Config& config) {
  return with_variant(
      config, []<class V>(V) -> ConnectionStarter { return start_connection<BasicHttpEngine<V>>; });
}

ConnectionStarter resp_connection_starter() {
  return start_connection<resp::RespEngine>;
}

}  // namespace server
