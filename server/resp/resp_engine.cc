// resp_engine.cc — see resp_engine.hh. A command's way reads top to bottom:
// consume → RespParser::feed → run_command → find_command → Command::fn → ReplyWriter.
#include "server/resp/resp_engine.hh"

#include <atomic>
#include <string>

#include "server/transport/http_engine.hh"  // kOutputHighWater, kRetainedBufferBytes

namespace server::resp {

namespace {
std::atomic<std::uint64_t> next_client_id{1};

ParserLimits limits_of(const Config& config) {
  ParserLimits limits;
  limits.max_bulk = config.max_value;
  return limits;
}
}  // namespace

RespEngine::RespEngine(ServerContext& ctx, WorkerStats& stats)
    : ctx_(ctx), stats_(stats), parser_(limits_of(ctx.config)), writer_(out_), queue_(out_) {
  session_.id = next_client_id.fetch_add(1, std::memory_order_relaxed);
  writer_.set_budget(&ctx.inflight);
  queue_.set_budget(&ctx.inflight, &charged_);
  WorkerStats::bump(stats_.resp_connections_opened);
}

RespEngine::~RespEngine() {
  if (charged_ != 0) ctx_.inflight.sub(charged_);
  WorkerStats::bump(stats_.resp_connections_closed);
}

std::size_t RespEngine::consume(std::string_view input) {
  if (!queue_.empty()) queue_.drain();  // replies that waited on the store, now done, in order
  std::size_t used = 0;
  while (!close_) {
    if (out_.size() >= kOutputHighWater || queue_.full()) break;
    if (parser_.state() == RespParser::State::need_more) {
      if (used == input.size()) break;
      used += parser_.feed(input.substr(used));
      if (parser_.state() == RespParser::State::error) {
        protocol_error(parser_.error());
        break;
      }
      if (parser_.state() == RespParser::State::need_more) {
        // --max-inflight: a large command being received holds its bytes.
        if (parser_.held_bytes() > kUnchargedBytes) {
          const std::size_t holding = parser_.held_bytes();
          if (holding > charged_ && !ctx_.inflight.try_add(holding - charged_)) {
            protocol_error("OOM command not allowed when used memory > '--max-inflight'");
            break;
          }
          if (holding > charged_) charged_ = holding;
        }
        continue;
      }
    }
    if (!run_command()) break;  // waits behind a pending reply: the completion resumes us
  }
  settle();
  return used;
}

bool RespEngine::run_command() {
  const auto& args = parser_.args();
  const Command* command = find_command(args[0]);
  if (command != nullptr && !queue_.empty() && queue_.blocks(command->writes)) {
    held_ = true;
    return false;
  }
  held_ = false;
  WorkerStats::bump(stats_.requests);
  // Behind a pending reply, this one is rendered aside and queued in order.
  const bool queued = !queue_.empty();
  if (queued) {
    queued_out_.clear();
    writer_.retarget(queued_out_);
  }
  HandlerResult result;
  if (command == nullptr) {
    unknown_command(args, ReplyWriter(writer_.buffer()));
    WorkerStats::bump(stats_.resp_unknown_commands);
  } else {
    WorkerStats::bump(stats_.resp_commands[command_slot(*command)]);
    const int n = static_cast<int>(args.size());
    if (command->arity > 0 ? n != command->arity : n < -command->arity) {
      wrong_arity(*command, ReplyWriter(writer_.buffer()));
    } else {
      Call call{ctx_, stats_, session_, &queue_, writer_, args};
      result = command->fn(call);
    }
  }
  charged_ += writer_.take_admitted();
  if (queued) {
    writer_.retarget(out_);
    if (!result.deferred) queue_.push_ready(std::move(queued_out_));
  }
  if (!result.deferred) ++untimed_;
  ++answered_;
  if (session_.quit) close_ = true;
  parser_.next();
  return true;
}

void RespEngine::protocol_error(std::string_view text) {
  queued_out_.clear();
  ReplyWriter r(queue_.empty() ? out_ : queued_out_);
  std::string line = text.starts_with("OOM ") ? std::string() : std::string("ERR ");
  line += text;
  r.error(line);
  if (!queue_.empty()) queue_.push_ready(std::move(queued_out_));
  close_ = true;
}

void RespEngine::input_overflow() {
  protocol_error("Protocol error: command too long");
}

void RespEngine::settle() {
  const std::size_t output = out_.size() > kUnchargedBytes ? out_.size() : 0;
  const std::size_t arriving = parser_.held_bytes() > kUnchargedBytes ? parser_.held_bytes() : 0;
  const std::size_t holding = output + queue_.held_bytes() + arriving;
  if (holding > charged_) {
    ctx_.inflight.add(holding - charged_);
  } else if (holding < charged_) {
    ctx_.inflight.sub(charged_ - holding);
  }
  charged_ = holding;
}

void RespEngine::output_written() {
  out_.clear();
  if (out_.capacity() > kRetainedBufferBytes) std::string().swap(out_);
  if (charged_ != 0) settle();
}

// RESP commands are counted per command (WorkerStats::resp_commands), not timed: the route
// classes' histograms stay the HTTP front's.
void RespEngine::record_durations(std::chrono::steady_clock::time_point) {
  untimed_ = 0;
}

}  // namespace server::resp
