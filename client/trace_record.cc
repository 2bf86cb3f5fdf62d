// trace_record.cc — merging and writing the recorded trace (see trace_record.hh).
#include "client/trace_record.hh"

#include <algorithm>

#include "traces/trace.hh"

namespace client {

void merge_round_robin(const std::vector<const std::vector<std::uint64_t>*>& per_thread,
                       std::vector<std::uint64_t>& out) {
  std::size_t longest = 0, total = 0;
  for (const auto* v : per_thread) {
    longest = std::max(longest, v->size());
    total += v->size();
  }
  out.reserve(out.size() + total);
  for (std::size_t i = 0; i < longest; ++i)
    for (const auto* v : per_thread)
      if (i < v->size()) out.push_back((*v)[i]);
}

bool write_recorded_trace(const WorkloadConfig& workload, const std::vector<std::uint64_t>& entries,
                          const std::string& path, std::string& error) {
  std::string bytes;
  if (traces::is_binary_path(path)) {
    bytes.reserve(traces::kBinaryMagic.size() + entries.size() * sizeof(std::uint64_t));
    traces::append_binary_header(bytes);
    for (std::uint64_t e : entries) traces::append_binary_record(bytes, e);
  } else {
    const KeySpace keys(workload);
    char key[WorkloadConfig::kMaxKeyBytes];
    for (std::uint64_t e : entries) {
      bytes.append(key, keys.write_key(e >> 1, (e & 1) != 0, key));
      bytes += '\n';
    }
  }
  try {
    traces::write_file(path, bytes);
  } catch (const traces::TraceError& e) {
    error = std::string("--record-trace: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace client
