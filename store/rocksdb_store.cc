// rocksdb_store.cc — RocksStore: how a group commits (GroupCommitter does the rest), the batched
// readers, the sticky failure rule and the RocksDB options (each one's reason is in
// store/README.md, "RocksDB options").
#include "store/rocksdb_store.hh"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <unordered_map>
#include <utility>

#include "store/rocksdb_values.hh"

namespace store {

namespace {

using Clock = std::chrono::steady_clock;

// Every key (1..250 bytes) sorts in ["", kEndOfKeys) under the bytewise comparator: a key of at
// most 250 bytes is either a proper prefix of 251 0xFF bytes or has a smaller byte first.
const std::string kEndOfKeys(kMaxKeyBytes + 1, '\xff');

// A failed write stops the store for good (store.hh); RocksDB's own automatic recovery (a
// background Resume() after "no space", retries of retryable IO errors) would only reopen a
// door we keep shut, and would re-sync a WAL whose failed fsync may have lost data.
class NoAutoRecovery final : public rocksdb::EventListener {
 public:
  const char* Name() const override { return "CrankNoAutoRecovery"; }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status,
                            bool* auto_recovery) override {
    *auto_recovery = false;
  }
};

rocksdb::Options make_options(rocksdb::Env* env) {
  rocksdb::Options o;
  o.env = env;
  o.create_if_missing = true;

  // Durability: every commit is WriteOptions::sync (WAL write(2) + fdatasync). The WAL is
  // flushed by each Write itself (no manual flush), recovered to the last intact record.
  o.manual_wal_flush = false;
  o.use_fsync = false;  // fdatasync: the data and the size, not the timestamps
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  o.max_bgerror_resume_count = 0;
  o.listeners.push_back(std::make_shared<NoAutoRecovery>());

  // Background work: one flush and one compaction at a time are plenty for small values, and
  // leave the cores to the server's workers.
  o.max_background_jobs = 2;
  o.stats_dump_period_sec = 0;
  o.stats_persist_period_sec = 0;
  o.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  o.keep_log_file_num = 2;
  o.max_log_file_size = 1 << 20;

  // Memtables: whole-key bloom so a read of an absent key skips the memtable probe.
  o.write_buffer_size = 32 << 20;
  o.max_write_buffer_number = 3;
  o.memtable_whole_key_filtering = true;
  o.memtable_prefix_bloom_size_ratio = 0.02;
  o.level_compaction_dynamic_level_bytes = true;

  // Tables: point lookups. Bloom filters (10 bits/key, ~1% false positives) keep a miss to
  // about zero block reads; the in-block hash index finds a key without a binary search. The
  // block cache is small: the cache tier in front of the store holds the hot values.
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(32 << 20);
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.whole_key_filtering = true;
  t.optimize_filters_for_memory = true;
  t.data_block_index_type = rocksdb::BlockBasedTableOptions::kDataBlockBinaryAndHash;
  t.data_block_hash_table_util_ratio = 0.75;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));

  // Compression: LZ4 when this librocksdb has it (cheap to decode on the read path), else none.
  const auto supported = rocksdb::GetSupportedCompressions();
  const bool lz4 =
      std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) != supported.end();
  o.compression = lz4 ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;
  o.bottommost_compression = o.compression;
  return o;
}

// RocksDB counts into a thread-local perf_context by default (PerfLevel kEnableCount): every
// key comparison of a memtable insert pays a __tls_get_addr and a TLS-init check from the
// shared library. Nothing here reads those counters, so the threads that call into the engine
// switch them off (callgrind, write-behind put-all: see store/README.md, "RocksDB options").
void disable_perf_counters() {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
}

Status to_status(const rocksdb::Status& s) {
  if (s.ok()) return {};
  if (s.IsNotFound()) return {Code::not_found, {}};
  return {s.IsNoSpace() ? Code::no_space : Code::io_error, s.ToString()};
}

