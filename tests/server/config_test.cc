// config_test.cc — unit tests of flag parsing, size/seconds parsing and validation.
#include "server/config.hh"

#include <gtest/gtest.h>

#include "server/server_context.hh"

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

TEST(ParseSeconds, DecimalSeconds) {
  std::chrono::milliseconds ms{};
  EXPECT_TRUE(parse_seconds("10", ms));
  EXPECT_EQ(ms.count(), 10000);
  EXPECT_TRUE(parse_seconds("0.25", ms));
  EXPECT_EQ(ms.count(), 250);
  EXPECT_FALSE(parse_seconds("-1", ms));
  EXPECT_FALSE(parse_seconds("1s", ms));
  EXPECT_FALSE(parse_seconds("", ms));
  EXPECT_FALSE(parse_seconds("nan", ms));
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
  const Config l = parse_ok({"--maxmem", "2K", "--host", "0.0.0.0", "--port=9", "--threads=2",
                             "--evictor", "fifo", "--max-value", "10K", "--header-timeout", "0.5",
                             "--idle-timeout=3", "--io-model", "shared"});
  EXPECT_EQ(l.maxmem, 2048u);
  EXPECT_EQ(l.port, 9);
  EXPECT_EQ(l.threads, 2u);
  EXPECT_EQ(l.evictor, cache::Evictor::fifo);
  EXPECT_EQ(l.max_value, 10240u);
  EXPECT_EQ(l.header_timeout.count(), 500);
  EXPECT_EQ(l.idle_timeout.count(), 3000);
  EXPECT_EQ(l.io_model, IoModel::shared);
}

TEST(ParseFlags, Help) {
  EXPECT_TRUE(std::holds_alternative<HelpRequested>(parse({"--help"})));
  EXPECT_TRUE(std::holds_alternative<HelpRequested>(parse({"-p", "1", "-h"})));
  const std::string usage = usage_text();
  for (const char* flag : {"--maxmem", "--host", "--port", "--threads", "--evictor", "--max-value",
                           "--header-timeout", "--idle-timeout", "--variant", "--lock",
                           "--value-path", "--dispatch", "--write-batching", "-m,", "-s,", "-p,", "-t,", "-e,"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
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

}  // namespace
}  // namespace server
