// `bench_client place` (see place.hh).
#include "client/place.hh"

#include <charconv>
#include <istream>
#include <ostream>
#include <set>

#include "client/exit_codes.hh"
#include "client/placement.hh"

namespace client {
namespace {

constexpr std::size_t kMaxTargets = 64;

const char* const kPlaceHelp =
    "usage: bench_client place --targets HOST:PORT[,HOST:PORT...] [--target-weight W]\n"
    "Reads keys (or board names) from stdin, one per line, and prints the HOST:PORT of the node\n"
    "that holds each, a line each: nginx's `hash $cache_key consistent` placement "
    "(docs/cluster.md).\n"
    "  --targets LIST      the nodes, written exactly as in nginx's server lines\n"
    "  --target-weight W   the weight= of every node, 1..100 (default 10, as scripts/cluster.sh)\n"
    "Keys are the decoded bytes (the key of /key/%41 is A). nginx hashes the first segment of\n"
    "the decoded path after /key/ or /board/, so a key or board with a '/' is placed by its\n"
    "part before it, here too. Exit: 0, or 1 on a usage error.\n";

bool parse_targets(const std::string& list, std::vector<std::string>& out, std::string& error) {
  std::set<std::string> seen;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = list.find(',', start);
    const std::string t = list.substr(start, comma == std::string::npos ? comma : comma - start);
    const std::size_t colon = t.rfind(':');
    unsigned port = 0;
    const char* digits = t.data() + colon + 1;
    const auto [end, ec] = colon == std::string::npos
                               ? std::from_chars(digits, digits, port)
                               : std::from_chars(digits, t.data() + t.size(), port);
    if (colon == std::string::npos || colon == 0 || ec != std::errc() ||
        end != t.data() + t.size() || port == 0 || port > 65535) {
      error = "--targets: '" + t + "' is not HOST:PORT";
      return false;
    }
    if (!seen.insert(t).second) {
      error = "--targets: " + t + " is given twice";
      return false;
    }
    out.push_back(t);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() > kMaxTargets) {
    error = "--targets: at most " + std::to_string(kMaxTargets) + " nodes";
    return false;
  }
  return true;
}

}  // namespace

int run_place(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
              std::ostream& err) {
  std::vector<std::string> targets;
  unsigned weight = 10;
  std::string error;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << kPlaceHelp;
      return kExitOk;
    }
    if ((a == "--targets" || a == "--target-weight") && i + 1 >= args.size()) {
      err << "bench_client place: " << a << " needs a value (see --help)\n";
      return kExitUsage;
    }
    if (a == "--targets") {
      if (!targets.empty()) {
        err << "bench_client place: --targets given twice\n";
        return kExitUsage;
      }
      if (!parse_targets(args[++i], targets, error)) {
        err << "bench_client place: " << error << "\n";
        return kExitUsage;
      }
    } else if (a == "--target-weight") {
      const std::string& v = args[++i];
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), weight);
      if (ec != std::errc() || end != v.data() + v.size() || weight < 1 ||
          weight > HashRing::kMaxWeight) {
        err << "bench_client place: --target-weight must be 1.." << HashRing::kMaxWeight
            << ", not '" << v << "'\n";
        return kExitUsage;
      }
    } else {
      err << "bench_client place: unknown argument '" << a << "' (see --help)\n";
      return kExitUsage;
    }
  }
  if (targets.empty()) {
    err << "bench_client place: --targets is required (see --help)\n";
    return kExitUsage;
  }
  const HashRing ring(targets, weight);
  std::string line;
  while (std::getline(in, line)) {
    // What nginx hashes: the decoded path segment, i.e. the name up to its first '/'.
    const std::string_view key = std::string_view(line).substr(0, line.find('/'));
    out << targets[ring.node_of(key)] << '\n';
  }
  return kExitOk;
}

}  // namespace client
