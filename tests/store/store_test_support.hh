// store_test_support.hh — what both store test programs use: the write builders, the
// synchronous wrappers around the Store's callbacks (each wait bounded), the committer gate, and
// the checks of the contract (store.hh) that every engine must pass the same way.
// Each test program defines store_test::kWait and store_test::remove_before_abort().
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "store/store.hh"

// Called by ASan/TSan/UBSan just before they end the process (weak: absent without them).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace store_test {

using store::Code;
using store::Write;

// Defined by each test program: the bound on any one completion, and what must be removed
// before a stuck store's abort (temporary directories, a throwaway cluster).
extern const std::chrono::seconds kWait;
void remove_before_abort();

// Has a sanitizer's end of the process (halt_on_error, ...) call remove_before_abort() first;
// nothing without a sanitizer.
inline void remove_before_sanitizer_death() {
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(remove_before_abort);
}

// "k" + std::to_string(i) without GCC 12's false -Wrestrict on operator+(const char*, string&&).
inline std::string name(std::string_view prefix, long long i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}
inline std::string name(std::string_view prefix, long long a, long long b) {
  std::string s = name(prefix, a);
  s += '-';
  s += std::to_string(b);
  return s;
}

// By field name: Write has grown board fields (member, score, seq) before want_existed.
inline Write put(std::string key, std::string value, bool want = true) {
  Write w;
  w.kind = Write::Kind::put;
  w.key = std::move(key);
  w.value = std::move(value);
  w.want_existed = want;
  return w;
}
inline Write del(std::string key, bool want = true) {
  Write w;
  w.kind = Write::Kind::del;
  w.key = std::move(key);
  w.want_existed = want;
  return w;
}
inline Write put_expiring(std::string key, std::string value, std::uint64_t expires_at_ms) {
  Write w = put(std::move(key), std::move(value));
  w.expires_at_ms = expires_at_ms;
  return w;
}
inline Write board_set(std::string board, std::string member, double score, std::uint64_t seq) {
  return Write::board_set_row(std::move(board), std::move(member), score, seq);
}
inline Write board_remove(std::string board, std::string member) {
  return Write::board_remove_row(std::move(board), std::move(member));
}
inline Write board_drop(std::string board) {
  return Write::board_drop_rows(std::move(board));
}

template <class T>
T wait_for(std::future<T>& f) {
  if (f.wait_for(kWait) != std::future_status::ready) {
    ADD_FAILURE() << "operation did not complete";
    remove_before_abort();
    std::abort();  // the store is stuck; do not hang the whole suite
  }
  return f.get();
}

// The promise is shared with the callback: the store thread may still be inside set_value()
// when the waiting test thread wakes up and moves on.
inline store::WriteResult write_sync(store::Store& s, std::vector<Write> batch) {
  auto p = std::make_shared<std::promise<store::WriteResult>>();
  auto f = p->get_future();
  s.write(std::move(batch), [p](store::WriteResult r) { p->set_value(std::move(r)); });
  return wait_for(f);
}

inline store::ReadResult read_sync(store::Store& s, std::string key) {
  auto p = std::make_shared<std::promise<store::ReadResult>>();
  auto f = p->get_future();
  s.read(std::move(key), [p](store::ReadResult r) { p->set_value(std::move(r)); });
  return wait_for(f);
}

inline store::Status clear_sync(store::Store& s) {
  auto p = std::make_shared<std::promise<store::Status>>();
  auto f = p->get_future();
  s.clear([p](store::Status st) { p->set_value(std::move(st)); });
  return wait_for(f);
}

inline std::string value_of(store::Store& s, const std::string& key) {
  auto r = read_sync(s, key);
  if (r.status.code == Code::not_found) return "<absent>";
  if (!r.status.ok()) return "<error " + r.status.message + ">";
  return r.value;
}

// Holds the committer of an Engine (RocksStore, PostgresStore) after a commit of its own (one
// write, "__gate"), so everything submitted meanwhile queues up and forms the next group.
// release() (or the destructor) lets it go.
template <class Engine>
class CommitterGate {
 public:
  explicit CommitterGate(store::Store& s) : store_(dynamic_cast<Engine&>(s)) {
    store_.hold_committer_after_next_commit();
    auto p = std::make_shared<std::promise<void>>();
    auto f = p->get_future();
    store_.write({put("__gate", "1", false)}, [p](const store::WriteResult&) { p->set_value(); });
    wait_for(f);
  }
  ~CommitterGate() { release(); }
  CommitterGate(const CommitterGate&) = delete;
  CommitterGate& operator=(const CommitterGate&) = delete;
  void release() { store_.release_committer(); }

 private:
  Engine& store_;
};

// --- the contract's checks, the same for every engine --------------------------------------------

