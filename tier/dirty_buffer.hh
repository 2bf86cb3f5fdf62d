// dirty_buffer.hh — write-behind's dirty buffer: the latest state of every key and board row not
// yet durable (key → value or tombstone, coalesced; (board, member) → score or tombstone; boards
// dropped), with what it holds in bytes and the versions that tell a rewrite during a flush from
// the state the flush made durable.
// Invariants: bytes() is the sum of what the entries count for (dirty_size, row_size, a dropped
// board's name); every change takes a fresh version; since() is at most the time of the oldest
// change still held. Not thread-safe: WriteBehindBuffer holds it under TierCore::mu.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tier/core.hh"

namespace tier {

class DirtyBuffer {
 public:
  // What one flush commits, and the versions that tell which entries it made durable.
  struct Snapshot {
    std::vector<store::Write> batch;
    std::vector<std::pair<std::string, std::uint64_t>> keys, rows, drops;
  };

  // What a read of the key gets from the buffer: its value, or absent (deleted, or expired: the
  // flush still writes it with its expiry, and the store drops it); nullopt: not dirty.
  std::optional<KeyLookup> lookup(std::string_view key) const;
  bool contains(std::string_view key) const { return keys_.contains(key); }
  // Whether a write of (key, value) fits under max (with `reserved` bytes held for rows).
  bool fits(std::string_view key, std::string_view value, std::size_t reserved,
            std::size_t max) const;
  // A PUT (value) or DELETE (tombstone) of the key; true if the key held a value before.
  bool write(const KeyWrite& w);
  // What a board row can add (0 if it is dirty already): reserve_row's measure.
  std::size_t row_growth(std::string_view board, std::string_view member) const;
  void write_row(const store::Write& row);

  bool empty() const { return keys_.empty() && rows_.empty() && drops_.empty(); }
  std::size_t bytes() const { return bytes_; }
  std::size_t items() const { return keys_.size() + rows_.size() + drops_.size(); }
  std::uint64_t version() const { return version_; }
  std::chrono::steady_clock::time_point since() const { return since_; }

  Snapshot snapshot() const;
  // The flush taken at snapshot_at committed: the entries not rewritten meanwhile are clean.
  void forget(const Snapshot& f, std::chrono::steady_clock::time_point snapshot_at);
  // A reset committed: the changes made up to `version` (before it) go.
  void erase_up_to(std::uint64_t version);

 private:
  struct Key {
    std::string value;
    std::uint64_t expires_at_ms = 0;  // the value's expiry (0: never); an expired one is absent
    bool tombstone = false;
    std::uint64_t version = 0;
  };
  struct Row {
    double score = 0;
    std::uint64_t seq = 0;
    bool tombstone = false;
    std::uint64_t version = 0;
  };
  void touch() {
    if (empty()) since_ = std::chrono::steady_clock::now();
  }

  KeyMap<Key> keys_;
  KeyMap<Row> rows_;             // by row_key (board_rows.hh)
  KeyMap<std::uint64_t> drops_;  // boards dropped since the last flush -> version
  std::size_t bytes_ = 0;
  std::uint64_t version_ = 0;
  std::chrono::steady_clock::time_point since_{};
};

}  // namespace tier
