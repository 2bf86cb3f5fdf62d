// tier_sim_test.cc — deterministic simulation of the keys' service layer
// (server/api/key_service.hh over tier/tier.hh) over a store whose completions the test
// orders (sim_store.hh), as FoundationDB tests its core: the service's and the tier's own code
// runs, answering a Reply (reply.hh) as it answers a handler's; the world around it (which read or
// commit completes next, and how) is drawn from a seeded generator, and invariants are checked
// after every step:
//   - a GET answered from the cache serves what the store holds (no stale value, even after a
//     commit whose outcome was unknown);
//   - no answer is older than what a request answered before it began saw or made: a GET serves
//     a state of its key at least as new as the one left by every write acknowledged, and every
//     GET answered, before the GET was issued (reads never go backwards; the store keeps the
//     order of its states, sim_store.hh history(), so a per-key check suffices). Store reads
//     run at one step and are delivered at a later one, as a real store's;
//   - nothing written before a reset that answered ok is served to a GET issued after it;
//   - after quiescence every key reads back what the store holds, and every acknowledged write
//     not followed by another write or reset is in the store;
//   - the dirty bytes never exceed --max-dirty.
// A failure prints its seed; SIM_SEED=N reruns that one interleaving, SIM_SEEDS=N sets how many,
// SIM_FIRST_SEED=0 starts from a fresh (printed) seed.
// The targeted tests below drive each of issue 27's defects on their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "boards/registry.hh"
#include "cache/cache.hh"
#include "server/api/key_service.hh"
#include "server/api/reply.hh"
#include "server/api/variant.hh"
#include "tests/tier/sim_store.hh"
#include "tier/tier.hh"

namespace {

using server::WriteMode;
using sim::Commit;
using sim::SimStore;
using tier::StoreTier;
using tier::TierOptions;
using namespace std::chrono_literals;

struct Tier {
  explicit Tier(TierOptions options, std::size_t cache_bytes = 1 << 20) : cache(cache_bytes) {
    auto s = std::make_unique<SimStore>();
    store = s.get();
    tier = std::make_unique<StoreTier>(cache, std::move(s), options);
    keys = std::make_unique<server::KeyService>(cache, tier.get(), boards);
  }
  ~Tier() {
    // Whatever is still queued completes (closed) before the tier goes.
    store->close();
  }
  cache::Cache cache;
  SimStore* store = nullptr;
  std::unique_ptr<StoreTier> tier;
  boards::Registry boards;
  std::unique_ptr<server::KeyService> keys;  // the service the handlers call, over tier
};

TierOptions through(std::chrono::milliseconds timeout = 60s) {
  TierOptions o;
  o.mode = WriteMode::through;
  o.store_timeout = timeout;
  o.max_dirty = 1 << 20;
  o.max_waiting = 1 << 20;
  return o;
}

TierOptions behind(std::chrono::milliseconds flush_interval = 1h,
                   std::chrono::milliseconds timeout = 60s) {
  TierOptions o = through(timeout);
  o.mode = WriteMode::behind;
  o.flush_interval = flush_interval;
  return o;
}

// A result delivered later, from whichever thread delivers it.
// Every answer's place in the order of delivery (the model applies writes in that order).
std::atomic<std::uint64_t> g_deliveries{0};

template <class T>
struct Later {
  std::shared_ptr<std::optional<T>> slot = std::make_shared<std::optional<T>>();
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::uint64_t> order = std::make_shared<std::uint64_t>(0);
  std::function<void(const T&)> callback() const {
    return [slot = slot, calls = calls, order = order](const T& v) {
      *slot = v;  // before the count: ready() then sees the value (the count publishes it)
      *order = ++g_deliveries;
      ++*calls;
    };
  }
  // The same as the tier's completion (tier/deadline.hh).
  tier::Done<T> done() const { return tier::completion_of<T>(callback()); }
  bool ready() const { return calls->load() > 0; }
  const T& get() const { return **slot; }
  // Waits (bounded) for a delivery from another thread.
  bool wait(std::chrono::milliseconds limit) const {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!ready() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    return ready();
  }
};
// A handler's Reply (reply.hh) as the simulation sees it: an answer now, or a later one
// delivered into a Later.
template <class T>
struct SimReply final : server::Reply<T> {
  explicit SimReply(const Later<T>& l) : later_answer(l) {}
  server::Later<T> later(server::DeferKind) override {
    return server::Later<T>(later_answer.done());
  }
  const std::optional<T>& now() const { return this->result_; }
  Later<T> later_answer;
};

// What a call answered inline (before it returned), if anything.
template <class T>
std::optional<T> now_of(const Later<T>& l) {
  return l.ready() ? std::optional<T>(l.get()) : std::nullopt;
}

using LookupLater = Later<tier::KeyLookup>;
using OutcomeLater = Later<tier::KeyOutcome>;
using StatusLater = Later<store::Status>;

// GET as the handlers do it: the key service's cache read, then its lookup.
struct Get {
  bool hit = false;
  std::optional<tier::KeyLookup> now;
  LookupLater later;
};
Get get(Tier& t, const std::string& key) {
  Get g;
  std::string cached;
  if (t.keys->read_cached<server::StringValue>(key,
                                               [&](const cache::Item& i) { cached = i.value; })) {
    g.hit = true;
    g.now = tier::KeyLookup{
        tier::KeyLookup::Kind::found, std::make_shared<const std::string>(cached), {}};
    return g;
  }
  SimReply<tier::KeyLookup> reply(g.later);
  t.keys->lookup(key, reply);
  g.now = reply.now();
  // Delivered during the call (the service deferred, then the tier answered at once): the
  // store never completes inline, so this too was answered now.
  if (!g.now && g.later.ready()) g.now = g.later.get();
  return g;
}

// A GET's answer, with the store's pending reads completed as they come.
std::optional<std::string> read_through(Tier& t, const std::string& key) {
  Get g = get(t, key);
  for (int i = 0; !g.now && !g.later.ready() && i < 100; ++i) {
    if (t.store->pending_reads() > 0) t.store->complete_read(0);
  }
  const tier::KeyLookup& l = g.now ? *g.now : g.later.get();
  EXPECT_NE(l.kind, tier::KeyLookup::Kind::error) << l.error;
  if (l.kind != tier::KeyLookup::Kind::found) return std::nullopt;
  return *l.value;
}

// --- the simulation ------------------------------------------------------------------------------

// Write-through is checked against the store (the cache may only hold what the store holds);
// write-behind against a model of the writes it acknowledged (the dirty buffer is newer than the
// store), and against the store once everything is flushed.
class Simulation {
 public:
  Simulation(std::uint64_t seed, WriteMode mode)
      : rng_(seed), mode_(mode), t_(mode == WriteMode::through ? through() : behind(0ms)) {}

