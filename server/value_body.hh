// value_body.hh — a Beast body type whose bytes land in a std::string owned by the connection,
// so a PUT body reuses the same storage request after request instead of allocating a fresh
// std::string per message (as http::string_body would). The parser's body_limit (= --max-value)
// bounds it; the engine trims the storage after unusually large bodies.
#pragma once

#include <algorithm>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cstdint>
#include <string>

namespace server {

struct ValueBody {
  static constexpr std::uint64_t kReserveCap = 64 * 1024;

  struct value_type {
    std::string* storage = nullptr;
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, boost::beast::error_code& ec) {
      body_.storage->clear();
      // The parser has already checked length against body_limit. Reserve only up to a cap:
      // a declared length costs nothing until the bytes actually arrive.
      if (length) {
        body_.storage->reserve(
            static_cast<std::size_t>(std::min<std::uint64_t>(*length, kReserveCap)));
      }
      ec = {};
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      std::size_t n = 0;
      for (const auto b : boost::beast::buffers_range_ref(buffers)) {
        body_.storage->append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }

    void finish(boost::beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

}  // namespace server
