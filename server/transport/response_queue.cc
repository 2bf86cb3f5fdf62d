// response_queue.cc — see response_queue.hh.
#include "server/transport/response_queue.hh"

#include "server/transport/http_date.hh"

namespace server {

namespace {
constexpr std::size_t kPendingResponseReserve = 256;

// A response rendered at once while earlier ones are pending: queued behind them, done.
class ReadyResponse final : public PendingResponse {
  HandlerResult render(ResponseWriter&) override { return {}; }  // never: it is done
};
}  // namespace

void ResponseQueue::defer(DeferKind kind, const ResponseWriter& writer,
                          std::shared_ptr<PendingResponse> response) {
  PendingResponse& r = *response;
  r.kind_ = kind;
  r.keep_alive_ = writer.keep_alive();
  r.http10_ = writer.http10();
  r.head_ = writer.head();
  r.space_used_ = writer.space_used();
  r.route_ = route_;
  // A write's or an error's whole response fits (status line, a few headers, a short body):
  // one allocation, where growing from empty took three. A value read from the store grows it.
  r.out_.reserve(kPendingResponseReserve);
  if (kind != DeferKind::write) ++pending_reads_;
  if (kind != DeferKind::read) ++pending_writes_;
  slots_.push_back(std::move(response));
}

void ResponseQueue::push_ready(std::string response) {
  auto ready = std::make_shared<ReadyResponse>();
  ready->out_ = std::move(response);
  ready->done_ = true;
  slots_.push_back(std::move(ready));
}

void ResponseQueue::complete(PendingResponse& response) {
  refresh_http_date();  // rendered outside the engine's consume(): this thread may be idle-stale
  ResponseWriter writer(response.out_);
  writer.set_served_by(served_by_);
  writer.set_budget(budget_);
  writer.begin_request(response.keep_alive_, response.http10_, response.head_,
                       response.space_used_);
  const HandlerResult r = response.render(writer);
  if (charged_ != nullptr) *charged_ += writer.take_admitted();
  // A response that continues (it started more work: a read-modify-write's write, RESP's
  // GETDEL or EXPIRE) keeps its place and its route; it finishes again, and is rendered again.
  if (r.deferred) return;
  if (!r.ok()) writer.error(r.status, r.error, r.allow);
  response.done_ = true;
  response.route_.reset();
  if (response.kind_ != DeferKind::write) --pending_reads_;
  if (response.kind_ != DeferKind::read) --pending_writes_;
}

void ResponseQueue::time_last(std::chrono::steady_clock::time_point arrival, RouteClass c) {
  if (slots_.empty() || slots_.back()->done_) return;
  slots_.back()->timed_ = true;
  slots_.back()->timing_ = c;
  slots_.back()->arrival_ = arrival;
}

void ResponseQueue::drain() {
  std::chrono::steady_clock::time_point now{};
  while (!slots_.empty() && slots_.front()->done_) {
    PendingResponse& r = *slots_.front();
    if (out_.empty() && r.out_.size() > kUnchargedBytes) {
      // Larger than the storage a connection keeps (kUnchargedBytes = kRetainedBufferBytes):
      // the output buffer's kept storage goes with the response, and the engine releases the
      // large one once it is written (output_written).
      out_.swap(r.out_);
    } else {
      out_.append(r.out_);
    }
    if (r.timed_ && timings_ != nullptr) {
      if (now == std::chrono::steady_clock::time_point{}) now = std::chrono::steady_clock::now();
      const auto ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - r.arrival_).count();
      timings_->observe(r.timing_, ns > 0 ? static_cast<std::uint64_t>(ns) : 0);
    }
    slots_.pop_front();
  }
}

}  // namespace server