  // Returns an empty string, or the first invariant broken.
  std::string run(int steps) {
    for (int i = 0; i < steps && error_.empty(); ++i) step();
    if (error_.empty()) quiesce();
    return error_;
  }

 private:
  using Value = std::optional<std::string>;  // nullopt: absent
  struct PendingGet {
    std::string key;
    int latest_ok_reset_at_issue;
    LookupLater later;
    std::size_t since = 0;  // write-behind: history_[key] index current when it was issued;
                            // write-through: floor_[key] when it was issued
    bool reset_pending_at_issue = false;
    int resets_issued_at_issue = 0;
  };
  struct PendingWrite {
    std::string key;
    Value value;  // nullopt: DELETE
    OutcomeLater later;
    bool seen = false;
    bool conditional = false;  // If-Match / If-None-Match
  };
  struct PendingReset {
    int index;
    StatusLater later;
    bool seen = false;
  };
  struct Known {  // write-behind's model of one key
    Value value;
    int resets_before = 0;   // resets issued before the write was applied
    bool ambiguous = false;  // a reset of unknown outcome may have emptied the store under it
  };

  bool is_behind() const { return mode_ == WriteMode::behind; }
  static constexpr int kKeys = 4;
  std::string key() { return "k" + std::to_string(pick(kKeys)); }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

  void trace(const std::string& what) {
    if (std::getenv("SIM_TRACE") != nullptr) std::fprintf(stderr, "  %s\n", what.c_str());
  }

  void step() {
    switch (pick(8)) {
      case 0:
        issue_get();
        break;
      case 1:
        issue_write(true);
        break;
      case 2:
        issue_write(false);
        break;
      case 3:
        if (const std::size_t r = pick(8); r == 0) {
          issue_reset();
        } else if (r <= 2) {
          trace("RESET cache");  // POST /reset?scope=cache: the store keeps everything
          SimReply<store::Status> reply(StatusLater{});
          t_.keys->reset(server::ResetScope::cache, reply);
        }
        break;
      case 4:
        complete_read();
        break;
      case 5:
        if (is_behind())
          t_.tier->flush_step();
        else
          complete_read();
        break;
      default:
        complete_commit();
        break;
    }
    collect();
    check_memory();
  }

  void issue_get() {
    const std::string k = key();
    const std::size_t since = is_behind() ? current(k) : floor_[k];
    Get g = get(t_, k);
    trace("GET " + k + (g.now ? " answered now" : " pending"));
    if (g.now) {
      check_answer(k, *g.now, latest_ok_reset_, g.hit, since, reset_pending());
      return;
    }
    gets_.push_back(
        PendingGet{k, latest_ok_reset_, g.later, since, reset_pending(), resets_issued_});
  }

  void issue_write(bool put) {
    PendingWrite w;
    w.key = key();
    if (put) {
      w.value = "v" + std::to_string(++values_);
      // Write-through: a write is ordered with a reset by its submission, which is now.
      written_before_[*w.value] = resets_issued_;
    }
    // One write in three is conditional on the key existing (If-Match: *) or, for a PUT, on
    // its absence (If-None-Match: *): decided by the cache, the dirty buffer or a store read,
    // or parked behind a write of the key in flight (StoreTier::write_if).
    server::Preconditions pre;
    const std::size_t condition = pick(3) == 0 ? 1 + pick(put ? 2 : 1) : 0;
    if (condition == 1) {
      pre.has_if_match = true;
      pre.if_match.any = true;
    } else if (condition == 2) {
      pre.has_if_none_match = true;
      pre.if_none_match.any = true;
    }
    const server::Preconditions* when = condition != 0 ? &pre : nullptr;
    w.conditional = condition != 0;
    trace(std::string(condition == 1   ? "If-Match: * "
                      : condition == 2 ? "If-None-Match: * "
                                       : "") +
          (put ? "PUT " + w.key + "=" + *w.value : "DELETE " + w.key));
    SimReply<tier::KeyOutcome> reply(w.later);
    if (put) {
      t_.keys->put(w.key, *w.value, server::WriteSpec{{}, when}, reply);
    } else {
      t_.keys->del(w.key, when, reply);
    }
    if (reply.now()) w.later.callback()(*reply.now());
    writes_.push_back(std::move(w));
  }

