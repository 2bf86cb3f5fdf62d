// main.cc — cache_server's entry point: parse and validate flags, read the admin token, bind,
// announce (with a warning when listening beyond loopback without a token), run until
// SIGINT/SIGTERM, shut down gracefully. Every failure is one line on stderr and exit code 1.
#include <pthread.h>
#include <sys/resource.h>

#include <boost/asio/ip/address.hpp>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string_view>
#include <vector>

#include "server/flags.hh"
#include "server/server.hh"

// jemalloc's options, read once at its start-up when jemalloc is the allocator (ignored by any
// other): one background thread ("jemalloc_bg_thd") returns freed pages to the OS on jemalloc's
// decay schedule, as Redis configures it (jemalloc-bg-thread yes). Without it an idle server keeps
// every page it ever freed resident: a 1M-member board's transient hash-bucket arrays alone added
// ~13 bytes per member to RSS (docs/server.md, "Allocator"). slab_sizes: 8-page slabs for the
// 96..256-byte classes, where a cache entry of a short key and a ~100-byte value lands; with
// jemalloc's 1-page slabs each 32 entries carried a slab's metadata, 3.5 B per item at 1M items
// (jemalloc's "metadata" stat 6.8 -> 3.3 MB; issue 30, cache/README.md).
extern "C" const char* malloc_conf;
const char* malloc_conf = "background_thread:true,max_background_threads:1,slab_sizes:96-256:8";

namespace {

// Thousands of connections need thousands of descriptors: lift the soft RLIMIT_NOFILE to the
// hard limit, as Redis and nginx do. Failure is harmless (accept backs off on EMFILE).
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

bool is_loopback(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return a.is_loopback();
}

// Listening beyond this machine without an admin token: every key can be read and written by
// whoever reaches the port, and without a store so can POST /reset (docs/server.md, "Security
// model"). A warning, not an error: a private network may be what the operator wants.
void warn_if_exposed(const server::Config& config, const boost::asio::ip::tcp::endpoint& ep) {
  if (!config.admin_token.empty() || is_loopback(ep.address())) return;
  const bool reset_open = server::reset_guard(config) == server::ResetGuard::open;
  const bool v6 = ep.address().is_v6();
  std::cerr << "cache_server: warning: listening on " << (v6 ? "[" : "") << ep.address().to_string()
            << (v6 ? "]" : "") << ":" << ep.port()
            << ", not a loopback address, without --admin-token-file: anyone who can reach it "
            << "can read and change every key"
            << (reset_open ? " and empty the server with POST /reset" : "") << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  server::ParseResult parsed = server::parse_flags(args);
  if (std::holds_alternative<server::HelpRequested>(parsed)) {
    std::cout << server::usage_text();
    return 0;
  }
  if (const auto* e = std::get_if<server::FlagError>(&parsed)) {
    std::cerr << "cache_server: " << e->message << "\n";
    return 1;
  }
  server::Config& config = std::get<server::Config>(parsed);
  if (const std::string problem = server::validate(config); !problem.empty()) {
    std::cerr << "cache_server: " << problem << "\n";
    return 1;
  }
  if (const server::AdminTokenLoad token = server::load_admin_token(config); !token.error.empty()) {
    std::cerr << "cache_server: " << token.error << "\n";
    return token.exit_status;
  } else if (!token.warning.empty()) {
    std::cerr << "cache_server: " << token.warning << std::endl;
  }
  raise_descriptor_limit();
  // SIGINT/SIGTERM are blocked before any thread exists, so every worker inherits the mask and
  // only sigwait() below ever takes them: no signal handler runs anywhere. (An Asio signal_set
  // installs a handler, and under ThreadSanitizer, which defers handlers to its next intercepted
  // call, a signal that lands on a thread parked in epoll could go unhandled: a rare hung
  // shutdown in CI.)
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGINT);
  sigaddset(&shutdown_signals, SIGTERM);
  if (const int rc = pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr); rc != 0) {
    std::cerr << "cache_server: cannot block SIGINT/SIGTERM: error " << rc << "\n";
    return 1;
  }
  try {
    server::Server srv(config);
    if (const std::string error = srv.listen(); !error.empty()) {
      std::cerr << "cache_server: " << error << "\n";
      return 1;
    }
    srv.start();
    const auto ep = srv.local_endpoint();
    const bool v6 = ep.address().is_v6();
    std::cout << server::describe(config) << "\n";
    if (!srv.boards_rebuilt().empty()) std::cout << srv.boards_rebuilt() << "\n";
    // One line, the HTTP front first (tools read "listening on HOST:PORT"; scripts/harness/
    // procs.py also reads the ", resp on HOST:PORT" that --resp-port adds).
    std::cout << "listening on " << (v6 ? "[" : "") << ep.address().to_string() << (v6 ? "]" : "")
              << ":" << ep.port();
    if (config.resp_port) {
      const auto resp = srv.resp_endpoint();
      std::cout << ", resp on " << (v6 ? "[" : "") << resp.address().to_string() << (v6 ? "]" : "")
                << ":" << resp.port();
    }
    std::cout << std::endl;
    warn_if_exposed(config, ep);
    int received = 0;
    while (sigwait(&shutdown_signals, &received) != 0) {
    }
    srv.stop();
    if (srv.store_abandoned()) {
      // A thread is stuck inside the store (StoreTier::shutdown said why): no destructor may
      // run, and none is needed.
      if (srv.unflushed() > 0) {
        std::cerr << "cache_server: " << srv.unflushed()
                  << " write-behind writes could not be made durable (the store failed)\n";
      }
      std::cout.flush();
      std::cerr.flush();
      std::_Exit(1);
    }
    if (srv.unflushed() > 0) {
      std::cerr << "cache_server: " << srv.unflushed()
                << " write-behind writes could not be made durable (the store failed)\n";
      return 1;
    }
    std::cout << "shut down" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "cache_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
