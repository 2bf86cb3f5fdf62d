// http_response_fuzz.cc — libFuzzer target over bench_client's HTTP response parser
// (client/http.cc), the code that reads whatever a server under test sends. Two passes per input:
//   1. parse_response() over the whole input, response after response, checking what must hold
//      for any bytes: a complete response is framed inside the input, its body lies inside the
//      input or the de-chunk scratch, its status is 200..999, it parses identically on its own,
//      none of its strict prefixes parses as complete, and a plain reference decoder (no
//      arithmetic that can wrap) reads the same body and the same end (no misframing);
//   2. the same bytes through a real Connection (a Unix-domain socket pair made with connect and
//      accept), delivered in pieces the way reads deliver them, must give exactly the same
//      responses, then the same ending (kBad -> "parse", incomplete -> closed), in a bounded
//      number of steps: the buffer handling (compaction, growth, consumption) cannot misframe.
//      Each response is read keeping its body, keeping it only if 200, or discarding it
//      (BodyUse, by the response's index and the first byte's other bits): every response has
//      the same status, close and body length (body_bytes) whichever, a kept body is the same
//      bytes and a discarded one is empty, so the discarding path cannot misframe either.
// The first input byte chooses HEAD (bit 0) and RESP (bit 1: `bench_client --protocol resp`,
// client/resp.hh: frame_resp_reply in pass 1, checked against its own reference decoder, and a
// Connection with use_resp in pass 2); the rest is the server's byte stream.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "client/http.hh"
#include "client/resp.hh"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

struct Seen {
  int status;
  bool close;
  std::string body;
};

// What pass 2 does with the body of response i.
client::BodyUse use_of(std::size_t i, std::uint8_t first_byte) {
  constexpr client::BodyUse kUses[] = {client::BodyUse::kKeep, client::BodyUse::kKeepIfOk,
                                       client::BodyUse::kDiscard};
  return kUses[(i + (first_byte >> 2)) % 3];
}

bool kept(client::BodyUse use, int status) {
  return use == client::BodyUse::kKeep || (use == client::BodyUse::kKeepIfOk && status == 200);
}

