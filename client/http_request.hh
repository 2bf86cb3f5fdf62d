// http_request.hh — the HTTP/1.1 request of one key operation (GET, PUT with its value, DELETE
// of /key/KEY), the one wire form both the workers (worker.cc) and the preload (perf.cc) send;
// resp.hh's append_resp_key_command is its Redis-protocol twin. Board operations have their own
// builder (board_workload.hh).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/workload.hh"

namespace client {

// Appends type's request for `key` to out, with `Host: host`. A SET is a PUT carrying `value`
// (and ?ttl=ttl_seconds when that is not 0); a GET or DELETE ignores both. Allocates only when out
// grows.
void append_http_key_request(std::string& out, OpType type, std::string_view key,
                             std::string_view host, std::string_view value,
                             std::uint32_t ttl_seconds);

}  // namespace client
