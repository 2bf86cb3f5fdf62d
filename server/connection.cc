// connection.cc — see connection.hh.
#include "server/connection.hh"

#include <boost/asio/write.hpp>

namespace server {
namespace asio = boost::asio;
using boost::system::error_code;

Connection::Connection(asio::ip::tcp::socket socket, ServerContext& ctx, WorkerStats& stats)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      input_(kInputLimitBytes),
      engine_(ctx, stats),
      ctx_(ctx),
      stats_(stats) {
  WorkerStats::bump(stats_.connections_opened);
}

Connection::~Connection() {
  set_busy(false);
  WorkerStats::bump(stats_.connections_closed);
}

void Connection::start() {
  error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  update_deadline();
  arm_timer(deadline_);
  read();
}

void Connection::read() {
  if (ctx_.stopping.load(std::memory_order_relaxed) && !busy_) return close();
  const std::size_t room = input_.max_size() - input_.size();
  if (room == 0) {  // the parser needs more bytes than the buffer can hold
    engine_.input_overflow();
    return write();
  }
  socket_.async_read_some(
      input_.prepare(std::min(room, kReadChunkBytes)),
      [self = shared_from_this()](const error_code& ec, std::size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(const error_code& ec, std::size_t n) {
  if (ec) return close();  // EOF, reset, or cancelled by a timeout
  input_.commit(n);
  process();
}

void Connection::process() {
  const auto data = input_.data();
  const std::size_t used =
      engine_.consume(std::string_view(static_cast<const char*>(data.data()), data.size()));
  input_.consume(used);
  set_busy(engine_.mid_request() || input_.size() > 0 || !engine_.output().empty());
  if (!engine_.output().empty()) return write();
  if (engine_.must_close()) return linger();
  update_deadline();
  read();
}

// A response gets its own deadline (the idle timeout from now): the one left by the read
// could be about to expire and would cut the response off mid-body.
void Connection::write() {
  deadline_ = clock::now() + ctx_.config.idle_timeout;
  if (deadline_ < timer_.expiry()) arm_timer(deadline_);
  asio::async_write(
      socket_, asio::buffer(engine_.output()),
      [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_write(ec); });
}

void Connection::on_write(const error_code& ec) {
  if (ec) return close();
  engine_.output_written();
  if (engine_.must_close()) return linger();
  if (input_.size() > 0) return process();  // pipelined requests left over
  set_busy(engine_.mid_request());
  update_deadline();
  read();
}

// Half-close so the peer sees our last response and EOF, then discard what it still sends
// (bounded in bytes and time) before closing: closing with unread input would send a reset
// that can destroy the response in flight.
void Connection::linger() {
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
                          [self = shared_from_this()](const error_code& ec, std::size_t n) {
                            self->lingered_bytes_ += n;
                            if (ec || self->lingered_bytes_ > kLingerMaxBytes) return self->close();
                            self->linger();
                          });
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  set_busy(false);
  error_code ignored;
  timer_.cancel();
  socket_.close(ignored);
}

void Connection::set_busy(bool busy) {
  if (busy == busy_) return;
  busy_ = busy;
  WorkerStats::bump(busy ? stats_.busy_started : stats_.busy_finished);
}

// Idle between requests: the idle timeout from now. A request header in progress: the header
// timeout from when that request's first bytes arrived (dribbling does not extend it). A body in
// progress: the header timeout from the last progress.
void Connection::update_deadline() {
  const auto now = clock::now();
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

void Connection::arm_timer(clock::time_point at) {
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) { self->on_timer(ec); });
}

void Connection::on_timer(const error_code& ec) {
  if (ec == asio::error::operation_aborted || closed_) return;
  if (clock::now() >= deadline_) return close();
  arm_timer(deadline_);
}

}  // namespace server
