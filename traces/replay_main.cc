// replay_main.cc — trace_replay: the command-line face of replay.hh. Reads one trace (text or
// binary, trace.hh), replays it once per evictor and cache size, and prints the hit ratios as
// TSV or JSON. Also converts a trace to the binary form (dense ids) for other simulators.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "traces/replay.hh"
#include "traces/trace.hh"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;  // bad flags, bad evictor name, unreadable or malformed trace

std::string help_text() {
  std::string known;
  for (cache::Evictor e : traces::known_evictors())
    known += std::string(known.empty() ? "" : ",") + cache::to_string(e);
  return "usage: trace_replay [options] TRACE\n"
         "Replays TRACE through the cache library (cache::Cache, one shard) as a look-aside "
         "client:\n"
         "each request is a GET, and a miss is followed by a SET of the key with a fixed-size "
         "value.\n"
         "The cache holds exactly N objects (8-byte keys, equal values). Prints one hit ratio "
         "per\n"
         "evictor and cache size.\n"
         "\n"
         "TRACE is text (one key per line) or binary (\"CCTRACE1\" then little-endian u64 ids);\n"
         "see traces/README.md.\n"
         "\n"
         "  -e, --evictors LIST     comma-separated evictor names (default: " +
         known +
         ")\n"
         "  -c, --capacity LIST     cache sizes: objects (2000) or percent of the trace's "
         "distinct\n"
         "                          keys (10%); comma-separated (default 10%)\n"
         "      --value-size BYTES  value size of every SET, 0..1048576 (default 100)\n"
         "      --warmup N          replay the first N requests without counting them (default 0)\n"
         "      --format tsv|json   output format (default tsv)\n"
         "      --convert OUT       write TRACE to OUT instead (binary if OUT ends in .bin, else\n"
         "                          text) with dense ids 0..distinct-1, and exit\n"
         "      --list-evictors     print the evictor names the library knows, and exit\n"
         "  -h, --help              this text\n"
         "\n"
         "Exit status: 0 success; 2 bad arguments, unknown evictor, unreadable or malformed "
         "trace.\n";
}

