// trace.hh — request traces on disk: the text and binary formats, read and written.
//
// A trace is the sequence of keys a client asked for, one entry per request. It exists so the
// same requests can be replayed through the cache library (replay.hh), through libCacheSim
// (traces/crosscheck.py) and recorded from bench_client (--record-trace). Two forms:
//   text    one key per line ('\n'; a trailing '\r' is dropped), each 1..250 bytes, any bytes but
//           '\n'. Keys are interned on reading: the first distinct key becomes id 0, the next 1...
//   binary  the 8 bytes "CCTRACE1", then one little-endian u64 object id per request. libCacheSim
//           reads it as is (binary trace, format "<Q", trace_start_offset 8).
// read_trace() tells them apart by the magic. Writers pick the binary form for a path ending in
// ".bin" and the text form otherwise (write_trace()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace traces {

inline constexpr std::string_view kBinaryMagic = "CCTRACE1";
inline constexpr std::size_t kMaxKeyBytes = 250;  // as cache::kMaxKeyBytes and the HTTP API

// A malformed or unreadable trace; what() names the file and, for text, the line.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Trace {
  std::vector<std::uint64_t> ids;  // one object id per request, in request order
  std::uint64_t distinct = 0;      // number of distinct ids
};

// Reads a trace file in either form. Throws TraceError: missing or unreadable file, an empty
// trace, an empty or over-long text key, a binary body that is not a whole number of records.
Trace read_trace(const std::string& path);
// The same, from bytes already in memory; `name` is used in error messages.
Trace parse_trace(std::string_view bytes, const std::string& name);

// True when `path` names a binary trace by the convention above (ends in ".bin").
bool is_binary_path(std::string_view path);

// Appends the binary header / one record to `out` (the bytes of a binary trace).
void append_binary_header(std::string& out);
void append_binary_record(std::string& out, std::uint64_t id);

// Writes ids as a binary trace, or as text with key "k<id>" per line; throws TraceError on an
// I/O error.
void write_trace(const std::string& path, std::span<const std::uint64_t> ids);
// Writes `bytes` to `path` (replacing it); throws TraceError on an I/O error.
void write_file(const std::string& path, std::string_view bytes);

}  // namespace traces
