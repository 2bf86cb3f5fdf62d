// listener.hh — accepts connections on one acceptor and hands each to a Connection.
//
// Past --max-connections (ServerContext::connections) an accepted socket is refused: 503, then
// closed (reject()); the open connections are not disturbed.
//
// Per-thread I/O model: one Listener per worker, each on its own io_context with its own
// SO_REUSEPORT acceptor; the kernel spreads connections over them and every connection stays
// on the thread that accepted it. Shared model: one Listener; each accepted socket gets its own
// strand and the worker stats are assigned round-robin. Accept errors such as EMFILE back off
// briefly instead of spinning. Accepted sockets go to start_connection, the request-path
// variant picked once at start-up (connection_starter in connection.hh).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "server/server_context.hh"
#include "server/transport/connection.hh"

namespace server {

inline constexpr std::chrono::milliseconds kAcceptBackoff{50};
// A connection refused past --max-connections gets its 503 and is drained for at most this long
// before it is closed; at most this many per listener are drained at once.
inline constexpr std::chrono::milliseconds kRejectLinger{1000};
inline constexpr std::size_t kMaxLingeringRejections = 256;

// Opens, binds and listens on `executor`; on failure returns a closed acceptor and sets `error`.
boost::asio::ip::tcp::acceptor open_acceptor(const boost::asio::any_io_executor& executor,
                                             const boost::asio::ip::tcp::endpoint& endpoint,
                                             bool reuse_port, std::string& error);

// Which protocol a listener's connections speak: it decides how a refused one is told.
enum class Front : std::uint8_t {
  http,  // 503 {"error": "too many connections"}
  resp,  // -ERR max number of clients reached (Redis's words)
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // worker: the stats block for accepted connections; strands: give each socket a strand.
  Listener(boost::asio::io_context& ioc, boost::asio::ip::tcp::acceptor acceptor,
           ServerContext& ctx, std::size_t worker, bool strands, ConnectionStarter start_connection,
           Front front = Front::http);

  void start();
  void stop();  // closes the acceptor; safe from any thread (runs on the acceptor's executor)

 private:
  void accept();
  void close();
  void on_accept(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);
  void reject(boost::asio::ip::tcp::socket socket);  // past --max-connections: 503 and close
  friend class Rejection;

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  ServerContext& ctx_;
  std::size_t next_worker_;
  bool strands_;
  ConnectionStarter start_connection_;
  Front front_;
  // Refused connections being drained (each on its own strand in the shared model).
  std::atomic<std::size_t> lingering_rejections_{0};
};

}  // namespace server
