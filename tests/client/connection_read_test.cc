// Connection's response path against a real loopback socket (issue 29): bodies the caller does not
// keep are counted and discarded (recv with MSG_TRUNC), kept bodies are exact views, the stream
// stays aligned across discarded bodies, a discard cut short by an empty socket resumes, and
// reading answers allocates nothing once the buffers have grown (counting_new counts every
// operator new in this binary).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>

#include "client/http.hh"
#include "tests/support/counting_new.hh"

namespace client {
namespace {

constexpr auto kTimeout = std::chrono::milliseconds(5000);

// A body of n bytes whose content depends on seed, so a misaligned view cannot pass for it.
std::string pattern(std::size_t n, char seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (seed + i * 7) % 26);
  return s;
}

std::string response(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string chunked(const std::string& body) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx", body.size());
  return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(size) + "\r\n" +
         body + "\r\n0\r\n\r\n";
}

// One loopback listener (TCP, or a Unix-domain socket); serve() accepts one connection and writes
// `first` to it, then, when `rest` is given, the rest once release() is called; close_after: then
// it closes the connection.
class Loopback {
 public:
  explicit Loopback(bool unix_domain = false) {
    if (unix_domain) {
      listen_unix();
      return;
    }
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listener_, 4);
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    std::string err;
    EXPECT_TRUE(resolve("127.0.0.1", ntohs(a.sin_port), ep_, err)) << err;
  }
  ~Loopback() {
    if (server_.joinable()) server_.join();
    if (peer_ >= 0) ::close(peer_);
    ::close(listener_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void serve(std::string first, std::string rest = {}, bool close_after = false) {
    server_ = std::thread([this, first = std::move(first), rest = std::move(rest), close_after] {
      peer_ = ::accept(listener_, nullptr, nullptr);
      write_all(first);
      if (!rest.empty()) {
        released_.get_future().wait();
        write_all(rest);
      }
      if (close_after) ::shutdown(peer_, SHUT_RDWR);
    });
  }
  void release() { released_.set_value(); }
  const Endpoint& ep() const { return ep_; }

 private:
  void write_all(const std::string& s) const {
    for (std::size_t off = 0; off < s.size();) {
      const ssize_t n = ::send(peer_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }
  void listen_unix() {
    path_ = "/tmp/bench_read_test_" + std::to_string(::getpid()) + ".sock";
    ::unlink(path_.c_str());
    listener_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::listen(listener_, 4);
    std::memcpy(&ep_.addr, &a, sizeof a);
    ep_.len = sizeof a;
    ep_.host = path_;
  }
  std::string path_;  // the Unix-domain socket's path (empty: TCP)
  int listener_ = -1;
  int peer_ = -1;
  Endpoint ep_;
  std::thread server_;
  std::promise<void> released_;
};

// lo serves stream; conn is connected to it.
void serve_and_connect(Loopback& lo, const std::string& stream, Connection& conn) {
  lo.serve(stream);
  std::string err;
  ASSERT_TRUE(conn.connect(lo.ep(), kTimeout, err)) << err;
}

// `count` answers of `big`, then one of "tail", on one connection (TCP, or a Unix-domain
// socket): each discarded body is counted and not kept, and the stream stays aligned for the tail.
void expect_discards_keep_the_stream_aligned(bool unix_domain, int count, const std::string& big) {
  std::string stream;
  for (int i = 0; i < count; ++i) stream += response(200, big);
  stream += response(200, "tail");
  Loopback lo(unix_domain);
  lo.serve(stream);
  Connection conn;
  std::string err;
  ASSERT_TRUE(conn.connect(lo.ep(), kTimeout, err)) << err;
  Response r;
  for (int i = 0; i < count; ++i) {
    ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kDiscard), IoResult::kOk) << i;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body_bytes, big.size());
    EXPECT_TRUE(r.body.empty());
  }
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kOk);
  EXPECT_EQ(r.body, "tail");
}

TEST(ConnectionRead, DiscardedBodiesAreCountedAndTheStreamStaysAligned) {
  expect_discards_keep_the_stream_aligned(false, 20, pattern(100 * 1024, 1));
}

