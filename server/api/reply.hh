// reply.hh — the one completion contract between the services (key_service.hh,
// board_service.hh) and the handlers that call them.
//
// A handler makes a Reply<Result> for its request, with the function that renders a Result as
// its response, and hands it to one service call. The service answers it exactly once, in one
// of two ways:
// - now(result), inside the call: the handler renders the result when the call returns, into
//   its output buffer (memory-only, a write-behind write with room, a refusal: no allocation,
//   no thread hop);
// - later(kind), inside the call, on the connection's thread: makes the request's one
//   completion, a DeferredReply: a single object that is the tier's Completion<Result> (answered
//   once, by the store side or the deadline: tier/deadline.hh) and the response's place among
//   the connection's responses (a PendingResponse: kind orders it, response_queue.hh). The
//   service hands it to the tier (Later::completion()) or answers it itself (Later's call); its
//   answer is rendered on the connection's thread (server/THREADS.md).
// Every completion that waits on the store is armed with its deadline, so none can hang its
// connection. Handlers never see which of the two happened: they return reply.answer(out).
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include "server/transport/handler_result.hh"
#include "server/transport/response_queue.hh"
#include "server/transport/response_writer.hh"
#include "tier/deadline.hh"

namespace server {

// A result that comes later: its completion, answered once from any thread.
template <class Result>
class Later {
 public:
  explicit Later(tier::Done<Result> completion) : completion_(std::move(completion)) {}
  // Answers unless the request was answered already (by its deadline).
  void operator()(const Result& result) const { completion_->answer(result); }
  // For the tier, which arms it with its deadline and answers it when the store does.
  const tier::Done<Result>& completion() const& { return completion_; }
  tier::Done<Result> completion() && { return std::move(completion_); }

 private:
  tier::Done<Result> completion_;
};

// What a service sees of a reply.
template <class Result>
class Reply {
 public:
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;

  // The answer, now (at most once, and not after later()).
  void now(Result result) { result_.emplace(std::move(result)); }
  // The answer comes later: reserve its place and get its completion.
  virtual Later<Result> later(DeferKind kind) = 0;

 protected:
  Reply() = default;
  ~Reply() = default;
  std::optional<Result> result_;
};

// A request's completion and its response's place, in one object (the header comment).
// Render: HandlerResult(const Result&, ResponseWriter&), held by value.
template <class Result, class Render>
class DeferredReply final : public PendingResponse, public tier::Completion<Result> {
 public:
  explicit DeferredReply(const Render& render) : render_(render) {}

  // Any thread, once: keeps the result and sends the response to its connection's thread.
  void complete(const Result& result) override {
    result_.emplace(result);
    finished();
  }

 private:
  HandlerResult render(ResponseWriter& out) override { return render_(*result_, out); }

  Render render_;
  std::optional<Result> result_;
};

// A reply with its rendering: made by a handler (make_reply), answered by a service.
template <class Result, class Render>
class RenderedReply final : public Reply<Result> {
 public:
  RenderedReply(ResponseQueue* responses, const ResponseWriter& out, Render render)
      : responses_(responses), out_(out), render_(std::move(render)) {}

  Later<Result> later(DeferKind kind) override {
    deferred_ = true;
    auto reply = std::make_shared<DeferredReply<Result, Render>>(render_);
    responses_->defer(kind, out_, reply);
    return Later<Result>(std::move(reply));
  }

  // What the handler returns once the service call has returned. An error is rendered here:
  // its reason may view the result, which dies with this reply.
  HandlerResult answer(ResponseWriter& out) {
    if (deferred_) return kDeferred;
    const HandlerResult r = render_(*this->result_, out);
    if (!r.ok()) out.error(r.status, r.error, r.allow);
    return {};
  }

 private:
  ResponseQueue* responses_;
  const ResponseWriter& out_;
  Render render_;
  bool deferred_ = false;
};

template <class Result, class Render>
RenderedReply<Result, Render> make_reply(ResponseQueue* responses, const ResponseWriter& out,
                                         Render render) {
  return RenderedReply<Result, Render>(responses, out, std::move(render));
}

}  // namespace server
