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
    {"get", 2, false, cmd_get, "string", "Returns the string value of a key."},
    {"set", -3, true, cmd_set, "string", "Sets the string value of a key, ignoring its type."},
    {"zadd", -4, true, cmd_zadd, "sorted-set",
     "Adds one or more members to a sorted set, or updates their scores."},
    {"zrevrank", -3, false, cmd_zrevrank, "sorted-set",
     "Returns the index of a member in a sorted set ordered by descending scores."},
    {"zrevrange", -4, false, cmd_zrevrange, "sorted-set",
     "Returns members in a sorted set within a range of indexes in reverse order."},
    {"zscore", 3, false, cmd_zscore, "sorted-set",
     "Returns the score of a member in a sorted set."},
    {"zincrby", 4, true, cmd_zincrby, "sorted-set",
     "Increments the score of a member in a sorted set."},
    {"mget", -2, false, cmd_mget, "string",
     "Atomically returns the string values of one or more keys."},
    {"mset", -3, true, cmd_mset, "string", "Sets the string values of one or more keys."},
    {"del", -2, true, cmd_del, "generic", "Deletes one or more keys."},
    {"exists", -2, false, cmd_exists, "generic", "Determines whether one or more keys exist."},
    {"ping", -1, false, cmd_ping, "connection", "Returns the server's liveliness response."},
    {"setex", 4, true, cmd_setex, "string", "Sets the string value and expiration time of a key."},
    {"unlink", -2, true, cmd_del, "generic", "Deletes one or more keys."},
    {"zrange", -4, false, cmd_zrange, "sorted-set",
     "Returns members in a sorted set within a range of indexes."},
    {"zrank", -3, false, cmd_zrank, "sorted-set",
     "Returns the index of a member in a sorted set ordered by ascending scores."},
    {"zcard", 2, false, cmd_zcard, "sorted-set", "Returns the number of members in a sorted set."},
    {"zmscore", -3, false, cmd_zmscore, "sorted-set",
     "Returns the score of one or more members in a sorted set."},
    {"zrem", -3, true, cmd_zrem, "sorted-set", "Removes one or more members from a sorted set."},
    {"ttl", 2, false, cmd_ttl, "generic", "Returns the expiration time in seconds of a key."},
    {"getdel", 2, true, cmd_getdel, "string",
     "Returns the string value of a key after deleting the key."},
    {"expire", -3, true, cmd_expire, "generic", "Sets the expiration time of a key in seconds."},
    {"pexpire", -3, true, cmd_pexpire, "generic",
     "Sets the expiration time of a key in milliseconds."},
    {"persist", 2, true, cmd_persist, "generic", "Removes the expiration time of a key."},
    {"pttl", 2, false, cmd_pttl, "generic",
     "Returns the expiration time in milliseconds of a key."},
    {"strlen", 2, false, cmd_strlen, "string", "Returns the length of a string value."},
    {"type", 2, false, cmd_type, "generic", "Determines the type of value stored at a key."},
    {"echo", 2, false, cmd_echo, "connection", "Returns the given string."},
    {"dbsize", 1, false, cmd_dbsize, "server", "Returns the number of keys in the database."},
    {"info", -1, false, cmd_info, "server", "Returns information and statistics about the server."},
    {"select", 2, false, cmd_select, "connection",
     "Changes the selected database (only 0 exists)."},
    {"auth", -2, false, cmd_auth, "connection", "Authenticates the connection (the admin token)."},
    {"hello", -1, false, cmd_hello, "connection", "Handshakes with the server (RESP2 only)."},
    {"client", -2, false, cmd_client, "connection", "CLIENT SETNAME, GETNAME, ID and SETINFO."},
    {"command", -1, false, cmd_command, "server",
     "Returns detailed information about all commands."},
    {"config", -2, false, cmd_config, "server", "CONFIG GET: the parameters tools ask for."},
    {"quit", -1, false, cmd_quit, "connection", "Closes the connection."},
    {"flushall", -1, true, cmd_flushall, "server",
     "Removes all keys and boards (the full reset, as POST /reset)."},
    {"flushdb", -1, true, cmd_flushall, "server",
     "Removes all keys and boards (the full reset, as POST /reset)."},
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
  // The 128 bytes count the quotes and spaces already written too.
  std::string quoted;
  for (std::size_t i = 1; i < args.size() && quoted.size() < 128; ++i) {
    append_quoted(quoted, args[i].substr(0, 128 - quoted.size()));
    quoted += ' ';
  }
  text += quoted;
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
