// config.cc — cache_server's configuration: names of its enums, validation, the start-up line and
// the shard count (see config.hh). The command line is parsed in flags.cc.
#include "server/config.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <sstream>

#include "store/store.hh"
#include "tier/options.hh"

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

const char* to_string(BoardSource s) {
  switch (s) {
    case BoardSource::memory:
      return "memory";
    case BoardSource::store:
      return "store";
  }
  return "?";
}

std::optional<StoreUri> parse_store_uri(std::string_view uri) {
  if (uri == "none") return StoreUri{"none", {}};
  const std::optional<store::StoreUriParts> parts = store::split_store_uri(uri);
  if (!parts) return std::nullopt;
  return StoreUri{parts->scheme, parts->rest};
}

std::string bad_store_uri_error(std::string_view uri) {
  const std::size_t colon = uri.find(':');
  const std::string shown = colon == std::string_view::npos || colon + 1 == uri.size()
                                ? std::string(uri)
                                : std::string(uri.substr(0, colon + 1)) + "...";
  return "unknown --store '" + shown +
         "' (want none, rocksdb:PATH or postgres:CONNINFO, with a non-empty PATH or CONNINFO)";
}

ResetGuard reset_guard(const Config& c) {
  if (!c.admin_token.empty() || !c.admin_token_file.empty()) return ResetGuard::token;
  const std::optional<StoreUri> store = parse_store_uri(c.store);
  const bool has_store = store && store->scheme != "none";
  return has_store && !c.allow_reset ? ResetGuard::refused : ResetGuard::open;
}

const char* to_string(ResetGuard g) {
  constexpr const char* kNames[] = {"open", "token", "refused"};  // in ResetGuard's order
  const auto i = static_cast<std::size_t>(g);
  return i < std::size(kNames) ? kNames[i] : "?";
}

