// member_name_test.cc — MemberName: inline up to 15 bytes, heap beyond, any bytes; copies and
// moves own their bytes (ASan in CI catches a double free or a leak).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "boards/member_name.hh"

namespace {

using boards::MemberName;

TEST(MemberName, InlineUpTo15BytesHeapBeyond) {
  for (std::size_t n : {0u, 1u, 14u, 15u, 16u, 17u, 250u}) {
    std::string s(n, 'x');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
    const MemberName m(s);
    EXPECT_EQ(m.view(), s) << n;
    EXPECT_EQ(m.size(), n);
    EXPECT_EQ(m.heap_bytes(), n > 15 ? n : 0u) << n;
  }
  EXPECT_EQ(sizeof(MemberName), 16u);
}

TEST(MemberName, AnyBytes) {
  const std::string nul("a\0b\xff", 4), long_nul(std::string(20, '\0') + "\x80");
  EXPECT_EQ(MemberName(nul).view(), nul);
  EXPECT_EQ(MemberName(long_nul).view(), long_nul);
}

TEST(MemberName, CopiesAndMovesOwnTheirBytes) {
  for (const std::string& s : {std::string("short"), std::string(40, 'L')}) {
    MemberName a(s);
    MemberName b(a);  // copy
    EXPECT_EQ(b.view(), s);
    MemberName c(std::move(a));  // move: a is left empty
    EXPECT_EQ(c.view(), s);
    EXPECT_EQ(a.view(), "");  // NOLINT(bugprone-use-after-move): moved-from is empty, by contract
    a = b;                    // copy-assign into the moved-from one
    EXPECT_EQ(a.view(), s);
    MemberName d("other name that is long enough");
    d = std::move(b);  // move-assign over a heap name
    EXPECT_EQ(d.view(), s);
    d = d;  // self-assignment keeps it
    EXPECT_EQ(d.view(), s);
    std::swap(c, d);
    EXPECT_EQ(c.view(), s);
  }
  std::vector<MemberName> v;  // reallocation moves every element
  for (int i = 0; i < 100; ++i) v.emplace_back(std::string(static_cast<std::size_t>(i % 30), 'a'));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(v[i].size(), static_cast<std::size_t>(i % 30));
}

}  // namespace
