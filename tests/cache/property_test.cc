// Thousands of random operations against a simple reference model. With one shard, FIFO, LRU
// and no-eviction caches must agree with the model exactly (every result, every value, the
// accounting); CLOCK, S3-FIFO and SIEVE must return the latest value on a hit, miss deleted keys
// and account exactly for what it holds. space_used() <= maxmem is checked after every step,
// everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <list>
#include <map>
#include <random>
#include <string>
#include <tuple>

#include "cache/cache.hh"

namespace {

using cache::Evictor;
using cache::LockScheme;
using cache::SetResult;

// The obvious implementation: a list ordered newest-first.
class ReferenceCache {
 public:
  ReferenceCache(std::size_t maxmem, Evictor e) : maxmem_(maxmem), evictor_(e) {}

  SetResult set(const std::string& k, const std::string& v) {
    const std::size_t charge = k.size() + v.size();
    if (charge > maxmem_) return SetResult::too_big;
    auto it = find(k);
    const std::size_t old = it == order_.end() ? 0 : it->first.size() + it->second.size();
    if (evictor_ == Evictor::none && used_ - old + charge > maxmem_) return SetResult::no_space;
    const bool replaced = it != order_.end();
    if (replaced) erase(it);
    while (used_ + charge > maxmem_) erase(std::prev(order_.end()));
    order_.emplace_front(k, v);
    used_ += charge;
    return replaced ? SetResult::replaced : SetResult::created;
  }
  std::optional<std::string> get(const std::string& k) {
    auto it = find(k);
    if (it == order_.end()) return std::nullopt;
    if (evictor_ == Evictor::lru) order_.splice(order_.begin(), order_, it);
    return it->second;
  }
  bool del(const std::string& k) {
    auto it = find(k);
    if (it == order_.end()) return false;
    erase(it);
    return true;
  }
  void reset() {
    order_.clear();
    used_ = 0;
  }
  std::size_t used() const { return used_; }
  std::size_t size() const { return order_.size(); }

 private:
  using List = std::list<std::pair<std::string, std::string>>;
  List::iterator find(const std::string& k) {
    for (auto it = order_.begin(); it != order_.end(); ++it) {
      if (it->first == k) return it;
    }
    return order_.end();
  }
  void erase(List::iterator it) {
    used_ -= it->first.size() + it->second.size();
    order_.erase(it);
  }
  std::size_t maxmem_;
  Evictor evictor_;
  List order_;
  std::size_t used_ = 0;
};

struct Op {
  enum Kind { set, get, del, reset } kind;
  std::string key, value;
};

class OpGenerator {
 public:
  explicit OpGenerator(std::uint32_t seed) : rng_(seed) {}
  Op next() {
    const int roll = pick(0, 999);
    Op op{roll < 480   ? Op::set
          : roll < 850 ? Op::get
          : roll < 995 ? Op::del
                       : Op::reset,
          key(), ""};
    if (op.kind == Op::set) {
      const int len = pick(0, 99) < 3 ? pick(180, 260) : pick(0, 30);  // sometimes too big
      for (int i = 0; i < len; ++i) op.value.push_back(static_cast<char>(pick(0, 255)));
    }
    return op;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::string key() {
    const int id = pick(0, 39);
    std::string k = "k";
    k.append(static_cast<std::size_t>(id % 7), '.');  // keys of several lengths
    k += std::to_string(id);
    return k;
  }
  std::mt19937 rng_;
};

constexpr std::size_t kMaxmem = 200;
constexpr int kSteps = 6000;

using Config = std::tuple<Evictor, LockScheme>;
class ExactModel : public ::testing::TestWithParam<Config> {};

TEST_P(ExactModel, AgreesWithReferenceOnEveryStep) {
  const auto [evictor, lock] = GetParam();
  cache::Options o;
  o.maxmem = kMaxmem;
  o.evictor = evictor;
  o.lock = lock;
  cache::Cache c(o);
  ReferenceCache ref(kMaxmem, evictor);
  OpGenerator gen(1234 + static_cast<int>(evictor) * 10 + static_cast<int>(lock));

  for (int step = 0; step < kSteps; ++step) {
    const Op op = gen.next();
    switch (op.kind) {
      case Op::set:
        ASSERT_EQ(c.set(op.key, op.value), ref.set(op.key, op.value)) << step;
        break;
      case Op::get:
        ASSERT_EQ(c.get(op.key), ref.get(op.key)) << step;
        break;
      case Op::del:
        ASSERT_EQ(c.del(op.key), ref.del(op.key)) << step;
        break;
      case Op::reset:
        c.reset();
        ref.reset();
        break;
    }
    ASSERT_LE(c.space_used(), kMaxmem) << step;
    ASSERT_EQ(c.space_used(), ref.used()) << step;
    ASSERT_EQ(c.size(), ref.size()) << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Policies, ExactModel,
    ::testing::Combine(::testing::Values(Evictor::none, Evictor::fifo, Evictor::lru),
                       ::testing::Values(LockScheme::shared_reads, LockScheme::exclusive_all)),
    [](const auto& info) {
      return std::string(cache::to_string(std::get<0>(info.param))) + "_" +
             cache::to_string(std::get<1>(info.param));
    });

// CLOCK (and sharded caches of any policy) can't be predicted by a list, but what they return
// must never be stale, and their accounting must match what they hold.
class ApproximateModel : public ::testing::TestWithParam<std::tuple<Evictor, unsigned>> {};

TEST_P(ApproximateModel, NeverStaleAndAccountsExactly) {
  const auto [evictor, shards] = GetParam();
  cache::Options o;
  o.maxmem = kMaxmem * shards;
  o.evictor = evictor;
  o.shards = shards;
  cache::Cache c(o);
  std::map<std::string, std::string> latest;  // what a hit must return
  OpGenerator gen(99 + shards);

  for (int step = 0; step < kSteps; ++step) {
    const Op op = gen.next();
    switch (op.kind) {
      case Op::set: {
        const SetResult r = c.set(op.key, op.value);
        if (r == SetResult::created || r == SetResult::replaced) latest[op.key] = op.value;
        break;
      }
      case Op::get: {
        const auto got = c.get(op.key);
        if (got) {
          ASSERT_TRUE(latest.count(op.key)) << step;
          ASSERT_EQ(*got, latest[op.key]) << step;
        }
        break;
      }
      case Op::del:
        c.del(op.key);
        latest.erase(op.key);
        break;
      case Op::reset:
        c.reset();
        latest.clear();
        break;
    }
    ASSERT_LE(c.space_used(), o.maxmem) << step;
    if (step % 50 == 0) {  // probing every key touches recency, so only now and then
      std::size_t held = 0, count = 0;
      for (const auto& [k, v] : latest) {
        if (auto got = c.get(k)) {
          ASSERT_EQ(*got, v);
          held += k.size() + v.size();
          ++count;
        }
      }
      ASSERT_EQ(c.space_used(), held) << step;
      ASSERT_EQ(c.size(), count) << step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, ApproximateModel,
                         ::testing::Combine(::testing::Values(Evictor::clock, Evictor::s3fifo,
                                                              Evictor::sieve, Evictor::lru,
                                                              Evictor::fifo),
                                            ::testing::Values(1u, 4u)),
                         [](const auto& info) {
                           return std::string(cache::to_string(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "shards";
                         });

}  // namespace
