// resp_reply.hh — renders replies into the connection's output buffer in the protocol the
// connection chose (HELLO 2 or 3): simple strings, errors, integers, bulk strings, arrays, and
// the types where RESP3 differs from RESP2: the null ("_" / "$-1" or "*-1"), the double (a score:
// "," / a bulk string, "%.17g" as Redis 7.0 writes both), the map ("%" / a flat array of twice
// as many elements) and the verbatim string ("=" / a bulk string, INFO's).
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
  explicit ReplyWriter(std::string& out, bool resp3 = false) : out_(&out), resp3_(resp3) {}
  std::string& buffer() { return *out_; }
  bool resp3() const { return resp3_; }

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
  void null() { out_->append(resp3_ ? "_\r\n" : "$-1\r\n"); }
  void null_array() { out_->append(resp3_ ? "_\r\n" : "*-1\r\n"); }
  // n field-value pairs follow.
  void map(std::size_t n) {
    if (!resp3_) return array(2 * n);
    out_->push_back('%');
    append_number(n);
    out_->append("\r\n");
  }
  // A member and its score of a WITHSCORES reply: a pair in RESP3, two elements in RESP2 (the
  // caller's array counts them: pairs_count()).
  void begin_pair() {
    if (resp3_) array(2);
  }
  std::size_t pairs_count(std::size_t pairs) const { return resp3_ ? pairs : 2 * pairs; }
  void verbatim_text(std::string_view s) {
    if (!resp3_) return bulk(s);
    out_->push_back('=');
    append_number(s.size() + 4);
    out_->append("\r\ntxt:");
    out_->append(s);
    out_->append("\r\n");
  }
  void array(std::size_t n) {
    out_->push_back('*');
    append_number(n);
    out_->append("\r\n");
  }
  // A score, as Redis 7.0 renders a double in RESP2 (util.c, d2string): "inf", "-inf", "0"
  // for either zero, else "%.17g" (1.1 -> "1.1000000000000001", 3 -> "3", 1e20 -> "1e+20").
  void score(double d) {
    char buf[32];
    std::string_view text;
    if (std::isinf(d)) {
      text = d > 0 ? "inf" : "-inf";
    } else if (d == 0) {
      text = "0";
    } else {
      text = std::string_view(buf,
                              static_cast<std::size_t>(std::snprintf(buf, sizeof buf, "%.17g", d)));
    }
    if (!resp3_) return bulk(text);
    out_->push_back(',');
    out_->append(text);
    out_->append("\r\n");
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
  bool resp3_;
};

}  // namespace server::resp
