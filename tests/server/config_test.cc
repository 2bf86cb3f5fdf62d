// config_test.cc — unit tests of flag parsing (flags.hh), size and duration flags, validation and
// the start-up line (config.hh).
#include "server/config.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "server/flags.hh"
#include "server/server_context.hh"
#include "tier/options.hh"

namespace server {
namespace {

ParseResult parse(std::initializer_list<std::string_view> args) {
  return parse_flags(std::vector<std::string_view>(args));
}

Config parse_ok(std::initializer_list<std::string_view> args) {
  ParseResult r = parse(args);
  if (auto* e = std::get_if<FlagError>(&r)) ADD_FAILURE() << e->message;
  EXPECT_TRUE(std::holds_alternative<Config>(r));
  return std::holds_alternative<Config>(r) ? std::get<Config>(r) : Config{};
}

std::string parse_error(std::initializer_list<std::string_view> args) {
  ParseResult r = parse(args);
  EXPECT_TRUE(std::holds_alternative<FlagError>(r));
  return std::holds_alternative<FlagError>(r) ? std::get<FlagError>(r).message : "";
}

TEST(ParseSize, Suffixes) {
  std::size_t v = 0;
  EXPECT_TRUE(parse_size("123", v));
  EXPECT_EQ(v, 123u);
  EXPECT_TRUE(parse_size("4K", v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(parse_size("64M", v));
  EXPECT_EQ(v, 64u << 20);
  EXPECT_TRUE(parse_size("2g", v));
  EXPECT_EQ(v, 2ull << 30);
  EXPECT_TRUE(parse_size("1MB", v));
  EXPECT_EQ(v, 1u << 20);
  EXPECT_TRUE(parse_size("100B", v));  // docs/api.md: an optional trailing B
  EXPECT_EQ(v, 100u);
}

TEST(ParseSize, Garbage) {
  std::size_t v = 0;
  for (const char* s : {"", "K", "B", "-1", "12X", "1.5M", "1KK", "1BB", " 1",
                        "99999999999999999999", "17179869184G"}) {
    EXPECT_FALSE(parse_size(s, v)) << s;
  }
}

// The timeouts keep bare numbers as seconds and take the shared duration syntax
// (common/duration.hh) too.
TEST(DurationFlags, TimeoutsTakeBareSecondsAndUnits) {
  struct Case {
    std::string_view text;
    std::int64_t ms;
  };
  for (const Case c : {Case{"10", 10'000}, Case{"0.25", 250}, Case{"0.5", 500}, Case{"1s", 1000},
                       Case{"0.5s", 500}, Case{"250ms", 250}, Case{"1.5ms", 2}, Case{"0.0004", 0},
                       Case{"31536000", 31'536'000'000}}) {
    for (const std::string_view flag : {"--header-timeout", "--idle-timeout"}) {
      const Config c2 = parse_ok({flag, c.text});
      const auto got = flag == "--header-timeout" ? c2.header_timeout : c2.idle_timeout;
      EXPECT_EQ(got.count(), c.ms) << flag << " " << c.text;
    }
  }
}

TEST(DurationFlags, TimeoutsRejectGarbage) {
  for (const std::string_view text : {"-1", "", "nan", "inf", "1e3", "1m", "10 s", "s", "1.2.3",
                                      "31536001", "9999999999999999999999"}) {
    for (const std::string_view flag : {"--header-timeout", "--idle-timeout"}) {
      const std::string e = parse_error({flag, text});
      EXPECT_NE(e.find(flag), std::string::npos) << e;
      EXPECT_NE(e.find("bare number is seconds"), std::string::npos) << e;
    }
  }
  // Rounded to 0 ms: the flag parses, validation refuses it.
  Config c = parse_ok({"--header-timeout", "0.0004s"});
  EXPECT_NE(validate(c).find("--header-timeout"), std::string::npos);
}

TEST(DurationFlags, FlushIntervalNeedsAUnit) {
  EXPECT_EQ(parse_ok({}).flush_interval, std::chrono::milliseconds(100));
  EXPECT_EQ(parse_ok({"--flush-interval", "250ms"}).flush_interval.count(), 250);
  EXPECT_EQ(parse_ok({"--flush-interval=2s"}).flush_interval.count(), 2000);
  EXPECT_EQ(parse_ok({"--flush-interval", "0.5s"}).flush_interval.count(), 500);
  for (const std::string_view bare : {"100", "0.5", "0"}) {
    const std::string e = parse_error({"--flush-interval", bare});
    EXPECT_NE(e.find("needs a unit"), std::string::npos) << e;
  }
  for (const std::string_view bad : {"-1s", "abc", "1m", "", "nans", "1e2ms", "400days"}) {
    const std::string e = parse_error({"--flush-interval", bad});
    EXPECT_NE(e.find("--flush-interval"), std::string::npos) << e;
    EXPECT_NE(e.find("with a unit"), std::string::npos) << e;
  }
  EXPECT_NE(validate(parse_ok({"--flush-interval", "0ms"})).find("--flush-interval"),
            std::string::npos);
  EXPECT_NE(validate(parse_ok({"--flush-interval", "0.1ms"})).find("--flush-interval"),
            std::string::npos);
}

TEST(ParseFlags, Defaults) {
  const Config c = parse_ok({});
  EXPECT_EQ(c.maxmem, 64u << 20);
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 8080);
  EXPECT_EQ(c.threads, 1u);
  EXPECT_EQ(c.evictor, cache::kDefaultEvictor);
  EXPECT_EQ(c.max_value, 1u << 20);
  EXPECT_EQ(c.header_timeout, kHeaderTimeout);
  EXPECT_EQ(c.idle_timeout, kIdleTimeout);
  EXPECT_EQ(c.lock, cache::LockScheme::shared_reads);
  EXPECT_EQ(c.value_path, ValuePathKind::cstring);
  EXPECT_EQ(c.dispatch, DispatchKind::ordered);
  EXPECT_EQ(c.write_batching, WriteBatching::on);
  EXPECT_STREQ(variant_name(c), "optimized");
  EXPECT_EQ(c.store, "none");
  EXPECT_EQ(c.write_mode, WriteMode::through);
  EXPECT_EQ(c.flush_interval, std::chrono::milliseconds(100));
  EXPECT_EQ(c.max_dirty, 64u << 20);
  EXPECT_EQ(c.store_faults, "");
  EXPECT_EQ(validate(c), "");
}

TEST(ParseFlags, VariantSetsAllFour) {
  const Config b = parse_ok({"--variant", "baseline"});
  EXPECT_EQ(b.lock, cache::LockScheme::exclusive_all);
  EXPECT_EQ(b.value_path, ValuePathKind::string);
  EXPECT_EQ(b.dispatch, DispatchKind::naive);
  EXPECT_EQ(b.write_batching, WriteBatching::off);
  EXPECT_STREQ(variant_name(b), "baseline");
  EXPECT_EQ(cache_options(b).lock, cache::LockScheme::exclusive_all);
  const Config o = parse_ok({"--variant=baseline", "--variant=optimized"});
  EXPECT_STREQ(variant_name(o), "optimized");
}

TEST(ParseFlags, IndividualSwitchesWinOverVariantInAnyOrder) {
  for (const Config& c : {parse_ok({"--lock", "shared", "--variant", "baseline"}),
                          parse_ok({"--variant", "baseline", "--lock", "shared"})}) {
    EXPECT_EQ(c.lock, cache::LockScheme::shared_reads);
    EXPECT_EQ(c.value_path, ValuePathKind::string);
    EXPECT_EQ(c.dispatch, DispatchKind::naive);
    EXPECT_STREQ(variant_name(c), "custom");
  }
  const Config c = parse_ok({"--value-path=string", "--dispatch", "naive", "--lock=exclusive",
                             "--write-batching", "off", "--variant", "optimized"});
  EXPECT_STREQ(variant_name(c), "baseline");
  const Config w = parse_ok({"--variant", "optimized", "--write-batching=off"});
  EXPECT_EQ(w.write_batching, WriteBatching::off);
  EXPECT_STREQ(variant_name(w), "custom");
  const Config d = parse_ok({"--dispatch", "naive"});
  EXPECT_EQ(d.dispatch, DispatchKind::naive);
  EXPECT_STREQ(variant_name(d), "custom");
  EXPECT_NE(describe(c).find("variant=baseline lock=exclusive value_path=string dispatch=naive "
                             "write_batching=off"),
            std::string::npos)
      << describe(c);
}

TEST(ParseFlags, ShortAndLongForms) {
  const Config s = parse_ok({"-m", "1M", "-s", "::1", "-p", "0", "-t", "4", "-e", "lru"});
  EXPECT_EQ(s.maxmem, 1u << 20);
  EXPECT_EQ(s.host, "::1");
  EXPECT_EQ(s.port, 0);
  EXPECT_EQ(s.threads, 4u);
  EXPECT_EQ(s.evictor, cache::Evictor::lru);
  const Config l =
      parse_ok({"--maxmem", "2K", "--host", "0.0.0.0", "--port=9", "--threads=2", "--evictor",
                "fifo", "--max-value", "10K", "--header-timeout", "0.5", "--idle-timeout=3",
                "--io-model", "shared", "--max-connections", "500"});
  EXPECT_EQ(l.maxmem, 2048u);
  EXPECT_EQ(l.port, 9);
  EXPECT_EQ(l.threads, 2u);
  EXPECT_EQ(l.evictor, cache::Evictor::fifo);
  EXPECT_EQ(l.max_value, 10240u);
  EXPECT_EQ(l.header_timeout.count(), 500);
  EXPECT_EQ(l.idle_timeout.count(), 3000);
  EXPECT_EQ(l.io_model, IoModel::shared);
  EXPECT_EQ(l.max_connections, 500u);
  EXPECT_EQ(parse_ok({"--max-inflight", "64M"}).max_inflight, 64u << 20);
  EXPECT_EQ(s.max_inflight, kDefaultMaxInflightBytes);
  EXPECT_NE(parse_error({"--max-inflight", "lots"}).find("--max-inflight"), std::string::npos);
  EXPECT_NE(validate(parse_ok({"--max-inflight", "512K"})).find("smaller than --max-value"),
            std::string::npos);
  EXPECT_EQ(s.max_connections, kDefaultMaxConnections);
  EXPECT_NE(describe(l).find(" max_connections=500"), std::string::npos) << describe(l);
  EXPECT_NE(parse_error({"--max-connections", "0"}).find("--max-connections"), std::string::npos);
  EXPECT_NE(parse_error({"--max-connections", "-5"}).find("--max-connections"), std::string::npos);
}

TEST(ParseFlags, Help) {
  EXPECT_TRUE(std::holds_alternative<HelpRequested>(parse({"--help"})));
  EXPECT_TRUE(std::holds_alternative<HelpRequested>(parse({"-p", "1", "-h"})));
  const std::string usage = usage_text();
  for (const char* flag : {"--maxmem",
                           "--host",
                           "--port",
                           "--threads",
                           "--evictor",
                           "--max-value",
                           "--max-connections",
                           "--max-inflight",
                           "--header-timeout",
                           "--idle-timeout",
                           "--variant",
                           "--lock",
                           "--value-path",
                           "--dispatch",
                           "--write-batching",
                           "-m,",
                           "-s,",
                           "-p,",
                           "-t,",
                           "-e,",
                           "--store URI",
                           "--write-mode MODE",
                           "--flush-interval DURATION",
                           "--max-dirty BYTES",
                           "--store-faults SPEC",
                           "rocksdb:PATH",
                           "through",
                           "behind",
                           "never dropped",
                           "Durable store"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

// Each group heading ("Cache and listener:", ...) stands once in --help, every flag of the group
// under it: a heading is a line that starts in column 0 and ends with ':'.
TEST(ParseFlags, HelpShowsEachGroupOnce) {
  std::istringstream usage(usage_text());
  std::vector<std::string> headings;
  for (std::string line; std::getline(usage, line);) {
    if (line.empty() || line.front() == ' ' || line.back() != ':') continue;
    EXPECT_EQ(std::count(headings.begin(), headings.end(), line), 0) << "repeated: " << line;
    headings.push_back(line);
  }
  EXPECT_GE(headings.size(), 5u);
  EXPECT_NE(std::find(headings.begin(), headings.end(), "Cache and listener:"), headings.end());
}

TEST(ParseFlags, Errors) {
  EXPECT_NE(parse_error({"--bogus"}).find("unknown flag"), std::string::npos);
  EXPECT_NE(parse_error({"-p"}).find("needs a value"), std::string::npos);
  EXPECT_NE(parse_error({"-p", "65536"}).find("--port"), std::string::npos);
  EXPECT_NE(parse_error({"-p", "-1"}).find("--port"), std::string::npos);
  EXPECT_NE(parse_error({"-m", "lots"}).find("--maxmem"), std::string::npos);
  EXPECT_NE(parse_error({"-e", "random"}).find("--evictor"), std::string::npos);
  EXPECT_NE(parse_error({"-t", "x"}).find("--threads"), std::string::npos);
  EXPECT_NE(parse_error({"--io-model", "x"}).find("--io-model"), std::string::npos);
  EXPECT_NE(parse_error({"--variant", "fast"}).find("--variant"), std::string::npos);
  EXPECT_NE(parse_error({"--lock", "none"}).find("--lock"), std::string::npos);
  EXPECT_NE(parse_error({"--value-path", "x"}).find("--value-path"), std::string::npos);
  EXPECT_NE(parse_error({"--dispatch", ""}).find("--dispatch"), std::string::npos);
  EXPECT_NE(parse_error({"--write-batching", "yes"}).find("--write-batching"), std::string::npos);
  EXPECT_NE(parse_error({"--variant", "baseline", "--dispatch"}).find("needs a value"),
            std::string::npos);
}

TEST(Validate, Ranges) {
  Config c;
  c.threads = 0;
  EXPECT_NE(validate(c), "");
  c.threads = kMaxThreads + 1;
  EXPECT_NE(validate(c), "");
  c = Config{};
  c.maxmem = 0;
  EXPECT_NE(validate(c), "");
  c = Config{};
  c.max_value = 0;
  EXPECT_NE(validate(c), "");
  c = Config{};
  c.header_timeout = std::chrono::milliseconds(0);
  EXPECT_NE(validate(c), "");
}

// --max-value above min(--maxmem, 4 GiB - 1) is refused at start, with the reason.
TEST(Validate, MaxValueBounds) {
  EXPECT_EQ(validate(parse_ok({"-m", "1M", "--max-value", "1M"})), "");  // equal is fine
  // The default --max-value shrinks to a smaller --maxmem; an explicit one does not.
  EXPECT_EQ(parse_ok({"-m", "1K"}).max_value, 1024u);
  EXPECT_EQ(validate(parse_ok({"-m", "1K"})), "");
  EXPECT_EQ(parse_ok({"-m", "4M"}).max_value, 1u << 20);
  EXPECT_EQ(parse_ok({"-m", "1K", "--max-value=2K"}).max_value, 2048u);
  std::string e = validate(parse_ok({"-m", "1M", "--max-value", "2M"}));
  EXPECT_NE(e.find("--max-value 2097152 is larger than --maxmem 1048576"), std::string::npos) << e;
  e = validate(parse_ok({"-m", "1K", "--max-value", "1025"}));
  EXPECT_NE(e.find("larger than --maxmem"), std::string::npos) << e;
  EXPECT_EQ(validate(parse_ok({"-m", "8G", "--max-value", "4294967295", "--max-inflight", "4G"})),
            "");
  e = validate(parse_ok({"-m", "8G", "--max-value", "4G"}));
  EXPECT_NE(e.find("at most 4294967295 bytes"), std::string::npos) << e;
  // The largest sizes the parser takes do not wrap any sum the validation makes.
  e = validate(parse_ok({"-m", "18446744073709551615", "--max-value", "18446744073709551615"}));
  EXPECT_NE(e.find("too large"), std::string::npos) << e;
}

TEST(StoreFlags, Parse) {
  const Config c = parse_ok({"--store", "rocksdb:/var/lib/cache db", "--write-mode", "behind",
                             "--flush-interval", "50ms", "--max-dirty", "8M", "--store-faults",
                             "read-delay=50ms,sync-error-after=10"});
  EXPECT_EQ(c.store, "rocksdb:/var/lib/cache db");
  EXPECT_EQ(c.write_mode, WriteMode::behind);
  EXPECT_EQ(c.flush_interval.count(), 50);
  EXPECT_EQ(c.max_dirty, 8u << 20);
  EXPECT_EQ(c.store_faults, "read-delay=50ms,sync-error-after=10");
  EXPECT_EQ(validate(c), "");
  EXPECT_EQ(parse_ok({"--store=none", "--write-mode=through"}).write_mode, WriteMode::through);
  EXPECT_STREQ(to_string(WriteMode::through), "through");
  EXPECT_STREQ(to_string(WriteMode::behind), "behind");
  const auto uri = parse_store_uri("rocksdb:rel/dir");
  ASSERT_TRUE(uri.has_value());
  EXPECT_EQ(uri->scheme, "rocksdb");
  EXPECT_EQ(uri->path, "rel/dir");
  EXPECT_EQ(parse_store_uri("none")->scheme, "none");
}

TEST(StoreFlags, Errors) {
  const std::string want =
      "' (want none, rocksdb:PATH or postgres:CONNINFO, with a non-empty "
      "PATH or CONNINFO)";
  for (const std::string_view bad : {"rocksdb:", "rocksdb", "postgres:", "", "None"}) {
    EXPECT_EQ(parse_error({"--store", bad}), "unknown --store '" + std::string(bad) + want);
    EXPECT_FALSE(parse_store_uri(bad).has_value()) << bad;
  }
  // Only the scheme is echoed: what follows it may be a conninfo with a password.
  EXPECT_EQ(parse_error({"--store", "postgresql:password=secret"}),
            "unknown --store 'postgresql:..." + want);
  EXPECT_EQ(parse_error({"--store", "file:/x"}), "unknown --store 'file:..." + want);
  EXPECT_NE(parse_error({"--write-mode", "around"}).find("--write-mode"), std::string::npos);
  EXPECT_NE(parse_error({"--max-dirty", "lots"}).find("--max-dirty"), std::string::npos);
  EXPECT_NE(parse_error({"--store-faults"}).find("needs a value"), std::string::npos);
  // A Config built in code gets the same --store message from validate().
  Config c;
  c.store = "rocksdb:";
  EXPECT_EQ(validate(c), "unknown --store 'rocksdb:" + want);
}

TEST(StoreFlags, Postgres) {
  const Config c = parse_ok({"--store", "postgres:host=127.0.0.1 port=5432 password=secret",
                             "--store-connections", "8", "--store-table", "cache_kv",
                             "--store-timeout", "500ms"});
  const auto uri = parse_store_uri(c.store);
  ASSERT_TRUE(uri.has_value());
  EXPECT_EQ(uri->scheme, "postgres");
  EXPECT_EQ(uri->path, "host=127.0.0.1 port=5432 password=secret");
  EXPECT_EQ(c.store_connections, 8);
  EXPECT_EQ(c.store_table, "cache_kv");
  EXPECT_EQ(c.store_timeout.count(), 500);
  EXPECT_EQ(validate(c), "");
  EXPECT_EQ(parse_store_uri("postgres:postgresql://u@h/db")->path, "postgresql://u@h/db");
  // The config line names the pool and the table, never the conninfo.
  const std::string line = describe(c);
  EXPECT_NE(line.find(" store=postgres "), std::string::npos) << line;
  EXPECT_NE(line.find(" store_timeout_ms=500 store_connections=8 store_table=cache_kv"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("secret"), std::string::npos) << line;
  // Defaults.
  const Config d = parse_ok({});
  EXPECT_EQ(d.store_connections, 4);
  EXPECT_EQ(d.store_table, "kv");
  EXPECT_EQ(d.store_timeout.count(), 2000);
}

TEST(StoreFlags, PostgresErrors) {
  for (const std::string_view bad : {"0", "1", "65", "four", "-2", ""}) {
    EXPECT_NE(parse_error({"--store-connections", bad}).find("invalid --store-connections"),
              std::string::npos)
        << bad;
  }
  for (const std::string_view bad : {"0", "0ms", "2", "soon", "-1s"}) {
    EXPECT_NE(parse_error({"--store-timeout", bad}).find("invalid --store-timeout"),
              std::string::npos)
        << bad;
  }
  EXPECT_NE(parse_error({"--store-table", ""}).find("invalid --store-table"), std::string::npos);
  EXPECT_NE(parse_error({"--store-table", std::string(64, 't')}).find("invalid --store-table"),
            std::string::npos);
  EXPECT_EQ(parse_ok({"--store", "postgres:x", "--store-table", std::string(63, 't')}).store_table,
            std::string(63, 't'));
  // Postgres-only flags with another store: an error, not silently ignored.
  const std::string postgres_only =
      "--store-connections, --store-table and --store-board-table need --store postgres:CONNINFO";
  for (const std::string_view store : {"none", "rocksdb:/d"}) {
    EXPECT_EQ(validate(parse_ok({"--store", store, "--store-connections", "8"})), postgres_only);
    EXPECT_EQ(validate(parse_ok({"--store", store, "--store-table", "t"})), postgres_only);
    EXPECT_EQ(validate(parse_ok({"--store", store, "--store-board-table", "lb"})), postgres_only);
  }
  EXPECT_EQ(parse_ok({}).store_board_table, "leaderboard");
  EXPECT_EQ(parse_ok({"--store", "postgres:x", "--store-board-table", "lb"}).store_board_table,
            "lb");
  EXPECT_NE(parse_error({"--store-board-table", ""}).find("invalid --store-board-table"),
            std::string::npos);
  EXPECT_NE(parse_error({"--store-board-table", std::string(64, 'b')})
                .find("invalid --store-board-table"),
            std::string::npos);
  EXPECT_EQ(validate(parse_ok(
                {"--store", "postgres:x", "--store-table", "same", "--store-board-table", "same"})),
            "--store-board-table and --store-table must name different tables");
  const std::string line =
      describe(parse_ok({"--store", "postgres:x", "--store-board-table", "lb"}));
  EXPECT_NE(line.find(" store_table=kv store_board_table=lb "), std::string::npos) << line;
}

TEST(BoardFlags, BoardSourceNeedsPostgresAndWriteThrough) {
  EXPECT_EQ(parse_ok({}).board_source, BoardSource::memory);
  EXPECT_EQ(parse_ok({"--board-source", "store"}).board_source, BoardSource::store);
  EXPECT_EQ(parse_ok({"--board-source=memory"}).board_source, BoardSource::memory);
  EXPECT_EQ(parse_error({"--board-source", "disk"}),
            "unknown --board-source 'disk' (want memory or store)");
  // One PostgreSQL row holds at most store::kPostgresMaxValue (512 MiB) of value.
  const std::string too_big =
      validate(parse_ok({"--maxmem", "2G", "--max-value", "513M", "--max-inflight", "2G",
                         "--max-dirty", "2G", "--store", "postgres:x"}));
  EXPECT_NE(too_big.find("too large for --store postgres"), std::string::npos) << too_big;
  EXPECT_EQ(validate(parse_ok({"--maxmem", "2G", "--max-value", "512M", "--max-inflight", "2G",
                               "--max-dirty", "2G", "--store", "postgres:x"})),
            "");
  EXPECT_EQ(validate(parse_ok({"--maxmem", "2G", "--max-value", "513M", "--max-inflight", "2G",
                               "--max-dirty", "2G", "--store", "rocksdb:/d"})),
            "");
  for (const std::string_view store : {"none", "rocksdb:/d"}) {
    const std::string e = validate(parse_ok({"--store", store, "--board-source", "store"}));
    EXPECT_EQ(e, "--board-source store needs --store postgres:CONNINFO (its reads are SQL)");
  }
  EXPECT_NE(validate(parse_ok({"--store", "postgres:x", "--board-source", "store", "--write-mode",
                               "behind"}))
                .find("--board-source store needs --write-mode through"),
            std::string::npos);
  EXPECT_EQ(validate(parse_ok({"--store", "postgres:x", "--board-source", "store"})), "");
  EXPECT_EQ(validate(parse_ok({"--store", "rocksdb:/d", "--board-source", "memory"})), "");
  EXPECT_TRUE(describe(parse_ok({"--store", "postgres:x", "--board-source", "store"}))
                  .ends_with(" board_source=store"));
  EXPECT_NE(usage_text().find("--board-source SOURCE"), std::string::npos);
}

TEST(StoreFlags, Validation) {
  // The largest write (max_value + a 250-byte key) must fit in the dirty bound.
  const Config small = parse_ok(
      {"--store", "rocksdb:/d", "--max-value", "1M", "--max-dirty", "1048823"});  // 1M + 249
  const std::string e = validate(small);
  EXPECT_NE(e.find("--max-dirty"), std::string::npos) << e;
  EXPECT_NE(e.find("--max-value + 250"), std::string::npos) << e;
  EXPECT_NE(e.find("1048826"), std::string::npos) << e;
  EXPECT_NE(e.find("largest write always fits"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_EQ(validate(parse_ok({"--store", "rocksdb:/d", "--max-dirty", "1048826"})), "");
  // Without a store the bound is unused, so a large --max-value still starts as before.
  EXPECT_EQ(validate(parse_ok({"--max-value", "100M", "-m", "1G"})), "");
  EXPECT_NE(validate(parse_ok({"--store", "rocksdb:/d", "--max-value", "100M", "-m", "1G"})), "");
  // Fault injection needs a store.
  const std::string f = validate(parse_ok({"--store-faults", "read-delay=5ms"}));
  EXPECT_NE(f.find("--store-faults"), std::string::npos) << f;
  EXPECT_EQ(validate(parse_ok({"--store", "rocksdb:/d", "--store-faults", "read-delay=5ms"})), "");
}

TEST(Describe, NamesTheStoreSettings) {
  EXPECT_NE(describe(Config{}).find(
                " store=none write_mode=through flush_interval_ms=100 max_dirty=67108864"),
            std::string::npos)
      << describe(Config{});
  const Config c = parse_ok({"--store", "rocksdb:/secret/path", "--write-mode", "behind",
                             "--flush-interval", "1.5s", "--max-dirty", "2M"});
  const std::string line = describe(c);
  EXPECT_NE(line.find(" store=rocksdb write_mode=behind flush_interval_ms=1500 max_dirty=2097152"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("/secret/path"), std::string::npos) << line;  // the scheme, not the path
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(BoardFlags, MaxmemParsesLikeMaxmemAndHasAFloor) {
  EXPECT_EQ(parse_ok({}).board_maxmem, 64u << 20);
  EXPECT_EQ(parse_ok({}).board_maxmem, kDefaultBoardMaxmemBytes);
  EXPECT_EQ(parse_ok({"--board-maxmem", "2K"}).board_maxmem, 2048u);
  EXPECT_EQ(parse_ok({"--board-maxmem=3MB"}).board_maxmem, 3u << 20);
  EXPECT_EQ(parse_ok({"--board-maxmem", "1g"}).board_maxmem, 1u << 30);
  EXPECT_EQ(validate(parse_ok({"--board-maxmem", "2048"})), "");
  for (const std::string_view bad : {"lots", "", "1X", "-1", "1KK"}) {
    EXPECT_NE(parse_error({"--board-maxmem", bad}).find("invalid --board-maxmem"),
              std::string::npos)
        << bad;
  }
  for (const std::string_view small : {"0", "1K", "2047"}) {
    const std::string e = validate(parse_ok({"--board-maxmem", small}));
    EXPECT_NE(e.find("--board-maxmem"), std::string::npos) << small << ": " << e;
    EXPECT_NE(e.find("at least 2048 bytes"), std::string::npos) << e;
  }
  EXPECT_TRUE(describe(Config{}).ends_with(
      " max_inflight=268435456 board_maxmem=67108864 board_top_cache=on board_source=memory"))
      << describe(Config{});
  EXPECT_NE(describe(parse_ok({"--board-maxmem", "64K"})).find(" board_maxmem=65536"),
            std::string::npos);
  const std::string usage = usage_text();
  EXPECT_NE(usage.find("--board-maxmem BYTES"), std::string::npos) << usage;
  EXPECT_NE(usage.find("Leaderboards"), std::string::npos) << usage;
}

TEST(BoardFlags, TopCacheIsOnOrOff) {
  EXPECT_TRUE(parse_ok({}).board_top_cache);
  EXPECT_FALSE(parse_ok({"--board-top-cache", "off"}).board_top_cache);
  EXPECT_TRUE(parse_ok({"--board-top-cache=on"}).board_top_cache);
  for (const std::string_view bad : {"yes", "", "ON", "0"}) {
    EXPECT_NE(parse_error({"--board-top-cache", bad}).find("unknown --board-top-cache"),
              std::string::npos)
        << bad;
  }
  EXPECT_NE(describe(parse_ok({"--board-top-cache", "off"})).find(" board_top_cache=off"),
            std::string::npos);
  EXPECT_NE(usage_text().find("--board-top-cache on|off"), std::string::npos);
}

TEST(ShardCount, EveryShardHoldsTheLargestValue) {
  Config c;
  EXPECT_EQ(shard_count(c), 16u);  // 64M / 16 = 4M >= 1M + 250
  c.maxmem = 3u << 20;
  EXPECT_EQ(shard_count(c), 2u);
  c.maxmem = 1024;
  EXPECT_EQ(shard_count(c), 1u);
  c.maxmem = 1;
  EXPECT_EQ(shard_count(c), 1u);
}

// --- the admin route: --admin-token-file, --allow-reset (docs/server.md, "Security model") ----

TEST(AdminFlags, ParseAndGuard) {
  const Config c = parse_ok({"--admin-token-file", "/run/token"});
  EXPECT_EQ(c.admin_token_file, "/run/token");
  EXPECT_TRUE(c.admin_token.empty());  // read at start-up, not while parsing
  EXPECT_EQ(reset_guard(c), ResetGuard::token);
  EXPECT_EQ(parse_error({"--admin-token-file", ""}).find("--admin-token-file must not be empty"),
            0u);
  EXPECT_EQ(parse_error({"--allow-reset=on"}), "flag --allow-reset takes no value");
  EXPECT_TRUE(parse_ok({"--allow-reset", "-t", "2"}).allow_reset);  // a switch: -t keeps its value
  EXPECT_EQ(reset_guard(Config{}), ResetGuard::open);               // no store: memory only
  EXPECT_EQ(reset_guard(parse_ok({"--store", "rocksdb:/d"})), ResetGuard::refused);
  EXPECT_EQ(reset_guard(parse_ok({"--store", "rocksdb:/d", "--allow-reset"})), ResetGuard::open);
  // A token wins over --allow-reset: it is still required.
  EXPECT_EQ(
      reset_guard(parse_ok({"--store", "rocksdb:/d", "--allow-reset", "--admin-token-file", "/t"})),
      ResetGuard::token);
  EXPECT_NE(describe(parse_ok({"--store", "rocksdb:/d"})).find(" reset=refused "),
            std::string::npos);
  EXPECT_NE(usage_text().find("--allow-reset  "), std::string::npos) << usage_text();
  EXPECT_NE(usage_text().find("--admin-token-file PATH"), std::string::npos);
}

// A file in a fresh temporary directory, removed with it.
struct TokenFile {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("admin_token_test_" + std::to_string(::getpid()));
  std::filesystem::path path = dir / "token";
  explicit TokenFile(const std::string& content) {
    std::filesystem::create_directories(dir);
    std::ofstream(path, std::ios::binary) << content;
    chmod(std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  ~TokenFile() { std::filesystem::remove_all(dir); }
  // The error ("" when it loaded); the file is 0600, as it should be, unless chmod'ed after.
  std::string load(Config& c) const { return load_full(c).error; }
  AdminTokenLoad load_full(Config& c) const {
    c.admin_token_file = path.string();
    return load_admin_token(c);
  }
  void chmod(std::filesystem::perms mode) const {
    std::filesystem::permissions(path, mode, std::filesystem::perm_options::replace);
  }
};

TEST(AdminToken, TrailingWhitespaceIsTrimmed) {
  Config c;
  EXPECT_EQ(TokenFile("0123456789abcdef \t\r\n\n").load(c), "");
  EXPECT_EQ(c.admin_token, "0123456789abcdef");
  Config none;
  EXPECT_EQ(load_admin_token(none).error, "");  // no --admin-token-file: nothing to read
  EXPECT_TRUE(none.admin_token.empty());
}

TEST(AdminToken, BadFilesAreClearErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "is empty"},
      {" \n\t", "is empty"},
      {"0123456789abcde", "holds a token of 15 bytes: too short"},
      {"0123456789 abcdef", "whitespace, control or non-ASCII"},
      {"\x01" + std::string(20, 'a'), "whitespace, control or non-ASCII"},
      {std::string(kMaxAdminTokenBytes + 1, 'a'), "too long"},
  };
  for (const auto& [content, want] : cases) {
    Config c;
    const std::string e = TokenFile(content).load(c);
    EXPECT_NE(e.find(want), std::string::npos) << e;
    EXPECT_EQ(e.find("--admin-token-file '"), 0u) << e;
    EXPECT_TRUE(c.admin_token.empty());
  }
  Config missing;
  missing.admin_token_file = "/nonexistent/admin/token";
  EXPECT_EQ(load_admin_token(missing).error,
            "cannot read --admin-token-file '/nonexistent/admin/token': No such file or directory");
  Config dir;
  dir.admin_token_file = std::filesystem::temp_directory_path().string();
  EXPECT_NE(load_admin_token(dir).error.find("Is a directory"), std::string::npos);
}

// Issue 44: as OpenSSH does a private key's, the file's mode is checked: writable by group or
// others is an error (exit status 2: they could change the token), readable a warning, 0600
// (or stricter) silent. Both lines name the file and its mode. A bad token is reported first.
TEST(AdminToken, AFileGroupOrOthersMayWriteIsAnErrorMayReadAWarning) {
  using std::filesystem::perms;
  const perms rw = perms::owner_read | perms::owner_write;
  const std::pair<perms, const char*> writable[] = {
      {rw | perms::group_write, "0620"}, {rw | perms::others_write, "0602"}, {perms::all, "0777"}};
  for (const auto& [mode, octal] : writable) {
    const TokenFile file("0123456789abcdef\n");
    file.chmod(mode);
    Config c;
    const AdminTokenLoad got = file.load_full(c);
    EXPECT_EQ(got.exit_status, 2) << got.error;
    EXPECT_EQ(got.error.find("--admin-token-file '" + file.path.string() + "'"), 0u) << got.error;
    EXPECT_NE(got.error.find(std::string("mode ") + octal), std::string::npos) << got.error;
    EXPECT_NE(got.error.find("write"), std::string::npos) << got.error;
    EXPECT_EQ(got.error.find("0123456789abcdef"), std::string::npos) << "never the token";
    EXPECT_TRUE(c.admin_token.empty());
  }
  const std::pair<perms, const char*> readable[] = {
      {rw | perms::group_read, "0640"},
      {rw | perms::others_read, "0604"},
      {perms::owner_read | perms::group_read, "0440"}};
  for (const auto& [mode, octal] : readable) {
    const TokenFile file("0123456789abcdef\n");
    file.chmod(mode);
    Config c;
    const AdminTokenLoad got = file.load_full(c);
    EXPECT_EQ(got.error, "");
    EXPECT_EQ(got.warning.find("warning: --admin-token-file '" + file.path.string() + "'"), 0u)
        << got.warning;
    EXPECT_NE(got.warning.find(std::string("mode ") + octal), std::string::npos) << got.warning;
    EXPECT_NE(got.warning.find("read"), std::string::npos) << got.warning;
    EXPECT_EQ(c.admin_token, "0123456789abcdef");  // it starts, with the token
  }
  for (const perms mode : {rw, perms::owner_read}) {
    const TokenFile file("0123456789abcdef\n");
    file.chmod(mode);
    Config c;
    const AdminTokenLoad got = file.load_full(c);
    EXPECT_EQ(got.error, "");
    EXPECT_EQ(got.warning, "");  // silent
    EXPECT_EQ(c.admin_token, "0123456789abcdef");
  }
  // A bad token in a writable file: the token's error (status 1) is what is reported.
  const TokenFile bad("short\n");
  bad.chmod(perms::all);
  Config c;
  const AdminTokenLoad got = bad.load_full(c);
  EXPECT_EQ(got.exit_status, 1);
  EXPECT_NE(got.error.find("too short"), std::string::npos) << got.error;
}

TEST(AdminToken, MatchesOnlyTheWholeToken) {
  const std::string token = "0123456789abcdef";
  EXPECT_TRUE(admin_token_matches(token, token));
  for (const std::string_view other :
       {"", "0123456789abcde", "0123456789abcdefX", "1123456789abcdef", "0123456789abcdeF"}) {
    EXPECT_FALSE(admin_token_matches(token, other)) << other;
  }
  EXPECT_FALSE(admin_token_matches("", ""));  // no token configured: nothing matches
}

}  // namespace
}  // namespace server
