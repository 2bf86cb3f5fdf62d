// memory_per_item.cc — resident memory per item above the key and value bytes, at 1M items with
// 11-byte keys and 100-byte values, for each evictor (and std::unordered_map for scale).
//
// RSS is read from /proc/self/statm before and after filling a fresh cache. Each measurement runs
// in a fresh process (this program re-executes itself), because a heap that has already grown and
// been freed would hide the growth. maxmem is set high enough that nothing is evicted, except in
// the "NAME-full" rows: there maxmem holds exactly 1M items and 3M distinct keys are set, so the
// cache has been evicting for 2M sets and any history an evictor keeps (S3-FIFO's ghost of
// evicted hashes) is full. Their overhead is the RSS growth above the key+value bytes still held.
//   memory_per_item            all evictors, a table on stdout
//   memory_per_item --json     the same rows as JSON lines
//   memory_per_item NAME       one measurement (none|fifo|lru|clock|s3fifo|sieve|unordered_map, or
//                              clock-full|s3fifo-full), one JSON line
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "cache/cache.hh"

namespace {

constexpr std::size_t kItems = 1'000'000;
constexpr std::size_t kKeyBytes = 11;
constexpr std::size_t kValueBytes = 100;

long resident_bytes() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr || std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) {
    std::fprintf(stderr, "memory_per_item: cannot read /proc/self/statm\n");
    std::exit(1);
  }
  std::fclose(f);
  return pages_resident * sysconf(_SC_PAGESIZE);
}

void key_of(std::size_t i, char (&buf)[kKeyBytes + 1]) {
  std::snprintf(buf, sizeof buf, "k%010zu", i);
}

int measure(const std::string& name) {
  const std::string value(kValueBytes, 'v');
  char key[kKeyBytes + 1];
  long before = 0, after = 0;
  std::size_t stored = 0;
  if (name == "unordered_map") {
    std::unordered_map<std::string, std::string> m;
    before = resident_bytes();
    for (std::size_t i = 0; i < kItems; ++i) {
      key_of(i, key);
      m.emplace(std::string(key, kKeyBytes), value);
    }
    after = resident_bytes();
    stored = m.size();
  } else {
    const bool full = name.size() > 5 && name.ends_with("-full");
    const auto evictor = cache::parse_evictor(full ? name.substr(0, name.size() - 5) : name);
    if (!evictor) {
      std::fprintf(stderr, "memory_per_item: unknown evictor '%s'\n", name.c_str());
      return 2;
    }
    before = resident_bytes();
    cache::Cache c(kItems * (kKeyBytes + kValueBytes) * (full ? 1 : 2),
                   cache::kDefaultMaxLoadFactor, *evictor);
    for (std::size_t i = 0; i < kItems * (full ? 3 : 1); ++i) {
      key_of(i, key);
      c.set(std::string_view(key, kKeyBytes), value);
    }
    after = resident_bytes();
    stored = c.size();
  }
  if (stored != kItems) {
    std::fprintf(stderr, "memory_per_item: stored %zu of %zu items\n", stored, kItems);
    return 1;
  }
  const double overhead =
      (static_cast<double>(after - before) - kItems * (kKeyBytes + kValueBytes)) / kItems;
  std::printf(
      "{\"store\": \"%s\", \"items\": %zu, \"key_bytes\": %zu, \"value_bytes\": %zu, "
      "\"rss_delta_bytes\": %ld, \"overhead_bytes_per_item\": %.1f}\n",
      name.c_str(), kItems, kKeyBytes, kValueBytes, after - before, overhead);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc == 2 && std::strcmp(argv[1], "--json") == 0;
  if (argc == 2 && !json) return measure(argv[1]);
  if (argc > 2) {
    std::fprintf(stderr,
                 "usage: memory_per_item [--json | "
                 "none|fifo|lru|clock|s3fifo|sieve|unordered_map|clock-full|"
                 "s3fifo-full]\n");
    return 2;
  }
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::fprintf(stderr, "memory_per_item: cannot resolve /proc/self/exe\n");
    return 1;
  }
  self[n] = '\0';
  if (!json) std::printf("%-14s %12s %18s\n", "store", "RSS delta MB", "overhead B/item");
  for (const char* name : {"clock", "s3fifo", "sieve", "none", "fifo", "lru", "unordered_map",
                           "clock-full", "s3fifo-full"}) {
    std::string cmd = "'";
    cmd.append(self).append("' ").append(name);
    FILE* p = popen(cmd.c_str(), "r");
    char line[512] = {0};
    const bool got = p != nullptr && std::fgets(line, sizeof line, p) != nullptr;
    if (p == nullptr || pclose(p) != 0 || !got) {
      std::fprintf(stderr, "memory_per_item: measurement of %s failed\n", name);
      return 1;
    }
    if (json) {
      std::fputs(line, stdout);
      continue;
    }
    long delta = 0;
    double overhead = 0;
    const char* d = std::strstr(line, "\"rss_delta_bytes\": ");
    const char* o = std::strstr(line, "\"overhead_bytes_per_item\": ");
    if (d == nullptr || o == nullptr) return 1;
    delta = std::atol(d + 19);
    overhead = std::atof(o + 27);
    std::printf("%-14s %12.1f %18.1f\n", name, delta / 1e6, overhead);
  }
  return 0;
}
