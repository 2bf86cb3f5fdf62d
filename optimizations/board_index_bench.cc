// board_index_bench.cc — the order-statistic index behind boards/: boards::Board (Boost.MultiIndex,
// a hashed index on the member plus a ranked_unique red-black tree with subtree counts) against a
// compact Redis-style skiplist with spans plus an unordered_map, and std::set with linear rank
// counting as a "no order statistics" strawman (small N only). Same operations, same fixed-seed
// inputs, boards of N = 1k / 100k / 1M members "m<i>" with uniform scores in [0, 1e6):
//   Update         set a random member to a random score (it changes place); returns both ranks
//   Zadd           (Board only) RESP's ZADD: the member's score, then the update with ranks only
//                  within a cached top 100; ZaddWithRanks: as before, find() then every rank
//   Rank           the rank of a random member
//   Top100         ranks 1..100 (member + score) into a reused buffer
//   Around5        the 11 entries around a random member
//   BytesPerMember heap bytes per member of a 1M board (glibc mallinfo2, in-use + mmapped delta);
//                  for Board also bytes()/N, the estimate --board-maxmem counts
// Why: the issue asks to measure the candidates and say why one was chosen (boards/README.md).
// Memory is measured with the system allocator (glibc); cache_server links jemalloc, whose size
// classes differ, so read the bytes as a comparison between candidates, not the server's figure.
// Run pinned: taskset -c 0 build/release/optimizations/board_index_bench
//               --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "boards/board.hh"

namespace {

using boards::Ranked;

constexpr std::size_t kMaxN = 1'000'000;
constexpr std::size_t kInputs = 1 << 16;  // random (member, score) pairs cycled by the loops
constexpr std::size_t kTop = 100;
constexpr std::size_t kAround = 5;

const std::vector<std::string>& names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> n;
    n.reserve(kMaxN);
    for (std::size_t i = 0; i < kMaxN; ++i) n.push_back(std::string("m").append(std::to_string(i)));
    return n;
  }();
  return v;
}

// The scores members 0..N-1 get when a board is built, and the random operations on it; the
// same for every candidate.
struct Inputs {
  std::vector<double> initial;
  std::vector<std::uint32_t> who;
  std::vector<double> score;
};

const Inputs& inputs(std::size_t n) {
  static std::map<std::size_t, Inputs> all;
  Inputs& in = all[n];
  if (in.initial.empty()) {
    std::mt19937_64 rng(20260101 + n);
    std::uniform_real_distribution<double> score(0, 1e6);
    std::uniform_int_distribution<std::uint32_t> who(0, static_cast<std::uint32_t>(n - 1));
    for (std::size_t i = 0; i < n; ++i) in.initial.push_back(score(rng));
    for (std::size_t i = 0; i < kInputs; ++i) {
      in.who.push_back(who(rng));
      in.score.push_back(score(rng));
    }
  }
  return in;
}

// Hashes std::string and std::string_view alike (heterogeneous lookup, no copy of the member).
struct Hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct Eq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

// --- Candidate 1: the library. --------------------------------------------------------------

class BoardIndex {
 public:
  void add(std::string_view member, double score) { board_.update(member, boards::Op::set, score); }
  std::size_t update(std::string_view member, double score) {
    auto u = board_.update(member, boards::Op::set, score);
    return u->rank + u->old_rank;
  }
  // RESP's ZADD (server/resp/board_commands.cc): the member's score for NX/XX/GT/LT, then the
  // update, ranks worked out only within a cached top 100 (Board::update's within) ...
  std::size_t zadd(std::string_view member, double score) {
    const auto now = board_.stored(member);
    auto u = board_.update(member, boards::Op::set, score, kTop);
    return u->rank + u->old_rank + (now ? 1 : 0);
  }
  // ... and as it was before: find() (score and rank), then every rank of the update.
  std::size_t zadd_with_ranks(std::string_view member, double score) {
    const auto now = board_.find(member);
    auto u = board_.update(member, boards::Op::set, score);
    return u->rank + u->old_rank + (now ? now->rank : 0);
  }
  std::size_t rank(std::string_view member) const { return board_.find(member)->rank; }
  void top(std::size_t count, std::vector<Ranked>& out) const {
    out.clear();
    board_.for_ranks(1, count, [&out](const Ranked& r) { out.push_back(r); });
  }
  void around(std::string_view member, std::size_t n, std::vector<Ranked>& out) const {
    out.clear();
    auto [first, count] = *board_.around(member, n);
    board_.for_ranks(first, count, [&out](const Ranked& r) { out.push_back(r); });
  }
  const boards::Board& board() const { return board_; }

 private:
  boards::Board board_;
};

