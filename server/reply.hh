// reply.hh — the one completion contract between the services (key_service.hh,
// board_service.hh) and the handlers that call them.
//
// A handler makes a Reply<Result> for its request, with the function that renders a Result as
// its response, and hands it to one service call. The service answers it exactly once, in one
// of two ways:
// - now(result), inside the call: the handler renders the result when the call returns, into
//   its output buffer (memory-only, a write-behind write with room, a refusal: no allocation,
//   no thread hop);
// - later(kind), inside the call, on the connection's thread: reserves the response's place
//   among the connection's responses (kind orders it, response_queue.hh) and returns the
//   Deliver function. Whoever finishes the work (a store thread, the flusher, the deadline)
//   calls it once, from any thread; the result is rendered on the connection's thread
//   (DeferredResponse::finish posts it there, server/THREADS.md).
// A Deliver dropped uncalled answers 500 (DeferredResponse), so a lost completion cannot hang a
// connection. Handlers never see which of the two happened: they return reply.answer(out).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "server/handler_result.hh"
#include "server/response_queue.hh"
#include "server/response_writer.hh"

namespace server {

// Delivers a result that came later; callable from any thread, once.
template <class Result>
using Deliver = std::function<void(const Result&)>;

// What a service sees of a reply.
template <class Result>
class Reply {
 public:
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;

  // The answer, now (at most once, and not after later()).
  void now(Result result) { result_.emplace(std::move(result)); }
  // The answer comes later: reserve its place and get the function that delivers it.
  virtual Deliver<Result> later(DeferKind kind) = 0;

 protected:
  Reply() = default;
  ~Reply() = default;
  std::optional<Result> result_;
};

// A reply with its rendering: made by a handler (make_reply), answered by a service.
// Render: HandlerResult(const Result&, ResponseWriter&), copyable (a later answer keeps a copy).
template <class Result, class Render>
class RenderedReply final : public Reply<Result> {
 public:
  RenderedReply(ResponseQueue* responses, const ResponseWriter& out, Render render)
      : responses_(responses), out_(out), render_(std::move(render)) {}

  Deliver<Result> later(DeferKind kind) override {
    deferred_ = true;
    auto slot = std::make_shared<DeferredResponse>(responses_->defer(kind, out_));
    return [slot, render = render_](const Result& r) {
      slot->finish([r, render](ResponseWriter& w) { return render(r, w); });
    };
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
