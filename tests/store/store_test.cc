// store_test.cc — the store/ contract (store.hh) against the real RocksDB in a temporary
// directory: semantics, ordering, durability across a restart, group commit, clear, close, and
// the injected faults (which fail RocksDB's own WAL appends and syncs).
// No test depends on timing for its verdict: batching is forced by holding the committer inside
// a callback, and the one time bound (overlapping delayed reads) is 20x looser than the
// behaviour it rules out.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include "store/open_store.hh"
#include "store/rocksdb_store.hh"
#include "store/rocksdb_values.hh"
#include "store/store.hh"
#include "tests/store/store_test_support.hh"

namespace {

using namespace std::chrono_literals;
using namespace store_test;

// Directories of live TempDirs, so that a run that dies (a stuck store's abort below, a
// sanitizer's halt_on_error) still removes them: RAII covers every ordinary failure.
std::mutex live_dirs_mu;
std::set<std::filesystem::path> live_dirs;

void remove_live_dirs() {
  // try_lock: the dying thread may be the one holding it; then leave the directories be.
  std::unique_lock lock(live_dirs_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (const auto& p : live_dirs) {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  live_dirs.clear();
}

}  // namespace

// store_test_support.hh's hooks: the bound on one completion (sanitizers, noisy host), and the
// directories a stuck store's abort removes.
const std::chrono::seconds store_test::kWait = 60s;
void store_test::remove_before_abort() {
  remove_live_dirs();
}

namespace {

[[maybe_unused]] const bool death_callback_installed = [] {
  remove_before_sanitizer_death();
  return true;
}();

// A fresh directory, removed after the test whatever its outcome.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "store_test_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
    std::lock_guard lock(live_dirs_mu);
    live_dirs.insert(path_);
  }
  ~TempDir() {
    {
      std::lock_guard lock(live_dirs_mu);
      live_dirs.erase(path_);
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string uri(const std::string& sub = "db") const {
    return "rocksdb:" + (path_ / sub).string();
  }

 private:
  std::filesystem::path path_;
};

std::unique_ptr<store::Store> open_ok(const std::string& uri, const store::Faults& faults = {}) {
  std::string error;
  auto s = store::open_store(uri, faults, error);
  EXPECT_TRUE(s) << error;
  return s;
}

store::Faults faults_of(std::string_view spec) {
  store::Faults f;
  std::string error;
  EXPECT_TRUE(store::parse_faults(spec, f, error)) << error;
  return f;
}

using CommitterGate = store_test::CommitterGate<store::RocksStore>;

// Runs one of the contract's checks (store_test_support.hh) on a fresh store.
void check_contract(void (*check)(store::Store&)) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  check(*s);
}

// --- open_store / parse_faults -------------------------------------------------------------

TEST(OpenStore, RejectsUnknownSchemesAndEmptyPaths) {
  std::string error;
  EXPECT_FALSE(store::open_store("redis:x", store::Faults{}, error));
  EXPECT_NE(error.find("none"), std::string::npos) << error;
  EXPECT_NE(error.find("rocksdb:PATH"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(store::open_store("rocksdb:", store::Faults{}, error));
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_FALSE(store::open_store("none", store::Faults{}, error));
  EXPECT_FALSE(error.empty());
}

TEST(OpenStore, CreatesMissingParentsAndReportsBadPaths) {
  TempDir dir;
  auto s = open_ok(dir.uri("a/b/c"));
  EXPECT_STREQ(s->scheme(), "rocksdb");
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "a/b/c"));

  std::filesystem::path blocker = dir.path() / "file";
  { std::ofstream(blocker) << "not a directory"; }
  std::string error;
  EXPECT_FALSE(store::open_store("rocksdb:" + (blocker / "db").string(), store::Faults{}, error));
  EXPECT_NE(error.find(blocker.string()), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(OpenStore, ASecondOpenOfTheSameDirectorySaysItIsLocked) {
  TempDir dir;
  auto first = open_ok(dir.uri());
  std::string error;
  EXPECT_FALSE(store::open_store(dir.uri(), store::Faults{}, error));
  EXPECT_NE(error.find("locked"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(Codes, HaveNames) {
  EXPECT_STREQ(store::to_string(Code::ok), "ok");
  EXPECT_STREQ(store::to_string(Code::not_found), "not_found");
  EXPECT_STREQ(store::to_string(Code::io_error), "io_error");
  EXPECT_STREQ(store::to_string(Code::no_space), "no_space");
  EXPECT_STREQ(store::to_string(Code::failed), "failed");
  EXPECT_STREQ(store::to_string(Code::closed), "closed");
  EXPECT_STREQ(store::to_string(Code::unavailable), "unavailable");
  EXPECT_STREQ(store::to_string(Code::abandoned), "abandoned");
}

TEST(ParseFaults, AcceptsTheDocumentedSpecs) {
  store::Faults f;
  std::string error;
  ASSERT_TRUE(store::parse_faults("", f, error)) << error;
  EXPECT_FALSE(f.any());
  ASSERT_TRUE(store::parse_faults(
      "read-delay=50ms,write-error-after=3,sync-error-after=0,no-space-after=12", f, error))
      << error;
  EXPECT_EQ(f.read_delay, 50ms);
  EXPECT_EQ(f.write_error_after, 3);
  EXPECT_EQ(f.sync_error_after, 0);
  EXPECT_EQ(f.no_space_after, 12);
  EXPECT_TRUE(f.any());
  ASSERT_TRUE(store::parse_faults("read-delay=0.5s", f, error)) << error;
  EXPECT_EQ(f.read_delay, 500ms);
  EXPECT_EQ(f.write_error_after, -1);
  ASSERT_TRUE(store::parse_faults("read-delay=2s", f, error)) << error;
  EXPECT_EQ(f.read_delay, 2000ms);
  ASSERT_TRUE(store::parse_faults("sync-hang-after=4", f, error)) << error;
  EXPECT_EQ(f.sync_hang_after, 4);
  EXPECT_TRUE(f.any());
  ASSERT_TRUE(store::parse_faults("sync-delay=20ms", f, error)) << error;
  EXPECT_EQ(f.sync_delay, 20ms);
  EXPECT_TRUE(f.any());
}

TEST(ParseFaults, RejectsBadSpecsWithoutTouchingTheOutput) {
  for (const char* bad : {"read-delay=abc",
                          "read-delay=50",
                          "read-delay=-5ms",
                          "read-delay=1.5ms",
                          "read-delay=",
                          "read-delay=ms",
                          "write-error-after=-1",
                          "write-error-after=x",
                          "write-error-after=",
                          "sync-error-after=1.0",
                          "no-space-after=+3",
                          "no-space-after=99999999999999999999",
                          "bogus=1",
                          "read-delay",
                          "read-delay=5ms,",
                          ",read-delay=5ms",
                          "read-delay=5ms,read-delay=6ms",
                          "read-delay=5ms,,no-space-after=1",
                          "read-delay = 5ms",
                          "sync-delay=5",
                          "sync-delay=x",
                          "sync-delay=1ms,sync-delay=2ms"}) {
    store::Faults f;
    f.write_error_after = 7;
    std::string error;
    EXPECT_FALSE(store::parse_faults(bad, f, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_NE(error.find("fault"), std::string::npos) << bad << ": " << error;
    EXPECT_EQ(f.write_error_after, 7) << bad;
  }
}

// --- semantics -----------------------------------------------------------------------------

TEST(RocksStore, PutGetDeleteAndExisted) {
  check_contract(check_put_get_delete_and_existed);
}

TEST(RocksStore, ExistedSeesEarlierOpsOfTheSameBatch) {
  check_contract(check_existed_sees_earlier_ops_of_the_same_batch);
}

TEST(RocksStore, ExistedSeesEarlierBatchesOfTheSameGroup) {
  check_contract(check_existed_sees_earlier_batches_of_the_same_group<store::RocksStore>);
}

// A write whose caller stopped waiting (the tier's --store-timeout answered it) and that is
// still queued leaves the queue at once: its callback says abandoned before the committer moves,
// and it is never applied; a write already taken, a clear, or an unknown ticket is not touched.
TEST(RocksStore, AnAbandonedQueuedWriteIsDroppedAtOnceAndNeverApplied) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  std::promise<store::WriteResult> first, dropped, last;
  auto dropped_result = dropped.get_future();
  auto first_result = first.get_future(), last_result = last.get_future();
  {
    CommitterGate gate(*s);  // the writes below queue behind it
    const store::WriteTicket t1 =
        s->write({put("kept", "1")}, [&](store::WriteResult r) { first.set_value(std::move(r)); });
    const store::WriteTicket t2 =
        s->write({put("gone", std::string(1 << 20, 'x'))},
                 [&](store::WriteResult r) { dropped.set_value(std::move(r)); });
    const store::WriteTicket t3 = s->write(
        {put("also-kept", "3")}, [&](store::WriteResult r) { last.set_value(std::move(r)); });
    EXPECT_NE(t1, 0u);
    EXPECT_EQ(t2, t1 + 1);
    EXPECT_EQ(t3, t2 + 1);
    s->abandon(t2);
    s->abandon(t2);         // twice: nothing more
    s->abandon(t3 + 1000);  // unknown: ignored
    s->abandon(0);
    // Answered while the committer is still held: released at once, not at the next commit.
    const store::WriteResult r = wait_for(dropped_result);
    EXPECT_EQ(r.status.code, Code::abandoned) << r.status.message;
  }
  EXPECT_TRUE(wait_for(first_result).status.ok());
  EXPECT_TRUE(wait_for(last_result).status.ok());
  EXPECT_EQ(read_sync(*s, "gone").status.code, Code::not_found);
  EXPECT_TRUE(read_sync(*s, "kept").status.ok());
  EXPECT_TRUE(read_sync(*s, "also-kept").status.ok());
  EXPECT_EQ(s->stats().errors, 0u);  // abandoning is not a store error
}

TEST(RocksStore, BatchesApplyInCallOrderAndCallbacksRunInThatOrder) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  constexpr int kN = 300;
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> done{0};
  std::promise<void> all;
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> inline_call{false};
  for (int i = 0; i < kN; ++i) {
    // Alternating put/delete of one key plus a put of a second: the last write must win.
    std::vector<Write> batch{put("k", name("v", i)), put("last", std::to_string(i))};
    if (i % 3 == 2) batch.push_back(del("k"));
    s->write(std::move(batch), [&, i](store::WriteResult r) {
      if (std::this_thread::get_id() == caller) inline_call = true;
      EXPECT_TRUE(r.status.ok()) << r.status.message;
      {
        std::lock_guard lock(mu);
        order.push_back(i);
      }
      if (++done == kN) all.set_value();
    });
  }
  auto f = all.get_future();
  wait_for(f);
  EXPECT_FALSE(inline_call);
  std::vector<int> expected(kN);
  for (int i = 0; i < kN; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
  EXPECT_EQ(value_of(*s, "last"), std::to_string(kN - 1));
  EXPECT_EQ(value_of(*s, "k"), (kN - 1) % 3 == 2 ? "<absent>" : name("v", kN - 1));
  const auto st = s->stats();
  EXPECT_EQ(st.writes, static_cast<std::uint64_t>(kN * 2 + kN / 3));
  EXPECT_GE(st.commits, 1u);
  EXPECT_LE(st.commits, static_cast<std::uint64_t>(kN));
}

TEST(RocksStore, ReadsSeeAcknowledgedWritesAndBatchManyKeys) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  std::vector<Write> batch;
  for (int i = 0; i < 200; i += 2) batch.push_back(put(name("k", i), std::to_string(i)));
  ASSERT_TRUE(write_sync(*s, std::move(batch)).status.ok());
  // 200 reads in flight at once (present and absent keys), served by MultiGet.
  std::vector<std::promise<store::ReadResult>> promises(200);
  std::vector<std::future<store::ReadResult>> futures;
  for (auto& p : promises) futures.push_back(p.get_future());
  for (int i = 0; i < 200; ++i) {
    s->read(name("k", i), [&p = promises[i]](store::ReadResult r) { p.set_value(std::move(r)); });
  }
  for (int i = 0; i < 200; ++i) {
    auto r = wait_for(futures[i]);
    if (i % 2 == 0) {
      ASSERT_TRUE(r.status.ok()) << i << ": " << r.status.message;
      EXPECT_EQ(r.value, std::to_string(i));
    } else {
      EXPECT_EQ(r.status.code, Code::not_found) << i;
      EXPECT_TRUE(r.value.empty());
    }
  }
  EXPECT_EQ(s->stats().reads, 200u);
  EXPECT_EQ(s->stats().errors, 0u);
}

TEST(RocksStore, RefusesBadKeysWithoutFailing) {
  check_contract([](store::Store& s) { check_refuses_bad_keys_without_failing(s); });
}

// --- durability, group commit, clear, close ------------------------------------------------

TEST(RocksStore, AcknowledgedWritesSurviveARestart) {
  TempDir dir;
  {
    auto s = open_ok(dir.uri());
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(write_sync(*s, {put(name("k", i), name("v", i))}).status.ok());
    }
    ASSERT_TRUE(write_sync(*s, {del("k7")}).status.ok());
    s->close();
  }
  auto s = open_ok(dir.uri());
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(value_of(*s, name("k", i)), i == 7 ? "<absent>" : name("v", i));
  }
  auto r = write_sync(*s, {put("k1", "again")});
  EXPECT_EQ(r.existed, std::vector<bool>{true});
}

TEST(RocksStore, GroupCommitTakesEverythingQueuedDuringTheLastCommit) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  constexpr int kThreads = 8, kPerThread = 100;
  std::vector<std::atomic<int>> calls(kThreads * kPerThread);
  std::atomic<int> done{0};
  std::promise<void> all;
  {
    CommitterGate gate(*s);  // held in its callback: all 800 writes queue behind it
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          const int id = t * kPerThread + i;
          s->write({put(name("t", t, i), std::to_string(id))}, [&, id](store::WriteResult r) {
            EXPECT_TRUE(r.status.ok()) << r.status.message;
            ++calls[id];
            if (++done == kThreads * kPerThread) all.set_value();
          });
        }
      });
    }
    for (auto& w : writers) w.join();
  }
  auto f = all.get_future();
  wait_for(f);
  for (int id = 0; id < kThreads * kPerThread; ++id) EXPECT_EQ(calls[id].load(), 1) << id;
  const auto st = s->stats();
  EXPECT_EQ(st.writes, 1u + kThreads * kPerThread);
  EXPECT_EQ(st.commits, 2u);  // the gate alone, then one group of 800
  EXPECT_EQ(value_of(*s, "t7-99"), std::to_string(7 * kPerThread + 99));
}

