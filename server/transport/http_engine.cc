// http_engine.cc — see http_engine.hh. The request path reads top to bottom:
// consume → parser.put → answer → V::Dispatch::route → Handlers::dispatch<V::ValuePath>
// → ResponseWriter.
// GCC 12 with -O2 + sanitizers reports a false -Wmaybe-uninitialized inside Beast's
// basic_parser::content_length_unchecked (boost::optional returned as none); it is not in our
// code and cannot be worked around from here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// (Before the includes: GCC checks the pragma state at the header location it reports.)
#include "server/transport/http_engine.hh"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "server/api/router.hh"
#include "server/transport/http_date.hh"

namespace server {
namespace http = boost::beast::http;
using status = http::status;

template <class V>
BasicHttpEngine<V>::BasicHttpEngine(ServerContext& ctx, WorkerStats& stats)
    : ctx_(ctx),
      stats_(stats),
      handlers_{ctx, stats},
      writer_(out_),
      queue_(out_),
      output_high_water_(ctx.config.write_batching == WriteBatching::on
                             ? kOutputHighWater
                             : kOutputHighWaterUnbatched) {
  queue_.set_timings(&stats.timings);
  writer_.set_budget(&ctx.inflight);
  queue_.set_budget(&ctx.inflight, &charged_);
  writer_.set_served_by(ctx.served_by_line);
  queue_.set_served_by(ctx.served_by_line);
}

template <class V>
BasicHttpEngine<V>::~BasicHttpEngine() {
  if (charged_ != 0) ctx_.inflight.sub(charged_);
}

template <class V>
bool BasicHttpEngine<V>::reserve_body(std::size_t n) {
  if (!ctx_.inflight.try_add(n)) return false;
  charged_ += n;
  body_reserved_ += n;
  return true;
}

template <class V>
void BasicHttpEngine<V>::settle() {
  const std::size_t output = out_.size() > kUnchargedBytes ? out_.size() : 0;
  const std::size_t holding = output + queue_.held_bytes() + body_reserved_;
  if (holding > charged_) {
    ctx_.inflight.add(holding - charged_);
  } else if (holding < charged_) {
    ctx_.inflight.sub(charged_ - holding);
  }
  charged_ = holding;
}

template <class V>
void BasicHttpEngine<V>::record_durations(std::chrono::steady_clock::time_point now) {
  if (untimed_total_ == 0) return;
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(now - arrival_).count();
  const std::uint64_t ns = elapsed > 0 ? static_cast<std::uint64_t>(elapsed) : 0;
  for (std::size_t c = 0; c < kRouteClassCount; ++c) {
    if (untimed_[c] == 0) continue;
    stats_.timings.observe(static_cast<RouteClass>(c), ns, untimed_[c]);
    untimed_[c] = 0;
  }
  untimed_total_ = 0;
}

template <class V>
void BasicHttpEngine<V>::start_parser() {
  header_bytes_ = 0;
  header_checked_ = false;
  parser_.emplace(request_);  // clears request_, keeping its storage
  parser_->body_limit(static_cast<std::uint64_t>(ctx_.config.max_value));
  parser_->eager(true);
}

template <class V>
std::size_t BasicHttpEngine<V>::consume(std::string_view input) {
  refresh_http_date();  // once per batch: every response below carries this second's Date
  if (!queue_.empty()) queue_.drain();
  std::size_t used = 0;
  while (!close_ && out_.size() < output_high_water_ && !queue_.full()) {
    if (parser_ && parser_->is_done()) {  // a request held back behind a pending response
      if (held_back()) break;
      answer();
      continue;
    }
    if (!parser_) start_parser();
    if (used == input.size()) break;
    // Beast applies header_limit to what one put() sees, and it consumes complete fields as
    // they arrive, so the limit is made cumulative here: each put may only use what is left.
    const bool in_header = !parser_->is_header_done();
    if (in_header) {
      parser_->header_limit(static_cast<std::uint32_t>(kHeaderLimitBytes - header_bytes_));
    }
    boost::beast::error_code ec;
    const std::size_t n =
        parser_->put(boost::asio::const_buffer(input.data() + used, input.size() - used), ec);
    used += n;
    if (in_header) {
      header_bytes_ += n;  // may include body bytes once the header completes; harmless then
      if ((!ec || ec == http::error::need_more) && !parser_->is_header_done() &&
          header_bytes_ >= kHeaderLimitBytes) {
        ec = http::error::header_limit;
      }
    }
    if (ec == http::error::need_more) break;
    if (ec) {
      answer_parse_error(ec);
      break;
    }
    if (parser_->is_header_done() && !header_checked_) {
      header_checked_ = true;
      if (!header_done()) break;  // rejected: the framing cannot be trusted
    }
    // A chunked body has no announced length: it is charged as it grows, 64 KiB at a time,
    // and refused as soon as the budget has no room for it.
    if (request_.body.size() > body_reserved_ && request_.body.size() > kUnchargedBytes &&
        parser_->chunked() &&
        !reserve_body(std::max(request_.body.size() - body_reserved_, kUnchargedBytes))) {
      reject(status::service_unavailable, kInflightFull);
      break;
    }
    if (parser_->is_done()) {
      if (!queue_.empty() && held_back()) break;
      answer();
      continue;
    }
    if (n == 0) break;  // no progress without an error: wait for more bytes
  }
  // The request the parser has started keeps nothing in the input past this call.
  if (parser_) request_.own();
  settle();
  return used;
}

// Runs once per request, when its header is complete (the body may or may not be parsed yet).
// Beast accepts any Transfer-Encoding list; RFC 9112 says a request whose final coding is not
// chunked has no reliable length (400), a coding we do not implement is 501, and an HTTP/1.0
// request with Transfer-Encoding has faulty framing. All three close the connection.
template <class V>
bool BasicHttpEngine<V>::header_done() {
  const Request& req = request_;
  if (req.transfer_encodings > 0) {
    if (!parser_->chunked() || req.transfer_encodings != 1 || req.version != 11) {
      reject(status::bad_request, "bad Transfer-Encoding");
      return false;
    }
    if (!req.first_coding_chunked) {
      reject(status::not_implemented, "unsupported transfer coding");
      return false;
    }
  }
  // --max-inflight: a body announced by Content-Length is charged before any of it is read, and
  // refused (503, then close: its bytes are not read) when the budget has no room for it.
  if (const auto length = parser_->content_length();
      length && *length > kUnchargedBytes && !reserve_body(static_cast<std::size_t>(*length))) {
    reject(status::service_unavailable, kInflightFull);
    return false;
  }
  if (!parser_->is_done() && req.version == 11 && req.expect_continue) {
    respond_in_order([](ResponseWriter& w) { w.buffer().append("HTTP/1.1 100 Continue\r\n\r\n"); });
  }
  return true;
}

template <class V>
bool BasicHttpEngine<V>::held_back() const {
  if (queue_.empty()) return false;
  // Whether the request writes is a column of kRouteTable (route_writes, router.hh).
  return queue_.blocks(route_writes(V::Dispatch::route(request_.method, request_.target).endpoint));
}

template <class V>
template <class F>
void BasicHttpEngine<V>::respond_in_order(F&& render) {
  if (queue_.empty()) return render(writer_);
  queued_out_.clear();
  writer_.retarget(queued_out_);
  render(writer_);
  writer_.retarget(out_);
  queue_.push_ready(std::move(queued_out_));
}

template <class V>
void BasicHttpEngine<V>::answer() {
  const Request& req = request_;
  WorkerStats::bump(stats_.requests);
  const http::verb method = req.method;
  const bool head = method == http::verb::head;
  const unsigned version = req.version;
  // Beast's keep_alive(): HTTP/1.1 unless a Connection field says close, HTTP/1.0 only if one
  // says keep-alive.
  const bool keep_alive = parser_->keep_alive() && !ctx_.stopping.load(std::memory_order_relaxed) &&
                          (version == 10 || version == 11);
  writer_.begin_request(keep_alive, version == 10, head, head ? ctx_.cache.space_used() : 0);
  // Behind a pending response, this one is rendered aside and queued (respond_in_order).
  const bool queued = !queue_.empty();
  if (queued) {
    queued_out_.clear();
    writer_.retarget(queued_out_);
  }
  HandlerResult result;
  RouteClass timing = RouteClass::other;
  bool changes_state = false;
  if (version != 10 && version != 11) {
    result = {status::bad_request, "unsupported HTTP version", {}, false};
  } else {
    const Route route = V::Dispatch::route(method, req.target);
    timing = route_class(route.endpoint);
    changes_state = route_writes(route.endpoint);
    RequestView view;
    if (is_key_endpoint(route.endpoint)) {  // the headers of expiry and conditional requests
      view.query = route.query;
      if (route.endpoint == Endpoint::key_get) view.accept = req.accept.value();
      view.if_match = req.if_match.value();
      view.has_if_match = req.if_match.present();
      view.if_none_match = req.if_none_match.value();
      view.has_if_none_match = req.if_none_match.present();
      view.cache_control = req.cache_control.value();
    } else if (route.endpoint == Endpoint::reset) {  // the admin route: its token (handlers.cc)
      view.authorization = req.authorization.value();
      view.has_authorization = req.authorization.present();
    }
    view.body = request_.body;
    if (queue_.can_defer()) view.responses = &queue_;
    result = handlers_.dispatch<typename V::ValuePath>(route, view, writer_);
  }
  if (!result.deferred && !result.ok()) writer_.error(result.status, result.error, result.allow);
  // --max-inflight: a large response body was admitted by the handler (ResponseWriter::admit,
  // before rendering it; refused, the handler answered 503 instead).
  charged_ += writer_.take_admitted();
  // A write that waits on the store holds its body there until the store answers.
  if (result.deferred && changes_state && request_.body.size() > kUnchargedBytes) {
    queue_.hold_last(request_.body.size());
  }
  if (result.deferred) {
    queue_.time_last(arrival_, timing);  // timed when the store has answered
  } else {
    count_answer(timing);
  }
  if (queued) {
    writer_.retarget(out_);
    if (!result.deferred) queue_.push_ready(std::move(queued_out_));
  }
  if (!keep_alive) close_ = true;
  ++answered_;
  parser_.reset();
  body_reserved_ = 0;  // the body is consumed; settle() gives its charge back
  if (request_.body.capacity() > kRetainedBufferBytes) std::string().swap(request_.body);
}

template <class V>
void BasicHttpEngine<V>::answer_parse_error(const boost::beast::error_code& ec) {
  if (ec == http::error::header_limit) {
    reject(status::request_header_fields_too_large, "header larger than 8 KiB");
  } else if (ec == http::error::body_limit) {
    reject(status::payload_too_large, "value larger than --max-value");
  } else if (ec == http::error::bad_content_length || ec == http::error::multiple_content_length) {
    reject(status::bad_request, "bad Content-Length");
  } else if (ec == http::error::bad_transfer_encoding) {
    reject(status::bad_request, "bad Transfer-Encoding");
  } else if (ec == http::error::bad_version) {
    reject(status::bad_request, "bad HTTP version");
  } else if (ec == http::error::bad_method) {
    reject(status::bad_request, "bad method");
  } else if (ec == http::error::bad_target) {
    reject(status::bad_request, "bad request target");
  } else if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension) {
    reject(status::bad_request, "bad chunked encoding");
  } else {
    reject(status::bad_request, "malformed request");
  }
}

template <class V>
void BasicHttpEngine<V>::reject(status s, std::string_view reason) {
  WorkerStats::bump(stats_.requests);
  const bool head = parser_ && parser_->is_header_done() && request_.method == http::verb::head;
  writer_.begin_request(false, false, head, head ? ctx_.cache.space_used() : 0);
  respond_in_order([&](ResponseWriter& w) { w.error(s, reason); });
  count_answer(RouteClass::other);
  close_ = true;
  parser_.reset();
  body_reserved_ = 0;  // the body is discarded; settle() gives its charge back
}

template <class V>
void BasicHttpEngine<V>::input_overflow() {
  reject(status::bad_request, "request line or chunk header too long");
}

template <class V>
void BasicHttpEngine<V>::output_written() {
  out_.clear();
  if (out_.capacity() > kRetainedBufferBytes) std::string().swap(out_);
  if (charged_ != 0) settle();
}

SERVER_INSTANTIATE_VARIANTS(BasicHttpEngine);

}  // namespace server
