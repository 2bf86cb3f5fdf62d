// board_rows.cc — see board_rows.hh: the row keys, and the tier's entry points for rows.
#include "tier/board_rows.hh"

#include "tier/tier.hh"

namespace tier {

std::string row_key(std::string_view board, std::string_view member) {
  std::string k;
  k.reserve(1 + board.size() + member.size());
  k.push_back(static_cast<char>(board.size()));  // 1..250
  k.append(board);
  k.append(member);
  return k;
}

std::pair<std::string, std::string> split_row_key(std::string_view key) {
  const std::size_t n = static_cast<unsigned char>(key[0]);
  return {std::string(key.substr(1, n)), std::string(key.substr(1 + n))};
}

RowReservation StoreTier::reserve_row(std::string_view board, std::string_view member) {
  std::lock_guard lock(core_.mu);
  if (!core_.through()) return behind_.reserve_row_locked(board, member);
  const std::size_t bytes = row_size(row_key(board, member)) + kOpOverhead;
  if (auto full = through_.admit_locked(bytes)) return {0, std::move(full)};
  return {bytes, std::nullopt};
}

void StoreTier::release_row(std::size_t bytes) {
  std::lock_guard lock(core_.mu);
  if (core_.through()) {
    through_.release_locked(bytes);
  } else {
    behind_.release_row_locked(bytes);
  }
}

std::optional<KeyOutcome> StoreTier::board_write(store::Write row, std::size_t reserved,
                                                 Done<KeyOutcome> done) {
  std::lock_guard lock(core_.mu);
  if (!core_.through()) {
    behind_.board_write_locked(row, reserved);
    return KeyOutcome{KeyOutcome::Kind::replaced, {}};
  }
  through_.board_write_locked(std::move(row), reserved, std::move(done));
  return std::nullopt;
}

}  // namespace tier