// A listening Unix-domain socket in the abstract namespace, made once per process.
struct Listener {
  int fd = -1;
  client::Endpoint ep;
  Listener() {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    check(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string name = "bench_http_response_fuzz." + std::to_string(::getpid());
    std::memcpy(addr.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    check(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0);
    check(::listen(fd, 4) == 0);
    std::memcpy(&ep.addr, &addr, len);
    ep.len = len;
    ep.host = "fuzz";
  }
  ~Listener() { ::close(fd); }
};

bool iequals(std::string_view a, std::string_view b_lower) {
  if (a.size() != b_lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b_lower[i]) return false;
  return true;
}

// A reference reading of a response the parser called complete, written for obviousness, not
// speed: skips the 1xx heads, then decodes the body by the final head's framing, with every chunk
// size checked against the bytes actually there (so no arithmetic can wrap). Must agree with the
// parser on the body and on where the response ends.
void check_against_reference(std::string_view msg, bool head, const client::Response& r) {
  std::size_t start = 0, head_end = 0;
  for (;;) {
    head_end = msg.find("\r\n\r\n", start);
    check(head_end != std::string_view::npos);
    const int status =
        (msg[start + 9] - '0') * 100 + (msg[start + 10] - '0') * 10 + (msg[start + 11] - '0');
    if (status >= 200) {
      check(status == r.status);
      break;
    }
    start = head_end + 4;
  }
  const std::string_view fields = msg.substr(start, head_end + 2 - start);
  bool chunked = false;
  for (std::size_t pos = fields.find("\r\n") + 2; pos < fields.size();) {
    const std::size_t eol = fields.find("\r\n", pos);
    const std::string_view line = fields.substr(pos, eol - pos);
    if (iequals(line.substr(0, line.find(':')), "transfer-encoding")) chunked = true;
    pos = eol + 2;
  }
  const std::size_t body_start = head_end + 4;
  if (head || r.status == 204 || r.status == 304) {
    check(r.body.empty() && msg.size() == body_start);
    return;
  }
  if (!chunked) {
    check(r.body == msg.substr(body_start));
    return;
  }
  std::string body;
  std::size_t pos = body_start;
  for (;;) {
    const std::size_t eol = msg.find("\r\n", pos);
    check(eol != std::string_view::npos);
    std::string_view size_text = msg.substr(pos, eol - pos);
    size_text = size_text.substr(0, size_text.find(';'));
    while (!size_text.empty() && (size_text.front() == ' ' || size_text.front() == '\t'))
      size_text.remove_prefix(1);
    while (!size_text.empty() && (size_text.back() == ' ' || size_text.back() == '\t'))
      size_text.remove_suffix(1);
    check(!size_text.empty());
    std::size_t size = 0;
    for (const char c : size_text) {
      const int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                        : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                    : -1;
      check(digit >= 0);
      size = size * 16 + static_cast<std::size_t>(digit);
      check(size <= msg.size());  // a size larger than the message cannot be complete
    }
    pos = eol + 2;
    if (size == 0) break;
    check(msg.size() - pos >= size + 2);
    body.append(msg.substr(pos, size));
    pos += size;
    check(msg.substr(pos, 2) == "\r\n");
    pos += 2;
  }
  // Trailers: lines up to the empty one, which ends the message.
  for (;;) {
    const std::size_t eol = msg.find("\r\n", pos);
    check(eol != std::string_view::npos);
    const bool empty = eol == pos;
    pos = eol + 2;
    if (empty) break;
  }
  check(pos == msg.size());
  check(r.body == body);
}

// Pass 1: every complete response parsed from the whole input, and how the input ends.
client::ParseResult parse_all(std::string_view data, bool head, std::vector<Seen>& out) {
  std::string scratch, scratch2;
  std::size_t offset = 0;
  for (;;) {
    const std::string_view rest = data.substr(offset);
    client::Response r;
    std::size_t consumed = 0;
    const client::ParseResult result = client::parse_response(rest, head, r, consumed, scratch);
    if (result != client::ParseResult::kComplete) return result;
    check(consumed > 0 && consumed <= rest.size());
    check(r.status >= 200 && r.status <= 999);
    const bool in_input =
        r.body.data() >= rest.data() && r.body.data() + r.body.size() <= rest.data() + consumed;
    const bool in_scratch = r.body.data() == scratch.data() && r.body.size() == scratch.size();
    check(in_input || in_scratch || r.body.empty());
    check_against_reference(rest.substr(0, consumed), head, r);
    out.push_back(Seen{r.status, r.close, std::string(r.body)});
    // The response alone parses the same; no strict prefix of it is complete.
    client::Response again;
    std::size_t used = 0;
    check(client::parse_response(rest.substr(0, consumed), head, again, used, scratch2) ==
          client::ParseResult::kComplete);
    check(used == consumed && again.status == r.status && again.close == r.close &&
          again.body == out.back().body);
    for (const std::size_t cut : {consumed - 1, consumed / 2, consumed / 3})
      check(client::parse_response(rest.substr(0, cut), head, again, used, scratch2) ==
            client::ParseResult::kNeedMore);
    offset += consumed;
  }
}

// A reference reading of one RESP reply at the start of msg, by hand (no from_chars, no
// arithmetic that can wrap): its status, body and length, or false when it is not whole.
bool reference_resp(std::string_view msg, Seen& seen, std::size_t& length) {
  const std::size_t eol = msg.find("\r\n");
  if (eol == std::string_view::npos || eol == 0) return false;
  const std::string_view text = msg.substr(1, eol - 1);
  const bool negative = !text.empty() && text[0] == '-';
  std::size_t n = 0;
  bool digits = text.size() > (negative ? 1u : 0u);
  for (std::size_t i = negative ? 1 : 0; i < text.size() && digits; ++i) {
    digits = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    if (digits)
      n = std::min<std::size_t>(n * 10 + static_cast<std::size_t>(text[i] - '0'), 1u << 30);
  }
  seen = Seen{0, false, {}};
  length = eol + 2;
  switch (msg[0]) {
    case '+':
    case '-':
      seen.status = msg[0] == '+' ? 200 : 500;
      seen.body = std::string(text);
      return true;
    case ':':
      if (!digits) return false;
      seen.status = n == 0 ? 404 : 200;
      return true;
    case '*':
      if (text != "-1") return false;
      seen.status = 404;
      return true;
    case '$':
      if (text == "-1") {
        seen.status = 404;
        return true;
      }
      if (!digits || negative || msg.size() - length < n + 2) return false;
      seen.status = 200;
      seen.body = std::string(msg.substr(length, n));
      length += n + 2;
      return msg.substr(length - 2, 2) == "\r\n";
    default:
      return false;
  }
}

// Pass 1 for RESP: every whole reply framed from the input, each checked against the reference,
// and how the input ends (a reply whose payload is not all there is kNeedMore).
client::ParseResult parse_all_resp(std::string_view data, std::vector<Seen>& out) {
  for (std::size_t offset = 0;;) {
    const std::string_view rest = data.substr(offset);
    client::RespFrame f;
    const client::ParseResult r = client::frame_resp_reply(rest, f);
    if (r != client::ParseResult::kComplete) return r;
    check(f.head_bytes >= 3 && f.head_bytes <= rest.size());
    check(f.status == 200 || f.status == 404 || f.status == 500);
    const std::uint64_t length = f.head_bytes + f.body_bytes + f.trailer_bytes;
    if (length > rest.size()) return client::ParseResult::kNeedMore;
    Seen ref;
    std::size_t ref_length = 0;
    check(reference_resp(rest, ref, ref_length) && ref_length == length);
    check(ref.status == f.status);
    const std::string body = f.trailer_bytes != 0
                                 ? std::string(rest.substr(f.head_bytes, f.body_bytes))
                                 : std::string(f.line);
    check(body == ref.body);
    out.push_back(Seen{f.status, false, body});
    offset += static_cast<std::size_t>(length);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Listener listener;
  if (size == 0) return 0;
  const bool resp = (data[0] & 2) != 0;
  const bool head = !resp && (data[0] & 1) != 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  std::vector<Seen> expected;
  const client::ParseResult ending =
      resp ? parse_all_resp(input, expected) : parse_all(input, head, expected);

  // Pass 2: the same bytes through a Connection, in pieces.
  client::Connection conn;
  conn.use_resp(resp);
  std::string err;
  check(conn.connect(listener.ep, std::chrono::milliseconds(1000), err));
  const int server = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
  check(server >= 0);
  std::uint32_t rng = static_cast<std::uint32_t>(size) * 2654435761u + 1;  // split points
  std::size_t offset = 0, got = 0;
  client::IoResult last = client::IoResult::kOk;
  for (std::size_t steps = 0;; ++steps) {
    check(steps < 4 * input.size() + 16);
    if (offset < input.size()) {
      rng ^= rng << 13;
      rng ^= rng >> 17;
      rng ^= rng << 5;
      const std::size_t piece = std::min<std::size_t>(1 + rng % 700, input.size() - offset);
      const ssize_t n = ::send(server, input.data() + offset, piece, MSG_NOSIGNAL);
      check(n > 0);
      offset += static_cast<std::size_t>(n);
      if (offset == input.size()) ::shutdown(server, SHUT_WR);
    } else if (input.empty()) {
      ::shutdown(server, SHUT_WR);
    }
    client::Response r;
    last = conn.read_response(false, head, r, use_of(got, data[0]));
    while (last == client::IoResult::kOk) {
      check(got < expected.size());
      const Seen& e = expected[got];
      check(r.status == e.status && r.close == e.close && r.body_bytes == e.body.size());
      check(kept(use_of(got, data[0]), r.status) ? r.body == e.body : r.body.empty());
      ++got;
      last = conn.read_response(false, head, r, use_of(got, data[0]));
    }
    if (last != client::IoResult::kNeedMore) break;
  }
  ::close(server);
  // A parse error may show before every byte arrived; then the responses before it match.
  check(got == expected.size());
  if (ending == client::ParseResult::kBad)
    check(last == client::IoResult::kBadResponse);
  else
    check(last == client::IoResult::kClosed);
  return 0;
}
