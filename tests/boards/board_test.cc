// board_test.cc — Board's contract case by case: order (score descending, ties by arrival),
// set/best/incr, unchanged scores keeping their place, removal, windows, restore, and the memory
// estimate against what the allocator really hands out.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "boards/board.hh"
#include "tests/boards/board_test_support.hh"

namespace {

using board_test::member_name;
using boards::Board;
using boards::Op;

// The members of ranks first.. first+count-1, as "member:score" strings.
std::vector<std::string> ranks(const Board& b, std::size_t first = 1, std::size_t count = 1000) {
  std::vector<std::string> out;
  std::size_t expect = first;
  b.for_ranks(first, count, [&](const boards::Ranked& r) {
    EXPECT_EQ(r.rank, expect++);
    out.push_back(std::string(r.member) + ":" + std::to_string(static_cast<long long>(r.score)));
  });
  return out;
}

TEST(Board, HighestFirstTiesByArrival) {
  Board b;
  EXPECT_TRUE(b.update("a", Op::set, 10)->created);
  b.update("b", Op::set, 20);
  b.update("c", Op::set, 10);
  b.update("d", Op::set, 30);
  EXPECT_EQ(ranks(b), (std::vector<std::string>{"d:30", "b:20", "a:10", "c:10"}));
  EXPECT_EQ(b.find("a")->rank, 3u);
  EXPECT_EQ(b.find("c")->rank, 4u);
  EXPECT_EQ(b.size(), 4u);
  EXPECT_EQ(b.top_score(), 30);
  EXPECT_EQ(b.bottom_score(), 10);
}

TEST(Board, ChangedScoreGoesToTheBackOfItsGroup) {
  Board b;
  b.update("a", Op::set, 10);
  b.update("b", Op::set, 20);
  b.update("c", Op::set, 10);
  const auto u = b.update("b", Op::set, 10);  // b reaches 10 after a and c
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->created);
  EXPECT_TRUE(u->changed);
  EXPECT_EQ(u->old_rank, 1u);
  EXPECT_EQ(u->rank, 3u);
  EXPECT_EQ(ranks(b), (std::vector<std::string>{"a:10", "c:10", "b:10"}));
}

TEST(Board, UnchangedScoreKeepsItsPlace) {
  Board b;
  b.update("a", Op::set, 10);
  b.update("c", Op::set, 10);
  // set to the same score, best with a lower or equal one, incr by 0 or by less than an ulp.
  for (auto [op, v] : std::vector<std::pair<Op, double>>{
           {Op::set, 10}, {Op::best, 5}, {Op::best, 10}, {Op::incr, 0}, {Op::incr, 1e-300}}) {
    const auto u = b.update("a", op, v);
    ASSERT_TRUE(u);
    EXPECT_FALSE(u->changed);
    EXPECT_EQ(u->rank, 1u);
    EXPECT_EQ(u->old_rank, 1u);
    EXPECT_EQ(u->score, 10);
  }
  EXPECT_EQ(ranks(b), (std::vector<std::string>{"a:10", "c:10"}));
}

TEST(Board, BestKeepsTheHigher) {
  Board b;
  EXPECT_EQ(b.update("a", Op::best, 7)->score, 7);  // a new member gets the score
  EXPECT_EQ(b.update("a", Op::best, 3)->score, 7);
  EXPECT_EQ(b.update("a", Op::best, 9)->score, 9);
  EXPECT_EQ(b.update("a", Op::best, -100)->score, 9);
}

TEST(Board, IncrAddsAndAbsentCountsAsZero) {
  Board b;
  const auto u = b.update("a", Op::incr, 5);
  EXPECT_TRUE(u->created);
  EXPECT_EQ(u->score, 5);
  EXPECT_EQ(b.update("a", Op::incr, -7.5)->score, -2.5);
}

