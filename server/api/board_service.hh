// board_service.hh — the leaderboards' service: every decision about a board route, between
// the handlers (board_handlers.cc: decode, parse, render) and the registry (boards/), the
// durable tier (tier/tier.hh) and the store's own board reads. Each call answers its Reply
// exactly once (reply.hh): now, or later on the connection's thread.
//
// Changes (update, remove_member, remove_board) are made in memory by the registry. With a
// store, every change is also a store row, admitted before the registry applies it
// (boards::ChangeSink::admit_change: the row's bytes count against --max-dirty, and a store
// that failed refuses it), so a refused change leaves the board as it was. Write-behind answers
// at once; write-through answers once the row has committed (a commit that fails answers 503,
// and the board in memory keeps the change: docs/api.md, "Failures of the store").
// Reads are the registry's (rendered under the board's shared lock, board_json.hh), or with
// --board-source store the database's (SQL, the baseline the in-memory boards are measured
// against), answered later; a top page from the database takes its member count from memory
// (the database is not made to count the board per page). Either way a read that found its
// board counts in board_reads.
// A read from the store is bounded as a key read is (docs/api.md, "Failures of the store"):
// unanswered after --store-timeout it answers 503 "store timeout" (tier/deadline.hh, a deadline
// of its own: the tier's is the key path's), so the connection's later responses go out; and
// the reads the store holds (from the call until the store answers, past their deadline too:
// they still occupy its queue) count their bytes against --max-inflight, past which a read
// answers 503 "store read backlog full" at once, so a hung database holds a bounded number.
// Thread safety: as the registry and the tier, every method may be called from any worker.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "boards/board.hh"
#include "boards/registry.hh"
#include "server/api/tier_names.hh"
#include "server/config.hh"

namespace server {

// The 404 reason of a board route whose board does not exist.
inline constexpr std::string_view kBoardNotFound = "board not found";

// What a board change did.
struct BoardChange {
  enum class Kind : std::uint8_t {
    done,        // applied (update: `updated` says how)
    not_found,   // no such board (or member): nothing changed
    no_space,    // a new member would exceed --board-maxmem (507)
    not_finite,  // the new score would not be finite (400)
    frozen,      // a reset is pending: changes are refused until the store has answered (503)
    refused,     // the store took no row (full or failed; error says why): nothing changed (503)
    failed,      // write-through: the row's commit failed or timed out (error); 503
  };
  Kind kind = Kind::done;
  boards::Updated updated;  // update, done
  std::string error;
};

// What a board read found.
struct BoardRead {
  enum class Kind : std::uint8_t { ok, not_found, error };
  Kind kind = Kind::ok;
  std::string text;  // ok: the JSON body; not_found: "board not found"/"member not found";
                     // error: why (503)
};

// The bounds of the reads the store answers (--board-source store).
struct StoreReadBounds {
  std::chrono::milliseconds timeout = kDefaultStoreTimeout;  // --store-timeout
  std::size_t max_waiting = kDefaultMaxInflightBytes;  // --max-inflight: bytes the store holds
};

class BoardService {
 public:
  // tier: the durable tier, or nullptr (--store none). reads_from_store: --board-source store
  // (only with a store whose engine answers board reads); bounds: those reads' (the deadline
  // thread runs only when the store answers reads).
  BoardService(boards::Registry& boards, StoreTier* tier, bool reads_from_store,
               StoreReadBounds bounds = {});
  ~BoardService();
  BoardService(const BoardService&) = delete;
  BoardService& operator=(const BoardService&) = delete;

  // want_ranks false: the reply reads no rank (RESP's ZADD and ZINCRBY; Registry::update).
  void update(std::string_view board, std::string_view member, boards::Op op, double value,
              Reply<BoardChange>& reply, bool want_ranks = true);
  void remove_member(std::string_view board, std::string_view member, Reply<BoardChange>& reply);
  void remove_board(std::string_view board, Reply<BoardChange>& reply);

  // GET /board/{b}/member/{m}: {"member", "score", "rank"}.
  void member(std::string_view board, std::string_view member, Reply<BoardRead>& reply);
  // GET /board/{b}/top: ranks offset+1 .. offset+n, as a window.
  void top(std::string_view board, std::uint64_t offset, std::uint64_t n, Reply<BoardRead>& reply);
  // GET /board/{b}/around/{m}: the member's rank ± n, as a window.
  void around(std::string_view board, std::string_view member, std::uint64_t n,
              Reply<BoardRead>& reply);
  // GET /board/{b}: {"board", "members", "top_score", "bottom_score"}.
  void info(std::string_view board, Reply<BoardRead>& reply);

  // Reads the store answered (--board-source store) that found their board, except those whose
  // member count is read from memory, which counts them (top pages, info, answered windows):
  // /stats adds them to the registry's board_reads.
  std::uint64_t store_reads() const { return store_reads_.load(std::memory_order_relaxed); }

 private:
  // The member count of a board in memory (board_reads counts the read), at least at_least.
  std::size_t members_of(std::string_view board, std::size_t at_least) const;

  // A read the store answers (board_service.cc): bounded, then asked (ask), rendered later.
  template <class Ask, class Render>
  void from_store(std::size_t name_bytes, Reply<BoardRead>& reply, bool count_found, Ask ask,
                  Render render, bool render_counts = false);
  // Counts a store read of `cost` bytes into store_read_bytes_, or says why it cannot (the
  // store holds --max-inflight bytes of reads already).
  std::optional<std::string> admit_store_read(std::size_t cost);

  boards::Registry& boards_;
  StoreTier* const tier_;
  store::BoardReader* const source_;  // the store's board reads, or nullptr (memory answers)
  std::atomic<std::uint64_t> store_reads_{0};
  const std::size_t max_store_read_bytes_;  // --max-inflight
  // Bytes (names + kStoreReadOverhead each) of the reads handed to the store and not yet
  // answered by it (those the deadline answered included).
  std::atomic<std::size_t> store_read_bytes_{0};
  // What a read the deadline answers gets (outlives it).
  const std::unique_ptr<const store::BoardPage> timeout_page_;
  std::unique_ptr<StoreDeadline> deadline_;  // --store-timeout; only with source_
};

}  // namespace server
