// flags.hh — cache_server's command line: the flag table, parse_flags and the --help text. It
// turns argv into a Config (config.hh) and reports the first bad flag as a one-line error; the
// checks that span several flags are config.hh's validate(). Kept apart from config.hh so the
// configuration (what the server runs with) and its spelling on the command line change apart.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/config.hh"

namespace server {

// What parse_flags found: a config to run, a request for help, or a one-line error.
struct HelpRequested {};
struct FlagError {
  std::string message;
};
using ParseResult = std::variant<Config, HelpRequested, FlagError>;

ParseResult parse_flags(const std::vector<std::string_view>& args);  // args exclude argv[0]

// "64M" → 67108864. Suffixes K/M/G (also k/m/g, optional trailing B/b) are powers of 1024.
// Returns false on garbage, an empty number, or overflow.
bool parse_size(std::string_view text, std::size_t& out);

std::string usage_text();

}  // namespace server