TEST(Board, NonFiniteResultIsRefusedAndChangesNothing) {
  Board b;
  const double big = std::numeric_limits<double>::max();
  b.update("a", Op::set, big);
  EXPECT_FALSE(b.update("a", Op::incr, big));
  EXPECT_EQ(b.find("a")->score, big);
  EXPECT_FALSE(b.update("b", Op::set, std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(b.find("b"));
  EXPECT_EQ(b.size(), 1u);
}

TEST(Board, NegativeZeroIsStoredAsZero) {
  Board b;
  b.update("a", Op::set, 0);
  EXPECT_FALSE(b.update("a", Op::set, -0.0)->changed);
  b.update("z", Op::set, -0.0);
  EXPECT_FALSE(std::signbit(b.find("z")->score));
}

TEST(Board, RemoveReportsTheOldRank) {
  Board b;
  b.update("a", Op::set, 3);
  b.update("b", Op::set, 2);
  b.update("c", Op::set, 1);
  EXPECT_EQ(b.remove("b"), 2u);
  EXPECT_FALSE(b.remove("b"));
  EXPECT_EQ(ranks(b), (std::vector<std::string>{"a:3", "c:1"}));
  b.remove("a");
  b.remove("c");
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.bytes(), 0u);
}

TEST(Board, ForRanksClipsAndOffsets) {
  Board b;
  for (int i = 0; i < 10; ++i) b.update(member_name(i), Op::set, i);
  EXPECT_EQ(ranks(b, 1, 3), (std::vector<std::string>{"m9:9", "m8:8", "m7:7"}));
  EXPECT_EQ(ranks(b, 9, 5), (std::vector<std::string>{"m1:1", "m0:0"}));
  EXPECT_TRUE(ranks(b, 11, 5).empty());
  EXPECT_TRUE(ranks(b, 0, 5).empty());
  EXPECT_TRUE(ranks(b, 3, 0).empty());
}

// update(..., within) is update() with the ranks after `within` read as kBeyond: two boards
// given the same random changes, one with every rank, one with a random `within` per change
// (none, the top, most of the board, past its end), agree on everything else.
TEST(Board, RanksWithinAreExactAndTheOthersBeyond) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    Board all, some;
    std::size_t beyond = 0, exact = 0;
    for (int step = 0; step < 3000; ++step) {
      const std::string m = member_name(static_cast<long long>(rng() % 300));
      const int what = static_cast<int>(rng() % 10);
      const Op op = what < 6 ? Op::set : what < 8 ? Op::best : Op::incr;
      const double value = static_cast<double>(rng() % 50) - 10;
      const std::size_t choices[] = {0, 1, 10, 100, all.size() + 5};
      const std::size_t within = choices[rng() % 5];
      const auto a = all.update(m, op, value);
      const auto b = some.update(m, op, value, within);
      ASSERT_TRUE(a && b);
      ASSERT_EQ(a->created, b->created) << "seed " << seed << " step " << step;
      ASSERT_EQ(a->changed, b->changed);
      ASSERT_EQ(a->score, b->score);
      const auto expect = [&](std::size_t rank) { return rank <= within ? rank : boards::kBeyond; };
      ASSERT_EQ(b->rank, expect(a->rank))
          << "seed " << seed << " step " << step << " within " << within;
      ASSERT_EQ(b->old_rank, a->created ? 0 : expect(a->old_rank));
      (b->rank == boards::kBeyond ? beyond : exact) += 1;
    }
    ASSERT_EQ(ranks(all), ranks(some));
    EXPECT_GT(beyond, 100u) << "seed " << seed;
    EXPECT_GT(exact, 100u) << "seed " << seed;
  }
}

TEST(Board, AroundClipsAtBothEnds) {
  Board b;
  for (int i = 0; i < 10; ++i) b.update(member_name(i), Op::set, i);          // m9 rank 1
  EXPECT_EQ(b.around("m5", 2), (std::pair<std::size_t, std::size_t>{3, 5}));  // m5 is rank 5
  EXPECT_EQ(b.around("m9", 2), (std::pair<std::size_t, std::size_t>{1, 3}));
  EXPECT_EQ(b.around("m0", 3), (std::pair<std::size_t, std::size_t>{7, 4}));
  EXPECT_EQ(b.around("m4", 0), (std::pair<std::size_t, std::size_t>{6, 1}));
  EXPECT_EQ(b.around("m4", 500), (std::pair<std::size_t, std::size_t>{1, 10}));
  EXPECT_FALSE(b.around("nobody", 2));
}

TEST(Board, MembersAreArbitraryBytes) {
  Board b;
  const std::string nul("a\0b", 3), high("\xff\xfe", 2);
  b.update(nul, Op::set, 1);
  b.update(high, Op::set, 2);
  b.update("a", Op::set, 3);
  EXPECT_EQ(b.find(nul)->rank, 3u);
  EXPECT_EQ(b.find(high)->member, high);
  EXPECT_FALSE(b.find(std::string("a\0c", 3)));
}