// A stored value as a read answers it (rocksdb_values.hh): the bytes after the header, or
// not_found once it has expired, or io_error when malformed.
ReadResult read_result(const rocksdb::Status& s, const rocksdb::PinnableSlice& stored,
                       std::uint64_t now_ms) {
  ReadResult r;
  r.status = to_status(s);
  if (!s.ok()) return r;
  const auto d = rocks_values::decode(std::string_view(stored.data(), stored.size()));
  if (!d) {
    r.status = {Code::io_error, "malformed stored value (" + std::to_string(stored.size()) +
                                    " bytes, no valid header)"};
  } else if (expired(d->expires_at_ms, now_ms)) {
    r.status = {Code::not_found, {}};
  } else {
    r.value.assign(d->value);
    r.expires_at_ms = d->expires_at_ms;
  }
  return r;
}

std::string open_error(const std::string& path, const rocksdb::Status& s) {
  const std::string prefix = "rocksdb:" + path + ": ";
  const std::string msg = s.ToString();
  if (s.IsIOError() && msg.find("/LOCK") != std::string::npos) {  // "While lock file: D/LOCK: ..."
    return prefix +
           "the database is locked by another process (or already open in this one): " + msg;
  }
  return prefix + "cannot open the database: " + msg;
}

// Board rows (rocksdb_store.hh): key [board length][board][member], value score bits + seq.
constexpr const char* kBoardsFamily = "boards";
// Every board row key starts with its board's length, 1..250: all sort below "\xff".
const std::string kEndOfBoardRows(1, '\xff');

std::string board_prefix(std::string_view board) {
  std::string k;
  k.reserve(1 + board.size());
  k.push_back(static_cast<char>(board.size()));
  k.append(board);
  return k;
}

std::string board_row_key(std::string_view board, std::string_view member) {
  std::string k = board_prefix(board);
  k.append(member);
  return k;
}

