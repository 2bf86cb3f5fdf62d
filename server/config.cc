// config.cc — flag parsing and validation for cache_server (see config.hh).
#include "server/config.hh"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

namespace server {

const char* to_string(IoModel m) {
  switch (m) {
    case IoModel::per_thread:
      return "per-thread";
    case IoModel::shared:
      return "shared";
  }
  return "?";
}

const char* to_string(ValuePathKind v) {
  switch (v) {
    case ValuePathKind::cstring:
      return "cstring";
    case ValuePathKind::string:
      return "string";
  }
  return "?";
}

const char* to_string(DispatchKind d) {
  switch (d) {
    case DispatchKind::ordered:
      return "ordered";
    case DispatchKind::naive:
      return "naive";
  }
  return "?";
}

const char* to_string(WriteBatching b) {
  return b == WriteBatching::on ? "on" : "off";
}

const char* variant_name(const Config& c) {
  const bool lock = c.lock == cache::LockScheme::shared_reads;
  const bool value = c.value_path == ValuePathKind::cstring;
  const bool dispatch = c.dispatch == DispatchKind::ordered;
  const bool batching = c.write_batching == WriteBatching::on;
  if (lock && value && dispatch && batching) return "optimized";
  if (!lock && !value && !dispatch && !batching) return "baseline";
  return "custom";
}

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

bool parse_seconds(std::string_view text, std::chrono::milliseconds& out) {
  double seconds = 0;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, seconds);
  if (ec != std::errc{} || ptr != last || text.empty()) return false;
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 86400.0 * 365) return false;
  out = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
  return true;
}

namespace {

template <class Int>
bool parse_int(std::string_view text, Int& out) {
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, out);
  return ec == std::errc{} && ptr == last && !text.empty();
}

// One flag: its names, and how its value lands in Config.
struct FlagSpec {
  std::string_view short_name;  // "-m" or empty
  std::string_view long_name;   // "--maxmem"
  std::string_view value_name;  // "BYTES"
  std::string_view help;
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
bool apply_threads(Config& c, std::string_view v, std::string& e) {
  if (!parse_int(v, c.threads)) e = "invalid --threads '" + std::string(v) + "'";
  return e.empty();
}
bool apply_evictor(Config& c, std::string_view v, std::string& e) {
  if (auto ev = cache::parse_evictor(v)) {
    c.evictor = *ev;
  } else {
    e = "unknown --evictor '" + std::string(v) + "' (want none, fifo, lru or clock)";
  }
  return e.empty();
}
bool apply_max_value(Config& c, std::string_view v, std::string& e) {
  if (!parse_size(v, c.max_value)) e = "invalid --max-value '" + std::string(v) + "'";
  return e.empty();
}
bool apply_header_timeout(Config& c, std::string_view v, std::string& e) {
  if (!parse_seconds(v, c.header_timeout))
    e = "invalid --header-timeout '" + std::string(v) + "' (seconds)";
  return e.empty();
}
bool apply_idle_timeout(Config& c, std::string_view v, std::string& e) {
  if (!parse_seconds(v, c.idle_timeout))
    e = "invalid --idle-timeout '" + std::string(v) + "' (seconds)";
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

constexpr FlagSpec kFlags[] = {
    {"-m", "--maxmem", "BYTES", "cache capacity, K/M/G suffixes (default 64M)", apply_maxmem},
    {"-s", "--host", "ADDR", "listen address (default 127.0.0.1)", apply_host},
    {"-p", "--port", "N", "listen port, 0 picks a free one (default 8080)", apply_port},
    {"-t", "--threads", "N", "worker threads (default 1)", apply_threads},
    {"-e", "--evictor", "NAME", "none, fifo, lru or clock (default: the library's, clock)",
     apply_evictor},
    {"", "--max-value", "BYTES", "largest value accepted, K/M/G suffixes (default 1M)",
     apply_max_value},
    {"", "--header-timeout", "SECONDS", "time allowed to send a request header (default 10)",
     apply_header_timeout},
    {"", "--idle-timeout", "SECONDS", "keep-alive idle time before closing (default 60)",
     apply_idle_timeout},
    {"", "--io-model", "NAME", "per-thread (default) or shared; see docs/server.md",
     apply_io_model},
    {"", "--variant", "NAME", "optimized (default) or baseline: sets the four below",
     apply_variant},
    {"", "--lock", "NAME", "cache locking: shared (default) or exclusive", apply_lock, true},
    {"", "--value-path", "NAME", "GET value copy: cstring (default) or string", apply_value_path,
     true},
    {"", "--dispatch", "NAME", "method dispatch: ordered (default) or naive", apply_dispatch, true},
    {"", "--write-batching", "on|off",
     "pipelined responses in one write: on (default) or off (one write each)", apply_write_batching,
     true},
};

}  // namespace

std::string usage_text() {
  std::ostringstream out;
  out << "usage: cache_server [flags]\n";
  for (const auto& f : kFlags) {
    std::string names = f.short_name.empty() ? "    " : std::string(f.short_name) + ", ";
    names += std::string(f.long_name) + " " + std::string(f.value_name);
    out << "  " << names << std::string(names.size() < 30 ? 30 - names.size() : 1, ' ') << f.help
        << "\n";
  }
  out << "  -h, --help" << std::string(20, ' ') << "print this help and exit\n";
  return out.str();
}

ParseResult parse_flags(const std::vector<std::string_view>& args) {
  Config config;
  // --lock, --value-path, --dispatch and --write-batching win over --variant in any order: they are
  // checked in place (so errors come in command-line order) and applied again once every flag is
  // in.
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
    if (!inline_value) {
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
  return config;
}

std::string validate(const Config& c) {
  if (c.maxmem == 0) return "--maxmem must be at least 1 byte";
  if (c.max_value == 0) return "--max-value must be at least 1 byte";
  if (c.threads < 1 || c.threads > kMaxThreads) {
    return "--threads must be 1.." + std::to_string(kMaxThreads);
  }
  if (c.header_timeout.count() <= 0) return "--header-timeout must be positive";
  if (c.idle_timeout.count() <= 0) return "--idle-timeout must be positive";
  return {};
}

unsigned shard_count(const Config& c) {
  const std::size_t largest_entry = c.max_value + cache::kMaxKeyBytes;
  unsigned shards = 1;
  while (shards * 2 <= kMaxShards && c.maxmem / (shards * 2) >= largest_entry) shards *= 2;
  return shards;
}

std::string describe(const Config& c) {
  std::ostringstream out;
  out << "config maxmem=" << c.maxmem << " host=" << c.host << " port=" << c.port
      << " threads=" << c.threads << " evictor=" << cache::to_string(c.evictor)
      << " max_value=" << c.max_value << " header_timeout_ms=" << c.header_timeout.count()
      << " idle_timeout_ms=" << c.idle_timeout.count() << " io_model=" << to_string(c.io_model)
      << " shards=" << shard_count(c) << " variant=" << variant_name(c)
      << " lock=" << cache::to_string(c.lock) << " value_path=" << to_string(c.value_path)
      << " dispatch=" << to_string(c.dispatch) << " write_batching=" << to_string(c.write_batching);
  return out.str();
}

}  // namespace server
