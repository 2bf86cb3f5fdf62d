// trace_test.cc — the trace formats (text, binary, malformed input), the look-aside replay
// (known hit counts on hand-made traces, exact object capacity) and the Zipf generator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "traces/generate.hh"
#include "traces/replay.hh"
#include "traces/trace.hh"

namespace {

using traces::parse_trace;
using traces::TraceError;

std::string binary_of(const std::vector<std::uint64_t>& ids) {
  std::string out;
  traces::append_binary_header(out);
  for (auto id : ids) traces::append_binary_record(out, id);
  return out;
}

// The message of the TraceError that parsing `bytes` throws ("" when it does not throw).
std::string error_of(const std::string& bytes) {
  try {
    parse_trace(bytes, "t");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceText, InternsKeysInOrderOfFirstAppearance) {
  const auto t = parse_trace("a\nb\na\r\nc\nb", "t");  // CRLF and a missing final newline
  EXPECT_EQ(t.ids, (std::vector<std::uint64_t>{0, 1, 0, 2, 1}));
  EXPECT_EQ(t.distinct, 3u);
}

TEST(TraceText, MalformedInputNamesTheLine) {
  EXPECT_EQ(error_of("a\n\nb\n"), "t:2: empty key");
  EXPECT_EQ(error_of("a\n" + std::string(251, 'x') + "\n"),
            "t:2: key of 251 bytes (keys are 1..250 bytes)");
  EXPECT_EQ(error_of(""), "t: the trace has no requests");
  EXPECT_EQ(error_of(std::string(250, 'x')), "");  // the longest key is fine
}

TEST(TraceBinary, RoundTripsLittleEndianIds) {
  const std::vector<std::uint64_t> ids = {7, 0x0102030405060708ull, 7, ~0ull};
  const std::string bytes = binary_of(ids);
  ASSERT_EQ(bytes.size(), 8u + 4 * 8);
  EXPECT_EQ(bytes.substr(0, 8), "CCTRACE1");
  EXPECT_EQ(static_cast<unsigned char>(bytes[16]), 0x08);  // least significant byte first
  const auto t = parse_trace(bytes, "t");
  EXPECT_EQ(t.ids, ids);
  EXPECT_EQ(t.distinct, 3u);
}

TEST(TraceBinary, TruncatedRecordIsAnError) {
  EXPECT_EQ(error_of(binary_of({1, 2}) + "abc"),
            "t: binary trace truncated: 19 bytes after the header is not a whole number of 8-byte "
            "records");
  EXPECT_EQ(error_of("CCTRACE1"), "t: the trace has no requests");
}

TEST(TraceFile, WriteThenReadBothForms) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::vector<std::uint64_t> ids = {5, 3, 5, 9};
  const std::string bin = (dir / "trace_test_roundtrip.bin").string();
  const std::string txt = (dir / "trace_test_roundtrip.txt").string();
  traces::write_trace(bin, ids);
  traces::write_trace(txt, ids);
  EXPECT_EQ(traces::read_trace(bin).ids, ids);
  EXPECT_EQ(traces::read_trace(txt).ids, (std::vector<std::uint64_t>{0, 1, 0, 2}));  // interned
  std::ifstream in(txt);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "k5");
  std::filesystem::remove(bin);
  std::filesystem::remove(txt);
}

TEST(TraceFile, MissingFileIsAClearError) {
  try {
    traces::read_trace("/nonexistent/trace.txt");
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/trace.txt: cannot open: No such file or directory");
  }
}

traces::ReplayResult run(const std::vector<std::uint64_t>& ids, cache::Evictor e,
                         std::size_t capacity, std::size_t warmup = 0) {
  traces::ReplayOptions o;
  o.capacity = capacity;
  o.warmup = warmup;
  return traces::replay(ids, e, o);
}