  void issue_reset() {
    PendingReset r{++resets_issued_, {}};
    trace("RESET " + std::to_string(r.index));
    SimReply<store::Status> reply(r.later);
    t_.keys->reset(server::ResetScope::all, reply);
    if (reply.now()) r.later.callback()(*reply.now());
    resets_.push_back(std::move(r));
  }

  // A store read runs (sees the data as it is now) or is delivered (with what it saw when it
  // ran): commits may complete in between, as on a real store.
  void complete_read() {
    const std::size_t n = t_.store->pending_reads();
    if (n == 0) return;
    const std::size_t i = pick(n);
    if (!t_.store->read_has_run(i) && pick(2) == 0) {
      trace("read " + std::to_string(i) + " of " + std::to_string(n) + " runs");
      t_.store->run_read(i);
      return;
    }
    const bool error = pick(10) == 0;
    trace("read " + std::to_string(i) + " of " + std::to_string(n) + " completes" +
          (error ? " with an error" : ""));
    t_.store->complete_read(i, error);
  }

  void complete_commit() {
    if (t_.store->pending_commits() == 0) return;
    // One time in three the oldest queued commit is only applied (durable, visible to reads):
    // with the next ones it forms a group whose callbacks run at later steps, in order.
    const bool apply_only = t_.store->queued_commits() > 0 && pick(3) == 0;
    static constexpr Commit kinds[] = {Commit::ok,
                                       Commit::ok,
                                       Commit::ok,
                                       Commit::refused,
                                       Commit::unknown_applied,
                                       Commit::unknown_unapplied};
    const Commit how = kinds[pick(std::size(kinds))];
    if (apply_only) {
      trace("a commit is applied (its callback runs later) " +
            std::to_string(static_cast<int>(how)));
      t_.store->apply_commit(how);
      return;
    }
    trace(std::string(t_.store->next_commit_is_clear() ? "clear" : "write") + " completes " +
          std::to_string(static_cast<int>(how)));
    t_.store->complete_commit(how);
  }

  // Answers delivered since the last step, in the order the tier gave them.
  void collect() {
    std::vector<PendingWrite*> answered;
    for (PendingWrite& w : writes_) {
      if (w.seen || !w.later.ready()) continue;
      w.seen = true;
      if (*w.later.calls != 1)
        fail("a write was answered " + std::to_string(*w.later.calls) + " times");
      answered.push_back(&w);
    }
    // In the order they were delivered: one step can answer several writes of a key (a store
    // read that decides conditional writes, a commit that releases parked ones).
    std::sort(answered.begin(), answered.end(), [](const PendingWrite* a, const PendingWrite* b) {
      return *a->later.order < *b->later.order;
    });
    for (const PendingWrite* w : answered) on_write_answered(*w);
    for (PendingReset& r : resets_) {
      if (r.seen || !r.later.ready()) continue;
      r.seen = true;
      on_reset_answered(r);
    }
    for (auto it = gets_.begin(); it != gets_.end();) {
      if (!it->later.ready()) {
        ++it;
        continue;
      }
      // A reset pending at its issue, or issued since, may have emptied the store under it.
      check_answer(it->key, it->later.get(), it->latest_ok_reset_at_issue, false, it->since,
                   it->reset_pending_at_issue || resets_issued_ > it->resets_issued_at_issue);
      it = gets_.erase(it);
    }
  }

  void on_write_answered(const PendingWrite& w) {
    const bool ok = w.later.get().kind != tier::KeyOutcome::Kind::error;
    trace("  answered " + w.key + " " + w.value.value_or("DELETE") + " kind " +
          std::to_string(static_cast<int>(w.later.get().kind)) + " " + w.later.get().error);
    // A condition that did not hold: nothing was written.
    if (w.later.get().kind == tier::KeyOutcome::Kind::precondition_failed) return;
    if (!is_behind()) {
      // A conditional write is submitted when it is decided, which may be after a reset issued
      // since it was: ordered with resets by then (at the latest, its answer).
      if (w.conditional && w.value) written_before_[*w.value] = resets_issued_;
      last_acked_[w.key] = ok ? std::optional<Value>(w.value) : std::nullopt;
      // Acknowledged (a DELETE's 404 too): the key's state after the last commit of it whose
      // callback has run, this write's or a later one's, is the oldest a GET issued from now on
      // may serve (not the store's newest: commits applied since may not be acknowledged yet).
      if (ok) raise_floor(w.key, t_.store->delivered_state(w.key));
      return;
    }
    if (!ok) return;  // write-behind: refused, not applied
    // A DELETE that found nothing changed nothing (it may be ordered before a PUT it raced).
    if (w.later.get().kind == tier::KeyOutcome::Kind::absent) return;
    // Applied when answered: ordered with a reset by that moment.
    if (w.value) written_before_[*w.value] = resets_issued_;
    model_[w.key] = Known{w.value, resets_issued_, false};
    history_[w.key].push_back(model_[w.key]);
  }

  // The index of key's current state in history_ (creating its first, absent, state).
  std::size_t current(const std::string& k) {
    auto& h = history_[k];
    if (h.empty()) h.push_back(Known{});
    return h.size() - 1;
  }

