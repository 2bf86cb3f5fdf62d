// listener.cc — see listener.hh.
#include "server/listener.hh"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "server/connection.hh"

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

Listener::Listener(asio::io_context& ioc, tcp::acceptor acceptor, ServerContext& ctx,
                   std::size_t worker, bool strands, ConnectionStarter start_connection)
    : ioc_(ioc),
      acceptor_(std::move(acceptor)),
      backoff_(acceptor_.get_executor()),
      ctx_(ctx),
      next_worker_(worker),
      strands_(strands),
      start_connection_(start_connection) {}

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
  WorkerStats& stats = ctx_.stats.worker(next_worker_);
  if (strands_) ++next_worker_;
  start_connection_(std::move(socket), ctx_, stats);
  accept();
}

}  // namespace server
