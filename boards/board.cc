// board.cc — Board: updates (set, best, incr) with the arrival-order rule, rank and window
// reads over Boost.MultiIndex's ranked index, and the memory estimate --board-maxmem counts.
#include "boards/board.hh"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace boards {

namespace {

// -0 and 0 compare equal; storing one spelling keeps the JSON from showing "-0".
double canonical(double score) {
  return score == 0 ? 0.0 : score;
}

// MemberName keeps up to 15 bytes inline; longer members cost a heap block of their length,
// rounded and with a header as in member_cost().
std::size_t heap_bytes(std::size_t member_size) {
  return member_size > MemberName::kInline ? (member_size + 8 + 15) / 16 * 16 : 0;
}

}  // namespace

std::size_t Board::member_cost(std::size_t member_size) {
  // One node: the Node itself, the hashed index's two links and the ranked index's red-black
  // links (parent with the colour packed in, left, right) and subtree size, as one allocation:
  // rounded up to 16 bytes plus an 8-byte header, as glibc's malloc hands it out (jemalloc,
  // which cache_server links, has an 80-byte class and no header: the estimate errs high there,
  // never low). Plus the hash buckets: one pointer per member at the index's top load factor,
  // a third more on average between its doublings.
  constexpr std::size_t kNode =
      sizeof(Node) + 2 * sizeof(void*) + 3 * sizeof(void*) + sizeof(std::size_t);
  constexpr std::size_t kAllocated = (kNode + 8 + 15) / 16 * 16;
  constexpr std::size_t kBuckets = sizeof(void*) * 4 / 3;
  return kAllocated + kBuckets + heap_bytes(member_size);
}

std::size_t Board::bytes() const {
  return members_.size() * member_cost(0) + member_bytes_;
}

std::size_t Board::rank_of(Members::index<ByMember>::type::const_iterator it) const {
  const auto& by_rank = members_.get<ByRank>();
  return by_rank.rank(members_.project<ByRank>(it)) + 1;
}

std::size_t Board::rank_within(Members::index<ByMember>::type::const_iterator it,
                               std::size_t within) const {
  if (within >= size()) return rank_of(it);  // every place ranks within
  if (within == 0) return kBeyond;
  const Node& last = *members_.get<ByRank>().nth(within - 1);
  return RankOrder{}(last, *it) ? kBeyond : rank_of(it);
}

std::optional<Updated> Board::update(std::string_view member, Op op, double value,
                                     std::size_t within) {
  auto& by_member = members_.get<ByMember>();
  auto it = by_member.find(member, MemberHash{}, MemberEq{});
  if (it == by_member.end()) {
    const double score = canonical(value);  // best and incr from nothing both give the value
    if (!std::isfinite(score)) return std::nullopt;
    auto [pos, inserted] = by_member.insert(Node{MemberName(member), score, next_seq_++});
    member_bytes_ += heap_bytes(member.size());
    return Updated{.created = true,
                   .changed = true,
                   .score = score,
                   .rank = rank_within(pos, within),
                   .old_rank = 0};
  }
  const double old = it->score;
  double score = old;
  switch (op) {
    case Op::set:
      score = value;
      break;
    case Op::best:
      score = std::max(old, value);
      break;
    case Op::incr:
      score = old + value;
      break;
  }
  score = canonical(score);
  if (!std::isfinite(score)) return std::nullopt;
  const std::size_t old_rank = rank_within(it, within);
  if (score == old) {  // same score: the member keeps its place
    return Updated{
        .created = false, .changed = false, .score = old, .rank = old_rank, .old_rank = old_rank};
  }
  const std::uint64_t seq = next_seq_++;
  by_member.modify(it, [&](Node& n) {
    n.score = score;
    n.seq = seq;
  });
  return Updated{.created = false,
                 .changed = true,
                 .score = score,
                 .rank = rank_within(it, within),
                 .old_rank = old_rank};
}

bool Board::restore(std::string_view member, double score, std::uint64_t seq) {
  score = canonical(score);
  bool replaced = false;
  if (!insert_restored(member, score, seq)) {
    auto& by_member = members_.get<ByMember>();
    auto existing = by_member.find(member, MemberHash{}, MemberEq{});
    if (existing == by_member.end()) {
      // Another member holds this (score, seq): rows no consistent store holds (seqs are unique
      // within a board). Keep the member, as the latest arrival at its score.
      seq = next_seq_;
    } else if (existing->score == score && existing->seq == seq) {
      return false;  // the same row again
    } else {
      member_bytes_ -= heap_bytes(existing->member.size());
      by_member.erase(existing);  // erased, then inserted: a modify() that collided would lose it
      replaced = true;
    }
    const bool inserted = insert_restored(member, score, seq);
    assert(inserted);
    (void)inserted;
  }
  next_seq_ = std::max(next_seq_, seq + 1);
  return !replaced;
}

// A row that ranks after every member goes in at the end with a hint, with no descent of the
// tree: the rebuild restores each board's rows in rank order (server/server.cc), and so takes
// 1M members in 1.1 s instead of 2.6 s (boards/README.md). insert() probes the hash once;
// false if the member, or its (score, seq), is there already.
bool Board::insert_restored(std::string_view member, double score, std::uint64_t seq) {
  Node node{MemberName(member), score, seq};
  auto& by_rank = members_.get<ByRank>();
  const std::size_t before = members_.size();
  if (!by_rank.empty() && RankOrder{}(*by_rank.rbegin(), node)) {
    by_rank.insert(by_rank.end(), std::move(node));
  } else {
    by_rank.insert(std::move(node));
  }
  if (members_.size() == before) return false;
  member_bytes_ += heap_bytes(member.size());
  return true;
}

std::optional<std::size_t> Board::remove(std::string_view member) {
  auto& by_member = members_.get<ByMember>();
  auto it = by_member.find(member, MemberHash{}, MemberEq{});
  if (it == by_member.end()) return std::nullopt;
  const std::size_t rank = rank_of(it);
  member_bytes_ -= heap_bytes(it->member.size());
  by_member.erase(it);
  return rank;
}

std::optional<Ranked> Board::find(std::string_view member) const {
  const auto& by_member = members_.get<ByMember>();
  auto it = by_member.find(member, MemberHash{}, MemberEq{});
  if (it == by_member.end()) return std::nullopt;
  return Ranked{.rank = rank_of(it), .member = it->member, .score = it->score};
}

std::optional<Stored> Board::stored(std::string_view member) const {
  const auto& by_member = members_.get<ByMember>();
  auto it = by_member.find(member, MemberHash{}, MemberEq{});
  if (it == by_member.end()) return std::nullopt;
  return Stored{.score = it->score, .seq = it->seq};
}

std::optional<std::pair<std::size_t, std::size_t>> Board::around(std::string_view member,
                                                                 std::size_t n) const {
  const auto& by_member = members_.get<ByMember>();
  auto it = by_member.find(member, MemberHash{}, MemberEq{});
  if (it == by_member.end()) return std::nullopt;
  const std::size_t rank = rank_of(it);
  const std::size_t first = rank > n ? rank - n : 1;
  const std::size_t last = std::min(size(), rank + n);
  return std::pair{first, last - first + 1};
}

double Board::top_score() const {
  return members_.get<ByRank>().begin()->score;
}

double Board::bottom_score() const {
  return std::prev(members_.get<ByRank>().end())->score;
}

}  // namespace boards
