// Which entry each evictor removes, and that evictions are counted. Every entry here charges
// 2 bytes (1-byte key + 1-byte value) and maxmem is 6, so the cache holds exactly 3.
#include <gtest/gtest.h>

#include <string>

#include "cache/cache.hh"

namespace {

using cache::Cache;
using cache::Evictor;
using cache::LockScheme;
using cache::SetResult;

// S3-FIFO's exact sequences below are written for libCacheSim's split (small 10%, ghost 90%).
Cache make(Evictor e, LockScheme lock, std::size_t maxmem = 6) {
  cache::Options o;
  o.maxmem = maxmem;
  o.evictor = e;
  o.lock = lock;
  o.s3fifo_small_percent = 10;
  o.s3fifo_ghost_percent = 90;
  return Cache(o);
}

// Fills a cache of maxmem 6: a, b, c, inserted in that order (a oldest).
void insert_abc(Cache& c) {
  for (const char* k : {"a", "b", "c"}) c.set(k, "1");
}

bool has(const Cache& c, const std::string& k) {
  return c.get(k).has_value();
}

class EvictionOrder : public ::testing::TestWithParam<LockScheme> {};

TEST_P(EvictionOrder, FifoEvictsOldestInsertionIgnoringHits) {
  Cache c = make(Evictor::fifo, GetParam());
  insert_abc(c);
  c.get("a");  // FIFO does not care
  c.set("d", "1");
  EXPECT_FALSE(has(c, "a"));
  EXPECT_TRUE(has(c, "b") && has(c, "c") && has(c, "d"));
  c.set("e", "1");
  EXPECT_FALSE(has(c, "b"));
  EXPECT_EQ(c.stats().evictions, 2u);
  EXPECT_EQ(c.space_used(), 6u);
}

TEST_P(EvictionOrder, FifoReplaceCountsAsNewInsertion) {
  Cache c = make(Evictor::fifo, GetParam());
  insert_abc(c);
  c.set("a", "2");  // a is now the newest
  c.set("d", "1");
  EXPECT_FALSE(has(c, "b"));
  EXPECT_EQ(c.get("a"), "2");
}

TEST_P(EvictionOrder, LruEvictsLeastRecentlyUsed) {
  Cache c = make(Evictor::lru, GetParam());
  insert_abc(c);
  c.get("a");  // order, oldest first: b c a
  c.set("d", "1");
  EXPECT_FALSE(has(c, "b"));
  c.get("c");  // order: a d c (the has() checks above touched a, c, d)
  c.set("e", "1");
  EXPECT_TRUE(has(c, "c"));
  EXPECT_EQ(c.stats().evictions, 2u);
}

TEST_P(EvictionOrder, LruExactSequence) {
  Cache c = make(Evictor::lru, GetParam());
  insert_abc(c);
  ASSERT_TRUE(c.get("b", [](std::string_view) {}));  // a c b
  ASSERT_TRUE(c.get("a", [](std::string_view) {}));  // c b a
  c.set("d", "1");                                   // evicts c -> b a d
  c.set("e", "1");                                   // evicts b -> a d e
  bool a = false, d = false, e = false, b = false, cc = false;
  c.get("a", [&](std::string_view) { a = true; });
  c.get("b", [&](std::string_view) { b = true; });
  c.get("c", [&](std::string_view) { cc = true; });
  c.get("d", [&](std::string_view) { d = true; });
  c.get("e", [&](std::string_view) { e = true; });
  EXPECT_TRUE(a && d && e);
  EXPECT_FALSE(b || cc);
}

TEST_P(EvictionOrder, LargeSetEvictsSeveral) {
  Cache c = make(Evictor::lru, GetParam());
  insert_abc(c);
  c.set("d", "12345");  // needs 6 bytes: everything else goes
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.get("d"), "12345");
  EXPECT_EQ(c.stats().evictions, 3u);
}

TEST_P(EvictionOrder, ClockEvictsUnreferencedBeforeReferenced) {
  Cache c = make(Evictor::clock, GetParam());
  insert_abc(c);
  c.get("a");
  c.get("b");
  c.set("d", "1");
  EXPECT_FALSE(has(c, "c"));
  EXPECT_TRUE(has(c, "a") && has(c, "b") && has(c, "d"));
}

