// trace_record_test.cc — bench_client --record-trace's pieces: the per-request entry, the
// round-robin merge of per-thread recordings, and both file forms (read back by traces/).
#include "client/trace_record.hh"

#include <gtest/gtest.h>

#include <filesystem>

#include "traces/trace.hh"

namespace client {
namespace {

TEST(TraceRecord, EntryKeepsKeyIndexAndColdness) {
  EXPECT_EQ(trace_entry(Op{OpType::kGet, 5, false}), 10u);
  EXPECT_EQ(trace_entry(Op{OpType::kSet, 5, true}), 11u);
}

TEST(TraceRecord, MergesThreadsRoundRobinAndAppends) {
  const std::vector<std::uint64_t> a = {1, 2, 3}, b = {10}, c = {20, 21};
  std::vector<std::uint64_t> out = {99};
  merge_round_robin({&a, &b, &c}, out);
  EXPECT_EQ(out, (std::vector<std::uint64_t>{99, 1, 10, 20, 2, 21, 3}));
}

TEST(TraceRecord, WritesKeysAsSentOrBinaryIds) {
  WorkloadConfig w;
  w.keys = 1000;
  const KeySpace keys(w);
  const std::vector<std::uint64_t> entries = {trace_entry(Op{OpType::kGet, 7, false}),
                                              trace_entry(Op{OpType::kGet, 7, true}),
                                              trace_entry(Op{OpType::kGet, 7, false})};
  const auto dir = std::filesystem::temp_directory_path();
  const std::string txt = (dir / "trace_record_test.txt").string();
  const std::string bin = (dir / "trace_record_test.bin").string();
  std::string error;
  ASSERT_TRUE(write_recorded_trace(w, entries, txt, error)) << error;
  ASSERT_TRUE(write_recorded_trace(w, entries, bin, error)) << error;
  const auto t = traces::read_trace(txt);
  EXPECT_EQ(t.ids, (std::vector<std::uint64_t>{0, 1, 0}));  // hot and cold key 7 differ
  EXPECT_EQ(traces::read_trace(bin).ids, entries);
  EXPECT_EQ(std::filesystem::file_size(txt),
            keys.key_size(7, false) * 2 + keys.key_size(7, true) + 3);
  std::filesystem::remove(txt);
  std::filesystem::remove(bin);
  EXPECT_FALSE(write_recorded_trace(w, entries, "/nonexistent/dir/t.txt", error));
  EXPECT_EQ(error,
            "--record-trace: /nonexistent/dir/t.txt: cannot write: No such file or directory");
}

}  // namespace
}  // namespace client
