// threaded_performance(): one measured point of the sweep. N worker threads run against the
// server, and their per-thread histograms and counters are merged into one PointResult.
// Throughput is completed requests divided by the wall-clock length of the measured window (from
// the common start after warm-up to the last completion), never derived from latency.
// Also the preload phase, which stores the workload's key space before the first point.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "client/config.hh"
#include "client/http.hh"
#include "client/result.hh"
#include "client/workload.hh"

namespace client {

struct Routing;

// --requests-total: thread `thread`'s share of requests_total (the first requests_total %
// nthreads threads take one more); nreqs when requests_total is 0.
std::uint64_t requests_of_thread(std::uint64_t requests_total, std::uint64_t nreqs,
                                 unsigned nthreads, unsigned thread);

// Open loop: sets p.valid / p.invalid_reason from the point's achieved rate, unsent sends and send
// lag (docs/client.md, "Validity of a point"). Closed-loop points stay valid.
void mark_point_validity(PointResult& p);

class Bench {
 public:
  Bench(const Config& cfg, const Endpoint& ep);
  // --targets: the nodes' endpoints in cfg.targets order. Every request, and every preloaded key
  // or board, goes to its node (placement.hh); PointResult::nodes is filled.
  Bench(const Config& cfg, std::vector<Endpoint> targets);
  ~Bench();
  // Runs nthreads threads, each issuing nreqs measured requests (0: run for cfg.duration; with
  // --requests-total, that total split across the threads instead), at --rate (0: closed loop).
  PointResult threaded_performance(unsigned nthreads, std::uint64_t nreqs) const;
  // The same at an open-loop rate of rate_rps in all (0: closed loop): the --slo search's steps.
  PointResult threaded_performance(unsigned nthreads, std::uint64_t nreqs, double rate_rps) const;
  // Stores keys [0, preload_count) with PUT, split across nthreads connections. Board workloads:
  // PUTs every member of every board once with its preload score (board_workload.hh), in
  // pipelined batches.
  PreloadResult preload(unsigned nthreads) const;
  const KeySpace& keyspace() const { return keys_; }
  // --record-trace: each point appends its requests' keys to *trace (null: not recorded).
  void record_into(std::vector<std::uint64_t>* trace) { trace_ = trace; }

 private:
  PreloadResult preload_boards(unsigned nthreads) const;
  // The nodes (--targets) or the one server.
  const std::vector<Endpoint>& endpoints() const;

  const Config& cfg_;
  Endpoint ep_;  // the server, or the first node
  KeySpace keys_;
  std::unique_ptr<Routing> routing_;   // --targets (null otherwise)
  std::vector<Endpoint> single_{ep_};  // endpoints() without --targets
  std::vector<std::uint64_t>* trace_ = nullptr;
};

}  // namespace client
