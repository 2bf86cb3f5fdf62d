// command_table.cc — the one table of RESP commands (commands.hh) and the small parsers the
// command files share. Ordered by how often a cache and leaderboard workload sends them, so
// the linear, case-insensitive lookup finds GET and SET first (as the HTTP router orders its
// methods); a table of 40 rows needs no hash.
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "server/resp/commands.hh"
#include "server/transport/stats.hh"

namespace server::resp {

namespace {

// Redis's arities (COMMAND INFO): n counts the name; -n means at least n.
constexpr Command kCommands[] = {
    {"get", 2, false, cmd_get},
    {"set", -3, true, cmd_set},
    {"zadd", -4, true, cmd_zadd},
    {"zrevrank", -3, false, cmd_zrevrank},
    {"zrevrange", -4, false, cmd_zrevrange},
    {"zscore", 3, false, cmd_zscore},
    {"zincrby", 4, true, cmd_zincrby},
    {"mget", -2, false, cmd_mget},
    {"mset", -3, true, cmd_mset},
    {"del", -2, true, cmd_del},
    {"exists", -2, false, cmd_exists},
    {"ping", -1, false, cmd_ping},
    {"setex", 4, true, cmd_setex},
    {"unlink", -2, true, cmd_del},
    {"zrange", -4, false, cmd_zrange},
    {"zrank", -3, false, cmd_zrank},
    {"zcard", 2, false, cmd_zcard},
    {"zmscore", -3, false, cmd_zmscore},
    {"zrem", -3, true, cmd_zrem},
    {"ttl", 2, false, cmd_ttl},
    {"pttl", 2, false, cmd_pttl},
    {"strlen", 2, false, cmd_strlen},
    {"type", 2, false, cmd_type},
    {"echo", 2, false, cmd_echo},
    {"dbsize", 1, false, cmd_dbsize},
    {"info", -1, false, cmd_info},
    {"select", 2, false, cmd_select},
    {"auth", -2, false, cmd_auth},
    {"hello", -1, false, cmd_hello},
    {"client", -2, false, cmd_client},
    {"command", -1, false, cmd_command},
    {"config", -2, false, cmd_config},
    {"quit", -1, false, cmd_quit},
    {"flushall", -1, true, cmd_flushall},
    {"flushdb", -1, true, cmd_flushall},
};

static_assert(std::size(kCommands) <= kRespCommandSlots, "a counter per command: raise the slots");

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Redis quotes at most 128 bytes of each name and argument in its unknown-command reply.
void append_quoted(std::string& out, std::string_view s) {
  out += '\'';
  out.append(s.substr(0, 128));
  out += '\'';
}

}  // namespace

std::span<const Command> command_table() {
  return kCommands;
}

bool is_word(std::string_view arg, std::string_view word) {
  if (arg.size() != word.size()) return false;
  for (std::size_t i = 0; i < arg.size(); ++i) {
    if (lower(arg[i]) != word[i]) return false;
  }
  return true;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands) {
    if (is_word(name, c.name)) return &c;
  }
  return nullptr;
}

std::size_t command_slot(const Command& c) {
  return static_cast<std::size_t>(&c - kCommands);
}

void unknown_command(std::span<const std::string_view> args, ReplyWriter r) {
  // networking.c / server.c, processCommand: "unknown command '%.128s', with args beginning
  // with: " then "'%.*s' " for each argument while the text stays under 128 bytes of them.
  std::string text = "ERR unknown command ";
  append_quoted(text, args[0]);
  text += ", with args beginning with: ";
  std::size_t budget = 128;
  for (std::size_t i = 1; i < args.size() && budget > 0; ++i) {
    const std::string_view a = args[i].substr(0, budget);
    append_quoted(text, a);
    text += ' ';
    budget -= a.size();
  }
  r.error(text);
}

void wrong_arity(const Command& c, ReplyWriter r) {
  std::string text = "ERR wrong number of arguments for '";
  text += c.name;
  text += "' command";
  r.error(text);
}

bool parse_integer(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  if (s.size() > 1 && s[0] == '0') return false;
  if (s[0] == '-' && (s.size() == 1 || s[1] == '0')) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_score(std::string_view s, double& out) {
  // Redis: strtod on the whole argument, no spaces around it, NaN refused.
  if (s.empty() || s.size() > 128 || std::isspace(static_cast<unsigned char>(s.front())) ||
      std::isspace(static_cast<unsigned char>(s.back()))) {
    return false;
  }
  const std::string text(s);
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || std::isnan(d)) return false;
  if (errno == ERANGE && !std::isinf(d) && d != 0) return false;
  out = d;
  return true;
}

}  // namespace server::resp
