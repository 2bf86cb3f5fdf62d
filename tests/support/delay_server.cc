// delay_server: an HTTP/1.1 keep-alive server with a known service time, for testing load tools
// against a capacity that is known in advance (tests/client/test_slo_e2e.py checks that
// bench_client --slo finds it). One thread serves every request strictly one at a time, each
// taking --service-us S microseconds of spinning on steady_clock (a sleep is too coarse and
// would let the kernel run the next request meanwhile), so its capacity is 1/S requests per second
// whatever the number of connections; the I/O around a request costs a few microseconds more.
// Plain epoll on one thread rather than Asio: serial service is the point, and the whole server
// then fits on one screen.
//
// Every request (any method, any path) gets 200 with the body "ok"; a request line or header
// block that cannot be read gets 400 and the connection is closed. Requests may be pipelined.
// Prints "listening on 127.0.0.1:PORT" once ready; SIGTERM/SIGINT end it cleanly.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

namespace {

volatile std::sig_atomic_t g_stop = 0;
constexpr std::size_t kMaxHeaderBytes = 16 * 1024;
constexpr std::size_t kMaxBodyBytes = 64 * 1024 * 1024;
constexpr std::string_view kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
constexpr std::string_view kBad =
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

struct Conn {
  std::string in, out;
  bool closing = false;  // close once `out` is written
};

void spin_for(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// The Content-Length of a header block (0 when absent); nullopt-like -1 when malformed.
long long content_length(std::string_view head) {
  std::size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string_view::npos) {
    pos += 2;
    const std::string_view line = head.substr(pos, head.find("\r\n", pos) - pos);
    constexpr std::string_view kName = "content-length:";
    if (line.size() > kName.size() &&
        std::equal(kName.begin(), kName.end(), line.begin(), [](char a, char b) {
          return a == std::tolower(static_cast<unsigned char>(b));
        })) {
      std::string_view v = line.substr(kName.size());
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      long long n = -1;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc{} || n < 0 || static_cast<std::size_t>(n) > kMaxBodyBytes) return -1;
      return n;
    }
  }
  return 0;
}

// Serves every complete request in c.in, in order; false when the input is malformed.
bool serve(Conn& c, std::chrono::nanoseconds service) {
  for (;;) {
    const auto end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) return c.in.size() <= kMaxHeaderBytes;
    const std::string_view head(c.in.data(), end);
    const auto sp = head.find(' ');
    const long long body = content_length(head);
    if (sp == std::string_view::npos || sp == 0 ||
        head.find(" HTTP/1.") == std::string_view::npos || body < 0)
      return false;
    const std::size_t total = end + 4 + static_cast<std::size_t>(body);
    if (c.in.size() < total) return true;  // the body is still coming
    spin_for(service);
    c.out.append(kOk);
    c.in.erase(0, total);
  }
}

void on_signal(int) {
  g_stop = 1;
}

}  // namespace

int main(int argc, char** argv) {
  long service_us = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--service-us" && i + 1 < argc) {
      service_us = std::strtol(argv[++i], nullptr, 10);
    } else if (a == "-h" || a == "--help") {
      std::puts("usage: delay_server [--service-us S]   (default 1000; capacity 1/S req/s)");
      return 0;
    } else {
      std::fprintf(stderr, "delay_server: unknown argument '%s' (see --help)\n", a.c_str());
      return 1;
    }
  }
  if (service_us < 0 || service_us > 10'000'000) {
    std::fprintf(stderr, "delay_server: --service-us must be 0..10000000\n");
    return 1;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  std::signal(SIGPIPE, SIG_IGN);

  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(lfd, 4096) != 0) {
    std::perror("delay_server: bind/listen");
    return 1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("listening on 127.0.0.1:%u\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::map<int, Conn> conns;
  const auto service = std::chrono::microseconds(service_us);
  auto drop = [&](int fd) {
    ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns.erase(fd);
  };
  epoll_event events[256];
  char buf[64 * 1024];
  while (!g_stop) {
    const int n = ::epoll_wait(ep, events, 256, 200);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == lfd) {
        for (int c; (c = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event cev{};
          cev.events = EPOLLIN | EPOLLRDHUP;
          cev.data.fd = c;
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          conns[c];
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = it->second;
      bool closed = false;
      for (;;) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r > 0) {
          c.in.append(buf, static_cast<std::size_t>(r));
          continue;
        }
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
        break;
      }
      if (!serve(c, service)) {
        c.out.append(kBad);
        c.closing = true;
      }
      // The answers are tiny: write them all now; a client whose socket buffer is full (it does
      // not read) is dropped.
      while (!c.out.empty()) {
        const ssize_t w = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (w > 0) {
          c.out.erase(0, static_cast<std::size_t>(w));
          continue;
        }
        closed = true;  // an error, or a full socket buffer: a client that does not read
        break;
      }
      if (closed || c.closing) drop(fd);
    }
  }
  for (auto& [fd, c] : conns) ::close(fd);
  ::close(ep);
  ::close(lfd);
  return 0;
}