  void on_reset_answered(const PendingReset& r) {
    const store::Status& s = r.later.get();
    trace("  reset " + std::to_string(r.index) + " answered " + (s.ok() ? "ok" : s.message));
    if (s.ok()) {
      latest_ok_reset_ = std::max(latest_ok_reset_, r.index);
      last_acked_.clear();
      for (int i = 0; i < kKeys; ++i) {
        const std::string k = "k" + std::to_string(i);
        raise_floor(k, t_.store->delivered_state(k));
      }
      for (auto& [k, known] : model_) {
        if (known.resets_before < r.index) {
          known = Known{};
          history_[k].push_back(known);
        }
      }
    } else if (s.message.find("unknown") != std::string::npos) {
      // The store may have been emptied: what it holds for each key is the last write or none.
      for (auto& [k, known] : model_) {
        known.ambiguous = true;
        history_[k].push_back(known);
      }
      last_acked_.clear();
    }
  }

  // A GET is answered with a state of its key current at some moment between its issue (the
  // history_ index `since`) and its answer (write-behind), or what the store holds (a hit, in
  // write-through).
  // reset_overlap (write-behind): a reset overlapped the GET; the store it read may have been
  // emptied (the clear applied, its callback not yet run), so absent is one answer it may get.
  void check_answer(const std::string& k, const tier::KeyLookup& l, int latest_ok_reset, bool hit,
                    std::size_t since, bool reset_overlap) {
    if (l.kind == tier::KeyLookup::Kind::error) return;
    const Value served = l.kind == tier::KeyLookup::Kind::found ? Value(*l.value) : std::nullopt;
    trace("  GET " + k + " -> " + served.value_or("nothing") + (hit ? " (hit)" : ""));
    if (is_behind()) {
      const auto& h = history_[k];
      bool seen = false;
      for (std::size_t i = since; i < h.size() && !seen; ++i) {
        seen = served == h[i].value || ((h[i].ambiguous || reset_overlap) && !served);
      }
      if (!seen) {
        fail("GET " + k + " served " + served.value_or("nothing") +
             "; the last write applied was " + model_[k].value.value_or("nothing"));
      }
    } else {
      // A hit serves what the store held after the last commit of the key whose callback ran,
      // or a state since (a group's later commits may be applied, their callbacks due).
      if (hit) {
        const auto h = t_.store->history(k);
        const std::size_t from = t_.store->delivered_state(k);
        if (std::find(h.begin() + static_cast<std::ptrdiff_t>(std::min(from, h.size())), h.end(),
                      served) == h.end()) {
          fail("GET " + k + " served " + served.value_or("nothing") +
               " from the cache; the store holds " + t_.store->value(k).value_or("nothing"));
        }
      }
      // Never older than the floor when it was issued; later GETs may not go back before it.
      const auto h = t_.store->history(k);
      std::size_t at = since;
      while (at < h.size() && h[at] != served) ++at;
      if (at == h.size()) {
        std::string states;
        for (std::size_t i = 0; i < h.size(); ++i) {
          states += (i == since ? " [" : " ") + h[i].value_or("-") + (i == since ? "]" : "");
        }
        fail("GET " + k + " served " + served.value_or("nothing") +
             ", older than a state acknowledged or read before it was issued (the key's states"
             " in commit order, the oldest it may serve in brackets:" +
             states + ")");
      } else {
        raise_floor(k, at);
      }
    }
    // Write-through checks this with the floor (an ok reset raises it to the clear's state):
    // a conditional write is submitted when decided, which the model cannot see, and its
    // value may be in the store before it is answered.
    if (is_behind() && served && written_before_[*served] < latest_ok_reset) {
      fail("GET " + k + " served " + *served + ", written before reset " +
           std::to_string(latest_ok_reset) + " that answered ok before the GET");
    }
  }

  bool reset_pending() const {
    return std::any_of(resets_.begin(), resets_.end(),
                       [](const PendingReset& r) { return !r.seen; });
  }

  void raise_floor(const std::string& k, std::size_t at) { floor_[k] = std::max(floor_[k], at); }

  void check_memory() {
    const tier::TierStats s = t_.tier->stats();
    if (s.dirty_bytes > (1u << 20)) fail("dirty bytes over --max-dirty");
  }

  // Everything completes (commits ok), write-behind flushes all; then every key reads back
  // what the store holds, and that is what was acknowledged last.
  void quiesce() {
    for (int guard = 0; guard < 10000 && error_.empty(); ++guard) {
      if (t_.store->pending_reads() > 0) {
        t_.store->complete_read(0);
      } else if (t_.store->pending_commits() > 0) {
        t_.store->complete_commit(Commit::ok);
      } else if (is_behind() && t_.tier->stats().dirty_items > 0) {
        t_.tier->flush_step();
      } else {
        break;
      }
      collect();
    }
    if (is_behind() && t_.tier->stats().dirty_items > 0) fail("dirty writes left after quiescence");
    for (int i = 0; i < kKeys && error_.empty(); ++i) check_quiet_key("k" + std::to_string(i));
  }

