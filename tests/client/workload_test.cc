// Workload generators: sampled key/value sizes against the model's quantiles, operation ratios,
// popularity, determinism, and the derived-value verification.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "client/distributions.hh"
#include "client/workload.hh"

namespace client {
namespace {

constexpr int kSamples = 200'000;

double empirical_quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

TEST(Distributions, GevQuantileInvertsCdf) {
  for (double u : {0.01, 0.1, 0.5, 0.9, 0.99})
    EXPECT_NEAR(kEtcKeySize.cdf(kEtcKeySize.quantile(u)), u, 1e-9);
  // Median of ETC key sizes: mu + sigma ((ln 2)^-xi - 1)/xi ~ 33.9 bytes.
  EXPECT_NEAR(kEtcKeySize.quantile(0.5), 33.88, 0.05);
}

TEST(Distributions, GenParetoQuantileInvertsCdf) {
  const auto& gp = EtcValueSize::kTail;
  for (double u : {0.01, 0.5, 0.9, 0.999}) EXPECT_NEAR(gp.cdf(gp.quantile(u)), u, 1e-9);
}

TEST(Workload, EtcKeySizesMatchTheGevModel) {
  WorkloadConfig cfg;
  cfg.keys = kSamples;
  KeySpace keys(cfg);
  std::vector<double> sizes;
  for (std::uint64_t i = 0; i < cfg.keys; ++i)
    sizes.push_back(static_cast<double>(keys.key_size(i, false)));
  for (double q : {0.05, 0.25, 0.5, 0.75, 0.95, 0.99}) {
    const double model = kEtcKeySize.quantile(q);
    // Sizes are rounded to whole bytes: allow one byte plus 2% sampling error.
    EXPECT_NEAR(empirical_quantile(sizes, q), model, 1.0 + 0.02 * model) << "q=" << q;
  }
}

// A small key space copies its stored keys from a table derived once; a large one derives every
// key. Both give the same bytes: 10,000 and 70,000 keys both take 3 base-62 digits, so keys below
// 10,000 are the same keys in both spaces (ETC-drawn sizes, and a fixed size). The golden key is
// key 0 of a one-key space at --key-size 16 (scripts/compare_wrk.py GETs it by name).
TEST(Workload, TabledKeysEqualDerivedKeys) {
  for (const std::size_t key_bytes : {std::size_t{0}, std::size_t{24}}) {
    WorkloadConfig small_cfg, large_cfg;
    small_cfg.keys = 10'000;
    large_cfg.keys = 70'000;
    small_cfg.key_bytes = large_cfg.key_bytes = key_bytes;
    const KeySpace small(small_cfg), large(large_cfg);
    for (std::uint64_t i = 0; i < small_cfg.keys; ++i) {
      ASSERT_EQ(small.key(i, false), large.key(i, false)) << i << " key_bytes " << key_bytes;
      ASSERT_EQ(small.key(i, true), large.key(i, true)) << i << " key_bytes " << key_bytes;
      ASSERT_EQ(small.key(i, false).size(), small.key_size(i, false)) << i;
    }
  }
  WorkloadConfig one;
  one.keys = 1;
  one.key_bytes = 16;
  EXPECT_EQ(KeySpace(one).key(0, false), "k00qedr5Zv46Y78Z");
}

TEST(Workload, EtcValueSizesMatchTheModel) {
  WorkloadConfig cfg;
  cfg.keys = kSamples;
  cfg.max_value_bytes = 1u << 30;  // no cap for this comparison
  KeySpace keys(cfg);
  std::vector<double> sizes;
  std::vector<std::uint64_t> small(15, 0);
  for (std::uint64_t i = 0; i < cfg.keys; ++i) {
    const auto s = keys.value_size(i);
    sizes.push_back(static_cast<double>(s));
    if (s < 15) ++small[s];
  }
  // The discrete part: each of the 15 sizes within 3 standard errors (plus a small floor).
  for (std::size_t s = 0; s < 15; ++s) {
    const double p = EtcValueSize::kSmall[s];
    const double se = std::sqrt(p * (1 - p) / kSamples);
    EXPECT_NEAR(static_cast<double>(small[s]) / kSamples, p, 4 * se + 2e-4) << "size " << s;
  }
  // The tail: empirical quantiles against the model's CDF.
  for (double q : {0.5, 0.6, 0.75, 0.9, 0.95, 0.99}) {
    const double x = empirical_quantile(sizes, q);
    EXPECT_NEAR(EtcValueSize::cdf(x), q, 0.01) << "q=" << q << " x=" << x;
  }
}

TEST(Workload, KeysAreUniqueValidAndDeterministic) {
  WorkloadConfig cfg;
  cfg.keys = 20'000;
  KeySpace keys(cfg);
  std::set<std::string> seen;
  for (std::uint64_t i = 0; i < cfg.keys; ++i) {
    for (bool cold : {false, true}) {
      const std::string k = keys.key(i, cold);
      ASSERT_GE(k.size(), 1u);
      ASSERT_LE(k.size(), 250u);
      ASSERT_TRUE(std::all_of(k.begin(), k.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c));
      })) << k;
      ASSERT_TRUE(seen.insert(k).second) << "duplicate key " << k;
      ASSERT_EQ(k, keys.key(i, cold));
    }
  }
}

