// flags.cc — cache_server's flag table, parse_flags and usage_text (see flags.hh). One row of
// kFlags per flag: its names, its group and help line in --help, and how its value lands in
// Config. Durations use the syntax both binaries share (common/duration.hh).
#include "server/flags.hh"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <sstream>
#include <utility>

#include "common/duration.hh"
#include "tier/options.hh"

namespace server {

bool parse_size(std::string_view text, std::size_t& out) {
  std::uint64_t number = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, number);
  if (ec != std::errc{} || ptr == first) return false;
  std::string_view suffix(ptr, static_cast<std::size_t>(last - ptr));
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b') && suffix.size() <= 2) {
    suffix.remove_suffix(1);
  }
  unsigned shift = 0;
  if (suffix.empty()) {
    shift = 0;
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        return false;
    }
  } else {
    return false;
  }
  if (number > (std::numeric_limits<std::size_t>::max() >> shift)) return false;
  out = static_cast<std::size_t>(number) << shift;
  return true;
}

namespace {

// The longest duration a server flag takes: a deadline further out only risks overflowing
// time_point arithmetic.
constexpr std::chrono::milliseconds kMaxDurationFlag = std::chrono::hours(24 * 365);

template <class Int>
bool parse_int(std::string_view text, Int& out) {
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, out);
  return ec == std::errc{} && ptr == last && !text.empty();
}

// A duration flag's value in the server's resolution (milliseconds, rounded half up), at most
// kMaxDurationFlag. `bare` is what a number without a unit means for this flag.
bool parse_duration_ms(std::string_view text, common::BareUnit bare,
                       std::chrono::milliseconds& out) {
  using namespace std::chrono;
  const std::optional<nanoseconds> d = common::parse_duration(text, bare);
  if (!d || *d > kMaxDurationFlag) return false;
  out = duration_cast<milliseconds>(*d + microseconds(500));
  return true;
}

// The error of a duration flag whose bare numbers mean seconds (kept from before the units).
std::string seconds_flag_error(std::string_view flag, std::string_view v) {
  return "invalid " + std::string(flag) + " '" + std::string(v) +
         "' (want a duration such as 10s or 500ms, up to 365 days; a bare number is seconds)";
}

// One flag: its names, where --help lists it, and how its value lands in Config.
struct FlagSpec {
  std::string_view group;       // the --help section it is listed under
  std::string_view short_name;  // "-m" or empty
  std::string_view long_name;   // "--maxmem"
  std::string_view value_name;  // "BYTES"; empty: the flag takes no value (a switch)
  std::string_view help;        // may span lines ('\n'); --help indents the continuation lines
  bool (*apply)(Config&, std::string_view value, std::string& error);
  bool overrides_variant = false;  // applied after every --variant, wherever it appears
};