// The first key after every key that starts with prefix (prefix never is all 0xFF bytes: its
// first byte is a length of at most 250).
std::string prefix_end(std::string prefix) {
  while (static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

void put_le64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_le64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string board_row_value(double score, std::uint64_t seq) {
  std::string v;
  v.reserve(16);
  put_le64(v, std::bit_cast<std::uint64_t>(score));
  put_le64(v, seq);
  return v;
}

}  // namespace

// --- open / close ----------------------------------------------------------------------------

std::unique_ptr<RocksStore> RocksStore::open(const RocksOptions& options, std::string& error) {
  if (options.path.empty()) {
    error = "rocksdb: needs a path (rocksdb:PATH)";
    return nullptr;
  }
  std::error_code ec;
  std::filesystem::create_directories(options.path, ec);
  if (ec) {
    error = "rocksdb:" + options.path + ": cannot create the directory: " + ec.message();
    return nullptr;
  }
  std::unique_ptr<rocksdb::Env> env;
  if (options.file_system) env = rocksdb::NewCompositeEnv(options.file_system);
  rocksdb::Options db_options = make_options(env ? env.get() : rocksdb::Env::Default());
  db_options.create_missing_column_families = true;  // "boards", "meta": in an older database
  const rocksdb::ColumnFamilyOptions family_options(db_options);
  // Keys: expired values are dropped by compactions (rocksdb_values.hh).
  static const rocks_values::ExpiryFilter expiry_filter;
  rocksdb::ColumnFamilyOptions key_options(db_options);
  key_options.compaction_filter = &expiry_filter;
  const std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, key_options},
      {kBoardsFamily, family_options},
      {rocks_values::kMetaFamily, family_options}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s = rocksdb::DB::Open(db_options, options.path, families, &handles, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (!s.ok()) {
    error = open_error(options.path, s);
    return nullptr;
  }
  // The default family's handle is the DB's own; only the boards' is kept (and destroyed).
  (void)db->DestroyColumnFamilyHandle(handles[0]);
  const std::string migrated = rocks_values::migrate(*db, handles[2]);
  (void)db->DestroyColumnFamilyHandle(handles[2]);
  if (!migrated.empty()) {
    (void)db->DestroyColumnFamilyHandle(handles[1]);
    error = "rocksdb:" + options.path + ": " + migrated;
    return nullptr;
  }
  return std::make_unique<RocksStore>(OpenKey{}, options, std::move(env), std::move(db),
                                      handles[1]);
}

RocksStore::RocksStore(OpenKey, const RocksOptions& options, std::unique_ptr<rocksdb::Env> env,
                       std::unique_ptr<rocksdb::DB> db, rocksdb::ColumnFamilyHandle* boards)
    : EngineStore(options.read_delay, SIZE_MAX, "rocksdb"),
      env_(std::move(env)),
      db_(std::move(db)),
      boards_(boards),
      batch_(std::make_unique<rocksdb::WriteBatch>()) {
  start_committer();
  for (int i = 0; i < kReaders; ++i) readers_.emplace_back([this] { reader_main(); });
}

RocksStore::~RocksStore() {
  close();
}

// close(), once every queue is told to stop: each thread drains its queue before it exits
// (operations queued before close() complete), then the database closes.
void RocksStore::shut_down() {
  committer_.join();
  for (auto& r : readers_) r.join();
  (void)db_->DestroyColumnFamilyHandle(boards_);
  boards_ = nullptr;
  (void)db_->Close();  // WAL already synced by every commit; a failed store may report its error
  db_.reset();
  env_.reset();
}

// --- stats, errors ---------------------------------------------------------------------------

void RocksStore::add_stats(StoreStats& s) const {
  s.failed = failed_.load();
  s.connected = true;  // embedded: nothing to lose
  s.reconnects = 0;
}

// last_error, unless the store failed: then it keeps saying why.
void RocksStore::note_unless_failed(const std::string& why) {
  std::lock_guard lock(error_mu_);
  if (!failed_.load()) last_error_ = why;
}

void RocksStore::set_failed(const std::string& why) {
  {
    std::lock_guard lock(error_mu_);
    last_error_ = why;
  }
  failed_.store(true);
}

// --- writes ----------------------------------------------------------------------------------

void RocksStore::committer_started() {
  disable_perf_counters();
}

void RocksStore::note_refused(const std::string& why) {
  note_unless_failed(why);
}

// One group (GroupCommitter::Engine): every batch and clear queued since the last commit, in
// arrival order (refused batches left out), as one WriteBatch and one synced Write.
Status RocksStore::commit(std::vector<Op>& group) {
  if (failed_.load()) {
    std::lock_guard lock(error_mu_);
    return {Code::failed, "store failed earlier, writes refused: " + last_error_};
  }
  // The keys whose existed answer needs the database's current state (a group with no such
  // question, e.g. a write-behind flush, skips both the lookup and the overlay). The committer
  // is the only writer: nothing changes them between the lookup and the commit.
  std::unordered_map<std::string_view, bool> in_db;  // key -> has a value now
  const Status looked = look_up_existed(GroupCommitter::keys_to_look_up(group), in_db);
  if (!looked.ok()) return looked;
  GroupCommitter::answer_existed(group, [&](std::string_view key) { return in_db.at(key); });
  // The committer's one WriteBatch, emptied for each group (its buffer's capacity kept), unless
  // the last group made it large.
  constexpr std::size_t kKeepBatchBytes = 1 << 20;
  if (batch_->GetDataSize() > kKeepBatchBytes) {
    batch_ = std::make_unique<rocksdb::WriteBatch>();
  } else {
    batch_->Clear();
  }
  const std::uint64_t ops = build_batch(group, *batch_);
  return write_batch(*batch_, ops);
}

// One MultiGet for the keys. An error refuses the group (nothing was written); the store is not
// failed.
Status RocksStore::look_up_existed(const std::vector<std::string_view>& keys,
                                   std::unordered_map<std::string_view, bool>& in_db) {
  if (keys.empty()) return {};
  std::vector<rocksdb::Slice> lookup;
  lookup.reserve(keys.size());
  for (std::string_view k : keys) lookup.emplace_back(k.data(), k.size());
  std::vector<rocksdb::PinnableSlice> values(lookup.size());
  std::vector<rocksdb::Status> statuses(lookup.size());
  db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), lookup.size(), lookup.data(),
                values.data(), statuses.data());
  const std::uint64_t now_ms = unix_now_ms();  // an expired value counts as absent
  for (std::size_t i = 0; i < lookup.size(); ++i) {
    if (!statuses[i].ok() && !statuses[i].IsNotFound()) {
      Status err{Code::io_error, "store lookup before write failed: " + statuses[i].ToString()};
      std::lock_guard lock(error_mu_);
      last_error_ = err.message;
      return err;
    }
    in_db.emplace(keys[i],
                  read_result(statuses[i], values[i], now_ms).status.code != Code::not_found);
  }
  return {};
}

