// bench_client's flag table: one row per flag with its names, its --help group, value name, help
// text and shown default, the texts of its two one-line errors, and the parser of its value.
// parse_args (cli.cc, on CLI11) and help_text are both generated from it, so they cannot disagree.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "client/config.hh"

namespace client {

// --help's layout: the flag names, then their text from this column, no line past kHelpWidth.
inline constexpr std::size_t kHelpColumn = 32;
inline constexpr std::size_t kHelpWidth = 100;

// A bad flag value or combination; its text is the one-line error.
struct FlagError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the command line said beyond the Config's values: the cross-flag rules need it.
struct GivenFlags {
  std::optional<unsigned> max_threads;
  std::optional<OpRatio> ratio;
  std::optional<double> miss_ratio;
  std::vector<std::string> in_order;  // the long names of the flags given, in command-line order

  bool has(std::string_view long_name) const;
  // Whichever of `a` and `b` was given last; "" when neither was.
  std::string last_of(std::string_view a, std::string_view b) const;
};

struct FlagRow {
  std::string group;          // the --help section it is listed under
  std::string names;          // CLI11's form: "-p,--port" or "--targets"
  std::string value_name;     // "PORT" in --help; empty: a switch (or --help itself)
  std::string help;           // '\n' starts a line; --help indents it to kHelpColumn
  std::string shown_default;  // --help appends "(default 8080)"; empty: none shown
  std::string needs;          // "--port needs a port": what a missing value lacks
  std::string expected;       // "invalid value '0' for --port (expected a port 1..65535)"
  // Stores the value (a switch gets ""); false: the value is invalid. Throws FlagError for an
  // error of its own. nullptr: the help flag, which CLI11 handles.
  bool (*parse)(Config& cfg, GivenFlags& given, const std::string& value);

  std::string long_name() const;   // "--port"
  std::string short_name() const;  // "-p", or ""
};

// Every flag of bench_client (not of `merge` or `place`), in --help order.
const std::vector<FlagRow>& flag_table();

}  // namespace client
