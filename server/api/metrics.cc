// metrics.cc — see metrics.hh. kMetrics is the list; the renderers below never name a field.
#include "server/api/metrics.hh"

#include "server/resp/commands.hh"

#include <charconv>
#include <cstdio>

#include "common/decimal.hh"
#include "server/allocator.hh"
#include "server/api/router.hh"
#include "server/transport/json_escape.hh"

namespace server {
namespace {

using Type = MetricValue::Type;

MetricValue u64(std::uint64_t v) {
  return {Type::u64, v, 0, {}};
}
MetricValue boolean(bool v) {
  return {Type::boolean, v ? 1u : 0u, 0, {}};
}
MetricValue seconds(double v) {
  return {Type::seconds, 0, v, {}};
}
MetricValue text(std::string_view v) {
  return {Type::string, 0, 0, v};
}

using K = MetricKind;

// The list. Its order is /stats' field order: append new rows at the end (tools parse /stats).
constexpr MetricDef kMetrics[] = {
    {"items", K::gauge, "Entries in the cache.",
     [](const Snapshot& s) { return u64(s.cache.items); }},
    {"space_used", K::gauge, "Key plus value bytes stored in the cache.",
     [](const Snapshot& s) { return u64(s.cache.space_used); }, "space_used_bytes"},
    {"maxmem", K::gauge, "Cache capacity in key plus value bytes (--maxmem).",
     [](const Snapshot& s) { return u64(s.cache.maxmem); }, "maxmem_bytes"},
    {"hits", K::counter, "GET and HEAD /key requests that found the key.",
     [](const Snapshot& s) { return u64(s.totals.hits); }},
    {"misses", K::counter, "GET and HEAD /key requests that did not find the key in the cache.",
     [](const Snapshot& s) { return u64(s.totals.misses); }},
    {"sets", K::counter, "PUT requests that stored a value.",
     [](const Snapshot& s) { return u64(s.totals.sets); }},
    {"deletes", K::counter, "DELETE requests that removed a key.",
     [](const Snapshot& s) { return u64(s.totals.deletes); }},
    {"evictions", K::counter, "Entries the cache removed to make room.",
     [](const Snapshot& s) { return u64(s.cache.evictions); }},
    {"requests", K::counter, "Requests answered, error responses included.",
     [](const Snapshot& s) { return u64(s.totals.requests); }},
    {"reads", K::counter, "Socket reads that returned bytes.",
     [](const Snapshot& s) { return u64(s.totals.reads); }},
    {"writes", K::counter, "Response writes started (one per batch of responses).",
     [](const Snapshot& s) { return u64(s.totals.writes); }},
    {"connections", K::gauge, "Connections open now.",
     [](const Snapshot& s) { return u64(s.totals.open_connections()); }, "open_connections"},
    {"total_connections", K::counter, "Connections accepted since start.",
     [](const Snapshot& s) { return u64(s.totals.connections_opened); }, "connections_accepted"},
    {"threads", K::gauge, "Worker threads (-t).",
     [](const Snapshot& s) { return u64(s.ctx.config.threads); }},
    {"evictor", K::info, "",
     [](const Snapshot& s) { return text(cache::to_string(s.ctx.cache.evictor())); }},
    {"uptime_s", K::gauge, "Seconds since the server started.",
     [](const Snapshot& s) { return seconds(s.uptime_s); }, "uptime_seconds"},
    {"io_model", K::info, "",
     [](const Snapshot& s) { return text(to_string(s.ctx.config.io_model)); }},
    {"shards", K::gauge, "Cache shards.",
     [](const Snapshot& s) { return u64(s.ctx.cache.shards()); }},
    {"max_value", K::gauge, "Largest value accepted, in bytes (--max-value).",
     [](const Snapshot& s) { return u64(s.ctx.config.max_value); }, "max_value_bytes"},
    {"variant", K::info, "", [](const Snapshot& s) { return text(variant_name(s.ctx.config)); }},
    {"lock", K::info, "",
     [](const Snapshot& s) { return text(cache::to_string(s.ctx.cache.lock_scheme())); }},
    {"value_path", K::info, "",
     [](const Snapshot& s) { return text(to_string(s.ctx.config.value_path)); }},
    {"dispatch", K::info, "",
     [](const Snapshot& s) { return text(to_string(s.ctx.config.dispatch)); }},
    {"write_batching", K::info, "",
     [](const Snapshot& s) { return text(to_string(s.ctx.config.write_batching)); }},
    // The durable tier (all zero without a store).
    {"store", K::info, "", [](const Snapshot& s) { return text(s.tier.scheme); }},
    {"write_mode", K::info, "",
     [](const Snapshot& s) { return text(to_string(s.ctx.config.write_mode)); }},
    {"store_reads", K::counter, "Keys read from the store.",
     [](const Snapshot& s) { return u64(s.tier.store.reads); }},
    {"store_writes", K::counter, "Write operations made durable in the store.",
     [](const Snapshot& s) { return u64(s.tier.store.writes); }},
    {"store_commits", K::counter, "Durable store commits (one per group commit).",
     [](const Snapshot& s) { return u64(s.tier.store.commits); }},
    {"store_errors", K::counter,
     "Store operations that failed, plus writes refused because the store had failed.",
     [](const Snapshot& s) { return u64(s.tier.store.errors + s.tier.write_errors); }},
    {"dirty_bytes", K::gauge, "Write-behind key plus value bytes not yet durable.",
     [](const Snapshot& s) { return u64(s.tier.dirty_bytes); }},
    {"dirty_items", K::gauge, "Write-behind keys not yet durable.",
     [](const Snapshot& s) { return u64(s.tier.dirty_items); }},
    {"readthrough_fills", K::counter, "Misses whose value was read from the store into the cache.",
     [](const Snapshot& s) { return u64(s.tier.readthrough_fills); }},
    {"store_failed", K::gauge, "1 when the store failed and refuses writes, else 0.",
     [](const Snapshot& s) { return boolean(s.tier.store.failed); }},
    {"store_error", K::text, "", [](const Snapshot& s) { return text(s.tier.store.last_error); }},
    {"store_connected", K::gauge,
     "1 when every connection to the store is up (always with none or rocksdb), else 0.",
     [](const Snapshot& s) { return boolean(s.tier.store.connected); }},
    {"store_reconnects", K::counter, "Store connections re-established after a loss.",
     [](const Snapshot& s) { return u64(s.tier.store.reconnects); }},
    {"rejected_connections", K::counter, "Connections refused past --max-connections.",
     [](const Snapshot& s) { return u64(s.totals.rejected_connections); }},
    {"inflight_bytes", K::gauge, "Bytes held for connections now, counted against --max-inflight.",
     [](const Snapshot& s) { return u64(s.ctx.inflight.used()); }},
    {"inflight_high_water", K::gauge, "The most bytes held for connections at once since start.",
     [](const Snapshot& s) { return u64(s.ctx.inflight.high_water()); },
     "inflight_high_water_bytes"},
    {"max_inflight", K::gauge, "The --max-inflight budget.",
     [](const Snapshot& s) { return u64(s.ctx.config.max_inflight); }, "max_inflight_bytes"},
    {"allocator", K::info, "", [](const Snapshot&) { return text(allocator_name()); }},
    // The leaderboards (memory only, docs/api.md "Boards").
    {"boards", K::gauge, "Boards (leaderboards) that exist now.",
     [](const Snapshot& s) { return u64(s.boards.boards); }},
    {"board_members", K::gauge, "Members of every board together.",
     [](const Snapshot& s) { return u64(s.boards.members); }},
    {"board_bytes", K::gauge, "Memory the boards hold, counted against --board-maxmem.",
     [](const Snapshot& s) { return u64(s.boards.bytes); }},
    {"board_maxmem", K::gauge, "The --board-maxmem budget.",
     [](const Snapshot& s) { return u64(s.ctx.config.board_maxmem); }, "board_maxmem_bytes"},
    {"board_updates", K::counter, "Board member updates applied (PUT /board/{b}/member/{m}).",
     [](const Snapshot& s) { return u64(s.boards.updates); }},
    {"board_refused", K::counter,
     "Board member updates refused: past --board-maxmem, or a score that would not be finite.",
     [](const Snapshot& s) { return u64(s.boards.refused); }},
    {"board_removals", K::counter, "Board members removed, one by one or with their board.",
     [](const Snapshot& s) { return u64(s.boards.removals); }},
    {"board_reads", K::counter, "Board reads that found their board.",
     [](const Snapshot& s) { return u64(s.boards.reads); }},
    {"board_top_cache_hits", K::counter, "Top-N reads answered from the board's cached page.",
     [](const Snapshot& s) { return u64(s.boards.top_cache_hits); }},
    {"board_top_cache_misses", K::counter,
     "Top-N reads that rendered their page (--board-top-cache on).",
     [](const Snapshot& s) { return u64(s.boards.top_cache_misses); }},
    {"board_top_cache_bytes", K::gauge, "Text held by the boards' top-N caches.",
     [](const Snapshot& s) { return u64(s.boards.top_cache_bytes); }},
    {"expired", K::counter, "Entries the cache removed because their TTL had passed.",
     [](const Snapshot& s) { return u64(s.cache.expired); }},
    {"http_connections", K::gauge, "HTTP connections open now.",
     [](const Snapshot& s) {
       return u64(s.totals.open_connections() - s.totals.open_resp_connections());
     }},
    {"resp_connections", K::gauge, "Redis-protocol (--resp-port) connections open now.",
     [](const Snapshot& s) { return u64(s.totals.open_resp_connections()); }},
    {"resp_total_connections", K::counter,
     "Redis-protocol connections accepted since start (also in total_connections).",
     [](const Snapshot& s) { return u64(s.totals.resp_connections_opened); },
     "resp_connections_accepted"},
    {"resp_unknown_commands", K::counter,
     "Redis-protocol commands answered 'unknown command' (resp_commands counts the rest).",
     [](const Snapshot& s) { return u64(s.totals.resp_unknown_commands); }},
};

// The renderers below rely on these (Prometheus: a HELP line is one line, and `\` would need
// escaping; info and text rows have no HELP of their own).
constexpr bool defs_are_well_formed() {
  for (const MetricDef& d : kMetrics) {
    const bool needs_help = d.kind == K::counter || d.kind == K::gauge;
    if (needs_help == d.help.empty()) return false;
    if (d.help.find_first_of("\\\n") != std::string_view::npos) return false;
    if (d.name.empty() || d.read == nullptr) return false;
  }
  return true;
}
static_assert(defs_are_well_formed(),
              "kMetrics: counters and gauges need a one-line help text without '\\'; info and "
              "text rows have none");

constexpr std::string_view kPrefix = "cache_server_";

// %.3f, as /stats always printed uptime_s (and a sample value may use the same).
void append_seconds(std::string& out, double v) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.3f", v);
  if (n > 0) out.append(buf, static_cast<std::size_t>(n) < sizeof buf ? n : sizeof buf - 1);
}

// A Prometheus label value: `\`, `"` and newline escaped.
void append_label_value(std::string& out, std::string_view v) {
  for (const char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

std::string_view prom_base(const MetricDef& d) {
  return d.prom_name.empty() ? d.name : d.prom_name;
}

void append_family_header(std::string& out, std::string_view name, std::string_view help,
                          std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// The seconds of a nanosecond count, as a sample value (shortest exact-enough form).
void append_ns_as_seconds(std::string& out, std::uint64_t ns) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(ns) / 1e9);
  out.append(buf, r.ptr);
}

}  // namespace

Snapshot take_snapshot(const ServerContext& ctx) {
  Snapshot s{ctx, ctx.cache.stats(), ctx.stats.sum(), {}, 0, {}};
  s.tier = ctx.key_service.tier_stats();
  s.boards = ctx.boards.stats();
  s.boards.reads += ctx.board_service.store_reads();  // --board-source store
  s.uptime_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  return s;
}

std::span<const MetricDef> metric_defs() {
  return kMetrics;
}

std::string render_stats_json(const Snapshot& snap) {
  std::string json;
  json.reserve(1536);
  json += '{';
  bool first = true;
  for (const MetricDef& d : kMetrics) {
    json += first ? "\"" : ", \"";
    first = false;
    json += d.name;
    json += "\": ";
    const MetricValue v = d.read(snap);
    switch (v.type) {
      case Type::u64:
        common::append_decimal(json, v.u);
        break;
      case Type::seconds:
        append_seconds(json, v.d);
        break;
      case Type::boolean:
        json += v.u != 0 ? "true" : "false";
        break;
      case Type::string:
        json += '"';
        json_escape_append(v.s, json);
        json += '"';
        break;
    }
  }
  // The Redis-protocol front's commands, one field per command of its table (a fixed set).
  json += ", \"resp_commands\": {";
  for (const resp::Command& c : resp::command_table()) {
    if (resp::command_slot(c) != 0) json += ", ";
    json += '"';
    json += c.name;
    json += "\": ";
    common::append_decimal(json, snap.totals.resp_commands[resp::command_slot(c)]);
  }
  json += "}}";
  return json;
}

void append_duration_histograms(std::string& out, const TimingTotals& timings);

std::string render_prometheus(const Snapshot& snap, const TimingTotals& timings) {
  std::string out;
  out.reserve(16384);
  std::string name;
  // The configuration strings, as the labels of one info gauge.
  std::string info_labels;
  for (const MetricDef& d : kMetrics) {
    const MetricValue v = d.read(snap);
    if (d.kind == K::info) {
      info_labels += info_labels.empty() ? "" : ",";
      info_labels += prom_base(d);
      info_labels += "=\"";
      append_label_value(info_labels, v.s);
      info_labels += '"';
      continue;
    }
    if (d.kind == K::text) continue;
    name.assign(kPrefix);
    name += prom_base(d);
    if (d.kind == K::counter) name += "_total";
    append_family_header(out, name, d.help, d.kind == K::counter ? "counter" : "gauge");
    out += name;
    out += ' ';
    if (v.type == Type::seconds) {
      append_seconds(out, v.d);
    } else {
      common::append_decimal(out, v.u);
    }
    out += '\n';
  }
  append_family_header(out, "cache_server_info",
                       "The server's configuration, as labels; the value is always 1.", "gauge");
  out += "cache_server_info{";
  out += info_labels;
  out += "} 1\n";
  append_duration_histograms(out, timings);
  constexpr std::string_view resp_family = "cache_server_resp_commands_total";
  append_family_header(out, resp_family,
                       "Redis-protocol commands answered, by command (unknown ones are "
                       "cache_server_resp_unknown_commands_total).",
                       "counter");
  for (const resp::Command& c : resp::command_table()) {
    out += resp_family;
    out += "{command=\"";
    out += c.name;
    out += "\"} ";
    common::append_decimal(out, snap.totals.resp_commands[resp::command_slot(c)]);
    out += '\n';
  }
  return out;
}

// The request-duration histograms, one series set per route class.
void append_duration_histograms(std::string& out, const TimingTotals& timings) {
  constexpr std::string_view hist = "cache_server_request_duration_seconds";
  append_family_header(out, hist,
                       "Server-side request duration, from the read that completed the request "
                       "to its response being ready to write, by route class.",
                       "histogram");
  for (std::size_t c = 0; c < kRouteClassCount; ++c) {
    const auto& h = timings.by_class[c];
    const std::string_view route = route_class_name(static_cast<RouteClass>(c));
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < kBucketCount; ++b) {
      cumulative += h.buckets[b];
      out += hist;
      out += "_bucket{route=\"";
      out += route;
      out += "\",le=\"";
      out += b < kDurationBuckets.size() ? kDurationBuckets[b].le : std::string_view("+Inf");
      out += "\"} ";
      common::append_decimal(out, cumulative);
      out += '\n';
    }
    out += hist;
    out += "_sum{route=\"";
    out += route;
    out += "\"} ";
    append_ns_as_seconds(out, h.sum_ns);
    out += '\n';
    out += hist;
    out += "_count{route=\"";
    out += route;
    out += "\"} ";
    common::append_decimal(out, cumulative);
    out += '\n';
  }
}

}  // namespace server