bool apply_maxmem(Config& c, std::string_view v, std::string& e) {
  if (!parse_size(v, c.maxmem))
    e = "invalid --maxmem '" + std::string(v) + "' (want BYTES with optional K/M/G)";
  return e.empty();
}
bool apply_host(Config& c, std::string_view v, std::string& e) {
  if (v.empty()) e = "--host must not be empty";
  c.host = v;
  return e.empty();
}
bool apply_port(Config& c, std::string_view v, std::string& e) {
  if (!parse_int(v, c.port)) e = "invalid --port '" + std::string(v) + "' (want 0..65535)";
  return e.empty();
}
bool apply_resp_port(Config& c, std::string_view v, std::string& e) {
  std::uint16_t port = 0;
  if (!parse_int(v, port)) {
    e = "invalid --resp-port '" + std::string(v) + "' (want 0..65535)";
  } else {
    c.resp_port = port;
  }
  return e.empty();
}
bool apply_threads(Config& c, std::string_view v, std::string& e) {
  if (!parse_int(v, c.threads)) e = "invalid --threads '" + std::string(v) + "'";
  return e.empty();
}
bool apply_max_connections(Config& c, std::string_view v, std::string& e) {
  if (!parse_int(v, c.max_connections) || c.max_connections == 0) {
    e = "invalid --max-connections '" + std::string(v) + "' (want a whole number, at least 1)";
  }
  return e.empty();
}
bool apply_max_inflight(Config& c, std::string_view v, std::string& e) {
  if (!parse_size(v, c.max_inflight) || c.max_inflight == 0) {
    e = "invalid --max-inflight '" + std::string(v) + "' (want BYTES with optional K/M/G)";
  }
  return e.empty();
}
bool apply_evictor(Config& c, std::string_view v, std::string& e) {
  if (auto ev = cache::parse_evictor(v)) {
    c.evictor = *ev;
  } else {
    // The names the library knows, so a new evictor shows up here by itself.
    std::string names;
    for (unsigned u = 0; u <= 255; ++u) {
      const auto candidate = static_cast<cache::Evictor>(u);
      if (cache::parse_evictor(cache::to_string(candidate)) != candidate) continue;
      names += (names.empty() ? "" : ", ") + std::string(cache::to_string(candidate));
    }
    e = "unknown --evictor '" + std::string(v) + "' (want one of: " + names + ")";
  }
  return e.empty();
}
bool apply_max_value(Config& c, std::string_view v, std::string& e) {
  if (!parse_size(v, c.max_value)) e = "invalid --max-value '" + std::string(v) + "'";
  return e.empty();
}
bool apply_header_timeout(Config& c, std::string_view v, std::string& e) {
  if (!parse_duration_ms(v, common::BareUnit::seconds, c.header_timeout))
    e = seconds_flag_error("--header-timeout", v);
  return e.empty();
}
bool apply_idle_timeout(Config& c, std::string_view v, std::string& e) {
  if (!parse_duration_ms(v, common::BareUnit::seconds, c.idle_timeout))
    e = seconds_flag_error("--idle-timeout", v);
  return e.empty();
}
bool apply_io_model(Config& c, std::string_view v, std::string& e) {
  if (v == "per-thread") {
    c.io_model = IoModel::per_thread;
  } else if (v == "shared") {
    c.io_model = IoModel::shared;
  } else {
    e = "unknown --io-model '" + std::string(v) + "' (want per-thread or shared)";
  }
  return e.empty();
}

bool apply_variant(Config& c, std::string_view v, std::string& e) {
  if (v == "optimized") {
    c.lock = cache::LockScheme::shared_reads;
    c.value_path = ValuePathKind::cstring;
    c.dispatch = DispatchKind::ordered;
    c.write_batching = WriteBatching::on;
  } else if (v == "baseline") {
    c.lock = cache::LockScheme::exclusive_all;
    c.value_path = ValuePathKind::string;
    c.dispatch = DispatchKind::naive;
    c.write_batching = WriteBatching::off;
  } else {
    e = "unknown --variant '" + std::string(v) + "' (want baseline or optimized)";
  }
  return e.empty();
}
bool apply_lock(Config& c, std::string_view v, std::string& e) {
  if (v == "shared") {
    c.lock = cache::LockScheme::shared_reads;
  } else if (v == "exclusive") {
    c.lock = cache::LockScheme::exclusive_all;
  } else {
    e = "unknown --lock '" + std::string(v) + "' (want exclusive or shared)";
  }
  return e.empty();
}
bool apply_value_path(Config& c, std::string_view v, std::string& e) {
  if (v == "cstring") {
    c.value_path = ValuePathKind::cstring;
  } else if (v == "string") {
    c.value_path = ValuePathKind::string;
  } else {
    e = "unknown --value-path '" + std::string(v) + "' (want string or cstring)";
  }
  return e.empty();
}
bool apply_dispatch(Config& c, std::string_view v, std::string& e) {
  if (v == "ordered") {
    c.dispatch = DispatchKind::ordered;
  } else if (v == "naive") {
    c.dispatch = DispatchKind::naive;
  } else {
    e = "unknown --dispatch '" + std::string(v) + "' (want naive or ordered)";
  }
  return e.empty();
}
bool apply_write_batching(Config& c, std::string_view v, std::string& e) {
  if (v == "on") {
    c.write_batching = WriteBatching::on;
  } else if (v == "off") {
    c.write_batching = WriteBatching::off;
  } else {
    e = "unknown --write-batching '" + std::string(v) + "' (want on or off)";
  }
  return e.empty();
}

