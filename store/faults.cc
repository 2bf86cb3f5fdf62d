// faults.cc — fault injection for tests: parse_faults (the --store-faults syntax, store.hh) and
// FaultFileSystem (faults.hh), which fails RocksDB's own WAL appends and syncs so that the real
// engine's error path, not a stand-in, is what the store tests and the server tests exercise.
#include "store/faults.hh"

#include <chrono>
#include <thread>

#include <charconv>
#include <limits>
#include <string>
#include <utility>

namespace store {

namespace {

constexpr std::string_view kKnown =
    "read-delay, write-error-after, sync-error-after, no-space-after, sync-hang-after, "
    "sync-delay";

// "50ms", "2s", "0.5s": a non-negative decimal and a unit, to whole milliseconds.
bool parse_delay(std::string_view text, std::chrono::milliseconds& out) {
  std::int64_t per_unit = 0;
  if (text.ends_with("ms")) {
    per_unit = 1;
    text.remove_suffix(2);
  } else if (text.ends_with("s")) {
    per_unit = 1000;
    text.remove_suffix(1);
  } else {
    return false;
  }
  const auto dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  if (whole.empty() && frac.empty()) return false;
  if (whole.size() > 9 || frac.size() > 9) return false;  // no overflow below
  std::int64_t w = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return false;
    w = w * 10 + (c - '0');
  }
  // The fraction in units of 10^-9 of the unit; it must come to whole milliseconds.
  std::int64_t f = 0;
  std::int64_t scale = 1'000'000'000;
  for (char c : frac) {
    if (c < '0' || c > '9') return false;
    scale /= 10;
    f += (c - '0') * scale;
  }
  const std::int64_t frac_ns = f * per_unit;  // in 10^-9 ms
  if (frac_ns % 1'000'000'000 != 0) return false;
  out = std::chrono::milliseconds(w * per_unit + frac_ns / 1'000'000'000);
  return true;
}

bool parse_count(std::string_view text, std::int64_t& out) {
  if (text.empty() || text.front() == '+' || text.front() == '-') return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool parse_faults(std::string_view spec, Faults& out, std::string& error) {
  Faults f;
  bool seen[6] = {};
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (comma != std::string_view::npos && spec.empty()) {
      error = "store faults: trailing ',' in the list";
      return false;
    }
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      error = "store faults: '" + std::string(item) +
              "' is not NAME=VALUE (names: " + std::string(kKnown) + ")";
      return false;
    }
    const std::string_view name = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    int index = -1;
    bool ok = false;
    if (name == "read-delay") {
      index = 0;
      ok = parse_delay(value, f.read_delay);
    } else if (name == "write-error-after") {
      index = 1;
      ok = parse_count(value, f.write_error_after);
    } else if (name == "sync-error-after") {
      index = 2;
      ok = parse_count(value, f.sync_error_after);
    } else if (name == "no-space-after") {
      index = 3;
      ok = parse_count(value, f.no_space_after);
    } else if (name == "sync-hang-after") {
      index = 4;
      ok = parse_count(value, f.sync_hang_after);
    } else if (name == "sync-delay") {
      index = 5;
      ok = parse_delay(value, f.sync_delay);
    } else {
      error = "store faults: unknown fault '" + std::string(name) +
              "' (known: " + std::string(kKnown) + ")";
      return false;
    }
    if (seen[index]) {
      error = "store faults: '" + std::string(name) + "' given twice";
      return false;
    }
    seen[index] = true;
    if (!ok) {
      error = "store faults: " + std::string(name) + "='" + std::string(value) + "' is not " +
              (index == 0 || index == 5 ? "a duration in whole milliseconds like 50ms or 0.5s"
                                        : "a non-negative integer");
      return false;
    }
  }
  out = f;
  return true;
}

namespace detail {

namespace {

// "000012.log", the only files RocksDB names NUMBER.log (the info log is "LOG").
bool is_wal(const std::string& fname) {
  const auto slash = fname.find_last_of('/');
  const std::string_view base =
      std::string_view(fname).substr(slash == std::string::npos ? 0 : slash + 1);
  if (!base.ends_with(".log") || base.size() == 4) return false;
  for (char c : base.substr(0, base.size() - 4)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

class FaultWalFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultWalFile(std::unique_ptr<rocksdb::FSWritableFile> file, FaultFileSystem& fs)
      : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check_append(); !s.ok()) return s;
    return target()->Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check_append(); !s.ok()) return s;
    return target()->Append(data, options, info, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check_append(); !s.ok()) return s;
    return target()->PositionedAppend(data, offset, options, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check_append(); !s.ok()) return s;
    return target()->PositionedAppend(data, offset, options, info, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    return sync([&] { return target()->Sync(options, dbg); }, options, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    return sync([&] { return target()->Fsync(options, dbg); }, options, dbg);
  }
  rocksdb::IOStatus RangeSync(std::uint64_t, std::uint64_t, const rocksdb::IOOptions&,
                              rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::OK();  // a hint only; the full sync below is what counts
  }

 private:
  template <class RealSync>
  rocksdb::IOStatus sync(RealSync real_sync, const rocksdb::IOOptions& options,
                         rocksdb::IODebugContext* dbg) {
    if (fs_.sync_should_hang()) {
      // A stuck fsync (a dead disk, a hung NFS server): this thread never comes back.
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    fs_.delay_sync();
    if (fs_.sync_should_fail()) {
      // What a failed fsync can leave: the pages it should have written are gone.
      (void)target()->Truncate(synced_size_.load(), options, dbg);
      return rocksdb::IOStatus::IOError("injected fsync failure (sync-error-after)");
    }
    // What the sync covers: the bytes appended before it began (were anything appended while
    // it ran, from another thread, that would not be covered).
    const std::uint64_t covered = target()->GetFileSize(options, dbg);
    auto s = real_sync();
    if (s.ok()) {
      synced_size_.store(covered);
      fs_.sync_succeeded();
    }
    return s;
  }

  FaultFileSystem& fs_;
  std::atomic<std::uint64_t> synced_size_{0};
};

}  // namespace

FaultFileSystem::FaultFileSystem(std::shared_ptr<rocksdb::FileSystem> target, const Faults& faults)
    : FileSystemWrapper(target), faults_(faults) {}

void FaultFileSystem::wrap_if_wal(const std::string& fname,
                                  std::unique_ptr<rocksdb::FSWritableFile>* result) {
  if (*result && is_wal(fname)) {
    *result = std::make_unique<FaultWalFile>(std::move(*result), *this);
  }
}

rocksdb::IOStatus FaultFileSystem::NewWritableFile(const std::string& fname,
                                                   const rocksdb::FileOptions& opts,
                                                   std::unique_ptr<rocksdb::FSWritableFile>* result,
                                                   rocksdb::IODebugContext* dbg) {
  auto s = target()->NewWritableFile(fname, opts, result, dbg);
  if (s.ok()) wrap_if_wal(fname, result);
  return s;
}

rocksdb::IOStatus FaultFileSystem::ReopenWritableFile(
    const std::string& fname, const rocksdb::FileOptions& opts,
    std::unique_ptr<rocksdb::FSWritableFile>* result, rocksdb::IODebugContext* dbg) {
  auto s = target()->ReopenWritableFile(fname, opts, result, dbg);
  if (s.ok()) wrap_if_wal(fname, result);
  return s;
}

rocksdb::IOStatus FaultFileSystem::ReuseWritableFile(
    const std::string& fname, const std::string& old_fname, const rocksdb::FileOptions& opts,
    std::unique_ptr<rocksdb::FSWritableFile>* result, rocksdb::IODebugContext* dbg) {
  auto s = target()->ReuseWritableFile(fname, old_fname, opts, result, dbg);
  if (s.ok()) wrap_if_wal(fname, result);
  return s;
}

rocksdb::IOStatus FaultFileSystem::check_append() const {
  if (!armed_.load(std::memory_order_acquire)) return rocksdb::IOStatus::OK();
  const auto good = good_syncs_.load();
  if (faults_.no_space_after >= 0 && good >= faults_.no_space_after) {
    return rocksdb::IOStatus::NoSpace("injected: no space left on device (no-space-after)");
  }
  if (faults_.write_error_after >= 0 && good >= faults_.write_error_after) {
    return rocksdb::IOStatus::IOError("injected write error (write-error-after)");
  }
  return rocksdb::IOStatus::OK();
}

bool FaultFileSystem::sync_should_fail() const {
  return armed_.load(std::memory_order_acquire) && faults_.sync_error_after >= 0 &&
         good_syncs_.load() >= faults_.sync_error_after;
}

bool FaultFileSystem::sync_should_hang() const {
  return armed_.load(std::memory_order_acquire) && faults_.sync_hang_after >= 0 &&
         good_syncs_.load() >= faults_.sync_hang_after;
}

void FaultFileSystem::delay_sync() const {
  if (armed_.load(std::memory_order_acquire) && faults_.sync_delay.count() > 0) {
    std::this_thread::sleep_for(faults_.sync_delay);
  }
}

void FaultFileSystem::sync_succeeded() {
  if (armed_.load(std::memory_order_acquire)) good_syncs_.fetch_add(1);
}

}  // namespace detail
}  // namespace store
