// open_store.cc — see open_store.hh: parses a store URI (rocksdb:PATH, postgres:CONNINFO),
// picks the engine and wires in the fault injection the Faults ask for.
#include "store/open_store.hh"

#include <rocksdb/file_system.h>

#include "store/faults.hh"
#include "store/postgres_store.hh"
#include "store/rocksdb_store.hh"

namespace store {

namespace {

constexpr const char* kExpected = "expected none, rocksdb:PATH or postgres:CONNINFO";

std::unique_ptr<Store> open_rocksdb(std::string_view path, const OpenOptions& o,
                                    std::string& error) {
  RocksOptions options;
  options.path = std::string(path);
  options.read_delay = o.faults.read_delay;
  std::shared_ptr<detail::FaultFileSystem> fault_fs;
  if (detail::FaultFileSystem::needed(o.faults)) {
    fault_fs = std::make_shared<detail::FaultFileSystem>(rocksdb::FileSystem::Default(), o.faults);
    options.file_system = fault_fs;
  }
  auto store = RocksStore::open(options, error);
  if (store && fault_fs) fault_fs->arm();  // count commits from here, not recovery's syncs
  return store;
}

std::unique_ptr<Store> open_postgres(std::string_view conninfo, const OpenOptions& o,
                                     std::string& error) {
  // The injected write faults fail RocksDB's own files; PostgreSQL's are the server's.
  if (o.faults.write_error_after >= 0 || o.faults.sync_error_after >= 0 ||
      o.faults.no_space_after >= 0 || o.faults.sync_hang_after >= 0 ||
      o.faults.sync_delay.count() > 0) {
    error =
        "store 'postgres:' supports only the read-delay fault (write-error-after, "
        "sync-error-after, no-space-after, sync-hang-after and sync-delay are RocksDB's)";
    return nullptr;
  }
  PostgresOptions options;
  options.conninfo = std::string(conninfo);
  options.table = o.table;
  options.board_table = o.board_table;
  options.connections = o.connections;
  options.read_delay = o.faults.read_delay;
  return PostgresStore::open(options, error);
}

}  // namespace

std::unique_ptr<Store> open_store(std::string_view uri, const OpenOptions& options,
                                  std::string& error) {
  const auto parts = split_store_uri(uri);
  if (!parts) {
    if (uri == "none") {
      error = std::string("store 'none' is no store (callers handle it; ") + kExpected + ")";
    } else if (uri == "rocksdb:") {
      error = "store 'rocksdb:' needs a path (rocksdb:PATH)";
    } else if (uri == "postgres:") {
      error =
          "store 'postgres:' needs a connection string (postgres:CONNINFO, e.g. "
          "postgres:host=127.0.0.1 dbname=cache, or postgres:postgresql://...)";
    } else {
      error = "unknown store '" + std::string(uri) + "' (" + kExpected + ")";
    }
    return nullptr;
  }
  if (parts->scheme == "postgres") return open_postgres(parts->rest, options, error);
  return open_rocksdb(parts->rest, options, error);
}

std::unique_ptr<Store> open_store(std::string_view uri, const Faults& faults, std::string& error) {
  OpenOptions options;
  options.faults = faults;
  return open_store(uri, options, error);
}

}  // namespace store
