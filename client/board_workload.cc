// Leaderboard workload names, scores, requests and answer checks (see board_workload.hh).
#include "client/board_workload.hh"

#include <algorithm>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parser.hpp>
#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "common/decimal.hh"

namespace client {
namespace {

constexpr std::uint64_t kScoreTenths = 10'000'000'000ull;      // scores in [0, 1e9), step 0.1
constexpr std::uint64_t kPreloadSalt = 0x626f6172642d7363ull;  // "board-sc"
// Room for the parsed value of a top-1000 answer; more falls back to the heap.
constexpr std::size_t kVerifierBuffer = 512 * 1024;
constexpr std::size_t kParserStack = 4 * 1024;

std::size_t write_name(char prefix, std::uint64_t n, char* out) {
  out[0] = prefix;
  auto [end, ec] = std::to_chars(out + 1, out + kMaxBoardNameBytes, n);
  return static_cast<std::size_t>(end - out);
}

bool is_integer(const boost::json::value& v) {
  return v.is_int64() || v.is_uint64();
}

// The integer value of v (is_integer(v)); negative int64 as 0 (callers check >= 1).
std::uint64_t integer(const boost::json::value& v) {
  if (v.is_uint64()) return v.get_uint64();
  return v.get_int64() < 0 ? 0 : static_cast<std::uint64_t>(v.get_int64());
}

}  // namespace

std::size_t write_board_name(std::uint64_t board, char* out) {
  return write_name('b', board, out);
}

std::size_t write_member_name(std::uint64_t member, char* out) {
  return write_name('m', member, out);
}

std::string board_name(std::uint64_t board) {
  char buf[kMaxBoardNameBytes];
  return std::string(buf, write_board_name(board, buf));
}

std::string member_name(std::uint64_t member) {
  char buf[kMaxBoardNameBytes];
  return std::string(buf, write_member_name(member, buf));
}

namespace {
// Tenths in [0, score_max): at least one (the score 0).
std::uint64_t score_tenths(double score_max) {
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(score_max * 10.0)), 1,
                                   kScoreTenths);
}
}  // namespace

double preload_board_score(std::uint64_t board, std::uint64_t member, double score_max) {
  const std::uint64_t h = mix64(mix64(board ^ kPreloadSalt) + member);
  return static_cast<double>(h % score_tenths(score_max)) / 10.0;
}

double random_board_score(Rng& rng, double score_max) {
  return static_cast<double>(rng.below(score_tenths(score_max))) / 10.0;
}

void append_score(std::string& out, double score) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, score);
  out.append(buf, static_cast<std::size_t>(end - buf));
}

BoardRequests::BoardRequests(const WorkloadConfig& cfg, const std::string& host) {
  const std::string head = " HTTP/1.1\r\nHost: " + host + "\r\n";
  put_tail_ = "?op=set" + head + "Content-Length: ";
  top_tail_ = "/top?n=" + std::to_string(cfg.top_n) + head + "\r\n";
  get_tail_ = head + "\r\n";
}

void BoardRequests::append(std::string& out, const Op& op) const {
  char name[kMaxBoardNameBytes];
  out += op.type == OpType::kBoardSet ? "PUT /board/" : "GET /board/";
  out.append(name, write_board_name(op.board, name));
  if (op.type == OpType::kBoardTop) {
    out += top_tail_;
    return;
  }
  out += "/member/";
  out.append(name, write_member_name(op.key, name));
  if (op.type != OpType::kBoardSet) {
    out += get_tail_;
    return;
  }
  char score[32];
  auto [end, ec] = std::to_chars(score, score + sizeof score, op.score);
  const auto len = static_cast<std::size_t>(end - score);
  out += put_tail_;
  common::append_decimal(out, len);
  out += "\r\n\r\n";
  out.append(score, len);
}

const char* board_verdict_name(BoardVerdict v) {
  switch (v) {
    case BoardVerdict::kOk:
      return "ok";
    case BoardVerdict::kNotJson:
      return "not a JSON object";
    case BoardVerdict::kBadShape:
      return "field missing or of the wrong type";
    case BoardVerdict::kWrongBoard:
      return "wrong board";
    case BoardVerdict::kMissingMembers:
      return "fewer members than stored";
    case BoardVerdict::kWrongCount:
      return "wrong number of entries";
    case BoardVerdict::kBadRanks:
      return "ranks not consecutive from 1";
    case BoardVerdict::kNotSorted:
      return "scores not in descending order";
    case BoardVerdict::kWrongMember:
      return "wrong member";
  }
  return "?";
}