// --- Candidate 2: a skiplist with spans (the shape of Redis's zset) and a member hash. --------
// Each node is one allocation: the header below followed by its level array (forward pointer and
// span: how many ranks the forward pointer skips). Levels are drawn with p = 1/4, at most 32.
// Order: score descending, then arrival (seq) ascending. The member string lives once, as the
// hash map's key; the node points at it.

class SkipListIndex {
 public:
  SkipListIndex() : head_(make_node(kMaxLevel, nullptr, 0, 0)) {
    for (int i = 0; i < kMaxLevel; ++i) head_->level(i) = Level{nullptr, 0};
  }
  ~SkipListIndex() {
    for (Node* x = head_; x != nullptr;) {
      Node* next = x->level(0).forward;
      ::operator delete(x);
      x = next;
    }
  }
  SkipListIndex(const SkipListIndex&) = delete;
  SkipListIndex& operator=(const SkipListIndex&) = delete;

  void add(std::string_view member, double score) {
    auto [it, inserted] = members_.try_emplace(std::string(member), nullptr);
    if (!inserted) {
      update(member, score);
      return;
    }
    it->second = make_node(random_level(), &it->first, score, next_seq_++);
    insert(it->second);
  }

  // Moves the member to its new place: unlink, rescore, relink the same node.
  std::size_t update(std::string_view member, double score) {
    Node* x = members_.find(member)->second;
    if (score == x->score) {
      const std::size_t r = rank_of(x);
      return r + r;
    }
    const std::size_t old_rank = unlink(x);
    x->score = score;
    x->seq = next_seq_++;
    return insert(x) + old_rank;
  }

  std::size_t rank(std::string_view member) const { return rank_of(members_.find(member)->second); }

  void top(std::size_t count, std::vector<Ranked>& out) const {
    out.clear();
    std::size_t r = 1;
    for (Node* x = head_->level(0).forward; x != nullptr && count > 0; x = x->level(0).forward) {
      out.push_back(Ranked{.rank = r++, .member = *x->member, .score = x->score});
      --count;
    }
  }

  void around(std::string_view member, std::size_t n, std::vector<Ranked>& out) const {
    out.clear();
    Node* x = members_.find(member)->second;
    const std::size_t rank = rank_of(x);
    std::size_t first = rank;
    for (; first > 1 && rank - first < n; --first) x = x->backward;
    for (std::size_t r = first; x != nullptr && r <= rank + n; ++r, x = x->level(0).forward) {
      out.push_back(Ranked{.rank = r, .member = *x->member, .score = x->score});
    }
  }

 private:
  static constexpr int kMaxLevel = 32;
  struct Node;
  struct Level {
    Node* forward;
    std::size_t span;
  };
  struct Node {
    const std::string* member;
    double score;
    std::uint64_t seq;
    Node* backward;
    int height;
    Level& level(int i) { return reinterpret_cast<Level*>(this + 1)[i]; }
  };

  static Node* make_node(int height, const std::string* member, double score, std::uint64_t seq) {
    void* p = ::operator new(sizeof(Node) + static_cast<std::size_t>(height) * sizeof(Level));
    return new (p) Node{member, score, seq, nullptr, height};
  }

  int random_level() {
    int h = 1;
    while (h < kMaxLevel && (rng_() & 0xFFFF) < 0xFFFF / 4) ++h;
    return h;
  }

  // a ranks before (score, seq)
  static bool before(const Node* a, double score, std::uint64_t seq) {
    return a->score > score || (a->score == score && a->seq < seq);
  }

  // Links x (score and seq set) into place; returns its 1-based rank.
  std::size_t insert(Node* x) {
    Node* update[kMaxLevel];
    std::size_t rank[kMaxLevel];
    Node* p = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      rank[i] = i == level_ - 1 ? 0 : rank[i + 1];
      while (p->level(i).forward != nullptr && before(p->level(i).forward, x->score, x->seq)) {
        rank[i] += p->level(i).span;
        p = p->level(i).forward;
      }
      update[i] = p;
    }
    const int h = x->height;
    for (; level_ < h; ++level_) {
      rank[level_] = 0;
      update[level_] = head_;
      head_->level(level_).span = length_;
    }
    for (int i = 0; i < h; ++i) {
      Level& prev = update[i]->level(i);
      x->level(i).forward = prev.forward;
      prev.forward = x;
      x->level(i).span = prev.span - (rank[0] - rank[i]);
      prev.span = rank[0] - rank[i] + 1;
    }
    for (int i = h; i < level_; ++i) ++update[i]->level(i).span;
    x->backward = update[0] == head_ ? nullptr : update[0];
    if (Node* next = x->level(0).forward) next->backward = x;
    ++length_;
    return rank[0] + 1;
  }

  // Unlinks x (keeps the node); returns the rank it had.
  std::size_t unlink(Node* x) {
    Node* update[kMaxLevel];
    std::size_t rank = 0;
    Node* p = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (p->level(i).forward != nullptr && before(p->level(i).forward, x->score, x->seq)) {
        rank += p->level(i).span;
        p = p->level(i).forward;
      }
      update[i] = p;
    }
    for (int i = 0; i < level_; ++i) {
      Level& prev = update[i]->level(i);
      if (prev.forward == x) {
        prev.span += x->level(i).span - 1;
        prev.forward = x->level(i).forward;
      } else {
        --prev.span;
      }
    }
    if (Node* next = x->level(0).forward) next->backward = x->backward;
    while (level_ > 1 && head_->level(level_ - 1).forward == nullptr) --level_;
    --length_;
    return rank + 1;
  }

  std::size_t rank_of(Node* x) const {
    std::size_t rank = 0;
    Node* p = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (p->level(i).forward != nullptr &&
             (p->level(i).forward == x || before(p->level(i).forward, x->score, x->seq))) {
        rank += p->level(i).span;
        p = p->level(i).forward;
      }
      if (p == x) return rank;
    }
    return 0;  // not reached for a linked node
  }

  std::unordered_map<std::string, Node*, Hash, Eq> members_;
  Node* head_;
  int level_ = 1;
  std::size_t length_ = 0;
  std::uint64_t next_seq_ = 1;
  std::mt19937 rng_{7};
};

