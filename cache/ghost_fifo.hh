// ghost_fifo.hh — S3-FIFO's ghost: the hashes of keys that left the small queue recently, as
// 12-bit fingerprints with a coarse time, in a two-choice table of 16-bit words (about 1.3 bytes
// per cached entry). Kept apart from s3fifo.hh because it is a structure of its own with its own
// approximations (documented on the class), used by the S3-FIFO shard under its exclusive lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>

namespace cache::detail {

// `percent` of `bytes`, rounded down, without overflowing for any size_t `bytes`.
constexpr std::size_t percent_of(std::size_t bytes, std::size_t percent) {
  return bytes / 100 * percent + bytes % 100 * percent / 100;
}

// The ghost: which keys left small recently, as 12-bit fingerprints stamped with the time they
// left, where time counts the bytes of every entry that has entered the ghost. A fingerprint is
// remembered while less than `window_bytes` of later ghost entries have followed it: a FIFO of
// that many bytes, as libCacheSim's ghost is, without a queue. The table is a two-choice hash
// of 8-slot buckets of 16-bit words (fingerprint << 4 | coarse time), sized for the number of
// entries the cache holds, about 1.3 bytes per cached entry; a slot whose time is out of the
// window is free. Only touched under the shard's exclusive lock.
//
// Time runs in units of 3 to 6 per window (4 bits, wrapping at 16): a word's age is known to
// within one unit, so a key is remembered for its window give or take a unit (a third to a sixth
// of it), by its stamp's offset in its unit: on average the window exactly (issue 30: 32-bit
// words, 16-bit fingerprints and exact time, cost 2.6 B per cached entry; these 1.3).
//
// libCacheSim's ghost FIFO frees a record's room when a ghost hit removes it, so the others stay
// longer; here the window is stretched by 1 / (1 - the recent fraction of records removed by
// hits) to match. Approximations, all toward forgetting or a rare false hit: a fingerprint is 12
// bits (a false hit sends a new key to main instead of small: about 1 lookup of a new key in
// 400 at the window's usual load); when both buckets are full of live fingerprints the oldest is
// dropped; growing the table forgets everything.
class GhostFifo {
 public:
  // `window_percent`: the window as a share of the shard's bytes; it sizes the table.
  GhostFifo(std::size_t window_bytes, std::size_t window_percent)
      : window_(window_bytes), effective_window_(window_bytes), window_percent_(window_percent) {
    while ((window_ >> shift_) >= kWindowUnits) ++shift_;
  }

  // Forgets the key of `hash` if remembered; true if it was.
  bool remove(std::uint64_t hash) {
    std::uint16_t* slot = find(hash);
    if (slot == nullptr) return false;
    *slot = 0;
    removed_ += 1;
    update_window();
    return true;
  }

  // Remembers the key of `hash`, which held `charge` bytes (a no-op if already remembered).
  // `items` is the number of entries the cache holds now; it sizes the table.
  // Never throws, so an eviction cannot fail halfway.
  void insert(std::uint64_t hash, std::size_t charge, std::size_t items) noexcept {
    if (charge > window_ || !fit(items) || find(hash) != nullptr) return;
    const auto word = static_cast<std::uint16_t>((fingerprint(hash) << 4) | (now_unit() & 0xf));
    std::uint16_t* b1 = bucket(hash);
    std::uint16_t* b2 = bucket(hash * 0x9E3779B97F4A7C15ULL >> 32);
    std::uint16_t* target = nullptr;
    const std::uint32_t now = now_unit(), limit = live_limit();
    unsigned free1 = 0, free2 = 0;
    for (std::size_t i = 0; i < kWays; ++i) {
      free1 += !live(b1[i], now, limit);
      free2 += !live(b2[i], now, limit);
    }
    std::uint16_t* b = free1 >= free2 ? b1 : b2;
    if (free1 == 0 && free2 == 0) {  // drop the oldest of the 16
      target = b1;
      for (std::uint16_t* bb : {b1, b2}) {
        for (std::size_t i = 0; i < kWays; ++i) {
          if (age(bb[i]) > age(*target)) target = &bb[i];
        }
      }
    } else {
      for (std::size_t i = 0; i < kWays && target == nullptr; ++i) {
        if (!live(b[i], now, limit)) target = &b[i];
      }
    }
    *target = word;
    inserted_ += 1;
    if (inserted_ > kRateHistory) {  // exponential decay of the hit-rate estimate
      inserted_ /= 2;
      removed_ /= 2;
    }
    update_window();
    advance(charge);
  }

