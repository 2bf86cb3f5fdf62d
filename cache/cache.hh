// cache.hh — the public contract of the in-memory cache library (no networking).
//
// What counts toward maxmem: key bytes + value bytes of every stored entry, nothing else
//   (space_used() is exactly that sum). S3-FIFO also counts the bytes of items replaced, deleted
//   or expired until its logs' heads pass them (cache/s3fifo.hh), so it may evict while
//   space_used() is below maxmem. Per-entry overhead (header, table slot, malloc) is
//   real memory but not counted, as in the course interface; optimizations/README.md measures it.
// Sharding: the cache is split into `shards` independent shards chosen by key hash, each owning
//   maxmem/shards bytes of budget and its own lock and evictor. With shards == 1 (the default)
//   eviction order is exact and global. space_used() never exceeds maxmem, not even transiently:
//   each shard evicts before it inserts, under its exclusive lock.
// Eviction: FIFO, LRU, CLOCK, S3-FIFO, SIEVE, or none (a set that does not fit is refused).
// Thread safety: every method may be called from any thread. Reads (get) take the shard's lock
//   in shared mode (SharedReads) or exclusively (ExclusiveAll, the baseline); writes take it
//   exclusively. The read path mutates no evictor state except through atomics (CLOCK and
//   SIEVE bits, S3-FIFO counter) or a separate small lock (LRU list).
// Value lifetime: get() hands the value to a ValueSink *while the shard lock is held*; the view
//   is valid only during the call. The sink must not call back into the cache.
// Expiry: a set may give the item a TTL; once it has passed, the item is never returned (a get
//   misses, a set creates, a del finds nothing) and reclaim_expired() frees it without anyone
//   reading it. Stats::expired counts the items removed because they expired.
// Versions and conditions: every successful set gives the item a new version (Item::version);
//   a conditional set or del checks the key's current version and writes in one step, under the
//   shard's exclusive lock (compare-and-set).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cache/value_sink.hh"

