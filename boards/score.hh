// score.hh — a board score as text: the request body's decimal form, and the JSON form (the
// shortest text that reads back as the same double; integers without ".0"). One place, so the
// server, the client's verification and the tests agree on both.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace boards {

// Parses decimal text, optionally surrounded by ASCII whitespace: "1234", "-5", "+2", "12.5",
// "1e3", ".5". Refuses (nullopt) everything else: empty text, "nan", "inf", hex, trailing bytes
// ("12abc"), and magnitudes a finite double cannot hold ("1e999", and "1e-999", which would
// silently become 0). Sets *why, if given, to a one-line reason.
std::optional<double> parse_score(std::string_view text, std::string* why = nullptr);

// Appends the shortest decimal text that reads back as score (std::to_chars): "1234", "-5",
// "12.5", "1e+21". -0 is written "0".
void append_score(std::string& out, double score);
std::string format_score(double score);

}  // namespace boards
