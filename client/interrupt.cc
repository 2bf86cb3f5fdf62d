// The interrupt flag and its signal handler (see interrupt.hh).
#include "client/interrupt.hh"

#include <csignal>

#include <atomic>

namespace client {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the flag is written by a signal handler");

extern "C" void on_signal(int sig) {
  g_signal.store(sig, std::memory_order_relaxed);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // no SA_RESTART: a blocked wait returns EINTR where it can
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() noexcept {
  return g_signal.load(std::memory_order_relaxed) != 0;
}

const char* interrupt_signal_name() noexcept {
  switch (g_signal.load(std::memory_order_relaxed)) {
    case 0:
      return "";
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

void set_interrupted(int signal) noexcept {
  g_signal.store(signal, std::memory_order_relaxed);
}

}  // namespace client
