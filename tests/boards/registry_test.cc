// registry_test.cc — Registry: boards appear with their first member and go with their last,
// the byte budget refuses new members (and new boards) beyond it and frees what removals give
// back, and concurrent updates, reads and removals of one board stay consistent (run under TSan
// in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "boards/registry.hh"

namespace {

using boards::Board;
using boards::Op;
using boards::Registry;
using Status = boards::UpdateOutcome::Status;

std::string numbered(const char* prefix, long long i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

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

}  // namespace
