// board_rows.hh — the leaderboards' rows in the tier (their durability). The caller
// (server's BoardService, a boards::ChangeSink) reserves a row's bytes before the registry
// applies the change (StoreTier::reserve_row: against --max-dirty, write-behind's dirty buffer,
// refused while flushes fail; write-through's backlog), so a refused change leaves the board as
// it was; it then writes the row under the board's lock (board_write), so one board's rows reach
// the store in the order they were applied. Write-through submits the row and answers after its
// commit; write-behind keeps it in the dirty buffer (coalesced per (board, member); a dropped
// board replaces its rows), flushed with the keys, and answers at once.
// The StoreTier methods are in board_rows.cc; the dirty rows themselves in dirty_buffer.hh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tier/results.hh"

namespace tier {

// A dirty row's key: [board length][board][member], one string so one hash map holds every
// board's rows (the length byte makes a board's prefix its own).
std::string row_key(std::string_view board, std::string_view member);
std::pair<std::string, std::string> split_row_key(std::string_view key);
// What a dirty row counts for against --max-dirty.
inline std::size_t row_size(std::string_view key) {
  return key.size() + sizeof(double) + sizeof(std::uint64_t);
}

// reserve_row's answer: the bytes held, or why nothing was.
struct RowReservation {
  std::size_t bytes = 0;
  std::optional<KeyOutcome> refused;  // set: nothing was reserved
};

}  // namespace tier