namespace {

void add_op(rocksdb::WriteBatch& wb, rocksdb::ColumnFamilyHandle* boards, const Write& w) {
  switch (w.kind) {
    case Write::Kind::put: {  // [header][value] (rocksdb_values.hh), two slices, no copy
      char buffer[rocks_values::kMaxHeader];
      const std::string_view h = rocks_values::header(w.expires_at_ms, buffer);
      const rocksdb::Slice key(w.key);
      const rocksdb::Slice parts[2] = {rocksdb::Slice(h.data(), h.size()), rocksdb::Slice(w.value)};
      wb.Put(rocksdb::SliceParts(&key, 1), rocksdb::SliceParts(parts, 2));
      break;
    }
    case Write::Kind::del:
      wb.Delete(w.key);
      break;
    case Write::Kind::board_set:
      wb.Put(boards, board_row_key(w.key, w.member), board_row_value(w.score, w.seq));
      break;
    case Write::Kind::board_remove:
      wb.Delete(boards, board_row_key(w.key, w.member));
      break;
    case Write::Kind::board_drop: {
      const std::string begin = board_prefix(w.key);
      wb.DeleteRange(boards, begin, prefix_end(begin));
      break;
    }
  }
}

// Adds the ops between two clears, sorted: each key's ops keep their order (the sort's last
// criterion is the arrival order), and ops on different keys commute inside one atomic batch.
// The memtable's skiplist inserts a run of sorted keys by resuming from the previous insert's
// position instead of searching from the top for each. Board ops sort after key ops, by board,
// every board's ops (a drop and the sets after it included) in their order. std::sort with
// the arrival as the tie-break, not std::stable_sort: that one allocates a buffer per call.
void add_segment(rocksdb::WriteBatch& wb, rocksdb::ColumnFamilyHandle* boards,
                 std::vector<RocksStore::Ordered>& segment) {
  std::sort(segment.begin(), segment.end(),
            [](const RocksStore::Ordered& a, const RocksStore::Ordered& b) {
              const bool a_board = a.write->is_board_op();
              const bool b_board = b.write->is_board_op();
              if (a_board != b_board) return b_board;
              if (const int c = a.write->key.compare(b.write->key); c != 0) return c < 0;
              return a.arrival < b.arrival;
            });
  for (const RocksStore::Ordered& o : segment) add_op(wb, boards, *o.write);
  segment.clear();
}

}  // namespace

// The group's WriteBatch, segment by segment between clears (a clear: one DeleteRange over
// every key and one over every board row). Returns how many ops went in.
std::uint64_t RocksStore::build_batch(const std::vector<Op>& group, rocksdb::WriteBatch& wb) {
  std::uint64_t ops = 0;
  std::vector<Ordered>& segment = segment_;
  segment.clear();
  for (const Op& op : group) {
    if (!op.refused.empty()) continue;
    if (op.is_clear) {
      add_segment(wb, boards_, segment);
      wb.DeleteRange(rocksdb::Slice(), kEndOfKeys);
      wb.DeleteRange(boards_, rocksdb::Slice(), kEndOfBoardRows);
      continue;
    }
    for (const Write& w : op.batch) segment.push_back({&w, segment.size()});
    ops += op.batch.size();
  }
  add_segment(wb, boards_, segment);
  return ops;
}