TEST_P(EvictionOrder, ClockEvictsEvenWhenAllAreReferenced) {
  Cache c = make(Evictor::clock, GetParam());
  insert_abc(c);
  c.get("a");
  c.get("b");
  c.get("c");
  EXPECT_EQ(c.set("d", "1"), cache::SetResult::created);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_TRUE(has(c, "d"));
  EXPECT_EQ(c.stats().evictions, 1u);
}

// Hot keys touched between insertions survive a long one-pass scan under CLOCK, S3-FIFO, SIEVE and
// LRU;
// FIFO loses them. This is the behaviour the hit-ratio benchmark measures at scale.
TEST_P(EvictionOrder, HotKeysSurviveAScanUnderClockS3FifoAndLru) {
  for (Evictor e : {Evictor::clock, Evictor::s3fifo, Evictor::sieve, Evictor::lru, Evictor::fifo}) {
    Cache c = make(e, GetParam(), 20);  // 10 entries
    const std::string hot[] = {"h", "i", "j", "k", "l"};
    for (const auto& h : hot) c.set(h, "1");
    for (int i = 0; i < 100; ++i) {
      c.set(std::string(1, static_cast<char>('m' + i % 13)) + "", "1");
      c.set(std::string(1, static_cast<char>(0x80 + i)), "1");  // a fresh scan key
      for (const auto& h : hot) c.get(h);
    }
    int survivors = 0;
    for (const auto& h : hot) survivors += has(c, h);
    if (e == Evictor::fifo) {
      EXPECT_LT(survivors, 5) << cache::to_string(e);
    } else {
      EXPECT_EQ(survivors, 5) << cache::to_string(e);
    }
  }
}

// SIEVE, with maxmem 6 (3 entries). The hand starts at the oldest entry, spares (and clears)
// visited ones on its way to the newest, evicts the first unvisited one and stays there.
TEST_P(EvictionOrder, SieveEvictsTheFirstUnvisitedFromTheOldest) {
  Cache c = make(Evictor::sieve, GetParam());
  insert_abc(c);
  ASSERT_TRUE(c.get("a", [](std::string_view) {}));
  c.set("d", "1");  // hand: a (visited, cleared) -> b evicted; hand now at c
  bool b = c.get("b", [](std::string_view) {});
  EXPECT_FALSE(b);
  c.set("e", "1");  // hand at c: unvisited, evicted (a keeps its place but lost its bit)
  bool a = false, cc = false, d = false, e = false;
  c.get("c", [&](std::string_view) { cc = true; });
  EXPECT_FALSE(cc);
  c.set("f", "1");  // hand moves on to d (newer than c): visited by nothing -> evicted
  c.get("a", [&](std::string_view) { a = true; });
  c.get("d", [&](std::string_view) { d = true; });
  c.get("e", [&](std::string_view) { e = true; });
  EXPECT_TRUE(a);
  EXPECT_FALSE(d);
  EXPECT_TRUE(e);
  EXPECT_EQ(c.stats().evictions, 3u);
}

TEST_P(EvictionOrder, SieveWrapsAroundWhenEverythingWasVisited) {
  Cache c = make(Evictor::sieve, GetParam());
  insert_abc(c);
  for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(c.get(k, [](std::string_view) {}));
  c.set("d", "1");  // one lap clears every bit, then the oldest (a) goes
  EXPECT_FALSE(has(c, "a"));
  EXPECT_TRUE(has(c, "b") && has(c, "c") && has(c, "d"));
  EXPECT_EQ(c.size(), 3u);
}

