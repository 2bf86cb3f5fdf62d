// read_modify_write.hh — the commands that read a key and then change it from what they read:
// GETDEL, EXPIRE/PEXPIRE, PERSIST, SET ... KEEPTTL and SET ... GET. The keys' service has no
// such operation, so the RESP front composes one from two, and makes it atomic the way HTTP
// clients do: the write is conditional on the version it read (If-Match), and a write that
// finds the key changed in between reads again (at most kAttempts times, then -TRYAGAIN).
//
// One object per command, placed among the connection's replies (a barrier: the commands after
// it wait) before anything starts, so every answer, now or from a store thread, arrives the
// same way: it calls finished(), and render() runs on the connection's thread, where the next
// step is decided. A step that starts more work returns kDeferred (response_queue.hh: the reply
// continues), and is rendered again when that work answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/resp/commands.hh"
#include "server/transport/response_queue.hh"

namespace server::resp {

// What the read found.
struct Current {
  bool exists = false;
  std::string value;
  std::optional<std::chrono::milliseconds> ttl_left;  // nullopt: no TTL
  std::uint64_t version = 0;                          // 0: unknown (no condition possible)
};

// What to do about it: answer at once, or write (and answer `reply` once written).
struct Change {
  enum class Kind : std::uint8_t { answer, put, del } kind = Kind::answer;
  std::string reply;  // the RESP reply: at once (answer), or once the write succeeded
  std::string value;  // put: the new value
  std::chrono::milliseconds ttl{0};  // put: its TTL (0: none)
};

using Decide = std::function<Change(const Current&)>;

// Reads `key`, asks `decide`, makes the change; returns kDeferred (the reply comes later).
HandlerResult read_modify_write(Call& call, std::string_view key, Decide decide);

}  // namespace server::resp