  void clear() {
    table_.reset();
    buckets_ = 0;
    now_ = 0;
    cursor_ = 0;
    sweep_unit_ = 0;
    inserted_ = removed_ = 0;
    effective_window_ = window_;
  }

 private:
  static constexpr std::size_t kWays = 8;
  static constexpr std::uint64_t kWindowUnits = 6;  // a window is 3 to 6 units of time
  // Ages run 0..15 (4 bits). A word is live up to kMaxLive units, and the sweep visits every
  // bucket at least once per unit, so a dead word is cleared before its age wraps to look live.
  static constexpr std::uint32_t kMaxLive = 13;
  static constexpr double kRateHistory = 4096;  // ghost insertions the hit rate spans

  static std::uint32_t fingerprint(std::uint64_t hash) {
    const auto fp = static_cast<std::uint32_t>(hash >> 52);
    return fp == 0 ? 1 : fp;
  }
  std::uint32_t now_unit() const { return static_cast<std::uint32_t>(now_ >> shift_); }
  // Units of time since the word was stamped (time runs in units of 2^shift_ bytes).
  std::uint32_t age(std::uint16_t word) const { return (now_unit() - word) & 0xf; }
  // age <= live_limit(): the word is in the window, to within a unit (see the class comment).
  // The limit is hoisted out of the bucket loops (for speed).
  std::uint32_t live_limit() const {
    const std::uint64_t limit = effective_window_ >> shift_;
    return limit > kMaxLive ? kMaxLive : static_cast<std::uint32_t>(limit);
  }
  static bool live(std::uint16_t word, std::uint32_t now, std::uint32_t limit) {
    return word != 0 && ((now - word) & 0xf) <= limit;
  }
  // A FIFO of window_ bytes that forgets a key on a ghost hit makes room for later ones: its
  // records live longer, by 1 / (1 - the fraction of records removed by hits). Estimated from
  // recent counts, capped at 4 windows (and by kMaxLive units: 2.2 to 4.3 windows).
  void update_window() {
    const double kept = inserted_ > removed_ ? (inserted_ - removed_) / inserted_ : 0.0;
    effective_window_ =
        kept * 4 <= 1 ? 4 * window_ : static_cast<std::size_t>(static_cast<double>(window_) / kept);
  }
  std::uint16_t* bucket(std::uint64_t h) {
    return &table_[(((h & 0xffffffff) * buckets_) >> 32) * kWays];
  }
  // Every set of a new key runs this once or twice (it asks the ghost; an eviction from small
  // inserts into it), so it is written for speed: a branch-free test, four words at a time,
  // tells whether any fingerprint in the bucket matches, and only then (rarely) are the slots
  // scanned in order. Returns the same slot as a plain scan in order would. Forced inline: GCC
  // stopped inlining it after an unrelated edit to insert (+25 instructions per evicting set).
  [[gnu::always_inline]] std::uint16_t* find(std::uint64_t hash) {
    if (buckets_ == 0) return nullptr;
    const std::uint32_t fp = fingerprint(hash);
    const std::uint64_t pattern = std::uint64_t{fp << 4} * 0x0001000100010001ULL;
    for (std::uint16_t* b : {bucket(hash), bucket(hash * 0x9E3779B97F4A7C15ULL >> 32)}) {
      if (!any_fingerprint(b, pattern)) continue;
      const std::uint32_t now = now_unit(), limit = live_limit();
      for (std::size_t i = 0; i < kWays; ++i) {
        if ((b[i] >> 4) == fp && live(b[i], now, limit)) return &b[i];
      }
    }
    return nullptr;
  }
  // Whether any of the bucket's 8 words has the fingerprint in `pattern` (fp << 4 in every
  // 16-bit lane) as its top 12 bits: XOR and masking off the time leave such a lane zero, and
  // the classic has-a-zero-lane test runs on 16-bit lanes. Exact (the test's false positives
  // only ever sit above a true zero lane). A free word (0) never matches: fp is never 0.
  static bool any_fingerprint(const std::uint16_t* b, std::uint64_t pattern) {
    constexpr std::uint64_t kFp = 0xfff0fff0fff0fff0ULL, kOnes = 0x0001000100010001ULL;
    constexpr std::uint64_t kHighBits = 0x8000800080008000ULL;
    std::uint64_t zero = 0;
    for (std::size_t i = 0; i < kWays; i += 4) {
      std::uint64_t w;
      std::memcpy(&w, b + i, sizeof w);
      const std::uint64_t x = (w ^ pattern) & kFp;
      zero |= (x - kOnes) & ~x & kHighBits;
    }
    return zero != 0;
  }
  // Room for the fingerprints the window holds, at a load of at most 95%; grows to a load of
  // 85%. A window of p% of the bytes holds about p% of `items` live fingerprints, whatever the
  // stretch (a stretched window's extra records are those hits removed), so the table is sized
  // for 1.1 × p% of `items` (it was 90% of `items` whatever p: 4.2 B per cached entry at p = 50
  // with 32-bit words; issue 30). Two choices of 8 slots each rarely overflow even at 95%; when
  // they do, the oldest fingerprint of the two buckets goes.
  // Never throws: without memory for a bigger table it keeps the old one (false if none).
  bool fit(std::size_t items) noexcept {
    const std::size_t wanted = items * window_percent_ / 100 * 11 / 10 + 1;
    if (buckets_ != 0 && wanted * 100 <= buckets_ * kWays * 95) return true;
    const std::size_t buckets = (wanted * 100 / 85) / kWays + 1;
    try {
      table_ = std::make_unique<std::uint16_t[]>(buckets * kWays);  // zeroed: all free
    } catch (const std::bad_alloc&) {
      return buckets_ != 0;
    }
    buckets_ = buckets;
    cursor_ = 0;
    sweep_unit_ = now_ >> shift_;
    return true;
  }
  // Moves time on by `charge` bytes a unit at a time, so that no unit's sweep is skipped (an
  // entry is at most a window, 6 units).
  void advance(std::size_t charge) noexcept {
    const std::uint64_t end = now_ + charge;
    while ((now_ >> shift_) < (end >> shift_)) {
      now_ = ((now_ >> shift_) + 1) << shift_;
      sweep();
    }
    now_ = end;
    sweep();
  }
  // Clears out-of-window words so none lives long enough for its 4-bit age to wrap around and
  // look recent again: one pass over the table per unit of time, spread over the insertions in
  // proportion to the bytes they add (about one bucket per insertion when entries are alike). A
  // unit that ends before its pass does finishes it first (then all at once). So a bucket is
  // visited at least once every 2 units, and a word live at one visit (age <= 13) is at most 15
  // at the next, where it is cleared if out of the window.
  void sweep() noexcept {
    const std::uint64_t unit = now_ >> shift_;
    std::size_t target = buckets_;
    if (unit == sweep_unit_) {
      const std::uint64_t into = now_ & ((std::uint64_t{1} << shift_) - 1);
      target = shift_ <= 32 ? static_cast<std::size_t>((into * buckets_) >> shift_)
                            : static_cast<std::size_t>(((into >> (shift_ - 32)) * buckets_) >> 32);
    }
    if (cursor_ < target) {
      const std::uint32_t now = now_unit(), limit = live_limit();
      for (; cursor_ < target; ++cursor_) {
        std::uint16_t* b = &table_[cursor_ * kWays];
        for (std::size_t i = 0; i < kWays; ++i) {
          if (!live(b[i], now, limit)) b[i] = 0;
        }
      }
    }
    if (unit != sweep_unit_) {  // the pass is done: the next starts with this unit
      cursor_ = 0;
      sweep_unit_ = unit;
    }
  }

  std::unique_ptr<std::uint16_t[]> table_;
  std::size_t buckets_ = 0;
  std::size_t cursor_ = 0;        // the sweep's next bucket in this unit's pass
  std::uint64_t sweep_unit_ = 0;  // the unit of time the sweep's pass belongs to
  std::uint64_t now_ = 0;         // bytes that have entered the ghost so far
  const std::size_t window_;
  std::size_t effective_window_;
  const std::size_t window_percent_;
  double inserted_ = 0;  // recent ghost insertions, and how many of them a hit removed
  double removed_ = 0;
  unsigned shift_ = 0;
};

}  // namespace cache::detail
