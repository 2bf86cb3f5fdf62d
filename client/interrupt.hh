// Ctrl-C (SIGINT) and SIGTERM: the handler only records the signal in a lock-free atomic; the
// workers, the preload and the sweep poll interrupted() at points where stopping is safe, so the
// run ends with the points already finished written out and marked interrupted (exit 3). The
// handler is installed with SA_RESETHAND: a second Ctrl-C kills the process at once.
#pragma once

namespace client {

// Installs the handler for SIGINT and SIGTERM (once, from main, before any thread starts).
void install_interrupt_handlers();
// Whether a signal arrived; one relaxed atomic load, cheap enough for the request loop.
bool interrupted() noexcept;
// The signal's name ("SIGINT", "SIGTERM"), or "" when none arrived.
const char* interrupt_signal_name() noexcept;
// What the handler does; for tests (and 0 to clear).
void set_interrupted(int signal) noexcept;

}  // namespace client
