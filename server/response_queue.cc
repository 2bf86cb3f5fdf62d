// response_queue.cc — see response_queue.hh.
#include "server/response_queue.hh"

#include "server/http_date.hh"

namespace server {

DeferredResponse::~DeferredResponse() {
  if (slot_) {
    finish([](ResponseWriter&) {
      return HandlerResult{boost::beast::http::status::internal_server_error,
                           "request abandoned by the store",
                           {},
                           false};
    });
  }
}

void DeferredResponse::finish(Render render) {
  if (!slot_) return;
  auto slot = std::move(slot_);
  slot_.reset();
  slot->render = std::move(render);
  route_->deliver(std::move(slot));
}

DeferredResponse ResponseQueue::defer(DeferKind kind, const ResponseWriter& writer) {
  auto slot = std::make_shared<detail::Slot>();
  slot->kind = kind;
  slot->keep_alive = writer.keep_alive();
  slot->http10 = writer.http10();
  slot->head = writer.head();
  slot->space_used = writer.space_used();
  if (kind != DeferKind::write) ++pending_reads_;
  if (kind != DeferKind::read) ++pending_writes_;
  slots_.push_back(slot);
  return DeferredResponse(std::move(slot), route_);
}

void ResponseQueue::push_ready(std::string response) {
  auto slot = std::make_shared<detail::Slot>();
  slot->out = std::move(response);
  slot->done = true;
  slots_.push_back(std::move(slot));
}

void ResponseQueue::complete(detail::Slot& slot) {
  const Render render = std::move(slot.render);  // what it holds goes with this call
  refresh_http_date();  // rendered outside the engine's consume(): this thread may be idle-stale
  ResponseWriter writer(slot.out);
  writer.set_served_by(served_by_);
  writer.set_budget(budget_);
  writer.begin_request(slot.keep_alive, slot.http10, slot.head, slot.space_used);
  const HandlerResult r = render(writer);
  if (!r.ok()) writer.error(r.status, r.error, r.allow);
  if (charged_ != nullptr) *charged_ += writer.take_admitted();
  slot.done = true;
  if (slot.kind != DeferKind::write) --pending_reads_;
  if (slot.kind != DeferKind::read) --pending_writes_;
  if (on_complete_) on_complete_();
}

void ResponseQueue::time_last(std::chrono::steady_clock::time_point arrival, RouteClass c) {
  if (slots_.empty() || slots_.back()->done) return;
  slots_.back()->timed = true;
  slots_.back()->timing = c;
  slots_.back()->arrival = arrival;
}

void ResponseQueue::drain() {
  std::chrono::steady_clock::time_point now{};
  while (!slots_.empty() && slots_.front()->done) {
    detail::Slot& slot = *slots_.front();
    if (out_.empty() && slot.out.size() > kUnchargedBytes) {
      // Larger than the storage a connection keeps (kUnchargedBytes = kRetainedBufferBytes):
      // the output buffer's kept storage goes with the slot, and the engine releases the large
      // one once it is written (output_written).
      out_.swap(slot.out);
    } else {
      out_.append(slot.out);
    }
    if (slot.timed && timings_ != nullptr) {
      if (now == std::chrono::steady_clock::time_point{}) now = std::chrono::steady_clock::now();
      const auto ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - slot.arrival).count();
      timings_->observe(slot.timing, ns > 0 ? static_cast<std::uint64_t>(ns) : 0);
    }
    slots_.pop_front();
  }
}

}  // namespace server