// A Unix-domain socket has no MSG_TRUNC discard (recv fails with EFAULT): the body is read into
// the buffer and dropped instead, and the stream stays aligned all the same.
TEST(ConnectionRead, OnAUnixSocketDiscardedBodiesAreReadAndDropped) {
  expect_discards_keep_the_stream_aligned(true, 5, pattern(100 * 1024, 8));
}

TEST(ConnectionRead, KeepIfOkKeepsTheWholeBodyOfA200Only) {
  const std::string big = pattern(300 * 1024, 2);  // larger than the initial buffer
  const std::string miss = pattern(70 * 1024, 3);
  Loopback lo;
  lo.serve(response(404, miss) + response(200, big) + chunked(big) + response(404, miss) +
           chunked(miss) + response(200, "ok"));
  Connection conn;
  std::string err;
  ASSERT_TRUE(conn.connect(lo.ep(), kTimeout, err)) << err;
  Response r;
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeepIfOk), IoResult::kOk);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body_bytes, miss.size());
  EXPECT_TRUE(r.body.empty());
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeepIfOk), IoResult::kOk);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == big);
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeepIfOk), IoResult::kOk);
  EXPECT_TRUE(r.body == big);  // de-chunked
  EXPECT_EQ(r.body_bytes, big.size());
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kDiscard), IoResult::kOk);
  EXPECT_EQ(r.status, 404);
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kDiscard), IoResult::kOk);
  EXPECT_TRUE(r.body.empty());  // a discarded chunked body: counted only
  EXPECT_EQ(r.body_bytes, miss.size());
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeepIfOk), IoResult::kOk);
  EXPECT_EQ(r.body, "ok");
}

TEST(ConnectionRead, ADiscardCutShortByAnEmptySocketResumes) {
  const std::string body = pattern(200 * 1024, 4);
  const std::string first = response(200, body);
  const std::size_t cut = first.size() - 50 * 1024;  // the head and 150 KiB of the body
  Loopback lo;
  lo.serve(first.substr(0, cut), first.substr(cut) + response(200, "next"));
  Connection conn;
  std::string err;
  ASSERT_TRUE(conn.connect(lo.ep(), kTimeout, err)) << err;
  Response r;
  IoResult got = IoResult::kNeedMore;
  for (int i = 0; i < 200 && got == IoResult::kNeedMore; ++i) {
    got = conn.read_response(false, false, r, BodyUse::kDiscard);
    if (got == IoResult::kNeedMore) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(got, IoResult::kNeedMore);  // the last 50 KiB are not sent yet
  EXPECT_EQ(conn.buffered_response(false, r, BodyUse::kDiscard), IoResult::kNeedMore);
  lo.release();
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kDiscard), IoResult::kOk);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body_bytes, body.size());
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kOk);
  EXPECT_EQ(r.body, "next");
}

TEST(ConnectionRead, AClosedConnectionMidDiscardIsClosed) {
  Loopback lo;
  lo.serve(response(200, pattern(100 * 1024, 5)).substr(0, 40 * 1024), {}, true);  // then closes
  Connection conn;
  std::string err;
  ASSERT_TRUE(conn.connect(lo.ep(), kTimeout, err)) << err;
  Response r;
  EXPECT_EQ(conn.read_response(true, false, r, BodyUse::kDiscard), IoResult::kClosed);
}

// Heads repeat on a connection (pipelined answers of one kind): a head equal to the one framed
// last is not parsed again, and a head that differs from it, even only past a shared prefix or
// in its length, is framed by its own bytes (a bad one still refused).
TEST(ConnectionRead, ARepeatedHeadFramesLikeANewOne) {
  const std::string stream =
      response(200, "hello") + response(200, "hello") + response(200, "hello!") +
      response(404, "no") + response(200, "hello") +
      "HTTP/1.1 200 X\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello";
  Loopback lo;
  Connection conn;
  serve_and_connect(lo, stream, conn);
  Response r;
  const std::pair<int, std::string> expected[] = {
      {200, "hello"}, {200, "hello"}, {200, "hello!"}, {404, "no"}, {200, "hello"}};
  for (const auto& [status, body] : expected) {
    ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kOk) << body;
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(r.body, body);
    EXPECT_EQ(r.body_bytes, body.size());
  }
  EXPECT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kBadResponse);
}