  void check_quiet_key(const std::string& k) {
    const Value served = read_through(t_, k);
    const Value stored = t_.store->value(k);
    if (served != stored) {
      fail("after quiescence GET " + k + " serves " + served.value_or("nothing") +
           "; the store holds " + stored.value_or("nothing"));
    }
    if (is_behind()) {
      const Known& m = model_[k];
      if (stored != m.value && !(m.ambiguous && !stored)) {
        fail("acknowledged write of " + k + " (" + m.value.value_or("DELETE") +
             ") is not what the store holds after the flush: " + stored.value_or("nothing"));
      }
      return;
    }
    auto acked = last_acked_.find(k);
    if (acked != last_acked_.end() && acked->second && *acked->second != stored) {
      fail("acknowledged write of " + k + " (" + acked->second->value_or("DELETE") +
           ") is not what the store holds");
    }
  }

  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  std::mt19937_64 rng_;
  WriteMode mode_;
  Tier t_;
  std::vector<PendingGet> gets_;
  std::vector<PendingWrite> writes_;
  std::vector<PendingReset> resets_;
  std::map<std::string, int> written_before_;  // value -> resets issued before it was written
  // Write-through: key -> the last write answered (in commit order): its value (nullopt:
  // DELETE) if acknowledged, nullopt if it failed (the store may then hold either).
  std::map<std::string, std::optional<Value>> last_acked_;
  // Write-through: key -> the index in the store's history of the oldest state a GET issued now
  // may serve (the newest state acknowledged to, or read by, a request answered so far).
  std::map<std::string, std::size_t> floor_;
  std::map<std::string, Known> model_;                 // write-behind
  std::map<std::string, std::vector<Known>> history_;  // write-behind: every state of a key
  int values_ = 0;
  int resets_issued_ = 0;
  int latest_ok_reset_ = 0;
  std::string error_;
};

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

// Fresh seeds that once found a defect, run on every run after the others (write-through,
// 2026-12-04). A GET went back behind an earlier answer:
// - 18764186911567, 18765020814627: a miss begun before a reset read the store after the
//   reset's clear was applied and answered "nothing"; the cache, emptied only by the reset's
//   callback, then served the key's older value (answer_locked now evicts while a reset is
//   pending);
// - 19030664465528: a PUT's callback ran after the reset's clear (submitted after it) was
//   applied and cached its value; a miss had read the emptied store (a PUT's callback no longer
//   caches while a reset is pending);
// - 19099433677648: of two reads under way while a PUT was in flight, the older ran after the
//   PUT was applied and answered its value; a later miss joined the younger, which had run
//   before, and got "nothing" (a read that answers while a write is in flight moves the key's
//   version on, so later misses read anew).
constexpr std::uint64_t kOnceFailed[] = {18764186911567, 18765020814627, 19030664465528,
                                         19099433677648};

// Seeds SIM_FIRST_SEED .. + SIM_SEEDS - 1 (default 1..10000, the same every run), then
// kOnceFailed; SIM_FIRST_SEED=0 draws a fresh first seed from the clock and prints it.
void simulate(WriteMode mode) {
  const std::uint64_t only = env_or("SIM_SEED", 0);
  const std::uint64_t seeds = only != 0 ? 1 : env_or("SIM_SEEDS", 10000);
  std::uint64_t first = env_or("SIM_FIRST_SEED", 1);
  if (first == 0) {
    first = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::printf("fresh seeds from %llu\n", static_cast<unsigned long long>(first));
  }
  for (std::uint64_t i = 0; i < seeds; ++i) {
    const std::uint64_t seed = only != 0 ? only : first + i;
    const std::string error = Simulation(seed, mode).run(120);
    ASSERT_EQ(error, "") << "seed " << seed << " (rerun with SIM_SEED=" << seed << ")";
  }
  if (only != 0) return;
  for (const std::uint64_t seed : kOnceFailed) {
    const std::string error = Simulation(seed, mode).run(120);
    ASSERT_EQ(error, "") << "seed " << seed << " (rerun with SIM_SEED=" << seed << ")";
  }
}

TEST(StoreTierSimulation, WriteThroughKeepsTheInvariants) {
  simulate(WriteMode::through);
}

TEST(StoreTierSimulation, WriteBehindKeepsTheInvariants) {
  simulate(WriteMode::behind);
}

// --- each defect on its own ----------------------------------------------------------------------

// Defect 1: a commit whose outcome is unknown landed; the cache must not keep serving the old
// value (nor a DELETE's deleted one).
TEST(StoreTierFaults, UnknownOutcomeEvictsAndReadsThrough) {
  Tier t(through());
  OutcomeLater v0, v1, d;
  t.tier->put("k", "V0", v0.done());
  EXPECT_FALSE(v0.ready());
  t.store->complete_commit(Commit::ok);
  ASSERT_TRUE(v0.ready());
  t.tier->put("k", "V1", v1.done());
  EXPECT_FALSE(v1.ready());
  t.store->complete_commit(Commit::unknown_applied);
  ASSERT_TRUE(v1.ready());
  EXPECT_EQ(v1.get().kind, tier::KeyOutcome::Kind::error);
  EXPECT_NE(v1.get().error.find("unknown"), std::string::npos) << v1.get().error;
  EXPECT_EQ(read_through(t, "k"), std::optional<std::string>("V1"));
  EXPECT_EQ(read_through(t, "k"), std::optional<std::string>("V1"));
  // Still in doubt: the read did not fill the cache.
  EXPECT_FALSE(t.cache.get("k"));
  t.tier->del("k", d.done());
  EXPECT_FALSE(d.ready());
  t.store->complete_commit(Commit::unknown_applied);
  EXPECT_EQ(read_through(t, "k"), std::nullopt);
  // A later acknowledged write settles the key: it is cached again.
  OutcomeLater v2;
  t.tier->put("k", "V2", v2.done());
  EXPECT_FALSE(v2.ready());
  t.store->complete_commit(Commit::ok);
  EXPECT_EQ(t.cache.get("k"), std::optional<std::string>("V2"));
}

// Defect 2: a miss that starts while a reset is pending must not read (and fill) the value the
// clear is about to remove.
TEST(StoreTierFaults, ResetIsABarrierForReads) {
  Tier t(through());
  OutcomeLater w;
  t.tier->put("k", "old", w.done());
  EXPECT_FALSE(w.ready());
  t.store->complete_commit(Commit::ok);
  t.tier->reset_cache();  // "k" is in the store only
  StatusLater r;
  t.tier->reset(r.done());
  Get g = get(t, "k");
  ASSERT_FALSE(g.now);
  EXPECT_EQ(t.store->pending_reads(), 0u) << "a read was sent before the clear committed";
  t.store->complete_commit(Commit::ok);  // the clear
  ASSERT_TRUE(r.ready());
  EXPECT_TRUE(r.get().ok());
  while (t.store->pending_reads() > 0) t.store->complete_read(0);
  ASSERT_TRUE(g.later.ready());
  EXPECT_EQ(g.later.get().kind, tier::KeyLookup::Kind::absent);
  EXPECT_EQ(read_through(t, "k"), std::nullopt);
}

// Found by a fresh seed (8870406229688): a read under way across a reset and a write-behind PUT
// must not answer the emptied store's "nothing", a state the tier never showed: the dirty
// write, newer than the store, answers.
TEST(StoreTierFaults, ReadAcrossAResetAnswersTheNewerDirtyWrite) {
  Tier t(behind(0ms));
  ASSERT_TRUE(t.tier->try_put("k", "old"));
  t.tier->flush_step();
  t.store->complete_commit(Commit::ok);  // "k" clean, in the store
  t.tier->reset_cache();
  Get g = get(t, "k");  // a read under way
  ASSERT_FALSE(g.now);
  StatusLater r;
  t.tier->reset(r.done());
  ASSERT_TRUE(t.tier->try_put("k", "new"));  // after the reset: kept by it
  t.store->complete_commit(Commit::ok);      // the clear
  ASSERT_TRUE(r.ready() && r.get().ok());
  t.store->complete_read(0);
  ASSERT_TRUE(g.later.ready());
  ASSERT_EQ(g.later.get().kind, tier::KeyLookup::Kind::found);
  EXPECT_EQ(*g.later.get().value, "new");
}

// Defect 5: a reset whose clear fails changes nothing (write-behind: the dirty write stays,
// is served and is flushed).
TEST(StoreTierFaults, FailedResetChangesNothing) {
  Tier t(behind());
  auto now = t.tier->try_put("k", "V2");
  ASSERT_TRUE(now);
  StatusLater r;
  t.tier->reset(r.done());
  t.store->complete_commit(Commit::refused);
  ASSERT_TRUE(r.ready());
  EXPECT_FALSE(r.get().ok());
  EXPECT_NE(r.get().message.find("reset failed"), std::string::npos) << r.get().message;
  EXPECT_EQ(read_through(t, "k"), std::optional<std::string>("V2"));
  EXPECT_EQ(t.tier->stats().dirty_items, 1u);
}

// Defect 5, the other half: a reset that succeeds drops the dirty writes made before it, and
// keeps those made while it was pending.
TEST(StoreTierFaults, ResetDropsOnlyWhatCameBeforeIt) {
  Tier t(behind());
  ASSERT_TRUE(t.tier->try_put("before", "1"));
  StatusLater r;
  t.tier->reset(r.done());
  ASSERT_TRUE(t.tier->try_put("after", "2"));
  t.store->complete_commit(Commit::ok);
  ASSERT_TRUE(r.ready() && r.get().ok());
  EXPECT_EQ(read_through(t, "before"), std::nullopt);
  EXPECT_EQ(read_through(t, "after"), std::optional<std::string>("2"));
  EXPECT_EQ(t.tier->stats().dirty_items, 1u);
}

// Defect 3: once a write-behind flush fails, writes answer 503 instead of piling up writes that
// can never become durable; a flush that succeeds lifts it.
TEST(StoreTierFaults, WriteBehindRefusesWritesWhileFlushesFail) {
  Tier t(behind(40ms));
  ASSERT_TRUE(t.tier->try_put("a", "1"));
  ASSERT_TRUE(t.store->wait_commits(1, 5s));
  t.store->complete_commit(Commit::refused);
  for (int i = 0; i < 500 && !t.tier->stats().store.failed; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_TRUE(t.tier->stats().store.failed) << "stats do not say the store is failing";
  EXPECT_FALSE(t.tier->try_put("b", "2"));
  OutcomeLater b;
  t.tier->put("b", "2", b.done());
  auto now = now_of(b);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->kind, tier::KeyOutcome::Kind::error);
  EXPECT_EQ(read_through(t, "a"), std::optional<std::string>("1"));  // kept, still dirty
  // The store recovers: the retried flush commits, and writes are taken again.
  ASSERT_TRUE(t.store->wait_commits(1, 5s));
  t.store->complete_commit(Commit::ok);
  for (int i = 0; i < 500 && t.tier->stats().store.failed; ++i) std::this_thread::sleep_for(2ms);
  EXPECT_FALSE(t.tier->stats().store.failed);
  EXPECT_TRUE(t.tier->try_put("c", "3"));
  EXPECT_EQ(t.store->value("a"), std::optional<std::string>("1"));
}

// Defect 8: a write whose deadline answered 503 "not applied" while it waited for the tier's
// lock (held here by a slow clear, as a long flush or reset would) is never applied.
TEST(StoreTierFaults, WriteAnsweredNotAppliedIsNeverApplied) {
  Tier t(behind(1h, 30ms));
  t.store->hold_next_call(400ms);
  StatusLater r;
  std::thread resetter([&] { t.tier->reset(r.done()); });
  std::this_thread::sleep_for(50ms);  // the resetter holds the tier's lock inside clear()
  OutcomeLater w;
  t.tier->put("k", "late", w.done());
  resetter.join();
  ASSERT_TRUE(w.wait(5s));
  const tier::KeyOutcome& o = w.get();
  ASSERT_EQ(o.kind, tier::KeyOutcome::Kind::error) << "the deadline did not answer first";
  EXPECT_NE(o.error.find("not applied"), std::string::npos) << o.error;
  EXPECT_EQ(*w.calls, 1);
  t.store->complete_commit(Commit::ok);  // the clear
  EXPECT_EQ(read_through(t, "k"), std::nullopt) << "answered 'not applied', yet applied";
  EXPECT_EQ(t.tier->stats().dirty_items, 0u);
}

// Defect 4, write-behind: waiting writes are bounded; one answered 503 leaves the queue.
TEST(StoreTierFaults, WaitingWritesAreBounded) {
  TierOptions o = behind(1h, 60s);
  o.max_dirty = 4096;
  o.max_waiting = 4096;
  Tier t(o);
  const std::string body(1500, 'x');
  std::vector<OutcomeLater> answers(8);
  int refused = 0, queued = 0;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    t.tier->put("k" + std::to_string(i), body, answers[i].done());
    auto now = now_of(answers[i]);
    if (!now) {
      ++queued;
    } else if (now->kind == tier::KeyOutcome::Kind::error) {
      ++refused;
      EXPECT_NE(now->error.find("queue full"), std::string::npos) << now->error;
    }
  }
  EXPECT_GT(refused, 0) << "writes waiting for room are not bounded";
  EXPECT_LE(queued * (1500 + 2 + 64), 4096 + 1500 + 2 + 64);
}