namespace {

// The file's first `limit` bytes (fewer when it is shorter) and its permission bits; false with
// errno set when it cannot be opened or read (a directory: EISDIR).
bool read_prefix(const std::string& path, std::size_t limit, std::string& out, mode_t& mode) {
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return false;
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return false;
  mode = st.st_mode & 07777;
  out.assign(limit, '\0');
  std::size_t got = 0;
  while (got < limit) {
    const ssize_t n = ::read(file.fd, out.data() + got, limit - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return true;
}

// "0640": a mode as chmod takes it.
std::string octal_mode(mode_t mode) {
  std::string out(4, '0');
  for (std::size_t i = out.size(); i-- > 0; mode >>= 3)
    out[i] = static_cast<char>('0' + (mode & 7));
  return out;
}

// The token's own checks ("" when it passes). Reported before the file's mode: a bad token is
// the problem to fix whatever the mode.
std::string check_admin_token(const std::string& named, std::string_view text) {
  const std::string want = " (want one token of " + std::to_string(kMinAdminTokenBytes) + ".." +
                           std::to_string(kMaxAdminTokenBytes) +
                           " visible ASCII characters, e.g. `openssl rand -hex 32`)";
  if (text.empty()) return named + " is empty" + want;
  if (text.size() < kMinAdminTokenBytes) {
    return named + " holds a token of " + std::to_string(text.size()) + " bytes: too short" + want;
  }
  if (text.size() > kMaxAdminTokenBytes) return named + " holds a token that is too long" + want;
  for (const char ch : text) {
    if (static_cast<unsigned char>(ch) <= ' ' || static_cast<unsigned char>(ch) >= 0x7f) {
      return named + " holds whitespace, control or non-ASCII bytes" + want;
    }
  }
  return {};
}

}  // namespace

AdminTokenLoad load_admin_token(Config& c) {
  if (c.admin_token_file.empty()) return {};
  const std::string named = "--admin-token-file '" + c.admin_token_file + "'";
  // Room past the longest token for trailing whitespace, so "too long" is told apart.
  std::string text;
  mode_t mode = 0;
  if (!read_prefix(c.admin_token_file, kMaxAdminTokenBytes + 64, text, mode)) {
    return {"cannot read " + named + ": " + std::strerror(errno), 1, {}};
  }
  const std::size_t end = text.find_last_not_of(" \t\r\n\v\f");
  text.resize(end == std::string::npos ? 0 : end + 1);
  if (std::string problem = check_admin_token(named, text); !problem.empty()) {
    return {std::move(problem), 1, {}};
  }
  const std::string chmod = "; chmod 600 '" + c.admin_token_file + "'";
  if ((mode & (S_IWGRP | S_IWOTH)) != 0) {
    return {named + " is UNPROTECTED: mode " + octal_mode(mode) +
                " lets group or others write it, so they could change the admin token" + chmod,
            2,
            {}};
  }
  AdminTokenLoad loaded;
  if ((mode & (S_IRGRP | S_IROTH)) != 0) {
    loaded.warning = "warning: " + named + " has mode " + octal_mode(mode) +
                     ": group or others may read the admin token" + chmod;
  }
  c.admin_token = std::move(text);
  return loaded;
}

bool admin_token_matches(std::string_view token, std::string_view presented) {
  // Every byte of the token is compared, whatever the earlier ones gave; the accumulated
  // difference is inspected once, at the end (no early exit for a timer to see).
  unsigned diff = token.size() == presented.size() ? 0u : 1u;
  for (std::size_t i = 0; i < token.size(); ++i) {
    const unsigned char got = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff |= static_cast<unsigned char>(token[i]) ^ got;
  }
  return !token.empty() && diff == 0;
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

std::string validate_store(const Config& c);

std::string validate(const Config& c) {
  if (c.maxmem == 0) return "--maxmem must be at least 1 byte";
  if (c.max_value == 0) return "--max-value must be at least 1 byte";
  // A larger --max-value would accept bodies no entry can hold (and its sums could overflow).
  if (c.max_value > kMaxValueLimit) {
    return "--max-value " + std::to_string(c.max_value) + " is too large: at most " +
           std::to_string(kMaxValueLimit) + " bytes (4 GiB - 1, the largest value an entry holds)";
  }
  if (c.max_value > c.maxmem) {
    return "--max-value " + std::to_string(c.max_value) + " is larger than --maxmem " +
           std::to_string(c.maxmem) + ": no value that large could ever be stored";
  }
  if (c.threads < 1 || c.threads > kMaxThreads) {
    return "--threads must be 1.." + std::to_string(kMaxThreads);
  }
  if (c.header_timeout.count() <= 0) return "--header-timeout must be positive";
  if (c.idle_timeout.count() <= 0) return "--idle-timeout must be positive";
  if (c.max_connections == 0) return "--max-connections must be at least 1";
  if (c.board_maxmem < kMinBoardMaxmemBytes) {
    return "--board-maxmem " + std::to_string(c.board_maxmem) + " is too small: at least " +
           std::to_string(kMinBoardMaxmemBytes) + " bytes (2K, the largest board with one member)";
  }
  if (c.max_inflight < c.max_value) {
    return "--max-inflight " + std::to_string(c.max_inflight) + " is smaller than --max-value " +
           std::to_string(c.max_value) + ": the largest value could never be received";
  }
  return validate_store(c);
}

// The --store flags, and the limits that depend on the store.
std::string validate_store(const Config& c) {
  const std::optional<StoreUri> store = parse_store_uri(c.store);
  if (!store) return bad_store_uri_error(c.store);
  const bool has_store = store->scheme != "none";
  if (store->scheme == "postgres" && c.max_value > store::kPostgresMaxValue) {
    return "--max-value " + std::to_string(c.max_value) +
           " is too large for --store postgres: " + "at most " +
           std::to_string(store::kPostgresMaxValue) +
           " bytes (512 MiB, what one bytea row can hold and still be dumped)";
  }
  if (c.flush_interval.count() <= 0) return "--flush-interval must be at least 1ms";
  // The dirty bound only matters with a store; without one it must not reject a large
  // --max-value that worked before the store existed.
  const std::size_t largest_write = c.max_value + cache::kMaxKeyBytes;  // ≤ 4 GiB + 249
  if (has_store && c.max_dirty < largest_write) {
    return "--max-dirty " + std::to_string(c.max_dirty) + " is too small: it must be at least " +
           "--max-value + " + std::to_string(cache::kMaxKeyBytes) + " (" +
           std::to_string(largest_write) + " bytes), so the largest write always fits";
  }
  if (!has_store && !c.store_faults.empty()) {
    return "--store-faults needs a store (--store rocksdb:PATH or postgres:CONNINFO)";
  }
  if (c.store_timeout.count() <= 0) return "--store-timeout must be at least 1ms";
  if (c.store_connections < 2 || c.store_connections > kMaxStoreConnections) {
    return "--store-connections must be 2.." + std::to_string(kMaxStoreConnections) +
           " (one writer, the rest readers)";
  }
  if (c.store_table.empty() || c.store_table.size() > kMaxStoreTableBytes) {
    return "--store-table must be 1.." + std::to_string(kMaxStoreTableBytes) + " bytes";
  }
  if (c.store_board_table.empty() || c.store_board_table.size() > kMaxStoreTableBytes) {
    return "--store-board-table must be 1.." + std::to_string(kMaxStoreTableBytes) + " bytes";
  }
  // (A flag given its default value cannot be told from one not given: that is harmless.)
  if (store->scheme != "postgres" &&
      (c.store_connections != kDefaultStoreConnections || c.store_table != kDefaultStoreTable ||
       c.store_board_table != kDefaultStoreBoardTable)) {
    return "--store-connections, --store-table and --store-board-table need --store "
           "postgres:CONNINFO";
  }
  if (store->scheme == "postgres" && c.store_board_table == c.store_table) {
    return "--store-board-table and --store-table must name different tables";
  }
  if (c.board_source == BoardSource::store) {
    if (store->scheme != "postgres") {
      return "--board-source store needs --store postgres:CONNINFO (its reads are SQL)";
    }
    if (c.write_mode != WriteMode::through) {
      return "--board-source store needs --write-mode through (a database read would not see "
             "write-behind's dirty board rows)";
    }
  }
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
  const std::optional<StoreUri> store = parse_store_uri(c.store);
  out << " store=" << (store ? store->scheme : std::string_view("invalid"))
      << " write_mode=" << to_string(c.write_mode)
      << " flush_interval_ms=" << c.flush_interval.count() << " max_dirty=" << c.max_dirty
      << " store_timeout_ms=" << c.store_timeout.count();
  if (store && store->scheme == "postgres") {
    out << " store_connections=" << c.store_connections << " store_table=" << c.store_table
        << " store_board_table=" << c.store_board_table;
  }
  out << " reset=" << to_string(reset_guard(c));
  out << " max_connections=" << c.max_connections << " max_inflight=" << c.max_inflight
      << " board_maxmem=" << c.board_maxmem
      << " board_top_cache=" << (c.board_top_cache ? "on" : "off")
      << " board_source=" << to_string(c.board_source);
  if (!c.served_by.empty()) out << " served_by=" << c.served_by;
  if (c.resp_port) out << " resp_port=" << *c.resp_port;
  return out.str();
}

}  // namespace server
