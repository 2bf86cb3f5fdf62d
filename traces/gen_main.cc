// gen_main.cc — trace_gen: writes a synthetic Zipf trace (generate.hh), optionally with a
// one-pass scan, as a text or binary trace file (trace.hh).
#include <charconv>
#include <cmath>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/generate.hh"
#include "traces/trace.hh"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr std::uint64_t kMaxKeys = 100'000'000;  // the CDF table is 8 bytes per key

constexpr const char* kHelp =
    "usage: trace_gen --keys K --alpha A --requests R -o FILE [options]\n"
    "Writes a trace of R requests whose object ids 0..K-1 follow Zipf(A) (id 0 the most\n"
    "popular). FILE ending in .bin gets the binary form, anything else text (\"k<id>\" per line);\n"
    "see traces/README.md.\n"
    "\n"
    "      --keys K          distinct Zipf keys, 1..100000000\n"
    "      --alpha A         Zipf exponent, >= 0 (0.99 is the classic web-cache value)\n"
    "      --requests R      Zipf requests\n"
    "      --seed S          random seed; the same flags give the same trace (default 1)\n"
    "      --scan N          mix in a one-pass scan: N never-repeated ids K, K+1, ..., one after\n"
    "                        each Zipf request from --scan-start on (default 0 = none)\n"
    "      --scan-start I    Zipf request after which the scan begins (default 0)\n"
    "  -o, --output FILE     where to write the trace\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 success; 2 bad arguments or the file could not be written.\n";

std::optional<std::uint64_t> parse_u64(const std::string& s) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

int usage_error(const std::string& message) {
  std::cerr << "trace_gen: " << message << "\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  traces::ZipfSpec spec;
  std::string out;
  bool have_alpha = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "-h" || flag == "--help") {
      std::cout << kHelp;
      return kExitOk;
    }
    if (i + 1 >= args.size()) return usage_error(flag + " needs a value (see --help)");
    const std::string& v = args[++i];
    auto count = [&](std::uint64_t& dest, std::uint64_t min, std::uint64_t max) {
      const auto n = parse_u64(v);
      if (!n || *n < min || *n > max) {
        usage_error("invalid value '" + v + "' for " + flag + " (expected " + std::to_string(min) +
                    ".." + std::to_string(max) + ")");
        return false;
      }
      dest = *n;
      return true;
    };
    if (flag == "--keys") {
      if (!count(spec.keys, 1, kMaxKeys)) return kExitUsage;
    } else if (flag == "--requests") {
      if (!count(spec.requests, 1, UINT64_MAX / 2)) return kExitUsage;
    } else if (flag == "--seed") {
      if (!count(spec.seed, 0, UINT64_MAX)) return kExitUsage;
    } else if (flag == "--scan") {
      if (!count(spec.scan_keys, 0, UINT64_MAX / 2)) return kExitUsage;
    } else if (flag == "--scan-start") {
      if (!count(spec.scan_start, 0, UINT64_MAX)) return kExitUsage;
    } else if (flag == "--alpha") {
      double a = -1;
      const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), a);
      if (ec != std::errc{} || p != v.data() + v.size() || !std::isfinite(a) || a < 0 || a > 10)
        return usage_error("invalid value '" + v + "' for --alpha (expected 0..10)");
      spec.alpha = a;
      have_alpha = true;
    } else if (flag == "-o" || flag == "--output") {
      out = v;
    } else {
      return usage_error("unknown option '" + flag + "' (see --help)");
    }
  }
  if (spec.keys == 0 || spec.requests == 0 || !have_alpha || out.empty())
    return usage_error("--keys, --alpha, --requests and -o are required (see --help)");
  try {
    traces::write_trace(out, traces::generate_zipf(spec));
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  return kExitOk;
}
