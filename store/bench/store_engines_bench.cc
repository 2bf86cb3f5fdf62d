// store_engines_bench.cc — the measurement behind store/README.md "Why RocksDB": durable
// (fsync'ed before the ack) small-value writes per second from 8 writer threads, each waiting
// for its ack before its next write, with group commit, on RocksDB, SQLite and LMDB.
//
// Every engine gets the same group committer (one thread takes every write queued since its last
// commit and commits them in one transaction / WriteBatch, then acks them), so the engines, not
// the batching, are compared. "RocksStore" is the shipped store/ code on top of that.
//   rocksdb     WriteBatch + WriteOptions::sync (WAL + fdatasync)
//   sqlite      WAL journal, synchronous=FULL, one BEGIN..COMMIT per group, WITHOUT ROWID table
//   lmdb        one write txn per group, default sync (MDB commit = data fdatasync + meta
//   fdatasync)
// Rounds interleave the engines (A B C A B C ...) so a noisy neighbour hits all alike; the
// medians of the rounds and their ratios to rocksdb are printed. Ratios, not absolutes, travel.
//
// Build: cmake --build build/store-release --target store_engines_bench (needs libsqlite3-dev and
// liblmdb-dev; not built otherwise). Run: store_engines_bench [--seconds S] [--rounds N]
// [--threads T] [--value-bytes B] [--dir PATH] (PATH must be on the disk under test, not tmpfs).
#include <fcntl.h>
#include <lmdb.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/open_store.hh"
#include "store/store.hh"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Kv {
  std::string key;
  std::string value;
};

// --- engines: commit(group) makes the whole group durable or throws ---------------------------

class RocksEngine {
 public:
  explicit RocksEngine(const fs::path& dir) {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    auto s = rocksdb::DB::Open(o, dir.string(), &raw);
    if (!s.ok()) throw std::runtime_error("rocksdb open: " + s.ToString());
    db_.reset(raw);
  }
  void commit(const std::vector<const Kv*>& group) {
    rocksdb::WriteBatch wb;
    for (const Kv* kv : group) wb.Put(kv->key, kv->value);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    auto s = db_->Write(wo, &wb);
    if (!s.ok()) throw std::runtime_error("rocksdb write: " + s.ToString());
  }

 private:
  std::unique_ptr<rocksdb::DB> db_;
};

class SqliteEngine {
 public:
  explicit SqliteEngine(const fs::path& dir) {
    fs::create_directories(dir);
    if (sqlite3_open_v2((dir / "kv.sqlite").c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      throw std::runtime_error("sqlite open failed");
    }
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=FULL");
    exec("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID");
    if (sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", -1, &put_,
                           nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("sqlite prepare: ") + sqlite3_errmsg(db_));
    }
  }
  ~SqliteEngine() {
    sqlite3_finalize(put_);
    sqlite3_close(db_);
  }
  void commit(const std::vector<const Kv*>& group) {
    exec("BEGIN");
    for (const Kv* kv : group) {
      sqlite3_bind_blob(put_, 1, kv->key.data(), static_cast<int>(kv->key.size()), SQLITE_STATIC);
      sqlite3_bind_blob(put_, 2, kv->value.data(), static_cast<int>(kv->value.size()),
                        SQLITE_STATIC);
      if (sqlite3_step(put_) != SQLITE_DONE) {
        throw std::runtime_error(std::string("sqlite step: ") + sqlite3_errmsg(db_));
      }
      sqlite3_reset(put_);
    }
    exec("COMMIT");
  }

 private:
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(std::string("sqlite ") + sql + ": " + msg);
    }
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt* put_ = nullptr;
};

class LmdbEngine {
 public:
  explicit LmdbEngine(const fs::path& dir) {
    fs::create_directories(dir);
    check(mdb_env_create(&env_), "env_create");
    check(mdb_env_set_mapsize(env_, std::size_t{4} << 30), "set_mapsize");
    check(mdb_env_open(env_, dir.c_str(), 0, 0644), "env_open");  // 0: durable commits
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env_, nullptr, 0, &txn), "txn_begin");
    check(mdb_dbi_open(txn, nullptr, 0, &dbi_), "dbi_open");
    check(mdb_txn_commit(txn), "txn_commit");
  }
  ~LmdbEngine() { mdb_env_close(env_); }
  void commit(const std::vector<const Kv*>& group) {
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env_, nullptr, 0, &txn), "txn_begin");
    for (const Kv* kv : group) {
      MDB_val k{kv->key.size(), const_cast<char*>(kv->key.data())};
      MDB_val v{kv->value.size(), const_cast<char*>(kv->value.data())};
      if (int rc = mdb_put(txn, dbi_, &k, &v, 0); rc != 0) {
        mdb_txn_abort(txn);
        check(rc, "put");
      }
    }
    check(mdb_txn_commit(txn), "txn_commit");
  }

 private:
  static void check(int rc, const char* what) {
    if (rc != 0) throw std::runtime_error(std::string("lmdb ") + what + ": " + mdb_strerror(rc));
  }
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
};

