// The readiness bookkeeping of a load thread (see readiness.hh).
#include "client/readiness.hh"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace client {

bool LinkQueue::push(std::uint32_t link) {
  if (queued_[link] != 0) return false;
  queued_[link] = 1;
  ring_[(head_ + size_) % ring_.size()] = link;
  ++size_;
  return true;
}

void LinkQueue::pop() {
  queued_[ring_[head_]] = 0;
  head_ = (head_ + 1) % ring_.size();
  --size_;
}

Epoll::~Epoll() {
  if (fd_ >= 0) ::close(fd_);
}

int Epoll::open(std::size_t max_events) {
  if (fd_ < 0) {
    fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd_ < 0) return errno;
  }
  events_.resize(std::max<std::size_t>(max_events, 1));
  return 0;
}

int Epoll::add(int fd, std::uint32_t link) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = link;
  if (::epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &ev) == 0) return 0;
  if (errno == EEXIST && ::epoll_ctl(fd_, EPOLL_CTL_MOD, fd, &ev) == 0) return 0;
  return errno;
}

int Epoll::remove(int fd) {
  epoll_event ev{};
  return ::epoll_ctl(fd_, EPOLL_CTL_DEL, fd, &ev) == 0 ? 0 : errno;
}

int Epoll::wait(std::chrono::nanoseconds wait) {
  const auto ns = std::max<std::int64_t>(wait.count(), 0);
  const int max = static_cast<int>(events_.size());
  if (pwait2_) {
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000),
                      static_cast<long>(ns % 1'000'000'000)};
    const int n = ::epoll_pwait2(fd_, events_.data(), max, &ts, nullptr);
    if (n >= 0 || errno != ENOSYS) return n;
    pwait2_ = false;
  }
  // Rounded up, so that a wait for a planned send never returns early in a busy loop.
  const auto ms = static_cast<int>(std::min<std::int64_t>((ns + 999'999) / 1'000'000, 1'000'000));
  return ::epoll_wait(fd_, events_.data(), max, ms);
}

}  // namespace client
