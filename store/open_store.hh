// open_store.hh — opens the store a URI names: picks the engine (RocksStore, PostgresStore) and
// wires in the fault injection the Faults ask for. Apart from store.hh so that the contract's
// files include no engine (tests/server/test_layers.py): only whoever opens a store (the
// server's start-up, the tests, the benchmarks) includes this.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "store/store.hh"

namespace store {

// What open_store needs beyond the URI. Fields a scheme does not use are ignored.
struct OpenOptions {
  Faults faults;                            // postgres: only read_delay (other faults are refused)
  std::string table = "kv";                 // postgres: the table (created if missing)
  std::string board_table = "leaderboard";  // postgres: the boards' table (created if missing)
  int connections = 4;  // postgres: pool size, >= 2 (one writer, the rest readers)
};

// Opens the store a URI names:
//   "rocksdb:PATH"       PATH is created if missing
//   "postgres:CONNINFO"  CONNINFO is a libpq keyword/value string ("host=... dbname=...") or a
//                        postgresql:// URI, passed to libpq as is; the table is created if missing
// Returns nullptr and a one-line error on failure (unknown scheme, bad path, a locked database,
// an unreachable server, ...). "none" is not a store: callers handle it before calling this.
[[nodiscard]] std::unique_ptr<Store> open_store(std::string_view uri, const OpenOptions& options,
                                                std::string& error);
// The same with default OpenOptions but these faults. (Both take a braced list: write
// `Faults{}` or `OpenOptions{}`, as a bare `{}` is ambiguous between them.)
[[nodiscard]] std::unique_ptr<Store> open_store(std::string_view uri, const Faults& faults,
                                                std::string& error);

}  // namespace store
