// key_table.cc — see key_table.hh.
#include "tier/key_table.hh"

#include <algorithm>

namespace tier {

KeyState* KeyTable::find_locked(std::string_view key) {
  const auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

KeyTable::Entry& KeyTable::entry_locked(std::string_view key) {
  if (auto it = keys_.find(key); it != keys_.end()) return *it;
  return insert_locked(key);
}

// A key entering the table clean, in a spare entry when there is one (its key string's capacity
// reused). Its version is fresh (clock_): a read begun under an earlier entry of the key,
// forgotten since, can never take it for the state it began under.
KeyTable::Entry& KeyTable::insert_locked(std::string_view key) {
  KeyMap<KeyState>::iterator it;
  if (spare_keys_.empty()) {
    it = keys_.emplace(std::string(key), KeyState{}).first;
  } else {
    auto node = std::move(spare_keys_.back());
    spare_keys_.pop_back();
    node.key().assign(key);
    node.mapped() = KeyState{};
    it = keys_.insert(std::move(node)).position;
  }
  bump_locked(it->second);
  return *it;
}

void KeyTable::moved_locked(std::string_view key) {
  if (auto it = keys_.find(key); it != keys_.end()) bump_locked(it->second);
}

void KeyTable::erase_if_clean_locked(std::string_view key) {
  if (auto it = keys_.find(key); it != keys_.end() && it->second.clean()) {
    // Kept, a few, for the next keys to enter (insert_locked): no allocation per write.
    if (spare_keys_.size() < kSpareKeys) {
      spare_keys_.push_back(keys_.extract(it));
    } else {
      keys_.erase(it);
    }
  }
}

bool KeyTable::unmoved_locked(std::string_view key, std::uint64_t version, std::uint64_t epoch) {
  const auto it = keys_.find(key);
  return epoch == core_.epoch && it != keys_.end() && it->second.version == version;
}

// A write of unknown outcome may still appear in the store (e.g. after PostgreSQL restarts).
bool KeyTable::may_fill_locked(std::string_view key, bool dirty) {
  if (all_unknown_ || dirty) return false;
  const auto it = keys_.find(key);
  return it == keys_.end() || (it->second.writing == 0 && !it->second.unknown);
}

bool KeyTable::unknown_locked(std::string_view key) {
  if (all_unknown_) return true;
  const auto it = keys_.find(key);
  return it != keys_.end() && it->second.unknown;
}

// The store alone knows whether the write landed. Bounded by max_dirty bytes; past it, no key
// is filled until a reset (every miss reads the store).
void KeyTable::mark_unknown_locked(const std::string& key) {
  core_.cache.del(key);
  moved_locked(key);
  if (all_unknown_) return;
  if (auto it = keys_.find(key); it != keys_.end() && it->second.unknown) return;
  if (unknown_bytes_ + key.size() + kOpOverhead > core_.options.max_dirty) {
    all_unknown_ = true;
    for (auto& [k, state] : keys_) state.unknown = false;
    std::erase_if(keys_, [](const auto& e) { return e.second.clean(); });
    unknown_bytes_ = 0;
    return;
  }
  state_locked(key).unknown = true;
  unknown_bytes_ += key.size() + kOpOverhead;
}

void KeyTable::clear_unknown_locked(const std::string& key) {
  if (unknown_bytes_ == 0) return;
  if (auto it = keys_.find(key); it != keys_.end() && it->second.unknown) {
    unknown_bytes_ -= key.size() + kOpOverhead;
    it->second.unknown = false;
    if (it->second.clean()) keys_.erase(it);
  }
}

void KeyTable::reset_locked() {
  for (auto& [key, state] : keys_) {
    state.read.reset();  // later misses start fresh reads, ordered after the clear
    state.unknown = false;
  }
  std::erase_if(keys_, [](const auto& e) { return e.second.clean(); });
  unknown_bytes_ = 0;
  all_unknown_ = false;
}

}  // namespace tier