// Defect 4, reads: misses waiting on the store are bounded.
// A write-through write answered 503 at --store-timeout while its commit has not begun leaves
// the store's queue at once (Store::abandon), releasing what it held; it never takes effect, so
// its key is not of unknown outcome and reads agree with the store.
TEST(StoreTierFaults, AWriteAnsweredAtTheTimeoutLeavesTheStoreQueueAtOnce) {
  Tier t(through(100ms));
  OutcomeLater w;
  t.tier->put("k", std::string(4096, 'v'), w.done());
  EXPECT_FALSE(w.ready());
  ASSERT_TRUE(w.wait(5s));
  EXPECT_EQ(w.get().kind, tier::KeyOutcome::Kind::error);
  EXPECT_NE(w.get().error.find("store timeout"), std::string::npos) << w.get().error;
  for (int i = 0; i < 1000 && t.store->pending_commits() > 0; ++i) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(t.store->pending_commits(), 0u) << "a write answered 503 still waits in the store";
  EXPECT_EQ(t.store->abandoned(), 1u);
  EXPECT_EQ(read_through(t, "k"), std::nullopt);
  OutcomeLater again;  // the key is writable as ever
  t.tier->put("k", "v2", again.done());
  EXPECT_FALSE(again.ready());
  t.store->complete_commit(Commit::ok);
  ASSERT_TRUE(again.wait(5s));
  EXPECT_EQ(again.get().kind, tier::KeyOutcome::Kind::created);
  EXPECT_EQ(read_through(t, "k"), "v2");
}

