// stats.cc — see stats.hh.
#include "server/transport/stats.hh"

namespace server {

StatsTotals StatsRegistry::sum() const {
  StatsTotals t;
  constexpr auto relaxed = std::memory_order_relaxed;
  // Closed/finished are read (acquire) before opened/started, so a close counted here has its
  // open counted too and the differences never go negative.
  constexpr auto acquire = std::memory_order_acquire;
  for (std::size_t i = 0; i < count_; ++i) {
    const WorkerStats& w = workers_[i];
    t.connections_closed += w.connections_closed.load(acquire);
    t.busy_finished += w.busy_finished.load(acquire);
    t.resp_connections_closed += w.resp_connections_closed.load(acquire);
  }
  for (std::size_t i = 0; i < count_; ++i) {
    const WorkerStats& w = workers_[i];
    t.requests += w.requests.load(relaxed);
    t.hits += w.hits.load(relaxed);
    t.misses += w.misses.load(relaxed);
    t.sets += w.sets.load(relaxed);
    t.deletes += w.deletes.load(relaxed);
    t.reads += w.reads.load(relaxed);
    t.writes += w.writes.load(relaxed);
    t.connections_opened += w.connections_opened.load(relaxed);
    t.busy_started += w.busy_started.load(relaxed);
    t.resp_connections_opened += w.resp_connections_opened.load(relaxed);
    t.resp_unknown_commands += w.resp_unknown_commands.load(relaxed);
    for (std::size_t c = 0; c < kRespCommandSlots; ++c) {
      t.resp_commands[c] += w.resp_commands[c].load(relaxed);
    }
  }
  t.rejected_connections = rejected_connections_.load(relaxed);
  if (t.connections_opened < t.connections_closed) t.connections_opened = t.connections_closed;
  if (t.busy_started < t.busy_finished) t.busy_started = t.busy_finished;
  if (t.resp_connections_opened < t.resp_connections_closed) {
    t.resp_connections_opened = t.resp_connections_closed;
  }
  return t;
}

TimingTotals StatsRegistry::sum_timings() const {
  TimingTotals t;
  for (std::size_t i = 0; i < count_; ++i) {
    const RequestTimings& w = workers_[i].timings;
    for (std::size_t c = 0; c < kRouteClassCount; ++c) {
      for (std::size_t b = 0; b < kBucketCount; ++b) {
        t.by_class[c].buckets[b] += w.by_class[c].buckets[b].load(std::memory_order_relaxed);
      }
      t.by_class[c].sum_ns += w.by_class[c].sum_ns.load(std::memory_order_relaxed);
    }
  }
  return t;
}

}  // namespace server