// The answers a load run reads (large bodies discarded, large bodies kept, small ones, chunked
// ones) cost no heap allocation once the connection's buffers have grown.
TEST(ConnectionRead, ReadingAnswersAllocatesNothing) {
  const std::string big = pattern(100 * 1024, 6);
  const std::string small = pattern(100, 7);
  std::string round = response(200, big) + response(200, big) + response(404, small) +
                      response(200, small) + chunked(small);
  std::string stream;
  constexpr int kRounds = 60, kWarm = 10;
  for (int i = 0; i < kRounds; ++i) stream += round;
  Loopback lo;
  Connection conn;
  serve_and_connect(lo, stream, conn);
  Response r;
  std::uint64_t before = 0;
  std::size_t bytes = 0;
  for (int i = 0; i < kRounds; ++i) {
    if (i == kWarm) before = counting_new::allocations();
    const BodyUse uses[] = {BodyUse::kDiscard, BodyUse::kKeepIfOk, BodyUse::kKeepIfOk,
                            BodyUse::kKeep, BodyUse::kKeep};
    for (const BodyUse use : uses) {
      if (conn.read_response(true, false, r, use) != IoResult::kOk) FAIL() << "round " << i;
      bytes += r.body.size();
    }
  }
  const std::uint64_t during = counting_new::allocations() - before;
  EXPECT_EQ(during, 0u) << "allocations while reading " << (kRounds - kWarm) * 5 << " answers";
  EXPECT_EQ(bytes, static_cast<std::size_t>(kRounds) * (big.size() + 2 * small.size()));
}

// --protocol resp (resp.hh): bulk strings kept whole in place or discarded (a large one from the
// socket, CRLF included), nil and simple replies between them, the stream aligned throughout, and
// no allocation once the buffer has grown.
std::string bulk(const std::string& s) {
  std::string out = "$";
  out += std::to_string(s.size());
  out += "\r\n";
  out += s;
  out += "\r\n";
  return out;
}

TEST(ConnectionRead, RespRepliesAreFramedKeptOrDiscardedAndStayAligned) {
  const std::string big = pattern(300 * 1024, 5);  // past the initial buffer
  const std::string small = pattern(100, 6);
  std::string stream;
  constexpr int kRounds = 40, kWarm = 5;
  for (int i = 0; i < kRounds; ++i) stream += bulk(big) + "$-1\r\n" + bulk(small) + "+OK\r\n:0\r\n";
  stream += "-ERR done\r\n";
  Loopback lo;
  Connection conn;
  conn.use_resp(true);
  serve_and_connect(lo, stream, conn);
  Response r;
  std::uint64_t before = 0;
  for (int i = 0; i < kRounds; ++i) {
    if (i == kWarm) before = counting_new::allocations();
    const BodyUse big_use = i % 2 == 0 ? BodyUse::kDiscard : BodyUse::kKeepIfOk;
    ASSERT_EQ(conn.read_response(true, false, r, big_use), IoResult::kOk) << i;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body_bytes, big.size());
    EXPECT_TRUE(big_use == BodyUse::kDiscard ? r.body.empty() : r.body == big) << i;
    ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeepIfOk), IoResult::kOk);
    EXPECT_EQ(r.status, 404);
    ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kOk);
    EXPECT_TRUE(r.body == small) << i;
    ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kOk);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "OK");
    ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kOk);
    EXPECT_EQ(r.status, 404);
  }
  EXPECT_EQ(counting_new::allocations() - before, 0u);
  ASSERT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kOk);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "ERR done");
}

TEST(ConnectionRead, AnHttpAnswerToARespConnectionIsAParseError) {
  Loopback lo;
  Connection conn;
  conn.use_resp(true);
  serve_and_connect(lo, response(200, "ok"), conn);
  Response r;
  EXPECT_EQ(conn.read_response(true, false, r, BodyUse::kKeep), IoResult::kBadResponse);
}

}  // namespace
}  // namespace client
