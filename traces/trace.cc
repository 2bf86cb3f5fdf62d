// trace.cc — reading and writing the trace formats (see trace.hh).
#include "traces/trace.hh"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace traces {
namespace {

constexpr std::size_t kRecordBytes = sizeof(std::uint64_t);

std::uint64_t load_le64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

Trace parse_binary(std::string_view bytes, const std::string& name) {
  const std::string_view body = bytes.substr(kBinaryMagic.size());
  if (body.size() % kRecordBytes != 0) {
    throw TraceError(name + ": binary trace truncated: " + std::to_string(body.size()) +
                     " bytes after the header is not a whole number of 8-byte records");
  }
  Trace t;
  t.ids.reserve(body.size() / kRecordBytes);
  std::unordered_set<std::uint64_t> seen;
  for (std::size_t off = 0; off < body.size(); off += kRecordBytes) {
    t.ids.push_back(load_le64(body.data() + off));
    seen.insert(t.ids.back());
  }
  t.distinct = seen.size();
  return t;
}

Trace parse_text(std::string_view bytes, const std::string& name) {
  Trace t;
  std::unordered_map<std::string_view, std::uint64_t> ids;  // views into `bytes`
  std::size_t line = 0;
  while (!bytes.empty()) {
    ++line;
    const std::size_t nl = bytes.find('\n');
    std::string_view key = bytes.substr(0, nl);
    bytes.remove_prefix(nl == std::string_view::npos ? bytes.size() : nl + 1);
    if (!key.empty() && key.back() == '\r') key.remove_suffix(1);
    if (key.empty()) throw TraceError(name + ":" + std::to_string(line) + ": empty key");
    if (key.size() > kMaxKeyBytes) {
      throw TraceError(name + ":" + std::to_string(line) + ": key of " +
                       std::to_string(key.size()) + " bytes (keys are 1.." +
                       std::to_string(kMaxKeyBytes) + " bytes)");
    }
    const auto [it, fresh] = ids.try_emplace(key, ids.size());
    t.ids.push_back(it->second);
  }
  t.distinct = ids.size();
  return t;
}

}  // namespace

Trace parse_trace(std::string_view bytes, const std::string& name) {
  Trace t = bytes.starts_with(kBinaryMagic) ? parse_binary(bytes, name) : parse_text(bytes, name);
  if (t.ids.empty()) throw TraceError(name + ": the trace has no requests");
  return t;
}

Trace read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw TraceError(path + ": read error");
  const std::string bytes = std::move(buf).str();
  return parse_trace(bytes, path);
}

bool is_binary_path(std::string_view path) {
  return path.ends_with(".bin");
}

void append_binary_header(std::string& out) {
  out.append(kBinaryMagic);
}

void append_binary_record(std::string& out, std::uint64_t id) {
  char rec[kRecordBytes];
  for (std::size_t i = 0; i < kRecordBytes; ++i) rec[i] = static_cast<char>((id >> (8 * i)) & 0xff);
  out.append(rec, kRecordBytes);
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw TraceError(path + ": cannot write: " + std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) throw TraceError(path + ": write error");
}

void write_trace(const std::string& path, std::span<const std::uint64_t> ids) {
  std::string bytes;
  if (is_binary_path(path)) {
    bytes.reserve(kBinaryMagic.size() + ids.size() * kRecordBytes);
    append_binary_header(bytes);
    for (std::uint64_t id : ids) append_binary_record(bytes, id);
  } else {
    bytes.reserve(ids.size() * 8);
    for (std::uint64_t id : ids) {
      bytes += 'k';
      bytes += std::to_string(id);
      bytes += '\n';
    }
  }
  write_file(path, bytes);
}

}  // namespace traces
