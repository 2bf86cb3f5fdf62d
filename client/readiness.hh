// A load thread's readiness bookkeeping (issue 29), so that one wake-up costs in proportion to the
// connections that are ready, not to all of them (as wrk does):
// - LinkQueue: the links with a free request slot, first freed first, each at most once;
// - Epoll: the thread's epoll set, each connection's socket registered once (EPOLLIN) and
//   reported only when it has something to read.
// Worker (worker.hh) keeps, beside them, a count of its busy links and a periodic scan for the
// timeouts. Neither class knows what a link is: a link is its index in the worker's links.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace client {

// A FIFO of link indices in [0, links), each queued at most once; no allocation after
// construction.
class LinkQueue {
 public:
  explicit LinkQueue(std::size_t links = 0) : ring_(links), queued_(links, 0) {}
  // Queues link at the back; false (and nothing changes) when it is queued already.
  bool push(std::uint32_t link);
  std::uint32_t front() const { return ring_[head_]; }  // the queue must not be empty
  void pop();                                           // removes front()
  bool contains(std::uint32_t link) const { return queued_[link] != 0; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::vector<std::uint32_t> ring_;
  std::vector<std::uint8_t> queued_;  // per link: 1 while it is in the queue
  std::size_t head_ = 0, size_ = 0;
};

// An epoll instance whose events carry a link index. Errors are returned as errno values (0: ok)
// so that the worker reports them as failures of the client.
class Epoll {
 public:
  Epoll() = default;
  ~Epoll();
  Epoll(const Epoll&) = delete;
  Epoll& operator=(const Epoll&) = delete;

  // Creates the instance with room for up to max_events events per wait; 0 or errno.
  int open(std::size_t max_events);
  bool is_open() const { return fd_ >= 0; }
  // Registers fd for EPOLLIN with the link's index; 0 or errno.
  int add(int fd, std::uint32_t link);
  // Unregisters fd; 0 or errno (ENOENT, EBADF: it was not registered or is closed already).
  int remove(int fd);
  // Waits up to `wait` (nanosecond precision; 0: does not wait); the number of ready events
  // (their links by link(i)), or -1 with errno set.
  int wait(std::chrono::nanoseconds wait);
  std::uint32_t link(int i) const { return events_[static_cast<std::size_t>(i)].data.u32; }

 private:
  int fd_ = -1;
  bool pwait2_ = true;  // epoll_pwait2 (Linux 5.11) is there; else epoll_wait, in milliseconds
  std::vector<epoll_event> events_;
};

}  // namespace client
