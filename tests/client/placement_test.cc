// The nginx-compatible consistent-hash ring (client/placement.hh). The expected placements were
// computed with the Python model of nginx 1.22's `hash ... consistent` (zlib.crc32; checked
// against a real nginx for 2,000 keys) for the nodes below at weight 10.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "client/placement.hh"

namespace client {
namespace {

// prefix + i (built with append: GCC 12 warns, wrongly, about "literal" + std::string).
std::string key_name(const char* prefix, int i) {
  std::string key(prefix);
  key.append(std::to_string(i));
  return key;
}

const std::vector<std::string> kNodes = {"10.77.0.1:8080", "10.77.0.2:8080", "10.77.0.3:8080"};

TEST(Crc32, IsTheStandardOne) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("k0"), 0xe109903fu);
  EXPECT_EQ(crc32("w32979"), 0xfffe9885u);
}

TEST(HashRing, PointsAre160PerUnitOfWeight) {
  EXPECT_EQ(HashRing(kNodes, 10).point_count(), 3u * 1600u);  // no duplicate hashes among these
  EXPECT_EQ(HashRing(kNodes, 1).point_count(), 3u * 160u);
  EXPECT_THROW(HashRing(kNodes, 0), std::invalid_argument);
  EXPECT_THROW(HashRing({}, 10), std::invalid_argument);
  EXPECT_THROW(HashRing({"nocolon"}, 10), std::invalid_argument);
}

TEST(HashRing, PlacesKeysAsNginxDoes) {
  const HashRing ring(kNodes, 10);
  const std::vector<std::pair<std::string, std::size_t>> expected = {
      {"k0", 0},
      {"k1", 2},
      {"kA", 1},
      {"mZZ", 2},
      {"hello", 2},
      {"b0", 1},
      {"b1", 1},
      {"b7", 2},
      {"", 2},
      {"0123456789abcdef", 1},
      // CRC-32 above the last point (0xfffdbfdc, node 1): wraps to the first point (node 2).
      {"w32979", 2}};
  for (const auto& [key, node] : expected) EXPECT_EQ(ring.node_of(key), node) << key;
  // Lower bound: a hash equal to a point is that point's; one past it is the next point's.
  EXPECT_EQ(ring.node_of_hash(0), 2u);
  EXPECT_EQ(ring.node_of_hash(179312), 2u);
  EXPECT_EQ(ring.node_of_hash(593758), 0u);
  EXPECT_EQ(ring.node_of_hash(0xfffdbfdcu), 1u);
  EXPECT_EQ(ring.node_of_hash(0xfffdbfddu), 2u);
  EXPECT_EQ(ring.node_of_hash(0xffffffffu), 2u);
}

TEST(HashRing, WeightOneIsADifferentRing) {
  const HashRing ring(kNodes, 1);
  for (const char* key : {"k0", "k1", "kA", "mZZ", "hello"})
    EXPECT_EQ(ring.node_of(key), 0u) << key;
  for (const char* key : {"b0", "b1", "b7"}) EXPECT_EQ(ring.node_of(key), 1u) << key;
}

TEST(HashRing, HostSplitsAtTheLastColon) {
  // "a:b:80" is host "a:b", port "80": not the same points as host "a", port "b:80".
  const HashRing colon({"a:b:80", "c:81"}, 1);
  const HashRing other({"a:b80", "c:81"}, 1);
  int differ = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string key = key_name("k", i);
    differ += colon.node_of(key) != other.node_of(key);
  }
  EXPECT_GT(differ, 0);
}

TEST(HashRing, RemovingANodeMovesOnlyItsKeys) {
  const std::vector<std::string> four = {"10.77.0.1:8080", "10.77.0.2:8080", "10.77.0.3:8080",
                                         "10.77.0.4:8080"};
  const std::vector<std::string> three = {four[0], four[1], four[3]};  // node 2 removed
  const HashRing before(four, 10), after(three, 10);
  const std::size_t to_four[] = {0, 1, 3};
  int moved = 0;
  for (int i = 0; i < 20'000; ++i) {
    const std::string key = key_name("key", i);
    const std::size_t was = before.node_of(key);
    const std::size_t now = to_four[after.node_of(key)];
    if (was != 2) {
      EXPECT_EQ(now, was) << key;
    } else {
      ++moved;
    }
  }
  EXPECT_GT(moved, 3'000);  // about a quarter
}

TEST(HashRing, BalanceWithWeightTenIsWithinTenPercent) {
  const std::vector<std::string> four = {"10.77.0.1:8080", "10.77.0.2:8080", "10.77.0.3:8080",
                                         "10.77.0.4:8080"};
  const HashRing ring(four, 10);
  std::vector<int> count(4, 0);
  constexpr int kKeys = 100'000;
  for (int i = 0; i < kKeys; ++i) ++count[ring.node_of(key_name("key", i))];
  const double mean = kKeys / 4.0;
  EXPECT_LE(*std::max_element(count.begin(), count.end()) / mean, 1.10);
  EXPECT_GT(*std::min_element(count.begin(), count.end()), 0);
}

}  // namespace
}  // namespace client
