// registry_test.cc — Registry: boards appear with their first member and go with their last,
// the byte budget refuses new members (and new boards) beyond it and frees what removals give
// back, concurrent updates, reads and removals of one board stay consistent (run under TSan
// in CI), and the ChangeSink sees every change in the order it was applied, so that replaying
// its rows (as a restart does through restore) rebuilds the same boards.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "boards/registry.hh"
#include "tests/boards/board_test_support.hh"

namespace {

using boards::Board;
using boards::Op;
using boards::Registry;
using Status = boards::UpdateOutcome::Status;

using board_test::numbered;

TEST(Registry, BoardsComeWithTheFirstMemberAndGoWithTheLast) {
  Registry r;
  EXPECT_FALSE(r.read("b", [](const Board&) {}));
  const auto u = r.update("b", "alice", Op::set, 10);
  ASSERT_EQ(u.status, Status::ok);
  EXPECT_TRUE(u.updated.created);
  r.update("b", "bob", Op::set, 20);
  std::size_t size = 0;
  EXPECT_TRUE(r.read("b", [&](const Board& b) { size = b.size(); }));
  EXPECT_EQ(size, 2u);
  EXPECT_EQ(r.stats().boards, 1u);
  EXPECT_EQ(r.stats().members, 2u);
  EXPECT_EQ(r.remove_member("b", "bob"), 1u);
  EXPECT_FALSE(r.remove_member("b", "bob"));
  EXPECT_EQ(r.remove_member("b", "alice"), 1u);
  EXPECT_FALSE(r.read("b", [](const Board&) {}));
  const auto s = r.stats();
  EXPECT_EQ(s.boards, 0u);
  EXPECT_EQ(s.members, 0u);
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_EQ(s.removals, 2u);
}

TEST(Registry, RemoveBoardAndClear) {
  Registry r;
  r.update("a", "x", Op::set, 1);
  r.update("a", "y", Op::set, 1);
  r.update("b", "x", Op::set, 1);
  EXPECT_TRUE(r.remove_board("a"));
  EXPECT_FALSE(r.remove_board("a"));
  EXPECT_EQ(r.stats().members, 1u);
  r.clear();
  EXPECT_EQ(r.stats().boards, 0u);
  EXPECT_EQ(r.stats().bytes, 0u);
  EXPECT_EQ(r.update("a", "x", Op::incr, 2).updated.score, 2);  // usable after a clear
}

// A reset with a store (POST /reset): frozen from the clear's submission until the store
// answers; nothing changes meanwhile, and the boards go only if the clear committed.
struct CountingSink final : boards::ChangeSink {
  void member_set(std::string_view, std::string_view, const boards::Stored&) override { ++rows; }
  void member_removed(std::string_view, std::string_view) override { ++rows; }
  void board_removed(std::string_view) override { ++rows; }
  void refused_frozen() override { ++frozen; }
  int rows = 0, frozen = 0;
};

TEST(Registry, FrozenRefusesEveryChangeAndThawKeepsOrClears) {
  Registry r;
  r.update("a", "x", Op::set, 1);
  int thens = 0;
  r.freeze([&] { ++thens; });
  EXPECT_EQ(thens, 1);
  CountingSink sink;
  EXPECT_EQ(r.update("a", "x", Op::set, 5, &sink).status, Status::frozen);
  EXPECT_EQ(r.update("new", "m", Op::set, 5, &sink).status, Status::frozen);
  EXPECT_FALSE(r.remove_member("a", "x", &sink));
  EXPECT_FALSE(r.remove_board("a", &sink));
  EXPECT_EQ(sink.rows, 0);
  EXPECT_EQ(sink.frozen, 2);
  EXPECT_EQ(r.stats().boards, 1u);  // no board was created by the refused update
  r.thaw(false);                    // the clear failed: everything stays
  EXPECT_EQ(r.stats().members, 1u);
  EXPECT_EQ(r.update("a", "x", Op::set, 5, &sink).status, Status::ok);
  r.freeze([] {});
  r.thaw(true);  // the clear committed
  EXPECT_EQ(r.stats().boards, 0u);
  EXPECT_EQ(r.update("a", "x", Op::set, 5).status, Status::ok);
}

// A durable sink admits each change before it is applied (its row must fit in the store's
// bound): a refused change leaves the boards exactly as they were, and nothing is told.
TEST(Registry, ChangesTheSinkRefusesChangeNothing) {
  struct RefusingSink final : boards::ChangeSink {
    bool admit_change(std::string_view board, std::string_view member) override {
      asked.emplace_back(std::string(board) + "/" + std::string(member));
      return admit;
    }
    void member_set(std::string_view, std::string_view, const boards::Stored&) override { ++rows; }
    void member_removed(std::string_view, std::string_view) override { ++rows; }
    void board_removed(std::string_view) override { ++rows; }
    bool admit = false;
    int rows = 0;
    std::vector<std::string> asked;
  };
  Registry r;
  r.update("a", "x", Op::set, 1);
  RefusingSink sink;
  EXPECT_EQ(r.update("a", "x", Op::set, 5, &sink).status, Status::refused);
  EXPECT_EQ(r.update("new", "m", Op::set, 5, &sink).status, Status::refused);
  EXPECT_FALSE(r.remove_member("a", "x", &sink));
  EXPECT_FALSE(r.remove_member("a", "absent", &sink));  // not asked: nothing to remove
  EXPECT_FALSE(r.remove_board("a", &sink));
  EXPECT_EQ(sink.asked, (std::vector<std::string>{"a/x", "new/m", "a/x", "a/"}));
  EXPECT_EQ(sink.rows, 0);
  const boards::RegistryStats st = r.stats();
  EXPECT_EQ(st.boards, 1u);  // the refused update created no board
  EXPECT_EQ(st.members, 1u);
  bool read = false;
  r.read("a", [&](const boards::Board& b) { read = b.find("x")->score == 1; });
  EXPECT_TRUE(read);
  sink.admit = true;
  EXPECT_EQ(r.update("a", "x", Op::set, 5, &sink).status, Status::ok);
  EXPECT_TRUE(r.remove_board("a", &sink));
  EXPECT_EQ(sink.rows, 2);
}

// A change under way when freeze() starts finishes before then() runs (its row precedes the
// clear); one that starts after is refused.
TEST(Registry, FreezeWaitsForChangesUnderWay) {
  Registry r;
  r.update("a", "x", Op::set, 1);
  struct SlowSink final : boards::ChangeSink {
    std::atomic<bool> inside{false}, done{false};
    void member_set(std::string_view, std::string_view, const boards::Stored&) override {
      inside = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      done = true;
    }
    void member_removed(std::string_view, std::string_view) override {}
    void board_removed(std::string_view) override {}
  } slow;
  std::thread writer([&] { r.update("a", "x", Op::set, 2, &slow); });
  while (!slow.inside) std::this_thread::yield();
  bool done_before_then = false;
  r.freeze([&] { done_before_then = slow.done; });
  writer.join();
  EXPECT_TRUE(done_before_then);
  r.thaw(false);
}

TEST(Registry, BudgetRefusesNewMembersButNotUpdatesOfExistingOnes) {
  const std::size_t budget = 64 * 1024;
  Registry r(budget);
  int added = 0;
  for (;; ++added) {
    const auto u = r.update("b", numbered("member-", added), Op::set, added);
    if (u.status == Status::no_space) break;
    ASSERT_EQ(u.status, Status::ok);
    ASSERT_LT(added, 100000) << "the budget never refused";
  }
  EXPECT_GT(added, 100);
  EXPECT_LE(r.stats().bytes, budget);
  EXPECT_EQ(r.stats().members, static_cast<std::size_t>(added));
  EXPECT_EQ(r.update("b", "member-0", Op::set, -1).status, Status::ok);  // no new bytes
  EXPECT_EQ(r.update("other", "m", Op::set, 1).status, Status::no_space);
  EXPECT_FALSE(r.read("other", [](const Board&) {}));  // a refused first member: no board
  r.remove_member("b", "member-1");
  EXPECT_EQ(r.update("b", "member-new", Op::set, 1).status, Status::ok);  // room again
  EXPECT_GE(r.stats().refused, 2u);
}

TEST(Registry, NotFiniteIsRefusedAndLeavesNoBoard) {
  Registry r;
  EXPECT_EQ(r.update("b", "m", Op::set, 1e308).status, Status::ok);
  EXPECT_EQ(r.update("b", "m", Op::incr, 1e308).status, Status::not_finite);
  EXPECT_EQ(r.update("c", "m", Op::set, std::numeric_limits<double>::infinity()).status,
            Status::not_finite);
  EXPECT_FALSE(r.read("c", [](const Board&) {}));
  EXPECT_EQ(r.stats().boards, 1u);
}

// Writers update and remove members of one board (emptying it now and then, so it is unlinked
// and recreated under them) while readers walk its top and look members up: every read sees a
// sorted board, and the counters agree with the board at the end.
TEST(Registry, ConcurrentUpdatesReadsAndRemovalsOfOneBoard) {
  Registry r;
  constexpr int kWriters = 3, kReaders = 2, kOps = 20000, kMembers = 8;
  std::atomic<bool> unsorted{false};
  std::atomic<int> writers_left{kWriters};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kOps; ++i) {
        const std::string m = numbered("m", (i * 7 + w) % kMembers);
        if (i % 5 == 4) {
          r.remove_member("hot", m);
        } else {
          r.update("hot", m, i % 3 == 0 ? Op::incr : Op::set, static_cast<double>(i % 11));
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int k = 0; k < kReaders; ++k) {
    threads.emplace_back([&] {
      while (writers_left.load() > 0) {
        r.read("hot", [&](const Board& b) {
          double last = std::numeric_limits<double>::infinity();
          std::size_t expect = 1;
          b.for_ranks(1, 100, [&](const boards::Ranked& e) {
            if (e.score > last || e.rank != expect++) unsorted = true;
            last = e.score;
          });
          if (auto f = b.find("m0"); f && f->rank > b.size()) unsorted = true;
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(unsorted.load());
  std::size_t size = 0, bytes = 0;
  r.read("hot", [&](const Board& b) {
    size = b.size();
    bytes = b.bytes();
  });
  const auto s = r.stats();
  EXPECT_EQ(s.members, size);
  EXPECT_EQ(s.boards, size > 0 ? 1u : 0u);
  if (size == 0) {
    EXPECT_EQ(s.bytes, 0u);
  } else {
    EXPECT_GT(s.bytes, bytes);  // members plus the board's own cost
  }
}

// --- the ChangeSink and restore ------------------------------------------------------------------

// Applies what the sink is told to a model of the store's rows, as the server's store does.
struct RowLog final : boards::ChangeSink {
  std::mutex mu;  // the sink is called under one board's lock; boards may call it concurrently
  std::map<std::pair<std::string, std::string>, boards::Stored> rows;
  std::size_t calls = 0;
  void member_set(std::string_view b, std::string_view m, const boards::Stored& row) override {
    std::lock_guard lock(mu);
    ++calls;
    rows[{std::string(b), std::string(m)}] = row;
  }
  void member_removed(std::string_view b, std::string_view m) override {
    std::lock_guard lock(mu);
    ++calls;
    rows.erase({std::string(b), std::string(m)});
  }
  void board_removed(std::string_view b) override {
    std::lock_guard lock(mu);
    ++calls;
    std::erase_if(rows, [&](const auto& kv) { return kv.first.first == b; });
  }
};

// Every member of every board, in rank order: (board, rank, member, score).
std::vector<std::tuple<std::string, std::size_t, std::string, double>> everything(
    const Registry& r, const std::vector<std::string>& names) {
  std::vector<std::tuple<std::string, std::size_t, std::string, double>> out;
  for (const auto& name : names) {
    r.read(name, [&](const Board& b) {
      b.for_ranks(1, b.size(), [&](const boards::Ranked& e) {
        out.emplace_back(name, e.rank, std::string(e.member), e.score);
      });
    });
  }
  return out;
}

TEST(RegistrySink, TellsEveryChangeAndNothingForRefusedOnes) {
  Registry r(4096);
  RowLog log;
  ASSERT_EQ(r.update("b", "a", Op::set, 1, &log).status, Status::ok);
  ASSERT_EQ(r.update("b", "a", Op::best, 0, &log).status, Status::ok);  // kept: told again
  EXPECT_EQ(log.calls, 2u);
  EXPECT_EQ(log.rows.at({"b", "a"}).score, 1);
  EXPECT_EQ(r.update("b", "a", Op::incr, std::numeric_limits<double>::max(), &log).status,
            Status::ok);
  EXPECT_EQ(r.update("b", "a", Op::incr, std::numeric_limits<double>::max(), &log).status,
            Status::not_finite);
  EXPECT_EQ(log.calls, 3u);
  for (int i = 0; i < 100; ++i) r.update("b", numbered("m", i), Op::set, i, &log);  // some 507
  const std::size_t told = log.rows.size();
  EXPECT_EQ(told, r.stats().members);
  EXPECT_LT(told, 101u);
  EXPECT_FALSE(r.remove_member("b", "nobody", &log));
  EXPECT_EQ(r.remove_member("b", "a", &log), 1u);  // DBL_MAX: it ranks first
  EXPECT_FALSE(log.rows.contains({"b", "a"}));
  EXPECT_TRUE(r.remove_board("b", &log));
  EXPECT_TRUE(log.rows.empty());
  bool cleared = false;
  r.clear([&] { cleared = true; });
  EXPECT_TRUE(cleared);
}

TEST(RegistrySink, RestoringTheRowsRebuildsTheSameBoards) {
  Registry r;
  RowLog log;
  const std::vector<std::string> names{"x", "y", "z"};
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const std::string& b = names[rng() % 3];
    const std::string m = numbered("m", rng() % 50);
    const int what = static_cast<int>(rng() % 20);
    if (what < 14) {
      r.update(b, m, static_cast<Op>(rng() % 3), static_cast<double>(rng() % 5), &log);
    } else if (what < 19) {
      r.remove_member(b, m, &log);
    } else {
      r.remove_board(b, &log);
    }
  }
  Registry rebuilt;
  for (const auto& [key, row] : log.rows) ASSERT_TRUE(rebuilt.restore(key.first, key.second, row));
  EXPECT_EQ(everything(rebuilt, names), everything(r, names));
  EXPECT_EQ(rebuilt.stats().members, r.stats().members);
  EXPECT_EQ(rebuilt.stats().bytes, r.stats().bytes);
  // Later arrivals number above every restored one in both: the same tie order again.
  for (const auto& b : names) {
    r.update(b, "late", Op::set, 2, &log);
    rebuilt.update(b, "late", Op::set, 2);
  }
  EXPECT_EQ(everything(rebuilt, names), everything(r, names));
}

TEST(RegistrySink, RestoreRespectsTheBudget) {
  Registry r(2048);
  std::size_t restored = 0;
  for (int i = 0; i < 100; ++i) {
    if (r.restore("b", numbered("member-", i),
                  boards::Stored{1.0, static_cast<std::uint64_t>(i)})) {
      ++restored;
    }
  }
  EXPECT_GT(restored, 0u);
  EXPECT_LT(restored, 100u);
  EXPECT_EQ(r.stats().members, restored);
}

// Concurrent updates and removals of a few boards: the sink's rows, replayed, give exactly the
// final boards (it was told in the order memory applied each board's changes). TSan in CI.
TEST(RegistrySink, ConcurrentChangesReplayToTheSameBoards) {
  Registry r;
  RowLog log;
  const std::vector<std::string> names{"p", "q"};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) + 1);
      for (int i = 0; i < 3000; ++i) {
        const std::string& b = names[rng() % 2];
        const std::string m = numbered("m", rng() % 20);
        if (rng() % 10 < 8) {
          r.update(b, m, rng() % 2 ? Op::incr : Op::set, static_cast<double>(rng() % 3), &log);
        } else if (rng() % 50 == 0) {
          r.remove_board(b, &log);
        } else {
          r.remove_member(b, m, &log);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  Registry rebuilt;
  for (const auto& [key, row] : log.rows) ASSERT_TRUE(rebuilt.restore(key.first, key.second, row));
  EXPECT_EQ(everything(rebuilt, names), everything(r, names));
}

}  // namespace