TEST(RocksStore, ConcurrentSynchronousWritersShareCommits) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  constexpr int kThreads = 8, kPerThread = 60;
  std::atomic<int> callbacks{0};
  std::vector<std::thread> writers;
  {
    CommitterGate gate(*s);  // every writer's first write is queued before any commits
    std::atomic<int> first_submitted{0};
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          auto p = std::make_shared<std::promise<store::WriteResult>>();
          auto f = p->get_future();
          s->write({put(name("w", t, i), "v")}, [p, &callbacks](store::WriteResult r) {
            ++callbacks;
            p->set_value(std::move(r));
          });
          if (i == 0) ++first_submitted;
          EXPECT_TRUE(wait_for(f).status.ok());
        }
      });
    }
    while (first_submitted.load() < kThreads) std::this_thread::sleep_for(1ms);
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(callbacks.load(), kThreads * kPerThread);
  const auto st = s->stats();
  EXPECT_EQ(st.writes, 1u + kThreads * kPerThread);
  EXPECT_LT(st.commits, st.writes);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(value_of(*s, name("w", t, kPerThread - 1)), "v");
  }
}

TEST(RocksStore, ClearRemovesEverythingDurablyInOrderWithWrites) {
  TempDir dir;
  {
    auto s = open_ok(dir.uri());
    ASSERT_TRUE(write_sync(*s, {put("a", "1"), put(std::string(250, '\xff'), "2"),
                                put(std::string("\0", 1), "3")})
                    .status.ok());
    std::promise<store::WriteResult> before_p, after_p;
    std::promise<store::Status> clear_p;
    {
      CommitterGate gate(*s);  // one group: put, clear, put
      s->write({put("before", "x")}, [&](store::WriteResult r) { before_p.set_value(r); });
      s->clear([&](store::Status st) { clear_p.set_value(st); });
      s->write({put("after", "y"), put("a", "again")},
               [&](store::WriteResult r) { after_p.set_value(r); });
    }
    auto bf = before_p.get_future();
    auto cf = clear_p.get_future();
    auto af = after_p.get_future();
    EXPECT_TRUE(wait_for(bf).status.ok());
    EXPECT_TRUE(wait_for(cf).ok());
    auto after = wait_for(af);
    ASSERT_TRUE(after.status.ok());
    EXPECT_EQ(after.existed, (std::vector<bool>{false, false}));  // "a" was cleared before
    EXPECT_EQ(value_of(*s, "before"), "<absent>");
    EXPECT_EQ(value_of(*s, std::string(250, '\xff')), "<absent>");
    EXPECT_EQ(value_of(*s, std::string("\0", 1)), "<absent>");
    EXPECT_EQ(value_of(*s, "after"), "y");
    EXPECT_EQ(value_of(*s, "a"), "again");

    // A clear alone, then writes after it.
    ASSERT_TRUE(clear_sync(*s).ok());
    EXPECT_EQ(value_of(*s, "after"), "<absent>");
    auto r = write_sync(*s, {put("z", "1")});
    EXPECT_EQ(r.existed, std::vector<bool>{false});
    s->close();
  }
  auto s = open_ok(dir.uri());  // the clear was durable
  EXPECT_EQ(value_of(*s, "a"), "<absent>");
  EXPECT_EQ(value_of(*s, "after"), "<absent>");
  EXPECT_EQ(value_of(*s, "z"), "1");
}

