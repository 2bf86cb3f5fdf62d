// The sweep: probe the server (reachability and GET /stats), reset and preload it, then call
// threaded_performance() once per client thread count (with --slo: the closed-loop point at the
// one thread count, then the search's open-loop steps, slo_search.hh), collecting everything the
// reports need (including the run's metadata) into a SweepResult. Stops at the first point that
// aborts (for example because the server died) and returns the partial results.
#pragma once

#include <functional>
#include <string>

#include "client/config.hh"
#include "client/http.hh"
#include "client/result.hh"

namespace client {

struct ServerProbe {
  bool reachable = false;
  std::string error;  // why it is unreachable
  bool stats_available = false;
  std::string stats_error;   // why /stats is unavailable (e.g. "HTTP 404")
  boost::json::value stats;  // the /stats object, null when unavailable
};

ServerProbe probe_server(const Endpoint& ep, std::chrono::milliseconds timeout);
// POST /reset, with "Authorization: Bearer <admin_token>" unless admin_token is empty.
struct ResetOutcome {
  std::string error;     // empty on success, else the reason
  bool refused = false;  // the server refused the reset (401 or 403): the run cannot go on
};
ResetOutcome reset_server(const Endpoint& ep, std::chrono::milliseconds timeout,
                          const std::string& admin_token);
// --protocol resp: the probe is a PING (+PONG; stats are never available: /stats is HTTP's), the
// reset an AUTH with admin_token (unless empty) and a FLUSHALL. A NOAUTH, WRONGPASS or disabled
// reset is `refused`, as HTTP's 401 and 403 are.
ServerProbe probe_resp_server(const Endpoint& ep, std::chrono::milliseconds timeout);
ResetOutcome reset_resp_server(const Endpoint& ep, std::chrono::milliseconds timeout,
                               const std::string& admin_token);

struct SweepHooks {
  std::function<void(const std::string&)> message;     // progress and warnings (stderr)
  std::function<void(const SweepResult&)> started;     // after the probe and preload
  std::function<void(const PointResult&)> point_done;  // after each point
  // --slo: after each step's point (and its point_done), and once when the search ends.
  std::function<void(const SloReport&, const SloStepRecord&)> slo_step;
  std::function<void(const SloReport&)> slo_done;
};

// kInterrupted: SIGINT/SIGTERM arrived (interrupt.hh); out.points holds the finished points, the
// point in progress is dropped, out.interrupted and out.aborted are set.
enum class SweepStatus { kOk, kUnreachable, kAborted, kInterrupted };

SweepStatus run_sweep(const Config& cfg, const std::string& command_line, const SweepHooks& hooks,
                      SweepResult& out);

}  // namespace client
