// listener.cc — see listener.hh.
#include "server/transport/listener.hh"

#include <sys/socket.h>

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "server/transport/connection.hh"
#include "server/transport/http_date.hh"
#include "server/transport/response_writer.hh"

namespace server {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

tcp::acceptor open_acceptor(const asio::any_io_executor& executor, const tcp::endpoint& endpoint,
                            bool reuse_port, std::string& error) {
  tcp::acceptor acceptor(executor);
  error_code ec;
  auto fail = [&](const char* what) {
    error = std::string(what) + " " + endpoint.address().to_string() + ":" +
            std::to_string(endpoint.port()) + ": " + ec.message();
    error_code ignored;
    acceptor.close(ignored);
    return std::move(acceptor);
  };
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return fail("cannot open socket for");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) return fail("cannot set SO_REUSEADDR on");
  if (reuse_port) {
    using reuse_port_option = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
    acceptor.set_option(reuse_port_option(true), ec);
    if (ec) return fail("cannot set SO_REUSEPORT on");
  }
  acceptor.bind(endpoint, ec);
  if (ec) return fail("cannot bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("cannot listen on");
  return acceptor;
}

// --- refusing a connection past --max-connections ----------------------------------------------

// One refused connection: a 503 {"error": "too many connections"} with Connection: close, a
// half-close, then whatever the client sends is read and dropped until it closes or
// kRejectLinger passes. Closing at once could reset the connection while the client's request
// sits unread on our side, and a reset can destroy the 503 before the client reads it. The
// listener bounds how many linger at once (kMaxLingeringRejections); past that a refused
// socket is closed right after its 503.
class Rejection : public std::enable_shared_from_this<Rejection> {
 public:
  Rejection(tcp::socket socket, std::shared_ptr<Listener> listener)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), listener_(std::move(listener)) {
    ++listener_->lingering_rejections_;
  }
  ~Rejection() { --listener_->lingering_rejections_; }

  void start() {
    timer_.expires_after(kRejectLinger);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (!ec) self->close();
    });
    drain();
  }

 private:
  void drain() {
    socket_.async_read_some(asio::buffer(sink_),
                            [self = shared_from_this()](const error_code& ec, std::size_t) {
                              if (ec) return self->close();
                              self->drain();
                            });
  }
  void close() {
    error_code ignored;
    timer_.cancel();
    socket_.close(ignored);
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  std::shared_ptr<Listener> listener_;
  std::array<char, 512> sink_{};
};

void Listener::reject(tcp::socket socket) {
  ctx_.stats.count_rejected_connection();
  std::string response;
  if (front_ == Front::resp) {
    response = "-ERR max number of clients reached\r\n";
  } else {
    refresh_http_date();
    ResponseWriter writer(response);
    writer.set_served_by(ctx_.served_by_line);
    writer.begin_request(/*keep_alive=*/false, /*http10=*/false, /*head=*/false, 0);
    writer.error(ResponseWriter::status::service_unavailable, "too many connections");
  }
  // A fresh socket's send buffer is empty: the ~150 bytes go out in one non-blocking send.
  error_code ec;
  socket.non_blocking(true, ec);
  if (!ec) socket.send(asio::buffer(response), 0, ec);
  if (!ec) socket.shutdown(tcp::socket::shutdown_send, ec);
  if (ec || lingering_rejections_ >= kMaxLingeringRejections) {
    socket.close(ec);
    return;
  }
  std::make_shared<Rejection>(std::move(socket), shared_from_this())->start();
}

Listener::Listener(asio::io_context& ioc, tcp::acceptor acceptor, ServerContext& ctx,
                   std::size_t worker, bool strands, ConnectionStarter start_connection,
                   Front front)
    : ioc_(ioc),
      acceptor_(std::move(acceptor)),
      backoff_(acceptor_.get_executor()),
      ctx_(ctx),
      next_worker_(worker),
      strands_(strands),
      start_connection_(start_connection),
      front_(front) {}

void Listener::start() {
  accept();
}

void Listener::stop() {
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] { self->close(); });
}

void Listener::close() {
  error_code ignored;
  acceptor_.close(ignored);
  backoff_.cancel();
}

void Listener::accept() {
  auto handler = [self = shared_from_this()](const error_code& ec, tcp::socket socket) {
    self->on_accept(ec, std::move(socket));
  };
  if (strands_) {
    acceptor_.async_accept(asio::make_strand(ioc_), std::move(handler));
  } else {
    acceptor_.async_accept(std::move(handler));
  }
}

void Listener::on_accept(const error_code& ec, tcp::socket socket) {
  if (!acceptor_.is_open()) return;
  if (ec) {
    if (ec == asio::error::operation_aborted) return;
    // EMFILE/ENFILE/ENOBUFS...: retry shortly rather than spin.
    backoff_.expires_after(kAcceptBackoff);
    backoff_.async_wait([self = shared_from_this()](const error_code& wait_ec) {
      if (!wait_ec) self->accept();
    });
    return;
  }
  ConnectionLimit::Admission admission = ctx_.connections.try_admit();
  if (!admission) {
    reject(std::move(socket));
    return accept();
  }
  WorkerStats& stats = ctx_.stats.worker(next_worker_);
  if (strands_) ++next_worker_;
  start_connection_(std::move(socket), ctx_, stats, std::move(admission));
  accept();
}

}  // namespace server