TEST(RocksStore, CloseCompletesQueuedOperationsThenRefusesNewOnes) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  check_close_completes_queued_operations_then_refuses_new_ones(*s);
  EXPECT_EQ(s->stats().errors, 3u);
  s.reset();
  auto again = open_ok(dir.uri());  // closed means the lock is released
  expect_closed_store_state(*again);
}

TEST(RocksStore, DestructorClosesAndCompletesQueuedWrites) {
  TempDir dir;
  check_destructor_closes_and_completes_queued_writes([&] { return open_ok(dir.uri()); });
}

TEST(RocksStore, ManyThreadsReadAndWriteConcurrently) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  constexpr int kThreads = 6, kOps = 150;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        const std::string key = name("k", (t * 7 + i) % 40);
        if (t % 2 == 0) {
          auto r = write_sync(*s, {i % 5 == 0 ? del(key) : put(key, std::to_string(t))});
          EXPECT_TRUE(r.status.ok());
        } else {
          auto r = read_sync(*s, key);
          EXPECT_TRUE(r.status.ok() || r.status.code == Code::not_found);
        }
        if (t == 0 && i == kOps / 2) {
          EXPECT_TRUE(clear_sync(*s).ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto st = s->stats();
  EXPECT_EQ(st.writes, static_cast<std::uint64_t>(kThreads / 2 * kOps));
  EXPECT_EQ(st.reads, static_cast<std::uint64_t>(kThreads / 2 * kOps));
  EXPECT_EQ(st.errors, 0u);
  EXPECT_FALSE(st.failed);
}

// --- boards: rows in the "boards" column family ------------------------------------------------
// Board rows (board, member) -> (score, seq) next to the keys: exact round trips of the score's
// bits and the seq, names of arbitrary bytes (the row key is [board length][board][member], so a
// board whose name is a prefix of another's must not share its rows), op order inside one group,
// clear(), refused batches, load_boards() over many rows, a database from before the family.

// A row as load_boards() reports it: the score's bits (so -0.0 and 0.0 differ and every score
// compares exactly), and the seq.
struct RowValue {
  std::uint64_t bits = 0;
  std::uint64_t seq = 0;
  bool operator==(const RowValue&) const = default;
};
void PrintTo(const RowValue& v, std::ostream* os) {
  *os << "{score " << std::bit_cast<double>(v.bits) << " (bits 0x" << std::hex << v.bits << std::dec
      << "), seq " << v.seq << "}";
}
RowValue row(double score, std::uint64_t seq) {
  return {std::bit_cast<std::uint64_t>(score), seq};
}
using Rows = std::map<std::pair<std::string, std::string>, RowValue>;  // (board, member) -> row

struct Loaded {
  store::Status status;
  Rows rows;
  std::size_t visits = 0;  // more than rows.size(): a row was visited twice
};

// load_boards() runs on the calling thread: it runs on another one here, so that a stuck store
// fails the test (wait_for's bound) instead of hanging it.
Loaded load_rows(store::Store& s) {
  auto f = std::async(std::launch::async, [&s] {
    Loaded out;
    out.status = s.load_boards([&out](const store::BoardRow& r) {
      ++out.visits;
      out.rows[{std::string(r.board), std::string(r.member)}] =
          RowValue{std::bit_cast<std::uint64_t>(r.score), r.seq};
    });
    return out;
  });
  return wait_for(f);
}

void expect_rows(store::Store& s, const Rows& want) {
  const Loaded got = load_rows(s);
  ASSERT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(got.visits, got.rows.size()) << "a row was visited more than once";
  EXPECT_EQ(got.rows, want);
}

std::future<store::WriteResult> write_async(store::Store& s, std::vector<Write> batch) {
  auto p = std::make_shared<std::promise<store::WriteResult>>();
  auto f = p->get_future();
  s.write(std::move(batch), [p](store::WriteResult r) { p->set_value(std::move(r)); });
  return f;
}

std::future<store::Status> clear_async(store::Store& s) {
  auto p = std::make_shared<std::promise<store::Status>>();
  auto f = p->get_future();
  s.clear([p](store::Status st) { p->set_value(std::move(st)); });
  return f;
}

// Closes the store and opens the same directory again (what survives is what was durable).
void reopen(std::unique_ptr<store::Store>& s, const std::string& uri) {
  s->close();
  s.reset();
  s = open_ok(uri);
}

// Restarts the store (reopen) and expects load_boards() to report `want`: what was durable.
void expect_rows_after_a_restart(std::unique_ptr<store::Store>& s, const std::string& uri,
                                 const Rows& want, const char* trace = "after a restart") {
  reopen(s, uri);
  ASSERT_TRUE(s);
  SCOPED_TRACE(trace);
  expect_rows(*s, want);
}

const std::string kNul("\0", 1);
const std::string kFf250(250, '\xff');  // the highest board (and member) name

TEST(RocksBoards, SetThenLoadKeepsExactScoresAndSeqsAcrossARestart) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  constexpr std::uint64_t kTwo53 = std::uint64_t{1} << 53;
  const std::vector<std::pair<double, std::uint64_t>> cases{
      {0.1, 1},
      {-1e308, std::uint64_t{1} << 62},
      {5e-324, 2},  // the smallest subnormal
      {-0.0, 3},
      {0.0, 4},
      {9007199254740993.0, kTwo53 + 1},  // 2^53+1 (as a score it rounds to 2^53; as a seq not)
      {std::nextafter(9007199254740992.0, 1e300), 5},  // 2^53+2, the next double
      {-5e-324, 6},
      {std::numeric_limits<double>::max(), (std::uint64_t{1} << 63) - 1},
      {std::numeric_limits<double>::lowest(), 7},
      {std::numeric_limits<double>::min(), 0},
      {-1.0 / 3.0, 8},
  };
  std::vector<Write> batch;
  Rows want;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    batch.push_back(
        board_set("b", name("m", static_cast<long long>(i)), cases[i].first, cases[i].second));
    want[{"b", name("m", static_cast<long long>(i))}] = row(cases[i].first, cases[i].second);
  }
  auto r = write_sync(*s, std::move(batch));
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed, std::vector<bool>(cases.size(), false));
  {
    SCOPED_TRACE("after the write");
    expect_rows(*s, want);
  }
  // Spelled out for the two easiest to lose: the sign of -0.0 and the smallest subnormal.
  const Loaded got = load_rows(*s);
  ASSERT_EQ(got.rows.count({"b", "m3"}), 1u);
  const double neg_zero = std::bit_cast<double>(got.rows.at({"b", "m3"}).bits);
  EXPECT_EQ(neg_zero, 0.0);
  EXPECT_TRUE(std::signbit(neg_zero));
  EXPECT_EQ(std::bit_cast<double>(got.rows.at({"b", "m2"}).bits),
            std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(got.rows.at({"b", "m1"}).seq, std::uint64_t{1} << 62);
  EXPECT_EQ(got.rows.at({"b", "m5"}).seq, kTwo53 + 1);

  // A set of an existing row replaces it (one row, the new score and seq).
  ASSERT_TRUE(write_sync(*s, {board_set("b", "m0", 2.5, 99)}).status.ok());
  want[{"b", "m0"}] = row(2.5, 99);
  {
    SCOPED_TRACE("after the replacement");
    expect_rows(*s, want);
  }
  // Board rows are not keys.
  EXPECT_EQ(value_of(*s, "b"), "<absent>");
  EXPECT_EQ(value_of(*s,
                     "\x01"
                     "bm0"),
            "<absent>");  // the row's key in its own family

  expect_rows_after_a_restart(s, dir.uri(), want);
}