// S3-FIFO, pinned to libCacheSim's semantics. maxmem 40 holds 20 two-byte entries: small gets
// 10% of the bytes (2 entries), main 18, the ghost remembers 18 entries' worth of hashes. Before
// the first eviction, a full small sends new keys to main, so after fill() small holds a, b (a
// oldest) and main holds c..t.
class S3Fifo : public ::testing::TestWithParam<LockScheme> {
 protected:
  Cache c = make(Evictor::s3fifo, GetParam(), 40);
  void fill() {
    for (char k = 'a'; k <= 't'; ++k) ASSERT_EQ(c.set(std::string(1, k), "1"), SetResult::created);
    ASSERT_EQ(c.size(), 20u);
    ASSERT_EQ(c.stats().evictions, 0u);
  }
  void hit(char k, int times = 1) {
    for (int i = 0; i < times; ++i) ASSERT_TRUE(c.get(std::string(1, k), [](std::string_view) {}));
  }
  void hit_range(char from, char to, int times = 1) {
    for (char k = from; k <= to; ++k) hit(k, times);
  }
  // Which of the keys a..z are present. Probing is a hit and bumps frequencies: only at the end.
  std::string present() {
    std::string out;
    for (char k = 'a'; k <= 'z'; ++k) {
      if (c.get(std::string(1, k), [](std::string_view) {})) out += k;
    }
    return out;
  }
};

TEST_P(S3Fifo, AKeySeenOnceLeavesFromSmall) {
  fill();
  hit_range('c', 't');  // main's frequencies do not protect small's entries
  c.set("u", "1");      // small's oldest, a, leaves; u joins small
  EXPECT_EQ(present(), "bcdefghijklmnopqrstu");
  EXPECT_EQ(c.stats().evictions, 1u);
}

TEST_P(S3Fifo, OneHitInSmallIsNotEnoughToMoveToMain) {
  fill();
  hit('a');  // frequency 1: below libCacheSim's move-to-main threshold of 2
  c.set("u", "1");
  EXPECT_EQ(present(), "bcdefghijklmnopqrstu");
}

TEST_P(S3Fifo, TwoHitsInSmallMoveTheKeyToMain) {
  fill();
  hit('a', 2);
  c.set("u",
        "1");  // a moves to main (frequency 0); small goes on to its next entry, b, which leaves
  hit('a');
  hit_range('d', 't');  // main's only cold entry is now c
  c.set("v", "1");      // main holds more than its share: main's hand evicts c
  EXPECT_EQ(present(), "adefghijklmnopqrstuv");
  EXPECT_EQ(c.stats().evictions, 2u);
}

TEST_P(S3Fifo, AGhostHitGoesStraightToMain) {
  fill();
  c.set("u", "1");  // a leaves small and its hash enters the ghost; small: b u
  c.set("a", "2");  // ghost hit: small's b leaves, a enters main; small: u
  EXPECT_TRUE(c.del("t"));
  // t's bytes stay in main's log, dead, until main's head passes them (cache/s3fifo.hh): they
  // still count, so x does not fit, and main (c..s, dead t, a: 38 bytes, over its 36) evicts
  // its oldest cold entry, c. Small: u x.
  c.set("x", "1");
  c.set("y", "1");  // small's u leaves
  c.set("z", "1");  // small's x leaves; a, in main, was never in small's way
  EXPECT_EQ(present(), "adefghijklmnopqrsyz");
  EXPECT_EQ(c.get("a"), "2");
}

// The ghost remembers 36 bytes' worth of keys that left small (18 entries here), to within one
// unit of its 4-bit time (8 bytes here, 4 entries: cache/s3fifo.hh, GhostFifo; with 32-bit words
// it was exact to the entry, and this test checked 18 and 19). Each fresh key after fill()
// pushes one more key out of small into the ghost. Whether "a" came back into main shows in the
// next set: main over its share evicts from main, so small's oldest survives.
TEST_P(S3Fifo, TheGhostRemembersItsWindowToWithinAUnit) {
  for (int fresh : {14, 18, 22}) {
    Cache g = make(Evictor::s3fifo, GetParam(), 40);
    for (char k = 'a'; k <= 't'; ++k) g.set(std::string(1, k), "1");
    std::string keys;  // fresh keys A, B, ...: the first pushes a into the ghost
    for (int i = 0; i < fresh; ++i) keys += static_cast<char>('A' + i);
    for (char k : keys) g.set(std::string(1, k), "1");
    const std::string newest(1, keys.back());  // small holds the last two fresh keys
    g.set("a", "2");  // 14, 18: remembered (a window less a unit, a window); 22: forgotten
    g.set("Z", "1");
    const bool newest_survived = g.get(newest).has_value();
    if (fresh <= 18) {
      EXPECT_TRUE(newest_survived) << fresh << ": a should have gone to main (ghost hit)";
    } else {
      EXPECT_FALSE(newest_survived) << fresh << ": a should have been forgotten, gone to small";
    }
  }
}

