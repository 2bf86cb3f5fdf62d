// Socket handling and the minimal HTTP/1.1 response parser (see http.hh).
#include "client/http.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "client/resp.hh"

namespace client {
namespace {

// The receive buffer starts at kInitialBuffer and a read asks for at most kReadChunk bytes unless
// a body being kept needs more: a large body that is only counted is then mostly discarded in the
// kernel (MSG_TRUNC) instead of copied, and 50 connections' buffers stay within the L2 cache.
constexpr std::size_t kInitialBuffer = 16 * 1024;
constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::uint64_t kMaxDiscard = 1u << 30;     // bytes one recv(MSG_TRUNC) is asked to drop
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;  // status line + headers (+ 1xx interims)
constexpr std::uint64_t kMaxBodyBytes = 256ull * 1024 * 1024;  // refuse absurd bodies
constexpr std::size_t kMaxChunkLine = 1024;  // a chunk-size line, extensions included
constexpr unsigned kMaxInterim = 16;         // 1xx responses skipped before the final one
constexpr std::size_t kMaxMemoHead = 512;    // longer heads are parsed every time (Connection)

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b_lower) {
  if (a.size() != b_lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != b_lower[i]) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9110 token characters (header field names), one table lookup per character.
constexpr std::array<bool, 256> kTchar = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (const char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool is_tchar(char c) {
  return kTchar[static_cast<unsigned char>(c)];
}

// Calls f(token) for each comma-separated element of a header list value, trimmed; empty
// elements (", ,") are skipped, as RFC 9110 section 5.6.1 asks of recipients.
template <typename F>
void for_each_token(std::string_view value, F&& f) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view item = trim(value.substr(0, comma));
    if (!item.empty()) f(item);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

// Decimal digits only (no sign, no spaces, no list): nullopt-like false on anything else or
// on a value above kMaxBodyBytes (which also rules out overflow).
bool parse_length(std::string_view text, std::uint64_t& out) {
  if (text.empty() || text.size() > 20) return false;
  std::uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
    if (v > kMaxBodyBytes) return false;
  }
  out = v;
  return true;
}

// Decodes a chunked body starting at data[0]. Returns kComplete with consumed = bytes used and
// total = the body's bytes; body (when not null) receives the de-chunked bytes. Every size is
// checked against what is left of kMaxBodyBytes before any arithmetic, so a size near 2^64 is
// refused instead of wrapping.
ParseResult parse_chunked(std::string_view data, std::string* body, std::uint64_t& total,
                          std::size_t& consumed) {
  if (body != nullptr) body->clear();
  total = 0;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t eol = data.find("\r\n", pos);
    // The bounds are decided the same way on a prefix as on the whole: a line whose end is not
    // here yet is refused once its end could only fall past the bound.
    if (eol == std::string_view::npos)
      return data.size() - pos > kMaxChunkLine + 1 ? ParseResult::kBad : ParseResult::kNeedMore;
    if (eol - pos > kMaxChunkLine) return ParseResult::kBad;
    std::string_view size_text = data.substr(pos, eol - pos);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    size_text = trim(size_text);
    if (size_text.empty()) return ParseResult::kBad;
    while (size_text.size() > 1 && size_text.front() == '0') size_text.remove_prefix(1);
    if (size_text.size() > 16) return ParseResult::kBad;  // above 2^64 - 1
    std::uint64_t size = 0;
    auto [ptr, ec] =
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (ec != std::errc{} || ptr != size_text.data() + size_text.size()) return ParseResult::kBad;
    if (size > kMaxBodyBytes - total) return ParseResult::kBad;
    total += size;
    pos = eol + 2;
    if (size == 0) {
      // Trailer section: header lines ended by an empty line, bounded like the header.
      const std::size_t trailer = pos;
      for (;;) {
        const std::size_t end = data.find("\r\n", pos);
        if (end == std::string_view::npos)
          return data.size() - trailer > kMaxHeaderBytes + 1 ? ParseResult::kBad
                                                             : ParseResult::kNeedMore;
        if (end - trailer > kMaxHeaderBytes) return ParseResult::kBad;
        const bool empty = end == pos;
        pos = end + 2;
        if (empty) {
          consumed = pos;
          return ParseResult::kComplete;
        }
      }
    }
    // size <= kMaxBodyBytes: no overflow in size + 2.
    if (data.size() - pos < size + 2) return ParseResult::kNeedMore;
    if (body != nullptr) body->append(data.substr(pos, static_cast<std::size_t>(size)));
    pos += static_cast<std::size_t>(size);
    if (data.substr(pos, 2) != "\r\n") return ParseResult::kBad;
    pos += 2;
  }
}

// The framing a response head announces.
struct Head {
  int status = 0;
  bool http10 = false;
  bool has_length = false;
  std::uint64_t content_length = 0;
  bool chunked = false;
  bool close = false;
};

// Parses a status line and header fields (head ends with the CRLF of its last line). Strict
// where a lenient reading could misframe the stream: exactly "HTTP/1.0" or "HTTP/1.1", three
// digits; every field "name: value" with a token name; no bare CR or LF; no obs-fold; one
// Content-Length of decimal digits at most (repeats are refused, even equal ones); a
// Transfer-Encoding of exactly "chunked" (any other coding cannot be framed or verified), never
// together with Content-Length (RFC 9112 section 6.3: a smuggling sign). Connection is a token
// list: "close" must be a whole token ("closed" and "xclose" are not).
bool parse_head(std::string_view head, Head& out) {
  if (head.size() < 14 || head.substr(0, 7) != "HTTP/1." || (head[7] != '0' && head[7] != '1') ||
      head[8] != ' ')
    return false;
  out.http10 = head[7] == '0';
  for (int i = 9; i < 12; ++i)
    if (head[i] < '0' || head[i] > '9') return false;
  out.status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
  if (out.status < 100) return false;
  if (head[12] != ' ' && head[12] != '\r') return false;
  std::size_t eol = head.find("\r\n");
  for (const char c : head.substr(0, eol))
    if (c == '\r' || c == '\n' || c == '\0') return false;
  bool keep_alive = false, close = false, has_te = false;
  std::size_t pos = eol + 2;
  while (pos < head.size()) {
    eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    const std::string_view name = line.substr(0, colon);
    for (const char c : name)
      if (!is_tchar(c)) return false;  // also "Name :" and obs-fold (leading whitespace)
    const std::string_view raw = line.substr(colon + 1);
    for (const char c : raw)
      if (c == '\r' || c == '\n' || c == '\0') return false;
    const std::string_view value = trim(raw);
    if (iequals(name, "content-length")) {
      if (out.has_length) return false;  // duplicate or conflicting
      if (!parse_length(value, out.content_length)) return false;
      out.has_length = true;
    } else if (iequals(name, "transfer-encoding")) {
      if (has_te) return false;
      has_te = true;
      unsigned tokens = 0;
      bool only_chunked = true;
      for_each_token(value, [&](std::string_view t) {
        ++tokens;
        if (!iequals(t, "chunked")) only_chunked = false;
      });
      if (tokens != 1 || !only_chunked) return false;
      out.chunked = true;
    } else if (iequals(name, "connection")) {
      for_each_token(value, [&](std::string_view t) {
        if (iequals(t, "close")) close = true;
        if (iequals(t, "keep-alive")) keep_alive = true;
      });
    }
  }
  if (out.chunked && (out.has_length || out.http10)) return false;
  out.close = close || (out.http10 && !keep_alive);
  return true;
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

ParseResult parse_response_head(std::string_view data, bool head, ResponseHead& out,
                                std::size_t& head_bytes) {
  // 1xx interim responses (100 Continue, 103 Early Hints) precede the final one: skipped.
  std::size_t start = 0;
  for (unsigned interim = 0;; ++interim) {
    const std::string_view rest = data.substr(start);
    const std::size_t header_end = rest.find("\r\n\r\n");
    if (header_end == std::string_view::npos)  // its end would lie at data.size() - 3 or later
      return data.size() > kMaxHeaderBytes + 3 ? ParseResult::kBad : ParseResult::kNeedMore;
    if (start + header_end > kMaxHeaderBytes) return ParseResult::kBad;
    Head h;
    if (!parse_head(rest.substr(0, header_end + 2), h)) return ParseResult::kBad;
    const std::size_t body_start = start + header_end + 4;
    if (h.status < 200) {
      // 101 Switching Protocols was never asked for; an interim response has no body.
      if (h.status == 101 || interim + 1 >= kMaxInterim) return ParseResult::kBad;
      start = body_start;
      continue;
    }
    out.status = h.status;
    out.close = h.close;
    out.length = 0;
    head_bytes = body_start;
    if (head || h.status == 204 || h.status == 304) {
      out.framing = ResponseHead::Framing::kNone;
    } else if (h.chunked) {
      out.framing = ResponseHead::Framing::kChunked;
    } else if (!h.has_length) {
      return ParseResult::kBad;  // read-until-close bodies are not supported
    } else {
      out.framing = ResponseHead::Framing::kLength;
      out.length = h.content_length;
    }
    return ParseResult::kComplete;
  }
}

ParseResult parse_response(std::string_view data, bool head, Response& out, std::size_t& consumed,
                           std::string& scratch) {
  ResponseHead h;
  std::size_t body_start = 0;
  const ParseResult r = parse_response_head(data, head, h, body_start);
  if (r != ParseResult::kComplete) return r;
  out.status = h.status;
  out.close = h.close;
  switch (h.framing) {
    case ResponseHead::Framing::kNone:
      out.body = {};
      out.body_bytes = 0;
      consumed = body_start;
      return ParseResult::kComplete;
    case ResponseHead::Framing::kChunked: {
      std::size_t used = 0;
      const ParseResult c = parse_chunked(data.substr(body_start), &scratch, out.body_bytes, used);
      if (c != ParseResult::kComplete) return c;
      out.body = scratch;
      consumed = body_start + used;
      return c;
    }
    case ResponseHead::Framing::kLength:
      break;
  }
  if (data.size() - body_start < h.length) return ParseResult::kNeedMore;
  out.body = data.substr(body_start, static_cast<std::size_t>(h.length));
  out.body_bytes = h.length;
  consumed = body_start + static_cast<std::size_t>(h.length);
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
      return "parse";
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
    last_errno_ = other.last_errno_;
    in_ = std::move(other.in_);
    begin_ = std::exchange(other.begin_, 0);
    end_ = std::exchange(other.end_, 0);
    pending_consume_ = std::exchange(other.pending_consume_, 0);
    want_ = std::exchange(other.want_, 0);
    skip_left_ = std::exchange(other.skip_left_, 0);
    skipped_ = other.skipped_;
    kernel_discard_ = other.kernel_discard_;
    scratch_ = std::move(other.scratch_);
    memo_bytes_ = std::move(other.memo_bytes_);
    memo_ = other.memo_;
    memo_for_head_ = other.memo_for_head_;
    resp_ = other.resp_;
    trailer_due_ = std::exchange(other.trailer_due_, 0);
  }
  return *this;
}

// A failed system call: the peer reset (or, writing, closed) the connection, or another error,
// whose errno is kept for the caller (is_local_failure()).
IoResult Connection::error_result(int err, bool writing) {
  if (err == ECONNRESET || (writing && err == EPIPE)) return IoResult::kClosed;
  last_errno_ = err;
  return IoResult::kError;
}

bool is_local_failure(int err) {
  switch (err) {
    case EBADF:
    case EFAULT:
    case EINVAL:
    case ENOTSOCK:
    case ENOMEM:
    case ENOBUFS:
    case EMFILE:
    case ENFILE:
    case EOPNOTSUPP:
      return true;
    default:
      return false;
  }
}

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  begin_ = end_ = pending_consume_ = want_ = 0;
  skip_left_ = 0;
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
  kernel_discard_ = ep.addr.ss_family == AF_INET || ep.addr.ss_family == AF_INET6;
  if (in_.size() < kInitialBuffer) in_.resize(kInitialBuffer);
  memo_bytes_.reserve(kMaxMemoHead);  // the memo never allocates while reading
  begin_ = end_ = pending_consume_ = want_ = 0;
  skip_left_ = 0;
  return true;
}