TEST(RocksBoards, NamesOfAnyBytesAndPrefixNamesStayDistinct) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  const std::string k250(250, 'k');
  const std::string a_ff("a\xff");
  const std::string a_ffff("a\xff\xff");
  const std::string a_nul("a\0", 2);
  const std::vector<std::pair<std::string, std::string>> names{
      {"a", "bc"},  // [1]a bc  vs  [2]ab c: same bytes after the length, distinct rows
      {"ab", "c"},
      {"a", "b"},
      {"abc", "d"},
      {"a", "\xff"},
      {"a", kFf250},
      {a_ff, "x"},  // boards "a" + 0xFF..: in the range a naive prefix_end("a") would cover
      {a_ffff, "y"},
      {a_nul, "z"},
      {"\x01"
       "a",
       "m"},  // looks like the encoding of board "a"
      {"b", "a"},
      {"\xff", "\xff"},
      {"\xff", "\xffm"},
      {"\xff\xff", "m"},  // [2]\xff\xff m  vs  [1]\xff \xffm
      {kFf250, kFf250},
      {k250, kFf250},
      {kNul, kNul},
      {std::string("\0\xff", 2), std::string("\xff\0", 2)},
      {"'", "'"},
      {"it's", "o'neil\"; DROP TABLE leaderboard; --"},
  };
  std::vector<Write> batch;
  Rows want;
  std::uint64_t seq = 1;
  for (const auto& [board, member] : names) {
    const double score = static_cast<double>(seq) / 8;
    batch.push_back(board_set(board, member, score, seq));
    want[{board, member}] = row(score, seq);
    ++seq;
  }
  ASSERT_EQ(want.size(), names.size());
  ASSERT_TRUE(write_sync(*s, std::move(batch)).status.ok());
  {
    SCOPED_TRACE("every row");
    expect_rows(*s, want);
  }

  // Removing ("a", "bc") leaves ("ab", "c") alone.
  ASSERT_TRUE(write_sync(*s, {board_remove("a", "bc")}).status.ok());
  want.erase({"a", "bc"});
  {
    SCOPED_TRACE("remove a/bc");
    expect_rows(*s, want);
  }

  auto drop = [&](const std::string& board, const char* what) {
    SCOPED_TRACE(what);
    auto r = write_sync(*s, {board_drop(board)});
    ASSERT_TRUE(r.status.ok()) << r.status.message;
    std::erase_if(want, [&](const auto& kv) { return kv.first.first == board; });
    expect_rows(*s, want);
  };
  drop("a", "drop a: not ab, abc, a\\xff, a\\xff\\xff, a\\0, \\x01a");
  ASSERT_EQ(want.count({"ab", "c"}), 1u);
  ASSERT_EQ(want.count({a_ff, "x"}), 1u);
  drop("\xff", "drop \\xff: not \\xff\\xff");
  ASSERT_EQ(want.count({"\xff\xff", "m"}), 1u);
  drop(kFf250, "drop 250 x \\xff: not 250 x k");
  ASSERT_EQ(want.count({k250, kFf250}), 1u);
  drop(kNul, "drop \\0: not \\0\\xff");
  drop("zz", "drop of a board that has no rows");
  drop(a_ff, "drop a\\xff: not a\\xff\\xff");
  ASSERT_EQ(want.count({a_ffff, "y"}), 1u);

  expect_rows_after_a_restart(s, dir.uri(), want);
}

TEST(RocksBoards, OpsOfOneGroupApplyInCallOrder) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  ASSERT_TRUE(
      write_sync(*s, {board_set("pre", "p", 1, 1), board_set("g6", "old", 1, 1)}).status.ok());
  const auto commits = s->stats().commits;
  std::vector<std::future<store::WriteResult>> results;
  {
    CommitterGate gate(*s);  // everything below forms one group
    // Across batches: set, drop, set.
    results.push_back(write_async(*s, {board_set("g1", "m", 1, 1)}));
    results.push_back(write_async(*s, {board_drop("g1")}));
    results.push_back(write_async(*s, {board_set("g1", "n", 2, 2)}));
    // Set then remove; remove then set.
    results.push_back(write_async(*s, {board_set("g2", "x", 1, 1)}));
    results.push_back(write_async(*s, {board_remove("g2", "x")}));
    results.push_back(write_async(*s, {board_remove("g3", "y")}));
    results.push_back(write_async(*s, {board_set("g3", "y", 3, 3)}));
    // One batch, boards and keys interleaved (the committer sorts by board: each board's own
    // ops must keep their order, drops included).
    results.push_back(write_async(
        *s, {board_set("z", "m", 1, 1), put("k", "v"), board_set("a", "m", 1, 1), board_drop("z"),
             board_set("ab", "c", 4, 4), board_drop("a"), board_set("z", "n", 2, 2),
             board_set("a", "bc", 5, 5), board_drop("pre"), put("j", "w")}));
    // The last set of a row wins, within a batch and across batches.
    results.push_back(write_async(*s, {board_set("g4", "m", 1, 1), board_set("g4", "m", 7, 70)}));
    results.push_back(write_async(*s, {board_set("g4", "m", 8, 80)}));
    // Within one batch: remove then set, set then remove, drop then set.
    results.push_back(write_async(*s, {board_remove("g5", "m"), board_set("g5", "m", 5, 5),
                                       board_set("g5", "gone", 1, 1), board_remove("g5", "gone")}));
    results.push_back(write_async(*s, {board_drop("g6"), board_set("g6", "new", 6, 6)}));
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto r = wait_for(results[i]);
    EXPECT_TRUE(r.status.ok()) << i << ": " << r.status.message;
  }
  EXPECT_EQ(s->stats().commits, commits + 2);  // the gate's, then the whole group
  const Rows want{
      {{"g1", "n"}, row(2, 2)}, {{"g3", "y"}, row(3, 3)},   {{"z", "n"}, row(2, 2)},
      {{"ab", "c"}, row(4, 4)}, {{"a", "bc"}, row(5, 5)},   {{"g4", "m"}, row(8, 80)},
      {{"g5", "m"}, row(5, 5)}, {{"g6", "new"}, row(6, 6)},
  };
  {
    SCOPED_TRACE("after the group");
    expect_rows(*s, want);
  }
  EXPECT_EQ(value_of(*s, "k"), "v");
  EXPECT_EQ(value_of(*s, "j"), "w");
  expect_rows_after_a_restart(s, dir.uri(), want);
}

