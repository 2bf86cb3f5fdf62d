// `bench_client place`: which node of a cluster holds a key. Reads keys (or board names, hashed
// the same way) from stdin, one per line, and prints the HOST:PORT of each one's node, a line
// each, computed by the same ring as --targets (placement.hh), i.e. as nginx's
// `hash $cache_key consistent` places them. For a user asking where a key lives, and for the
// tests that hold bench_client's placement against a real nginx (tests/scripts/test_cluster.py).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace client {

// args: everything after "place". Returns the process's exit code (0, or 1 on a usage error,
// said on err).
int run_place(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
              std::ostream& err);

}  // namespace client
