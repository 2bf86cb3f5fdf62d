// The Redis protocol (RESP2) for `bench_client --protocol resp`: the key workloads' requests as
// commands (GET, SET [EX], DEL) and the framing of a reply as the Response the worker already
// checks, so the same load loop, pipelining, histograms and --verify measure a RESP server
// (cache_server --resp-port, Redis) and an HTTP one with the same client (issue 46: RESP GET
// against HTTP GET at the same connections and depth).
//
// Hand-written rather than hiredis: the worker frames replies in its own receive buffer with no
// allocation, and only five reply types are needed. A reply maps to a status the worker's checks
// read as they read HTTP's:
//   $N bulk string  -> 200, the N bytes as the body      $-1 / *-1 null -> 404
//   +simple string  -> 200 (SET's +OK)                   :0 -> 404, :N (N != 0) -> 200 (DEL)
//   -error          -> 500 (counted as an unexpected status, the error text as the body)
// Arrays, RESP3 types (we send no HELLO) and anything malformed are kBad ("parse" errors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "client/http.hh"
#include "client/workload.hh"

namespace client {

// Appends op's command for `key` (a SET carries `value`, and EX ttl_seconds when not 0).
// Board operations have no RESP form: the caller rejects those workloads (cli.cc).
void append_resp_key_command(std::string& out, OpType type, std::string_view key,
                             std::string_view value, std::uint32_t ttl_seconds);
// Appends a command of any arguments, as a RESP array of bulk strings.
void append_resp_command(std::string& out, std::initializer_list<std::string_view> args);

// One reply's framing: `head_bytes` of type line, then `body_bytes` of bulk payload, then
// `trailer_bytes` (2, the bulk string's CRLF; 0 for the other types).
struct RespFrame {
  int status = 0;
  std::size_t head_bytes = 0;
  std::uint64_t body_bytes = 0;
  std::size_t trailer_bytes = 0;
  std::string_view line;  // a simple string's or an error's text (a view into data)
};

// Frames the reply at the start of data. kNeedMore while the type line is incomplete (a bulk
// string's payload may still be arriving: the caller compares data's size with the frame's, and
// what is here of its CRLF must be CRLF);
// kBad for a malformed reply or a type line past 64 KiB, a bulk length above 512 MiB (Redis's
// proto-max-bulk-len) or one that is not decimal.
ParseResult frame_resp_reply(std::string_view data, RespFrame& out);

}  // namespace client
