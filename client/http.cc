// Socket handling and the minimal HTTP/1.1 response parser (see http.hh).
#include "http.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

namespace bench {
namespace {

constexpr std::size_t kInitialBuffer = 64 * 1024;
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
constexpr std::uint64_t kMaxBodyBytes = 256ull * 1024 * 1024;  // refuse absurd Content-Lengths

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = line[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != name[i]) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool icontains(std::string_view hay, std::string_view needle_lower) {
  if (needle_lower.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle_lower.size() <= hay.size(); ++i)
    if (iequals_prefix(hay.substr(i), needle_lower)) return true;
  return false;
}

// Decodes a chunked body starting at data[0]. Returns kComplete with consumed = bytes used.
ParseResult parse_chunked(std::string_view data, std::string& body, std::size_t& consumed) {
  body.clear();
  std::size_t pos = 0;
  for (;;) {
    const std::size_t eol = data.find("\r\n", pos);
    if (eol == std::string_view::npos)
      return data.size() - pos > 1024 ? ParseResult::kBad : ParseResult::kNeedMore;
    std::string_view size_text = data.substr(pos, eol - pos);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    size_text = trim(size_text);
    std::uint64_t size = 0;
    auto [ptr, ec] =
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (ec != std::errc{} || ptr != size_text.data() + size_text.size() || size_text.empty())
      return ParseResult::kBad;
    pos = eol + 2;
    if (size == 0) {
      // Trailer section: header lines ended by an empty line.
      for (;;) {
        const std::size_t end = data.find("\r\n", pos);
        if (end == std::string_view::npos) return ParseResult::kNeedMore;
        const bool empty = end == pos;
        pos = end + 2;
        if (empty) {
          consumed = pos;
          return ParseResult::kComplete;
        }
      }
    }
    if (data.size() - pos < size + 2) return ParseResult::kNeedMore;
    body.append(data.substr(pos, size));
    pos += size;
    if (data.substr(pos, 2) != "\r\n") return ParseResult::kBad;
    pos += 2;
  }
}

}  // namespace

std::string Endpoint::text() const {
  return host + ":" + std::to_string(port);
}

bool resolve(const std::string& host, std::uint16_t port, Endpoint& out, std::string& err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    err = "cannot resolve host '" + host + "': " + gai_strerror(rc);
    return false;
  }
  std::memcpy(&out.addr, res->ai_addr, res->ai_addrlen);
  out.len = res->ai_addrlen;
  out.host = host;
  out.port = port;
  freeaddrinfo(res);
  return true;
}

ParseResult parse_response(std::string_view data, bool head, Response& out, std::size_t& consumed,
                           std::string& scratch) {
  const std::size_t header_end = data.find("\r\n\r\n");
  if (header_end == std::string_view::npos)
    return data.size() > kMaxHeaderBytes ? ParseResult::kBad : ParseResult::kNeedMore;
  const std::string_view headers = data.substr(0, header_end + 2);
  // Status line: HTTP/1.x SSS reason
  if (headers.size() < 12 || headers.substr(0, 7) != "HTTP/1.") return ParseResult::kBad;
  const bool http10 = headers[7] == '0';
  int status = 0;
  auto [ptr, ec] = std::from_chars(headers.data() + 9, headers.data() + 12, status);
  if (ec != std::errc{} || ptr != headers.data() + 12 || status < 100 || status > 999)
    return ParseResult::kBad;

  std::uint64_t content_length = 0;
  bool has_length = false, chunked = false, close = http10, keep_alive = false;
  std::size_t pos = headers.find("\r\n") + 2;
  while (pos < headers.size()) {
    const std::size_t eol = headers.find("\r\n", pos);
    const std::string_view line = headers.substr(pos, eol - pos);
    pos = eol + 2;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals_prefix(line, "content-length:")) {
      auto [p, e] = std::from_chars(value.data(), value.data() + value.size(), content_length);
      if (e != std::errc{} || p != value.data() + value.size()) return ParseResult::kBad;
      if (content_length > kMaxBodyBytes) return ParseResult::kBad;
      has_length = true;
    } else if (iequals_prefix(line, "transfer-encoding:")) {
      chunked = icontains(value, "chunked");
    } else if (iequals_prefix(line, "connection:")) {
      if (icontains(value, "close")) close = true;
      if (icontains(value, "keep-alive")) keep_alive = true;
    }
  }
  if (http10 && keep_alive) close = false;
  const std::size_t body_start = header_end + 4;
  out.status = status;
  out.close = close;
  const bool no_body = head || status == 204 || status == 304 || (status >= 100 && status < 200);
  if (no_body) {
    out.body = {};
    consumed = body_start;
    return ParseResult::kComplete;
  }
  if (chunked) {
    std::size_t used = 0;
    const ParseResult r = parse_chunked(data.substr(body_start), scratch, used);
    if (r != ParseResult::kComplete) return r;
    out.body = scratch;
    consumed = body_start + used;
    return r;
  }
  if (!has_length) return ParseResult::kBad;  // read-until-close bodies are not supported
  if (data.size() - body_start < content_length) return ParseResult::kNeedMore;
  out.body = data.substr(body_start, content_length);
  consumed = body_start + content_length;
  return ParseResult::kComplete;
}

