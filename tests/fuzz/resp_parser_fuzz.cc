// resp_parser_fuzz.cc — libFuzzer target over the RESP request decoder
// (server/resp/resp_parser.hh), the object every RESP connection drives. The input's first bytes
// choose the pieces the rest is fed in (as reads would split it) and the limits (small ones, so
// every limit is reached); the rest is the byte stream. Checks what must hold for any input: feed()
// consumes at most what it was given, and all of it short of a command or an error; a command has
// at least one argument and holds exactly its arguments' bytes; after next() nothing of a command
// is held; an error is final (nothing more is fed, as the connection answers it and closes); and
// the same stream fed whole gives the same commands and the same error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/resp/resp_parser.hh"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

using server::resp::ParserLimits;
using server::resp::RespParser;

struct Outcome {
  std::vector<std::string> commands;  // each command's arguments, joined with their lengths
  std::string error;
};

// The stream fed in pieces whose sizes cycle through `sizes` (the caller's buffer keeps what a
// feed() left, and the next piece is appended to it, as Connection does).
Outcome run(std::string_view stream, const std::vector<std::size_t>& sizes, ParserLimits limits) {
  RespParser parser(limits);
  Outcome out;
  std::string pending;
  std::size_t offset = 0;
  std::size_t piece = 0;
  while (parser.state() != RespParser::State::error) {
    if (offset < stream.size()) {
      const std::size_t n = std::min(sizes[piece++ % sizes.size()], stream.size() - offset);
      pending.append(stream.substr(offset, n));
      offset += n;
    } else if (pending.empty()) {
      break;
    }
    while (!pending.empty()) {
      const std::size_t used = parser.feed(pending);
      check(used <= pending.size());
      pending.replace(0, used, used, '#');  // a view into the caller's bytes would show
      pending.erase(0, used);
      if (parser.state() == RespParser::State::error) break;
      if (parser.state() == RespParser::State::need_more) {
        check(pending.empty());  // short of a command, everything given is kept
        break;
      }
      check(!parser.args().empty());
      std::size_t bytes = 0;
      std::string joined;
      for (const std::string_view arg : parser.args()) {
        bytes += arg.size();
        joined += std::to_string(arg.size());
        joined += ':';
        joined += arg;
      }
      // The storage holds the arguments, nothing else, plus the per-argument bookkeeping.
      check(bytes + parser.args().size() * RespParser::kPerArgumentBytes == parser.held_bytes());
      out.commands.push_back(std::move(joined));
      parser.next();
      check(parser.state() == RespParser::State::need_more);
      check(!parser.got_some() && parser.held_bytes() == 0);
    }
  }
  if (parser.state() == RespParser::State::error) {
    out.error = parser.error();
    check(out.error.starts_with("Protocol error: "));
    parser.next();  // errors are final: next() keeps it, feed() takes nothing
    check(parser.state() == RespParser::State::error && parser.feed("PING\r\n") == 0);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.size() < 2) return 0;
  // Byte 0: how many piece sizes follow (1..8) and which limits apply; then one byte per size.
  const auto control = static_cast<std::uint8_t>(input[0]);
  const std::size_t count = (control & 7u) + 1;
  if (input.size() < 1 + count) return 0;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 1; i <= count; ++i)
    sizes.push_back(static_cast<std::uint8_t>(input[i]) + 1u);
  input.remove_prefix(1 + count);

  ParserLimits limits;
  if ((control & 8u) == 0) {  // small limits, so that each is reached
    limits.max_bulk = 64;
    limits.max_args = 8;
    limits.max_inline = 48;
  }
  const Outcome pieces = run(input, sizes, limits);
  const Outcome whole = run(input, {input.size() + 1}, limits);
  check(pieces.commands == whole.commands);
  check(pieces.error == whole.error);
  return 0;
}
