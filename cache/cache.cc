// cache.cc — cache::Cache, the run-time-configured face of ShardedCache<Lock, Policy>.
//
// Options pick one of the twelve (lock x evictor) instantiations once, at construction; every
// call then costs one virtual dispatch into fully static code.
#include "cache/cache.hh"

#include <memory>
#include <string>
#include <utility>

#include "cache/sharded_cache.hh"

namespace cache {
namespace detail {

class CacheImpl {
 public:
  CacheImpl(Evictor evictor, LockScheme lock) : evictor_(evictor), lock_(lock) {}
  virtual ~CacheImpl() = default;
  virtual SetResult set(std::string_view key, std::string_view value) = 0;
  virtual Written set(std::string_view key, std::string_view value, const WriteOptions& o) = 0;
  virtual bool get(std::string_view key, ValueSink sink) const = 0;
  virtual bool get_item(std::string_view key, ItemSink sink) const = 0;
  virtual DelResult del(std::string_view key, const Condition* condition) = 0;
  virtual std::size_t reclaim_expired(unsigned steps_per_sweep) = 0;
  virtual void reset() = 0;
  virtual std::size_t space_used() const = 0;
  virtual std::size_t size() const = 0;
  virtual Stats stats() const = 0;
  virtual std::size_t maxmem() const = 0;
  virtual unsigned shards() const = 0;
  Evictor evictor() const { return evictor_; }
  LockScheme lock() const { return lock_; }

 private:
  Evictor evictor_;
  LockScheme lock_;
};

template <class Lock, class Policy>
class ErasedCache final : public CacheImpl {
 public:
  ErasedCache(const Options& o, Evictor e) : CacheImpl(e, Lock::kScheme), cache_(o) {}
  SetResult set(std::string_view k, std::string_view v) override { return cache_.set(k, v); }
  Written set(std::string_view k, std::string_view v, const WriteOptions& o) override {
    return cache_.set(k, v, o);
  }
  bool get(std::string_view k, ValueSink sink) const override { return cache_.get(k, sink); }
  bool get_item(std::string_view k, ItemSink sink) const override {
    return cache_.get_item(k, sink);
  }
  DelResult del(std::string_view k, const Condition* c) override { return cache_.del(k, c); }
  std::size_t reclaim_expired(unsigned steps) override { return cache_.reclaim_expired(steps); }
  void reset() override { cache_.reset(); }
  std::size_t space_used() const override { return cache_.space_used(); }
  std::size_t size() const override { return cache_.size(); }
  Stats stats() const override { return cache_.stats(); }
  std::size_t maxmem() const override { return cache_.maxmem(); }
  unsigned shards() const override { return cache_.shards(); }

