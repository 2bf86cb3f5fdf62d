// --verify's value (see verify_sampler.hh).
#include "client/verify_sampler.hh"

#include <charconv>

namespace client {

std::optional<VerifyPolicy> VerifyPolicy::parse(std::string_view text) {
  if (text == "all") return VerifyPolicy{1};
  if (text == "off") return VerifyPolicy{0};
  std::uint32_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n == 0 ||
      n > kMaxEvery)
    return std::nullopt;
  return VerifyPolicy{n};
}

std::string VerifyPolicy::text() const {
  if (every == 1) return "all";
  if (every == 0) return "off";
  return std::to_string(every);
}

}  // namespace client
