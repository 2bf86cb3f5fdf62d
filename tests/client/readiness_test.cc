// A load thread's readiness bookkeeping (client/readiness.hh, issue 29): the queue of links with
// a free slot (first in, first out, each link once, wrapping around its ring) and the epoll set
// (only the sockets that have something to read are reported, each with its link's index; a
// removed or closed socket is not; a wait's timeout has sub-millisecond precision).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <set>
#include <vector>

#include "client/readiness.hh"

namespace client {
namespace {

TEST(LinkQueue, FirstInFirstOutEachLinkOnce) {
  LinkQueue q(4);
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.push(2));
  EXPECT_TRUE(q.push(0));
  EXPECT_FALSE(q.push(2));  // queued already: stays where it was
  EXPECT_TRUE(q.contains(2));
  EXPECT_FALSE(q.contains(1));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.front(), 2u);
  q.pop();
  EXPECT_FALSE(q.contains(2));
  EXPECT_TRUE(q.push(2));  // out of the queue: can be queued again, at the back
  EXPECT_EQ(q.front(), 0u);
  q.pop();
  EXPECT_EQ(q.front(), 2u);
  q.pop();
  EXPECT_TRUE(q.empty());
}

TEST(LinkQueue, WrapsAroundWithEveryLinkQueued) {
  LinkQueue q(3);
  std::vector<std::uint32_t> order;
  for (int round = 0; round < 5; ++round) {
    for (std::uint32_t i = 0; i < 3; ++i) q.push((i + static_cast<std::uint32_t>(round)) % 3);
    EXPECT_EQ(q.size(), 3u);
    while (!q.empty()) {
      order.push_back(q.front());
      q.pop();
    }
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2, 1, 2, 0}));
}

struct Pair {
  int fd[2] = {-1, -1};
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0); }
  ~Pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;
};

std::set<std::uint32_t> ready_links(Epoll& ep, std::chrono::nanoseconds wait) {
  std::set<std::uint32_t> out;
  const int n = ep.wait(wait);
  EXPECT_GE(n, 0);
  for (int i = 0; i < n; ++i) out.insert(ep.link(i));
  return out;
}

// 200 registered sockets, two of them readable: a wait reports those two and no other.
TEST(Epoll, ReportsOnlyTheReadySocketsWithTheirLinks) {
  constexpr std::size_t kLinks = 200;
  std::vector<Pair> pairs(kLinks);
  Epoll ep;
  ASSERT_EQ(ep.open(64), 0);
  for (std::uint32_t i = 0; i < kLinks; ++i) ASSERT_EQ(ep.add(pairs[i].fd[0], i), 0);
  EXPECT_TRUE(ready_links(ep, std::chrono::nanoseconds(0)).empty());
  ASSERT_EQ(::write(pairs[17].fd[1], "x", 1), 1);
  ASSERT_EQ(::write(pairs[150].fd[1], "y", 1), 1);
  EXPECT_EQ(ready_links(ep, std::chrono::milliseconds(100)), (std::set<std::uint32_t>{17, 150}));
  // Level-triggered: unread bytes are reported again; read, they are not.
  EXPECT_EQ(ready_links(ep, std::chrono::nanoseconds(0)), (std::set<std::uint32_t>{17, 150}));
  char c;
  ASSERT_EQ(::read(pairs[17].fd[0], &c, 1), 1);
  EXPECT_EQ(ready_links(ep, std::chrono::nanoseconds(0)), (std::set<std::uint32_t>{150}));
  // Removed: no longer reported, though readable; added again under another link, it is.
  EXPECT_EQ(ep.remove(pairs[150].fd[0]), 0);
  EXPECT_TRUE(ready_links(ep, std::chrono::nanoseconds(0)).empty());
  EXPECT_NE(ep.remove(pairs[150].fd[0]), 0);  // not registered any more
  ASSERT_EQ(ep.add(pairs[150].fd[0], 7), 0);
  EXPECT_EQ(ready_links(ep, std::chrono::nanoseconds(0)), (std::set<std::uint32_t>{7}));
  // A closed socket leaves the set by itself (a re-opened connection is registered anew).
  ::close(pairs[150].fd[0]);
  pairs[150].fd[0] = -1;
  EXPECT_TRUE(ready_links(ep, std::chrono::nanoseconds(0)).empty());
}

// The peer's close of an idle socket makes it readable: reported (the worker then takes an idle
// link out of the set).
TEST(Epoll, ReportsAPeerClose) {
  Pair p;
  Epoll ep;
  ASSERT_EQ(ep.open(4), 0);
  ASSERT_EQ(ep.add(p.fd[0], 3), 0);
  ::close(p.fd[1]);
  p.fd[1] = -1;
  EXPECT_EQ(ready_links(ep, std::chrono::milliseconds(100)), (std::set<std::uint32_t>{3}));
}

// A wait of 300 us returns after about that long, not rounded to a millisecond or to nothing
// (the open loop waits for its next planned send this way). Only a lower bound is checked.
TEST(Epoll, WaitsForItsTimeoutWithNothingReady) {
  Pair p;
  Epoll ep;
  ASSERT_EQ(ep.open(4), 0);
  ASSERT_EQ(ep.add(p.fd[0], 0), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ep.wait(std::chrono::microseconds(300)), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::microseconds(300));
}

}  // namespace
}  // namespace client
