// metrics.hh — the one list of what the server reports (kMetrics), and its two renderings:
// /stats (JSON) and /metrics (the Prometheus text exposition format, version 0.0.4).
//
// A counter or gauge is added in one place: a row of kMetrics (metrics.cc) with its /stats name,
// its kind, its help text and how to read it from a Snapshot. Both renderings walk the list in
// order, so /stats keeps its field order and formats, and /metrics gets every field with its
// `# HELP` and `# TYPE` lines. Kinds:
// - counter: monotonic; /metrics names it cache_server_<name>_total;
// - gauge: a current value; cache_server_<name> (a boolean is 0/1);
// - info: a configuration string; /metrics carries all of them as the labels of one
//   `cache_server_info` gauge whose value is 1;
// - text: a free-form string that only /stats shows (store_error: unbounded text makes a poor
//   label, and store_failed already says whether there is one).
// A row may give /metrics a different base name (e.g. uptime_s → uptime_seconds), to follow the
// Prometheus naming conventions (base units, _bytes, _seconds) without renaming /stats fields.
// /metrics then adds the per-route-class request-duration histograms (request_timing.hh).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "boards/registry.hh"
#include "cache/cache.hh"
#include "server/server_context.hh"
#include "server/transport/stats.hh"
#include "tier/options.hh"

namespace server {

using tier::TierStats;

// Everything a row may read, taken once per rendering.
struct Snapshot {
  const ServerContext& ctx;
  cache::Stats cache;
  StatsTotals totals;
  TierStats tier;
  double uptime_s = 0;
  boards::RegistryStats boards;
};
Snapshot take_snapshot(const ServerContext& ctx);

enum class MetricKind : std::uint8_t { counter, gauge, info, text };

// A row's value: what it is decides its /stats formatting.
struct MetricValue {
  enum class Type : std::uint8_t { u64, seconds, boolean, string } type = Type::u64;
  std::uint64_t u = 0;  // u64 and boolean (0/1)
  double d = 0;         // seconds: /stats prints 3 decimals
  std::string_view s;   // string (JSON-escaped in /stats)
};

struct MetricDef {
  std::string_view name;  // the /stats field
  MetricKind kind;
  std::string_view help;  // /metrics' # HELP text (one line, no backslash)
  MetricValue (*read)(const Snapshot&);
  std::string_view prom_name = {};  // the /metrics base name when it differs from `name`
};

// The list, in /stats order.
std::span<const MetricDef> metric_defs();

// The /stats body: {"name": value, ...} in list order.
std::string render_stats_json(const Snapshot& snap);

// The /metrics body, and its Content-Type.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";
std::string render_prometheus(const Snapshot& snap, const TimingTotals& timings);

}  // namespace server
