// gather.hh — one RESP reply assembled from several service answers: MGET's values, MSET's
// writes, the count of DEL and EXISTS over several names. Each part is a service call with a
// Reply of its own (GatherPart); the parts answered at once are folded in during the command,
// and if any waits on the store the Gather takes the command's place among the connection's
// replies (it is the PendingResponse) and is finished by the last part to answer, from
// whatever thread that is. The command holds one count itself while it issues the parts, so a
// part that answers early (on a store thread) cannot finish the reply before its place exists.
// Thread safety: fold() and part_done() from any thread (under mu_); the rest on the
// connection's thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/api/reply.hh"
#include "server/resp/commands.hh"
#include "server/resp/resp_reply.hh"
#include "server/transport/response_queue.hh"
#include "tier/deadline.hh"

namespace server::resp {

class Gather final : public PendingResponse {
 public:
  enum class Form : std::uint8_t {
    array,   // "*N" then each part's element, in order (MGET)
    single,  // the one part's element alone (ZADD INCR)
    count,   // ":<sum of the parts' counts>" (DEL, EXISTS)
    ok,      // "+OK", or the first part's error (MSET)
  };
  Gather(Form form, std::size_t parts, bool resp3)
      : form_(form), resp3_(resp3), elements_(parts), left_(parts + 1) {}

  // A part's answer: its element (array form), its count (count form) or its error (any
  // form; the reply is then the first error, as a failed MSET's).
  void element(std::size_t i, std::string bytes) {
    std::lock_guard lock(mu_);
    elements_[i] = std::move(bytes);
  }
  void count(std::int64_t n) {
    std::lock_guard lock(mu_);
    sum_ += n;
  }
  void error(std::string text) {
    std::lock_guard lock(mu_);
    if (error_.empty()) error_ = std::move(text);
  }
  // A part answered, or the command finished issuing them; true for the last of them. Once
  // placed (defer()), the last one finishes the reply.
  bool part_done() {
    bool last = false, placed = false;
    {
      std::lock_guard lock(mu_);
      last = --left_ == 0;
      placed = placed_;
    }
    if (last && placed) finished();
    return last;
  }
  // A part waits on the store: the reply's place will be needed, of this kind at least.
  void needs_place(DeferKind kind) {
    if (!deferred_) {
      kind_ = kind;
    } else if (kind_ != kind) {
      kind_ = DeferKind::barrier;
    }
    deferred_ = true;
  }
  bool deferred() const { return deferred_; }
  DeferKind kind() const { return kind_; }
  // After queue.defer(): the last part finishes the reply.
  void placed() {
    std::lock_guard lock(mu_);
    placed_ = true;
  }

  // The reply, once every part answered (into the output now, or as the slot's rendering).
  void render_to(ReplyWriter r) {
    std::lock_guard lock(mu_);
    if (!error_.empty()) return r.error(error_);
    switch (form_) {
      case Form::array:
        r.array(elements_.size());
        for (const std::string& e : elements_) r.buffer().append(e);
        return;
      case Form::single:
        r.buffer().append(elements_.empty() ? std::string() : elements_.front());
        return;
      case Form::count:
        return r.integer(sum_);
      case Form::ok:
        return r.ok();
    }
  }

 private:
  HandlerResult render(ResponseWriter& out) override {
    render_to(ReplyWriter(out.buffer(), resp3_));
    return {};
  }

  const Form form_;
  const bool resp3_;
  std::mutex mu_;
  std::vector<std::string> elements_;  // guarded by mu_
  std::int64_t sum_ = 0;               // guarded by mu_
  std::string error_;                  // guarded by mu_
  std::size_t left_;                   // guarded by mu_: parts unanswered, plus the command's
  bool placed_ = false;                // guarded by mu_
  bool deferred_ = false;
  DeferKind kind_ = DeferKind::read;
};

// One part's Reply: Fold(const Result&, Gather&) adds its answer to the gather.
template <class Result, class Fold>
class GatherPart final : public Reply<Result> {
 public:
  GatherPart(std::shared_ptr<Gather> gather, Fold fold)
      : gather_(std::move(gather)), fold_(std::move(fold)) {}

  // The service answered inside its call (or will later): fold it in, count the part done.
  void settle() {
    if (!this->result_) return;  // answered later, by the completion
    fold_(*this->result_, *gather_);
    gather_->part_done();
  }

  Later<Result> later(DeferKind kind) override {
    gather_->needs_place(kind);
    return Later<Result>(std::make_shared<PartDone>(gather_, fold_));
  }

 private:
  class PartDone final : public tier::Completion<Result> {
   public:
    PartDone(std::shared_ptr<Gather> gather, Fold fold)
        : gather_(std::move(gather)), fold_(std::move(fold)) {}
    void complete(const Result& result) override {
      fold_(result, *gather_);
      gather_->part_done();
    }

   private:
    std::shared_ptr<Gather> gather_;
    Fold fold_;
  };

  std::shared_ptr<Gather> gather_;
  Fold fold_;
};

template <class Result, class Fold>
GatherPart<Result, Fold> make_part(std::shared_ptr<Gather> gather, Fold fold) {
  return GatherPart<Result, Fold>(std::move(gather), std::move(fold));
}

// Issues part(i) for every i through `issue`, then answers: now if every part did, else by
// taking the command's place among the replies. Returns what the command returns.
template <class Issue>
HandlerResult gather_reply(Gather::Form form, std::size_t parts, Call& call, Issue&& issue) {
  ResponseQueue* responses = call.responses;
  ResponseWriter& out = call.out;
  auto gather = std::make_shared<Gather>(form, parts, call.session.resp3);
  for (std::size_t i = 0; i < parts; ++i) issue(i, gather);
  if (!gather->deferred()) {
    gather->part_done();  // the command's own count: every part answered at once
    gather->render_to(ReplyWriter(out.buffer(), call.session.resp3));
    return {};
  }
  responses->defer(gather->kind(), out, gather);
  gather->placed();
  gather->part_done();  // may be the last: the reply is then finished at once
  return kDeferred;
}

}  // namespace server::resp