TEST(Workload, ValuesVerifyAndCorruptionIsDetected) {
  WorkloadConfig cfg;
  cfg.keys = 2'000;
  KeySpace keys(cfg);
  std::string v;
  for (std::uint64_t i = 0; i < cfg.keys; ++i) {
    keys.make_value(i, static_cast<std::uint32_t>(i * 7919), v);
    ASSERT_EQ(v.size(), keys.value_size(i));
    ASSERT_TRUE(keys.verify(i, v));
    if (!v.empty()) {
      std::string bad = v;
      bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x01);
      ASSERT_FALSE(keys.verify(i, bad)) << i;
      ASSERT_FALSE(keys.verify(i, std::string_view(v).substr(0, v.size() - 1)));
    }
    // Another key's value of the same length is not accepted (versioned sizes carry a key hash).
    for (std::uint64_t j = i + 1; j < std::min<std::uint64_t>(cfg.keys, i + 50); ++j) {
      if (keys.value_size(j) != v.size() || v.size() < KeySpace::kVersionedMinBytes) continue;
      std::string other;
      keys.make_value(j, static_cast<std::uint32_t>(i * 7919), other);
      ASSERT_FALSE(keys.verify(i, other)) << "value of key " << j << " accepted for key " << i;
    }
  }
}

// Every byte counts: in the whole words and in the tail of a length that is not a multiple of 8.
TEST(Workload, AFlipAtAnyByteOfAnySizeIsDetected) {
  for (std::uint32_t size = 1; size <= 41; ++size) {
    WorkloadConfig cfg;
    cfg.value_bytes = size;
    KeySpace keys(cfg);
    std::string v;
    keys.make_value(3, 77, v);
    ASSERT_TRUE(keys.verify(3, v)) << size;
    for (std::size_t at = 0; at < v.size(); ++at) {
      std::string bad = v;
      bad[at] = static_cast<char>(bad[at] ^ 0x40);
      EXPECT_FALSE(keys.verify(3, bad)) << "size " << size << " byte " << at;
    }
  }
}

TEST(Workload, FixedValueSizeIsHonoured) {
  WorkloadConfig cfg;
  cfg.kind = WorkloadKind::kUniform;
  cfg.value_bytes = 4096;
  KeySpace keys(cfg);
  for (std::uint64_t i = 0; i < 100; ++i) EXPECT_EQ(keys.value_size(i), 4096u);
  cfg.value_bytes = 0;
  KeySpace defaults(cfg);
  EXPECT_EQ(defaults.value_size(3), WorkloadConfig::kDefaultFixedValueBytes);
}

struct MixCounts {
  double get = 0, set = 0, del = 0, cold = 0;
};

MixCounts sample_mix(const WorkloadConfig& cfg, int n) {
  OpGenerator gen(cfg, 11, 0);
  MixCounts c;
  for (int i = 0; i < n; ++i) {
    const Op op = gen.next();
    EXPECT_LT(op.key, cfg.keys);
    if (op.type == OpType::kGet) {
      c.get += 1;
      c.cold += op.cold ? 1 : 0;
    }
    if (op.type == OpType::kSet) c.set += 1;
    if (op.type == OpType::kDelete) c.del += 1;
  }
  return c;
}

TEST(Workload, EtcMixIsThirtyToOneWithTwentyPercentPlannedMisses) {
  WorkloadConfig cfg;
  const WorkloadSpec& d = workload_spec(WorkloadKind::kEtc);
  cfg.ratio = d.ratio;
  cfg.miss_ratio = d.miss_ratio;
  const MixCounts c = sample_mix(cfg, kSamples);
  EXPECT_NEAR(c.get / c.set, 30.0, 2.0);
  EXPECT_EQ(c.del, 0);
  EXPECT_NEAR(c.cold / c.get, 0.20, 0.01);
}

