// response_writer_test.cc — ResponseWriter's fused GET-hit response (ok_octet_stream) against
// the general path it stands for (start + the ETag line + end_headers + body), byte for byte,
// over value sizes on both sides of its one-append limit and versions of every digit count; and
// which requests plain() lets take it.
#include "server/transport/response_writer.hh"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "server/transport/etag.hh"
#include "server/transport/http_date.hh"

namespace server {
namespace {

TEST(ResponseWriter, FusedGetHitEqualsTheGeneralPath) {
  const Etags etags(0x087923e0);
  refresh_http_date();
  for (std::size_t size : {0, 1, 100, 511, 512, 513, 5000, 100000}) {
    for (std::uint64_t version : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0xabc},
                                  std::numeric_limits<std::uint64_t>::max()}) {
      std::string value(size, 'v');
      for (std::size_t i = 0; i < size; ++i) value[i] = static_cast<char>('a' + i % 26);
      std::string fused = "previous response;";
      std::string general = fused;
      ResponseWriter f(fused);
      f.begin_request(true, false, false, 0);
      ASSERT_TRUE(f.plain());
      f.ok_octet_stream(value, etags, version);
      ResponseWriter g(general);
      g.begin_request(true, false, false, 0);
      g.start(ResponseWriter::status::ok, kOctetStream, value.size());
      EtagBuffer buffer;
      g.header_line(etags.header_line(version, buffer));
      g.end_headers();
      g.body(value);
      EXPECT_EQ(fused, general) << size << " bytes, version " << version;
    }
  }
}

TEST(ResponseWriter, PlainOnlyForKeepAliveHttp11GetsWithoutServedBy) {
  std::string out;
  ResponseWriter w(out);
  w.begin_request(true, false, false, 0);
  EXPECT_TRUE(w.plain());
  w.begin_request(false, false, false, 0);  // Connection: close
  EXPECT_FALSE(w.plain());
  w.begin_request(true, true, false, 0);  // HTTP/1.0: Connection: keep-alive
  EXPECT_FALSE(w.plain());
  w.begin_request(true, false, true, 5);  // HEAD: Space-Used, no body
  EXPECT_FALSE(w.plain());
  w.set_served_by("Served-By: n1\r\n");
  w.begin_request(true, false, false, 0);
  EXPECT_FALSE(w.plain());
}

}  // namespace
}  // namespace server