// put/get/del with existed, the batch handed back, binary keys and values, a 250-byte key, an
// empty value, an empty batch.
inline void check_put_get_delete_and_existed(store::Store& s) {
  EXPECT_EQ(read_sync(s, "a").status.code, Code::not_found);

  auto r = write_sync(s, {put("a", "1")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed, std::vector<bool>{false});
  // The batch comes back with its result (store.hh, WriteResult::batch): the tier caches the
  // value from it instead of keeping a copy.
  ASSERT_EQ(r.batch.size(), 1u);
  EXPECT_EQ(r.batch[0].key, "a");
  EXPECT_EQ(r.batch[0].value, "1");
  EXPECT_EQ(value_of(s, "a"), "1");

  r = write_sync(s, {put("a", "2")});
  EXPECT_EQ(r.existed, std::vector<bool>{true});
  EXPECT_EQ(value_of(s, "a"), "2");

  r = write_sync(s, {del("a")});
  EXPECT_EQ(r.existed, std::vector<bool>{true});
  EXPECT_EQ(read_sync(s, "a").status.code, Code::not_found);

  r = write_sync(s, {del("a")});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.existed, std::vector<bool>{false});

  // Without want_existed the answer is false, whatever the state.
  ASSERT_TRUE(write_sync(s, {put("b", "x")}).status.ok());
  r = write_sync(s, {put("b", "y", false)});
  EXPECT_EQ(r.existed, std::vector<bool>{false});

  // Binary keys and values, a 250-byte key, an empty value.
  const std::string bin("\0k\xff", 3);
  const std::string big_key(250, 'k');
  ASSERT_TRUE(write_sync(s, {put(bin, std::string("\0\1", 2)), put(big_key, "")}).status.ok());
  EXPECT_EQ(value_of(s, bin), std::string("\0\1", 2));
  auto e = read_sync(s, big_key);
  ASSERT_TRUE(e.status.ok()) << e.status.message;
  EXPECT_EQ(e.value, "");

  // An empty batch completes ok without a commit.
  const auto commits = s.stats().commits;
  r = write_sync(s, {});
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.existed.empty());
  EXPECT_EQ(s.stats().commits, commits);
}

