// store.cc — the engine-independent part of store.hh: code names and open_store, which parses a
// store URI, picks the engine and wires in the fault injection the Faults ask for.
#include "store/store.hh"

#include <rocksdb/file_system.h>

#include "store/faults.hh"
#include "store/rocksdb_store.hh"

namespace store {

const char* to_string(Code c) {
  switch (c) {
    case Code::ok:
      return "ok";
    case Code::not_found:
      return "not_found";
    case Code::io_error:
      return "io_error";
    case Code::no_space:
      return "no_space";
    case Code::failed:
      return "failed";
    case Code::closed:
      return "closed";
  }
  return "unknown";
}

std::unique_ptr<Store> open_store(std::string_view uri, const Faults& faults, std::string& error) {
  constexpr std::string_view kRocks = "rocksdb:";
  if (!uri.starts_with(kRocks)) {
    error = "unknown store '" + std::string(uri) + "' (expected none or rocksdb:PATH)";
    if (uri == "none")
      error = "store 'none' is no store (callers handle it; expected rocksdb:PATH)";
    return nullptr;
  }
  RocksOptions options;
  options.path = std::string(uri.substr(kRocks.size()));
  if (options.path.empty()) {
    error = "store 'rocksdb:' needs a path (rocksdb:PATH)";
    return nullptr;
  }
  options.read_delay = faults.read_delay;
  std::shared_ptr<detail::FaultFileSystem> fault_fs;
  if (detail::FaultFileSystem::needed(faults)) {
    fault_fs = std::make_shared<detail::FaultFileSystem>(rocksdb::FileSystem::Default(), faults);
    options.file_system = fault_fs;
  }
  auto store = RocksStore::open(options, error);
  if (store && fault_fs) fault_fs->arm();  // count commits from here, not recovery's syncs
  return store;
}

}  // namespace store