TEST(Board, RestoreRebuildsTheSameOrderAndLaterUpdatesArriveAfter) {
  Board live;
  live.update("a", Op::set, 10);
  live.update("b", Op::set, 10);
  live.update("c", Op::set, 20);
  live.update("a", Op::incr, 10);  // a reaches 20 after c
  Board rebuilt;
  for (const char* m : {"c", "a", "b"}) {  // any order, as a store scan gives them
    const auto s = live.stored(m);
    rebuilt.restore(m, s->score, s->seq);
  }
  EXPECT_EQ(ranks(rebuilt), ranks(live));
  live.update("b", Op::set, 20);
  rebuilt.update("b", Op::set, 20);
  EXPECT_EQ(ranks(rebuilt), ranks(live));
  EXPECT_EQ(ranks(rebuilt), (std::vector<std::string>{"c:20", "a:20", "b:20"}));
}

// The rebuild's fast path (rows in rank order, each appended) and the slow one (any order)
// build the same board; replacing a member, restoring the same row twice and a row whose
// (score, seq) another member holds keep the board consistent.
TEST(Board, RestoreInRankOrderOrAnyOrderGivesTheSameBoard) {
  Board live;
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string m = "m";
    m += std::to_string(rng() % 300);  // (not "m" + ...: GCC 12's false -Wrestrict)
    live.update(m, static_cast<Op>(rng() % 3), static_cast<double>(rng() % 7));
  }
  std::vector<std::tuple<double, std::uint64_t, std::string>> rows;
  for (int i = 0; i < 300; ++i) {
    std::string m = "m";
    m += std::to_string(i);
    if (auto s = live.stored(m)) rows.emplace_back(s->score, s->seq, m);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) > std::get<0>(b)
                                            : std::get<1>(a) < std::get<1>(b);
  });
  Board in_order, shuffled;
  for (const auto& [score, seq, m] : rows) EXPECT_TRUE(in_order.restore(m, score, seq));
  std::shuffle(rows.begin(), rows.end(), rng);
  for (const auto& [score, seq, m] : rows) EXPECT_TRUE(shuffled.restore(m, score, seq));
  EXPECT_EQ(ranks(in_order), ranks(live));
  EXPECT_EQ(ranks(shuffled), ranks(live));
  EXPECT_EQ(in_order.bytes(), live.bytes());
  live.update("late", Op::set, 3);
  in_order.update("late", Op::set, 3);
  EXPECT_EQ(ranks(in_order), ranks(live));

  Board b;
  EXPECT_TRUE(b.restore("a", 5, 1));
  EXPECT_TRUE(b.restore("b", 5, 2));
  EXPECT_FALSE(b.restore("a", 5, 1));  // the same row again: nothing changes
  EXPECT_EQ(ranks(b), (std::vector<std::string>{"a:5", "b:5"}));
  EXPECT_FALSE(b.restore("a", 5, 3));  // replaced: now after b
  EXPECT_EQ(ranks(b), (std::vector<std::string>{"b:5", "a:5"}));
  EXPECT_EQ(b.size(), 2u);
  // "c" claims b's (score, seq): no consistent store has that; c is kept, after everyone at 5.
  EXPECT_TRUE(b.restore("c", 5, 2));
  EXPECT_EQ(ranks(b), (std::vector<std::string>{"b:5", "a:5", "c:5"}));
  EXPECT_EQ(b.stored("c")->seq, 4u);  // the next arrival number
  b.update("d", Op::set, 5);
  EXPECT_EQ(b.stored("d")->seq, 5u);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// bytes() is what --board-maxmem counts: it must track what the allocator really gives out.
TEST(Board, BytesEstimateTracksTheAllocator) {
  for (std::size_t len : {8u, 40u}) {
    const std::size_t n = 200000;
    // Heap in use plus mmapped blocks (a large hash bucket array is mmapped).
    auto in_use = [] { return mallinfo2().uordblks + mallinfo2().hblkhd; };
    const std::size_t before = in_use();
    auto b = std::make_unique<Board>();
    for (std::size_t i = 0; i < n; ++i) {
      std::string m = std::to_string(i);
      m.resize(len, 'x');
      b->update(m, Op::set, static_cast<double>(i % 1000));
    }
    const double real = static_cast<double>(in_use() - before);
    const double estimate = static_cast<double>(b->bytes());
    EXPECT_GT(estimate, 0.9 * real) << "member length " << len << ": " << real / n
                                    << " B/member allocated, " << estimate / n << " estimated";
    EXPECT_LT(estimate, 1.1 * real) << "member length " << len << ": " << real / n
                                    << " B/member allocated, " << estimate / n << " estimated";
  }
}
#endif

}  // namespace