inline void check_existed_sees_earlier_ops_of_the_same_batch(store::Store& s) {
  ASSERT_TRUE(write_sync(s, {put("old", "v")}).status.ok());
  auto r = write_sync(s, {put("k", "1"), put("k", "2"), del("k"), del("k"), put("k", "3"),
                          del("old"), put("old", "w"), put("n", "1", false), del("n")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed,
            (std::vector<bool>{false, true, true, false, false, true, false, false, true}));
  EXPECT_EQ(value_of(s, "k"), "3");
  EXPECT_EQ(value_of(s, "old"), "w");
  EXPECT_EQ(value_of(s, "n"), "<absent>");
}

// Five batches held behind the gate form one group; each sees the ones before it.
template <class Engine>
void check_existed_sees_earlier_batches_of_the_same_group(store::Store& s) {
  ASSERT_TRUE(write_sync(s, {put("x", "0")}).status.ok());
  std::vector<std::promise<store::WriteResult>> promises(5);
  std::vector<std::future<store::WriteResult>> results;
  for (auto& p : promises) results.push_back(p.get_future());
  const auto commits_before = s.stats().commits;
  {
    CommitterGate<Engine> gate(s);  // the five writes below form one group
    int i = 0;
    for (auto batch : {std::vector<Write>{del("x")}, std::vector<Write>{put("x", "1")},
                       std::vector<Write>{put("x", "2")}, std::vector<Write>{put("y", "1")},
                       std::vector<Write>{del("y"), del("x")}}) {
      s.write(std::move(batch),
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
  EXPECT_EQ(s.stats().commits, commits_before + 2);  // the gate's, then the whole group
  EXPECT_EQ(value_of(s, "x"), "<absent>");
  EXPECT_EQ(value_of(s, "y"), "<absent>");
}

// An empty key and a 251-byte one refuse their whole batch with io_error (a message holding
// `message_has`), and the store goes on.
// A refused batch is answered Code::failed: "refused, nothing applied", as the durable tier
// reads it (server/store_tier.cc, refused_unapplied), not io_error, whose outcome may be unknown.
inline void check_refuses_bad_keys_without_failing(store::Store& s,
                                                   std::string_view message_has = "") {
  for (auto batch : {std::vector<Write>{put("fine", "1"), put("", "x")},
                     std::vector<Write>{put(std::string(store::kMaxKeyBytes + 1, 'k'), "x")}}) {
    auto r = write_sync(s, batch);
    EXPECT_EQ(r.status.code, Code::failed) << r.status.message;
    EXPECT_NE(r.status.message.find("store write refused"), std::string::npos) << r.status.message;
    EXPECT_TRUE(r.existed.empty());
    EXPECT_NE(r.status.message.find(message_has), std::string::npos) << r.status.message;
  }
  EXPECT_EQ(value_of(s, "fine"), "<absent>");  // the whole batch was refused
  EXPECT_TRUE(write_sync(s, {put("fine", "2")}).status.ok());
  EXPECT_FALSE(s.stats().failed);
  EXPECT_EQ(s.stats().errors, 2u);
}

// Writes, reads, a clear and a last write queued, then close(): every callback has run when it
// returns. After it, each operation answers closed, off the caller's thread. The caller then
// reopens and checks that "k1" is absent (the clear came after the writes) and "last" is "v".
inline void check_close_completes_queued_operations_then_refuses_new_ones(store::Store& s) {
  constexpr int kWrites = 200, kReads = 200;
  std::atomic<int> ok_writes{0}, reads_done{0}, clears_done{0};
  for (int i = 0; i < kWrites; ++i) {
    s.write({put(name("k", i), "v")}, [&](store::WriteResult r) {
      if (r.status.ok()) ++ok_writes;
    });
  }
  for (int i = 0; i < kReads; ++i) {
    s.read(name("k", i), [&](store::ReadResult r) {
      if (r.status.ok() || r.status.code == Code::not_found) ++reads_done;
    });
  }
  s.clear([&](store::Status st) {
    if (st.ok()) ++clears_done;
  });
  s.write({put("last", "v")}, [&](store::WriteResult r) {
    if (r.status.ok()) ++ok_writes;
  });
  s.close();
  EXPECT_EQ(ok_writes.load(), kWrites + 1);  // no callback may run after close() returns
  EXPECT_EQ(reads_done.load(), kReads);
  EXPECT_EQ(clears_done.load(), 1);
  s.close();  // idempotent

  const auto caller = std::this_thread::get_id();
  std::promise<std::pair<Code, bool>> wp, rp, cp;
  s.write({put("late", "v")}, [&](store::WriteResult r) {
    wp.set_value({r.status.code, std::this_thread::get_id() == caller});
  });
  s.read("k1", [&](store::ReadResult r) {
    rp.set_value({r.status.code, std::this_thread::get_id() == caller});
  });
  s.clear([&](store::Status st) { cp.set_value({st.code, std::this_thread::get_id() == caller}); });
  for (auto* p : {&wp, &rp, &cp}) {
    auto f = p->get_future();
    auto [code, was_inline] = wait_for(f);
    EXPECT_EQ(code, Code::closed);
    EXPECT_FALSE(was_inline);
  }
}

// What close() completed is durable: after the reopen, the clear's effect and the last write.
inline void expect_closed_store_state(store::Store& reopened) {
  EXPECT_EQ(value_of(reopened, "k1"), "<absent>");  // the clear came after the writes
  EXPECT_EQ(value_of(reopened, "last"), "v");
}

// The destructor closes: the 100 queued writes complete, and a reopened store has them.
// `open` returns a fresh store over the same data (nullptr on failure).
template <class Open>
void check_destructor_closes_and_completes_queued_writes(Open open) {
  std::atomic<int> ok{0};
  {
    std::unique_ptr<store::Store> s = open();
    ASSERT_TRUE(s);
    for (int i = 0; i < 100; ++i) {
      s->write({put(name("k", i), "v")}, [&](store::WriteResult r) {
        if (r.status.ok()) ++ok;
      });
    }
  }
  EXPECT_EQ(ok.load(), 100);
  std::unique_ptr<store::Store> s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(value_of(*s, "k99"), "v");
}

// A value with an expiry time reads as absent once past it, and counts as absent for existed.
inline void check_an_expired_value_reads_as_absent(store::Store& s) {
  const std::uint64_t later = store::unix_now_ms() + 60'000;
  auto r = write_sync(
      s, {put_expiring("live", "v", later), put_expiring("gone", "x", 1), put("plain", "p")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  auto live = read_sync(s, "live");
  ASSERT_TRUE(live.status.ok()) << live.status.message;
  EXPECT_EQ(live.value, "v");
  EXPECT_EQ(live.expires_at_ms, later);
  EXPECT_EQ(read_sync(s, "gone").status.code, Code::not_found);
  auto plain = read_sync(s, "plain");
  EXPECT_EQ(plain.value, "p");
  EXPECT_EQ(plain.expires_at_ms, 0u);
  // existed: the expired value is absent; the live one is there.
  r = write_sync(s, {put("gone", "y"), del("live")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed, (std::vector<bool>{false, true}));
  EXPECT_EQ(value_of(s, "gone"), "y");
  EXPECT_EQ(read_sync(s, "gone").expires_at_ms, 0u);  // a put without expiry clears it
}

}  // namespace store_test
