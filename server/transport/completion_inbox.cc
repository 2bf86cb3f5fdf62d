// completion_inbox.cc — see completion_inbox.hh.
#include "server/transport/completion_inbox.hh"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/post.hpp>

namespace server {

namespace {
thread_local CompletionInbox* current_inbox = nullptr;
}  // namespace

// PendingResponse's hand-off (response_queue.hh) is defined here, with the inbox it goes
// through, so that response_queue.cc need not include this file's header (which includes its).
void PendingResponse::finished() {
  if (route_ && route_->inbox) route_->inbox->push(route_->sink, shared_from_this());
}

CompletionInbox* CompletionInbox::current() {
  return current_inbox;
}

void CompletionInbox::set_current(CompletionInbox* inbox) {
  current_inbox = inbox;
}

void CompletionInbox::push(std::weak_ptr<SlotSink> sink,
                           std::shared_ptr<PendingResponse> response) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    pending_.push_back(Delivery{std::move(sink), std::move(response)});
    if (posted_) return;
    posted_ = true;
  }
  boost::asio::post(executor_,
                    boost::asio::bind_allocator(PostAllocator<void>(&post_slot_),
                                                [self = shared_from_this()] { self->drain(); }));
}

void CompletionInbox::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  pending_.clear();
}

void CompletionInbox::drain() {
  {
    std::lock_guard lock(mu_);
    running_.swap(pending_);  // pending_ takes running_'s (cleared) capacity
    posted_ = false;
  }
  for (Delivery& d : running_) {
    if (auto sink = d.sink.lock()) sink->complete_deferred(*d.response);
  }
  running_.clear();
}

}  // namespace server