// The commit: one Write(sync = true). A failure fails the store (sticky: never acknowledged,
// never retried).
Status RocksStore::write_batch(rocksdb::WriteBatch& wb, std::uint64_t ops) {
  if (wb.Count() == 0) return {};
  rocksdb::WriteOptions wo;
  wo.sync = true;
  const rocksdb::Status s = db_->Write(wo, &wb);
  if (s.ok()) {
    commits_.fetch_add(1);
    writes_.fetch_add(ops);
    return {};
  }
  Status result = to_status(s);
  result.message = "store commit failed: " + result.message;
  set_failed(result.message);
  return result;
}

// --- boards at startup ------------------------------------------------------------------------

Status RocksStore::load_boards(const BoardVisitor& visit) {
  std::lock_guard lock(close_mu_);  // held throughout: a concurrent close() waits for the load
  if (closed_) return {Code::closed, "store closed"};
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;  // one pass over everything: keep the block cache for the hot reads
  ro.readahead_size = 2 << 20;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, boards_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    const rocksdb::Slice v = it->value();
    const std::size_t board_len = k.size() > 0 ? static_cast<unsigned char>(k[0]) : 0;
    if (board_len == 0 || k.size() < 2 + board_len || v.size() != 16) {
      return {Code::io_error, "rocksdb: a malformed board row (" + std::to_string(k.size()) +
                                  "-byte key, " + std::to_string(v.size()) + "-byte value)"};
    }
    BoardRow row;
    row.board = std::string_view(k.data() + 1, board_len);
    row.member = std::string_view(k.data() + 1 + board_len, k.size() - 1 - board_len);
    row.score = std::bit_cast<double>(get_le64(v.data()));
    row.seq = get_le64(v.data() + 8);
    visit(row);
  }
  if (!it->status().ok()) {
    return {Code::io_error, "rocksdb: reading the board rows failed: " + it->status().ToString()};
  }
  return {};
}

// --- reads -----------------------------------------------------------------------------------

void RocksStore::reader_main() {
  disable_perf_counters();
  std::vector<ReadOp> reads;
  for (;;) {
    {
      std::unique_lock lock(read_mu_);
      read_cv_.wait(lock, [this] { return read_stopping_ || !read_queue_.empty(); });
      if (read_queue_.empty()) return;
      reads.swap(read_queue_);
    }
    serve_reads(reads);
    reads.clear();
  }
}

void RocksStore::serve_reads(std::vector<ReadOp>& reads) {
  const std::size_t n = reads.size();
  std::vector<ReadResult> results(n);
  if (n == 1) {
    rocksdb::PinnableSlice value;
    const auto s =
        db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), reads[0].key, &value);
    results[0] = read_result(s, value, unix_now_ms());
  } else {
    std::vector<rocksdb::Slice> keys;
    keys.reserve(n);
    for (const auto& r : reads) keys.emplace_back(r.key);
    std::vector<rocksdb::PinnableSlice> values(n);
    std::vector<rocksdb::Status> statuses(n);
    db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), n, keys.data(), values.data(),
                  statuses.data());
    const std::uint64_t now_ms = unix_now_ms();
    for (std::size_t i = 0; i < n; ++i) results[i] = read_result(statuses[i], values[i], now_ms);
  }
  reads_.fetch_add(n);
  const auto now = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    ReadResult& r = results[i];
    if (!r.status.ok() && r.status.code != Code::not_found) {
      count_error();
      r.status.message = "store read failed: " + r.status.message;
      note_unless_failed(r.status.message);
    }
    deliver(reads[i], std::move(r), now);
  }
}

}  // namespace store