TEST(RocksBoards, AClearInsideAGroupRemovesTheRowsBeforeItOnly) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  // The highest and the lowest possible row keys, and a key.
  ASSERT_TRUE(write_sync(*s, {board_set("b", "old", 1, 1), board_set(kFf250, kFf250, 2, 2),
                              board_set(kNul, kNul, 3, 3), put("key-old", "v")})
                  .status.ok());
  std::future<store::WriteResult> before, after, later;
  std::future<store::Status> cleared;
  {
    CommitterGate gate(*s);  // one group: write, clear, writes
    before = write_async(*s, {board_set("b", "before", 1, 1), put("key-before", "v")});
    cleared = clear_async(*s);
    after = write_async(*s, {board_set("b", "after", 2, 2), put("key-after", "v"),
                             board_set("c", "after", 3, 3), board_set(kFf250, "m", 4, 4)});
    later = write_async(*s, {board_remove("c", "after"), board_set("c", "late", 5, 5)});
  }
  EXPECT_TRUE(wait_for(before).status.ok());
  EXPECT_TRUE(wait_for(cleared).ok());
  EXPECT_TRUE(wait_for(after).status.ok());
  EXPECT_TRUE(wait_for(later).status.ok());
  const Rows want{
      {{"b", "after"}, row(2, 2)}, {{"c", "late"}, row(5, 5)}, {{kFf250, "m"}, row(4, 4)}};
  {
    SCOPED_TRACE("after the group");
    expect_rows(*s, want);
  }
  EXPECT_EQ(value_of(*s, "key-old"), "<absent>");
  EXPECT_EQ(value_of(*s, "key-before"), "<absent>");
  EXPECT_EQ(value_of(*s, "key-after"), "v");
  ASSERT_NO_FATAL_FAILURE(expect_rows_after_a_restart(s, dir.uri(), want));
  // A clear alone removes every row, durably.
  ASSERT_TRUE(clear_sync(*s).ok());
  {
    SCOPED_TRACE("after a clear alone");
    expect_rows(*s, {});
  }
  ASSERT_NO_FATAL_FAILURE(
      expect_rows_after_a_restart(s, dir.uri(), {}, "after a clear alone and a restart"));
  EXPECT_EQ(value_of(*s, "key-after"), "<absent>");
}

TEST(RocksBoards, AKeyAndABoardOfTheSameNameAreIndependent) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  auto r = write_sync(*s, {board_set("x", "m", 1, 1), put("x", "v"), board_set("x", "x", 2, 2)});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed, (std::vector<bool>{false, false, false}));  // no key "x" before the put
  // The row's own encoding, as a key: still no row.
  ASSERT_TRUE(write_sync(*s, {put("\x01"
                                  "xq",
                                  "not a row")})
                  .status.ok());
  expect_rows(*s, {{{"x", "m"}, row(1, 1)}, {{"x", "x"}, row(2, 2)}});

  // Dropping board "x" keeps key "x".
  ASSERT_TRUE(write_sync(*s, {board_drop("x")}).status.ok());
  expect_rows(*s, {});
  EXPECT_EQ(value_of(*s, "x"), "v");

  // Deleting key "x" keeps board "x"; a board row is not a value of the key.
  ASSERT_TRUE(write_sync(*s, {board_set("x", "m", 3, 3)}).status.ok());
  r = write_sync(*s, {del("x")});
  EXPECT_EQ(r.existed, std::vector<bool>{true});
  r = write_sync(*s, {del("x")});
  EXPECT_EQ(r.existed, std::vector<bool>{false});  // board "x" has a row, key "x" is gone
  EXPECT_EQ(value_of(*s, "x"), "<absent>");
  expect_rows(*s, {{{"x", "m"}, row(3, 3)}});
  r = write_sync(*s, {board_remove("x", "m"), put("x", "w")});
  EXPECT_EQ(r.existed, (std::vector<bool>{false, false}));
  ASSERT_TRUE(write_sync(*s, {board_set("x", "m", 4, 4)}).status.ok());

  // clear() removes both.
  ASSERT_TRUE(clear_sync(*s).ok());
  EXPECT_EQ(value_of(*s, "x"), "<absent>");
  EXPECT_EQ(value_of(*s,
                     "\x01"
                     "xq"),
            "<absent>");
  expect_rows(*s, {});
}

TEST(RocksBoards, ABadBoardRowRefusesOnlyItsBatch) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  const std::string b251(251, 'b'), m251(251, 'm'), b250(250, 'b'), m250(250, 'm');
  const std::vector<std::pair<const char*, Write>> bad{
      {"set, empty board", board_set("", "m", 1, 1)},
      {"set, 251-byte board", board_set(b251, "m", 1, 1)},
      {"set, empty member", board_set("b", "", 1, 1)},
      {"set, 251-byte member", board_set("b", m251, 1, 1)},
      {"remove, empty board", board_remove("", "m")},
      {"remove, 251-byte board", board_remove(b251, "m")},
      {"remove, empty member", board_remove("b", "")},
      {"remove, 251-byte member", board_remove("b", m251)},
      {"drop, empty board", board_drop("")},
      {"drop, 251-byte board", board_drop(b251)},
      {"set, NaN score", board_set("b", "m", std::numeric_limits<double>::quiet_NaN(), 1)},
      {"set, infinite score", board_set("b", "m", std::numeric_limits<double>::infinity(), 1)},
      {"set, seq 2^63", board_set("b", "m", 1, std::uint64_t{1} << 63)},
  };
  // Rows a refused batch would remove if any of it were applied.
  ASSERT_TRUE(
      write_sync(*s, {board_set("victim", "m", 1, 1), board_set("b", "m", 1, 1)}).status.ok());
  Rows want{{{"victim", "m"}, row(1, 1)}, {{"b", "m"}, row(1, 1)}};
  const auto commits = s->stats().commits;
  const auto writes = s->stats().writes;
  std::vector<std::future<store::WriteResult>> refused, accepted;
  std::uint64_t accepted_ops = 0;
  {
    CommitterGate gate(*s);  // the refused and the accepted batches share one group
    for (std::size_t i = 0; i < bad.size(); ++i) {
      const auto n = static_cast<long long>(i);
      // The bad op in the middle: the ops before it and after it are refused with it.
      refused.push_back(write_async(
          *s, {board_set("b", name("r", n), 1, 1), put(name("k", n), "v"), board_drop("victim"),
               board_remove("b", "m"), bad[i].second, board_set("b", name("s", n), 1, 1)}));
      accepted.push_back(
          write_async(*s, {board_set("good", name("g", n), static_cast<double>(n), i + 1)}));
      want[{"good", name("g", n)}] = row(static_cast<double>(n), i + 1);
      ++accepted_ops;
    }
    // The longest names are fine; a drop ignores its (here over-long) member.
    Write drop_with_member = board_drop("absent");
    drop_with_member.member = m251;
    accepted.push_back(
        write_async(*s, {board_set(b250, m250, 2, 2), board_remove(b250, "x"), drop_with_member}));
    want[{b250, m250}] = row(2, 2);
    accepted_ops += 3;
  }
  for (std::size_t i = 0; i < refused.size(); ++i) {
    auto r = wait_for(refused[i]);
    EXPECT_EQ(r.status.code, Code::failed) << bad[i].first << ": " << r.status.message;
    EXPECT_FALSE(r.status.message.empty()) << bad[i].first;
    EXPECT_TRUE(r.existed.empty()) << bad[i].first;
  }
  for (std::size_t i = 0; i < accepted.size(); ++i) {
    auto r = wait_for(accepted[i]);
    EXPECT_TRUE(r.status.ok()) << i << ": " << r.status.message;
  }
  {
    SCOPED_TRACE("nothing of a refused batch was written");
    expect_rows(*s, want);
  }
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(value_of(*s, name("k", static_cast<long long>(i))), "<absent>") << bad[i].first;
  }
  auto st = s->stats();
  EXPECT_FALSE(st.failed);
  EXPECT_EQ(st.errors, bad.size());
  EXPECT_EQ(st.commits, commits + 2);
  EXPECT_EQ(st.writes, writes + 1 + accepted_ops);  // the gate's put, then the accepted ops

  // Alone, outside a group, too; and the store takes writes afterwards.
  auto r = write_sync(*s, {board_drop("")});
  EXPECT_EQ(r.status.code, Code::failed) << r.status.message;
  r = write_sync(*s, {board_set("after", "m", 1, 1)});
  EXPECT_TRUE(r.status.ok()) << r.status.message;
  want[{"after", "m"}] = row(1, 1);
  EXPECT_FALSE(s->stats().failed);
  expect_rows_after_a_restart(s, dir.uri(), want);
}