TEST(StoreTierFaults, PendingReadsAreBounded) {
  TierOptions o = through();
  o.max_waiting = 4096;
  Tier t(o);
  int refused = 0;
  std::vector<Get> gets;
  for (int i = 0; i < 200; ++i) {
    gets.push_back(get(t, "key-" + std::to_string(i)));
    if (gets.back().now && gets.back().now->kind == tier::KeyLookup::Kind::error) ++refused;
  }
  EXPECT_GT(refused, 0) << "reads waiting on the store are not bounded";
  while (t.store->pending_reads() > 0) t.store->complete_read(0);
  // Answered reads give their room back.
  Get again = get(t, "key-0");
  EXPECT_FALSE(again.now && again.now->kind == tier::KeyLookup::Kind::error);
}

}  // namespace

// Issue 44: two concurrent write-behind DELETEs of a key only the store holds both asked the
// store, and both answered 204. The second is decided after the first's tombstone: 404, also
// when that tombstone was flushed before the second's read (which ran earlier) returned.
TEST(StoreTierFaults, ConcurrentWriteBehindDeletesAnswer204Once) {
  for (const bool flush_between : {false, true}) {
    Tier t(behind(0ms));
    ASSERT_TRUE(t.tier->try_put("k", "v"));
    t.tier->flush_step();
    t.store->complete_commit(Commit::ok);
    t.tier->reset_cache();  // "k" is in the store only
    OutcomeLater d1, d2;
    t.tier->del("k", d1.done());
    EXPECT_FALSE(d1.ready());
    t.tier->del("k", d2.done());
    EXPECT_FALSE(d2.ready());
    ASSERT_EQ(t.store->pending_reads(), 2u);
    t.store->run_read(1);  // the second DELETE's read sees "k" before the first deletes it
    t.store->complete_read(0);
    ASSERT_TRUE(d1.ready());
    EXPECT_EQ(d1.get().kind, tier::KeyOutcome::Kind::deleted);
    if (flush_between) {
      t.tier->flush_step();
      t.store->complete_commit(Commit::ok);
      ASSERT_EQ(t.store->value("k"), std::nullopt);
    }
    t.store->complete_read(0);
    while (!d2.ready() && t.store->pending_reads() > 0) t.store->complete_read(0);
    ASSERT_TRUE(d2.ready());
    EXPECT_EQ(d2.get().kind, tier::KeyOutcome::Kind::absent)
        << (flush_between ? "tombstone flushed before the second read returned" : "");
  }
}

