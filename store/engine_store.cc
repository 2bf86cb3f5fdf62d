// engine_store.cc — EngineStore: read()'s front door and the read delay, write() and clear()
// through the GroupCommitter, close()'s order, stats().
#include "store/engine_store.hh"

#include <utility>

namespace store::detail {

EngineStore::EngineStore(std::chrono::milliseconds read_delay, std::size_t max_value,
                         std::string engine_name)
    : read_delay_(read_delay),
      timer_(std::make_unique<TimerThread>()),
      committer_(*this, *timer_, max_value, std::move(engine_name)) {}

EngineStore::~EngineStore() {
  timer_.reset();  // runs the completions of operations started after close(), joins
}

void EngineStore::read(std::string key, ReadDone done) {
  ReadOp op{std::move(key), std::move(done), Clock::now()};
  {
    std::lock_guard lock(read_mu_);
    if (!read_stopping_) {
      read_queue_.push_back(std::move(op));
      read_cv_.notify_one();
      return;
    }
  }
  count_error();
  timer_->post([done = std::move(op.done)] {
    done(ReadResult{{Code::closed, "store closed"}, {}});
  });
}

WriteTicket EngineStore::write(std::vector<Write> batch, WriteDone done) {
  return committer_.write(std::move(batch), std::move(done));
}

void EngineStore::clear(ClearDone done) {
  committer_.clear(std::move(done));
}

void EngineStore::close() {
  std::lock_guard close_lock(close_mu_);
  if (closed_) return;
  committer_.stop();
  {
    std::lock_guard lock(read_mu_);
    read_stopping_ = true;
  }
  read_cv_.notify_all();
  // Each thread drains its queue before it exits (operations queued before close() complete).
  shut_down();
  timer_->drain();  // delayed reads issued before close()
  closed_ = true;
}

StoreStats EngineStore::stats() const {
  StoreStats s;
  s.reads = reads_.load();
  s.writes = writes_.load();
  s.commits = commits_.load();
  s.errors = errors_.load() + committer_.errors();
  add_stats(s);
  std::lock_guard lock(error_mu_);
  s.last_error = last_error_;
  return s;
}

void EngineStore::note_error(const std::string& why) {
  std::lock_guard lock(error_mu_);
  last_error_ = why;
}

}  // namespace store::detail