namespace cache {

inline constexpr std::size_t kMaxKeyBytes = 250;  // keys are 1..kMaxKeyBytes bytes
inline constexpr double kDefaultMaxLoadFactor = 0.75;
inline constexpr std::chrono::milliseconds kMaxTtl{315'360'000'000LL};  // ten years

// Eviction policy, chosen at construction.
enum class Evictor : std::uint8_t {
  none,    // never evict: a set that does not fit is refused (SetResult::no_space)
  fifo,    // evict the oldest insertion; hits change nothing
  lru,     // evict the least recently used; a hit moves the entry under a small per-shard lock
  clock,   // CLOCK (second chance) over the hash table; a hit sets an atomic bit, no lock
  s3fifo,  // S3-FIFO: small FIFO, main CLOCK, ghost of evicted keys; a hit bumps an atomic counter
  sieve,   // SIEVE: a FIFO list whose hand spares visited entries; a hit sets an atomic bit
};
// The default, chosen from the hit-ratio, memory and throughput measurements in cache/README.md
// and optimizations/README.md (issue 16): the best hit ratio whose hit path takes no lock.
inline constexpr Evictor kDefaultEvictor = Evictor::s3fifo;

// Locking scheme, chosen at construction (the "shared_lock reads" optimization and its baseline).
enum class LockScheme : std::uint8_t {
  shared_reads,   // std::shared_mutex: gets run concurrently under std::shared_lock
  exclusive_all,  // std::mutex for every operation (baseline)
};

// Hashes a key. Any function works (even a constant one, slowly): the cache mixes its output.
// It must not throw: a hasher that throws terminates the program (see key_hasher.hh).
using Hasher = std::function<std::size_t(std::string_view)>;

enum class SetResult : std::uint8_t {
  created,   // the key was new
  replaced,  // the key existed; its value (and accounting) was replaced
  bad_key,   // key empty or longer than kMaxKeyBytes; nothing changed
  too_big,   // key+value exceed maxmem (or the shard's share of it); nothing changed
  no_space,  // Evictor::none and the entry does not fit in the free space; nothing changed
  precondition_failed,  // the write's Condition said no; nothing changed
  bad_ttl,              // a TTL below zero or over kMaxTtl; nothing changed
};

enum class DelResult : std::uint8_t {
  deleted,
  absent,               // no such key (or it had expired)
  precondition_failed,  // the Condition said no; nothing changed
};

// A conditional write's test, run under the shard's exclusive lock with the key's current
// version, or nullptr when the key is absent (or expired): true lets the write go ahead.
using Condition = FunctionRef<bool(const std::uint64_t* current_version)>;

struct WriteOptions {
  // How long the item lives; zero: it never expires, and a key it replaces loses any TTL it had
  // (as Redis's SET). Milliseconds since the set, up to kMaxTtl.
  std::chrono::milliseconds ttl{0};
  const Condition* condition = nullptr;  // nullptr: unconditional
};

struct Written {
  SetResult result;
  std::uint64_t version = 0;  // the item's new version (created or replaced)
};
const char* to_string(SetResult r);
const char* to_string(Evictor e);
const char* to_string(LockScheme l);
// Parses "none", "fifo", "lru", "clock", "s3fifo", "sieve"; nullopt for anything else.
std::optional<Evictor> parse_evictor(std::string_view name);

struct Options {
  std::size_t maxmem = 64u << 20;  // bytes of key+value the cache may hold
  // The linear-probing table's fill before it grows, (0, 0.95]; S3-FIFO's two-choice bucket
  // index ignores it and fills to 95% (cache/bucket_index.hh).
  double max_load_factor = kDefaultMaxLoadFactor;
  Evictor evictor = kDefaultEvictor;
  Hasher hasher = {};   // empty: std::hash<std::string_view>
  unsigned shards = 1;  // 1..1024; each shard gets maxmem/shards bytes
  LockScheme lock = LockScheme::shared_reads;
  // S3-FIFO only: small's share of each shard's bytes and the ghost's window, in percent
  // (libCacheSim's defaults are 10 and 90; ours were chosen by measurement, cache/README.md).
  unsigned s3fifo_small_percent = 5;   // 1..50
  unsigned s3fifo_ghost_percent = 50;  // 1..100
  // Where expiry reads the time (monotonic milliseconds); empty: std::chrono::steady_clock.
  std::function<std::chrono::milliseconds()> clock = {};
};

// A consistent-enough snapshot: each shard is read atomically, shards one after another.
struct Stats {
  std::size_t items = 0;
  std::size_t space_used = 0;  // key+value bytes
  std::size_t maxmem = 0;
  std::uint64_t evictions = 0;  // entries removed to make room (not deletes, not replacements)
  std::uint64_t expired = 0;    // entries removed because their TTL had passed
  // Bytes the cache has mapped itself, outside the heap: S3-FIFO's segments (those its logs hold
  // or keep spare, less the pages of open tails not yet written: an estimate of their resident
  // memory; its items live there) and its index once it is 64 KiB or more. 0 for the others.
  std::size_t mapped_bytes = 0;
};

namespace detail {
class CacheImpl;  // the type-erased shards; see sharded_cache.hh
}

class Cache {
 public:
  // The course interface: Cache(maxmem, max_load_factor, evictor, hasher).
  // Throws std::invalid_argument for maxmem == 0, a load factor outside (0, 0.95], or a shard
  // count outside 1..1024 or larger than maxmem.
  explicit Cache(std::size_t maxmem, double max_load_factor = kDefaultMaxLoadFactor,
                 Evictor evictor = kDefaultEvictor, Hasher hasher = {});
  explicit Cache(Options options);
  ~Cache();
  Cache(Cache&&) noexcept;
  Cache& operator=(Cache&&) noexcept;
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // Stores a copy of `value` under `key`, evicting other entries first if needed.
  // On any result other than created/replaced, the cache is unchanged (an old value stays).
  SetResult set(std::string_view key, std::string_view value);
  // The same with a TTL and/or a condition; on created/replaced, also the item's new version.
  Written set(std::string_view key, std::string_view value, const WriteOptions& options);

  // The cstring value path: on a hit, calls sink(value) once with a view of the stored bytes,
  // under the shard lock, and returns true. No std::string is built and nothing is allocated.
  // A miss (or an invalid key) returns false without calling the sink.
  bool get(std::string_view key, ValueSink sink) const;

  // The same, handing over the item with its version and time left.
  bool get_item(std::string_view key, ItemSink sink) const;

  // Convenience copy for tests and tools (allocates): the value, or nullopt on a miss.
  std::optional<std::string> get(std::string_view key) const;

  // Removes key; true if it was present.
  bool del(std::string_view key);
  // Removes key if condition says yes (compare-and-delete).
  DelResult del(std::string_view key, const Condition& condition);

  // One step of the expiry sweep: in every shard holding items with a TTL, looks at the next
  // 1/steps_per_sweep of its slots (in chunks, releasing the lock between them) and frees the
  // items whose TTL has passed. Called steps_per_sweep times, it has looked at every slot once.
  // Returns the number of items freed.
  std::size_t reclaim_expired(unsigned steps_per_sweep);

  // Key bytes + value bytes over all entries; always <= maxmem().
  std::size_t space_used() const;
  std::size_t size() const;  // number of entries
  std::size_t maxmem() const;
  Evictor evictor() const;
  LockScheme lock_scheme() const;
  unsigned shards() const;
  Stats stats() const;

  // Removes every entry. Eviction counters are kept (they are lifetime totals).
  void reset();

 private:
  std::unique_ptr<detail::CacheImpl> impl_;
};

}  // namespace cache
