// completion_inbox.hh — the answers that store threads finish for one worker thread's
// connections, handed to that thread in batches (per-thread I/O model).
//
// A write-through group commit finishes dozens of requests at once on the store's completer
// thread. Posting each to its connection's executor costs an Asio operation (allocated on a
// thread Asio does not recycle for), the scheduler's lock and a std::function per response.
// The inbox instead appends {connection, slot} to a vector under its own lock and posts one
// drain when the vector goes from empty to not: a group's answers for this thread cross in one
// post, and the vectors keep their capacity (no allocation per answer in steady state). At
// most one drain is posted at a time, so the post's operation lives in a buffer of the inbox
// (PostSlot): no allocation per post either.
// Thread safety: push() and close() from any thread; the drain runs on the inbox's thread.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "server/transport/response_queue.hh"

namespace server {

class CompletionInbox : public std::enable_shared_from_this<CompletionInbox> {
 public:
  // executor: a worker thread's io_context (per-thread model), or a connection's strand (shared
  // model: one inbox per connection).
  explicit CompletionInbox(boost::asio::any_io_executor executor)
      : executor_(std::move(executor)) {}
  CompletionInbox(const CompletionInbox&) = delete;
  CompletionInbox& operator=(const CompletionInbox&) = delete;

  // Hands `response` to `sink` on the inbox's thread (dropped if the sink is gone by then, or
  // the inbox closed).
  void push(std::weak_ptr<SlotSink> sink, std::shared_ptr<PendingResponse> response);
  // Before the io_context goes: later pushes are dropped (no post into a dead context).
  void close();

  // The inbox of the calling worker thread (nullptr on other threads, and in the shared model,
  // where a connection's handlers run on its strand, not on one thread).
  static CompletionInbox* current();
  static void set_current(CompletionInbox* inbox);

 private:
  struct Delivery {
    std::weak_ptr<SlotSink> sink;
    std::shared_ptr<PendingResponse> response;
  };
  void drain();

  // The memory of the one drain in flight: Asio allocates the posted operation through the
  // handler's allocator (PostAllocator), and frees it before the drain runs, so the next post
  // finds it free. A larger operation, or one while the buffer is taken, uses operator new.
  class PostSlot {
   public:
    void* allocate(std::size_t n) {
      if (n <= sizeof(buffer_) && !taken_.exchange(true, std::memory_order_acquire)) {
        return buffer_;
      }
      return ::operator new(n);
    }
    void deallocate(void* p) {
      if (p == buffer_) {
        taken_.store(false, std::memory_order_release);
      } else {
        ::operator delete(p);
      }
    }

   private:
    alignas(std::max_align_t) unsigned char buffer_[256];
    std::atomic<bool> taken_{false};
  };
  template <class T>
  struct PostAllocator {
    using value_type = T;
    PostSlot* slot;
    explicit PostAllocator(PostSlot* s) : slot(s) {}
    template <class U>
    PostAllocator(const PostAllocator<U>& other) : slot(other.slot) {}
    T* allocate(std::size_t n) { return static_cast<T*>(slot->allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) { slot->deallocate(p); }
    template <class U>
    bool operator==(const PostAllocator<U>& other) const {
      return slot == other.slot;
    }
  };

  boost::asio::any_io_executor executor_;
  std::mutex mu_;
  std::vector<Delivery> pending_;  // guarded by mu_
  bool posted_ = false;            // guarded by mu_: a drain is on its way
  bool closed_ = false;            // guarded by mu_
  std::vector<Delivery> running_;  // the drain's, on the thread: keeps its capacity
  PostSlot post_slot_;
};

}  // namespace server
