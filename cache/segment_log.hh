// segment_log.hh — S3-FIFO's queues as logs: items (log_item.hh) appended to fixed-size segments,
// consumed item by item at the head, a segment reused once its head has passed its end.
//
// SegmentArena owns the memory: segments carved from anonymous mappings of growing size (8
// segments, then doubling up to 4,096), never touched before use, so a segment costs resident
// memory only for the pages written (a mapping is one allocation for the kernel, not one per
// segment: per-segment heap allocations cost the first attempt ~4 B per item through jemalloc,
// cache/README.md). Freed segments are kept for reuse; beyond one spare, their pages are
// handed back with madvise(MADV_DONTNEED), so a cache that shrinks gives memory back.
//
// Every segment starts with a 16-byte SegmentHeader (log_item.hh): its base time and the bits of
// the versions its items share. SegmentQueue is one FIFO: a ring of segment addresses (it allocates
// only when it grows, so a steady state allocates nothing), the offset of its oldest item in the
// first, and how many bytes the last (the open tail) holds. An item never spans two segments; a
// segment closed with room left ends with a 0 byte (no key is empty). It also counts the key and
// value bytes of its items, live or dead (what counts toward the shard's budget).
// Both are used only under the shard's exclusive lock.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "cache/log_item.hh"

namespace cache::detail {

class SegmentArena {
 public:
  // segment_bytes: a power of two, at least a page.
  explicit SegmentArena(std::size_t segment_bytes) : segment_bytes_(segment_bytes) {}
  ~SegmentArena() { release_all(); }
  SegmentArena(const SegmentArena&) = delete;
  SegmentArena& operator=(const SegmentArena&) = delete;

  std::size_t segment_bytes() const { return segment_bytes_; }
  // The header of the segment holding the item at p.
  static const SegmentHeader& segment_of(const char* p, std::uintptr_t segment_mask) {
    return *reinterpret_cast<const SegmentHeader*>(reinterpret_cast<std::uintptr_t>(p) &
                                                   segment_mask);
  }
  std::uintptr_t segment_mask() const { return ~(std::uintptr_t{segment_bytes_} - 1); }
  // Bytes of the segments in use or kept touched for reuse: an upper bound on the resident
  // memory of the logs (a tail segment's unwritten pages are not resident: tail_slack).
  std::size_t held_bytes() const { return (in_use_ + touched_.size()) * segment_bytes_; }

  // A free segment; throws std::bad_alloc when no memory can be mapped.
  char* take() {
    char* s;
    if (!touched_.empty()) {
      s = pop(touched_);
    } else if (!clean_.empty()) {
      s = pop(clean_);
    } else {
      if (bump_ == bump_end_) map_chunk();
      s = bump_;
      bump_ += segment_bytes_;
    }
    ++in_use_;
    return s;
  }

  // Makes sure take() can hand out n segments without mapping more memory (may throw).
  void reserve(std::size_t n) {
    while (touched_.size() + clean_.size() +
               static_cast<std::size_t>(bump_end_ - bump_) / segment_bytes_ <
           n) {
      map_chunk();
    }
  }

  // Takes back a segment from take(). Never throws (the free lists have room for every segment).
  void give(char* s) noexcept {
    --in_use_;
    if (touched_.size() < kTouchedSpares) {
      touched_.push_back(s);
    } else {
      ::madvise(s, segment_bytes_, MADV_DONTNEED);
      clean_.push_back(s);
    }
  }

  // Unmaps everything (the queues have forgotten their segments).
  void release_all() noexcept {
    for (const auto& [base, bytes] : chunks_) ::munmap(base, bytes);
    chunks_.clear();
    touched_.clear();
    clean_.clear();
    bump_ = bump_end_ = nullptr;
    mapped_ = 0;
    in_use_ = 0;
    next_chunk_segments_ = kFirstChunkSegments;
  }

 private:
  static constexpr std::size_t kTouchedSpares = 1;
  static constexpr std::size_t kFirstChunkSegments = 8;
  static constexpr std::size_t kMaxChunkSegments = 4096;

  static char* pop(std::vector<char*>& v) {
    char* s = v.back();
    v.pop_back();
    return s;
  }

  void map_chunk() {
    const std::size_t segments = next_chunk_segments_;
    const std::size_t bytes = segments * segment_bytes_;
    const std::size_t total = mapped_ / segment_bytes_ + segments;
    touched_.reserve(total);  // so give() never allocates
    clean_.reserve(total);
    chunks_.reserve(chunks_.size() + 1);
    // Segments are aligned to their size, so an item finds its segment's header by masking its
    // address: map a segment more and trim both ends.
    void* raw = ::mmap(nullptr, bytes + segment_bytes_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + segment_bytes_ - 1) & ~(segment_bytes_ - 1);
    if (aligned > start) ::munmap(raw, aligned - start);
    if (const std::uintptr_t end = aligned + bytes; end < start + bytes + segment_bytes_) {
      ::munmap(reinterpret_cast<void*>(end), start + bytes + segment_bytes_ - end);
    }
    void* p = reinterpret_cast<void*>(aligned);
    // The free lists get the rest of the current chunk first, so no segment is ever lost.
    while (bump_ != bump_end_) {
      clean_.push_back(bump_);
      bump_ += segment_bytes_;
    }
    chunks_.emplace_back(static_cast<char*>(p), bytes);
    bump_ = static_cast<char*>(p);
    bump_end_ = bump_ + bytes;
    mapped_ += bytes;
    if (next_chunk_segments_ < kMaxChunkSegments) next_chunk_segments_ *= 2;
  }

