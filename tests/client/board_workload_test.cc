// The leaderboard workloads' pieces without sockets: names, scores, the request bytes, and the
// checks of top-N and member answers (sorted / unsorted / wrong count / fewer members than n).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "client/board_workload.hh"

namespace client {
namespace {

// A top-N answer with the given scores (ranks 1.. unless `ranks` is given).
std::string top_body(const std::string& board, std::uint64_t members,
                     const std::vector<std::string>& scores, std::vector<int> ranks = {}) {
  std::string out =
      "{\"board\": \"" + board + "\", \"members\": " + std::to_string(members) + ", \"entries\": [";
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (i) out += ", ";
    const int rank = ranks.empty() ? static_cast<int>(i + 1) : ranks[i];
    out += "{\"rank\": " + std::to_string(rank) + ", \"member\": \"m" + std::to_string(i * 7) +
           "\", \"score\": " + scores[i] + "}";
  }
  return out + "]}";
}

TEST(BoardWorkload, NamesAreShortAndDeterministic) {
  EXPECT_EQ(board_name(0), "b0");
  EXPECT_EQ(board_name(41), "b41");
  EXPECT_EQ(member_name(99'999), "m99999");
  EXPECT_EQ(member_name(18'446'744'073'709'551'615ull), "m18446744073709551615");
  EXPECT_LE(member_name(18'446'744'073'709'551'615ull).size(), kMaxBoardNameBytes);
}

TEST(BoardWorkload, ScoreMaxBoundsUpdateAndPreloadScores) {
  Rng rng(5);
  double highest = 0;
  for (int i = 0; i < 20'000; ++i) {
    const double s = random_board_score(rng, 50'000);
    ASSERT_GE(s, 0.0);
    ASSERT_LT(s, 50'000.0);
    ASSERT_DOUBLE_EQ(s * 10, std::round(s * 10));  // tenths
    highest = std::max(highest, s);
    const double p = preload_board_score(1, static_cast<std::uint64_t>(i), 50'000);
    ASSERT_GE(p, 0.0);
    ASSERT_LT(p, 50'000.0);
  }
  EXPECT_GT(highest, 45'000.0);                   // the whole range is used, not a corner of it
  EXPECT_EQ(random_board_score(rng, 0.05), 0.0);  // below one tenth: only 0
}

TEST(BoardWorkload, ScoresAreTenthsBelowABillionAndPreloadScoresAreStable) {
  Rng rng(3);
  for (int i = 0; i < 10'000; ++i) {
    const double s = random_board_score(rng);
    ASSERT_GE(s, 0.0);
    ASSERT_LT(s, 1e9);
    std::string text;
    append_score(text, s);
    EXPECT_EQ(std::stod(text), s) << text;  // round-trips
    EXPECT_EQ(text.find('e'), std::string::npos) << text;
  }
  EXPECT_EQ(preload_board_score(2, 17), preload_board_score(2, 17));
  EXPECT_NE(preload_board_score(2, 17), preload_board_score(2, 18));
  EXPECT_NE(preload_board_score(2, 17), preload_board_score(3, 17));
  std::string text;
  append_score(text, 12.0);
  append_score(text, 12.5);
  EXPECT_EQ(text, "1212.5");  // integers without ".0"
}

TEST(BoardWorkload, RequestsFollowTheContract) {
  WorkloadConfig cfg;
  cfg.kind = WorkloadKind::kBoardMixed;
  cfg.top_n = 25;
  const BoardRequests requests(cfg, "127.0.0.1");
  std::string out;
  Op set;
  set.type = OpType::kBoardSet;
  set.board = 3;
  set.key = 1234;
  set.score = 1234.5;
  requests.append(out, set);
  EXPECT_EQ(out,
            "PUT /board/b3/member/m1234?op=set HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Length: 6\r\n\r\n1234.5");
  out.clear();
  Op top;
  top.type = OpType::kBoardTop;
  top.board = 0;
  requests.append(out, top);
  EXPECT_EQ(out, "GET /board/b0/top?n=25 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  out.clear();
  Op score;
  score.type = OpType::kBoardScore;
  score.board = 7;
  score.key = 0;
  requests.append(out, score);
  EXPECT_EQ(out, "GET /board/b7/member/m0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

TEST(BoardVerify, SortedTopWithNEntriesPasses) {
  // Ties, exponent notation and integers are all scores; n entries of a bigger board.
  EXPECT_EQ(verify_top(top_body("b0", 1000, {"1e+21", "99", "98.5", "98.5", "12"}), "b0", 5, 0),
            BoardVerdict::kOk);
  EXPECT_EQ(verify_top(top_body("b0", 1000, {"1e+21", "99", "98.5", "98.5", "12"}), "b0", 5, 1000),
            BoardVerdict::kOk);
  // Negative and zero scores sort too.
  EXPECT_EQ(verify_top(top_body("b0", 3, {"0", "-1", "-2.5"}), "b0", 10, 3), BoardVerdict::kOk);
}

TEST(BoardVerify, UnsortedTopFails) {
  EXPECT_EQ(verify_top(top_body("b1", 100, {"5", "7", "3"}), "b1", 3, 0), BoardVerdict::kNotSorted);
  EXPECT_EQ(verify_top(top_body("b1", 100, {"5", "4", "3", "3.5"}), "b1", 4, 0),
            BoardVerdict::kNotSorted);
  EXPECT_EQ(verify_top(top_body("b1", 100, {"99", "98.5", "12", "1e+21"}), "b1", 4, 0),
            BoardVerdict::kNotSorted);
}

TEST(BoardVerify, WrongCountFails) {
  // n = 4 on a board of 100: exactly 4 entries.
  EXPECT_EQ(verify_top(top_body("b0", 100, {"5", "4", "3"}), "b0", 4, 0),
            BoardVerdict::kWrongCount);
  EXPECT_EQ(verify_top(top_body("b0", 100, {"5", "4", "3", "2", "1"}), "b0", 4, 0),
            BoardVerdict::kWrongCount);
  EXPECT_EQ(verify_top(top_body("b0", 100, {}), "b0", 1, 0), BoardVerdict::kWrongCount);
}

TEST(BoardVerify, FewerMembersThanNMeansAllOfThem) {
  // A board of 3 asked for 10: all 3.
  EXPECT_EQ(verify_top(top_body("b0", 3, {"3", "2", "1"}), "b0", 10, 0), BoardVerdict::kOk);
  EXPECT_EQ(verify_top(top_body("b0", 3, {"3", "2"}), "b0", 10, 0), BoardVerdict::kWrongCount);
  EXPECT_EQ(verify_top(top_body("b0", 0, {}), "b0", 10, 0), BoardVerdict::kOk);
  // After a preload of 5 members, a board claiming 3 lost members.
  EXPECT_EQ(verify_top(top_body("b0", 3, {"3", "2", "1"}), "b0", 10, 5),
            BoardVerdict::kMissingMembers);
  // More members than preloaded (other data kept with --no-reset) is fine.
  EXPECT_EQ(verify_top(top_body("b0", 7, {"3", "2", "1"}), "b0", 3, 5), BoardVerdict::kOk);
}

TEST(BoardVerify, RanksMustBeConsecutiveFromOne) {
  EXPECT_EQ(verify_top(top_body("b0", 9, {"3", "2", "1"}, {0, 1, 2}), "b0", 3, 0),
            BoardVerdict::kBadRanks);
  EXPECT_EQ(verify_top(top_body("b0", 9, {"3", "2", "1"}, {1, 2, 4}), "b0", 3, 0),
            BoardVerdict::kBadRanks);
  EXPECT_EQ(verify_top(top_body("b0", 9, {"3", "3", "1"}, {1, 1, 3}), "b0", 3, 0),
            BoardVerdict::kBadRanks);
}

TEST(BoardVerify, MalformedTopAnswersFail) {
  EXPECT_EQ(verify_top("", "b0", 3, 0), BoardVerdict::kNotJson);
  EXPECT_EQ(verify_top("[1, 2]", "b0", 3, 0), BoardVerdict::kNotJson);
  EXPECT_EQ(verify_top("{\"board\": \"b0\", \"members\": 1, \"entries\": [", "b0", 3, 0),
            BoardVerdict::kNotJson);
  EXPECT_EQ(verify_top("{\"board\": \"b0\", \"entries\": []}", "b0", 3, 0),
            BoardVerdict::kBadShape);
  EXPECT_EQ(verify_top("{\"board\": \"b0\", \"members\": 1, \"entries\": [{\"rank\": 1, "
                       "\"member\": \"m0\", \"score\": \"12\"}]}",
                       "b0", 3, 0),
            BoardVerdict::kBadShape);
  EXPECT_EQ(verify_top(top_body("b1", 3, {"3", "2", "1"}), "b0", 3, 0), BoardVerdict::kWrongBoard);
}

TEST(BoardVerify, MemberAnswerMustNameTheMember) {
  EXPECT_EQ(verify_member("{\"member\": \"m42\", \"score\": 12.5, \"rank\": 3}", "m42"),
            BoardVerdict::kOk);
  EXPECT_EQ(verify_member("{\"member\": \"m43\", \"score\": 12.5, \"rank\": 3}", "m42"),
            BoardVerdict::kWrongMember);
  EXPECT_EQ(verify_member("{\"member\": \"m42\", \"score\": 12.5}", "m42"),
            BoardVerdict::kBadShape);
  EXPECT_EQ(verify_member("{\"member\": \"m42\", \"score\": 12.5, \"rank\": 0}", "m42"),
            BoardVerdict::kBadShape);
  EXPECT_EQ(verify_member("not json", "m42"), BoardVerdict::kNotJson);
}

TEST(BoardVerify, OneVerifierChecksManyAnswersInARow) {
  BoardVerifier v;
  std::vector<std::string> scores;
  for (int i = 1000; i > 0; --i) scores.push_back(std::to_string(i) + ".5");
  const std::string big = top_body("b2", 5000, scores);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(v.top(big, "b2", 1000, 5000), BoardVerdict::kOk);
    EXPECT_EQ(v.top("garbage", "b2", 1000, 0), BoardVerdict::kNotJson);
    EXPECT_EQ(v.member("{\"member\": \"m1\", \"score\": 1, \"rank\": 1}", "m1"), BoardVerdict::kOk);
    EXPECT_EQ(v.top(top_body("b2", 5000, {"1", "2"}), "b2", 2, 0), BoardVerdict::kNotSorted);
  }
}

}  // namespace
}  // namespace client
