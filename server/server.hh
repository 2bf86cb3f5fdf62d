// server.hh — owns the cache, the stats, the io_contexts, the listeners and the worker threads,
// and sequences start-up (bind everything before announcing) and graceful shutdown
// (stop accepting, let in-flight requests finish for at most kDrainTime, stop, join).
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache.hh"
#include "server/config.hh"
#include "server/expiry_sweeper.hh"
#include "server/server_context.hh"
#include "server/transport/completion_inbox.hh"
#include "server/transport/listener.hh"
#include "server/transport/stats.hh"
#include "tier/tier.hh"

namespace server {

using tier::StoreTier;

// Graceful shutdown waits this long for busy connections before stopping the workers, leaving
// margin under the 2 s exit budget.
inline constexpr std::chrono::milliseconds kDrainTime{1500};

class Server {
 public:
  // Throws std::invalid_argument from the cache, std::runtime_error when the store cannot be
  // opened or its boards cannot be rebuilt (the message is the one-line reason). With a store,
  // the boards are rebuilt from its rows here, before anything listens.
  explicit Server(const Config& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds every acceptor. Returns an empty string, or a one-line error (busy port, bad address).
  std::string listen();
  // The address actually bound (the real port when the config asked for port 0).
  boost::asio::ip::tcp::endpoint local_endpoint() const { return endpoint_; }
  // The Redis-protocol front's address (--resp-port), after listen(); port 0 without it.
  boost::asio::ip::tcp::endpoint resp_endpoint() const { return resp_endpoint_; }
  void start();  // launches the worker threads
  void stop();   // graceful; idempotent; returns when every worker has exited and the store
                 // is closed (write-behind: after flushing every dirty write)
  // After stop(): dirty writes that could not be made durable (the store had failed).
  std::size_t unflushed() const { return unflushed_; }
  // After stop(): the store's close() did not return in time (StoreTier::shutdown); the process
  // must end with std::_Exit, destroying nothing.
  bool store_abandoned() const { return tier_ && tier_->store_abandoned(); }
  // With a store: the line saying how the boards were rebuilt from it (members, boards, time),
  // printed before the listening line; empty without a store.
  const std::string& boards_rebuilt() const { return boards_rebuilt_; }

  ServerContext& context() { return ctx_; }

 private:
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

  Config config_;
  cache::Cache cache_;
  StatsRegistry stats_;
  std::unique_ptr<StoreTier> tier_;  // before the contexts: outlives every connection
  ServerContext ctx_;
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  // Per-thread model: one per context, where store threads hand its connections their answers.
  std::vector<std::shared_ptr<CompletionInbox>> inboxes_;
  std::vector<WorkGuard> guards_;
  std::vector<std::shared_ptr<Listener>> listeners_;
  std::vector<std::thread> threads_;
  std::optional<ExpirySweeper> sweeper_;  // from start() to stop()
  // One front's acceptors and listeners on every context; `bound` gets the address bound.
  std::string bind_front(boost::asio::ip::tcp::endpoint endpoint,
                         ConnectionStarter start_connection, Front front,
                         boost::asio::ip::tcp::endpoint& bound);

  boost::asio::ip::tcp::endpoint endpoint_;
  boost::asio::ip::tcp::endpoint resp_endpoint_;
  bool stopped_ = false;
  std::size_t unflushed_ = 0;
  std::string boards_rebuilt_;
};

}  // namespace server
