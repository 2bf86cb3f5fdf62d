// The leaderboard workloads (board-update, board-top, board-mixed, board-score) against the
// server's board API (docs/api.md, "Boards"):
//  - names: board i is "b<i>", member j is "m<j>" (decimal, no percent-encoding needed);
//  - scores: updates send a random score (tenths in [0, 1e9), or [0, --score-max)), the preload a
//  score derived from
//    (board, member); both as shortest round-trip decimal text;
//  - BoardRequests: the request bytes of one operation, appended to a reused buffer from
//    pre-rendered pieces (no allocation once the buffer has grown);
//  - verification of the answers, as pure functions of the body (testable without sockets):
//    a top-N answer must hold min(n, members) entries, ranks 1, 2, 3, ... and non-increasing
//    scores; a member answer must name the member asked for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "client/config.hh"
#include "client/distributions.hh"
#include "client/workload.hh"

namespace client {

// Longest name write_board_name/write_member_name produce ("m" + 20 digits).
inline constexpr std::size_t kMaxBoardNameBytes = 24;

// Write "b<i>" / "m<j>" into out (at least kMaxBoardNameBytes long); return the length.
std::size_t write_board_name(std::uint64_t board, char* out);
std::size_t write_member_name(std::uint64_t member, char* out);
std::string board_name(std::uint64_t board);
std::string member_name(std::uint64_t member);

// The score the preload gives member `member` of board `board`: deterministic, in tenths in
// [0, 1e9), so boards hold distinct-looking but reproducible orders.
// --score-max S: in [0, S) instead (tenths).
double preload_board_score(std::uint64_t board, std::uint64_t member, double score_max = 1e9);
// A random update score from rng: tenths in [0, score_max) (--score-max; default 1e9).
double random_board_score(Rng& rng, double score_max = 1e9);
// Appends the score's shortest round-trip decimal text ("12", "12.5").
void append_score(std::string& out, double score);

class BoardRequests {
 public:
  BoardRequests(const WorkloadConfig& cfg, const std::string& host);
  // Appends the request of a board op (kBoardSet, kBoardTop or kBoardScore) to out.
  void append(std::string& out, const Op& op) const;

 private:
  std::string put_tail_;  // "?op=set HTTP/1.1\r\nHost: H\r\nContent-Length: "
  std::string top_tail_;  // "/top?n=N HTTP/1.1\r\nHost: H\r\n\r\n"
  std::string get_tail_;  // " HTTP/1.1\r\nHost: H\r\n\r\n"
};

enum class BoardVerdict {
  kOk,
  kNotJson,         // not a JSON object
  kBadShape,        // a field missing or of the wrong type
  kWrongBoard,      // "board" is not the board asked for
  kMissingMembers,  // "members" below the members known to be on the board (the preload's)
  kWrongCount,      // entries != min(n, members)
  kBadRanks,        // ranks not 1, 2, 3, ...
  kNotSorted,       // a score above the one before it
  kWrongMember,     // a member answer for another member
};
const char* board_verdict_name(BoardVerdict v);

// Checks 200 answers. Holds a reusable JSON parser and buffer so that checking allocates nothing
// in the steady state; one per thread.
class BoardVerifier {
 public:
  BoardVerifier();
  ~BoardVerifier();
  BoardVerifier(const BoardVerifier&) = delete;
  BoardVerifier& operator=(const BoardVerifier&) = delete;

  // GET /board/{board}/top?n=n (offset 0) answered `body`:
  // {"board": b, "members": TOTAL, "entries": [{"rank": r, "member": m, "score": s}, ...]}.
  // min_members: members the board must hold at least (0 = unknown).
  BoardVerdict top(std::string_view body, std::string_view board, std::uint32_t n,
                   std::uint64_t min_members);
  // GET /board/{b}/member/{member} answered `body`: {"member": m, "score": s, "rank": r}.
  BoardVerdict member(std::string_view body, std::string_view member);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot forms of the checks above (tests, tools).
BoardVerdict verify_top(std::string_view body, std::string_view board, std::uint32_t n,
                        std::uint64_t min_members);
BoardVerdict verify_member(std::string_view body, std::string_view member);

}  // namespace client