// --- one group committer for every engine ------------------------------------------------------

struct Request {
  const Kv* kv;
  std::atomic<bool>* done;
};

class Committer {
 public:
  explicit Committer(std::function<void(const std::vector<const Kv*>&)> commit)
      : commit_(std::move(commit)), thread_([this] { run(); }) {}
  ~Committer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void submit(Request r) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(r);
    }
    cv_.notify_one();
  }
  std::uint64_t commits() const { return commits_.load(); }

 private:
  void run() {
    std::vector<Request> group;
    std::vector<const Kv*> kvs;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        group.swap(queue_);
      }
      kvs.clear();
      for (const auto& r : group) kvs.push_back(r.kv);
      commit_(kvs);
      commits_.fetch_add(1);
      for (const auto& r : group) {
        r.done->store(true);
        r.done->notify_one();
      }
      group.clear();
    }
  }

  std::function<void(const std::vector<const Kv*>&)> commit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request> queue_;
  bool stop_ = false;
  std::atomic<std::uint64_t> commits_{0};
  std::thread thread_;
};

// --- the run -----------------------------------------------------------------------------------

struct Result {
  double writes_per_s = 0;
  double writes_per_commit = 0;
  double disk_bytes_per_write = 0;  // what the kernel sent (or will send) to the disk
};

// This process's bytes written to storage so far (/proc/self/io write_bytes: pages dirtied, so a
// page re-dirtied after each fsync counts each time). Structural, so far less noisy than rates.
std::uint64_t disk_write_bytes() {
  std::FILE* f = std::fopen("/proc/self/io", "r");
  if (!f) return 0;
  char line[128];
  unsigned long long v = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "write_bytes: %llu", &v) == 1) break;
  }
  std::fclose(f);
  return v;
}

std::string make_key(int thread, std::uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "t%02d-%012llu", thread, static_cast<unsigned long long>(i));
  return buf;
}

// Runs `threads` writers for `seconds`; `write(kv)` returns once kv is durable.
template <class WriteFn>
std::uint64_t drive(int threads, double seconds, std::size_t value_bytes, WriteFn write) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> total{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, t] {
      std::uint64_t n = 0;
      Kv kv{"", std::string(value_bytes, static_cast<char>('a' + t))};
      while (!stop.load(std::memory_order_relaxed)) {
        kv.key = make_key(t, n);
        write(kv);
        ++n;
      }
      total.fetch_add(n);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : writers) w.join();
  return total.load();
}

template <class Engine>
Result run_engine(const fs::path& dir, int threads, double seconds, std::size_t value_bytes) {
  Engine engine(dir);
  Committer committer([&engine](const std::vector<const Kv*>& g) { engine.commit(g); });
  const auto t0 = Clock::now();
  const auto b0 = disk_write_bytes();
  const auto n = drive(threads, seconds, value_bytes, [&](const Kv& kv) {
    std::atomic<bool> done{false};
    committer.submit({&kv, &done});
    done.wait(false);
  });
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double bytes = static_cast<double>(disk_write_bytes() - b0);
  const double writes = static_cast<double>(std::max<std::uint64_t>(1, n));
  return {n / secs, writes / static_cast<double>(std::max<std::uint64_t>(1, committer.commits())),
          bytes / writes};
}

Result run_rocks_store(const fs::path& dir, int threads, double seconds, std::size_t value_bytes) {
  std::string error;
  auto st = store::open_store(std::string("rocksdb:").append(dir.string()), store::Faults{}, error);
  if (!st) throw std::runtime_error(error);
  const auto t0 = Clock::now();
  const auto b0 = disk_write_bytes();
  const auto n = drive(threads, seconds, value_bytes, [&](const Kv& kv) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    store::Write w;  // a put, no existed asked
    w.key = kv.key;
    w.value = kv.value;
    st->write({std::move(w)}, [done](store::WriteResult r) {
      if (!r.status.ok()) std::abort();
      done->store(true);
      done->notify_one();
    });
    done->wait(false);
  });
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double bytes = static_cast<double>(disk_write_bytes() - b0);
  const double writes = static_cast<double>(std::max<std::uint64_t>(1, n));
  const auto stats = st->stats();
  return {n / secs, writes / static_cast<double>(std::max<std::uint64_t>(1, stats.commits)),
          bytes / writes};
}

