// board.hh — one ranked board: members with a score, highest score first, equal scores in
// arrival order (the member that reached the score earlier ranks higher). Update, rank and
// lookup by rank are O(log n); top-N and around-me windows are O(log n + N).
//
// Built on Boost.MultiIndex: one container with a hashed index on the member (lookup) and a
// ranked index on (score descending, arrival ascending) — a red-black tree whose nodes count
// their subtree, so rank() and nth() are logarithmic. Why this and not a hand-written skiplist
// or counted B-tree: boards/README.md.
//
// Order contract (docs/api.md, "Boards"):
//   - an update that changes a member's score gives it a new arrival number, so it goes to the
//     back of its new score's group;
//   - an update that leaves the score unchanged (set to the same score, best with a score that
//     is not higher, incr by 0 or by an amount too small to change the double) keeps its place;
//   - ranks are 1-based and unique.
// Scores are finite doubles; -0 is stored as 0 (they compare equal, and would print apart).
//
// Not thread-safe: the caller holds one shared_mutex per board (registry.hh), exclusive for the
// non-const members, shared for the const ones. Returned string_views point into the board and
// stay valid until the next non-const call.
#pragma once

#include <boost/multi_index/hashed_index.hpp>
#include <boost/multi_index/identity.hpp>
#include <boost/multi_index/member.hpp>
#include <boost/multi_index/ranked_index.hpp>
#include <boost/multi_index_container.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "boards/member_name.hh"

namespace boards {

// How an update combines the request's score with the member's current one.
enum class Op {
  set,   // the new score
  best,  // the higher of the current and the new score (ZADD GT); a new member gets it
  incr,  // the current score plus the given amount; an absent member counts as 0
};

// A rank that update(..., within) did not work out: the place ranks after `within`.
inline constexpr std::size_t kBeyond = SIZE_MAX;
// update()'s default: every rank worked out.
inline constexpr std::size_t kAllRanks = SIZE_MAX;

// The outcome of an update. Ranks are 1-based; old_rank is 0 for a new member, and a place that
// ranks after update()'s `within` reads kBeyond. The entries of ranks 1..N changed iff changed
// and (old_rank or rank is within N); the member count, which a rendered top-N also shows,
// changes with every creation and removal.
struct Updated {
  bool created = false;  // the member was absent
  bool changed = false;  // score or place changed (false: same score, place kept)
  double score = 0;      // after the update
  std::size_t rank = 0;  // after the update
  std::size_t old_rank = 0;
};

// A member, its score and its 1-based rank.
struct Ranked {
  std::size_t rank = 0;
  std::string_view member;
  double score = 0;
};

// A member's score and its arrival number (what the store keeps, to rebuild the same order).
struct Stored {
  double score = 0;
  std::uint64_t seq = 0;
};

class Board {
 public:
  // Applies op to member with the request's score (finite; the parser refuses the rest).
  // Returns nullopt, changing nothing, when the result would not be finite (incr overflow).
  // within: the ranks the caller needs exactly, 1..within (kAllRanks: all). A rank is a walk up
  // the ranked tree, a cache miss per level on a large board, and ZADD over RESP answers a
  // count: it passes the ranks its board's top cache holds, so that only an update touching
  // them pays for ranks, and the others read kBeyond (ranks after within, not worked out).
  std::optional<Updated> update(std::string_view member, Op op, double value,
                                std::size_t within = kAllRanks);

  // Inserts or replaces a member with a given score and arrival number, as read back from the
  // store on restart; later updates get arrival numbers above every restored one. true if the
  // member was new. Fastest when rows come in rank order (each then goes in at the end). A row
  // whose (score, seq) another member holds, which no consistent store has, keeps its member as
  // the latest arrival at its score.
  bool restore(std::string_view member, double score, std::uint64_t seq);
  // Room for n members in the member hash, so that a rebuild that knows its count does not
  // rehash as it grows.
  void reserve(std::size_t n) { members_.get<ByMember>().reserve(n); }

  // The member's rank before the removal, or nullopt if it was absent.
  std::optional<std::size_t> remove(std::string_view member);

  // The member's score and rank, or nullopt.
  std::optional<Ranked> find(std::string_view member) const;

  // The member's score and arrival number, or nullopt.
  std::optional<Stored> stored(std::string_view member) const;

  // Calls f(Ranked) for ranks first .. first + count - 1 (first is 1-based), clipped to the
  // board; nothing when first > size().
  // A template, not a std::function: top-100 is the hot read, and a call per entry through
  // std::function cost ~8 ns of ~9 (optimizations/board_index_bench.cc).
  template <class F>
  void for_ranks(std::size_t first, std::size_t count, F&& f) const {
    if (first == 0 || first > size()) return;
    const auto& by_rank = members_.template get<ByRank>();
    std::size_t rank = first;
    for (auto it = by_rank.nth(first - 1); it != by_rank.end() && count > 0; ++it, --count) {
      f(Ranked{.rank = rank++, .member = it->member, .score = it->score});
    }
  }

  // The members ranked rank(member) - n .. rank(member) + n, clipped to the board's ends, as
  // (first rank, count); nullopt when the member is absent.
  std::optional<std::pair<std::size_t, std::size_t>> around(std::string_view member,
                                                            std::size_t n) const;

  std::size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  // Highest and lowest scores; the board must not be empty.
  double top_score() const;
  double bottom_score() const;

  // Memory this board holds for its members (nodes, member bytes beyond the string's inline
  // buffer, hash buckets): what --board-maxmem counts. An estimate from the container's layout,
  // checked against the allocator in tests/boards/board_test.cc.
  std::size_t bytes() const;

  // What one more member of this length would add to bytes() (bucket growth aside).
  static std::size_t member_cost(std::size_t member_size);

 private:
  struct Node {
    MemberName member;  // 16 bytes (member_name.hh): the node is 80 bytes, not 96
    double score;
    std::uint64_t seq;  // arrival: a higher number arrived later
  };
  // Highest score first; equal scores by arrival.
  struct RankOrder {
    bool operator()(const Node& a, const Node& b) const {
      if (a.score != b.score) return a.score > b.score;
      return a.seq < b.seq;
    }
  };
  // Hashes a MemberName and a std::string_view alike, so lookups need no copy of the member.
  struct MemberHash {
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct MemberEq {
    bool operator()(std::string_view a, std::string_view b) const { return a == b; }
  };
  struct ByMember {};
  struct ByRank {};
  using Members = boost::multi_index_container<
      Node,
      boost::multi_index::indexed_by<
          boost::multi_index::hashed_unique<
              boost::multi_index::tag<ByMember>,
              boost::multi_index::member<Node, MemberName, &Node::member>, MemberHash, MemberEq>,
          boost::multi_index::ranked_unique<boost::multi_index::tag<ByRank>,
                                            boost::multi_index::identity<Node>, RankOrder>>>;

  std::size_t rank_of(Members::index<ByMember>::type::const_iterator it) const;
  // rank_of(it) if the node ranks within 1..within, else kBeyond (one descent to rank
  // `within`, along the top of the tree that top-N reads keep warm, instead of a walk up).
  std::size_t rank_within(Members::index<ByMember>::type::const_iterator it,
                          std::size_t within) const;
  bool insert_restored(std::string_view member, double score, std::uint64_t seq);

  Members members_;
  std::uint64_t next_seq_ = 1;
  std::size_t member_bytes_ = 0;  // member lengths beyond the inline buffer
};

}  // namespace boards