TEST_P(S3Fifo, MainSkipsHitEntriesAndEvictsTheFirstColdOne) {
  fill();
  hit_range('c', 't', 3);  // every main entry at the 2-bit maximum
  hit('a', 2);
  c.set("u", "1");  // a moves to main with frequency 0; b leaves small
  c.set("v", "1");  // main is over its share: the hand lowers the hot entries and evicts a
  EXPECT_EQ(present(), "cdefghijklmnopqrstuv");
}

TEST_P(S3Fifo, ReplacingAValueInSmallMovesItToMainWithItsFrequency) {
  fill();                                           // small: a b; main: c..t
  hit_range('c', 's');                              // every entry of main is hot but t
  hit('a');                                         // frequency 1
  EXPECT_EQ(c.set("a", "2"), SetResult::replaced);  // to main with frequency 1; small: b
  // Main now holds 38 bytes, more than its share (36): main's hand evicts its one cold entry,
  // t. Had a stayed in small, small's oldest, b, would have left instead.
  c.set("u", "1");
  EXPECT_EQ(present(), "abcdefghijklmnopqrsu");
  EXPECT_EQ(c.get("a"), "2");
  EXPECT_EQ(c.stats().evictions, 1u);
}

TEST_P(S3Fifo, ReplacingAValueInMainKeepsItsFrequency) {
  fill();
  hit_range('c', 's');
  // Replaced, c..s stay hot (frequency 1). Were frequencies reset, t would be one of 20 cold
  // entries of main and the hand would most likely evict another.
  for (char k = 'c'; k <= 's'; ++k) EXPECT_EQ(c.set(std::string(1, k), "2"), SetResult::replaced);
  hit('a', 2);
  c.set("u", "1");  // small's a (frequency 2) moves to main at frequency 0, b leaves; small: u
  hit('a');         // a is hot again
  c.set("v", "1");  // main (a, c..t: 38 bytes) is over its share: the hand evicts cold t
  EXPECT_EQ(present(), "acdefghijklmnopqrsuv");
  EXPECT_EQ(c.get("c"), "2");
}

TEST_P(S3Fifo, DeletedSmallEntriesAreSkipped) {
  fill();
  EXPECT_TRUE(c.del("a"));  // its queue record in small goes stale
  c.set("u", "1");          // fits: small b u
  EXPECT_EQ(c.stats().evictions, 0u);
  c.set("v", "1");  // the stale record is skipped; b leaves
  EXPECT_EQ(present(), "cdefghijklmnopqrstuv");
  EXPECT_EQ(c.stats().evictions, 1u);
  EXPECT_EQ(c.space_used(), 40u);
}

TEST_P(S3Fifo, ManyReplacementsWithoutEvictionStayConsistent) {
  Cache big = make(Evictor::s3fifo, GetParam(), 4000);
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 100; ++i) big.set("key" + std::to_string(i), std::to_string(round));
    if (round % 3 == 0) big.del("key" + std::to_string(round % 100));
  }
  EXPECT_EQ(big.stats().evictions, 0u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(big.get("key" + std::to_string(i)), "199");
}

INSTANTIATE_TEST_SUITE_P(Locks, S3Fifo,
                         ::testing::Values(LockScheme::shared_reads, LockScheme::exclusive_all),
                         [](const auto& info) {
                           return std::string(cache::to_string(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(Locks, EvictionOrder,
                         ::testing::Values(LockScheme::shared_reads, LockScheme::exclusive_all),
                         [](const auto& info) {
                           return std::string(cache::to_string(info.param));
                         });

}  // namespace
