// store_test.cc — the store/ contract (store.hh) against the real RocksDB in a temporary
// directory: semantics, ordering, durability across a restart, group commit, clear, close, and
// the injected faults (which fail RocksDB's own WAL appends and syncs).
// No test depends on timing for its verdict: batching is forced by holding the committer inside
// a callback, and the one time bound (overlapping delayed reads) is 20x looser than the
// behaviour it rules out.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "store/rocksdb_store.hh"
#include "store/store.hh"

namespace {

using namespace std::chrono_literals;
using store::Code;
using store::Write;

constexpr auto kWait = 60s;  // a generous bound for any one completion (sanitizers, noisy host)

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

// Called by ASan/TSan/UBSan just before they end the process (weak: absent without them).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

[[maybe_unused]] const bool death_callback_installed = [] {
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(remove_live_dirs);
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

// "k" + std::to_string(i) without GCC 12's false -Wrestrict on operator+(const char*, string&&).
std::string name(std::string_view prefix, long long i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}
std::string name(std::string_view prefix, long long a, long long b) {
  std::string s = name(prefix, a);
  s += '-';
  s += std::to_string(b);
  return s;
}

Write put(std::string key, std::string value, bool want = true) {
  return Write{Write::Kind::put, std::move(key), std::move(value), want};
}
Write del(std::string key, bool want = true) {
  return Write{Write::Kind::del, std::move(key), {}, want};
}

template <class T>
T wait_for(std::future<T>& f) {
  if (f.wait_for(kWait) != std::future_status::ready) {
    ADD_FAILURE() << "operation did not complete";
    remove_live_dirs();
    std::abort();  // the store is stuck; do not hang the whole suite
  }
  return f.get();
}

// The promise is shared with the callback: the store thread may still be inside set_value()
// when the waiting test thread wakes up and moves on.
store::WriteResult write_sync(store::Store& s, std::vector<Write> batch) {
  auto p = std::make_shared<std::promise<store::WriteResult>>();
  auto f = p->get_future();
  s.write(std::move(batch), [p](store::WriteResult r) { p->set_value(std::move(r)); });
  return wait_for(f);
}

store::ReadResult read_sync(store::Store& s, std::string key) {
  auto p = std::make_shared<std::promise<store::ReadResult>>();
  auto f = p->get_future();
  s.read(std::move(key), [p](store::ReadResult r) { p->set_value(std::move(r)); });
  return wait_for(f);
}

store::Status clear_sync(store::Store& s) {
  auto p = std::make_shared<std::promise<store::Status>>();
  auto f = p->get_future();
  s.clear([p](store::Status st) { p->set_value(std::move(st)); });
  return wait_for(f);
}

std::string value_of(store::Store& s, const std::string& key) {
  auto r = read_sync(s, key);
  if (r.status.code == Code::not_found) return "<absent>";
  if (!r.status.ok()) return "<error " + r.status.message + ">";
  return r.value;
}

// Holds the committer after a commit of its own (one write, "__gate"), so everything submitted
// meanwhile queues up and forms the next group. release() (or the destructor) lets it go.
class CommitterGate {
 public:
  explicit CommitterGate(store::Store& s) : store_(dynamic_cast<store::RocksStore&>(s)) {
    store_.hold_committer_after_next_commit();
    std::promise<void> committed;
    auto f = committed.get_future();
    store_.write({put("__gate", "1", false)},
                 [&committed](const store::WriteResult&) { committed.set_value(); });
    wait_for(f);
  }
  ~CommitterGate() { release(); }
  CommitterGate(const CommitterGate&) = delete;
  CommitterGate& operator=(const CommitterGate&) = delete;
  void release() { store_.release_committer(); }

 private:
  store::RocksStore& store_;
};

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
}

TEST(ParseFaults, RejectsBadSpecsWithoutTouchingTheOutput) {
  for (const char* bad :
       {"read-delay=abc", "read-delay=50", "read-delay=-5ms", "read-delay=1.5ms",
        "read-delay=", "read-delay=ms", "write-error-after=-1", "write-error-after=x",
        "write-error-after=", "sync-error-after=1.0", "no-space-after=+3",
        "no-space-after=99999999999999999999", "bogus=1", "read-delay", "read-delay=5ms,",
        ",read-delay=5ms", "read-delay=5ms,read-delay=6ms", "read-delay=5ms,,no-space-after=1",
        "read-delay = 5ms"}) {
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
  TempDir dir;
  auto s = open_ok(dir.uri());
  EXPECT_EQ(read_sync(*s, "a").status.code, Code::not_found);

  auto r = write_sync(*s, {put("a", "1")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed, std::vector<bool>{false});
  EXPECT_EQ(value_of(*s, "a"), "1");

  r = write_sync(*s, {put("a", "2")});
  EXPECT_EQ(r.existed, std::vector<bool>{true});
  EXPECT_EQ(value_of(*s, "a"), "2");

  r = write_sync(*s, {del("a")});
  EXPECT_EQ(r.existed, std::vector<bool>{true});
  EXPECT_EQ(read_sync(*s, "a").status.code, Code::not_found);

  r = write_sync(*s, {del("a")});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.existed, std::vector<bool>{false});

  // Without want_existed the answer is false, whatever the state.
  ASSERT_TRUE(write_sync(*s, {put("b", "x")}).status.ok());
  r = write_sync(*s, {put("b", "y", false)});
  EXPECT_EQ(r.existed, std::vector<bool>{false});

  // Binary keys and values, a 250-byte key, an empty value.
  const std::string bin("\0k\xff", 3);
  const std::string big_key(250, 'k');
  ASSERT_TRUE(write_sync(*s, {put(bin, std::string("\0\1", 2)), put(big_key, "")}).status.ok());
  EXPECT_EQ(value_of(*s, bin), std::string("\0\1", 2));
  auto e = read_sync(*s, big_key);
  ASSERT_TRUE(e.status.ok());
  EXPECT_EQ(e.value, "");

  // An empty batch completes ok without a commit.
  const auto commits = s->stats().commits;
  r = write_sync(*s, {});
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.existed.empty());
  EXPECT_EQ(s->stats().commits, commits);
}

TEST(RocksStore, ExistedSeesEarlierOpsOfTheSameBatch) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(write_sync(*s, {put("old", "v")}).status.ok());
  auto r = write_sync(*s, {put("k", "1"), put("k", "2"), del("k"), del("k"), put("k", "3"),
                           del("old"), put("old", "w"), put("n", "1", false), del("n")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed,
            (std::vector<bool>{false, true, true, false, false, true, false, false, true}));
  EXPECT_EQ(value_of(*s, "k"), "3");
  EXPECT_EQ(value_of(*s, "old"), "w");
  EXPECT_EQ(value_of(*s, "n"), "<absent>");
}

TEST(RocksStore, ExistedSeesEarlierBatchesOfTheSameGroup) {
  TempDir dir;
  auto s = open_ok(dir.uri());
  ASSERT_TRUE(write_sync(*s, {put("x", "0")}).status.ok());
  std::vector<std::future<store::WriteResult>> results;
  std::vector<std::promise<store::WriteResult>> promises(5);
  for (auto& p : promises) results.push_back(p.get_future());
  const auto commits_before = s->stats().commits;
  {
    CommitterGate gate(*s);  // the five writes below form one group
    int i = 0;
    for (auto batch : {std::vector<Write>{del("x")}, std::vector<Write>{put("x", "1")},
                       std::vector<Write>{put("x", "2")}, std::vector<Write>{put("y", "1")},
                       std::vector<Write>{del("y"), del("x")}}) {
      s->write(std::move(batch),
               [&p = promises[i++]](store::WriteResult r) { p.set_value(std::move(r)); });
    }
  }
  std::vector<std::vector<bool>> existed;
  for (auto& f : results) {
    auto r = wait_for(f);
    ASSERT_TRUE(r.status.ok()) << r.status.message;
    existed.push_back(r.existed);
  }
  EXPECT_EQ(existed,
            (std::vector<std::vector<bool>>{{true}, {false}, {true}, {false}, {true, true}}));
  EXPECT_EQ(s->stats().commits, commits_before + 2);  // the gate's, then the whole group
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
  TempDir dir;
  auto s = open_ok(dir.uri());
  auto r = write_sync(*s, {put("fine", "1"), put("", "x")});
  EXPECT_EQ(r.status.code, Code::io_error);
  EXPECT_TRUE(r.existed.empty());
  r = write_sync(*s, {put(std::string(251, 'k'), "x")});
  EXPECT_EQ(r.status.code, Code::io_error);
  EXPECT_EQ(value_of(*s, "fine"), "<absent>");  // the whole batch was refused
  EXPECT_TRUE(write_sync(*s, {put("fine", "2")}).status.ok());
  EXPECT_FALSE(s->stats().failed);
  EXPECT_EQ(s->stats().errors, 2u);
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
  constexpr int kWrites = 200, kReads = 200;
  std::atomic<int> ok_writes{0}, reads_done{0}, clears_done{0};
  for (int i = 0; i < kWrites; ++i) {
    s->write({put(name("k", i), "v")}, [&](store::WriteResult r) {
      if (r.status.ok()) ++ok_writes;
    });
  }
  for (int i = 0; i < kReads; ++i) {
    s->read(name("k", i), [&](store::ReadResult r) {
      if (r.status.ok() || r.status.code == Code::not_found) ++reads_done;
    });
  }
  s->clear([&](store::Status st) {
    if (st.ok()) ++clears_done;
  });
  s->close();
  EXPECT_EQ(ok_writes.load(), kWrites);  // no callback of these may run after close() returns
  EXPECT_EQ(reads_done.load(), kReads);
  EXPECT_EQ(clears_done.load(), 1);
  s->close();  // idempotent

  const auto caller = std::this_thread::get_id();
  std::promise<std::pair<Code, bool>> wp, rp, cp;
  s->write({put("late", "v")}, [&](store::WriteResult r) {
    wp.set_value({r.status.code, std::this_thread::get_id() == caller});
  });
  s->read("k1", [&](store::ReadResult r) {
    rp.set_value({r.status.code, std::this_thread::get_id() == caller});
  });
  s->clear([&](store::Status st) {
    cp.set_value({st.code, std::this_thread::get_id() == caller});
  });
  for (auto* p : {&wp, &rp, &cp}) {
    auto f = p->get_future();
    auto [code, was_inline] = wait_for(f);
    EXPECT_EQ(code, Code::closed);
    EXPECT_FALSE(was_inline);
  }
  EXPECT_EQ(s->stats().errors, 3u);
  s.reset();
  auto again = open_ok(dir.uri());                // closed means the lock is released
  EXPECT_EQ(value_of(*again, "k1"), "<absent>");  // the clear came after the writes
}

TEST(RocksStore, DestructorClosesAndCompletesQueuedWrites) {
  TempDir dir;
  std::atomic<int> ok{0};
  {
    auto s = open_ok(dir.uri());
    for (int i = 0; i < 100; ++i) {
      s->write({put(name("k", i), "v")}, [&](store::WriteResult r) {
        if (r.status.ok()) ++ok;
      });
    }
  }
  EXPECT_EQ(ok.load(), 100);
  auto s = open_ok(dir.uri());
  EXPECT_EQ(value_of(*s, "k99"), "v");
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