// Issue 44: a batch write() refuses (a key over kMaxKeyBytes) is answered Code::failed, which
// the tier reads as "refused, not applied" (server/store_tier.cc, refused_unapplied), not
// io_error (an unknown outcome: the tier would then distrust the key). In a group with other
// batches, they commit and it applies nothing; the store is not failed.
TEST(RocksStore, ABatchWithAnOverlongKeyIsRefusedNotAppliedInItsGroup) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {put("kept", "old")}).status.ok());
  const std::string overlong(store::kMaxKeyBytes + 1, 'k');
  std::future<store::WriteResult> before, refused, after;
  {
    CommitterGate gate(*s);  // the three batches share one group
    before = write_async(*s, {put("before", "1")});
    refused = write_async(
        *s, {put("kept", "new"), del("before"), put(overlong, "x"), put("refused", "1")});
    after = write_async(*s, {put("after", "1")});
  }
  const store::WriteResult r = wait_for(refused);
  EXPECT_EQ(r.status.code, Code::failed) << r.status.message;
  EXPECT_NE(r.status.message.find("store write refused: a key must be 1..250 bytes (got 251)"),
            std::string::npos)
      << r.status.message;
  EXPECT_TRUE(r.existed.empty());
  EXPECT_TRUE(wait_for(before).status.ok());
  EXPECT_TRUE(wait_for(after).status.ok());
  EXPECT_EQ(value_of(*s, "kept"), "old");  // nothing of the refused batch applied
  EXPECT_EQ(value_of(*s, "before"), "1");
  EXPECT_EQ(value_of(*s, "refused"), "<absent>");
  EXPECT_EQ(value_of(*s, "after"), "1");
  EXPECT_FALSE(s->stats().failed);  // refused, but not sticky: the next write commits
  EXPECT_TRUE(write_sync(*s, {put("later", "1")}).status.ok());
}

TEST(RocksBoards, LoadOnAFreshStoreVisitsNothing) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  Loaded got = load_rows(*s);
  EXPECT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(got.visits, 0u);
  // Keys are not rows; a row set and removed is gone.
  ASSERT_TRUE(write_sync(*s, {put("k", "v"), board_set("b", "m", 1, 1)}).status.ok());
  ASSERT_TRUE(write_sync(*s, {board_remove("b", "m")}).status.ok());
  got = load_rows(*s);
  EXPECT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(got.visits, 0u);
}

TEST(RocksBoards, LoadsAHundredThousandRows) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  constexpr int kBatches = 100, kPerBatch = 1000;
  std::mt19937_64 rng(20240612);
  Rows want;
  std::vector<std::future<store::WriteResult>> results;
  for (int b = 0; b < kBatches; ++b) {
    std::vector<Write> batch;
    batch.reserve(kPerBatch);
    for (int i = 0; i < kPerBatch; ++i) {
      const long long n = static_cast<long long>(b) * kPerBatch + i;
      std::string board = name("board", n % 97);
      if (n % 97 == 5) board += '\xff';  // a board next to "board5"'s range
      if (n % 97 == 6) board.push_back('\0');
      const std::string member = name("m", n);
      double score = 0;
      do {
        score = std::bit_cast<double>(rng());
      } while (!std::isfinite(score));
      const auto seq = static_cast<std::uint64_t>(n) + 1;
      batch.push_back(board_set(board, member, score, seq));
      want[{board, member}] = row(score, seq);
    }
    results.push_back(write_async(*s, std::move(batch)));  // pipelined: they form groups
  }
  for (auto& f : results) {
    auto r = wait_for(f);
    ASSERT_TRUE(r.status.ok()) << r.status.message;
  }
  ASSERT_EQ(want.size(), static_cast<std::size_t>(kBatches) * kPerBatch);

  auto timed_load = [&](const char* when) {
    SCOPED_TRACE(when);
    const auto t0 = std::chrono::steady_clock::now();
    const Loaded got = load_rows(*s);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - t0;
    std::printf("load_boards %s: %zu rows in %.1f ms\n", when, got.visits, took.count());
    ASSERT_TRUE(got.status.ok()) << got.status.message;
    EXPECT_EQ(got.visits, want.size());
    EXPECT_TRUE(got.rows == want) << "the loaded rows differ from the model (" << got.rows.size()
                                  << " vs " << want.size() << " rows)";
  };
  timed_load("from the memtable");
  EXPECT_EQ(s->stats().writes, want.size());
  reopen(s, dir.uri());
  ASSERT_TRUE(s);
  timed_load("after a restart");
}

TEST(RocksBoards, OpensADatabaseMadeBeforeTheBoardsFamily) {
  TempDir dir;
  const std::string path = (dir.path() / "db").string();
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    const rocksdb::Status st = rocksdb::DB::Open(o, path, &raw);
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "old", "v").ok());
    // A key that looks like a board row ([1]b + m, 16 bytes of value): it stays a key.
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(),
                        "\x01"
                        "bm",
                        "0123456789abcdef")
                    .ok());
    ASSERT_TRUE(db->Close().ok());
  }
  auto families = [&] {
    std::vector<std::string> names;
    const rocksdb::Status st = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names);
    EXPECT_TRUE(st.ok()) << st.ToString();
    std::sort(names.begin(), names.end());
    return names;
  };
  ASSERT_EQ(families(), std::vector<std::string>{"default"});

  auto s = open_ok("rocksdb:" + path);
  ASSERT_TRUE(s);
  EXPECT_EQ(value_of(*s, "old"), "v");
  EXPECT_EQ(value_of(*s,
                     "\x01"
                     "bm"),
            "0123456789abcdef");
  expect_rows(*s, {});
  auto r = write_sync(*s, {board_set("b", "m", 1.5, 1), put("old", "w")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed, (std::vector<bool>{false, true}));
  expect_rows(*s, {{{"b", "m"}, row(1.5, 1)}});
  s->close();
  s.reset();
  EXPECT_EQ(families(), (std::vector<std::string>{"boards", "default", "meta"}));

  s = open_ok("rocksdb:" + path);
  ASSERT_TRUE(s);
  EXPECT_EQ(value_of(*s, "old"), "w");
  SCOPED_TRACE("after a restart");
  expect_rows(*s, {{{"b", "m"}, row(1.5, 1)}});
}

TEST(RocksBoards, LoadAfterCloseSaysClosed) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "m", 1, 1)}).status.ok());
  s->close();
  const Loaded got = load_rows(*s);
  EXPECT_EQ(got.status.code, Code::closed) << got.status.message;
  EXPECT_FALSE(got.status.message.empty());
  EXPECT_EQ(got.visits, 0u);
}

