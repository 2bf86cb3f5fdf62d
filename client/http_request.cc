// http_request.cc — see http_request.hh.
#include "client/http_request.hh"

#include "common/decimal.hh"

namespace client {

void append_http_key_request(std::string& out, OpType type, std::string_view key,
                             std::string_view host, std::string_view value,
                             std::uint32_t ttl_seconds) {
  switch (type) {
    case OpType::kGet:
      out += "GET /key/";
      break;
    case OpType::kSet:
      out += "PUT /key/";
      break;
    case OpType::kDelete:
      out += "DELETE /key/";
      break;
    case OpType::kBoardSet:
    case OpType::kBoardTop:
    case OpType::kBoardScore:
      return;  // not key operations: board_workload.hh builds them
  }
  out += key;
  if (type == OpType::kSet && ttl_seconds != 0) {
    out += "?ttl=";
    common::append_decimal(out, ttl_seconds);
  }
  out += " HTTP/1.1\r\nHost: ";
  out += host;
  if (type == OpType::kSet) {
    out += "\r\nContent-Length: ";
    common::append_decimal(out, value.size());
    out += "\r\n\r\n";
    out += value;
  } else {
    out += "\r\n\r\n";
  }
}

}  // namespace client