// The median cost of one fdatasync after a 4 KiB append, for context.
double fdatasync_us(const fs::path& dir) {
  const auto path = dir / "fsync.probe";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  std::vector<double> us;
  std::string block(4096, 'x');
  for (int i = 0; i < 200; ++i) {
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) break;
    const auto t0 = Clock::now();
    ::fdatasync(fd);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(fd);
  fs::remove(path);
  if (us.empty()) return -1;
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The command line.
struct Args {
  double seconds = 3;
  int rounds = 3;
  int threads = 8;
  std::size_t value_bytes = 100;
  fs::path base = fs::temp_directory_path();
  std::string only;  // "a,b": run only these engines
};

// False (after saying why) on a bad command line.
bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds") {
      args.seconds = std::stod(next());
    } else if (a == "--rounds") {
      args.rounds = std::stoi(next());
    } else if (a == "--threads") {
      args.threads = std::stoi(next());
    } else if (a == "--value-bytes") {
      args.value_bytes = std::stoul(next());
    } else if (a == "--dir") {
      args.base = next();
    } else if (a == "--engines") {
      args.only = next();
    } else {
      std::cerr << "usage: store_engines_bench [--seconds S] [--rounds N] [--threads T] "
                   "[--value-bytes B] [--dir PATH] [--engines rocksdb,sqlite,lmdb,RocksStore]\n";
      return false;
    }
  }
  return true;
}

using Runner = Result (*)(const fs::path&, int, double, std::size_t);
using Engines = std::vector<std::pair<std::string, Runner>>;

// Every engine, or those `only` names (a comma-separated list).
Engines select_engines(const std::string& only) {
  Engines engines = {
      {"rocksdb", &run_engine<RocksEngine>},
      {"sqlite", &run_engine<SqliteEngine>},
      {"lmdb", &run_engine<LmdbEngine>},
      {"RocksStore", &run_rocks_store},
  };
  if (only.empty()) return engines;
  std::erase_if(engines, [&](const auto& e) {
    std::string_view rest = only;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      if (rest.substr(0, comma) == e.first) return false;
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    return true;
  });
  return engines;
}

// Each engine's results over the rounds, by name.
struct Measured {
  std::map<std::string, std::vector<double>> rate, batch, disk;
};

// The rounds, engines interleaved within each; a line per run.
Measured run_rounds(const Engines& engines, const fs::path& root, const Args& args) {
  Measured m;
  for (int r = 0; r < args.rounds; ++r) {
    for (const auto& [name, run] : engines) {
      const auto dir = root / (name + '-' + std::to_string(r));
      const Result res = run(dir, args.threads, args.seconds, args.value_bytes);
      m.rate[name].push_back(res.writes_per_s);
      m.batch[name].push_back(res.writes_per_commit);
      m.disk[name].push_back(res.disk_bytes_per_write);
      std::printf("round %d  %-10s %10.0f writes/s  %6.2f writes/commit  %7.0f disk B/write\n",
                  r + 1, name.c_str(), res.writes_per_s, res.writes_per_commit,
                  res.disk_bytes_per_write);
      std::fflush(stdout);
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }
  return m;
}

// The medians, each engine's rate against the first's.
void print_summary(const Engines& engines, Measured& m) {
  const std::string& first = engines.front().first;
  const double base_rate = median(m.rate[first]);
  std::printf("\n%-10s %12s %14s %14s %12s\n", "engine", "median w/s", "writes/commit",
              "disk B/write", std::string("vs ").append(first).c_str());
  for (const auto& [name, run] : engines) {
    const double rate = median(m.rate[name]);
    std::printf("%-10s %12.0f %14.2f %14.0f %11.2fx\n", name.c_str(), rate, median(m.batch[name]),
                median(m.disk[name]), rate / base_rate);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) return 2;
  const Engines engines = select_engines(args.only);
  if (engines.empty()) {
    std::cerr << "--engines: name some of rocksdb, sqlite, lmdb, RocksStore\n";
    return 2;
  }
  std::string tmpl = (args.base / "store_engines_bench_XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    std::perror("mkdtemp");
    return 1;
  }
  const fs::path root = tmpl;
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{root};

  std::printf(
      "# store_engines_bench: %d writer threads, %zu-byte values, 18-byte keys, %.1f s per "
      "run, %d rounds; dir %s\n",
      args.threads, args.value_bytes, args.seconds, args.rounds, root.c_str());
  std::printf("# fdatasync of a 4 KiB append here: median %.0f us\n", fdatasync_us(root));
  Measured m = run_rounds(engines, root, args);
  print_summary(engines, m);
  return 0;
}
