// read_modify_write.cc — see read_modify_write.hh.
#include "server/resp/read_modify_write.hh"

#include <mutex>
#include <type_traits>

#include "server/api/key_service.hh"
#include "server/api/reply.hh"
#include "server/api/variant.hh"
#include "server/server_context.hh"
#include "store/store.hh"
#include "tier/deadline.hh"
#include "tier/results.hh"

namespace server::resp {

namespace {

constexpr int kAttempts = 3;

class ReadModifyWrite;

// A step's Reply: its answer, now or later, is handed to the command's object.
template <class Result>
class StepReply final : public Reply<Result> {
 public:
  explicit StepReply(std::shared_ptr<ReadModifyWrite> rmw) : rmw_(std::move(rmw)) {}
  Later<Result> later(DeferKind) override;
  // Inside the service call's return: the answer if it came now.
  std::optional<Result> take_now() { return std::move(this->result_); }

 private:
  std::shared_ptr<ReadModifyWrite> rmw_;
};

class ReadModifyWrite final : public PendingResponse {
 public:
  ReadModifyWrite(ServerContext& ctx, std::string key, Decide decide)
      : ctx_(ctx), key_(std::move(key)), decide_(std::move(decide)) {}

  // Any thread: a step's answer arrived.
  void read_answered(const KeyLookup& l) {
    {
      std::lock_guard lock(mu_);
      read_ = l;
    }
    finished();
  }
  void write_answered(const KeyOutcome& o) {
    {
      std::lock_guard lock(mu_);
      written_ = o;
    }
    finished();
  }

  // On the connection's thread, right after the object was placed: the first read.
  void start() {
    if (read_from_cache()) return finished();
    issue_lookup();
  }

 private:
  // The cache's copy of the key, if it has one (its value, TTL and version).
  bool read_from_cache() {
    Current c;
    const bool hit = ctx_.key_service.read_cached<CStringValue>(key_, [&](const cache::Item& item) {
      c.exists = true;
      c.value = item.value;
      c.ttl_left = item.ttl_left;
      c.version = item.version;
    });
    if (hit) current_ = std::move(c);
    return hit;
  }

  void issue_lookup() {
    auto self = std::static_pointer_cast<ReadModifyWrite>(shared_from_this());
    StepReply<KeyLookup> reply(self);
    ctx_.key_service.lookup(key_, reply);
    if (auto now = reply.take_now()) read_answered(*now);
  }

  HandlerResult render(ResponseWriter& out) override {
    ReplyWriter r(out.buffer());
    std::optional<KeyLookup> read;
    std::optional<KeyOutcome> written;
    {
      std::lock_guard lock(mu_);
      read.swap(read_);
      written.swap(written_);
    }
    if (read) {  // a lookup beyond the cache answered
      if (read->kind == KeyLookup::Kind::error)
        return answer(r, "-TRYAGAIN " + read->error + "\r\n");
      Current c;
      if (read->kind == KeyLookup::Kind::found) {
        c.exists = true;
        c.value = *read->value;
        c.ttl_left = store::time_left(read->expires_at_ms, store::unix_now_ms());
        c.version = read->version;
      }
      current_ = std::move(c);
    }
    if (written) return after_write(r, *written);
    if (!current_) return kDeferred;  // nothing arrived yet (cannot happen: finished() follows one)
    return change(r);
  }

  // Decides from current_ and makes the change.
  HandlerResult change(ReplyWriter& r) {
    change_ = decide_(*current_);
    if (change_.kind == Change::Kind::answer) return answer(r, change_.reply);
    Preconditions pre;
    if (current_->exists && current_->version != 0) {
      pre.has_if_match = true;
      EtagBuffer buffer;
      ctx_.etags.parse(ctx_.etags.format(current_->version, buffer), pre.if_match);
    } else if (!current_->exists) {
      pre.has_if_none_match = true;
      ctx_.etags.parse("*", pre.if_none_match);
    }
    auto self = std::static_pointer_cast<ReadModifyWrite>(shared_from_this());
    StepReply<KeyOutcome> reply(self);
    if (change_.kind == Change::Kind::put) {
      ctx_.key_service.put(key_, change_.value, WriteSpec{change_.ttl, pre.any() ? &pre : nullptr},
                           reply);
    } else {
      ctx_.key_service.del(key_, pre.any() ? &pre : nullptr, reply);
    }
    if (auto now = reply.take_now()) return after_write(r, *now);
    return kDeferred;
  }

  HandlerResult after_write(ReplyWriter& r, const KeyOutcome& o) {
    using K = KeyOutcome::Kind;
    switch (o.kind) {
      case K::created:
      case K::replaced:
      case K::deleted:
      case K::absent:
        return answer(r, change_.reply);
      case K::precondition_failed:
        break;
      case K::too_big:
        return answer(r, "-ERR value does not fit in the cache (--maxmem)\r\n");
      case K::no_space:
        return answer(r, "-OOM cache full and evictor is none\r\n");
      case K::bad_key:
        return answer(r, "-ERR invalid key: keys are 1 to 250 bytes\r\n");
      case K::error:
        return answer(r, "-TRYAGAIN " + o.error + "\r\n");
    }
    // The key changed between the read and the write: read again.
    if (++attempts_ >= kAttempts) {
      return answer(r, "-TRYAGAIN the key kept changing while this command changed it\r\n");
    }
    current_.reset();
    if (read_from_cache()) return change(r);
    issue_lookup();
    return kDeferred;
  }

  HandlerResult answer(ReplyWriter& r, std::string_view bytes) {
    r.buffer().append(bytes);
    return {};
  }

  ServerContext& ctx_;
  const std::string key_;
  Decide decide_;
  std::mutex mu_;
  std::optional<KeyLookup> read_;      // guarded by mu_: a lookup's answer, not yet rendered
  std::optional<KeyOutcome> written_;  // guarded by mu_: a write's answer, not yet rendered
  // The connection's thread only:
  std::optional<Current> current_;
  Change change_;
  int attempts_ = 0;
};

template <class Result>
class StepDone final : public tier::Completion<Result> {
 public:
  explicit StepDone(std::shared_ptr<ReadModifyWrite> rmw) : rmw_(std::move(rmw)) {}
  void complete(const Result& result) override {
    if constexpr (std::is_same_v<Result, KeyLookup>) {
      rmw_->read_answered(result);
    } else {
      rmw_->write_answered(result);
    }
  }

 private:
  std::shared_ptr<ReadModifyWrite> rmw_;
};

template <class Result>
Later<Result> StepReply<Result>::later(DeferKind) {
  return Later<Result>(std::make_shared<StepDone<Result>>(rmw_));
}

}  // namespace

HandlerResult read_modify_write(Call& call, std::string_view key, Decide decide) {
  auto rmw = std::make_shared<ReadModifyWrite>(call.ctx, std::string(key), std::move(decide));
  call.responses->defer(DeferKind::barrier, call.out, rmw);
  rmw->start();
  return kDeferred;
}

}  // namespace server::resp