TEST(Workload, MixedRatioIsRespected) {
  WorkloadConfig cfg;
  cfg.kind = WorkloadKind::kMixed;
  cfg.ratio = {5, 3, 2};
  cfg.miss_ratio = 0;
  const MixCounts c = sample_mix(cfg, kSamples);
  EXPECT_NEAR(c.get / kSamples, 0.5, 0.01);
  EXPECT_NEAR(c.set / kSamples, 0.3, 0.01);
  EXPECT_NEAR(c.del / kSamples, 0.2, 0.01);
  EXPECT_EQ(c.cold, 0);
}

TEST(Workload, PutAllOnlyWritesAndGetPopularOnlyReadsHotKeys) {
  WorkloadConfig put;
  put.kind = WorkloadKind::kPutAll;
  put.ratio = workload_spec(put.kind).ratio;
  put.miss_ratio = 0;
  const MixCounts c = sample_mix(put, 10'000);
  EXPECT_EQ(c.set, 10'000);

  WorkloadConfig hot;
  hot.kind = WorkloadKind::kGetPopular;
  hot.ratio = workload_spec(hot.kind).ratio;
  hot.miss_ratio = 0;
  hot.hot_keys = 5;
  OpGenerator gen(hot, 1, 0);
  std::set<std::uint64_t> keys;
  for (int i = 0; i < 10'000; ++i) {
    const Op op = gen.next();
    EXPECT_EQ(op.type, OpType::kGet);
    keys.insert(op.key);
  }
  EXPECT_EQ(keys.size(), 5u);
  EXPECT_EQ(*keys.rbegin(), 4u);
}

TEST(Workload, ZipfPopularityMatchesTheLaw) {
  const std::uint64_t n = 1'000;
  const double theta = 0.99;
  Zipf zipf(n, theta);
  Rng rng(5);
  std::vector<double> counts(n + 1, 0);
  for (int i = 0; i < kSamples; ++i) {
    const auto k = zipf.sample(rng);
    ASSERT_GE(k, 1u);
    ASSERT_LE(k, n);
    counts[k] += 1;
  }
  double norm = 0;
  for (std::uint64_t k = 1; k <= n; ++k) norm += std::pow(static_cast<double>(k), -theta);
  for (std::uint64_t k : {1, 2, 10, 100}) {
    const double p = std::pow(static_cast<double>(k), -theta) / norm;
    const double se = std::sqrt(p * (1 - p) / kSamples);
    EXPECT_NEAR(counts[k] / kSamples, p, 5 * se) << "rank " << k;
  }
}

TEST(Workload, UniformThetaZeroCoversTheKeySpace) {
  Zipf zipf(10, 0.0);
  Rng rng(9);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1'000; ++i) seen.insert(zipf.sample(rng));
  EXPECT_EQ(seen.size(), 10u);
}

TEST(Workload, SameSeedSameSequenceDifferentSeedDifferent) {
  WorkloadConfig cfg;
  cfg.ratio = {10, 5, 1};
  auto run = [&](std::uint64_t seed, std::uint64_t thread) {
    OpGenerator gen(cfg, seed, thread);
    std::vector<std::tuple<int, std::uint64_t, bool>> ops;
    for (int i = 0; i < 1'000; ++i) {
      const Op op = gen.next();
      ops.emplace_back(static_cast<int>(op.type), op.key, op.cold);
    }
    return ops;
  };
  EXPECT_EQ(run(42, 0), run(42, 0));
  EXPECT_EQ(run(42, 3), run(42, 3));
  EXPECT_NE(run(42, 0), run(43, 0));
  EXPECT_NE(run(42, 0), run(42, 1));
}

// The board workloads' op streams: only their own op types, boards and members in range, every
// board and member reachable, and the --ratio mix of board-mixed.
struct BoardCounts {
  double update = 0, top = 0, score = 0;
  std::set<std::uint32_t> boards;
  std::set<std::uint64_t> members;
};

BoardCounts sample_board(WorkloadKind kind, OpRatio ratio, std::uint32_t boards,
                         std::uint64_t members, int n) {
  WorkloadConfig cfg;
  cfg.kind = kind;
  cfg.ratio = ratio;
  cfg.miss_ratio = 0;
  cfg.boards = boards;
  cfg.members = members;
  OpGenerator gen(cfg, 7, 1);
  BoardCounts c;
  for (int i = 0; i < n; ++i) {
    const Op op = gen.next();
    EXPECT_LT(op.board, boards);
    EXPECT_FALSE(op.cold);
    c.boards.insert(op.board);
    switch (op.type) {
      case OpType::kBoardSet:
        c.update += 1;
        EXPECT_LT(op.key, members);
        EXPECT_GE(op.score, 0.0);
        EXPECT_LT(op.score, 1e9);
        c.members.insert(op.key);
        break;
      case OpType::kBoardTop:
        c.top += 1;
        break;
      case OpType::kBoardScore:
        c.score += 1;
        EXPECT_LT(op.key, members);
        c.members.insert(op.key);
        break;
      default:
        ADD_FAILURE() << "non-board op " << static_cast<int>(op.type);
    }
  }
  return c;
}

TEST(BoardWorkloads, UpdateOnlyUpdatesEveryBoardAndMember) {
  const auto c = sample_board(WorkloadKind::kBoardUpdate,
                              workload_spec(WorkloadKind::kBoardUpdate).ratio, 5, 300, 50'000);
  EXPECT_EQ(c.update, 50'000);
  EXPECT_EQ(c.boards.size(), 5u);
  EXPECT_EQ(c.members.size(), 300u);  // 50000 uniform draws over 300 reach all of them
  EXPECT_EQ(workload_spec(WorkloadKind::kBoardUpdate).preload, Preload::kNone);
}

TEST(BoardWorkloads, TopAndScoreOnlyRead) {
  const auto top = sample_board(WorkloadKind::kBoardTop,
                                workload_spec(WorkloadKind::kBoardTop).ratio, 4, 10, 10'000);
  EXPECT_EQ(top.top, 10'000);
  EXPECT_EQ(top.boards.size(), 4u);
  EXPECT_EQ(workload_spec(WorkloadKind::kBoardTop).preload, Preload::kBoardMembers);
  const auto score = sample_board(WorkloadKind::kBoardScore,
                                  workload_spec(WorkloadKind::kBoardScore).ratio, 3, 1000, 20'000);
  EXPECT_EQ(score.score, 20'000);
  EXPECT_EQ(score.boards.size(), 3u);
  EXPECT_EQ(score.members.size(), 1000u);
  EXPECT_EQ(*score.members.rbegin(), 999u);
  EXPECT_EQ(workload_spec(WorkloadKind::kBoardScore).preload, Preload::kBoardMembers);
}

TEST(BoardWorkloads, MixedHonoursTheRatio) {
  // Default 90:10:0 = top reads : updates.
  const auto d = sample_board(WorkloadKind::kBoardMixed,
                              workload_spec(WorkloadKind::kBoardMixed).ratio, 2, 100, kSamples);
  EXPECT_NEAR(d.top / kSamples, 0.9, 0.005);
  EXPECT_NEAR(d.update / kSamples, 0.1, 0.005);
  EXPECT_EQ(d.score, 0);
  for (const OpRatio r : {OpRatio{1, 3, 0}, OpRatio{7, 3, 0}, OpRatio{0, 1, 0}, OpRatio{1, 0, 0}}) {
    const auto c = sample_board(WorkloadKind::kBoardMixed, r, 2, 100, kSamples);
    const double p_top = r.get / (r.get + r.set);
    EXPECT_NEAR(c.top / kSamples, p_top, 0.005) << r.get << ":" << r.set;
    EXPECT_NEAR(c.update / kSamples, 1 - p_top, 0.005) << r.get << ":" << r.set;
  }
}

TEST(BoardWorkloads, PreloadCoversEveryMemberOfEveryBoard) {
  WorkloadConfig cfg;
  cfg.kind = WorkloadKind::kBoardTop;
  cfg.boards = 3;
  cfg.members = 1234;
  EXPECT_EQ(KeySpace(cfg).preload_count(), 3u * 1234u);
  cfg.kind = WorkloadKind::kBoardUpdate;
  EXPECT_EQ(KeySpace(cfg).preload_count(), 0u);
}

TEST(BoardWorkloads, SameSeedSameStream) {
  WorkloadConfig cfg;
  cfg.kind = WorkloadKind::kBoardMixed;
  cfg.ratio = {1, 1, 0};
  cfg.boards = 8;
  cfg.members = 1000;
  auto run = [&](std::uint64_t seed) {
    OpGenerator gen(cfg, seed, 0);
    std::vector<std::tuple<int, std::uint32_t, std::uint64_t, double>> ops;
    for (int i = 0; i < 1'000; ++i) {
      const Op op = gen.next();
      ops.emplace_back(static_cast<int>(op.type), op.board, op.key, op.score);
    }
    return ops;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

}  // namespace
}  // namespace client