bool apply_store(Config& c, std::string_view v, std::string& e) {
  if (!parse_store_uri(v)) e = bad_store_uri_error(v);
  c.store = v;
  return e.empty();
}
bool apply_store_timeout(Config& c, std::string_view v, std::string& e) {
  if (!parse_duration_ms(v, common::BareUnit::required, c.store_timeout) ||
      c.store_timeout.count() <= 0) {
    e = "invalid --store-timeout '" + std::string(v) +
        "' (want a positive duration with a unit, e.g. 500ms or 2s)";
  }
  return e.empty();
}
bool apply_store_connections(Config& c, std::string_view v, std::string& e) {
  if (!parse_int(v, c.store_connections) || c.store_connections < 2 ||
      c.store_connections > kMaxStoreConnections) {
    e = "invalid --store-connections '" + std::string(v) + "' (want 2.." +
        std::to_string(kMaxStoreConnections) + ": one writer, the rest readers)";
  }
  return e.empty();
}
bool apply_store_table(Config& c, std::string_view v, std::string& e) {
  if (v.empty() || v.size() > kMaxStoreTableBytes || v.find('\0') != std::string_view::npos) {
    e = "invalid --store-table (want a table name of 1.." + std::to_string(kMaxStoreTableBytes) +
        " bytes)";
  }
  c.store_table = v;
  return e.empty();
}
bool apply_write_mode(Config& c, std::string_view v, std::string& e) {
  if (v == "through") {
    c.write_mode = WriteMode::through;
  } else if (v == "behind") {
    c.write_mode = WriteMode::behind;
  } else {
    e = "unknown --write-mode '" + std::string(v) + "' (want through or behind)";
  }
  return e.empty();
}
bool apply_flush_interval(Config& c, std::string_view v, std::string& e) {
  if (!parse_duration_ms(v, common::BareUnit::required, c.flush_interval)) {
    std::chrono::milliseconds bare{};
    e = parse_duration_ms(v, common::BareUnit::seconds, bare)
            ? "--flush-interval '" + std::string(v) + "' needs a unit: ms or s (e.g. 100ms, 2s)"
            : "invalid --flush-interval '" + std::string(v) +
                  "' (want a duration with a unit, e.g. 100ms or 2s, up to 365 days)";
  }
  return e.empty();
}
bool apply_max_dirty(Config& c, std::string_view v, std::string& e) {
  if (!parse_size(v, c.max_dirty))
    e = "invalid --max-dirty '" + std::string(v) + "' (want BYTES with optional K/M/G)";
  return e.empty();
}
bool apply_board_maxmem(Config& c, std::string_view v, std::string& e) {
  if (!parse_size(v, c.board_maxmem))
    e = "invalid --board-maxmem '" + std::string(v) + "' (want BYTES with optional K/M/G)";
  return e.empty();
}
bool apply_board_top_cache(Config& c, std::string_view v, std::string& e) {
  if (v == "on") {
    c.board_top_cache = true;
  } else if (v == "off") {
    c.board_top_cache = false;
  } else {
    e = "unknown --board-top-cache '" + std::string(v) + "' (want on or off)";
  }
  return e.empty();
}
bool apply_board_source(Config& c, std::string_view v, std::string& e) {
  if (v == "memory") {
    c.board_source = BoardSource::memory;
  } else if (v == "store") {
    c.board_source = BoardSource::store;
  } else {
    e = "unknown --board-source '" + std::string(v) + "' (want memory or store)";
  }
  return e.empty();
}
bool apply_served_by(Config& c, std::string_view v, std::string& e) {
  constexpr std::size_t kMaxServedByBytes = 255;
  if (v == "off") {
    c.served_by.clear();
  } else if (v == "on") {
    c.served_by = "on";
  } else if (v.empty() || v.size() > kMaxServedByBytes || v.find(':') == std::string_view::npos ||
             std::any_of(v.begin(), v.end(), [](char ch) {
               return static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f;
             })) {
    e = "invalid --served-by '" + std::string(v) +
        "' (want on, off, or the HOST:PORT to announce, without spaces)";
  } else {
    c.served_by = v;
  }
  return e.empty();
}
bool apply_store_board_table(Config& c, std::string_view v, std::string& e) {
  if (v.empty() || v.size() > kMaxStoreTableBytes || v.find('\0') != std::string_view::npos) {
    e = "invalid --store-board-table (want a table name of 1.." +
        std::to_string(kMaxStoreTableBytes) + " bytes)";
  }
  c.store_board_table = v;
  return e.empty();
}
bool apply_admin_token_file(Config& c, std::string_view v, std::string& e) {
  if (v.empty()) e = "--admin-token-file must not be empty (want the PATH of the token file)";
  c.admin_token_file = v;  // read at start-up (load_admin_token, config.hh)
  return e.empty();
}
bool apply_allow_reset(Config& c, std::string_view /*value*/, std::string& /*error*/) {
  c.allow_reset = true;
  return true;
}
bool apply_store_faults(Config& c, std::string_view v, std::string& /*error*/) {
  c.store_faults = v;  // the store library checks the spec when it opens the store
  return true;
}

