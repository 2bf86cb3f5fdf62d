// `bench_client place` (client/place.hh): answers from the ring, one line per key, and usage
// errors that say what is wrong.
#include "client/place.hh"

#include <gtest/gtest.h>

#include <sstream>

#include "client/placement.hh"

namespace client {
namespace {

struct Ran {
  int code;
  std::string out, err;
};

Ran place(std::vector<std::string> args, const std::string& input) {
  std::istringstream in(input);
  std::ostringstream out, err;
  const int code = run_place(args, in, out, err);
  return {code, out.str(), err.str()};
}

const std::vector<std::string> kRingNodes = {"10.77.0.1:8080", "10.77.0.2:8080", "10.77.0.3:8080"};

TEST(Place, PrintsEachKeysNodeFromTheRing) {
  const HashRing ring(kRingNodes, 10);
  std::string input, want;
  for (int i = 0; i < 500; ++i) {
    const std::string key = "key:" + std::to_string(i);
    input += key + "\n";
    want += kRingNodes[ring.node_of(key)] + "\n";
  }
  const Ran r = place({"--targets", "10.77.0.1:8080,10.77.0.2:8080,10.77.0.3:8080"}, input);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
}

TEST(Place, WeightChangesTheRingAndNamesHashUpToTheirFirstSlash) {
  const HashRing one(kRingNodes, 1);
  const Ran r =
      place({"--targets", "10.77.0.1:8080,10.77.0.2:8080,10.77.0.3:8080", "--target-weight", "1"},
            "b1\nweekly/x\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kRingNodes[one.node_of("b1")] + "\n" + kRingNodes[one.node_of("weekly")] + "\n");
}

TEST(Place, UsageErrorsSayWhy) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "--targets is required"},
      {{"--targets"}, "needs a value"},
      {{"--targets", "a:1,a:1"}, "given twice"},
      {{"--targets", "a"}, "not HOST:PORT"},
      {{"--targets", "a:0"}, "not HOST:PORT"},
      {{"--targets", "a:70000"}, "not HOST:PORT"},
      {{"--targets", "a:1", "--target-weight", "0"}, "--target-weight must be 1..100"},
      {{"--targets", "a:1", "--target-weight", "101"}, "--target-weight must be 1..100"},
      {{"--targets", "a:1", "--nope"}, "unknown argument"},
  };
  for (const auto& [args, message] : cases) {
    const Ran r = place(args, "k\n");
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const Ran help = place({"--help"}, "");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--target-weight"), std::string::npos);
}

}  // namespace
}  // namespace client
