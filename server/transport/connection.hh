// connection.hh — one TCP connection: the Asio read/write loop around an HttpEngine, plus the
// deadlines that defend it (header timeout, idle keep-alive timeout) and a lingering close.
//
// Life cycle: read → engine.consume → write responses → read ... Only one operation chain runs at
// a time, plus one timer wait. A request that waits on the store parks the chain (no read, no
// write) until its completion, posted to this connection's executor, resumes it
// (on_response_ready); responses already rendered go out meanwhile. The timer is lazy: each read
// only stores the new deadline; the timer re-arms itself when it fires early, and is re-armed at
// once only when the deadline moves earlier (idle → header in progress), so a keep-alive GET costs
// no timer operation.
//
// A template over its engine: BasicHttpEngine<V> for the HTTP front (V the request-path
// Variant, variant.hh) or resp::RespEngine for the Redis-protocol front (server/resp/); both
// have the same interface (consume, output, responses, ...). The listener starts connections
// through the ConnectionStarter picked once at start-up.
//
// Request timing (/metrics): a completed read stamps the engine's arrival time (the one clock
// read the histograms add); process() reads the clock once after the engine ran, records the
// durations with that reading and hands the same reading on to the write or deadline that needs
// it, so the end of the timing costs no clock read of its own.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <memory>

#include "server/server_context.hh"
#include "server/transport/http_engine.hh"
#include "server/transport/stats.hh"

namespace server {

// Input buffer growth step and cap. The cap exceeds the header limit, so an over-long header is
// always reported by the parser (431) before the buffer fills.
inline constexpr std::size_t kReadChunkBytes = 4096;
inline constexpr std::size_t kInputLimitBytes = 2 * kHeaderLimitBytes + kReadChunkBytes;
// After a response that closes the connection, unread input is drained for at most this long so
// the peer reads our response instead of a reset.
inline constexpr std::chrono::milliseconds kLingerTime{1000};
inline constexpr std::size_t kLingerMaxBytes = 4 << 20;

template <class Engine>
class Connection final : public std::enable_shared_from_this<Connection<Engine>>, public SlotSink {
 public:
  // admission: this connection's place under --max-connections, held until it is destroyed.
  Connection(boost::asio::ip::tcp::socket socket, ServerContext& ctx, WorkerStats& stats,
             ConnectionLimit::Admission admission);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  // A response that waited on the store, finished: rendered here, on this connection's thread.
  void complete_deferred(PendingResponse& response) override {
    if (closed_) return;
    engine_.responses().complete(response);
    on_response_ready();
  }

 private:
  using clock = std::chrono::steady_clock;

  void read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void process();            // run the engine over buffered input, then write, read or wait
  void on_response_ready();  // a response that waited on the store was rendered
  // `now`: a clock reading the caller just took (the deadline is computed from it).
  void write(clock::time_point now);       // start writing the engine's output
  void write_some(clock::time_point now);  // the rest of it, with a fresh deadline
  void on_write_some(const boost::system::error_code& ec, std::size_t n);
  void on_write();  // all of it written
  void linger();    // half-close, drain, then close
  void close();

  void set_busy(bool busy);
  void update_deadline(clock::time_point now);
  void arm_timer(clock::time_point at);
  void on_timer(const boost::system::error_code& ec);

  // First, so it is destroyed last: the place under the cap is given back after the socket closed.
  ConnectionLimit::Admission admission_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer input_;
  Engine engine_;
  ServerContext& ctx_;
  WorkerStats& stats_;
  clock::time_point deadline_;
  clock::time_point header_started_;
  std::size_t header_request_ = 0;  // engine_.answered() when the header phase began
  bool in_header_ = false;
  bool busy_ = false;
  bool reading_ = false;  // a read is outstanding
  bool writing_ = false;  // a write is outstanding
  bool lingering_ = false;
  bool closed_ = false;
  std::size_t lingered_bytes_ = 0;
  std::size_t written_ = 0;  // bytes of the engine's output already written
};

// Creates and starts a Connection of one variant; connection_starter(config) picks which.
using ConnectionStarter = void (*)(boost::asio::ip::tcp::socket, ServerContext&, WorkerStats&,
                                   ConnectionLimit::Admission);
ConnectionStarter connection_starter(const Config& config);
// The Redis-protocol front's (--resp-port).
ConnectionStarter resp_connection_starter();

}  // namespace server