// --- Candidate 3 (strawman): a balanced tree without subtree counts; rank walks the tree. ----

class SetIndex {
 public:
  void add(std::string_view member, double score) {
    auto [it, inserted] = members_.try_emplace(std::string(member));
    it->second = order_.insert(Entry{score, next_seq_++, &it->first}).first;
  }
  std::size_t update(std::string_view member, double score) {
    auto& pos = members_.find(member)->second;
    const std::size_t old_rank = rank_of(pos);
    if (score == pos->score) return old_rank + old_rank;  // same score: keeps its place
    auto node = order_.extract(pos);
    node.value().score = score;
    node.value().seq = next_seq_++;
    pos = order_.insert(std::move(node)).position;
    return rank_of(pos) + old_rank;
  }
  std::size_t rank(std::string_view member) const { return rank_of(members_.find(member)->second); }
  void top(std::size_t count, std::vector<Ranked>& out) const {
    out.clear();
    std::size_t r = 1;
    for (auto it = order_.begin(); it != order_.end() && count > 0; ++it, --count) {
      out.push_back(Ranked{.rank = r++, .member = *it->member, .score = it->score});
    }
  }
  void around(std::string_view member, std::size_t n, std::vector<Ranked>& out) const {
    out.clear();
    auto it = members_.find(member)->second;
    const std::size_t rank = rank_of(it);
    std::size_t first = rank;
    for (; first > 1 && rank - first < n; --first) --it;
    for (std::size_t r = first; it != order_.end() && r <= rank + n; ++r, ++it) {
      out.push_back(Ranked{.rank = r, .member = *it->member, .score = it->score});
    }
  }

 private:
  struct Entry {
    double score;
    std::uint64_t seq;
    const std::string* member;
  };
  struct Order {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.score != b.score) return a.score > b.score;
      return a.seq < b.seq;
    }
  };
  using Set = std::set<Entry, Order>;
  std::size_t rank_of(Set::const_iterator it) const {
    return static_cast<std::size_t>(std::distance(order_.begin(), it)) + 1;
  }

  Set order_;
  std::unordered_map<std::string, Set::iterator, Hash, Eq> members_;
  std::uint64_t next_seq_ = 1;
};

// --- The benchmarks. ------------------------------------------------------------------------

template <class Index>
void build(Index& index, std::size_t n) {
  const auto& initial = inputs(n).initial;
  for (std::size_t i = 0; i < n; ++i) index.add(names()[i], initial[i]);
}

// One board per candidate and size, built on first use and kept for the run (outside the timed
// loops). Update benchmarks move members around, which keeps the scores uniform.
template <class Index>
Index& prebuilt(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<Index>> boards;
  auto& b = boards[n];
  if (!b) {
    b = std::make_unique<Index>();
    build(*b, n);
  }
  return *b;
}

template <class Index>
void run_update(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Index& index = prebuilt<Index>(n);
  const Inputs& in = inputs(n);
  std::size_t k = 0;
  for (auto _ : state) {
    const std::size_t i = k++ & (kInputs - 1);
    benchmark::DoNotOptimize(index.update(names()[in.who[i]], in.score[i]));
  }
  state.SetItemsProcessed(state.iterations());
}

