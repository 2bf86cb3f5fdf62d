// resp_reply.hh — renders RESP2 replies into the connection's output buffer: simple strings,
// errors, integers, bulk strings (and the null bulk), arrays (and the null array), and scores as
// Redis 7.0 sends a double in RESP2 (a bulk string, "%.17g").
// Appends only: no allocation once the buffer is warm.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace server::resp {

class ReplyWriter {
 public:
  explicit ReplyWriter(std::string& out) : out_(&out) {}
  void retarget(std::string& out) { out_ = &out; }
  std::string& buffer() { return *out_; }

  void simple(std::string_view s) { line('+', s); }
  void ok() { out_->append("+OK\r\n"); }
  // `text` starts with the error's class ("ERR ...", "WRONGTYPE ...", "OOM ...").
  void error(std::string_view text) { line('-', text); }
  void integer(std::int64_t n) {
    out_->push_back(':');
    append_number(n);
    out_->append("\r\n");
  }
  void bulk(std::string_view s) {
    bulk_header(s.size());
    out_->append(s);
    out_->append("\r\n");
  }
  // "$<n>\r\n": the caller appends the n bytes, then bulk_end().
  void bulk_header(std::size_t n) {
    out_->push_back('$');
    append_number(n);
    out_->append("\r\n");
  }
  void bulk_end() { out_->append("\r\n"); }
  void null() { out_->append("$-1\r\n"); }
  void null_array() { out_->append("*-1\r\n"); }
  void array(std::size_t n) {
    out_->push_back('*');
    append_number(n);
    out_->append("\r\n");
  }
  // A score, as Redis 7.0 renders a double in RESP2 (util.c, d2string): "inf", "-inf", "0"
  // for either zero, else "%.17g" (1.1 -> "1.1000000000000001", 3 -> "3", 1e20 -> "1e+20").
  void score(double d) {
    if (std::isinf(d)) return bulk(d > 0 ? "inf" : "-inf");
    if (d == 0) return bulk("0");
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.17g", d);
    bulk(std::string_view(buf, static_cast<std::size_t>(n)));
  }

 private:
  template <class N>
  void append_number(N n) {
    char buf[24];
    const char* end = std::to_chars(buf, buf + sizeof buf, n).ptr;
    out_->append(buf, static_cast<std::size_t>(end - buf));
  }
  void line(char type, std::string_view s) {
    out_->push_back(type);
    out_->append(s);
    out_->append("\r\n");
  }
  std::string* out_;
};

}  // namespace server::resp