IoResult Connection::send_all(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::kTimeout;
      return error_result(errno, true);
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
    if (errno != EAGAIN && errno != EWOULDBLOCK) return error_result(errno, true);
    // The send buffer is full: wait until it drains or responses arrive (then hand them over).
    pollfd p{fd_, POLLOUT | POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (rc == 0) return IoResult::kTimeout;
    if (rc < 0) {
      if (errno == EINTR) continue;
      return error_result(errno, false);
    }
    if ((p.revents & POLLIN) == 0) continue;
    drop_consumed();
    make_room(0);
    const ssize_t got = ::recv(fd_, in_.data() + end_, in_.size() - end_, MSG_DONTWAIT);
    if (got > 0) {
      end_ += static_cast<std::size_t>(got);
      return IoResult::kNeedMore;
    }
    if (got == 0) return IoResult::kClosed;
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
      return error_result(errno, false);
  }
  return IoResult::kOk;
}

IoResult Connection::read_response(bool blocking, bool head, Response& out, BodyUse use) {
  return next_response(blocking ? ReadMode::kBlocking : ReadMode::kNonBlocking, head, use, out);
}

IoResult Connection::buffered_response(bool head, Response& out, BodyUse use) {
  return next_response(ReadMode::kBufferedOnly, head, use, out);
}

