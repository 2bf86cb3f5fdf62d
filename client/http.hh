// HTTP/1.1 over one TCP connection: connecting with a timeout, sending a prepared request, and
// parsing responses out of a reused receive buffer. The parser is minimal (status line,
// Content-Length, chunked bodies, Connection tokens, 1xx interims skipped) but strict wherever a
// lenient reading of a hostile server could misframe the stream (see parse_response), and
// allocation-free on the common path: a response body the caller keeps is a view into the receive
// buffer, valid until the next read on the connection; a body the caller does not want is counted
// and discarded in the kernel (recv with MSG_TRUNC), never copied into the client.
// Every socket has send/receive timeouts, so a dead or stopped server cannot hang a thread.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace client {

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string host;  // for the Host header
  std::uint16_t port = 0;
  std::string text() const;  // host:port
};

// Resolves host:port (numeric or by name). Returns false and fills err on failure.
bool resolve(const std::string& host, std::uint16_t port, Endpoint& out, std::string& err);

struct Response {
  int status = 0;
  std::string_view body;         // empty when the body was discarded (BodyUse)
  std::uint64_t body_bytes = 0;  // the body's framed length, kept or discarded
  bool close = false;            // the server asked to close the connection
};

// What a read does with a response body. Discarded bodies are counted (Response::body_bytes) and
// dropped unread: a Content-Length body past the receive buffer is discarded by the kernel.
enum class BodyUse {
  kKeep,      // every body is kept (Response::body)
  kKeepIfOk,  // a 200's body is kept, any other discarded
  kDiscard,   // no body is kept
};

enum class ParseResult { kComplete, kNeedMore, kBad };

// Parses one response from data. On kComplete, consumed is its total length (1xx interim
// responses before it included). head: the request was HEAD (no body follows whatever the
// headers say). scratch holds a de-chunked body when needed. kBad (counted as the error kind
// "parse") for anything that cannot be framed with certainty: a malformed status line or header
// line, a repeated or non-decimal Content-Length, Content-Length with Transfer-Encoding, a
// transfer coding other than "chunked", a chunk size that is not hex or would exceed the body
// limit (256 MiB, so sizes near 2^64 cannot wrap), a body without length, 101, or a head,
// chunk line or trailer past its bound. "Connection: close" counts only as a whole token.
// Never reads past data; kNeedMore only while the bounds can still be met.
ParseResult parse_response(std::string_view data, bool head, Response& out, std::size_t& consumed,
                           std::string& scratch);

// The framing parse_response found in a response head: what follows the head.
struct ResponseHead {
  int status = 0;
  bool close = false;
  enum class Framing { kNone, kLength, kChunked } framing = Framing::kNone;
  std::uint64_t length = 0;  // Framing::kLength: the body's bytes
};
// The head alone (1xx interims skipped): on kComplete, head_bytes is the length of everything
// before the final response's body. Same rules and bounds as parse_response.
ParseResult parse_response_head(std::string_view data, bool head, ResponseHead& out,
                                std::size_t& head_bytes);

enum class IoResult { kOk, kNeedMore, kClosed, kTimeout, kError, kBadResponse };
// The error kind of a result as reported in errors_by_code: "closed", "timeout", "io_error",
// "parse" (kBadResponse), ...
const char* io_result_name(IoResult r);
// An errno that says the client itself failed (bad descriptor, no memory or buffers, too many
// files, ...), not the server or the network: a measurement cannot go on after it.
bool is_local_failure(int err);

class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;

  bool connect(const Endpoint& ep, std::chrono::milliseconds timeout, std::string& err);
  void close();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // The errno of the last kError result (0 if none yet).
  int last_errno() const { return last_errno_; }
  // Replies are framed as RESP2 (resp.hh: `--protocol resp`) instead of HTTP/1.1 responses.
  void use_resp(bool on) { resp_ = on; }

  // Sends all bytes (blocking, bounded by the send timeout).
  IoResult send_all(std::string_view data);
  // Sends the bytes of data, removing what was sent; whenever the socket cannot take more, waits
  // until it can or bytes arrive, so that a server which stops reading while its responses are
  // unread cannot deadlock a pipeline. Returns kOk once all is sent; kNeedMore when a read brought
  // bytes into the receive buffer (the caller handles the complete responses with
  // buffered_response, then calls again with the rest); otherwise the error. Each wait is bounded
  // by timeout. Invalidates the body of the response returned last.
  IoResult send_all_reading(std::string_view& data, std::chrono::milliseconds timeout);
  // Reads until one complete response is buffered (a complete response already in the buffer is
  // returned without a system call). blocking=false reads without waiting, as long as data is
  // there, and returns kNeedMore once the socket has nothing more and the response is still
  // incomplete.
  IoResult read_response(bool blocking, bool head, Response& out, BodyUse use = BodyUse::kKeep);
  // The next complete response already in the receive buffer, without any system call; kNeedMore
  // when the buffer holds none (pipelining: the responses that arrived with the last read). A
  // response whose discarded body is still partly in the socket is finished by read_response.
  IoResult buffered_response(bool head, Response& out, BodyUse use = BodyUse::kKeep);

 private:
  enum class ReadMode { kBlocking, kNonBlocking, kBufferedOnly };
  IoResult next_response(ReadMode mode, bool head, BodyUse use, Response& out);
  // Frames the response at begin_: kComplete fills out (and, for a body being discarded past the
  // buffer, sets skip_left_), kNeedMore asks for more bytes.
  ParseResult frame(bool head, BodyUse use, Response& out);
  ParseResult frame_resp(BodyUse use, Response& out);  // frame() for --protocol resp
  // The CRLF (its last trailer_due_ bytes) after a discarded bulk string's payload: read into
  // the buffer and checked; kBadResponse when it is something else.
  IoResult check_resp_trailer(ReadMode mode);
  // Discards skip_left_ bytes of a body from the socket (TCP: MSG_TRUNC, in the kernel; other
  // sockets, e.g. a Unix-domain one, which do not support it: read into the empty buffer and
  // dropped); kOk once all are gone.
  IoResult discard(ReadMode mode);
  // One recv into the buffer (at most kReadChunk bytes unless a kept body needs more).
  IoResult fill(ReadMode mode);
  IoResult error_result(int err, bool writing);
  void drop_consumed();
  void make_room(std::size_t need);

  int fd_ = -1;
  int last_errno_ = 0;
  std::vector<char> in_;
  std::size_t begin_ = 0;            // first unconsumed byte
  std::size_t end_ = 0;              // one past the last received byte
  std::size_t pending_consume_ = 0;  // length of the response last returned, dropped on next read
  std::size_t want_ = 0;  // bytes from begin_ the response being framed needs (0: unknown)
  // A response whose discarded body still has skip_left_ bytes in the socket: it is returned
  // (as skipped_) once they are gone.
  std::uint64_t skip_left_ = 0;
  Response skipped_;
  bool kernel_discard_ = true;  // the socket is TCP: recv(MSG_TRUNC) drops bytes uncopied
  std::string scratch_;
  // The last response head framed (its bytes up to the body, 1xx interims included, for a
  // request that was HEAD or not: memo_for_head_) and what parse_response_head found in it. A
  // head that begins with the same bytes frames the same (the parse reads nothing past them), so a
  // server's repeated heads (pipelined answers of one kind) are compared, not parsed again.
  std::string memo_bytes_;
  ResponseHead memo_;
  bool memo_for_head_ = false;
  bool resp_ = false;            // use_resp()
  std::size_t trailer_due_ = 0;  // bytes of a discarded bulk string's CRLF not yet checked
};

}  // namespace client