TEST(RocksBoards, StatsCountBoardOpsAsWrites) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "m", 1, 1), board_set("b", "n", 2, 2),
                              board_remove("b", "m"), board_drop("c"), put("k", "v")})
                  .status.ok());
  auto st = s->stats();
  EXPECT_EQ(st.writes, 5u);
  EXPECT_EQ(st.commits, 1u);
  ASSERT_TRUE(write_sync(*s, {board_remove("absent", "m")}).status.ok());  // a no-op still counts
  st = s->stats();
  EXPECT_EQ(st.writes, 6u);
  EXPECT_EQ(st.commits, 2u);
  EXPECT_EQ(write_sync(*s, {board_set("b", "", 1, 1)}).status.code, Code::failed);
  st = s->stats();
  EXPECT_EQ(st.writes, 6u);  // refused: nothing committed
  EXPECT_EQ(st.commits, 2u);
  EXPECT_EQ(st.errors, 1u);
  ASSERT_TRUE(clear_sync(*s).ok());
  st = s->stats();
  EXPECT_EQ(st.writes, 6u);
  EXPECT_EQ(st.commits, 3u);
  EXPECT_EQ(st.errors, 1u);
  EXPECT_FALSE(st.failed);
  EXPECT_EQ(st.reads, 0u);  // load_boards is not a read of keys
  (void)load_rows(*s);
  EXPECT_EQ(s->stats().reads, 0u);
}

// want_existed is for put/del (store.hh); on a board op it must be ignored (existed false), not
// take the committer down. Run in a child process: a store that dies there fails this test only.
TEST(RocksBoards, WantExistedOnABoardOpIsIgnored) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir;
  EXPECT_EXIT(
      {
        std::set_terminate([] {  // say why (an uncaught exception's what()), clean up, die
          if (auto e = std::current_exception()) {
            try {
              std::rethrow_exception(e);
            } catch (const std::exception& x) {
              std::fprintf(stderr, "terminate: uncaught exception: %s\n", x.what());
            } catch (...) {
              std::fprintf(stderr, "terminate: uncaught exception\n");
            }
          }
          remove_live_dirs();
          std::abort();
        });
        int code = 1;
        {
          auto s = open_ok(dir.uri());
          if (s && write_sync(*s, {put("k", "v")}).status.ok()) {
            Write set = board_set("b", "m", 1, 1);
            set.want_existed = true;
            Write set_k = board_set("k", "m", 1, 1);  // a board named like an existing key
            set_k.want_existed = true;
            Write drop = board_drop("b");
            drop.want_existed = true;
            const auto r = write_sync(*s, {set, set_k, put("k", "w"), drop});
            if (r.status.ok() && r.existed == std::vector<bool>{false, false, true, false} &&
                value_of(*s, "k") == "w") {
              code = 0;
            }
          }
        }
        remove_live_dirs();
        std::exit(code);
      },
      ::testing::ExitedWithCode(0), "");
}

// --- expiry: values with an expiry time (store/rocksdb_values.hh) ------------------------------

TEST(RocksExpiry, AnExpiredValueReadsAsAbsentAndCountsAsAbsentForExisted) {
  check_contract(check_an_expired_value_reads_as_absent);
}

TEST(RocksExpiry, ExpiryTimesSurviveARestart) {
  TempDir dir;
  const std::string uri = "rocksdb:" + (dir.path() / "db").string();
  const std::uint64_t later = store::unix_now_ms() + 3'600'000;
  auto s = open_ok(uri);
  ASSERT_TRUE(write_sync(*s, {put_expiring("k", "v", later)}).status.ok());
  s->close();
  s = open_ok(uri);
  ASSERT_TRUE(s);
  auto r = read_sync(*s, "k");
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.value, "v");
  EXPECT_EQ(r.expires_at_ms, later);
}

// The database as RocksStore lays it out, opened with RocksDB's own API (and the expiry filter on
// the keys, as RocksStore sets it): every key of the default family, and a compaction of it.
struct RawDb {
  explicit RawDb(const std::string& path, bool with_meta = true) {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.create_missing_column_families = true;
    rocksdb::ColumnFamilyOptions keys(o);
    keys.compaction_filter = &filter;
    std::vector<rocksdb::ColumnFamilyDescriptor> families{
        {rocksdb::kDefaultColumnFamilyName, keys}, {"boards", rocksdb::ColumnFamilyOptions(o)}};
    if (with_meta) families.push_back({"meta", rocksdb::ColumnFamilyOptions(o)});
    rocksdb::DB* raw = nullptr;
    const rocksdb::Status st = rocksdb::DB::Open(o, path, families, &handles, &raw);
    EXPECT_TRUE(st.ok()) << st.ToString();
    db.reset(raw);
  }
  ~RawDb() {
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
    (void)db->Close();
  }
  std::map<std::string, std::string> keys() {
    std::map<std::string, std::string> out;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next())
      out[it->key().ToString()] = it->value().ToString();
    return out;
  }
  void compact() {
    EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    rocksdb::CompactRangeOptions c;
    c.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    const rocksdb::Status st = db->CompactRange(c, nullptr, nullptr);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  store::rocks_values::ExpiryFilter filter;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::unique_ptr<rocksdb::DB> db;
};

TEST(RocksExpiry, CompactionsDropExpiredValuesWithoutReadsAndNothingOlderResurfaces) {
  TempDir dir;
  const std::string path = (dir.path() / "db").string();
  const std::uint64_t later = store::unix_now_ms() + 60'000;
  {
    auto s = open_ok("rocksdb:" + path);
    ASSERT_TRUE(write_sync(*s, {put("k", "old"), put("plain", "p")}).status.ok());
    s->close();
  }
  {
    RawDb raw(path);
    raw.compact();  // "old" goes to the bottom level
  }
  {
    auto s = open_ok("rocksdb:" + path);
    std::vector<Write> batch{put_expiring("k", "new", 1), put_expiring("live", "v", later)};
    for (int i = 0; i < 100; ++i) batch.push_back(put_expiring(name("gone", i), "x", 1));
    ASSERT_TRUE(write_sync(*s, std::move(batch)).status.ok());
    s->close();
  }
  RawDb raw(path);
  EXPECT_EQ(raw.keys().size(), 103u);  // expired values are still stored, until a compaction
  raw.compact();
  const auto left = raw.keys();
  std::vector<std::string> names;
  for (const auto& [k, v] : left) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"live", "plain"}));  // and "k" stays gone
}

TEST(RocksExpiry, ADatabaseOfBareValuesIsMigratedOnceAndKeepsEveryByte) {
  TempDir dir;
  const std::string path = (dir.path() / "db").string();
  const std::string tricky("\x01\x00\x00\x00\x00\x00\x00\x00\x00tail", 13);  // looks like a header
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "a", "1").ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "empty", "").ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "tricky", tricky).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  for (int open = 0; open < 2; ++open) {  // the second open must not migrate again
    SCOPED_TRACE(open);
    auto s = open_ok("rocksdb:" + path);
    ASSERT_TRUE(s);
    EXPECT_EQ(value_of(*s, "a"), "1");
    EXPECT_EQ(value_of(*s, "empty"), "");
    EXPECT_EQ(value_of(*s, "tricky"), tricky);
    EXPECT_EQ(read_sync(*s, "tricky").expires_at_ms, 0u);
    s->close();
  }
}