// Drops the response handed out last time (its body view dies here).
void Connection::drop_consumed() {
  begin_ += std::exchange(pending_consume_, 0);
  if (begin_ == end_) begin_ = end_ = 0;
}

// Makes room after end_ for a read: compacts, or grows when the buffer is full of unread bytes or
// smaller than `need` (bytes from begin_ the response being framed needs; 0: unknown).
void Connection::make_room(std::size_t need) {
  if (end_ != in_.size() && begin_ + need <= in_.size()) return;
  if (begin_ > 0) {
    std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == in_.size() || need > in_.size()) in_.resize(std::max(need, in_.size() * 2));
}

ParseResult Connection::frame(bool head, BodyUse use, Response& out) {
  if (resp_) return frame_resp(use, out);
  const std::string_view data(in_.data() + begin_, end_ - begin_);
  ResponseHead h;
  std::size_t head_bytes = 0;
  const std::size_t memo_size = memo_bytes_.size();
  if (memo_size != 0 && head == memo_for_head_ && data.size() >= memo_size &&
      std::memcmp(data.data(), memo_bytes_.data(), memo_size) == 0) {
    h = memo_;  // the same bytes as the head parsed last: the same framing
    head_bytes = memo_size;
  } else {
    const ParseResult r = parse_response_head(data, head, h, head_bytes);
    if (r != ParseResult::kComplete) return r;
    if (head_bytes <= kMaxMemoHead) {
      memo_bytes_.assign(data.data(), head_bytes);
      memo_ = h;
      memo_for_head_ = head;
    }
  }
  const bool keep = use == BodyUse::kKeep || (use == BodyUse::kKeepIfOk && h.status == 200);
  out.status = h.status;
  out.close = h.close;
  out.body = {};
  out.body_bytes = h.length;
  if (h.framing == ResponseHead::Framing::kChunked) {
    std::size_t used = 0;
    const ParseResult c =
        parse_chunked(data.substr(head_bytes), keep ? &scratch_ : nullptr, out.body_bytes, used);
    if (c != ParseResult::kComplete) return c;
    if (keep) out.body = scratch_;
    pending_consume_ = head_bytes + used;
    return c;
  }
  const std::size_t have = data.size() - head_bytes;
  if (keep && have < h.length) {
    want_ = head_bytes + static_cast<std::size_t>(h.length);  // the whole body, in place
    return ParseResult::kNeedMore;
  }
  want_ = 0;
  if (have >= h.length) {
    if (keep) out.body = data.substr(head_bytes, static_cast<std::size_t>(h.length));
    pending_consume_ = head_bytes + static_cast<std::size_t>(h.length);
    return ParseResult::kComplete;
  }
  // Only counted, and partly still in the socket: what is buffered goes now, the rest in discard().
  skip_left_ = h.length - have;
  skipped_ = out;
  pending_consume_ = data.size();
  return ParseResult::kComplete;
}

