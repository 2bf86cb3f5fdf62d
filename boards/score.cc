// score.cc — board scores as text, over std::from_chars / std::to_chars (exact, locale-free,
// shortest round trip), with the body rules of docs/api.md around them.
#include "boards/score.hh"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

namespace boards {

namespace {

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::optional<double> refuse(std::string* why, const char* reason) {
  if (why != nullptr) *why = reason;
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_score(std::string_view text, std::string* why) {
  while (!text.empty() && ascii_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && ascii_space(text.back())) text.remove_suffix(1);
  if (text.empty()) return refuse(why, "the score is empty");
  // from_chars takes no '+'; one is accepted before a digit or a point.
  if (text.front() == '+') {
    text.remove_prefix(1);
    if (text.empty() || text.front() == '-' || text.front() == '+') {
      return refuse(why, "the score is not a decimal number");
    }
  }
  // Only digits, signs, points and exponents: from_chars would also read "inf", "nan" and
  // (with other flags) hex.
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) {
      return refuse(why, "the score is not a decimal number");
    }
  }
  double value = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    return refuse(why, "the score is out of the range of a double");
  }
  if (ec != std::errc() || end != text.data() + text.size()) {
    return refuse(why, "the score is not a decimal number");
  }
  if (!std::isfinite(value)) return refuse(why, "the score is not finite");
  return value == 0 ? 0.0 : value;
}

void append_score(std::string& out, double score) {
  if (score == 0) score = 0;  // -0 prints as "-0"
  std::array<char, 32> buf;   // the shortest form of a double is at most 24 characters
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), score);
  out.append(buf.data(), ec == std::errc() ? end : buf.data());
}

std::string format_score(double score) {
  std::string out;
  append_score(out, score);
  return out;
}

}  // namespace boards
