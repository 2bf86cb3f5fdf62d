// Command-line parsing and validation into a Config, and the --help text. Any bad flag yields a
// one-line error; nothing else in the client parses arguments.
#pragma once

#include <string>
#include <vector>

#include "client/config.hh"

namespace client {

enum class CliOutcome { kRun, kHelp, kError };

CliOutcome parse_args(const std::vector<std::string>& args, Config& cfg, std::string& error);
std::string help_text();

}  // namespace client