 private:
  ShardedCache<Lock, Policy> cache_;
};

template <class Lock>
std::unique_ptr<CacheImpl> make_impl_locked(const Options& o) {
  switch (o.evictor) {
    case Evictor::none:
      return std::make_unique<ErasedCache<Lock, NoEviction>>(o, o.evictor);
    case Evictor::fifo:
      return std::make_unique<ErasedCache<Lock, FifoEviction>>(o, o.evictor);
    case Evictor::lru:
      return std::make_unique<ErasedCache<Lock, LruEviction<Lock>>>(o, o.evictor);
    case Evictor::clock:
      return std::make_unique<ErasedCache<Lock, ClockEviction>>(o, o.evictor);
    case Evictor::s3fifo:
      return std::make_unique<ErasedCache<Lock, S3FifoEviction>>(o, o.evictor);
    case Evictor::sieve:
      return std::make_unique<ErasedCache<Lock, SieveEviction>>(o, o.evictor);
  }
  throw std::invalid_argument("cache: unknown evictor");
}

std::unique_ptr<CacheImpl> make_impl(const Options& o) {
  validate(o);
  switch (o.lock) {
    case LockScheme::shared_reads:
      return make_impl_locked<SharedReads>(o);
    case LockScheme::exclusive_all:
      return make_impl_locked<ExclusiveAll>(o);
  }
  throw std::invalid_argument("cache: unknown lock scheme");
}

}  // namespace detail

namespace {
Options course_options(std::size_t maxmem, double max_load_factor, Evictor evictor, Hasher hasher) {
  Options o;
  o.maxmem = maxmem;
  o.max_load_factor = max_load_factor;
  o.evictor = evictor;
  o.hasher = std::move(hasher);
  return o;
}
}  // namespace

Cache::Cache(std::size_t maxmem, double max_load_factor, Evictor evictor, Hasher hasher)
    : Cache(course_options(maxmem, max_load_factor, evictor, std::move(hasher))) {}
Cache::Cache(Options options) : impl_(detail::make_impl(options)) {}
Cache::~Cache() = default;
Cache::Cache(Cache&&) noexcept = default;
Cache& Cache::operator=(Cache&&) noexcept = default;

SetResult Cache::set(std::string_view key, std::string_view value) {
  return impl_->set(key, value);
}
Written Cache::set(std::string_view key, std::string_view value, const WriteOptions& options) {
  return impl_->set(key, value, options);
}
bool Cache::get(std::string_view key, ValueSink sink) const {
  return impl_->get(key, sink);
}
bool Cache::get_item(std::string_view key, ItemSink sink) const {
  return impl_->get_item(key, sink);
}
std::optional<std::string> Cache::get(std::string_view key) const {
  std::optional<std::string> out;
  impl_->get(key, [&out](std::string_view v) { out.emplace(v); });
  return out;
}
bool Cache::del(std::string_view key) {
  return impl_->del(key, nullptr) == DelResult::deleted;
}
DelResult Cache::del(std::string_view key, const Condition& condition) {
  return impl_->del(key, &condition);
}
std::size_t Cache::reclaim_expired(unsigned steps_per_sweep) {
  return impl_->reclaim_expired(steps_per_sweep);
}
void Cache::reset() {
  impl_->reset();
}
std::size_t Cache::space_used() const {
  return impl_->space_used();
}
std::size_t Cache::size() const {
  return impl_->size();
}
std::size_t Cache::maxmem() const {
  return impl_->maxmem();
}
Evictor Cache::evictor() const {
  return impl_->evictor();
}
LockScheme Cache::lock_scheme() const {
  return impl_->lock();
}
unsigned Cache::shards() const {
  return impl_->shards();
}
Stats Cache::stats() const {
  return impl_->stats();
}

const char* to_string(SetResult r) {
  switch (r) {
    case SetResult::created:
      return "created";
    case SetResult::replaced:
      return "replaced";
    case SetResult::bad_key:
      return "bad_key";
    case SetResult::too_big:
      return "too_big";
    case SetResult::no_space:
      return "no_space";
    case SetResult::precondition_failed:
      return "precondition_failed";
    case SetResult::bad_ttl:
      return "bad_ttl";
  }
  return "unknown";
}

const char* to_string(Evictor e) {
  switch (e) {
    case Evictor::none:
      return "none";
    case Evictor::fifo:
      return "fifo";
    case Evictor::lru:
      return "lru";
    case Evictor::clock:
      return "clock";
    case Evictor::s3fifo:
      return "s3fifo";
    case Evictor::sieve:
      return "sieve";
  }
  return "unknown";
}

const char* to_string(LockScheme l) {
  switch (l) {
    case LockScheme::shared_reads:
      return "shared";
    case LockScheme::exclusive_all:
      return "exclusive";
  }
  return "unknown";
}

std::optional<Evictor> parse_evictor(std::string_view name) {
  for (Evictor e : {Evictor::none, Evictor::fifo, Evictor::lru, Evictor::clock, Evictor::s3fifo,
                    Evictor::sieve}) {
    if (name == to_string(e)) return e;
  }
  return std::nullopt;
}

}  // namespace cache