  const std::size_t segment_bytes_;
  std::vector<std::pair<char*, std::size_t>> chunks_;
  std::vector<char*>
      touched_;               // free segments whose pages may be resident (at most kTouchedSpares)
  std::vector<char*> clean_;  // free segments handed back to the kernel (or never touched)
  char* bump_ = nullptr;      // the current chunk's segments not yet handed out
  char* bump_end_ = nullptr;
  std::size_t mapped_ = 0;  // bytes of every mapping
  std::size_t in_use_ = 0;  // segments handed out and not given back
  std::size_t next_chunk_segments_ = kFirstChunkSegments;
};

class SegmentQueue {
 public:
  bool empty() const { return count_ == 0; }
  // Key and value bytes of the items in the queue, live or dead.
  std::size_t charge() const { return charge_; }
  // The oldest item; only when !empty().
  char* head() const { return front() + head_; }
  // Bytes of the open tail segment beyond the 4 KiB pages written so far: not resident if the
  // segment was fresh (a reused one may still hold its old pages, so this is an estimate).
  std::size_t tail_slack(std::size_t segment_bytes) const {
    if (count_ == 0) return 0;
    const std::size_t touched = (tail_used_ + 4095) / 4096 * 4096;
    return touched < segment_bytes ? segment_bytes - touched : 0;
  }

  // Room for an item of `bytes` (at most a segment less its header) charging `charge`, at the
  // tail, in a segment whose header has `version_high` and a base time within
  // LogItem::kShortExpiryMs before `now_ms`, never after it (else a new segment is opened,
  // with base `now_ms`);
  // nullptr when no segment can be had (nothing changed then).
  char* try_append(std::size_t bytes, std::size_t charge, SegmentArena& arena, std::uint64_t now_ms,
                   std::uint16_t version_high) noexcept {
    const std::size_t room = arena.segment_bytes();
    // A clock that went back would leave the base after now: a new segment then too.
    if (count_ == 0 || tail_used_ + bytes > room || tail_header().version_high != version_high ||
        tail_header().base_ms + LogItem::kShortExpiryMs <= now_ms ||
        tail_header().base_ms > now_ms) {
      if (count_ == ring_.size() && !grow()) return nullptr;
      char* s;
      try {
        s = arena.take();
      } catch (const std::bad_alloc&) {
        return nullptr;
      }
      if (count_ > 0 && tail_used_ < room) back()[tail_used_] = 0;  // closes the old tail
      ring_[(first_ + count_) % ring_.size()] = s;
      ++count_;
      const SegmentHeader header{now_ms, version_high, {}};
      std::memcpy(s, &header, sizeof header);
      tail_used_ = sizeof(SegmentHeader);
    }
    char* p = back() + tail_used_;
    tail_used_ += bytes;
    charge_ += charge;
    return p;
  }

  // Consumes the head item (of `charge` bytes of key and value), freeing its segment if that
  // was the segment's last.
  void pop_head(std::size_t charge, SegmentArena& arena) noexcept {
    head_ += LogItem::bytes(head());
    charge_ -= charge;
    if (count_ == 1) {
      if (head_ == tail_used_) {  // the queue is empty: its one segment goes back
        arena.give(front());
        count_ = 0;
        head_ = tail_used_ = sizeof(SegmentHeader);
      }
      return;
    }
    if (head_ == arena.segment_bytes() || front()[head_] == 0) {  // past a closed segment's end
      arena.give(front());
      first_ = (first_ + 1) % ring_.size();
      --count_;
      head_ = sizeof(SegmentHeader);
    }
  }

  // Forgets every item and hands every segment back.
  void clear(SegmentArena& arena) noexcept {
    for (std::size_t i = 0; i < count_; ++i) arena.give(ring_[(first_ + i) % ring_.size()]);
    first_ = count_ = 0;
    head_ = tail_used_ = sizeof(SegmentHeader);
    charge_ = 0;
  }

 private:
  char* front() const { return ring_[first_]; }
  const SegmentHeader& tail_header() const {
    return *reinterpret_cast<const SegmentHeader*>(back());
  }
  char* back() const { return ring_[(first_ + count_ - 1) % ring_.size()]; }
  // Doubles the ring, keeping the order; false without memory.
  bool grow() noexcept {
    std::vector<char*> bigger;
    try {
      bigger.resize(ring_.empty() ? 16 : ring_.size() * 2);
    } catch (const std::bad_alloc&) {
      return false;
    }
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = ring_[(first_ + i) % ring_.size()];
    ring_.swap(bigger);
    first_ = 0;
    return true;
  }

  std::vector<char*> ring_;  // segments_ in a circle: count_ of them from first_, oldest first
  std::size_t first_ = 0;
  std::size_t count_ = 0;                          // the last is the open tail
  std::size_t head_ = sizeof(SegmentHeader);       // offset of the oldest item in the first
  std::size_t tail_used_ = sizeof(SegmentHeader);  // bytes written in the last, its header too
  std::size_t charge_ = 0;
};

}  // namespace cache::detail