TEST(RocksExpiry, AMigrationCutShortResumesAfterItsLastBatchAndBadValuesAreErrors) {
  TempDir dir;
  const std::string path = (dir.path() / "db").string();
  {
    RawDb raw(path);  // a migration that stopped after "b": a and b have headers, c does not
    const auto& meta = raw.handles[2];
    ASSERT_TRUE(raw.db
                    ->Put(rocksdb::WriteOptions(), "a",
                          std::string("\0"
                                      "1",
                                      2))
                    .ok());
    ASSERT_TRUE(raw.db
                    ->Put(rocksdb::WriteOptions(), "b",
                          std::string("\0"
                                      "2",
                                      2))
                    .ok());
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), "c", "3").ok());
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), meta, "format-progress", "b").ok());
  }
  auto s = open_ok("rocksdb:" + path);
  ASSERT_TRUE(s);
  EXPECT_EQ(value_of(*s, "a"), "1");
  EXPECT_EQ(value_of(*s, "b"), "2");
  EXPECT_EQ(value_of(*s, "c"), "3");
  s->close();
  {
    RawDb raw(path);  // a value no cache_server wrote: an unknown header
    ASSERT_TRUE(raw.db->Put(rocksdb::WriteOptions(), "bad", "\x07zz").ok());
  }
  s = open_ok("rocksdb:" + path);
  const auto bad = read_sync(*s, "bad");
  EXPECT_EQ(bad.status.code, Code::io_error);
  EXPECT_NE(bad.status.message.find("malformed"), std::string::npos) << bad.status.message;
}

// --- faults ----------------------------------------------------------------------------------

TEST(Faults, DelayedReadsOverlap) {
  TempDir dir;
  auto s = open_ok(dir.uri(), faults_of("read-delay=50ms"));
  ASSERT_TRUE(write_sync(*s, {put("k0", "v")}).status.ok());
  constexpr int kReads = 100;
  std::vector<std::promise<std::chrono::steady_clock::duration>> promises(kReads);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kReads; ++i) {
    s->read(name("k", i), [&p = promises[i], t0](store::ReadResult r) {
      EXPECT_TRUE(r.status.ok() || r.status.code == Code::not_found);
      p.set_value(std::chrono::steady_clock::now() - t0);
    });
  }
  for (auto& p : promises) {
    auto f = p.get_future();
    EXPECT_GE(wait_for(f), 50ms);  // never early
  }
  // Serial delays would take 100 x 50 ms = 5 s; overlapping ones about 50 ms.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(value_of(*s, "k0"), "v");
  s->close();  // waits for delayed reads issued before it
}

// A write the engine has applied but not yet made durable (its WAL sync is slow) is invisible
// to reads until its sync ends: a crash could still lose it.
TEST(Faults, ReadsNeverSeeAWriteBeforeItsSyncEnds) {
  TempDir dir;
  auto s = open_ok(dir.uri(), faults_of("sync-delay=400ms"));
  ASSERT_TRUE(write_sync(*s, {put("k", "old")}).status.ok());
  std::promise<store::Status> acked;
  s->write({put("k", "new"), put("fresh", "v")},
           [&](store::WriteResult r) { acked.set_value(std::move(r.status)); });
  auto f = acked.get_future();
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(100ms);  // applied by now; its sync ends at ~400 ms
    ASSERT_EQ(f.wait_for(0s), std::future_status::timeout) << "acknowledged before its sync";
    EXPECT_EQ(value_of(*s, "k"), "old") << i;
    EXPECT_EQ(value_of(*s, "fresh"), "<absent>") << i;
  }
  EXPECT_TRUE(wait_for(f).ok());
  EXPECT_EQ(value_of(*s, "k"), "new");
  EXPECT_EQ(value_of(*s, "fresh"), "v");
}

TEST(Faults, CloseWaitsForDelayedReads) {
  TempDir dir;
  auto s = open_ok(dir.uri(), faults_of("read-delay=100ms"));
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) s->read("k", [&](store::ReadResult) { ++done; });
  s->close();
  EXPECT_EQ(done.load(), 10);
}

// write-error-after, sync-error-after: N commits succeed, the next fails, the store is failed
// for good (writes refused at once, reads served), and a reopen without faults finds every
// acknowledged write and not the refused one.
void expect_sticky_failure(const char* spec, Code first_failure) {
  SCOPED_TRACE(spec);
  TempDir dir;
  {
    auto s = open_ok(dir.uri(), faults_of(spec));
    for (int i = 0; i < 3; ++i) {
      auto r = write_sync(*s, {put(name("ok", i), "v")});
      ASSERT_TRUE(r.status.ok()) << i << ": " << r.status.message;
    }
    EXPECT_FALSE(s->stats().failed);
    auto r = write_sync(*s, {put("lost", "v"), del("ok0")});
    EXPECT_EQ(r.status.code, first_failure) << r.status.message;
    EXPECT_FALSE(r.status.message.empty());
    EXPECT_TRUE(r.existed.empty());

    r = write_sync(*s, {del("ok1")});
    EXPECT_EQ(r.status.code, Code::failed) << r.status.message;
    EXPECT_EQ(clear_sync(*s).code, Code::failed);

    const auto st = s->stats();
    EXPECT_TRUE(st.failed);
    EXPECT_FALSE(st.last_error.empty());
    EXPECT_EQ(st.commits, 3u);
    EXPECT_EQ(st.writes, 3u);
    EXPECT_EQ(st.errors, 3u);
    // Reads still work and never saw the refused write.
    EXPECT_EQ(value_of(*s, "ok0"), "v");
    EXPECT_EQ(value_of(*s, "ok2"), "v");
    EXPECT_EQ(value_of(*s, "lost"), "<absent>");
    s->close();
  }
  auto s = open_ok(dir.uri());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(value_of(*s, name("ok", i)), "v") << i;
  EXPECT_EQ(value_of(*s, "lost"), "<absent>");
  EXPECT_TRUE(write_sync(*s, {put("fresh", "1")}).status.ok());
}

TEST(Faults, WriteErrorAfterFailsTheStoreStickily) {
  expect_sticky_failure("write-error-after=3", Code::io_error);
}

TEST(Faults, SyncErrorAfterFailsTheStoreStickilyAndLosesOnlyTheRefusedWrite) {
  expect_sticky_failure("sync-error-after=3", Code::io_error);
}

TEST(Faults, SyncErrorOnTheFirstCommit) {
  TempDir dir;
  auto s = open_ok(dir.uri(), faults_of("sync-error-after=0"));
  EXPECT_EQ(write_sync(*s, {put("a", "1")}).status.code, Code::io_error);
  EXPECT_EQ(write_sync(*s, {put("b", "1")}).status.code, Code::failed);
  EXPECT_EQ(read_sync(*s, "a").status.code, Code::not_found);
}

TEST(Faults, NoSpaceAfterAnswersNoSpace) {
  TempDir dir;
  auto s = open_ok(dir.uri(), faults_of("no-space-after=2"));
  EXPECT_TRUE(write_sync(*s, {put("a", "1")}).status.ok());
  EXPECT_TRUE(write_sync(*s, {put("b", "2")}).status.ok());
  auto r = write_sync(*s, {put("c", "3")});
  EXPECT_EQ(r.status.code, Code::no_space) << r.status.message;
  EXPECT_NE(r.status.message.find("space"), std::string::npos) << r.status.message;
  EXPECT_EQ(write_sync(*s, {put("d", "4")}).status.code, Code::failed);
  EXPECT_EQ(value_of(*s, "a"), "1");
  EXPECT_EQ(value_of(*s, "c"), "<absent>");
  EXPECT_TRUE(s->stats().failed);
}

TEST(Faults, AFailingGroupFailsEveryBatchInIt) {
  TempDir dir;
  auto s = open_ok(dir.uri(), faults_of("sync-error-after=1"));  // the gate's commit is the 1st
  constexpr int kN = 20;
  std::vector<std::promise<Code>> promises(kN);
  {
    CommitterGate gate(*s);
    for (int i = 0; i < kN; ++i) {
      s->write({put(name("k", i), "v")},
               [&p = promises[i]](store::WriteResult r) { p.set_value(r.status.code); });
    }
  }
  for (auto& p : promises) {
    auto f = p.get_future();
    EXPECT_EQ(wait_for(f), Code::io_error);  // one commit, one failure, never acknowledged
  }
  EXPECT_EQ(s->stats().commits, 1u);
  EXPECT_EQ(value_of(*s, "k0"), "<absent>");
}

}  // namespace