// The board work of a RESP ZADD, now (zadd) and before (zadd_with_ranks): BoardIndex only.
template <bool WithRanks>
void run_zadd(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  BoardIndex& index = prebuilt<BoardIndex>(n);
  const Inputs& in = inputs(n);
  std::size_t k = 0;
  for (auto _ : state) {
    const std::size_t i = k++ & (kInputs - 1);
    const std::string_view member = names()[in.who[i]];
    benchmark::DoNotOptimize(WithRanks ? index.zadd_with_ranks(member, in.score[i])
                                       : index.zadd(member, in.score[i]));
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Index>
void run_rank(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Index& index = prebuilt<Index>(n);
  const Inputs& in = inputs(n);
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(index.rank(names()[in.who[k++ & (kInputs - 1)]]));
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Index>
void run_top100(benchmark::State& state) {
  Index& index = prebuilt<Index>(static_cast<std::size_t>(state.range(0)));
  std::vector<Ranked> out;
  out.reserve(kTop);
  for (auto _ : state) {
    index.top(kTop, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Index>
void run_around5(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Index& index = prebuilt<Index>(n);
  const Inputs& in = inputs(n);
  std::vector<Ranked> out;
  out.reserve(2 * kAround + 1);
  std::size_t k = 0;
  for (auto _ : state) {
    index.around(names()[in.who[k++ & (kInputs - 1)]], kAround, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

// Heap bytes in use: small blocks from the arenas plus blocks served by mmap (large bucket arrays).
std::size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Builds a fresh board inside the (single) iteration; the time is the build of N members.
template <class Index>
void run_bytes(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  inputs(n);  // the inputs and names exist before the first measurement
  names();
  for (auto _ : state) {
    const std::size_t before = heap_in_use();
    auto index = std::make_unique<Index>();
    build(*index, n);
    const std::size_t after = heap_in_use();
    state.counters["bytes_per_member"] = static_cast<double>(after - before) / n;
    if constexpr (std::is_same_v<Index, BoardIndex>) {
      state.counters["estimate_per_member"] = static_cast<double>(index->board().bytes()) / n;
    }
    state.PauseTiming();
    index.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void all_sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1'000)->Arg(100'000)->Arg(1'000'000);
}
void small_sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1'000)->Arg(100'000);
}

void BM_Board_Update(benchmark::State& s) {
  run_update<BoardIndex>(s);
}
void BM_Board_Zadd(benchmark::State& s) {
  run_zadd<false>(s);
}
void BM_Board_ZaddWithRanks(benchmark::State& s) {
  run_zadd<true>(s);
}
void BM_Board_Rank(benchmark::State& s) {
  run_rank<BoardIndex>(s);
}
void BM_Board_Top100(benchmark::State& s) {
  run_top100<BoardIndex>(s);
}
void BM_Board_Around5(benchmark::State& s) {
  run_around5<BoardIndex>(s);
}
void BM_Board_BytesPerMember(benchmark::State& s) {
  run_bytes<BoardIndex>(s);
}
void BM_SkipList_Update(benchmark::State& s) {
  run_update<SkipListIndex>(s);
}
void BM_SkipList_Rank(benchmark::State& s) {
  run_rank<SkipListIndex>(s);
}
void BM_SkipList_Top100(benchmark::State& s) {
  run_top100<SkipListIndex>(s);
}
void BM_SkipList_Around5(benchmark::State& s) {
  run_around5<SkipListIndex>(s);
}
void BM_SkipList_BytesPerMember(benchmark::State& s) {
  run_bytes<SkipListIndex>(s);
}
void BM_Set_Update(benchmark::State& s) {
  run_update<SetIndex>(s);
}
void BM_Set_Rank(benchmark::State& s) {
  run_rank<SetIndex>(s);
}
void BM_Set_Top100(benchmark::State& s) {
  run_top100<SetIndex>(s);
}
void BM_Set_Around5(benchmark::State& s) {
  run_around5<SetIndex>(s);
}

BENCHMARK(BM_Board_Update)->Apply(all_sizes);
BENCHMARK(BM_Board_Zadd)->Apply(all_sizes);
BENCHMARK(BM_Board_ZaddWithRanks)->Apply(all_sizes);
BENCHMARK(BM_Board_Rank)->Apply(all_sizes);
BENCHMARK(BM_Board_Top100)->Apply(all_sizes);
BENCHMARK(BM_Board_Around5)->Apply(all_sizes);
BENCHMARK(BM_Board_BytesPerMember)->Arg(1'000'000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SkipList_Update)->Apply(all_sizes);
BENCHMARK(BM_SkipList_Rank)->Apply(all_sizes);
BENCHMARK(BM_SkipList_Top100)->Apply(all_sizes);
BENCHMARK(BM_SkipList_Around5)->Apply(all_sizes);
BENCHMARK(BM_SkipList_BytesPerMember)->Arg(1'000'000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Set_Update)->Apply(small_sizes);
BENCHMARK(BM_Set_Rank)->Apply(small_sizes);
BENCHMARK(BM_Set_Top100)->Apply(small_sizes);
BENCHMARK(BM_Set_Around5)->Apply(small_sizes);

}  // namespace

BENCHMARK_MAIN();