template <typename T>
std::optional<T> parse_uint(std::string_view s) {
  T v{};
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// One entry of --capacity: an object count, or a percentage of the distinct keys.
struct CapacitySpec {
  double value = 0;
  bool percent = false;
  std::size_t objects(std::uint64_t distinct) const {
    if (!percent) return static_cast<std::size_t>(value);
    const double n = std::round(static_cast<double>(distinct) * value / 100.0);
    return n < 1 ? 1 : static_cast<std::size_t>(n);
  }
};

std::optional<std::vector<CapacitySpec>> parse_capacities(std::string_view list) {
  std::vector<CapacitySpec> out;
  while (true) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    CapacitySpec c;
    if (item.ends_with('%')) {
      item.remove_suffix(1);
      c.percent = true;
      double v = 0;
      const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || ec != std::errc{} || p != item.data() + item.size() || !(v > 0) ||
          v > 100)
        return std::nullopt;
      c.value = v;
    } else {
      const auto n = parse_uint<std::uint64_t>(item);
      if (!n || *n == 0) return std::nullopt;
      c.value = static_cast<double>(*n);
    }
    out.push_back(c);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

int usage_error(const std::string& message) {
  std::cerr << "trace_replay: " << message << "\n";
  return kExitUsage;
}

// Dense ids 0..distinct-1 in order of first appearance (text traces already are).
std::vector<std::uint64_t> densify(const std::vector<std::uint64_t>& ids) {
  std::unordered_map<std::uint64_t, std::uint64_t> dense;
  std::vector<std::uint64_t> out;
  out.reserve(ids.size());
  for (std::uint64_t id : ids) out.push_back(dense.try_emplace(id, dense.size()).first->second);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<cache::Evictor> evictors = traces::known_evictors();
  std::vector<CapacitySpec> capacities = {{10.0, true}};
  traces::ReplayOptions options;
  bool json = false;
  std::string convert_to;
  std::string trace_path;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (flag == "-h" || flag == "--help") {
      std::cout << help_text();
      return kExitOk;
    }
    if (flag == "--list-evictors") {
      for (cache::Evictor e : traces::known_evictors()) std::cout << cache::to_string(e) << "\n";
      return kExitOk;
    }
    if (flag == "-e" || flag == "--evictors") {
      const auto v = value();
      if (!v) return usage_error(flag + " needs a list of evictor names");
      try {
        evictors = traces::parse_evictor_list(*v);
      } catch (const std::invalid_argument& e) {
        return usage_error(e.what());
      }
    } else if (flag == "-c" || flag == "--capacity") {
      const auto v = value();
      if (!v) return usage_error(flag + " needs a list of cache sizes");
      const auto list = parse_capacities(*v);
      if (!list)
        return usage_error("invalid value '" + *v + "' for " + flag +
                           " (expected object counts or percentages, e.g. 2000 or 1%,10%,30%)");
      capacities = *list;
    } else if (flag == "--value-size") {
      const auto v = value();
      const auto n = v ? parse_uint<std::uint32_t>(*v) : std::nullopt;
      if (!n || *n > (1u << 20)) return usage_error("--value-size needs bytes 0..1048576");
      options.value_bytes = *n;
    } else if (flag == "--warmup") {
      const auto v = value();
      const auto n = v ? parse_uint<std::size_t>(*v) : std::nullopt;
      if (!n) return usage_error("--warmup needs a request count");
      options.warmup = *n;
    } else if (flag == "--format") {
      const auto v = value();
      if (!v || (*v != "tsv" && *v != "json")) return usage_error("--format needs tsv or json");
      json = *v == "json";
    } else if (flag == "--convert") {
      const auto v = value();
      if (!v || v->empty()) return usage_error("--convert needs an output file name");
      convert_to = *v;
    } else if (!flag.empty() && flag[0] == '-' && flag != "-") {
      return usage_error("unknown option '" + flag + "' (see --help)");
    } else if (trace_path.empty()) {
      trace_path = flag;
    } else {
      return usage_error("one trace at a time ('" + trace_path + "' and '" + flag + "')");
    }
  }
  if (trace_path.empty()) return usage_error("no trace file given (see --help)");
  if (evictors.empty()) return usage_error("no evictor to replay");

  traces::Trace trace;
  try {
    trace = traces::read_trace(trace_path);
    if (!convert_to.empty()) {
      traces::write_trace(convert_to, densify(trace.ids));
      return kExitOk;
    }
  } catch (const traces::TraceError& e) {
    std::cerr << "trace_replay: " << e.what() << "\n";
    return kExitUsage;
  }
  if (options.warmup >= trace.ids.size())
    return usage_error("--warmup " + std::to_string(options.warmup) + " leaves none of the " +
                       std::to_string(trace.ids.size()) + " requests to count");

  std::vector<traces::ReplayResult> results;
  for (const CapacitySpec& c : capacities) {
    options.capacity = c.objects(trace.distinct);
    for (cache::Evictor e : evictors) results.push_back(traces::replay(trace.ids, e, options));
  }

  if (json) {
    std::cout << "{\"trace\": " << json_string(trace_path) << ", \"requests\": " << trace.ids.size()
              << ", \"distinct\": " << trace.distinct
              << ", \"value_bytes\": " << options.value_bytes << ", \"warmup\": " << options.warmup
              << ", \"results\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.6f", r.hit_ratio());
      std::cout << (i ? ", " : "") << "{\"evictor\": " << json_string(r.evictor)
                << ", \"capacity\": " << r.capacity << ", \"requests\": " << r.requests
                << ", \"hits\": " << r.hits << ", \"hit_ratio\": " << ratio
                << ", \"evictions\": " << r.evictions << "}";
    }
    std::cout << "]}\n";
  } else {
    std::cout << "# trace " << trace_path << "  requests " << trace.ids.size() << "  distinct "
              << trace.distinct << "  value_bytes " << options.value_bytes << "  warmup "
              << options.warmup << "\n";
    std::cout << "evictor\tcapacity\trequests\thits\thit_ratio\n";
    for (const auto& r : results) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.6f", r.hit_ratio());
      std::cout << r.evictor << "\t" << r.capacity << "\t" << r.requests << "\t" << r.hits << "\t"
                << ratio << "\n";
    }
  }
  return kExitOk;
}
