// board_test_support.hh — what the Board tests (board_test.cc, board_property_test.cc) share.
#pragma once

#include <string>

namespace board_test {

// "m" + the number (appended: GCC 12's -Wrestrict misfires on "m" + std::to_string(i)).
inline std::string member_name(long long i) {
  std::string s = "m";
  s += std::to_string(i);
  return s;
}

}  // namespace board_test