constexpr std::string_view kCacheGroup = "Cache and listener";
constexpr std::string_view kConnectionGroup =
    "Connections (DURATION: 10s, 500ms, 0.5s; a bare number is seconds)";
constexpr std::string_view kAdminGroup = "Admin routes: the full POST /reset (docs/server.md)";
constexpr std::string_view kVariantGroup =
    "Variants: each optimization or its baseline (docs/server.md)";
constexpr std::string_view kStoreGroup = "Durable store behind the cache (docs/api.md)";
constexpr std::string_view kBoardGroup = "Leaderboards (docs/api.md, \"Boards\")";

constexpr FlagSpec kFlags[] = {
    {kCacheGroup, "-m", "--maxmem", "BYTES", "cache capacity, K/M/G suffixes (default 64M)",
     apply_maxmem},
    {kCacheGroup, "-s", "--host", "ADDR", "listen address (default 127.0.0.1)", apply_host},
    {kCacheGroup, "-p", "--port", "N", "listen port, 0 picks a free one (default 8080)",
     apply_port},
    {kCacheGroup, "", "--resp-port", "N",
     "also serve the Redis protocol (RESP2) on this port, 0 picks a free one\n"
     "(default off; docs/resp.md)",
     apply_resp_port},
    {kCacheGroup, "-t", "--threads", "N", "worker threads (default 1)", apply_threads},
    {kCacheGroup, "-e", "--evictor", "NAME",
     "none, fifo, lru, clock, sieve or s3fifo (default: the library's, s3fifo)", apply_evictor},
    {kCacheGroup, "", "--max-value", "BYTES",
     "largest value accepted, K/M/G suffixes, at most --maxmem\n"
     "(default 1M, or --maxmem if smaller)",
     apply_max_value},
    {kCacheGroup, "", "--served-by", "on|off|HOST:PORT",
     "add \"X-Served-By: HOST:PORT\" to every response: on announces\n"
     "the bound address, or give the one to announce (a cluster\n"
     "node's address as the front knows it) (default off)",
     apply_served_by},
    {kConnectionGroup, "", "--header-timeout", "DURATION",
     "time allowed to send a request header (default 10s)", apply_header_timeout},
    {kConnectionGroup, "", "--idle-timeout", "DURATION",
     "keep-alive idle time before closing (default 60s)", apply_idle_timeout},
    {kConnectionGroup, "", "--max-connections", "N",
     "connections open at once; past it a new one gets 503 and is\n"
     "closed (default 10000)",
     apply_max_connections},
    {kConnectionGroup, "", "--max-inflight", "BYTES",
     "bytes held for all connections together: bodies being\n"
     "received, unwritten responses, writes waiting on the store;\n"
     "past it new requests get 503 (default 256M)",
     apply_max_inflight},
    {kConnectionGroup, "", "--io-model", "NAME",
     "per-thread (default) or shared; see docs/server.md", apply_io_model},
    {kAdminGroup, "", "--admin-token-file", "PATH",
     "a file holding the admin token (16+ bytes, trailing whitespace\n"
     "trimmed): POST /reset then needs \"Authorization: Bearer TOKEN\"\n"
     "(401 without it, 403 for a wrong one). Keep it 0600: a file group\n"
     "or others may write is refused, one they may read warns\n"
     "(default: none)",
     apply_admin_token_file},
    {kAdminGroup, "", "--allow-reset", "",
     "with a store and no token, allow POST /reset anyway (tests,\n"
     "benchmarks); without either it answers 403 (default: off)",
     apply_allow_reset},
    {kVariantGroup, "", "--variant", "NAME", "optimized (default) or baseline: sets the four below",
     apply_variant},
    {kVariantGroup, "", "--lock", "NAME", "cache locking: shared (default) or exclusive",
     apply_lock, true},
    {kVariantGroup, "", "--value-path", "NAME", "GET value copy: cstring (default) or string",
     apply_value_path, true},
    {kVariantGroup, "", "--dispatch", "NAME", "method dispatch: ordered (default) or naive",
     apply_dispatch, true},
    {kVariantGroup, "", "--write-batching", "on|off",
     "pipelined responses in one write: on (default) or off (one write each)", apply_write_batching,
     true},
    {kStoreGroup, "", "--store", "URI",
     "none (default: memory only), rocksdb:PATH (the directory is\n"
     "created if missing) or postgres:CONNINFO (a libpq connection\n"
     "string or URI; the table is created if missing); the cache\n"
     "sits in front of the store",
     apply_store},
    {kStoreGroup, "", "--write-mode", "MODE",
     "through (default): a PUT/DELETE is answered once it is durable\n"
     "in the store; behind: once it is in the cache, and it reaches\n"
     "the store within --flush-interval",
     apply_write_mode},
    {kStoreGroup, "", "--flush-interval", "DURATION",
     "write-behind: the longest a write stays only in memory; needs\n"
     "a unit, e.g. 100ms or 2s (default 100ms)",
     apply_flush_interval},
    {kStoreGroup, "", "--max-dirty", "BYTES",
     "the most bytes written but not yet durable: beyond it\n"
     "write-behind writes wait (never dropped) and write-through\n"
     "writes answer 503. At least --max-value + 250 (default 64M)",
     apply_max_dirty},
    {kStoreGroup, "", "--store-timeout", "DURATION",
     "how long a request waits for the store before it answers\n"
     "503, e.g. 500ms or 2s (default 2s)",
     apply_store_timeout},
    {kStoreGroup, "", "--store-connections", "N",
     "postgres: connections to PostgreSQL, one for writes and the\n"
     "rest for reads, 2..64 (default 4)",
     apply_store_connections},
    {kStoreGroup, "", "--store-table", "NAME",
     "postgres: the table holding the keys, created if missing\n"
     "(default kv)",
     apply_store_table},
    {kStoreGroup, "", "--store-board-table", "NAME",
     "postgres: the table holding the boards' rows, created if\n"
     "missing (default leaderboard)",
     apply_store_board_table},
    {kStoreGroup, "", "--store-faults", "SPEC",
     "testing only: fault injection, e.g.\n"
     "read-delay=50ms,sync-error-after=10 (default: none)",
     apply_store_faults},
    {kBoardGroup, "", "--board-maxmem", "BYTES",
     "memory for every board together, K/M/G suffixes, at least 2K;\n"
     "a new member beyond it gets 507 (default 64M)",
     apply_board_maxmem},
    {kBoardGroup, "", "--board-top-cache", "on|off",
     "keep each board's rendered top-N pages until an update\n"
     "moves a member within them (default on)",
     apply_board_top_cache},
    {kBoardGroup, "", "--board-source", "SOURCE",
     "where board reads are answered from: memory (the boards)\n"
     "or store (the database, with SQL; postgres, write-through:\n"
     "the baseline the boards are measured against) (default memory)",
     apply_board_source},
};

}  // namespace

