// registry.cc — Registry: boards by name, the lock order (registry, then board), the "gone"
// retry, and the byte budget every new member and every new board is charged against.
#include "boards/registry.hh"

#include <algorithm>

namespace boards {

namespace {

// What a board costs beside its members: its name, the map's node (links, cached hash, the
// name's string and the shared_ptr) and the shared block holding the lock and the container.
template <class Slot>
std::size_t board_cost(std::string_view name) {
  constexpr std::size_t kMapNode = 2 * sizeof(void*) + sizeof(std::string) + 16;
  constexpr std::size_t kShared = 16 + sizeof(Slot);
  return kMapNode + kShared + (name.size() > 15 ? name.size() + 1 : 0);
}

}  // namespace

bool Registry::reserve(std::size_t bytes) {
  std::size_t used = used_bytes_.load(std::memory_order_relaxed);
  do {
    if (used + bytes > max_bytes_) return false;
  } while (!used_bytes_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

std::shared_ptr<Registry::Slot> Registry::find(std::string_view board) const {
  std::shared_lock lock(mu_);
  auto it = map_.find(board);
  return it == map_.end() ? nullptr : it->second;
}

std::shared_ptr<Registry::Slot> Registry::find_or_create(std::string_view board) {
  if (auto slot = find(board)) return slot;
  std::unique_lock lock(mu_);
  if (auto it = map_.find(board); it != map_.end()) return it->second;  // raced: created meanwhile
  if (!reserve(board_cost<Slot>(board))) return nullptr;
  auto slot = std::make_shared<Slot>();
  map_.emplace(std::string(board), slot);
  return slot;
}

void Registry::unlink_locked(Map::iterator it) {
  Slot& slot = *it->second;  // its lock is held by the caller
  slot.gone = true;
  slot.top.clear(top_bytes_);
  members_.fetch_sub(slot.board.size(), std::memory_order_relaxed);
  removals_.fetch_add(slot.board.size(), std::memory_order_relaxed);
  release(slot.board.bytes() + board_cost<Slot>(it->first));
  map_.erase(it);
}

UpdateOutcome Registry::update(std::string_view board, std::string_view member, Op op, double value,
                               ChangeSink* sink, bool want_ranks) {
  for (;;) {
    std::shared_ptr<Slot> slot = find_or_create(board);
    if (!slot) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return {UpdateOutcome::Status::no_space, {}};
    }
    UpdateOutcome out;
    {
      std::unique_lock lock(slot->mu);
      if (slot->gone) continue;  // emptied and unlinked since the lookup: look again
      const bool is_new = !slot->board.stored(member);
      const std::size_t cost = Board::member_cost(member.size());
      if (frozen_.load(std::memory_order_acquire) > 0) {
        out.status = UpdateOutcome::Status::frozen;
      } else if (sink != nullptr && !sink->admit_change(board, member)) {
        out.status = UpdateOutcome::Status::refused;
      } else if (is_new && !reserve(cost)) {
        out.status = UpdateOutcome::Status::no_space;
      } else if (auto u = slot->board.update(member, op, value,
                                             want_ranks ? kAllRanks : slot->top.covered())) {
        out.updated = *u;
        // Ranks from the first one it disturbed on have moved (kBeyond: after every cached one).
        const std::size_t first = u->created ? u->rank : std::min(u->old_rank, u->rank);
        if (u->changed && first != kBeyond) slot->top.invalidate_from(first, top_bytes_);
        if (is_new) members_.fetch_add(1, std::memory_order_relaxed);
        updates_.fetch_add(1, std::memory_order_relaxed);
        if (sink != nullptr) sink->member_set(board, member, *slot->board.stored(member));
        return out;
      } else {
        if (is_new) release(cost);
        out.status = UpdateOutcome::Status::not_finite;
      }
      refused_.fetch_add(1, std::memory_order_relaxed);
      if (!slot->board.empty()) return out;
    }
    // Refused on a board this call may have created: an empty board does not exist.
    std::unique_lock registry(mu_);
    if (auto it = map_.find(board); it != map_.end() && it->second == slot) {
      std::unique_lock lock(slot->mu);
      if (slot->board.empty()) unlink_locked(it);
    }
    return out;
  }
}

std::size_t Registry::restore_board(std::string_view board, std::span<const RestoreRow> rows) {
  if (rows.empty()) return 0;
  std::shared_ptr<Slot> slot = find_or_create(board);
  if (!slot) return rows.size();
  std::unique_lock lock(slot->mu);
  slot->board.reserve(slot->board.size() + rows.size());
  std::size_t skipped = 0;
  for (const RestoreRow& r : rows) {
    // Charged first, and given back if the member was there already (rare: a store's rows are
    // unique), so the common case probes the board's hash once; a full budget refuses only a
    // member that is really new.
    const std::size_t cost = Board::member_cost(r.member.size());
    const bool charged = reserve(cost);
    if (!charged && !slot->board.stored(r.member)) {
      ++skipped;
      continue;
    }
    if (slot->board.restore(r.member, r.row.score, r.row.seq)) {
      members_.fetch_add(1, std::memory_order_relaxed);
    } else if (charged) {
      release(cost);
    }
  }
  slot->top.invalidate_from(1, top_bytes_);
  if (slot->board.empty()) {  // nothing fitted: a board without members does not exist
    lock.unlock();
    std::unique_lock registry(mu_);
    if (auto it = map_.find(board); it != map_.end() && it->second == slot) {
      std::unique_lock again(slot->mu);
      if (slot->board.empty()) unlink_locked(it);
    }
  }
  return skipped;
}

std::optional<std::size_t> Registry::remove_member(std::string_view board, std::string_view member,
                                                   ChangeSink* sink) {
  // Exclusive on the registry: the board may go with this member.
  std::unique_lock registry(mu_);
  if (frozen_.load(std::memory_order_acquire) > 0) {
    if (sink != nullptr) sink->refused_frozen();
    return std::nullopt;
  }
  auto it = map_.find(board);
  if (it == map_.end()) return std::nullopt;
  std::shared_ptr<Slot> keep = it->second;  // outlives the lock if the board is unlinked
  std::unique_lock lock(keep->mu);
  Board& b = keep->board;
  if (!b.stored(member)) return std::nullopt;
  if (sink != nullptr && !sink->admit_change(board, member)) return std::nullopt;
  const std::size_t before = b.bytes();
  const auto rank = b.remove(member);
  if (!rank) return std::nullopt;
  keep->top.invalidate_from(*rank, top_bytes_);
  if (sink != nullptr) sink->member_removed(board, member);
  release(before - b.bytes());
  members_.fetch_sub(1, std::memory_order_relaxed);
  removals_.fetch_add(1, std::memory_order_relaxed);
  if (b.empty()) unlink_locked(it);
  return rank;
}

bool Registry::remove_board(std::string_view board, ChangeSink* sink) {
  std::unique_lock registry(mu_);
  if (frozen_.load(std::memory_order_acquire) > 0) {
    if (sink != nullptr) sink->refused_frozen();
    return false;
  }
  auto it = map_.find(board);
  if (it == map_.end()) return false;
  std::shared_ptr<Slot> keep = it->second;  // outlives the lock: unlinking drops the map's
  std::unique_lock lock(keep->mu);
  if (sink != nullptr && !sink->admit_change(board, {})) return false;
  if (sink != nullptr) sink->board_removed(board);
  unlink_locked(it);  // erases the map's key: board may view it, so the sink went first
  return true;
}

void Registry::clear(const std::function<void()>& then) {
  std::unique_lock registry(mu_);
  while (!map_.empty()) {
    auto it = map_.begin();
    std::shared_ptr<Slot> keep = it->second;  // unlink_locked erases the map's reference
    std::unique_lock lock(keep->mu);
    unlink_locked(it);
  }
  if (then) then();
}

void Registry::freeze(const std::function<void()>& then) {
  std::unique_lock registry(mu_);
  frozen_.fetch_add(1, std::memory_order_acq_rel);
  // An update holds only its board's lock: taking each once waits for those under way (they
  // checked frozen_ before it was raised); later ones see it.
  for (auto& [name, slot] : map_) std::unique_lock wait_for_change(slot->mu);
  then();
}

void Registry::thaw(bool clear_boards) {
  if (clear_boards) clear();
  frozen_.fetch_sub(1, std::memory_order_acq_rel);
}

RegistryStats Registry::stats() const {
  RegistryStats s;
  {
    std::shared_lock lock(mu_);
    s.boards = map_.size();
  }
  s.members = members_.load(std::memory_order_relaxed);
  s.bytes = used_bytes_.load(std::memory_order_relaxed);
  s.updates = updates_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  s.removals = removals_.load(std::memory_order_relaxed);
  s.reads = reads_.load(std::memory_order_relaxed);
  s.top_cache_hits = top_hits_.load(std::memory_order_relaxed);
  s.top_cache_misses = top_misses_.load(std::memory_order_relaxed);
  s.top_cache_bytes = top_bytes_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace boards
