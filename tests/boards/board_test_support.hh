// board_test_support.hh — what the board tests (board_test.cc, board_property_test.cc,
// registry_test.cc, top_cache_test.cc) share.
#pragma once

#include <string>

namespace board_test {

// "m" + the number (appended: GCC 12's -Wrestrict misfires on "m" + std::to_string(i)).
inline std::string member_name(long long i) {
  std::string s = "m";
  s += std::to_string(i);
  return s;
}

// prefix + the number ("b", 7 -> "b7"), appended for the same reason.
inline std::string numbered(const char* prefix, long long i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

}  // namespace board_test
