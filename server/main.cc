// main.cc — cache_server's entry point: parse and validate flags, bind, announce, run until
// SIGINT/SIGTERM, shut down gracefully. Every failure is one line on stderr and exit code 1.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <sys/resource.h>

#include <csignal>
#include <exception>
#include <iostream>
#include <string_view>
#include <vector>

#include "server/config.hh"
#include "server/server.hh"

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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  const server::ParseResult parsed = server::parse_flags(args);
  if (std::holds_alternative<server::HelpRequested>(parsed)) {
    std::cout << server::usage_text();
    return 0;
  }
  if (const auto* e = std::get_if<server::FlagError>(&parsed)) {
    std::cerr << "cache_server: " << e->message << "\n";
    return 1;
  }
  const server::Config& config = std::get<server::Config>(parsed);
  if (const std::string problem = server::validate(config); !problem.empty()) {
    std::cerr << "cache_server: " << problem << "\n";
    return 1;
  }
  raise_descriptor_limit();
  try {
    // Asio's signal handler only records the signal; the main thread waits for it here.
    boost::asio::io_context signals_ioc(1);
    boost::asio::signal_set signals(signals_ioc, SIGINT, SIGTERM);
    server::Server srv(config);
    if (const std::string error = srv.listen(); !error.empty()) {
      std::cerr << "cache_server: " << error << "\n";
      return 1;
    }
    srv.start();
    const auto ep = srv.local_endpoint();
    const bool v6 = ep.address().is_v6();
    std::cout << server::describe(config) << "\n"
              << "listening on " << (v6 ? "[" : "") << ep.address().to_string() << (v6 ? "]" : "")
              << ":" << ep.port() << std::endl;
    signals.async_wait([](const boost::system::error_code&, int) {});
    signals_ioc.run();  // returns once a signal arrived
    srv.stop();
    std::cout << "shut down" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "cache_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