std::string usage_text() {
  constexpr std::size_t kHelpColumn = 32;  // flag names, then the help from this column on
  const std::string continuation = "\n" + std::string(2 + kHelpColumn, ' ');
  std::ostringstream out;
  out << "usage: cache_server [flags]\n";
  // Each group once, in the order of its first row, with all its rows.
  std::vector<std::string_view> groups;
  for (const auto& f : kFlags)
    if (std::find(groups.begin(), groups.end(), f.group) == groups.end()) groups.push_back(f.group);
  for (const std::string_view group : groups) {
    out << "\n" << group << ":\n";
    for (const auto& f : kFlags) {
      if (f.group != group) continue;
      std::string names = f.short_name.empty() ? "    " : std::string(f.short_name) + ", ";
      names += f.long_name;
      if (!f.value_name.empty()) {
        names += ' ';
        names += f.value_name;
      }
      std::string help(f.help);
      for (std::size_t nl = help.find('\n'); nl != std::string::npos;
           nl = help.find('\n', nl + continuation.size())) {
        help.replace(nl, 1, continuation);
      }
      out << "  " << names
          << std::string(names.size() < kHelpColumn ? kHelpColumn - names.size() : 1, ' ') << help
          << "\n";
    }
  }
  out << "\n  -h, --help" << std::string(kHelpColumn - 10, ' ') << "print this help and exit\n";
  out << "\nBoth --flag VALUE and --flag=VALUE work.\n";
  return out.str();
}