// A RESP reply: the same three ways as an HTTP body (kept whole in place, dropped when buffered,
// or counted and discarded from the socket), a bulk string's CRLF discarded with its payload.
ParseResult Connection::frame_resp(BodyUse use, Response& out) {
  const std::string_view data(in_.data() + begin_, end_ - begin_);
  RespFrame f;
  const ParseResult r = frame_resp_reply(data, f);
  if (r != ParseResult::kComplete) return r;
  const bool keep = use == BodyUse::kKeep || (use == BodyUse::kKeepIfOk && f.status == 200);
  out.status = f.status;
  out.close = false;
  const bool bulk = f.trailer_bytes != 0;
  // A simple string's or an error's body is its text (a bulk string's, its payload: below).
  out.body = keep && !bulk ? f.line : std::string_view();
  out.body_bytes = bulk ? f.body_bytes : f.line.size();
  const std::uint64_t framed = f.body_bytes + f.trailer_bytes;
  const std::size_t have = data.size() - f.head_bytes;
  if (keep && have < framed) {
    want_ = f.head_bytes + static_cast<std::size_t>(framed);  // the whole bulk, in place
    return ParseResult::kNeedMore;
  }
  want_ = 0;
  if (have >= framed) {
    if (bulk && keep) out.body = data.substr(f.head_bytes, static_cast<std::size_t>(f.body_bytes));
    pending_consume_ = f.head_bytes + static_cast<std::size_t>(framed);
    return ParseResult::kComplete;
  }
  // Discarded past the buffer: the payload from the socket, then its CRLF read and checked
  // (next_response) before the reply counts, so a discarded bulk string is framed as strictly.
  out.body = {};
  if (have < f.body_bytes) {
    skip_left_ = f.body_bytes - have;
    trailer_due_ = 2;
  } else {  // the payload is buffered, and part of its CRLF (0 or 1 bytes)
    const std::size_t trailer_have = have - static_cast<std::size_t>(f.body_bytes);
    if (data.substr(data.size() - trailer_have) != std::string_view("\r\n", trailer_have))
      return ParseResult::kBad;
    trailer_due_ = 2 - trailer_have;
  }
  skipped_ = out;
  pending_consume_ = data.size();
  return ParseResult::kComplete;
}

