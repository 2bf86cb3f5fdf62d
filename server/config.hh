// config.hh — the server's whole configuration in one struct, its defaults (named, with units),
// validation, and the start-up description. main() parses argv with parse_flags (flags.hh),
// validates, and hands the struct on; nothing else reads argv or keeps configuration in globals.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cache/cache.hh"

namespace tier {
enum class WriteMode : std::uint8_t;  // tier/options.hh
}  // namespace tier

namespace server {

inline constexpr std::size_t kDefaultMaxmemBytes = 64u << 20;   // -m/--maxmem
inline constexpr std::size_t kDefaultMaxValueBytes = 1u << 20;  // --max-value
// The largest --max-value there can be: a cache entry stores its value's length in 32 bits
// (cache/entry.hh), so 4 GiB − 1; and never more than --maxmem (validate()).
inline constexpr std::size_t kMaxValueLimit = 0xFFFF'FFFFu;
inline constexpr std::uint16_t kDefaultPort = 8080;  // -p/--port
inline constexpr unsigned kDefaultThreads = 1;       // -t/--threads
inline constexpr unsigned kMaxThreads = 256;
inline constexpr std::chrono::milliseconds kHeaderTimeout{10'000};   // --header-timeout
inline constexpr std::chrono::milliseconds kIdleTimeout{60'000};     // --idle-timeout
inline constexpr std::size_t kDefaultMaxConnections = 10'000;        // --max-connections
inline constexpr std::size_t kDefaultMaxInflightBytes = 256u << 20;  // --max-inflight
inline constexpr std::size_t kHeaderLimitBytes = 8 * 1024;  // request line + fields; over → 431
inline constexpr unsigned kMaxShards = 16;  // cache shards, fewer when maxmem is small
inline constexpr const char* kDefaultHost = "127.0.0.1";
inline constexpr const char* kDefaultStore = "none";                    // --store: no durable store
inline constexpr std::chrono::milliseconds kDefaultFlushInterval{100};  // --flush-interval
inline constexpr std::chrono::milliseconds kDefaultStoreTimeout{2000};  // --store-timeout
inline constexpr int kDefaultStoreConnections = 4;                      // --store-connections
inline constexpr const char* kDefaultStoreTable = "kv";                 // --store-table
inline constexpr const char* kDefaultStoreBoardTable = "leaderboard";   // --store-board-table
inline constexpr int kMaxStoreConnections = 64;
inline constexpr std::size_t kMaxStoreTableBytes = 63;              // PostgreSQL's identifier limit
inline constexpr std::size_t kDefaultMaxDirtyBytes = 64u << 20;     // --max-dirty
inline constexpr std::size_t kDefaultBoardMaxmemBytes = 64u << 20;  // --board-maxmem
// --admin-token-file: the token's length bounds, in bytes (after trailing whitespace is trimmed).
// 16 is the contract's floor (docs/server.md, "Security model"); 4 KiB keeps the header that
// carries it well inside kHeaderLimitBytes.
inline constexpr std::size_t kMinAdminTokenBytes = 16;
inline constexpr std::size_t kMaxAdminTokenBytes = 4096;
// The smallest --board-maxmem: room for the largest board with one member (a 250-byte board
// name and a 250-byte member cost about 1,060 bytes, boards/registry.cc; test_boards.py checks it).
inline constexpr std::size_t kMinBoardMaxmemBytes = 2048;

// How worker threads share the network work (see docs/server.md for the measurement).
enum class IoModel : std::uint8_t {
  per_thread,  // one io_context + one SO_REUSEPORT acceptor per thread (default)
  shared,      // one io_context run by every thread; each connection on its own strand
};
const char* to_string(IoModel m);

// The request-path variants (docs/server.md, "Variants"): each optimization and its baseline.
// The lock scheme is cache::LockScheme; the other two are compile-time policies (variant.hh)
// whose instantiation is picked once at start-up from these values.
enum class ValuePathKind : std::uint8_t {
  cstring,  // copy the stored bytes straight into the response inside the cache's sink
  string,   // baseline: copy the value into a std::string per request, then respond from it
};
enum class DispatchKind : std::uint8_t {
  ordered,  // method checks in order of request frequency: GET, PUT, DELETE, HEAD, POST
  naive,    // baseline: the same routes checked POST, HEAD, DELETE, PUT, GET (key route last)
};
enum class WriteBatching : std::uint8_t {
  on,   // every response to the requests already in the input buffer goes out in one write
  off,  // baseline: one write per response, as a read-one/write-one server (Beast's examples)
};
const char* to_string(ValuePathKind v);
const char* to_string(DispatchKind d);
const char* to_string(WriteBatching b);

// --write-mode: defined with the tier (tier/options.hh), declared here only, so that the
// transport, which includes this file, reaches nothing in tier/ (tests/server/test_layers.py).
using tier::WriteMode;

// Where board reads are answered from (--board-source).
enum class BoardSource : std::uint8_t {
  memory,  // the in-memory boards (boards/): the default
  store,   // the database, with SQL (postgres only): the baseline the boards are measured against
};
const char* to_string(BoardSource s);  // "memory" / "store"

struct Config {
  std::size_t maxmem = kDefaultMaxmemBytes;
  std::string host = kDefaultHost;
  std::uint16_t port = kDefaultPort;  // 0: the kernel picks one
  // --resp-port: the Redis-protocol front's port on the same host (0: a free one); off when
  // unset (docs/resp.md).
  std::optional<std::uint16_t> resp_port;
  unsigned threads = kDefaultThreads;
  cache::Evictor evictor = cache::kDefaultEvictor;
  std::size_t max_value = kDefaultMaxValueBytes;
  std::chrono::milliseconds header_timeout = kHeaderTimeout;
  std::chrono::milliseconds idle_timeout = kIdleTimeout;
  std::size_t max_connections = kDefaultMaxConnections;  // open at once; past it: 503 and close
  std::size_t max_inflight = kDefaultMaxInflightBytes;   // bytes held for connections, in sum
  IoModel io_model = IoModel::per_thread;
  cache::LockScheme lock = cache::LockScheme::shared_reads;  // --lock / --variant
  ValuePathKind value_path = ValuePathKind::cstring;         // --value-path / --variant
  DispatchKind dispatch = DispatchKind::ordered;             // --dispatch / --variant
  WriteBatching write_batching = WriteBatching::on;          // --write-batching / --variant
  // The durable store behind the cache (docs/api.md, "Command line").
  std::string store = kDefaultStore;  // --store: none, rocksdb:PATH or postgres:CONNINFO
  WriteMode write_mode{};             // --write-mode; {} is through (tier/options.hh)
  std::chrono::milliseconds flush_interval = kDefaultFlushInterval;  // --flush-interval
  std::size_t max_dirty = kDefaultMaxDirtyBytes;  // --max-dirty (write-behind bound)
  std::string store_faults;  // --store-faults: fault injection (tests); checked by store/
  std::chrono::milliseconds store_timeout = kDefaultStoreTimeout;  // --store-timeout
  int store_connections = kDefaultStoreConnections;                // --store-connections (postgres)
  std::string store_table = kDefaultStoreTable;                    // --store-table (postgres)
  std::string store_board_table = kDefaultStoreBoardTable;         // --store-board-table (postgres)
  // The leaderboards (boards/, docs/api.md "Boards"): in memory, one budget for all of them,
  // durable through the store when there is one.
  std::size_t board_maxmem = kDefaultBoardMaxmemBytes;  // --board-maxmem
  bool board_top_cache = true;  // --board-top-cache: keep rendered top-N pages (top_cache.hh)
  BoardSource board_source = BoardSource::memory;  // --board-source
  // --served-by: "" (off, the default), "on" (announce the bound HOST:PORT) or a HOST:PORT to
  // announce, sent as "X-Served-By: HOST:PORT" on every response (docs/cluster.md).
  std::string served_by;
  // The admin routes (docs/server.md, "Security model"): the full POST /reset.
  std::string admin_token_file;  // --admin-token-file PATH ("" = none)
  std::string admin_token;       // its token, read by load_admin_token(); never printed
  bool allow_reset = false;      // --allow-reset: a full reset without a token, with a store
};

// A --store URI split into its scheme and the rest: "none" → {"none", ""}, "rocksdb:/d" →
// {"rocksdb", "/d"}, "postgres:host=h" → {"postgres", "host=h"} (store::split_store_uri). nullopt
// for anything else, including a scheme with nothing after it.
struct StoreUri {
  std::string_view scheme;
  std::string_view path;
};
std::optional<StoreUri> parse_store_uri(std::string_view uri);
// The error for a --store URI parse_store_uri refuses. It shows the scheme, not the rest: a
// conninfo may hold a password ("file:/x" → "unknown --store 'file:...' (want ...)").
std::string bad_store_uri_error(std::string_view uri);

// Who may run the full POST /reset (cache and store), from the configuration:
enum class ResetGuard : std::uint8_t {
  open,     // anyone: no store (it empties only memory), or --allow-reset
  token,    // only a request with "Authorization: Bearer <the --admin-token-file token>"
  refused,  // nobody: a store, and neither a token nor --allow-reset (403)
};
ResetGuard reset_guard(const Config& config);
const char* to_string(ResetGuard g);  // "open" / "token" / "refused"

// What load_admin_token found.
struct AdminTokenLoad {
  std::string error;    // "" when the token was read, else the one-line start-up error
  int exit_status = 0;  // with an error: 2 when group or others may write the file, else 1
  std::string warning;  // "" or one line for stderr: group or others may read the file
};

// Reads --admin-token-file into config.admin_token (nothing to do without one): the file's
// bytes with trailing whitespace trimmed, kMinAdminTokenBytes..kMaxAdminTokenBytes of visible
// ASCII (a header carries it). An error when the file is missing, unreadable, empty, too short,
// too long, or holds whitespace or control bytes (exit status 1); then its mode, as OpenSSH
// checks a private key's: one that group or others may write is an error (exit status 2: they
// could change the token), one they may read a warning (they could use it). The mode is the
// opened file's (fstat), so it is the file whose token was read.
AdminTokenLoad load_admin_token(Config& config);

// Whether `presented` is the admin token, in time that depends on the two lengths only (never on
// where the first differing byte is), so a client cannot find the token byte by byte by timing.
bool admin_token_matches(std::string_view token, std::string_view presented);

// "optimized" (all four optimizations), "baseline" (none of them) or "custom" (a mix).
const char* variant_name(const Config& config);

// Cross-field and range checks; an empty string means the config is usable, anything else is a
// one-line error.
std::string validate(const Config& config);

// One stable line describing the effective configuration (printed at start-up).
std::string describe(const Config& config);

// Shard count for the cache: at most kMaxShards, a power of two, and each shard's share of
// maxmem still holds the largest acceptable entry (max_value + a full-length key).
unsigned shard_count(const Config& config);

}  // namespace server