ParseResult parse_flags(const std::vector<std::string_view>& args) {
  Config config;
  // --lock, --value-path, --dispatch and --write-batching win over --variant in any order: they
  // are checked in place (so errors come in command-line order) and applied again once every flag
  // is in.
  std::vector<std::pair<const FlagSpec*, std::string_view>> overrides;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") return HelpRequested{};
    std::string_view name = arg;
    std::string_view value;
    bool inline_value = false;
    if (arg.starts_with("--")) {
      if (auto eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
    }
    const FlagSpec* spec = nullptr;
    for (const auto& f : kFlags) {
      if ((!f.short_name.empty() && name == f.short_name) || name == f.long_name) spec = &f;
    }
    if (spec == nullptr) return FlagError{"unknown flag '" + std::string(arg) + "' (see --help)"};
    if (spec->value_name.empty()) {  // a switch
      if (inline_value) return FlagError{"flag " + std::string(name) + " takes no value"};
    } else if (!inline_value) {
      if (i + 1 >= args.size()) {
        return FlagError{"flag " + std::string(name) + " needs a value " +
                         std::string(spec->value_name)};
      }
      value = args[++i];
    }
    std::string error;
    if (!spec->apply(config, value, error)) return FlagError{error};
    if (spec->overrides_variant) overrides.emplace_back(spec, value);
  }
  for (const auto& [spec, value] : overrides) {
    std::string error;
    spec->apply(config, value, error);  // succeeded above
  }
  // The default --max-value (1M) shrinks to a smaller --maxmem, so `-m 512K` alone starts; a
  // --max-value given explicitly is kept, and validate() refuses it if it is above --maxmem.
  const bool max_value_given = std::any_of(args.begin(), args.end(), [](std::string_view a) {
    return a == "--max-value" || a.starts_with("--max-value=");
  });
  if (!max_value_given) config.max_value = std::min(config.max_value, config.maxmem);
  return config;
}

}  // namespace server