const char* io_result_name(IoResult r) {
  switch (r) {
    case IoResult::kOk:
      return "ok";
    case IoResult::kNeedMore:
      return "incomplete";
    case IoResult::kClosed:
      return "closed";
    case IoResult::kTimeout:
      return "timeout";
    case IoResult::kError:
      return "io_error";
    case IoResult::kBadResponse:
      return "bad_response";
  }
  return "?";
}

Connection::~Connection() {
  close();
}

Connection::Connection(Connection&& other) noexcept {
  *this = std::move(other);
}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    in_ = std::move(other.in_);
    begin_ = std::exchange(other.begin_, 0);
    end_ = std::exchange(other.end_, 0);
    pending_consume_ = std::exchange(other.pending_consume_, 0);
    scratch_ = std::move(other.scratch_);
  }
  return *this;
}

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  begin_ = end_ = pending_consume_ = 0;
}

bool Connection::connect(const Endpoint& ep, std::chrono::milliseconds timeout, std::string& err) {
  close();
  const int fd = ::socket(ep.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    err = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&ep.addr), ep.len);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (rc == 0) {
      ::close(fd);
      err = "cannot connect to " + ep.text() + ": timed out";
      return false;
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (rc < 0) so_error = errno;
    errno = so_error;
    rc = so_error == 0 ? 0 : -1;
  }
  if (rc != 0) {
    err = "cannot connect to " + ep.text() + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  fd_ = fd;
  if (in_.size() < kInitialBuffer) in_.resize(kInitialBuffer);
  begin_ = end_ = pending_consume_ = 0;
  return true;
}

IoResult Connection::send_all(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::kTimeout;
      return errno == EPIPE || errno == ECONNRESET ? IoResult::kClosed : IoResult::kError;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return IoResult::kOk;
}

IoResult Connection::send_all_reading(std::string_view& data, std::chrono::milliseconds timeout) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return errno == EPIPE || errno == ECONNRESET ? IoResult::kClosed : IoResult::kError;
    // The send buffer is full: wait until it drains or responses arrive (then hand them over).
    pollfd p{fd_, POLLOUT | POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (rc == 0) return IoResult::kTimeout;
    if (rc < 0) {
      if (errno == EINTR) continue;
      return IoResult::kError;
    }
    if ((p.revents & POLLIN) == 0) continue;
    drop_consumed();
    make_room();
    const ssize_t got = ::recv(fd_, in_.data() + end_, in_.size() - end_, MSG_DONTWAIT);
    if (got > 0) {
      end_ += static_cast<std::size_t>(got);
      return IoResult::kNeedMore;
    }
    if (got == 0) return IoResult::kClosed;
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
      return errno == ECONNRESET ? IoResult::kClosed : IoResult::kError;
  }
  return IoResult::kOk;
}

IoResult Connection::read_response(bool blocking, bool head, Response& out) {
  return next_response(blocking ? ReadMode::kBlocking : ReadMode::kNonBlocking, head, out);
}

IoResult Connection::buffered_response(bool head, Response& out) {
  return next_response(ReadMode::kBufferedOnly, head, out);
}

// Drops the response handed out last time (its body view dies here).
void Connection::drop_consumed() {
  begin_ += std::exchange(pending_consume_, 0);
  if (begin_ == end_) begin_ = end_ = 0;
}

// Makes room after end_ for a read: compacts, or grows when the buffer is full of unread bytes.
void Connection::make_room() {
  if (end_ != in_.size()) return;
  if (begin_ > 0) {
    std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  } else {
    in_.resize(in_.size() * 2);
  }
}

IoResult Connection::next_response(ReadMode mode, bool head, Response& out) {
  drop_consumed();
  for (;;) {
    if (end_ > begin_) {
      std::size_t consumed = 0;
      const ParseResult r = parse_response(std::string_view(in_.data() + begin_, end_ - begin_),
                                           head, out, consumed, scratch_);
      if (r == ParseResult::kBad) return IoResult::kBadResponse;
      if (r == ParseResult::kComplete) {
        pending_consume_ = consumed;
        return IoResult::kOk;
      }
    }
    if (mode == ReadMode::kBufferedOnly) return IoResult::kNeedMore;
    const bool blocking = mode == ReadMode::kBlocking;
    make_room();
    const ssize_t n =
        ::recv(fd_, in_.data() + end_, in_.size() - end_, blocking ? 0 : MSG_DONTWAIT);
    if (n > 0) {
      end_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return IoResult::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return blocking ? IoResult::kTimeout : IoResult::kNeedMore;
    return errno == ECONNRESET ? IoResult::kClosed : IoResult::kError;
  }
}

}  // namespace bench
