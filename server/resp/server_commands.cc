// server_commands.cc — the commands about the server: INFO (the fields redis-cli,
// redis-benchmark and common clients read, from the same snapshot /stats renders), CONFIG GET
// of the parameters tools ask for, DBSIZE, and FLUSHALL/FLUSHDB, which are POST /reset: the
// full reset (cache, boards and store, durably), guarded exactly as that route is (config.hh,
// ResetGuard: open; the admin token, here given by AUTH; or refused).
#include <unistd.h>
#include <string>

#include "server/api/key_service.hh"
#include "server/api/metrics.hh"
#include "server/api/reply.hh"
#include "server/config.hh"
#include "server/resp/commands.hh"
#include "server/server_context.hh"
#include "store/store.hh"
#include "tier/options.hh"

namespace server::resp {

namespace {

void field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out += ':';
  out.append(value);
  out.append("\r\n");
}
void field(std::string& out, std::string_view name, std::uint64_t value) {
  field(out, name, std::to_string(value));
}

bool wants(std::span<const std::string_view> sections, std::string_view section) {
  if (sections.empty()) return true;  // INFO: the default sections, all of ours
  for (const std::string_view s : sections) {
    if (is_word(s, section) || is_word(s, "all") || is_word(s, "default") ||
        is_word(s, "everything")) {
      return true;
    }
  }
  return false;
}

std::string human_bytes(std::uint64_t n) {
  char buf[32];
  const char* units[] = {"B", "K", "M", "G", "T"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.2f%s", v, units[u]);
  return buf;
}

}  // namespace

HandlerResult cmd_info(Call& call) {
  const auto sections = call.args.subspan(1);
  const Snapshot snap = take_snapshot(call.ctx);
  const Config& config = call.ctx.config;
  std::string text;
  if (wants(sections, "server")) {
    text += "# Server\r\n";
    field(text, "redis_version", "7.0.15");
    field(text, "redis_mode", "standalone");
    field(text, "server_name", "cache_server");
    field(text, "arch_bits", "64");
    field(text, "multiplexing_api", "epoll");
    field(text, "process_id", static_cast<std::uint64_t>(::getpid()));
    field(text, "tcp_port", call.ctx.resp_port);
    field(text, "http_port", call.ctx.http_port);
    field(text, "uptime_in_seconds", static_cast<std::uint64_t>(snap.uptime_s));
    field(text, "uptime_in_days", static_cast<std::uint64_t>(snap.uptime_s / 86400));
    field(text, "io_threads_active", "0");
    field(text, "worker_threads", static_cast<std::uint64_t>(config.threads));
    text += "\r\n";
  }
  if (wants(sections, "clients")) {
    text += "# Clients\r\n";
    field(text, "connected_clients", snap.totals.open_connections());
    field(text, "resp_clients", snap.totals.open_resp_connections());
    field(text, "http_clients",
          snap.totals.open_connections() - snap.totals.open_resp_connections());
    field(text, "maxclients", static_cast<std::uint64_t>(config.max_connections));
    field(text, "blocked_clients", "0");
    text += "\r\n";
  }
  if (wants(sections, "memory")) {
    text += "# Memory\r\n";
    field(text, "used_memory", snap.cache.space_used + snap.boards.bytes);
    field(text, "used_memory_human", human_bytes(snap.cache.space_used + snap.boards.bytes));
    field(text, "used_memory_dataset", snap.cache.space_used);
    field(text, "maxmemory", snap.cache.maxmem);
    field(text, "maxmemory_human", human_bytes(snap.cache.maxmem));
    field(text, "maxmemory_policy",
          config.evictor == cache::Evictor::none ? "noeviction" : cache::to_string(config.evictor));
    text += "\r\n";
  }
  if (wants(sections, "persistence")) {
    text += "# Persistence\r\n";
    field(text, "loading", "0");
    field(text, "store", snap.tier.scheme);
    field(text, "aof_enabled", "0");
    field(text, "rdb_changes_since_last_save", "0");
    text += "\r\n";
  }
  if (wants(sections, "stats")) {
    text += "# Stats\r\n";
    field(text, "total_connections_received", snap.totals.connections_opened);
    field(text, "total_commands_processed", snap.totals.requests);
    field(text, "rejected_connections", snap.totals.rejected_connections);
    field(text, "expired_keys", snap.cache.expired);
    field(text, "evicted_keys", snap.cache.evictions);
    field(text, "keyspace_hits", snap.totals.hits);
    field(text, "keyspace_misses", snap.totals.misses);
    text += "\r\n";
  }
  if (wants(sections, "keyspace")) {
    text += "# Keyspace\r\n";
    if (snap.cache.items + snap.boards.boards > 0) {
      text += "db0:keys=" + std::to_string(snap.cache.items + snap.boards.boards) +
              ",expires=0,avg_ttl=0\r\n";
    }
  }
  call.reply().verbatim_text(text);
  return {};
}

// CONFIG GET pattern...: the parameters tools ask for (exact names or "*"); CONFIG SET and the
// rest are refused (the server is configured by its flags).
HandlerResult cmd_config(Call& call) {
  ReplyWriter r = call.reply();
  if (!is_word(call.args[1], "get")) {
    std::string text = "ERR unknown subcommand '";
    text += call.args[1].substr(0, 128);
    text += "'. Try CONFIG HELP.";
    r.error(text);
    return {};
  }
  if (call.args.size() < 3) {
    r.error("ERR wrong number of arguments for 'config|get' command");
    return {};
  }
  const Config& config = call.ctx.config;
  const std::pair<std::string_view, std::string> params[] = {
      {"maxmemory", std::to_string(config.maxmem)},
      {"maxmemory-policy",
       config.evictor == cache::Evictor::none ? "noeviction" : cache::to_string(config.evictor)},
      {"save", ""},
      {"appendonly", "no"},
      {"appendfsync", "no"},
      {"databases", "1"},
      {"maxclients", std::to_string(config.max_connections)},
      {"proto-max-bulk-len", std::to_string(config.max_value)},
      {"timeout", std::to_string(config.idle_timeout.count() / 1000)},
      {"port", std::to_string(call.ctx.resp_port)},
  };
  std::vector<const std::pair<std::string_view, std::string>*> hits;
  for (const auto& p : params) {
    for (const std::string_view pattern : call.args.subspan(2)) {
      if (pattern == "*" || is_word(pattern, p.first)) {
        hits.push_back(&p);
        break;
      }
    }
  }
  r.map(hits.size());
  for (const auto* p : hits) {
    r.bulk(p->first);
    r.bulk(p->second);
  }
  return {};
}

// DBSIZE: the keys in the cache and the boards (with a store, keys only in the store are not
// counted: docs/resp.md).
HandlerResult cmd_dbsize(Call& call) {
  const Snapshot snap = take_snapshot(call.ctx);
  call.reply().integer(static_cast<std::int64_t>(snap.cache.items + snap.boards.boards));
  return {};
}

// FLUSHALL / FLUSHDB [ASYNC|SYNC]: the full reset, guarded as POST /reset is.
HandlerResult cmd_flushall(Call& call) {
  ReplyWriter r = call.reply();
  if (call.args.size() > 2 || (call.args.size() == 2 && !is_word(call.args[1], "async") &&
                               !is_word(call.args[1], "sync"))) {
    r.error(kSyntaxError);
    return {};
  }
  switch (reset_guard(call.ctx.config)) {
    case ResetGuard::open:
      break;
    case ResetGuard::refused:
      r.error("ERR reset is disabled with a store: start with --admin-token-file or --allow-reset");
      return {};
    case ResetGuard::token:
      if (!call.session.authenticated) {
        r.error("NOAUTH Authentication required.");
        return {};
      }
      break;
  }
  auto reply = make_reply<store::Status>(call.responses, call.out,
                                         [](const store::Status& s, ResponseWriter& w) {
                                           ReplyWriter out(w.buffer());
                                           if (s.ok()) {
                                             out.ok();
                                           } else {
                                             out.error("TRYAGAIN " + s.message);
                                           }
                                           return HandlerResult{};
                                         });
  call.ctx.key_service.reset(ResetScope::all, reply);
  return reply.answer(call.out);
}

}  // namespace server::resp