struct BoardVerifier::Impl {
  Impl()
      : parser(boost::json::storage_ptr(), boost::json::parse_options(), stack, sizeof stack),
        buffer(kVerifierBuffer) {}

  // Parses body into a value living in `buffer` (valid until the next parse). nullptr when the
  // body is not a JSON object.
  const boost::json::object* parse(std::string_view body) {
    value.reset();  // frees nothing: the old value lived in the monotonic resource
    resource.emplace(buffer.data(), buffer.size());
    parser.reset(boost::json::storage_ptr(&*resource));
    boost::system::error_code ec;
    parser.write(body.data(), body.size(), ec);
    if (ec) return nullptr;
    value.emplace(parser.release());
    return value->if_object();
  }

  unsigned char stack[kParserStack];
  boost::json::parser parser;
  std::vector<unsigned char> buffer;
  // Declared before `value`, so the value (allocated in it) goes first.
  std::optional<boost::json::monotonic_resource> resource;
  std::optional<boost::json::value> value;
};

BoardVerifier::BoardVerifier() : impl_(std::make_unique<Impl>()) {}
BoardVerifier::~BoardVerifier() = default;

BoardVerdict BoardVerifier::top(std::string_view body, std::string_view board, std::uint32_t n,
                                std::uint64_t min_members) {
  const boost::json::object* doc = impl_->parse(body);
  if (doc == nullptr) return BoardVerdict::kNotJson;
  const auto* name = doc->if_contains("board");
  const auto* members = doc->if_contains("members");
  const auto* entries = doc->if_contains("entries");
  if (name == nullptr || !name->is_string() || members == nullptr || !is_integer(*members) ||
      entries == nullptr || !entries->is_array())
    return BoardVerdict::kBadShape;
  if (std::string_view(name->get_string()) != board) return BoardVerdict::kWrongBoard;
  if (members->is_int64() && members->get_int64() < 0) return BoardVerdict::kBadShape;
  const std::uint64_t total = integer(*members);
  if (total < min_members) return BoardVerdict::kMissingMembers;
  const auto& list = entries->get_array();
  if (list.size() != std::min<std::uint64_t>(n, total)) return BoardVerdict::kWrongCount;
  double previous = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto* entry = list[i].if_object();
    if (entry == nullptr) return BoardVerdict::kBadShape;
    const auto* rank = entry->if_contains("rank");
    const auto* member = entry->if_contains("member");
    const auto* score = entry->if_contains("score");
    if (rank == nullptr || !is_integer(*rank) || member == nullptr || !member->is_string() ||
        score == nullptr || !score->is_number())
      return BoardVerdict::kBadShape;
    if (rank->is_int64() && rank->get_int64() < 0) return BoardVerdict::kBadRanks;
    if (integer(*rank) != i + 1) return BoardVerdict::kBadRanks;
    const double s = score->to_number<double>();
    if (i > 0 && s > previous) return BoardVerdict::kNotSorted;
    previous = s;
  }
  return BoardVerdict::kOk;
}

BoardVerdict BoardVerifier::member(std::string_view body, std::string_view member) {
  const boost::json::object* doc = impl_->parse(body);
  if (doc == nullptr) return BoardVerdict::kNotJson;
  const auto* name = doc->if_contains("member");
  const auto* score = doc->if_contains("score");
  const auto* rank = doc->if_contains("rank");
  if (name == nullptr || !name->is_string() || score == nullptr || !score->is_number() ||
      rank == nullptr || !is_integer(*rank) || integer(*rank) < 1)
    return BoardVerdict::kBadShape;
  if (std::string_view(name->get_string()) != member) return BoardVerdict::kWrongMember;
  return BoardVerdict::kOk;
}

BoardVerdict verify_top(std::string_view body, std::string_view board, std::uint32_t n,
                        std::uint64_t min_members) {
  BoardVerifier v;
  return v.top(body, board, n, min_members);
}

BoardVerdict verify_member(std::string_view body, std::string_view member) {
  BoardVerifier v;
  return v.member(body, member);
}

}  // namespace client
