// connection_commands.cc — the commands about the connection itself: PING ECHO QUIT SELECT
// AUTH HELLO CLIENT COMMAND. Enough of each for redis-cli, redis-benchmark and redis-py to
// connect and work (redis-py sends CLIENT SETINFO on connect, redis-cli COMMAND DOCS).
// Replies and error texts are Redis 7.0's.
#include <string>
#include <vector>

#include "server/config.hh"
#include "server/resp/commands.hh"
#include "server/server_context.hh"

namespace server::resp {

namespace {
constexpr std::string_view kRedisVersion = "7.0.15";  // what we speak: Redis 7.0's commands
constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";

// AUTH's check: the admin token (--admin-token-file) is the default user's password.
bool authenticate(Call& call, std::string_view user, std::string_view password, ReplyWriter r) {
  if (call.ctx.config.admin_token.empty()) {
    r.error(
        "ERR AUTH <password> called without any password configured for the default user. Are "
        "you sure your configuration is correct?");
    return false;
  }
  if (user != "default" || !admin_token_matches(call.ctx.config.admin_token, password)) {
    r.error(kWrongPass);
    return false;
  }
  call.session.authenticated = true;
  return true;
}

// CLIENT SETNAME's rule: no spaces, newlines or other bytes outside '!'..'~'.
bool valid_client_name(std::string_view name) {
  for (const char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}
}  // namespace

HandlerResult cmd_ping(Call& call) {
  ReplyWriter r = call.reply();
  if (call.args.size() > 2) {
    wrong_arity(*find_command("ping"), r);
  } else if (call.args.size() == 2) {
    r.bulk(call.args[1]);
  } else {
    r.simple("PONG");
  }
  return {};
}

HandlerResult cmd_echo(Call& call) {
  call.reply().bulk(call.args[1]);
  return {};
}

HandlerResult cmd_quit(Call& call) {
  call.session.quit = true;
  call.reply().ok();
  return {};
}

HandlerResult cmd_select(Call& call) {
  std::int64_t index = 0;
  ReplyWriter r = call.reply();
  if (!parse_integer(call.args[1], index)) {
    r.error(kNotInteger);
  } else if (index != 0) {
    r.error("ERR DB index is out of range");
  } else {
    r.ok();
  }
  return {};
}

HandlerResult cmd_auth(Call& call) {
  ReplyWriter r = call.reply();
  if (call.args.size() > 3) {
    r.error(kSyntaxError);
    return {};
  }
  const bool with_user = call.args.size() == 3;
  if (authenticate(call, with_user ? call.args[1] : "default", call.args.back(), r)) r.ok();
  return {};
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]: RESP2 or RESP3 from this
// reply on (resp_reply.hh), answered with Redis's fields.
HandlerResult cmd_hello(Call& call) {
  ReplyWriter r = call.reply();
  std::size_t i = 1;
  bool resp3 = call.session.resp3;
  if (call.args.size() > 1) {
    std::int64_t version = 0;
    if (!parse_integer(call.args[1], version)) {
      r.error("ERR Protocol version is not an integer or out of range");
      return {};
    }
    if (version != 2 && version != 3) {
      r.error("NOPROTO unsupported protocol version");
      return {};
    }
    resp3 = version == 3;
    i = 2;
  }
  std::string_view name;
  bool set_name = false;
  for (; i < call.args.size(); ++i) {
    const std::size_t left = call.args.size() - i - 1;
    if (is_word(call.args[i], "auth") && left >= 2) {
      if (!authenticate(call, call.args[i + 1], call.args[i + 2], r)) return {};
      i += 2;
    } else if (is_word(call.args[i], "setname") && left >= 1) {
      name = call.args[++i];
      set_name = true;
    } else {
      std::string text = "ERR Syntax error in HELLO option '";
      text += call.args[i];
      text += "'";
      r.error(text);
      return {};
    }
  }
  if (set_name) {
    if (!valid_client_name(name)) {
      r.error("ERR Client names cannot contain spaces, newlines or special characters.");
      return {};
    }
    call.session.name = name;
  }
  call.session.resp3 = resp3;  // from this reply on
  r = call.reply();
  r.map(7);
  r.bulk("server");
  r.bulk("redis");
  r.bulk("version");
  r.bulk(kRedisVersion);
  r.bulk("proto");
  r.integer(resp3 ? 3 : 2);
  r.bulk("id");
  r.integer(static_cast<std::int64_t>(call.session.id));
  r.bulk("mode");
  r.bulk("standalone");
  r.bulk("role");
  r.bulk("master");
  r.bulk("modules");
  r.array(0);
  return {};
}

HandlerResult cmd_client(Call& call) {
  ReplyWriter r = call.reply();
  const std::string_view sub = call.args[1];
  const std::size_t n = call.args.size();
  if (is_word(sub, "setname") && n == 3) {
    if (!valid_client_name(call.args[2])) {
      r.error("ERR Client names cannot contain spaces, newlines or special characters.");
    } else {
      call.session.name = call.args[2];
      r.ok();
    }
  } else if (is_word(sub, "getname") && n == 2) {
    if (call.session.name.empty()) {
      r.null();
    } else {
      r.bulk(call.session.name);
    }
  } else if (is_word(sub, "id") && n == 2) {
    r.integer(static_cast<std::int64_t>(call.session.id));
  } else if (is_word(sub, "setinfo") && n == 4) {
    if (!is_word(call.args[2], "lib-name") && !is_word(call.args[2], "lib-ver")) {
      std::string text = "ERR Unrecognized option '";
      text += call.args[2];
      text += "'";
      r.error(text);
    } else {
      r.ok();
    }
  } else if (is_word(sub, "setname") || is_word(sub, "getname") || is_word(sub, "id") ||
             is_word(sub, "setinfo")) {
    std::string text = "ERR wrong number of arguments for 'client|";
    for (const char c : sub) text += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    text += "' command";
    r.error(text);
  } else {
    std::string text = "ERR unknown subcommand '";
    text += sub.substr(0, 128);
    text += "'. Try CLIENT HELP.";
    r.error(text);
  }
  return {};
}

// COMMAND: the table, as Redis's COMMAND INFO rows (name, arity, flags, first key, last key,
// step); COMMAND COUNT; COMMAND DOCS (an empty map's RESP2 form: clients only need it to parse).
HandlerResult cmd_command(Call& call) {
  ReplyWriter r = call.reply();
  const auto table = command_table();
  if (call.args.size() == 1) {
    r.array(table.size());
    for (const Command& c : table) {
      r.array(6);
      r.bulk(c.name);
      r.integer(c.arity);
      r.array(1);
      r.simple(c.writes ? "write" : "readonly");
      r.integer(0);
      r.integer(0);
      r.integer(0);
    }
  } else if (is_word(call.args[1], "count")) {
    if (call.args.size() != 2) {
      r.error("ERR wrong number of arguments for 'command|count' command");
    } else {
      r.integer(static_cast<std::int64_t>(table.size()));
    }
  } else if (is_word(call.args[1], "docs")) {
    // Each known command asked for (all without names): its name, then a map's RESP2 form
    // (field, value, ...) with the two fields clients display: summary and group.
    std::vector<const Command*> docs;
    if (call.args.size() == 2) {
      for (const Command& c : table) docs.push_back(&c);
    } else {
      for (const std::string_view name : call.args.subspan(2)) {
        if (const Command* c = find_command(name)) docs.push_back(c);
      }
    }
    r.map(docs.size());
    for (const Command* c : docs) {
      r.bulk(c->name);
      r.map(2);
      r.bulk("summary");
      r.bulk(c->summary);
      r.bulk("group");
      r.bulk(c->group);
    }
  } else {
    std::string text = "ERR unknown subcommand '";
    text += call.args[1].substr(0, 128);
    text += "'. Try COMMAND HELP.";
    r.error(text);
  }
  return {};
}

}  // namespace server::resp
