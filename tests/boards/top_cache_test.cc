// top_cache_test.cc — the rendered top-N cache (boards/top_cache.hh through Registry::read_top):
// a hit is served without rendering, updates below the cached ranks keep it, updates within them
// drop it (with every rank worked out or only the cached ones, as RESP's ZADD asks), and — the
// property that matters — a cached text always equals a fresh rendering, over random operations and
// under concurrent writers (TSan in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "boards/registry.hh"
#include "boards/score.hh"
#include "tests/boards/board_test_support.hh"

namespace {

using boards::Board;
using boards::Op;
using boards::Registry;

using board_test::numbered;

// What a server would render for ranks offset+1 .. offset+n.
std::string render(const Board& b, std::size_t offset, std::size_t n) {
  std::string out;
  b.for_ranks(offset + 1, n, [&](const boards::Ranked& r) {
    out += std::to_string(r.rank);
    out += ' ';
    out += r.member;
    out += ' ';
    boards::append_score(out, r.score);
    out += '\n';
  });
  return out;
}

// read_top with a counting renderer; returns the text and whether it rendered.
struct TopRead {
  bool found = false;
  bool rendered = false;
  std::string text;
  std::string fresh;  // rendered under the same lock, for comparison
};
TopRead read_top(const Registry& r, std::string_view board, std::size_t offset, std::size_t n) {
  TopRead out;
  out.found = r.read_top(
      board, offset, n,
      [&](const Board& b) {
        out.rendered = true;
        return render(b, offset, n);
      },
      [&](const Board& b, const std::string& text) {
        out.text = text;
        out.fresh = render(b, offset, n);
      });
  return out;
}

void fill(Registry& r, int members) {
  for (int i = 0; i < members; ++i) r.update("b", numbered("m", i), Op::set, 1000 - i);  // m0 top
}

TEST(TopCache, HitIsServedWithoutRendering) {
  Registry r;
  fill(r, 50);
  auto first = read_top(r, "b", 0, 10);
  EXPECT_TRUE(first.rendered);
  auto second = read_top(r, "b", 0, 10);
  EXPECT_FALSE(second.rendered);
  EXPECT_EQ(second.text, first.text);
  EXPECT_EQ(second.text, second.fresh);
  EXPECT_TRUE(read_top(r, "b", 10, 10).rendered);  // another page: its own entry
  EXPECT_FALSE(read_top(r, "b", 10, 10).rendered);
  const auto s = r.stats();
  EXPECT_EQ(s.top_cache_hits, 2u);
  EXPECT_EQ(s.top_cache_misses, 2u);
  EXPECT_GT(s.top_cache_bytes, 0u);
  EXPECT_FALSE(read_top(r, "nope", 0, 10).found);
}

// An update with want_ranks (the HTTP front's) or without (RESP's ZADD: ranks only within the
// cached top, Board::update's within): the cache must be kept and dropped alike.
void update(Registry& r, bool want_ranks, std::string_view member, Op op, double value) {
  r.update("b", member, op, value, nullptr, want_ranks);
}

TEST(TopCache, UpdatesBelowTheCachedRanksKeepIt) {
  for (const bool want_ranks : {true, false}) {
    Registry r;
    fill(r, 50);  // scores 1000 .. 951
    read_top(r, "b", 0, 10);
    update(r, want_ranks, "m40", Op::set, 500);  // rank 41 -> 50
    update(r, want_ranks, "new", Op::set, 1);    // created at rank 51
    update(r, want_ranks, "m3", Op::set, 997);   // the same score: nothing moves
    update(r, want_ranks, "m5", Op::best, 2);    // not higher: nothing moves
    r.remove_member("b", "m45");
    const auto t = read_top(r, "b", 0, 10);
    EXPECT_FALSE(t.rendered) << want_ranks;
    EXPECT_EQ(t.text, t.fresh) << want_ranks;
  }
}

TEST(TopCache, UpdatesWithinTheCachedRanksDropIt) {
  struct Case {
    const char* what;
    void (*op)(Registry&, bool want_ranks);
  };
  const Case cases[] = {
      {"a member moves into the top",
       [](Registry& r, bool w) { update(r, w, "m30", Op::set, 2000); }},
      {"a member of the top moves out",
       [](Registry& r, bool w) { update(r, w, "m2", Op::set, 0); }},
      {"a new member enters the top",
       [](Registry& r, bool w) { update(r, w, "x", Op::set, 995.5); }},
      {"a member at the last cached rank",
       [](Registry& r, bool w) { update(r, w, "m9", Op::incr, -1); }},
      {"a member of the top is removed", [](Registry& r, bool) { r.remove_member("b", "m9"); }},
      {"the board is deleted", [](Registry& r, bool) { r.remove_board("b"); }},
  };
  for (const bool want_ranks : {true, false}) {
    for (const Case& c : cases) {
      Registry r;
      fill(r, 50);
      read_top(r, "b", 0, 10);
      c.op(r, want_ranks);
      const auto t = read_top(r, "b", 0, 10);
      if (t.found) {
        EXPECT_TRUE(t.rendered) << c.what << " " << want_ranks;
        EXPECT_EQ(t.text, t.fresh) << c.what << " " << want_ranks;
      }
    }
  }
}

TEST(TopCache, OffByOneAtTheEdgeOfTheCachedRanks) {
  for (const bool want_ranks : {true, false}) {
    Registry r;
    fill(r, 50);
    read_top(r, "b", 0, 10);
    update(r, want_ranks, "m10", Op::set, 0);  // rank 11 moves down: ranks 1..10 are untouched
    EXPECT_FALSE(read_top(r, "b", 0, 10).rendered) << want_ranks;
    // created at rank 11 (after m9's 991): still outside
    update(r, want_ranks, "y", Op::set, 990.5);
    EXPECT_FALSE(read_top(r, "b", 0, 10).rendered) << want_ranks;
    update(r, want_ranks, "z", Op::set, 991.5);  // created at rank 10: inside
    EXPECT_TRUE(read_top(r, "b", 0, 10).rendered) << want_ranks;
    read_top(r, "b", 20, 5);  // ranks 21..25 cached too: now the cache covers up to 25
    update(r, want_ranks, "m30", Op::set, 951.5);  // rank 32 -> 50: below both entries
    EXPECT_FALSE(read_top(r, "b", 20, 5).rendered) << want_ranks;
    update(r, want_ranks, "m40", Op::set, 979.5);  // rank 41 -> 23: the second entry only
    EXPECT_TRUE(read_top(r, "b", 20, 5).rendered) << want_ranks;
    EXPECT_FALSE(read_top(r, "b", 0, 10).rendered) << want_ranks;
  }
}

TEST(TopCache, OffMeansAlwaysRendered) {
  Registry r(boards::kDefaultMaxBytes, false);
  fill(r, 20);
  read_top(r, "b", 0, 10);
  EXPECT_TRUE(read_top(r, "b", 0, 10).rendered);
  EXPECT_EQ(r.stats().top_cache_hits, 0u);
  EXPECT_EQ(r.stats().top_cache_bytes, 0u);
}

TEST(TopCache, BytesAreBoundedAndGivenBack) {
  const std::size_t budget = 256 * 1024;  // the cache may hold budget / 8 = 32 KiB
  Registry r(budget);
  for (int b = 0; b < 40; ++b) {
    for (int i = 0; i < 30; ++i) r.update(numbered("b", b), numbered("member-", i), Op::set, i);
  }
  for (int b = 0; b < 40; ++b) read_top(r, numbered("b", b), 0, 30);  // ~600 B each
  const auto s = r.stats();
  EXPECT_LE(s.top_cache_bytes, budget / Registry::kTopCacheShare);
  EXPECT_GT(s.top_cache_bytes, budget / Registry::kTopCacheShare / 2);
  r.clear();
  EXPECT_EQ(r.stats().top_cache_bytes, 0u);
}

// Random updates, removals and top reads of random pages: every text equals a fresh rendering.
TEST(TopCache, CachedTextAlwaysEqualsAFreshRendering) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    Registry r;
    int hits = 0;
    for (int step = 0; step < 2000; ++step) {
      const int what = static_cast<int>(rng() % 100);
      const std::string m = numbered("m", static_cast<long long>(rng() % 40));
      if (what < 40) {
        const Op op = what < 20 ? Op::set : what < 30 ? Op::best : Op::incr;
        r.update("b", m, op, static_cast<double>(rng() % 9) - 2, nullptr, rng() % 2 == 0);
      } else if (what < 48) {
        r.remove_member("b", m);
      } else {
        const std::size_t offset = rng() % 3 == 0 ? rng() % 30 : 0;
        const std::size_t n = 1 + rng() % 12;
        const auto t = read_top(r, "b", offset, n);
        if (!t.found) continue;
        ASSERT_EQ(t.text, t.fresh) << "seed " << seed << " step " << step;
        hits += t.rendered ? 0 : 1;
      }
    }
    EXPECT_GT(hits, 0) << "seed " << seed << ": the cache never served a read";
  }
}

TEST(TopCache, ConcurrentWritersAndCachedReaders) {
  Registry r;
  fill(r, 200);
  std::atomic<bool> mismatch{false};
  std::atomic<int> writers_left{2};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(w) + 11);
      for (int i = 0; i < 20000; ++i) {
        const std::string m = numbered("m", static_cast<long long>(rng() % 200));
        r.update("b", m, Op::set, static_cast<double>(rng() % 2000));
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&] {
      while (writers_left.load() > 0) {
        const auto t = read_top(r, "b", 0, 20);
        if (t.found && t.text != t.fresh) mismatch = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(mismatch.load());
}

}  // namespace
