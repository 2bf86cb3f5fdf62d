// core.cc — see core.hh.
#include "tier/core.hh"

#include <future>
#include <iostream>
#include <thread>
#include <utility>

namespace tier {

namespace {

std::string timeout_text(std::chrono::milliseconds timeout) {
  return "store timeout: no answer from the store within --store-timeout (" +
         std::to_string(timeout.count()) + "ms)";
}

KeyLookup timeout_lookup(std::chrono::milliseconds timeout) {
  KeyLookup l;
  l.kind = KeyLookup::Kind::error;
  l.error = timeout_text(timeout);
  return l;
}

// Write-through: the commit may be under way when the deadline answers, so the write may still
// take effect. Write-behind waits on the store only for room in the dirty buffer or for the
// read a DELETE makes, and a write whose deadline answered is then dropped, not applied.
KeyOutcome timeout_outcome(const TierOptions& options) {
  return KeyOutcome{KeyOutcome::Kind::error,
                    timeout_text(options.store_timeout) + (options.mode == WriteMode::through
                                                               ? "; the write may still take effect"
                                                               : "; the write was not applied")};
}

store::Status reset_timeout_status(const TierOptions& options) {
  return store::Status{store::Code::io_error,
                       timeout_text(options.store_timeout) + "; the reset may still take effect"};
}

}  // namespace

bool refused_unapplied(store::Code c) {
  return c == store::Code::failed || c == store::Code::closed || c == store::Code::unavailable ||
         c == store::Code::abandoned;
}

std::optional<std::chrono::milliseconds> ttl_left(std::uint64_t expires_at_ms) {
  const auto left = store::time_left(expires_at_ms, store::unix_now_ms());
  if (!left) return std::chrono::milliseconds(0);
  if (left->count() == 0) return std::nullopt;
  return left;
}

std::uint64_t cache_value(cache::Cache& cache, std::string_view key, std::string_view value,
                          std::uint64_t expires_at_ms) {
  const auto ttl = ttl_left(expires_at_ms);
  if (!ttl) return 0;
  cache::WriteOptions options;
  options.ttl = *ttl;
  const cache::Written w = cache.set(key, value, options);
  return stored(w.result) ? w.version : 0;
}

TierCore::TierCore(cache::Cache& c, std::unique_ptr<store::Store> s, TierOptions o)
    : cache(c),
      store(std::move(s)),
      options(o),
      timeout_lookup(tier::timeout_lookup(o.store_timeout)),
      timeout_outcome(tier::timeout_outcome(o)),
      reset_timeout(reset_timeout_status(o)),
      deadline(o.store_timeout, [this](std::uint64_t ticket) { store->abandon(ticket); }) {}

TierCore::~TierCore() {
  if (store_abandoned.load()) (void)store.release();  // its closer thread may still be inside
}

KeyOutcome TierCore::refusal_locked(std::string why) {
  ++write_errors;
  return KeyOutcome{KeyOutcome::Kind::error, std::move(why)};
}

void TierCore::log_error_locked(const std::string& message) {
  if (message == last_logged_error_) return;
  last_logged_error_ = message;
  std::cerr << "cache_server: " << message << std::endl;
}

// A write-through write in the stuck commit was never acknowledged; write-behind's dirty
// writes in it were, and shutdown() counts them as not made durable.
void TierCore::close_store_bounded() {
  if (store_abandoned.load()) return;
  auto closed_promise = std::make_shared<std::promise<void>>();
  std::future<void> done = closed_promise->get_future();
  std::thread closer([s = store.get(), closed_promise] {
    s->close();
    closed_promise->set_value();
  });
  // close() drains what is queued (PostgreSQL's watchdog aborts a hung connection after 1 s;
  // delayed reads of the read-delay fault run out): it gets --store-timeout plus that grace.
  const auto limit = options.store_timeout + kCloseGrace;
  if (done.wait_for(limit) == std::future_status::ready) {
    closer.join();
    return;
  }
  closer.detach();
  store_abandoned.store(true);
  std::cerr << "cache_server: the store did not close within --store-timeout + 5 s ("
            << limit.count()
            << "ms): a sync never returned; exiting without it (its commit's writes may or may "
               "not be durable)\n";
}

}  // namespace tier
