// key_commands.cc — the string commands, on the keys' service (key_service.hh) exactly as the
// HTTP key routes use it: a GET hit is copied from the cache into the reply under the shard's
// lock; a miss, and every write with a store, are answered by the tier, now or later. So a
// SET is a PUT (write-through: +OK once durable) and a value written by either front reads back
// byte for byte through the other. DEL, EXISTS and TYPE address the boards too (a board is a
// sorted set; boards and keys are two namespaces: docs/resp.md).
// Error classes: the store's 503 is "-TRYAGAIN <the same reason as HTTP's>" (it says whether
// a write may still take effect), the cache's 507 is "-OOM".
#include <chrono>
#include <string>

#include "server/api/key_service.hh"
#include "server/api/reply.hh"
#include "server/api/variant.hh"
#include "server/resp/commands.hh"
#include "server/resp/gather.hh"
#include "server/resp/read_modify_write.hh"
#include "server/server_context.hh"
#include "server/transport/stats.hh"
#include "store/store.hh"
#include "tier/results.hh"

namespace server::resp {

namespace {

using Kind = KeyOutcome::Kind;
constexpr std::string_view kBadKey = "ERR invalid key: keys are 1 to 250 bytes";
constexpr std::string_view kNoRoomForReply = "OOM no room for the reply under --max-inflight";

bool valid_key(std::string_view key) {
  return !key.empty() && key.size() <= cache::kMaxKeyBytes;
}

std::string store_error(std::string_view reason) {
  std::string text = "TRYAGAIN ";
  text += reason;
  return text;
}

// A write's error reply, or empty when it succeeded or its condition said no.
std::string write_error(const KeyOutcome& o) {
  switch (o.kind) {
    case Kind::created:
    case Kind::replaced:
    case Kind::deleted:
    case Kind::absent:
    case Kind::precondition_failed:
      return {};
    case Kind::too_big:
      return "ERR value does not fit in the cache (--maxmem)";
    case Kind::no_space:
      return "OOM cache full and evictor is none";
    case Kind::bad_key:
      return std::string(kBadKey);
    case Kind::error:
      break;
  }
  return store_error(o.error);
}

// A write's outcome as SET answers it (a condition that said no: the null bulk, as Redis's NX).
void render_set(const KeyOutcome& o, ReplyWriter r) {
  if (const std::string e = write_error(o); !e.empty()) return r.error(e);
  if (o.kind == Kind::precondition_failed) return r.null();
  r.ok();
}

// What a lookup beyond the cache found, as the element a command wants of it.
enum class Want : std::uint8_t { value, length, ttl_s, ttl_ms, exists };

void render_found(Want want, std::string_view value, std::optional<std::chrono::milliseconds> left,
                  ReplyWriter r) {
  switch (want) {
    case Want::value:
      return r.bulk(value);
    case Want::length:
      return r.integer(static_cast<std::int64_t>(value.size()));
    case Want::ttl_s:  // Redis rounds to the nearest second
      return r.integer(left ? (left->count() + 500) / 1000 : -1);
    case Want::ttl_ms:
      return r.integer(left ? left->count() : -1);
    case Want::exists:
      return r.integer(1);
  }
}

void render_absent(Want want, ReplyWriter r) {
  switch (want) {
    case Want::value:
      return r.null();
    case Want::length:
    case Want::exists:
      return r.integer(0);
    case Want::ttl_s:
    case Want::ttl_ms:
      return r.integer(-2);
  }
}

void render_lookup(Want want, const KeyLookup& l, ReplyWriter r) {
  switch (l.kind) {
    case KeyLookup::Kind::found:
      return render_found(want, *l.value, store::time_left(l.expires_at_ms, store::unix_now_ms()),
                          r);
    case KeyLookup::Kind::absent:
      return render_absent(want, r);
    case KeyLookup::Kind::error:
      break;
  }
  r.error(store_error(l.error));
}

// One key read: the cache's hit rendered at once, a miss by the key service (now or later).
HandlerResult read_key(Call& call, std::string_view key, Want want) {
  ReplyWriter r = call.reply();
  if (!valid_key(key)) {
    r.error(kBadKey);
    return {};
  }
  bool admitted = true;
  const bool hit =
      call.ctx.key_service.read_cached<CStringValue>(key, [&](const cache::Item& item) {
        if (want == Want::value && !call.out.admit(item.value.size())) {
          admitted = false;
          return;
        }
        render_found(want, item.value, item.ttl_left,
                     ReplyWriter(call.out.buffer(), call.session.resp3));
      });
  WorkerStats::bump(hit ? call.stats.hits : call.stats.misses);
  if (hit) {
    if (!admitted) r.error(kNoRoomForReply);
    return {};
  }
  auto reply = make_reply<KeyLookup>(
      call.responses, call.out,
      [want, resp3 = call.session.resp3](const KeyLookup& l, ResponseWriter& w) {
        render_lookup(want, l, ReplyWriter(w.buffer(), resp3));
        return HandlerResult{};
      });
  call.ctx.key_service.lookup(key, reply);
  return reply.answer(call.out);
}

// SET's options (Redis 7.0's t_string.c, parseExtendedStringArgumentsOrReply).
struct SetOptions {
  bool nx = false, xx = false;
  bool keep_ttl = false;  // KEEPTTL: the key keeps the TTL it has
  bool get = false;       // GET: the reply is the value before the write
  std::chrono::milliseconds ttl{0};
  bool expires_now = false;  // EXAT/PXAT in the past: the key is removed, the reply is +OK
  std::string error;
};

SetOptions parse_set_options(std::span<const std::string_view> opts, std::string_view command) {
  SetOptions o;
  bool have_expiry = false;
  const auto invalid_expire = [&] {
    o.error = "ERR invalid expire time in '";
    o.error += command;
    o.error += "' command";
  };
  for (std::size_t i = 0; i < opts.size() && o.error.empty(); ++i) {
    const std::string_view a = opts[i];
    const bool has_next = i + 1 < opts.size();
    if (is_word(a, "nx") && !o.xx) {
      o.nx = true;
    } else if (is_word(a, "xx") && !o.nx) {
      o.xx = true;
    } else if (is_word(a, "get")) {
      o.get = true;
    } else if (is_word(a, "keepttl") && !have_expiry) {
      o.keep_ttl = true;
      have_expiry = true;
    } else if ((is_word(a, "ex") || is_word(a, "px") || is_word(a, "exat") || is_word(a, "pxat")) &&
               has_next && !have_expiry) {
      have_expiry = true;
      std::int64_t n = 0;
      if (!parse_integer(opts[++i], n)) {
        o.error = kNotInteger;
        break;
      }
      const bool seconds = is_word(a, "ex") || is_word(a, "exat");
      const bool absolute = is_word(a, "exat") || is_word(a, "pxat");
      if (n <= 0 || (seconds && n > std::numeric_limits<std::int64_t>::max() / 1000)) {
        invalid_expire();
        break;
      }
      std::int64_t ms = seconds ? n * 1000 : n;
      if (absolute) ms -= static_cast<std::int64_t>(store::unix_now_ms());
      if (ms <= 0) {
        o.expires_now = true;
      } else if (ms > cache::kMaxTtl.count()) {
        invalid_expire();
      } else {
        o.ttl = std::chrono::milliseconds(ms);
      }
    } else {
      o.error = kSyntaxError;
    }
  }
  return o;
}

HandlerResult write_key(Call& call, std::string_view key, std::string_view value,
                        const SetOptions& o) {
  ReplyWriter r = call.reply();
  if (!valid_key(key)) {
    r.error(kBadKey);
    return {};
  }
  if (value.size() > call.ctx.config.max_value) {
    r.error("ERR value larger than --max-value");
    return {};
  }
  Preconditions pre;
  if (o.nx) {
    pre.has_if_none_match = true;
    call.ctx.etags.parse("*", pre.if_none_match);
  } else if (o.xx) {
    pre.has_if_match = true;
    call.ctx.etags.parse("*", pre.if_match);
  }
  auto reply = make_reply<KeyOutcome>(
      call.responses, call.out,
      [stats = &call.stats, resp3 = call.session.resp3](const KeyOutcome& out, ResponseWriter& w) {
        if (out.kind == Kind::created || out.kind == Kind::replaced) {
          WorkerStats::bump(stats->sets);
        }
        render_set(out, ReplyWriter(w.buffer(), resp3));
        return HandlerResult{};
      });
  if (o.expires_now) {  // set and at once expired: what remains is that the key is gone
    call.ctx.key_service.del(key, pre.any() ? &pre : nullptr, reply);
  } else {
    const WriteSpec spec{o.ttl, pre.any() ? &pre : nullptr};
    call.ctx.key_service.put(key, value, spec, reply);
  }
  return reply.answer(call.out);
}

}  // namespace

HandlerResult cmd_get(Call& call) {
  return read_key(call, call.args[1], Want::value);
}

HandlerResult cmd_strlen(Call& call) {
  return read_key(call, call.args[1], Want::length);
}

HandlerResult cmd_ttl(Call& call) {
  return read_key(call, call.args[1], Want::ttl_s);
}

HandlerResult cmd_pttl(Call& call) {
  return read_key(call, call.args[1], Want::ttl_ms);
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]. GET and KEEPTTL need the
// value the write replaces: a read-modify-write (read_modify_write.hh).
HandlerResult cmd_set(Call& call) {
  const SetOptions o = parse_set_options(call.args.subspan(3), "set");
  if (!o.error.empty()) {
    call.reply().error(o.error);
    return {};
  }
  if (!o.get && !o.keep_ttl) return write_key(call, call.args[1], call.args[2], o);
  if (!valid_key(call.args[1])) {
    call.reply().error(kBadKey);
    return {};
  }
  if (call.args[2].size() > call.ctx.config.max_value) {
    call.reply().error("ERR value larger than --max-value");
    return {};
  }
  return read_modify_write(
      call, call.args[1],
      [o, value = std::string(call.args[2]), resp3 = call.session.resp3](const Current& c) {
        Change change;
        std::string old;
        if (c.exists) {
          ReplyWriter(old, resp3).bulk(c.value);
        } else {
          ReplyWriter(old, resp3).null();
        }
        if ((o.nx && c.exists) || (o.xx && !c.exists)) {
          if (o.get) {
            change.reply = old;
          } else {
            ReplyWriter(change.reply, resp3).null();
          }
          return change;
        }
        change.kind = o.expires_now ? Change::Kind::del : Change::Kind::put;
        change.value = value;
        change.ttl = o.keep_ttl && c.ttl_left ? *c.ttl_left : o.ttl;
        change.reply = o.get ? old : "+OK\r\n";
        return change;
      });
}

// GETDEL key: the value, and the key is gone.
HandlerResult cmd_getdel(Call& call) {
  if (!valid_key(call.args[1])) {
    call.reply().error(kBadKey);
    return {};
  }
  return read_modify_write(call, call.args[1], [resp3 = call.session.resp3](const Current& c) {
    Change change;
    if (!c.exists) {
      ReplyWriter(change.reply, resp3).null();
      return change;
    }
    change.kind = Change::Kind::del;
    ReplyWriter(change.reply, resp3).bulk(c.value);
    return change;
  });
}

namespace {
// EXPIRE / PEXPIRE key n [NX|XX|GT|LT] (Redis 7.0's expire.c, expireGenericCommand).
HandlerResult expire(Call& call, bool seconds) {
  ReplyWriter r = call.reply();
  std::int64_t n = 0;
  if (!parse_integer(call.args[2], n)) {
    r.error(kNotInteger);
    return {};
  }
  bool nx = false, xx = false, gt = false, lt = false;
  for (const std::string_view a : call.args.subspan(3)) {
    if (is_word(a, "nx")) {
      nx = true;
    } else if (is_word(a, "xx")) {
      xx = true;
    } else if (is_word(a, "gt")) {
      gt = true;
    } else if (is_word(a, "lt")) {
      lt = true;
    } else {
      r.error("ERR Unsupported option " + std::string(a));
      return {};
    }
  }
  if (nx && (xx || gt || lt)) {
    r.error("ERR NX and XX, GT or LT options at the same time are not compatible");
    return {};
  }
  if (gt && lt) {
    r.error("ERR GT and LT options at the same time are not compatible");
    return {};
  }
  const std::string_view name = seconds ? "expire" : "pexpire";
  const auto invalid = [&] {
    r.error("ERR invalid expire time in '" + std::string(name) + "' command");
    return HandlerResult{};
  };
  if (seconds && (n > std::numeric_limits<std::int64_t>::max() / 1000 ||
                  n < std::numeric_limits<std::int64_t>::min() / 1000)) {
    return invalid();
  }
  const std::int64_t ms = seconds ? n * 1000 : n;
  if (ms > cache::kMaxTtl.count()) return invalid();
  if (!valid_key(call.args[1])) {
    r.error(kBadKey);
    return {};
  }
  return read_modify_write(call, call.args[1], [=](const Current& c) {
    Change change;
    change.reply = ":0\r\n";
    if (!c.exists || (nx && c.ttl_left) || (xx && !c.ttl_left)) return change;
    // No TTL counts as an infinite one.
    if (gt && (!c.ttl_left || ms <= c.ttl_left->count())) return change;
    if (lt && c.ttl_left && ms >= c.ttl_left->count()) return change;
    change.reply = ":1\r\n";
    if (ms <= 0) {
      change.kind = Change::Kind::del;
    } else {
      change.kind = Change::Kind::put;
      change.value = c.value;
      change.ttl = std::chrono::milliseconds(ms);
    }
    return change;
  });
}
}  // namespace

HandlerResult cmd_expire(Call& call) {
  return expire(call, true);
}

HandlerResult cmd_pexpire(Call& call) {
  return expire(call, false);
}

// PERSIST key: 1 if the key had a TTL and no longer has.
HandlerResult cmd_persist(Call& call) {
  if (!valid_key(call.args[1])) {
    call.reply().error(kBadKey);
    return {};
  }
  return read_modify_write(call, call.args[1], [](const Current& c) {
    Change change;
    change.reply = ":0\r\n";
    if (!c.exists || !c.ttl_left) return change;
    change.kind = Change::Kind::put;
    change.value = c.value;
    change.reply = ":1\r\n";
    return change;
  });
}

// SETEX key seconds value
HandlerResult cmd_setex(Call& call) {
  const std::string_view opts[] = {"ex", call.args[2]};
  const SetOptions o = parse_set_options(opts, "setex");
  if (!o.error.empty()) {
    call.reply().error(o.error);
    return {};
  }
  return write_key(call, call.args[1], call.args[3], o);
}

// MGET key...: each key read as GET reads it, the values in order.
HandlerResult cmd_mget(Call& call) {
  const auto keys = call.args.subspan(1);
  return gather_reply(
      Gather::Form::array, keys.size(), call, [&](std::size_t i, const std::shared_ptr<Gather>& g) {
        std::string element;
        ReplyWriter r(element, call.session.resp3);
        const std::string_view key = keys[i];
        const bool hit =
            valid_key(key) && call.ctx.key_service.read_cached<CStringValue>(
                                  key, [&](const cache::Item& item) { r.bulk(item.value); });
        WorkerStats::bump(hit ? call.stats.hits : call.stats.misses);
        if (hit || !valid_key(key)) {
          if (!hit) r.null();
          g->element(i, std::move(element));
          g->part_done();
          return;
        }
        auto part = make_part<KeyLookup>(
            g, [i, resp3 = call.session.resp3](const KeyLookup& l, Gather& gather) {
              std::string e;
              if (l.kind == KeyLookup::Kind::found) {
                ReplyWriter(e, resp3).bulk(*l.value);
              } else {
                ReplyWriter(e, resp3).null();  // absent (a store failure fails the whole MGET)
                if (l.kind == KeyLookup::Kind::error) gather.error(store_error(l.error));
              }
              gather.element(i, std::move(e));
            });
        call.ctx.key_service.lookup(key, part);
        part.settle();
      });
}

// MSET key value [key value ...]: each pair written as SET writes it; +OK once all are (not
// atomic across keys: docs/resp.md).
HandlerResult cmd_mset(Call& call) {
  if (call.args.size() % 2 == 0) {
    wrong_arity(*find_command("mset"), call.reply());
    return {};
  }
  for (std::size_t i = 1; i < call.args.size(); i += 2) {
    if (!valid_key(call.args[i])) {
      call.reply().error(kBadKey);
      return {};
    }
    if (call.args[i + 1].size() > call.ctx.config.max_value) {
      call.reply().error("ERR value larger than --max-value");
      return {};
    }
  }
  const std::size_t pairs = (call.args.size() - 1) / 2;
  return gather_reply(
      Gather::Form::ok, pairs, call, [&](std::size_t i, const std::shared_ptr<Gather>& g) {
        auto part =
            make_part<KeyOutcome>(g, [stats = &call.stats](const KeyOutcome& o, Gather& gather) {
              if (o.kind == Kind::created || o.kind == Kind::replaced) {
                WorkerStats::bump(stats->sets);
                return;
              }
              gather.error(write_error(o));
            });
        call.ctx.key_service.put(call.args[1 + 2 * i], call.args[2 + 2 * i], WriteSpec{}, part);
        part.settle();
      });
}

// DEL / UNLINK name...: removes the key and the board of each name; the number removed.
HandlerResult cmd_del(Call& call) {
  const auto names = call.args.subspan(1);
  return gather_reply(Gather::Form::count, 2 * names.size(), call,
                      [&](std::size_t i, const std::shared_ptr<Gather>& g) {
                        const std::string_view name = names[i / 2];
                        if (i % 2 == 0) {
                          if (!valid_key(name)) {
                            g->part_done();
                            return;
                          }
                          auto part = make_part<KeyOutcome>(
                              g, [stats = &call.stats](const KeyOutcome& o, Gather& gather) {
                                if (o.kind == Kind::deleted) {
                                  WorkerStats::bump(stats->deletes);
                                  gather.count(1);
                                } else if (o.kind == Kind::error) {
                                  gather.error(store_error(o.error));
                                }
                              });
                          call.ctx.key_service.del(name, nullptr, part);
                          part.settle();
                          return;
                        }
                        auto part =
                            make_part<BoardChange>(g, [](const BoardChange& c, Gather& gather) {
                              if (c.kind == BoardChange::Kind::done) {
                                gather.count(1);
                              } else if (c.kind != BoardChange::Kind::not_found) {
                                gather.error(store_error(c.error));
                              }
                            });
                        call.ctx.board_service.remove_board(name, part);
                        part.settle();
                      });
}

// EXISTS name...: how many of the names are a key or a board (a name given twice counts twice).
HandlerResult cmd_exists(Call& call) {
  const auto names = call.args.subspan(1);
  return gather_reply(Gather::Form::count, names.size(), call,
                      [&](std::size_t i, const std::shared_ptr<Gather>& g) {
                        const std::string_view name = names[i];
                        if (call.ctx.boards.read(name, [](const auto&) {})) {
                          g->count(1);
                          g->part_done();
                          return;
                        }
                        const bool hit =
                            valid_key(name) && call.ctx.key_service.read_cached<CStringValue>(
                                                   name, [](const cache::Item&) {});
                        if (hit || !valid_key(name)) {
                          if (hit) g->count(1);
                          g->part_done();
                          return;
                        }
                        auto part = make_part<KeyLookup>(g, [](const KeyLookup& l, Gather& gather) {
                          if (l.kind == KeyLookup::Kind::found) gather.count(1);
                          if (l.kind == KeyLookup::Kind::error) gather.error(store_error(l.error));
                        });
                        call.ctx.key_service.lookup(name, part);
                        part.settle();
                      });
}

// TYPE name: "string" for a key, "zset" for a board, "none".
HandlerResult cmd_type(Call& call) {
  const std::string_view name = call.args[1];
  ReplyWriter r = call.reply();
  const bool hit = valid_key(name) &&
                   call.ctx.key_service.read_cached<CStringValue>(name, [](const cache::Item&) {});
  if (hit) {
    r.simple("string");
    return {};
  }
  const bool board = call.ctx.boards.read(name, [](const auto&) {});
  if (board || !valid_key(name)) {
    r.simple(board ? "zset" : "none");
    return {};
  }
  auto reply =
      make_reply<KeyLookup>(call.responses, call.out, [](const KeyLookup& l, ResponseWriter& w) {
        ReplyWriter out(w.buffer());
        if (l.kind == KeyLookup::Kind::error) {
          out.error(store_error(l.error));
        } else {
          out.simple(l.kind == KeyLookup::Kind::found ? "string" : "none");
        }
        return HandlerResult{};
      });
  call.ctx.key_service.lookup(name, reply);
  return reply.answer(call.out);
}

}  // namespace server::resp