IoResult Connection::check_resp_trailer(ReadMode mode) {
  // Each byte is checked as it arrives: a wrong one is a parse error even if the stream then ends.
  const std::string_view due = std::string_view("\r\n").substr(2 - trailer_due_);
  for (;;) {
    const std::size_t have = std::min(end_ - begin_, trailer_due_);
    if (std::string_view(in_.data() + begin_, have) != due.substr(0, have))
      return IoResult::kBadResponse;
    if (have == trailer_due_) break;
    if (mode == ReadMode::kBufferedOnly) return IoResult::kNeedMore;
    const IoResult r = fill(mode);
    if (r != IoResult::kOk) return r;
  }
  begin_ += trailer_due_;
  trailer_due_ = 0;
  return IoResult::kOk;
}

IoResult Connection::discard(ReadMode mode) {
  // Body bytes already buffered (read while a write was blocked, send_all_reading) go first.
  const auto buffered =
      static_cast<std::size_t>(std::min<std::uint64_t>(skip_left_, end_ - begin_));
  begin_ += buffered;
  skip_left_ -= buffered;
  if (begin_ == end_) begin_ = end_ = 0;
  while (skip_left_ > 0) {
    if (mode == ReadMode::kBufferedOnly) return IoResult::kNeedMore;
    const bool blocking = mode == ReadMode::kBlocking;
    // TCP with MSG_TRUNC: up to len bytes are dropped from the socket, none copied (no buffer).
    // Otherwise they are read into the buffer, empty here (what it held was consumed above).
    const int wait = blocking ? MSG_WAITALL : MSG_DONTWAIT;
    const ssize_t n =
        kernel_discard_
            ? ::recv(fd_, nullptr, std::min(skip_left_, kMaxDiscard), MSG_TRUNC | wait)
            : ::recv(fd_, in_.data(), std::min<std::uint64_t>(skip_left_, in_.size()), wait);
    if (n > 0) {
      skip_left_ -= std::min<std::uint64_t>(static_cast<std::uint64_t>(n), skip_left_);
      continue;
    }
    if (n == 0) return IoResult::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return blocking ? IoResult::kTimeout : IoResult::kNeedMore;
    return error_result(errno, false);
  }
  return IoResult::kOk;
}

IoResult Connection::fill(ReadMode mode) {
  make_room(want_);
  std::size_t len = in_.size() - end_;
  if (want_ == 0) len = std::min(len, kReadChunk);
  const bool blocking = mode == ReadMode::kBlocking;
  const ssize_t n = ::recv(fd_, in_.data() + end_, len, blocking ? 0 : MSG_DONTWAIT);
  if (n > 0) {
    end_ += static_cast<std::size_t>(n);
    return IoResult::kOk;
  }
  if (n == 0) return IoResult::kClosed;
  if (errno == EINTR) return IoResult::kOk;
  if (errno == EAGAIN || errno == EWOULDBLOCK)
    return blocking ? IoResult::kTimeout : IoResult::kNeedMore;
  return error_result(errno, false);
}

IoResult Connection::next_response(ReadMode mode, bool head, BodyUse use, Response& out) {
  drop_consumed();
  for (;;) {
    if (skip_left_ > 0 || trailer_due_ > 0) {
      IoResult r = discard(mode);
      if (r == IoResult::kOk && trailer_due_ > 0) r = check_resp_trailer(mode);
      if (r != IoResult::kOk) return r;
      out = skipped_;
      return IoResult::kOk;
    }
    if (end_ > begin_) {
      const ParseResult r = frame(head, use, out);
      if (r == ParseResult::kBad) return IoResult::kBadResponse;
      if (r == ParseResult::kComplete) {
        if (skip_left_ == 0 && trailer_due_ == 0) return IoResult::kOk;
        drop_consumed();  // the buffered part of a body being discarded
        continue;
      }
    }
    if (mode == ReadMode::kBufferedOnly) return IoResult::kNeedMore;
    const IoResult r = fill(mode);
    if (r != IoResult::kOk) return r;
  }
}

}  // namespace client