// Issue 44: a miss joined a store read begun before a write of the key was acknowledged, and
// got that read's older answer (a GET after a DELETE answered 204 served the deleted value).
TEST(StoreTierFaults, AMissAfterAnAcknowledgedWriteDoesNotJoinAnOlderRead) {
  Tier t(through());
  OutcomeLater w, d;
  t.tier->put("k", "old", w.done());
  EXPECT_FALSE(w.ready());
  t.store->complete_commit(Commit::ok);
  t.tier->reset_cache();
  Get g1 = get(t, "k");  // a miss: its read runs now, seeing "old"
  ASSERT_FALSE(g1.now);
  t.store->run_read(0);
  t.tier->del("k", d.done());
  EXPECT_FALSE(d.ready());
  t.store->complete_commit(Commit::ok);
  ASSERT_TRUE(d.ready());
  EXPECT_EQ(d.get().kind, tier::KeyOutcome::Kind::deleted);
  Get g2 = get(t, "k");  // after the 204: must not get the older read's "old"
  ASSERT_FALSE(g2.now);
  ASSERT_EQ(t.store->pending_reads(), 2u) << "the miss joined the read begun before the DELETE";
  t.store->complete_read(0);
  ASSERT_TRUE(g1.later.ready());  // concurrent with the DELETE: either answer is right
  t.store->complete_read(0);
  ASSERT_TRUE(g2.later.ready());
  EXPECT_EQ(g2.later.get().kind, tier::KeyLookup::Kind::absent);
  EXPECT_FALSE(t.cache.get("k")) << "the older read filled the cache";
}

// Found by the linearizability checker and the simulation once commits could be applied before
// their callbacks ran (a group commit): two writes of an uncached key in one group, a miss
// reading the newer one, then the older one's callback caching its value: a hit then went back.
TEST(StoreTierFaults, AnOlderWriteOfAGroupDoesNotCacheBehindANewerOne) {
  Tier t(through());
  OutcomeLater w1, w2;
  t.tier->put("k", "v1", w1.done());
  EXPECT_FALSE(w1.ready());
  t.tier->put("k", "v2", w2.done());
  EXPECT_FALSE(w2.ready());
  t.store->apply_commit(Commit::ok);
  t.store->apply_commit(Commit::ok);  // one group: the store holds v2, no callback has run
  EXPECT_EQ(read_through(t, "k"), std::optional<std::string>("v2"));
  t.store->complete_commit(Commit::ok);  // v1's callback
  ASSERT_TRUE(w1.ready());
  EXPECT_EQ(read_through(t, "k"), std::optional<std::string>("v2")) << "went back to v1";
  t.store->complete_commit(Commit::ok);  // v2's: the last write of the key caches its value
  ASSERT_TRUE(w2.ready());
  EXPECT_EQ(t.cache.get("k"), std::optional<std::string>("v2"));
}

// The same with the older value cached already: a store read that saw a write applied ahead of
// its callback must not leave the cache serving the value before it.
TEST(StoreTierFaults, AStoreReadAheadOfTheCacheEvictsTheOlderValue) {
  Tier t(through());
  Get g = get(t, "k");  // a miss of an absent key: its read waits
  ASSERT_FALSE(g.now);
  OutcomeLater w1, w2;
  t.tier->put("k", "v1", w1.done());
  EXPECT_FALSE(w1.ready());
  t.store->complete_commit(Commit::ok);
  ASSERT_EQ(t.cache.get("k"), std::optional<std::string>("v1"));
  t.tier->put("k", "v2", w2.done());
  EXPECT_FALSE(w2.ready());
  t.store->apply_commit(Commit::ok);  // the store holds v2; its callback is due
  t.store->complete_read(0);          // the read runs now: it sees v2
  ASSERT_TRUE(g.later.ready());
  ASSERT_EQ(g.later.get().kind, tier::KeyLookup::Kind::found);
  EXPECT_EQ(*g.later.get().value, "v2");
  EXPECT_NE(t.cache.get("k"), std::optional<std::string>("v1")) << "a hit would go back to v1";
  EXPECT_EQ(read_through(t, "k"), std::optional<std::string>("v2"));
  t.store->complete_commit(Commit::ok);
  EXPECT_EQ(t.cache.get("k"), std::optional<std::string>("v2"));
}
