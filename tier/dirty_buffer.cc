// dirty_buffer.cc — see dirty_buffer.hh.
#include "tier/dirty_buffer.hh"

#include <algorithm>
#include <memory>

#include "tier/board_rows.hh"

namespace tier {

std::optional<KeyLookup> DirtyBuffer::lookup(std::string_view key) const {
  const auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  const Key& d = it->second;
  if (d.tombstone || !ttl_left(d.expires_at_ms)) return KeyLookup{};
  return KeyLookup{
      KeyLookup::Kind::found, std::make_shared<const std::string>(d.value), {}, d.expires_at_ms};
}

bool DirtyBuffer::fits(std::string_view key, std::string_view value, std::size_t reserved,
                       std::size_t max) const {
  std::size_t freed = 0;
  if (auto it = keys_.find(key); it != keys_.end()) freed = dirty_size(key, it->second.value);
  return bytes_ + reserved - freed + dirty_size(key, value) <= max;
}

bool DirtyBuffer::write(const KeyWrite& w) {
  touch();
  auto [it, inserted] = keys_.try_emplace(std::string(w.key));
  Key& d = it->second;
  const bool had_value = !inserted && !d.tombstone && ttl_left(d.expires_at_ms).has_value();
  if (!inserted) bytes_ -= dirty_size(w.key, d.value);
  d.tombstone = w.kind == Kind::del;
  d.value.assign(d.tombstone ? std::string_view() : w.value);
  d.expires_at_ms = d.tombstone ? 0 : w.expires_at_ms;
  d.version = ++version_;
  bytes_ += dirty_size(w.key, d.value);
  return had_value;
}

std::size_t DirtyBuffer::row_growth(std::string_view board, std::string_view member) const {
  if (member.empty()) return drops_.contains(board) ? 0 : board.size();
  const std::string key = row_key(board, member);
  return rows_.contains(key) ? 0 : row_size(key);
}

void DirtyBuffer::write_row(const store::Write& row) {
  touch();
  const std::uint64_t version = ++version_;
  if (row.kind == Kind::board_drop) {
    // The drop supersedes every dirty row of the board (a scan: drops are rare).
    const std::string prefix = row_key(row.key, {});
    for (auto it = rows_.begin(); it != rows_.end();) {
      if (it->first.starts_with(prefix)) {
        bytes_ -= row_size(it->first);
        it = rows_.erase(it);
      } else {
        ++it;
      }
    }
    auto [it, inserted] = drops_.try_emplace(row.key, version);
    if (inserted) bytes_ += row.key.size();
    it->second = version;
    return;
  }
  std::string key = row_key(row.key, row.member);
  const std::size_t size = row_size(key);
  auto [it, inserted] = rows_.try_emplace(std::move(key));
  if (inserted) bytes_ += size;
  Row& d = it->second;
  d.tombstone = row.kind == Kind::board_remove;
  d.score = row.score;
  d.seq = row.seq;
  d.version = version;
}

DirtyBuffer::Snapshot DirtyBuffer::snapshot() const {
  Snapshot f;
  f.batch.reserve(keys_.size() + drops_.size() + rows_.size());
  f.keys.reserve(keys_.size());
  for (const auto& [key, d] : keys_) {
    store::Write w;
    w.kind = d.tombstone ? Kind::del : Kind::put;
    w.key = key;
    w.value = d.value;
    w.expires_at_ms = d.expires_at_ms;
    f.batch.push_back(std::move(w));
    f.keys.emplace_back(key, d.version);
  }
  // Drops before rows: a row still dirty after its board's drop was written after the drop.
  for (const auto& [board, version] : drops_) {
    f.batch.push_back(store::Write::board_drop_rows(board));
    f.drops.emplace_back(board, version);
  }
  for (const auto& [key, row] : rows_) {
    const auto [board, member] = split_row_key(key);
    f.batch.push_back(row.tombstone
                          ? store::Write::board_remove_row(board, member)
                          : store::Write::board_set_row(board, member, row.score, row.seq));
    f.rows.emplace_back(key, row.version);
  }
  return f;
}

void DirtyBuffer::forget(const Snapshot& f, std::chrono::steady_clock::time_point snapshot_at) {
  for (const auto& [key, version] : f.keys) {
    auto it = keys_.find(key);
    if (it != keys_.end() && it->second.version == version) {
      bytes_ -= dirty_size(key, it->second.value);
      keys_.erase(it);
    }
  }
  for (const auto& [key, version] : f.rows) {
    auto it = rows_.find(key);
    if (it != rows_.end() && it->second.version == version) {
      bytes_ -= row_size(key);
      rows_.erase(it);
    }
  }
  for (const auto& [board, version] : f.drops) {
    auto it = drops_.find(board);
    if (it != drops_.end() && it->second == version) {
      bytes_ -= board.size();
      drops_.erase(it);
    }
  }
  // What is left was written after the snapshot.
  if (!empty()) since_ = std::max(since_, snapshot_at);
}

void DirtyBuffer::erase_up_to(std::uint64_t version) {
  std::erase_if(keys_, [&](const auto& e) {
    if (e.second.version > version) return false;
    bytes_ -= dirty_size(e.first, e.second.value);
    return true;
  });
  std::erase_if(rows_, [&](const auto& e) {
    if (e.second.version > version) return false;
    bytes_ -= row_size(e.first);
    return true;
  });
  std::erase_if(drops_, [&](const auto& e) {
    if (e.second > version) return false;
    bytes_ -= e.first.size();
    return true;
  });
}

}  // namespace tier
