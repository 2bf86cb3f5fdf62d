// commands.hh — the Redis commands the RESP front answers: what a command sees (Call), the one
// table of commands (name, arity, whether it writes, its function) and the lookup the engine
// makes for each command it parsed (resp_engine.cc). A new command is added in one place: a
// row of command_table.cc and its function in the file of its kind:
//   connection_commands.cc  PING ECHO QUIT SELECT AUTH HELLO CLIENT COMMAND
//   key_commands.cc         GET SET SETEX GETDEL DEL UNLINK EXISTS MGET MSET EXPIRE PEXPIRE
//                           PERSIST TTL PTTL STRLEN TYPE (read_modify_write.hh: GETDEL, ...)
//   board_commands.cc       ZADD ZINCRBY ZSCORE ZMSCORE ZCARD ZRANK ZREVRANK ZRANGE ZREVRANGE ZREM
//   server_commands.cc      INFO CONFIG DBSIZE FLUSHALL FLUSHDB
// A command answers as a handler does (handlers.hh): it renders its reply into the engine's
// output (Call::reply()) and returns {}, or hands a Reply (reply.hh) to a service that answers
// later and returns kDeferred; the engine keeps the replies in order either way. Errors are
// replies too ("-ERR ...", "-WRONGTYPE ..."), rendered by the command; a command never returns
// a failed HandlerResult.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "server/resp/resp_reply.hh"
#include "server/transport/handler_result.hh"
#include "server/transport/response_writer.hh"

namespace server {
struct ServerContext;
struct WorkerStats;
class ResponseQueue;
}  // namespace server

namespace server::resp {

// What one connection remembers between its commands.
struct Session {
  std::uint64_t id = 0;        // CLIENT ID: unique in the process, from 1
  std::string name;            // CLIENT SETNAME
  bool authenticated = false;  // AUTH with the admin token succeeded
  bool quit = false;           // QUIT: close after this reply
  bool resp3 = false;          // HELLO 3: replies in RESP3 (resp_reply.hh)
};

// One command's call: its arguments (args[0] is its name as sent) and where it answers.
struct Call {
  ServerContext& ctx;
  WorkerStats& stats;
  Session& session;
  ResponseQueue* responses;  // where a reply that waits on the store takes its place
  ResponseWriter& out;       // the byte sink of the reply (its buffer()), as a handler's
  std::span<const std::string_view> args;

  ReplyWriter reply() { return ReplyWriter(out.buffer(), session.resp3); }
};

using CommandFn = HandlerResult (*)(Call&);

struct Command {
  std::string_view name;  // lower case, as Redis names it in errors ("wrong number of ...")
  int arity;              // Redis's convention: n, exactly n args with the name; -n, at least n
  bool writes;            // orders it behind pending reads (response_queue.hh, blocks())
  CommandFn fn;
  std::string_view group;    // COMMAND DOCS: Redis's group ("string", "sorted-set", ...)
  std::string_view summary;  // COMMAND DOCS: one line
};

// Every command, in the order find_command tries them (the most frequent first).
std::span<const Command> command_table();
// Case-insensitive; nullptr for a command we do not know.
const Command* find_command(std::string_view name);
// The slot of a command's counter (WorkerStats::resp_commands): its row in the table.
std::size_t command_slot(const Command& c);
// Redis's reply to an unknown command: "ERR unknown command 'x', with args beginning with: ...".
void unknown_command(std::span<const std::string_view> args, ReplyWriter r);
// "ERR wrong number of arguments for 'get' command".
void wrong_arity(const Command& c, ReplyWriter r);

// The commands of each file (the table's functions).
HandlerResult cmd_ping(Call&);
HandlerResult cmd_echo(Call&);
HandlerResult cmd_quit(Call&);
HandlerResult cmd_select(Call&);
HandlerResult cmd_auth(Call&);
HandlerResult cmd_hello(Call&);
HandlerResult cmd_client(Call&);
HandlerResult cmd_command(Call&);

HandlerResult cmd_get(Call&);
HandlerResult cmd_set(Call&);
HandlerResult cmd_setex(Call&);
HandlerResult cmd_del(Call&);
HandlerResult cmd_exists(Call&);
HandlerResult cmd_mget(Call&);
HandlerResult cmd_mset(Call&);
HandlerResult cmd_ttl(Call&);
HandlerResult cmd_pttl(Call&);
HandlerResult cmd_strlen(Call&);
HandlerResult cmd_type(Call&);
HandlerResult cmd_getdel(Call&);
HandlerResult cmd_expire(Call&);
HandlerResult cmd_pexpire(Call&);
HandlerResult cmd_persist(Call&);

HandlerResult cmd_zadd(Call&);
HandlerResult cmd_zincrby(Call&);
HandlerResult cmd_zscore(Call&);
HandlerResult cmd_zmscore(Call&);
HandlerResult cmd_zcard(Call&);
HandlerResult cmd_zrank(Call&);
HandlerResult cmd_zrevrank(Call&);
HandlerResult cmd_zrange(Call&);
HandlerResult cmd_zrevrange(Call&);
HandlerResult cmd_zrem(Call&);

HandlerResult cmd_info(Call&);
HandlerResult cmd_config(Call&);
HandlerResult cmd_dbsize(Call&);
HandlerResult cmd_flushall(Call&);

// Shared by the files: Redis's common error replies.
inline constexpr std::string_view kSyntaxError = "ERR syntax error";
inline constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
inline constexpr std::string_view kNotFloat = "ERR value is not a valid float";
// Parses a whole decimal integer as Redis does (string2ll: no spaces, no '+', no leading 0s).
bool parse_integer(std::string_view s, std::int64_t& out);
// Parses a score as Redis does (strtod: "inf", "-inf", "+inf"; NaN refused).
bool parse_score(std::string_view s, double& out);
// ASCII case-insensitive equality with a lower-case word.
bool is_word(std::string_view arg, std::string_view lower);

}  // namespace server::resp