TEST(Replay, LruAndFifoOnAHandMadeTrace) {
  // Capacity 2. a b a c b a:
  //   LRU:  a- b- a+ c-(evicts b) b-(evicts a) a-(evicts c)  -> 1 hit
  //   FIFO: a- b- a+ c-(evicts a) b+ a-(evicts b)            -> 2 hits
  const std::vector<std::uint64_t> ids = {1, 2, 1, 3, 2, 1};
  const auto lru = run(ids, cache::Evictor::lru, 2);
  EXPECT_EQ(lru.hits, 1u);
  EXPECT_EQ(lru.requests, 6u);
  EXPECT_EQ(lru.evictions, 3u);
  const auto fifo = run(ids, cache::Evictor::fifo, 2);
  EXPECT_EQ(fifo.hits, 2u);
  EXPECT_EQ(fifo.evictions, 2u);
}

TEST(Replay, WarmupIsReplayedButNotCounted) {
  const std::vector<std::uint64_t> ids = {1, 2, 1, 2, 1, 2};
  const auto r = run(ids, cache::Evictor::lru, 2, 2);
  EXPECT_EQ(r.requests, 4u);
  EXPECT_EQ(r.hits, 4u);
  EXPECT_DOUBLE_EQ(r.hit_ratio(), 1.0);
}

TEST(Replay, HoldsExactlyCapacityObjects) {
  std::vector<std::uint64_t> ids;
  for (std::uint64_t i = 0; i < 1000; ++i) ids.push_back(i);
  for (cache::Evictor e : traces::known_evictors()) {
    const auto r = run(ids, e, 37);
    EXPECT_EQ(r.items_at_end, 37u) << cache::to_string(e);  // full, and never above N
    EXPECT_EQ(r.hits, 0u) << cache::to_string(e);
    // Without an admission filter every new key past the 37th evicts one.
    if (e == cache::Evictor::fifo || e == cache::Evictor::lru || e == cache::Evictor::clock) {
      EXPECT_EQ(r.evictions, 1000u - 37u) << cache::to_string(e);
    }
  }
  // A loop over capacity keys hits every time after the first pass, whatever the policy.
  std::vector<std::uint64_t> loop;
  for (int pass = 0; pass < 3; ++pass)
    for (std::uint64_t i = 0; i < 37; ++i) loop.push_back(i);
  for (cache::Evictor e : traces::known_evictors())
    EXPECT_EQ(run(loop, e, 37).hits, 74u) << cache::to_string(e);
}

TEST(Replay, KnowsTheLibraryEvictorsByName) {
  const auto known = traces::known_evictors();
  for (const char* name : {"fifo", "lru", "clock"}) {
    const auto e = cache::parse_evictor(name);
    ASSERT_TRUE(e);
    EXPECT_NE(std::find(known.begin(), known.end(), *e), known.end()) << name;
  }
  EXPECT_EQ(std::find(known.begin(), known.end(), cache::Evictor::none), known.end());
  EXPECT_EQ(traces::parse_evictor_list("lru,fifo"),
            (std::vector<cache::Evictor>{cache::Evictor::lru, cache::Evictor::fifo}));
  EXPECT_THROW(traces::parse_evictor_list("lru,bogus"), std::invalid_argument);
  EXPECT_THROW(traces::parse_evictor_list(""), std::invalid_argument);
}

TEST(Generate, SameSpecSameTraceAndTheScanIsOnePass) {
  traces::ZipfSpec spec{
      .keys = 100, .alpha = 0.99, .requests = 1000, .seed = 3, .scan_keys = 50, .scan_start = 500};
  const auto a = traces::generate_zipf(spec);
  EXPECT_EQ(a, traces::generate_zipf(spec));
  ASSERT_EQ(a.size(), 1050u);
  std::size_t hot = 0, scan = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] >= 100) {
      EXPECT_EQ(a[i], 100 + scan) << "scan ids are new and in order";
      EXPECT_LT(a[i - 1], 100u) << "each scan id follows a Zipf request";
      EXPECT_GE(i, 500u);
      ++scan;
    }
    hot += a[i] == 0;
  }
  EXPECT_EQ(scan, 50u);
  EXPECT_GT(hot, 100u);  // rank 0 has ~19% of the Zipf(0.99) mass over 100 keys
  spec.seed = 4;
  EXPECT_NE(a, traces::generate_zipf(spec));
  spec.keys = 0;
  EXPECT_THROW(traces::generate_zipf(spec), std::invalid_argument);
}

}  // namespace
