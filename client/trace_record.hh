// trace_record.hh — bench_client --record-trace: the keys of the requests it sends, kept cheaply
// on the request path and written once at the end as a trace (traces/trace.hh) that
// traces/trace_replay can replay through the cache library.
//
// On the request path each worker appends one 8-byte entry per request to its own vector (no
// lock, no formatting): key index << 1 | cold. After a point's threads join, their vectors are
// merged round-robin (thread 0's first request, thread 1's first, ..., thread 0's second, ...),
// an approximation of arrival order for threads running at similar rates; points follow each
// other in sweep order. Warm-up and measured requests are recorded (the server sees both); the
// preload is not (it is setup, not workload). GET, PUT and DELETE all count as one request for
// their key: a look-aside replay treats each as an access.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/config.hh"
#include "client/workload.hh"

namespace client {

inline std::uint64_t trace_entry(const Op& op) {
  return op.key << 1 | (op.cold ? 1u : 0u);
}

// Appends the per-thread entries to `out`, interleaved one request per thread at a time.
void merge_round_robin(const std::vector<const std::vector<std::uint64_t>*>& per_thread,
                       std::vector<std::uint64_t>& out);

// Writes `entries` to `path`: the binary trace form with the entries as object ids if the path
// ends in ".bin", else one key per line, exactly as sent. Returns false with `error` set when
// the file cannot be written.
bool write_recorded_trace(const WorkloadConfig& workload, const std::vector<std::uint64_t>& entries,
                          const std::string& path, std::string& error);

}  // namespace client
