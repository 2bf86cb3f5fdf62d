// postgres_store_test.cc — PostgresStore (store/postgres_store.hh) against a real PostgreSQL:
// one throwaway cluster per test suite (tests/support/pg_cluster.py, started in SetUpTestSuite
// and removed in TearDownTestSuite, at exit, or before an abort) and a fresh table per test.
// Covers the contract's semantics over bytea (every byte value), want_existed through the
// coalescing of a group, group commit, write/clear ordering, batched reads, the schema, open's
// errors, a server that goes away (io_error promptly, never failed) and comes back (the store
// reconnects by itself, acknowledged writes survive a crash), and close().
// Every wait is bounded: a stuck store fails the test instead of hanging the suite.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "store/open_store.hh"
#include "store/postgres_internal.hh"
#include "store/postgres_store.hh"
#include "store/store.hh"
#include "tests/store/store_test_support.hh"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using namespace store_test;

// --- the cluster, through the shared helper's CLI ----------------------------------------------

struct Cluster {
  std::string dir;  // empty: none running
  std::string conninfo;
  std::string error;  // why it could not start
};
Cluster cluster;
std::mutex cluster_mu;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs the helper; returns its exit status and its stdout (stderr goes to the test's output).
int helper(const std::string& args, std::string* out = nullptr) {
  const std::string cmd =
      shell_quote(PYTHON3) + " " + shell_quote(PG_CLUSTER_PY) + " " + args + " </dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return -1;
  char buf[512];
  std::string text;
  while (std::fgets(buf, sizeof buf, p.get()) != nullptr) text += buf;
  const int rc = pclose(p.release());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (out) *out = text;
  return rc;
}

void remove_cluster() {
  std::unique_lock lock(cluster_mu, std::try_to_lock);
  if (!lock.owns_lock() || cluster.dir.empty()) return;
  helper("stop " + shell_quote(cluster.dir));
  cluster.dir.clear();
}

}  // namespace

// store_test_support.hh's hooks: the bound on one completion, and the cluster a stuck store's
// abort removes.
const std::chrono::seconds store_test::kWait = 30s;
void store_test::remove_before_abort() {
  remove_cluster();
}

namespace {

// pg_cluster.py CMD DIR [EXTRA]
void cluster_ctl(const std::string& cmd, const std::string& extra = "") {
  ASSERT_EQ(helper(cmd + " " + shell_quote(cluster.dir) + (extra.empty() ? "" : " " + extra)), 0)
      << "pg_cluster.py " << cmd << " " << extra;
}

// Runs one SQL statement on its own connection (to drop a table behind the store's back).
std::string exec_sql(const std::string& sql) {
  std::unique_ptr<PGconn, void (*)(PGconn*)> c(PQconnectdb(cluster.conninfo.c_str()), PQfinish);
  if (PQstatus(c.get()) != CONNECTION_OK) return PQerrorMessage(c.get());
  PQsetNoticeProcessor(
      c.get(), [](void*, const char*) {}, nullptr);  // "does not exist, skipping"
  std::unique_ptr<PGresult, void (*)(PGresult*)> r(PQexec(c.get(), sql.c_str()), PQclear);
  const auto st = PQresultStatus(r.get());
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? "" : PQresultErrorMessage(r.get());
}

// The first column of every row `sql` returns, one per line (or the error), on its own
// connection.
std::string query_column(const std::string& sql) {
  std::unique_ptr<PGconn, void (*)(PGconn*)> c(PQconnectdb(cluster.conninfo.c_str()), PQfinish);
  if (PQstatus(c.get()) != CONNECTION_OK) return PQerrorMessage(c.get());
  std::unique_ptr<PGresult, void (*)(PGresult*)> r(PQexec(c.get(), sql.c_str()), PQclear);
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return PQresultErrorMessage(r.get());
  std::string out;
  for (int i = 0; i < PQntuples(r.get()); ++i) out += std::string(PQgetvalue(r.get(), i, 0)) + '\n';
  return out;
}

// PREPAREs `sql` as p(types) on a connection of its own and returns the text of
// EXPLAIN (ANALYZE, BUFFERS) EXECUTE p(args), one line per plan line (or the error).
std::string explain(const std::string& sql, const std::string& types, const std::string& args,
                    bool generic) {
  std::unique_ptr<PGconn, void (*)(PGconn*)> c(PQconnectdb(cluster.conninfo.c_str()), PQfinish);
  if (PQstatus(c.get()) != CONNECTION_OK) return PQerrorMessage(c.get());
  const std::string setup = std::string("SET plan_cache_mode = ") +
                            (generic ? "force_generic_plan" : "force_custom_plan") +
                            "; PREPARE p(" + types + ") AS " + sql;
  std::unique_ptr<PGresult, void (*)(PGresult*)> r(PQexec(c.get(), setup.c_str()), PQclear);
  if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return PQresultErrorMessage(r.get());
  const std::string q = "EXPLAIN (ANALYZE, BUFFERS) EXECUTE p(" + args + ")";
  r.reset(PQexec(c.get(), q.c_str()));
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return PQresultErrorMessage(r.get());
  std::string out;
  for (int i = 0; i < PQntuples(r.get()); ++i) out += std::string(PQgetvalue(r.get(), i, 0)) + '\n';
  return out;
}

class PostgresStoreTest : public testing::Test {
 public:
  static void SetUpTestSuite() {
    std::lock_guard lock(cluster_mu);
    std::string tmpl = (std::filesystem::temp_directory_path() / "pg_store_test_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      cluster.error = "mkdtemp failed";
      return;
    }
    cluster.dir = tmpl;
    static const bool hooks = [] {
      std::atexit(remove_cluster);
      remove_before_sanitizer_death();
      return true;
    }();
    (void)hooks;
    std::string out;
    if (helper("start " + shell_quote(cluster.dir), &out) != 0 || out.empty()) {
      cluster.error = "tests/support/pg_cluster.py start failed (see its message above): " + out;
      helper("stop " + shell_quote(cluster.dir));
      cluster.dir.clear();
      return;
    }
    cluster.conninfo = out.substr(out.rfind('\n') + 1);  // its last line
  }
  static void TearDownTestSuite() { remove_cluster(); }

 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster.error.empty()) << cluster.error;
    ASSERT_FALSE(cluster.dir.empty());
    // A fresh table per test, named after it, so tests never see each other's keys.
    table_ = std::string("t_") + testing::UnitTest::GetInstance()->current_test_info()->name();
    if (table_.size() > 60) table_.resize(60);
    board_table_ = "b" + table_.substr(1);
    ASSERT_EQ(exec_sql("DROP TABLE IF EXISTS \"" + table_ + "\""), "");
    ASSERT_EQ(exec_sql("DROP TABLE IF EXISTS \"" + board_table_ + "\""), "");
  }

  store::OpenOptions options(int connections = 4) const {
    store::OpenOptions o;
    o.table = table_;
    o.board_table = board_table_;
    o.connections = connections;
    return o;
  }
  std::unique_ptr<store::Store> open(int connections = 4) {
    std::string error;
    auto s = store::open_store("postgres:" + cluster.conninfo, options(connections), error);
    EXPECT_TRUE(s) << error;
    return s;
  }
  store::PostgresStore& pg(store::Store& s) { return dynamic_cast<store::PostgresStore&>(s); }
  // Runs one of the contract's checks (store_test_support.hh) on a fresh store.
  void check_contract(void (*check)(store::Store&)) {
    auto s = open();
    ASSERT_TRUE(s);
    check(*s);
  }

  std::string table_;
  std::string board_table_;
};

using CommitterGate = store_test::CommitterGate<store::PostgresStore>;

// --- open -----------------------------------------------------------------------------------

TEST_F(PostgresStoreTest, OpenRejectsBadOptionsWithAClearOneLineError) {
  std::string error;
  EXPECT_FALSE(store::open_store("postgres:", store::OpenOptions{}, error));
  EXPECT_NE(error.find("postgres:CONNINFO"), std::string::npos) << error;

  error.clear();
  EXPECT_FALSE(store::open_store("postgres:host=127.0.0.1 port=1 connect_timeout=2 user=x",
                                 store::OpenOptions{}, error));
  EXPECT_NE(error.find("postgres: cannot connect"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;

  error.clear();
  EXPECT_FALSE(store::open_store("postgres:" + cluster.conninfo, options(1), error));
  EXPECT_NE(error.find("at least 2 connections"), std::string::npos) << error;

  error.clear();
  auto o = options();
  o.table = "";
  EXPECT_FALSE(store::open_store("postgres:" + cluster.conninfo, o, error));
  EXPECT_NE(error.find("table"), std::string::npos) << error;

  error.clear();
  o = options();
  o.faults.sync_error_after = 1;
  EXPECT_FALSE(store::open_store("postgres:" + cluster.conninfo, o, error));
  EXPECT_NE(error.find("read-delay"), std::string::npos) << error;

  // A table of another shape is named, not used.
  ASSERT_EQ(exec_sql("CREATE TABLE \"" + table_ + "\"(key text primary key, value text)"), "");
  error.clear();
  EXPECT_FALSE(store::open_store("postgres:" + cluster.conninfo, options(), error));
  EXPECT_NE(error.find(table_), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

// libpq's texts as its versions format them (libpq 15, and 14's hint): what the store reports
// keeps the reason and none of the host, address, port, socket, user or database.
TEST(ScrubLibpqText, KeepsTheReasonAndNoneOfTheConninfo) {
  using store::detail::scrub_libpq_text;
  const std::pair<const char*, const char*> cases[] = {
      {"connection to server at \"127.0.0.1\", port 41234 failed: Connection refused Is the "
       "server running on that host and accepting TCP/IP connections?",
       "connection to the database failed: Connection refused"},
      {"postgres: cannot connect: connection to server at \"db.example\" (10.1.2.3), port 6543 "
       "failed: FATAL: password authentication failed for user \"alice\"",
       "postgres: cannot connect: connection to the database failed: FATAL: password "
       "authentication failed for user \"...\""},
      {"connection to server on socket \"/run/pg/.s.PGSQL.6543\" failed: No such file or "
       "directory Is the server running locally and accepting connections on that socket?",
       "connection to the database failed: No such file or directory"},
      {"could not connect to server: Connection refused Is the server running on host "
       "\"db.example\" (10.1.2.3) and accepting TCP/IP connections on port 6543?",
       "could not connect to server: Connection refused"},
      {"could not translate host name \"db.example\" to address: Name or service not known",
       "could not translate host name \"...\" to address: Name or service not known"},
      {"connection to server at \"10.1.2.3\", port 6543 failed: FATAL: no pg_hba.conf entry for "
       "host \"10.9.9.9\", user \"alice\", database \"shop\", no encryption",
       "connection to the database failed: FATAL: no pg_hba.conf entry for host \"...\", user "
       "\"...\", database \"...\", no encryption"},
      // Several hosts tried: each attempt's prefix.
      {"connection to server at \"a\", port 1 failed: timeout expired connection to server at "
       "\"b\", port 2 failed: Connection refused",
       "connection to the database failed: timeout expired connection to the database failed: "
       "Connection refused"},
      {"FATAL: database \"shop", "FATAL: database \"...\""},  // unterminated: the rest goes
      {"server closed the connection unexpectedly",
       "server closed the connection unexpectedly"},  // nothing to hide
      {"", ""},
  };
  for (const auto& [text, want] : cases) {
    const std::string got = scrub_libpq_text(text);
    EXPECT_EQ(got, want) << text;
    EXPECT_EQ(scrub_libpq_text(got), got) << "idempotent: " << text;
    for (const char* secret :
         {"127.0.0.1", "41234", "6543", "10.1.2.3", "db.example", "alice", "shop", "/run/pg"}) {
      EXPECT_EQ(got.find(secret), std::string::npos) << secret << " in " << got;
    }
  }
}

TEST_F(PostgresStoreTest, SplitStoreUriKnowsBothSchemes) {
  auto p = store::split_store_uri("postgres:host=h dbname=d");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->scheme, "postgres");
  EXPECT_EQ(p->rest, "host=h dbname=d");
  p = store::split_store_uri("postgres:postgresql://u@h/db");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rest, "postgresql://u@h/db");
  EXPECT_EQ(store::split_store_uri("rocksdb:/d")->scheme, "rocksdb");
  for (const char* bad : {"postgres:", "postgres", "rocksdb:", "none", "", "postgresx:a"}) {
    EXPECT_FALSE(store::split_store_uri(bad).has_value()) << bad;
  }
}

TEST_F(PostgresStoreTest, CreatesTheTableIfMissingAndReusesAnExistingOne) {
  {
    auto s = open();
    ASSERT_TRUE(s);
    EXPECT_STREQ(s->scheme(), "postgres");
    ASSERT_TRUE(write_sync(*s, {put("kept", "v")}).status.ok());
    s->close();
  }
  EXPECT_EQ(exec_sql("SELECT key, value, updated_at FROM \"" + table_ + "\""), "");
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(value_of(*s, "kept"), "v");
  const auto st = s->stats();
  EXPECT_TRUE(st.connected);
  EXPECT_FALSE(st.failed);
}

// --- semantics ------------------------------------------------------------------------------

TEST_F(PostgresStoreTest, PutGetDeleteAndExisted) {
  check_contract(check_put_get_delete_and_existed);
}

TEST_F(PostgresStoreTest, KeysAndValuesHoldEveryByteValue) {
  auto s = open();
  ASSERT_TRUE(s);
  std::string all;  // bytes 0..255
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::vector<Write> batch;
  for (int b = 0; b < 256; ++b) {
    // A one-byte key of each value (NUL included), and a value holding every byte.
    batch.push_back(put(std::string(1, static_cast<char>(b)), all.substr(b) + all.substr(0, b)));
  }
  batch.push_back(put(all.substr(0, 250), all));
  batch.push_back(put(all.substr(6, 250), std::string(3, '\0')));
  auto r = write_sync(*s, batch);
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.existed, std::vector<bool>(batch.size(), false));

  // Read them all at once (one batched SELECT, most likely) and one by one.
  std::vector<std::promise<store::ReadResult>> ps(batch.size());
  std::vector<std::future<store::ReadResult>> fs;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    fs.push_back(ps[i].get_future());
    s->read(batch[i].key, [&p = ps[i]](store::ReadResult rr) { p.set_value(std::move(rr)); });
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto rr = wait_for(fs[i]);
    ASSERT_TRUE(rr.status.ok()) << i << ": " << rr.status.message;
    EXPECT_EQ(rr.value, batch[i].value) << i;
  }
  EXPECT_EQ(value_of(*s, std::string(1, '\0')), all);
  EXPECT_EQ(value_of(*s, std::string(2, '\0')), "<absent>");  // not a prefix match

  // Every key again, asked whether it existed: the SELECT ... FOR UPDATE finds them all.
  for (auto& w : batch) w.want_existed = true;
  batch.push_back(put(std::string(1, '\xff') + '\0', "new"));
  r = write_sync(*s, batch);
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  std::vector<bool> expected(batch.size(), true);
  expected.back() = false;
  EXPECT_EQ(r.existed, expected);
}

TEST_F(PostgresStoreTest, ExistedSeesEarlierOpsOfTheSameBatch) {
  auto s = open();
  ASSERT_TRUE(s);
  // put, put, del, put of one key in one batch (coalesced to one upsert of "3").
  ASSERT_NO_FATAL_FAILURE(check_existed_sees_earlier_ops_of_the_same_batch(*s));
  // The last op of "x" is a delete of a key the database has: coalesced to one DELETE.
  ASSERT_TRUE(write_sync(*s, {put("x", "1")}).status.ok());
  auto r = write_sync(*s, {put("x", "2"), del("x")});
  EXPECT_EQ(r.existed, (std::vector<bool>{true, true}));
  EXPECT_EQ(value_of(*s, "x"), "<absent>");
}

TEST_F(PostgresStoreTest, ExistedSeesEarlierBatchesOfTheSameGroup) {
  check_contract(check_existed_sees_earlier_batches_of_the_same_group<store::PostgresStore>);
}

TEST_F(PostgresStoreTest, GroupCommitSharesCommitsAndKeepsCallOrder) {
  auto s = open();
  ASSERT_TRUE(s);
  constexpr int kN = 400;
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> done{0};
  auto all = std::make_shared<std::promise<void>>();
  auto f = all->get_future();
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> inline_call{false};
  for (int i = 0; i < kN; ++i) {
    std::vector<Write> batch{put("k", name("v", i)), put(name("key", i % 50), name("w", i))};
    if (i % 3 == 2) batch.push_back(del("k"));
    s->write(std::move(batch), [&, i, all](store::WriteResult r) {
      if (std::this_thread::get_id() == caller) inline_call = true;
      EXPECT_TRUE(r.status.ok()) << r.status.message;
      {
        std::lock_guard lock(mu);
        order.push_back(i);
      }
      if (++done == kN) all->set_value();
    });
  }
  wait_for(f);
  EXPECT_FALSE(inline_call);
  std::vector<int> expected(kN);
  for (int i = 0; i < kN; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
  EXPECT_EQ(value_of(*s, "k"), (kN - 1) % 3 == 2 ? "<absent>" : name("v", kN - 1));
  for (int k = 0; k < 50; ++k) EXPECT_EQ(value_of(*s, name("key", k)), name("w", 350 + k));
  const auto st = s->stats();
  EXPECT_EQ(st.writes, static_cast<std::uint64_t>(kN * 2 + kN / 3));
  EXPECT_GE(st.commits, 1u);
  EXPECT_LT(st.commits, static_cast<std::uint64_t>(kN) / 2) << "writes were not grouped";
}

// A group over PostgresOptions::max_statement_bytes (1 MiB here, 256 MiB by default) goes as
// several statements of each kind, all in its one transaction: every value comes back, existed
// is answered across the statements, a value larger than the limit goes alone, and the group
// stays atomic (a statement failing after others ran leaves nothing of it). The upserts are
// counted by a statement-level trigger on the table.
TEST_F(PostgresStoreTest, AGroupOverTheStatementLimitIsSplitAndStaysAtomic) {
  const std::string log = table_ + "_log";
  const std::string fn = table_ + "_count";
  ASSERT_EQ(exec_sql("DROP TABLE IF EXISTS \"" + log + "\""), "");
  ASSERT_EQ(exec_sql("DROP FUNCTION IF EXISTS \"" + fn + "\"() CASCADE"), "");
  ASSERT_EQ(exec_sql("DROP FUNCTION IF EXISTS \"" + fn + "_no\"() CASCADE"), "");
  ASSERT_EQ(exec_sql("CREATE TABLE \"" + table_ +
                     "\"(key bytea primary key, value bytea not null, "
                     "updated_at timestamptz not null default now())"),
            "");
  ASSERT_EQ(exec_sql("CREATE TABLE \"" + log + "\"(n int)"), "");
  ASSERT_EQ(exec_sql("CREATE FUNCTION \"" + fn +
                     "\"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO \"" + log +
                     "\" VALUES (1); RETURN NULL; END $$"),
            "");
  ASSERT_EQ(exec_sql("CREATE TRIGGER count_upserts AFTER INSERT ON \"" + table_ +
                     "\" FOR EACH STATEMENT EXECUTE FUNCTION \"" + fn + "\"()"),
            "");
  const auto upserts = [&] {
    std::unique_ptr<PGconn, void (*)(PGconn*)> c(PQconnectdb(cluster.conninfo.c_str()), PQfinish);
    const std::string sql = "SELECT count(*) FROM \"" + log + "\"";
    std::unique_ptr<PGresult, void (*)(PGresult*)> r(PQexec(c.get(), sql.c_str()), PQclear);
    return PQresultStatus(r.get()) == PGRES_TUPLES_OK ? std::atoll(PQgetvalue(r.get(), 0, 0)) : -1;
  };

  store::PostgresOptions o;
  o.conninfo = cluster.conninfo;
  o.table = table_;
  o.board_table = board_table_;
  o.connections = 2;
  o.max_statement_bytes = std::size_t{1} << 20;
  std::string error;
  auto s = store::PostgresStore::open(o, error);
  ASSERT_TRUE(s) << error;
  ASSERT_TRUE(write_sync(*s, {put("old-a", "1"), put("old-b", "2")}).status.ok());

  // 40 values of 100 KiB (4 MiB, each a distinct byte pattern), one of 3 MiB, deletes, existed
  // questions and board rows: one group, held together by the gate.
  constexpr int kValues = 40;
  auto value = [](int i, std::size_t size) {
    std::string v(size, static_cast<char>('a' + i % 26));
    v[0] = static_cast<char>(i);
    return v;
  };
  std::vector<std::future<store::WriteResult>> results;
  auto submit = [&](std::vector<Write> batch) {
    auto p = std::make_shared<std::promise<store::WriteResult>>();
    results.push_back(p->get_future());
    s->write(std::move(batch), [p](store::WriteResult r) { p->set_value(std::move(r)); });
  };
  const std::uint64_t commits_before = s->stats().commits;
  const long long upserts_before = upserts();
  {
    CommitterGate gate(*s);
    for (int i = 0; i < kValues; i += 4) {
      std::vector<Write> batch;
      for (int j = i; j < i + 4; ++j) batch.push_back(put(name("big", j), value(j, 100 << 10)));
      submit(std::move(batch));
    }
    submit({put("huge", value(7, 3 << 20)), del("old-a"), put("old-b", "3")});
    submit({board_set("board", "m", 1.5, 1), put("big0", "again")});
  }
  std::vector<store::WriteResult> got;
  for (auto& f : results) {
    got.push_back(wait_for(f));
    ASSERT_TRUE(got.back().status.ok()) << got.back().status.message;
  }
  EXPECT_EQ(got[kValues / 4].existed, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(s->stats().commits, commits_before + 1 + 1) << "the gate's write and the group";
  // 4 MiB of 100 KiB values at 1 MiB a statement, and the 3 MiB one alone: 5 upserts at least.
  EXPECT_GE(upserts() - upserts_before, 6) << "the group's upserts were not split";
  EXPECT_EQ(value_of(*s, "big0"), "again");
  for (int i = 1; i < kValues; ++i) EXPECT_EQ(value_of(*s, name("big", i)), value(i, 100 << 10));
  EXPECT_EQ(value_of(*s, "huge"), value(7, 3 << 20));
  EXPECT_EQ(value_of(*s, "old-a"), "<absent>");
  EXPECT_EQ(value_of(*s, "old-b"), "3");

  // Atomic: a DELETE that fails (a trigger refuses it) after the group's upserts ran, as the
  // last statement of the transaction, leaves none of them.
  ASSERT_EQ(exec_sql("CREATE FUNCTION \"" + fn +
                     "_no\"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION "
                     "'no deletes'; END $$"),
            "");
  ASSERT_EQ(exec_sql("CREATE TRIGGER no_deletes BEFORE DELETE ON \"" + table_ +
                     "\" FOR EACH STATEMENT EXECUTE FUNCTION \"" + fn + "_no\"()"),
            "");
  std::vector<Write> batch;
  for (int i = 0; i < kValues; ++i) batch.push_back(put(name("new", i), value(i, 100 << 10)));
  batch.push_back(del("old-b"));
  const long long upserts_ok = upserts();
  const auto r = write_sync(*s, std::move(batch));
  EXPECT_EQ(r.status.code, Code::io_error) << r.status.message;
  EXPECT_NE(r.status.message.find("no deletes"), std::string::npos) << r.status.message;
  for (int i = 0; i < kValues; ++i) EXPECT_EQ(value_of(*s, name("new", i)), "<absent>");
  EXPECT_EQ(value_of(*s, "old-b"), "3");
  EXPECT_EQ(upserts(), upserts_ok) << "the upserts' own trigger rows are rolled back too";
  s->close();
  ASSERT_EQ(exec_sql("DROP TABLE \"" + table_ + "\""), "");
  ASSERT_EQ(exec_sql("DROP TABLE \"" + log + "\""), "");
  ASSERT_EQ(exec_sql("DROP FUNCTION \"" + fn + "\"(), \"" + fn + "_no\"() CASCADE"), "");
}

TEST_F(PostgresStoreTest, ClearIsOrderedWithWrites) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {put("a", "1"), put("b", "1")}).status.ok());
  // write, clear, write in one group: the first write is wiped, the last one stays.
  std::promise<store::WriteResult> w1, w2;
  std::promise<store::Status> c;
  auto f1 = w1.get_future(), f2 = w2.get_future();
  auto fc = c.get_future();
  const auto commits_before = s->stats().commits;
  {
    CommitterGate gate(pg(*s));
    s->write({put("before", "x"), put("a", "2")},
             [&](store::WriteResult r) { w1.set_value(std::move(r)); });
    s->clear([&](store::Status st) { c.set_value(std::move(st)); });
    s->write({put("after", "y"), put("a", "3"), del("b")},
             [&](store::WriteResult r) { w2.set_value(std::move(r)); });
  }
  auto r1 = wait_for(f1);
  auto rc = wait_for(fc);
  auto r2 = wait_for(f2);
  ASSERT_TRUE(r1.status.ok()) << r1.status.message;
  ASSERT_TRUE(rc.ok()) << rc.message;
  ASSERT_TRUE(r2.status.ok()) << r2.status.message;
  EXPECT_EQ(r1.existed, (std::vector<bool>{false, true}));
  EXPECT_EQ(r2.existed, (std::vector<bool>{false, false, false}));  // after the clear
  EXPECT_EQ(s->stats().commits, commits_before + 2);
  EXPECT_EQ(value_of(*s, "before"), "<absent>");
  EXPECT_EQ(value_of(*s, "b"), "<absent>");
  EXPECT_EQ(value_of(*s, "a"), "3");
  EXPECT_EQ(value_of(*s, "after"), "y");
  // A lone clear, then the store still works.
  ASSERT_TRUE(clear_sync(*s).ok());
  EXPECT_EQ(value_of(*s, "a"), "<absent>");
  EXPECT_EQ(write_sync(*s, {put("a", "4")}).existed, std::vector<bool>{false});
}

TEST_F(PostgresStoreTest, ReadsAreBatchedAndAnswerEachKey) {
  auto s = open();
  ASSERT_TRUE(s);
  constexpr int kKeys = 500;
  std::vector<Write> batch;
  for (int i = 0; i < kKeys; ++i) batch.push_back(put(name("k", i), name("v", i), false));
  ASSERT_TRUE(write_sync(*s, std::move(batch)).status.ok());
  constexpr int kReads = kKeys + 100;  // 100 absent keys, and duplicates of present ones
  std::vector<std::promise<store::ReadResult>> ps(kReads + 50);
  std::vector<std::future<store::ReadResult>> fs;
  std::vector<std::string> keys;
  for (int i = 0; i < kReads; ++i) keys.push_back(name("k", i));
  for (int i = 0; i < 50; ++i) keys.push_back(name("k", i));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    fs.push_back(ps[i].get_future());
    s->read(keys[i], [&p = ps[i]](store::ReadResult r) { p.set_value(std::move(r)); });
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto r = wait_for(fs[i]);
    const int k = static_cast<int>(i < kReads ? i : i - kReads);
    if (k < kKeys) {
      ASSERT_TRUE(r.status.ok()) << keys[i] << ": " << r.status.message;
      EXPECT_EQ(r.value, name("v", k));
    } else {
      EXPECT_EQ(r.status.code, Code::not_found) << keys[i];
      EXPECT_EQ(r.value, "");
    }
  }
  const auto st = s->stats();
  EXPECT_EQ(st.reads, keys.size());
  EXPECT_EQ(st.errors, 0u);
}

TEST_F(PostgresStoreTest, RefusesBadKeysWithoutFailing) {
  auto s = open();
  ASSERT_TRUE(s);
  check_refuses_bad_keys_without_failing(*s, "1..250");
}

TEST_F(PostgresStoreTest, AStatementErrorFailsTheGroupOnlyAndIsLogged) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {put("a", "1")}).status.ok());
  ASSERT_EQ(exec_sql("DROP TABLE \"" + table_ + "\""), "");
  auto r = write_sync(*s, {put("a", "2")});
  EXPECT_EQ(r.status.code, Code::io_error);
  EXPECT_NE(r.status.message.find("commit failed"), std::string::npos) << r.status.message;
  EXPECT_TRUE(r.existed.empty());
  auto rr = read_sync(*s, "a");
  EXPECT_EQ(rr.status.code, Code::io_error);
  auto st = s->stats();
  EXPECT_FALSE(st.failed);
  EXPECT_TRUE(st.connected);
  EXPECT_NE(st.last_error.find("does not exist"), std::string::npos) << st.last_error;
  // The table back: the same connections work again (the aborted transaction was rolled back).
  ASSERT_EQ(exec_sql("CREATE TABLE \"" + table_ +
                     "\"(key bytea primary key, value bytea not null, "
                     "updated_at timestamptz not null default now(), "
                     "expires_at bigint not null default 0)"),
            "");
  r = write_sync(*s, {put("a", "3")});
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(value_of(*s, "a"), "3");
  EXPECT_EQ(s->stats().reconnects, 0u);
}

// A database or role configured with synchronous_commit=off would acknowledge commits before
// their WAL is flushed; the writer turns it back on for its session. Seen from the WAL syncs:
// each acknowledged sequential commit was flushed (pg_stat_wal.wal_sync grows by at least one
// per commit), where with the setting left off the WAL writer would sync a few times at most.
TEST_F(PostgresStoreTest, AcknowledgedCommitsAreFlushedEvenWithSynchronousCommitOff) {
  const auto wal_syncs = [] {
    std::unique_ptr<PGconn, void (*)(PGconn*)> c(PQconnectdb(cluster.conninfo.c_str()), PQfinish);
    std::unique_ptr<PGresult, void (*)(PGresult*)> r(
        PQexec(c.get(), "SELECT wal_sync FROM pg_stat_wal"), PQclear);
    return PQresultStatus(r.get()) == PGRES_TUPLES_OK ? std::stoll(PQgetvalue(r.get(), 0, 0))
                                                      : -1LL;
  };
  std::string error;
  auto s = store::open_store(
      "postgres:" + cluster.conninfo + " options='-c synchronous_commit=off'", options(), error);
  ASSERT_TRUE(s) << error;
  const long long before = wal_syncs();
  ASSERT_GE(before, 0);
  constexpr int kCommits = 20;
  for (int i = 0; i < kCommits; ++i)
    ASSERT_TRUE(write_sync(*s, {put(name("k", i), "v")}).status.ok());
  s->close();  // the backends exit and flush their statistics
  s.reset();
  long long after = before;
  for (int i = 0; i < 50 && after - before < kCommits; ++i) {  // stats arrive asynchronously
    std::this_thread::sleep_for(100ms);
    after = wal_syncs();
  }
  EXPECT_GE(after - before, kCommits);
}

// The cluster's processes: its postmaster (data/postmaster.pid) and the postmaster's children.
std::vector<pid_t> cluster_pids() {
  std::vector<pid_t> pids;
  std::ifstream pidfile(cluster.dir + "/data/postmaster.pid");
  long postmaster = 0;
  if (!(pidfile >> postmaster) || postmaster <= 0) return pids;
  pids.push_back(static_cast<pid_t>(postmaster));
  std::unique_ptr<FILE, int (*)(FILE*)> p(
      popen(("pgrep -P " + std::to_string(postmaster)).c_str(), "r"), pclose);
  long child = 0;
  while (p && std::fscanf(p.get(), "%ld", &child) == 1) pids.push_back(static_cast<pid_t>(child));
  return pids;
}

// A server that stops answering without closing its connections (SIGSTOP: as a partition would)
// must not hold close() forever: after its grace it shuts the connections down, and the write in
// flight fails as "outcome unknown".
TEST_F(PostgresStoreTest, CloseDoesNotWaitForeverOnAServerThatStoppedAnswering) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {put("a", "1")}).status.ok());
  const std::vector<pid_t> pids = cluster_pids();
  ASSERT_GE(pids.size(), 2u);
  for (pid_t p : pids) ::kill(p, SIGSTOP);
  auto p = std::make_shared<std::promise<store::WriteResult>>();
  auto f = p->get_future();
  s->write({put("b", "2")}, [p](store::WriteResult r) { p->set_value(std::move(r)); });
  std::this_thread::sleep_for(200ms);  // the group is sent and waits on the stopped server
  const auto start = Clock::now();
  s->close();
  const auto took = Clock::now() - start;
  for (pid_t pid : pids) ::kill(pid, SIGCONT);
  EXPECT_LT(took, 5s);
  ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
  const store::WriteResult r = f.get();
  EXPECT_EQ(r.status.code, Code::io_error);
  EXPECT_NE(r.status.message.find("outcome unknown"), std::string::npos) << r.status.message;
}

TEST_F(PostgresStoreTest, ReadDelayHoldsReadsBack) {
  auto o = options();
  std::string error;
  ASSERT_TRUE(store::parse_faults("read-delay=200ms", o.faults, error)) << error;
  auto s = store::open_store("postgres:" + cluster.conninfo, o, error);
  ASSERT_TRUE(s) << error;
  const auto start = Clock::now();
  EXPECT_EQ(read_sync(*s, "a").status.code, Code::not_found);
  EXPECT_GE(Clock::now() - start, 200ms);
}

// --- the server goes away and comes back ------------------------------------------------------

TEST_F(PostgresStoreTest, ServerDownFailsPromptlyThenTheStoreReconnectsByItself) {
  auto s = open();
  ASSERT_TRUE(s);
  // Acknowledged writes, then a crash (immediate stop: WAL recovery at the next start).
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(write_sync(*s, {put(name("acked", i), name("v", i))}).status.ok());
  }
  cluster_ctl("stop-only", "immediate");
  cluster_ctl("stop-only");  // idempotent
  {
    const auto start = Clock::now();
    auto w = write_sync(*s, {put("down", "x")});
    auto r = read_sync(*s, "acked1");
    const auto took = Clock::now() - start;
    // The first may find the connection lost (outcome unknown) or already down (unavailable).
    EXPECT_TRUE(w.status.code == Code::io_error || w.status.code == Code::unavailable)
        << w.status.message;
    EXPECT_TRUE(r.status.code == Code::io_error || r.status.code == Code::unavailable)
        << r.status.message;
    EXPECT_LT(took, 3s);
    EXPECT_NE(w.status.message.find("postgres"), std::string::npos) << w.status.message;
  }
  // Several more while down: each completes promptly with unavailable ("not connected").
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    auto w = write_sync(*s, {put("down", "x")});
    auto r = read_sync(*s, "acked1");
    auto c = clear_sync(*s);
    EXPECT_LT(Clock::now() - start, 3s);
    EXPECT_EQ(w.status.code, Code::unavailable);
    EXPECT_EQ(r.status.code, Code::unavailable);
    EXPECT_EQ(c.code, Code::unavailable);
    EXPECT_NE(w.status.message.find("not connected"), std::string::npos) << w.status.message;
    std::this_thread::sleep_for(100ms);
  }
  auto st = s->stats();
  EXPECT_FALSE(st.connected);
  EXPECT_FALSE(st.failed);
  EXPECT_GT(st.errors, 0u);
  EXPECT_FALSE(st.last_error.empty());

  cluster_ctl("start-only");
  const auto deadline = Clock::now() + 15s;
  while (Clock::now() < deadline && !s->stats().connected) std::this_thread::sleep_for(50ms);
  st = s->stats();
  EXPECT_TRUE(st.connected);
  EXPECT_GE(st.reconnects, 1u);
  EXPECT_FALSE(st.failed);
  auto w = write_sync(*s, {put("back", "y")});
  ASSERT_TRUE(w.status.ok()) << w.status.message;
  EXPECT_EQ(value_of(*s, "back"), "y");
  for (int i = 0; i < 20; ++i) EXPECT_EQ(value_of(*s, name("acked", i)), name("v", i));
  EXPECT_EQ(value_of(*s, "down"), "<absent>");
}

TEST_F(PostgresStoreTest, AcknowledgedWritesSurviveACrashUnderLoad) {
  auto s = open();
  ASSERT_TRUE(s);
  // Writers keep writing while the server crashes (immediate stop) and comes back; every write
  // acknowledged ok must be there afterwards. Unacknowledged ones may or may not be.
  std::mutex mu;
  std::vector<std::string> acked;
  std::atomic<bool> stop{false};
  std::atomic<int> in_flight{0};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      if (in_flight.load() > 64) {
        std::this_thread::sleep_for(1ms);
        continue;
      }
      ++in_flight;
      std::string key = name("load", i);
      s->write({put(key, key)}, [&, key](store::WriteResult r) {
        if (r.status.ok()) {
          std::lock_guard lock(mu);
          acked.push_back(key);
        }
        --in_flight;
      });
    }
  });
  std::this_thread::sleep_for(300ms);
  cluster_ctl("stop-only", "immediate");
  std::this_thread::sleep_for(300ms);
  cluster_ctl("start-only");
  const auto deadline = Clock::now() + 15s;
  while (Clock::now() < deadline && !s->stats().connected) std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(300ms);
  stop = true;
  writer.join();
  while (in_flight.load() > 0 && Clock::now() < deadline + 15s) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(in_flight.load(), 0);
  EXPECT_TRUE(s->stats().connected);
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu);
    keys = acked;
  }
  ASSERT_GT(keys.size(), 0u);
  for (const auto& k : keys) ASSERT_EQ(value_of(*s, k), k);
}

// --- expiry ---------------------------------------------------------------------------------

TEST_F(PostgresStoreTest, AnExpiredRowReadsAsAbsentAndCountsAsAbsentForExisted) {
  check_contract(check_an_expired_value_reads_as_absent);
}

TEST_F(PostgresStoreTest, TheWriterDeletesExpiredRowsWithoutReads) {
  auto s = open();
  ASSERT_TRUE(s);
  const std::uint64_t later = store::unix_now_ms() + 60'000;
  std::vector<Write> batch{put_expiring("live", "v", later), put("plain", "p")};
  for (int i = 0; i < 50; ++i) batch.push_back(put_expiring("gone" + std::to_string(i), "x", 1));
  ASSERT_TRUE(write_sync(*s, std::move(batch)).status.ok());
  const std::string count = "SELECT count(*) FROM \"" + table_ + "\"";
  EXPECT_EQ(query_column(count), "52\n");
  // The purge runs about once a second, idle or not.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (query_column(count) != "2\n" && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(query_column("SELECT convert_from(key, 'UTF8') FROM \"" + table_ + "\" ORDER BY 1"),
            "live\nplain\n")
      << s->stats().last_error;
  EXPECT_EQ(value_of(*s, "live"), "v");
}

TEST_F(PostgresStoreTest, AddsTheExpiryColumnToATableMadeBeforeIt) {
  ASSERT_EQ(exec_sql("CREATE TABLE \"" + table_ +
                     "\"(key bytea primary key, value bytea not null, "
                     "updated_at timestamptz not null default now())"),
            "");
  ASSERT_EQ(exec_sql("INSERT INTO \"" + table_ + "\"(key, value) VALUES ('old', 'v')"), "");
  auto s = open();
  ASSERT_TRUE(s);
  auto r = read_sync(*s, "old");
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.value, "v");
  EXPECT_EQ(r.expires_at_ms, 0u);
  const std::uint64_t later = store::unix_now_ms() + 60'000;
  ASSERT_TRUE(write_sync(*s, {put_expiring("old", "w", later)}).status.ok());
  EXPECT_EQ(read_sync(*s, "old").expires_at_ms, later);
  EXPECT_EQ(query_column("SELECT expires_at FROM \"" + table_ + "\""),
            std::to_string(later) + "\n");
}

// --- board rows ---------------------------------------------------------------------------------

// The board rows as a model: (board, member) -> (score bits, seq), applied op by op in the order
// the contract promises; the store must end up equal to it.
using BoardModel =
    std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::uint64_t>>;

void apply_row(BoardModel& m, const Write& w) {
  switch (w.kind) {
    case Write::Kind::board_set:
      m[{w.key, w.member}] = {std::bit_cast<std::uint64_t>(w.score), w.seq};
      break;
    case Write::Kind::board_remove:
      m.erase({w.key, w.member});
      break;
    case Write::Kind::board_drop:
      std::erase_if(m, [&](const auto& row) { return row.first.first == w.key; });
      break;
    default:
      break;
  }
}

BoardModel load_all(store::Store& s) {
  BoardModel m;
  const store::Status st = s.load_boards([&](const store::BoardRow& r) {
    const bool fresh = m.emplace(std::pair{std::string(r.board), std::string(r.member)},
                                 std::pair{std::bit_cast<std::uint64_t>(r.score), r.seq})
                           .second;
    EXPECT_TRUE(fresh) << "row visited twice";
  });
  EXPECT_TRUE(st.ok()) << st.message;
  return m;
}

std::string describe(const BoardModel& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    out += k.first + "/" + k.second + "=" + std::to_string(std::bit_cast<double>(v.first)) + "#" +
           std::to_string(v.second) + " ";
  }
  return out;
}

store::BoardPage board_sync(const std::function<void(store::BoardPageDone)>& start) {
  auto p = std::make_shared<std::promise<store::BoardPage>>();
  auto f = p->get_future();
  start([p](store::BoardPage page) { p->set_value(std::move(page)); });
  return wait_for(f);
}
store::BoardPage top(store::Store& s, const std::string& board, std::uint64_t offset,
                     std::uint64_t n) {
  return board_sync(
      [&](store::BoardPageDone d) { s.board_reader()->board_top(board, offset, n, std::move(d)); });
}
store::BoardPage member(store::Store& s, const std::string& board, const std::string& m) {
  return board_sync(
      [&](store::BoardPageDone d) { s.board_reader()->board_member(board, m, std::move(d)); });
}
store::BoardPage around(store::Store& s, const std::string& board, const std::string& m,
                        std::uint64_t n) {
  return board_sync(
      [&](store::BoardPageDone d) { s.board_reader()->board_around(board, m, n, std::move(d)); });
}
store::BoardPage info(store::Store& s, const std::string& board) {
  return board_sync(
      [&](store::BoardPageDone d) { s.board_reader()->board_info(board, std::move(d)); });
}

// "rank:member:score ..." of a page's entries.
std::string entries(const store::BoardPage& page) {
  std::string out;
  for (const auto& e : page.entries) {
    if (!out.empty()) out += ' ';
    out += std::to_string(e.rank) + ':' + e.member + ':' + std::to_string(e.score);
  }
  return out;
}

// Submits the batches (and clears, as empty optionals) while the committer is held, so they
// form one group; waits for every completion.
void write_one_group(store::PostgresStore& s,
                     const std::vector<std::optional<std::vector<Write>>>& ops) {
  std::vector<std::future<Code>> done;
  {
    CommitterGate gate(s);
    for (const auto& op : ops) {
      auto p = std::make_shared<std::promise<Code>>();
      done.push_back(p->get_future());
      if (op) {
        s.write(*op, [p](store::WriteResult r) { p->set_value(r.status.code); });
      } else {
        s.clear([p](store::Status st) { p->set_value(st.code); });
      }
    }
  }
  for (auto& f : done) EXPECT_EQ(wait_for(f), Code::ok);
}

TEST_F(PostgresStoreTest, CreatesTheBoardTableWithItsRankingIndex) {
  {
    auto s = open();
    ASSERT_TRUE(s);
    ASSERT_NE(s->board_reader(), nullptr);
    ASSERT_TRUE(write_sync(*s, {board_set("b", "m", 1.5, 7)}).status.ok());
  }
  EXPECT_EQ(exec_sql("SELECT board, member, score, seq FROM \"" + board_table_ + "\""), "");
  // The index that serves WHERE board = $1 ORDER BY score DESC, seq (with member: index-only
  // pages).
  EXPECT_EQ(exec_sql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE tablename = '" +
                     board_table_ +
                     "' AND indexdef LIKE '%(board, score DESC, seq) INCLUDE (member)') THEN RAISE "
                     "'no index'; "
                     "END IF; END $$"),
            "");
  auto s = open();  // reopened: the existing table is reused
  ASSERT_TRUE(s);
  EXPECT_EQ(describe(load_all(*s)), "b/m=1.500000#7 ");

  // A board table of another shape is named, not used; an empty name is refused.
  s.reset();
  ASSERT_EQ(exec_sql("DROP TABLE \"" + board_table_ + "\""), "");
  ASSERT_EQ(exec_sql("CREATE TABLE \"" + board_table_ + "\"(board text, member text)"), "");
  std::string error;
  EXPECT_FALSE(store::open_store("postgres:" + cluster.conninfo, options(), error));
  EXPECT_NE(error.find(board_table_), std::string::npos) << error;
  auto o = options();
  o.board_table = "";
  error.clear();
  EXPECT_FALSE(store::open_store("postgres:" + cluster.conninfo, o, error));
  EXPECT_NE(error.find("board table"), std::string::npos) << error;
}

TEST_F(PostgresStoreTest, BoardOpsOfOneGroupApplyInArrivalOrder) {
  auto s = open();
  ASSERT_TRUE(s);
  BoardModel model;
  const std::vector<Write> before{board_set("b1", "old", 1, 1), board_set("b1", "m1", 1, 2),
                                  board_set("b2", "x", 5, 1), board_set("b3", "keep", 2, 1)};
  ASSERT_TRUE(write_sync(*s, before).status.ok());
  for (const auto& w : before) apply_row(model, w);

  // One group: sets, removes and drops of the same rows and boards, within and across batches.
  const std::vector<std::optional<std::vector<Write>>> group{
      std::vector<Write>{board_set("b1", "m2", 2, 3), board_remove("b1", "m2"),
                         board_set("b1", "m1", 3, 4)},
      std::vector<Write>{board_drop("b1"),
                         board_set("b1", "new", 4, 5)},  // old and m1 go, new stays
      std::vector<Write>{board_set("b1", "m1", 6, 6)},   // after the drop: stays
      std::vector<Write>{board_remove("b2", "x"), board_set("b2", "x", 7, 2),
                         board_set("b2", "y", 7, 1)},
      std::vector<Write>{board_set("b4", "a", 1, 1), board_drop("b4")},  // gone within the group
      std::vector<Write>{board_drop("b5"), board_remove("b5", "none")},  // nothing to remove
      std::vector<Write>{board_set("b6", "s", 1, 1), board_drop("b6"), board_set("b6", "s", 2, 2),
                         board_remove("b6", "s"), board_set("b6", "t", 3, 3)},
  };
  const auto commits = s->stats().commits;
  const auto writes = s->stats().writes;
  write_one_group(pg(*s), group);
  std::uint64_t ops = 0;
  for (const auto& batch : group) {
    for (const auto& w : *batch) apply_row(model, w);
    ops += batch->size();
  }
  EXPECT_EQ(s->stats().commits, commits + 2);  // the gate's, then the whole group
  EXPECT_EQ(s->stats().writes, writes + 1 + ops);
  EXPECT_EQ(describe(load_all(*s)), describe(model));
  EXPECT_EQ(load_all(*s), model);
}

TEST_F(PostgresStoreTest, BoardOpsAreOrderedWithClearsInOneGroupAndAcross) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "before", 1, 1), put("k", "v")}).status.ok());
  write_one_group(pg(*s),
                  {std::vector<Write>{board_set("b", "wiped", 2, 2), board_set("c", "wiped", 1, 1)},
                   std::nullopt,  // clear
                   std::vector<Write>{board_set("b", "after", 3, 3), board_remove("c", "wiped")},
                   std::vector<Write>{board_drop("d"), board_set("d", "after", 4, 4)}, std::nullopt,
                   std::vector<Write>{board_set("e", "last", 5, 5), board_drop("b")}});
  EXPECT_EQ(describe(load_all(*s)), "e/last=5.000000#5 ");
  EXPECT_EQ(value_of(*s, "k"), "<absent>");  // clear() removes keys and board rows alike

  // Across groups (each write its own group), a random mix against the model.
  BoardModel model = load_all(*s);
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 60; ++round) {
    std::vector<Write> batch;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 6); i < n; ++i) {
      const std::string board = name("b", static_cast<long long>(rng() % 3));
      const std::string m = name("m", static_cast<long long>(rng() % 5));
      switch (rng() % 6) {
        case 0:
          batch.push_back(board_drop(board));
          break;
        case 1:
        case 2:
          batch.push_back(board_remove(board, m));
          break;
        default:
          batch.push_back(board_set(board, m, static_cast<double>(rng() % 100) / 10, rng() % 1000));
      }
    }
    if (round % 20 == 19) {
      ASSERT_TRUE(clear_sync(*s).ok());
      model.clear();
    }
    ASSERT_TRUE(write_sync(*s, batch).status.ok());
    for (const auto& w : batch) apply_row(model, w);
  }
  EXPECT_EQ(describe(load_all(*s)), describe(model));
}

TEST_F(PostgresStoreTest, RefusesBadBoardAndMemberNamesWithoutFailing) {
  auto s = open();
  ASSERT_TRUE(s);
  const std::string long_name(251, 'b');
  for (auto batch :
       {std::vector<Write>{board_set("ok", "m", 1, 1), board_set("", "m", 1, 1)},
        std::vector<Write>{board_set("ok", "m", 1, 1), board_set(long_name, "m", 1, 1)},
        std::vector<Write>{board_set("ok", "m", 1, 1), board_set("b", "", 1, 1)},
        std::vector<Write>{board_set("ok", "m", 1, 1), board_set("b", long_name, 1, 1)},
        std::vector<Write>{board_set("ok", "m", 1, 1), board_remove("b", "")},
        std::vector<Write>{board_set("ok", "m", 1, 1), board_remove("", "m")},
        std::vector<Write>{put("ok", "1"), board_drop("")},
        std::vector<Write>{put("ok", "1"), board_drop(long_name)}}) {
    auto r = write_sync(*s, batch);
    EXPECT_EQ(r.status.code, Code::failed);  // refused, nothing applied
    EXPECT_NE(r.status.message.find("1..250"), std::string::npos) << r.status.message;
  }
  // Beyond the names: what the rows' columns cannot rank as the in-memory boards do.
  for (auto batch :
       {std::vector<Write>{board_set("ok", "m", std::numeric_limits<double>::quiet_NaN(), 1)},
        std::vector<Write>{board_set("ok", "m", std::numeric_limits<double>::infinity(), 1)},
        std::vector<Write>{board_set("ok", "m", 1, std::uint64_t{1} << 63)}}) {
    EXPECT_EQ(write_sync(*s, batch).status.code, Code::failed);
  }
  EXPECT_TRUE(load_all(*s).empty());  // the whole batches were refused
  EXPECT_EQ(value_of(*s, "ok"), "<absent>");
  // 250 bytes is fine, for both.
  const std::string max_name(250, 'x');
  ASSERT_TRUE(write_sync(*s, {board_set(max_name, max_name, 1, 1)}).status.ok());
  EXPECT_EQ(load_all(*s).size(), 1u);
  EXPECT_FALSE(s->stats().failed);
  EXPECT_EQ(s->stats().errors, 11u);
}

TEST_F(PostgresStoreTest, BoardAndMemberNamesHoldArbitraryBytesApartFromKeys) {
  auto s = open();
  ASSERT_TRUE(s);
  const std::vector<std::string> names{std::string(1, '\0'),           "\xff", "'", "\"", "\\",
                                       std::string("a'b\0\"c\xff", 7), "x",    "X"};
  std::vector<Write> batch;
  BoardModel model;
  std::uint64_t seq = 0;
  for (const auto& b : names) {
    for (const auto& m : names) {
      ++seq;
      batch.push_back(board_set(b, m, static_cast<double>(seq % 3), seq));
    }
  }
  ASSERT_TRUE(write_sync(*s, batch).status.ok());
  for (const auto& w : batch) apply_row(model, w);
  EXPECT_EQ(load_all(*s), model);
  // The board "x" and the key "x" never touch each other.
  ASSERT_TRUE(write_sync(*s, {put("x", "value"), del("x"), put("x", "kept")}).status.ok());
  EXPECT_EQ(load_all(*s), model);
  ASSERT_TRUE(write_sync(*s, {board_drop("x")}).status.ok());
  apply_row(model, board_drop("x"));
  EXPECT_EQ(value_of(*s, "x"), "kept");
  EXPECT_EQ(load_all(*s), model);
  // Read back through the BoardReader too.
  const std::string nul_board(1, '\0');
  auto page = member(*s, nul_board, "'");
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  ASSERT_EQ(page.entries.size(), 1u);
  EXPECT_EQ(page.entries[0].member, "'");
  page = top(*s, "\xff", 0, 100);
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.entries.size(), names.size());
  std::set<std::string> got;
  for (const auto& e : page.entries) got.insert(e.member);
  EXPECT_EQ(got, std::set<std::string>(names.begin(), names.end()));
}

TEST_F(PostgresStoreTest, ScoresAndSeqsRoundTripExactly) {
  auto s = open();
  ASSERT_TRUE(s);
  const std::vector<double> scores{0.1,
                                   -1e308,
                                   5e-324,
                                   9007199254740993.0,  // 2^53 + 1 as a double
                                   9007199254740991.0,  // 2^53 - 1
                                   1.0 / 3,
                                   std::nextafter(1.0, 2.0),
                                   std::numeric_limits<double>::max(),
                                   std::numeric_limits<double>::lowest(),
                                   std::numeric_limits<double>::min(),
                                   -0.0,
                                   0.0,
                                   123456789.123456789};
  const std::uint64_t big = std::uint64_t{1} << 62;
  const std::vector<std::uint64_t> seqs{0, 1, big - 1, big, big + 1, (std::uint64_t{1} << 63) - 1};
  std::vector<Write> batch;
  BoardModel model;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    batch.push_back(board_set("scores", name("m", static_cast<long long>(i)), scores[i], i));
  }
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    batch.push_back(board_set("seqs", name("m", static_cast<long long>(i)), 1, seqs[i]));
  }
  ASSERT_TRUE(write_sync(*s, batch).status.ok());
  for (const auto& w : batch) apply_row(model, w);
  EXPECT_EQ(load_all(*s), model);  // bit for bit
  for (std::size_t i = 0; i < scores.size(); ++i) {
    auto page = member(*s, "scores", name("m", static_cast<long long>(i)));
    ASSERT_TRUE(page.status.ok()) << page.status.message;
    ASSERT_EQ(page.entries.size(), 1u);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(page.entries[0].score),
              std::bit_cast<std::uint64_t>(scores[i]))
        << i;
  }
  // Equal scores rank by seq, up to the largest.
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    auto page = member(*s, "seqs", name("m", static_cast<long long>(i)));
    ASSERT_EQ(page.entries.size(), 1u);
    EXPECT_EQ(page.entries[0].rank, i + 1);
  }
  auto page = info(*s, "scores");
  ASSERT_TRUE(page.status.ok());
  EXPECT_EQ(page.top_score, std::numeric_limits<double>::max());
  EXPECT_EQ(page.bottom_score, std::numeric_limits<double>::lowest());
}

TEST_F(PostgresStoreTest, LoadBoardsReturnsExactlyWhatWasWritten) {
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_TRUE(load_all(*s).empty());
  BoardModel model;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<Write> batch;
    for (int i = 0; i < 200; ++i) {
      const std::string board = name("board", static_cast<long long>(rng() % 10));
      const std::string m = name("member", static_cast<long long>(rng() % 300));
      if (rng() % 10 == 0) {
        batch.push_back(board_remove(board, m));
      } else {
        batch.push_back(
            board_set(board, m, std::ldexp(static_cast<double>(rng() % 1000000), -7), rng() >> 2));
      }
    }
    if (round == 10) batch.push_back(board_drop("board3"));
    ASSERT_TRUE(write_sync(*s, batch).status.ok());
    for (const auto& w : batch) apply_row(model, w);
  }
  EXPECT_EQ(load_all(*s), model);
  // A closed store refuses.
  s->close();
  EXPECT_EQ(s->load_boards([](const store::BoardRow&) {}).code, Code::closed);
}

// Writes rows boards of members_per_board members (batches of 10,000: one upsert each) and
// loads them back, printing the time the load took.
void load_timed(store::Store& s, int boards, int members_per_board) {
  const auto rows =
      static_cast<std::uint64_t>(boards) * static_cast<std::uint64_t>(members_per_board);
  std::vector<Write> batch;
  std::uint64_t seq = 0;
  const auto wrote = Clock::now();
  for (int b = 0; b < boards; ++b) {
    for (int m = 0; m < members_per_board; ++m) {
      batch.push_back(board_set(name("board", b), name("player:", m),
                                static_cast<double>(m % 100000) * 1.5, ++seq));
      if (batch.size() == 10000) {
        ASSERT_TRUE(write_sync(s, std::move(batch)).status.ok());
        batch.clear();
      }
    }
  }
  if (!batch.empty()) {
    ASSERT_TRUE(write_sync(s, std::move(batch)).status.ok());
  }
  const auto loading = Clock::now();
  std::uint64_t n = 0, seq_sum = 0;
  std::size_t bytes = 0;
  const store::Status st = s.load_boards([&](const store::BoardRow& r) {
    ++n;
    seq_sum += r.seq;
    bytes += r.board.size() + r.member.size();
  });
  const auto loaded = Clock::now();
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(n, rows);
  EXPECT_EQ(seq_sum, rows * (rows + 1) / 2);
  const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("load_boards: %llu rows (%zu name bytes) in %.1f ms (writing them took %.0f ms)\n",
              static_cast<unsigned long long>(n), bytes, ms(loaded - loading), ms(loading - wrote));
}

TEST_F(PostgresStoreTest, LoadBoardsOver100kRows) {
  auto s = open();
  ASSERT_TRUE(s);
  load_timed(*s, 4, 25000);
}

// The startup target (1M members in well under 2 s): run by hand with
// --gtest_also_run_disabled_tests --gtest_filter='*Million*'.
TEST_F(PostgresStoreTest, DISABLED_LoadBoardsOfAMillionRows) {
  auto s = open();
  ASSERT_TRUE(s);
  load_timed(*s, 1, 1000000);
  for (int i = 0; i < 2; ++i) {  // again, warm
    const auto start = Clock::now();
    std::uint64_t n = 0;
    ASSERT_TRUE(s->load_boards([&](const store::BoardRow&) { ++n; }).ok());
    std::printf("load_boards again: %llu rows in %.1f ms\n", static_cast<unsigned long long>(n),
                std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  // What the database-only baseline costs per read on that board (one call each, warm).
  const auto timed = [](const char* what, auto call) {
    call();
    const auto start = Clock::now();
    const store::BoardPage page = call();
    std::printf("%-34s %8.2f ms (%s, %zu entries)\n", what,
                std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                store::to_string(page.status.code), page.entries.size());
  };
  timed("top(0, 10)", [&] { return top(*s, "board0", 0, 10); });
  timed("top(500000, 10)", [&] { return top(*s, "board0", 500000, 10); });
  timed("member(rank 1)", [&] { return member(*s, "board0", "player:99999"); });
  timed("member(rank ~500k)", [&] { return member(*s, "board0", "player:50000"); });
  timed("around(rank ~500k, 5)", [&] { return around(*s, "board0", "player:50000", 5); });
  timed("info", [&] { return info(*s, "board0"); });
}

TEST_F(PostgresStoreTest, BoardTopRanksByScoreThenSeq) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "c", 10, 5), board_set("b", "a", 10, 2),
                              board_set("b", "top", 20, 9), board_set("b", "low", 5, 1),
                              board_set("b", "d", 10, 7), board_set("other", "z", 100, 1)})
                  .status.ok());
  auto page = top(*s, "b", 0, 3);
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.members, 0u);  // not counted: a page never counts its board
  EXPECT_EQ(entries(page), "1:top:20.000000 2:a:10.000000 3:c:10.000000");
  page = top(*s, "b", 2, 2);
  EXPECT_EQ(entries(page), "3:c:10.000000 4:d:10.000000");
  page = top(*s, "b", 0, 100);  // n larger than the board
  EXPECT_EQ(entries(page),
            "1:top:20.000000 2:a:10.000000 3:c:10.000000 4:d:10.000000 5:low:5.000000");
  page = top(*s, "b", 4, UINT64_MAX);
  EXPECT_EQ(entries(page), "5:low:5.000000");
  for (std::uint64_t offset : {std::uint64_t{5}, std::uint64_t{6}, UINT64_MAX}) {
    page = top(*s, "b", offset, 3);  // past the end: no entries, but the board is found
    ASSERT_TRUE(page.status.ok()) << page.status.message;
    EXPECT_TRUE(page.entries.empty());
  }
  // A later set moves a member; equal scores keep their seq order.
  ASSERT_TRUE(write_sync(*s, {board_set("b", "low", 10, 3)}).status.ok());
  EXPECT_EQ(entries(top(*s, "b", 1, 4)),
            "2:a:10.000000 3:low:10.000000 4:c:10.000000 5:d:10.000000");
}

// The board reads as PostgreSQL plans them for a board of 20,000 members after VACUUM ANALYZE
// (what autovacuum does after a load), custom and generic plans alike: a top page deep in the
// board is an index-only scan of the ranking index with LIMIT/OFFSET and no count of the board
// (no Aggregate); a member's rank is counted on that index, index-only; no sequential or bitmap
// heap scan anywhere.
TEST_F(PostgresStoreTest, BoardTopIsAnIndexOnlyScanAndRanksCountTheIndex) {
  auto s = open();
  ASSERT_TRUE(s);
  std::vector<Write> batch;
  for (int m = 0; m < 20000; ++m) batch.push_back(board_set("b", name("p", m), m % 5000, m + 1));
  batch.push_back(board_set("a", "x", 1, 1));  // a small board beside it, sorting first
  ASSERT_TRUE(write_sync(*s, std::move(batch)).status.ok());
  ASSERT_EQ(exec_sql("VACUUM ANALYZE \"" + board_table_ + "\""), "");
  std::map<std::string, std::string> sql;
  for (const auto& st : store::detail::board_read_statements("\"" + board_table_ + "\""))
    sql[st.name] = st.sql;
  const std::string index = "using \"" + board_table_ + "_rank\" on";  // quoted: mixed case
  for (const bool generic : {false, true}) {
    const std::string top =
        explain(sql["cache_board_top"], "bytea, int8, int8", "'b', 10000, 100", generic);
    // The small board's page and existence: index probes too, no scan of the big board's rows.
    const std::string small =
        explain(sql["cache_board_top"], "bytea, int8, int8", "'a', 0, 100", generic);
    EXPECT_NE(small.find("Index Only Scan " + index), std::string::npos) << small;
    EXPECT_EQ(small.find("Seq Scan"), std::string::npos) << small;
    EXPECT_NE(top.find("Index Only Scan " + index), std::string::npos) << top;
    EXPECT_NE(top.find("Heap Fetches: 0"), std::string::npos) << top;
    EXPECT_EQ(top.find("Aggregate"), std::string::npos) << top;  // no count(*) of the board
    EXPECT_EQ(top.find("Seq Scan"), std::string::npos) << top;
    EXPECT_NE(top.find("Limit"), std::string::npos) << top;
    const std::string rank =
        explain(sql["cache_board_member"], "bytea, bytea", "'b', 'p2500'", generic);
    EXPECT_NE(rank.find("Index Only Scan " + index), std::string::npos) << rank;
    EXPECT_EQ(rank.find("Seq Scan"), std::string::npos) << rank;
    EXPECT_EQ(rank.find("Bitmap"), std::string::npos) << rank;
  }
  EXPECT_EQ(entries(top(*s, "a", 0, 100)), "1:x:1.000000");
  EXPECT_EQ(top(*s, "none", 0, 100).status.code, Code::not_found);
  // And the answers: ranks 10,001..10,100 (scores descending, ties by seq), and p2500's rank.
  const auto page = top(*s, "b", 10000, 100);
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  ASSERT_EQ(page.entries.size(), 100u);
  EXPECT_EQ(page.entries.front().rank, 10001u);
  EXPECT_EQ(page.entries.front().score, 2499.0);  // scores 4999..2500 hold ranks 1..10,000
  const auto m = member(*s, "b", "p2500");        // score 2500: 4 members each above 2499
  ASSERT_TRUE(m.status.ok()) << m.status.message;
  EXPECT_EQ(m.entries[0].rank, 2499u * 4 + 1);
}

// The largest row count any node of an EXPLAIN ANALYZE produced ("actual ... rows=N").
std::uint64_t max_actual_rows(const std::string& plan) {
  std::uint64_t most = 0;
  for (std::size_t at = plan.find("(actual time="); at != std::string::npos;
       at = plan.find("(actual time=", at + 1)) {
    const std::size_t rows = plan.find(" rows=", at);
    if (rows == std::string::npos) break;
    most = std::max<std::uint64_t>(most, std::stoull(plan.substr(rows + 6)));
  }
  return most;
}

// board_around and board_info as PostgreSQL plans them on the same 20,000-member board, custom
// and generic plans alike: no count(*) of the board. A window around a member near the top reads
// a handful of index entries (its rank counts only the rows ranked above it, on the index); one
// ranked ~10,000th reads about its rank's worth, never the whole board; info is two one-entry
// probes of the index (max, min); no sequential or bitmap heap scan anywhere.
TEST_F(PostgresStoreTest, BoardAroundAndInfoCountOnlyTheRowsAheadOnTheIndex) {
  auto s = open();
  ASSERT_TRUE(s);
  constexpr std::uint64_t kMembers = 20000;
  std::vector<Write> batch;
  for (std::uint64_t m = 0; m < kMembers; ++m)
    batch.push_back(
        board_set("b", name("p", static_cast<long long>(m)), static_cast<double>(m % 5000), m + 1));
  batch.push_back(board_set("a", "x", 1, 1));
  ASSERT_TRUE(write_sync(*s, std::move(batch)).status.ok());
  ASSERT_EQ(exec_sql("VACUUM ANALYZE \"" + board_table_ + "\""), "");
  std::map<std::string, std::string> sql;
  for (const auto& st : store::detail::board_read_statements("\"" + board_table_ + "\""))
    sql[st.name] = st.sql;
  const std::string index = "using \"" + board_table_ + "_rank\" on";
  for (const bool generic : {false, true}) {
    // p9999: score 4999, the second of the four top scores (seq order): rank 2.
    const std::string near_top =
        explain(sql["cache_board_around"], "bytea, bytea, int8", "'b', 'p9999', 5", generic);
    const std::string middle =
        explain(sql["cache_board_around"], "bytea, bytea, int8", "'b', 'p2500', 5", generic);
    const std::string info = explain(sql["cache_board_info"], "bytea", "'b'", generic);
    for (const std::string* plan : {&near_top, &middle, &info}) {
      EXPECT_NE(plan->find("Index Only Scan " + index), std::string::npos) << *plan;
      EXPECT_EQ(plan->find("Seq Scan"), std::string::npos) << *plan;
      EXPECT_EQ(plan->find("Bitmap"), std::string::npos) << *plan;
    }
    EXPECT_LE(max_actual_rows(near_top), 16u) << near_top;
    EXPECT_LT(max_actual_rows(middle), 10100u) << middle;  // rank 9,997: the rows above it
    EXPECT_LE(max_actual_rows(info), 1u) << info;
    EXPECT_NE(info.find("Heap Fetches: 0"), std::string::npos) << info;
  }
  // And the answers (members is the caller's: not filled).
  auto page = around(*s, "b", "p9999", 2);
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.members, 0u);
  EXPECT_EQ(entries(page),
            "1:p4999:4999.000000 2:p9999:4999.000000 3:p14999:4999.000000 4:p19999:4999.000000");
  page = around(*s, "b", "p2500", 0);
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(entries(page), "9997:p2500:2500.000000");  // 2499 x 4 above it
  page = info(*s, "b");
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.members, 0u);
  EXPECT_EQ(page.top_score, 4999.0);
  EXPECT_EQ(page.bottom_score, 0.0);
  EXPECT_EQ(info(*s, "a").top_score, 1.0);
  EXPECT_EQ(info(*s, "none").status.code, Code::not_found);
  EXPECT_EQ(around(*s, "none", "x", 1).status.code, Code::not_found);
}

TEST_F(PostgresStoreTest, BoardMemberRankCountsTies) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "c", 10, 5), board_set("b", "a", 10, 2),
                              board_set("b", "top", 20, 9), board_set("b", "low", 5, 1),
                              board_set("b", "d", 10, 7)})
                  .status.ok());
  for (auto [m, rank, score] :
       {std::tuple{"top", 1, 20.0}, std::tuple{"a", 2, 10.0}, std::tuple{"c", 3, 10.0},
        std::tuple{"d", 4, 10.0}, std::tuple{"low", 5, 5.0}}) {
    auto page = member(*s, "b", m);
    ASSERT_TRUE(page.status.ok()) << m << ": " << page.status.message;
    ASSERT_EQ(page.entries.size(), 1u);
    EXPECT_EQ(page.entries[0].rank, static_cast<std::uint64_t>(rank)) << m;
    EXPECT_EQ(page.entries[0].member, m);
    EXPECT_EQ(page.entries[0].score, score);
  }
}

TEST_F(PostgresStoreTest, BoardAroundIsClippedAtBothEnds) {
  auto s = open();
  ASSERT_TRUE(s);
  std::vector<Write> batch;
  for (int i = 1; i <= 10; ++i)
    batch.push_back(board_set("b", name("r", i), 100 - i, 1));  // rank i
  ASSERT_TRUE(write_sync(*s, batch).status.ok());
  auto ranks = [](const store::BoardPage& page) {
    std::string out;
    for (const auto& e : page.entries) {
      EXPECT_EQ(e.member, name("r", static_cast<long long>(e.rank)));
      EXPECT_EQ(e.score, 100.0 - static_cast<double>(e.rank));
      out += std::to_string(e.rank) + ' ';
    }
    return out;
  };
  auto page = around(*s, "b", "r1", 2);
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.members, 0u);  // not filled: no count(*) of the board (the server keeps it)
  EXPECT_EQ(ranks(page), "1 2 3 ");
  EXPECT_EQ(ranks(around(*s, "b", "r2", 2)), "1 2 3 4 ");
  EXPECT_EQ(ranks(around(*s, "b", "r5", 2)), "3 4 5 6 7 ");
  EXPECT_EQ(ranks(around(*s, "b", "r9", 2)), "7 8 9 10 ");
  EXPECT_EQ(ranks(around(*s, "b", "r10", 2)), "8 9 10 ");
  EXPECT_EQ(ranks(around(*s, "b", "r4", 0)), "4 ");
  page = around(*s, "b", "r6", UINT64_MAX);
  EXPECT_EQ(ranks(page), "1 2 3 4 5 6 7 8 9 10 ");
  // Ties: ranks by seq, the window too.
  ASSERT_TRUE(write_sync(*s, {board_set("t", "x", 1, 3), board_set("t", "y", 1, 1),
                              board_set("t", "z", 1, 2)})
                  .status.ok());
  EXPECT_EQ(entries(around(*s, "t", "z", 1)), "1:y:1.000000 2:z:1.000000 3:x:1.000000");
  EXPECT_EQ(entries(around(*s, "t", "x", 1)), "2:z:1.000000 3:x:1.000000");
}

// Every read against a model, on a board of many ties (three scores, shuffled seqs), so that
// windows and pages start and end inside runs of equal scores.
TEST_F(PostgresStoreTest, BoardReadsMatchAModelWithManyTies) {
  auto s = open();
  ASSERT_TRUE(s);
  constexpr int kMembers = 40;
  std::vector<std::uint64_t> seqs(kMembers);
  for (int i = 0; i < kMembers; ++i) seqs[i] = static_cast<std::uint64_t>(i) * 3 + 1;
  std::mt19937_64 rng(99);
  std::shuffle(seqs.begin(), seqs.end(), rng);
  struct Row {
    std::string member;
    double score;
    std::uint64_t seq;
  };
  std::vector<Row> ranked;
  std::vector<Write> batch;
  for (int i = 0; i < kMembers; ++i) {
    ranked.push_back({name("m", i), static_cast<double>(rng() % 3), seqs[i]});
    batch.push_back(board_set("b", ranked.back().member, ranked.back().score, ranked.back().seq));
  }
  ASSERT_TRUE(write_sync(*s, batch).status.ok());
  std::sort(ranked.begin(), ranked.end(), [](const Row& a, const Row& b) {
    return a.score != b.score ? a.score > b.score : a.seq < b.seq;
  });
  auto expect = [&](std::size_t first, std::size_t last) {  // ranks first..last, clipped
    std::string out;
    for (std::size_t r = std::max<std::size_t>(first, 1);
         r <= std::min<std::size_t>(last, kMembers); ++r) {
      if (!out.empty()) out += ' ';
      out += std::to_string(r) + ':' + ranked[r - 1].member + ':' +
             std::to_string(ranked[r - 1].score);
    }
    return out;
  };
  for (std::size_t rank = 1; rank <= kMembers; ++rank) {
    const std::string& m = ranked[rank - 1].member;
    auto page = member(*s, "b", m);
    ASSERT_TRUE(page.status.ok()) << page.status.message;
    EXPECT_EQ(page.entries[0].rank, rank) << m;
    for (std::size_t n : {0, 1, 3}) {
      page = around(*s, "b", m, n);
      EXPECT_EQ(entries(page), expect(rank > n ? rank - n : 1, rank + n)) << m << " n=" << n;
    }
  }
  for (std::size_t offset = 0; offset <= kMembers; offset += 7) {
    EXPECT_EQ(entries(top(*s, "b", offset, 7)), expect(offset + 1, offset + 7)) << offset;
  }
}

TEST_F(PostgresStoreTest, BoardInfoAndNotFound) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "a", -2.5, 1), board_set("b", "c", 7.25, 2),
                              board_set("b", "d", 0, 3)})
                  .status.ok());
  auto page = info(*s, "b");
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.members, 0u);  // not filled: no count(*) of the board (the server keeps it)
  EXPECT_EQ(page.top_score, 7.25);
  EXPECT_EQ(page.bottom_score, -2.5);
  EXPECT_TRUE(page.entries.empty());

  ASSERT_TRUE(write_sync(*s, {board_set("gone", "m", 1, 1), board_drop("gone"), put("key", "v")})
                  .status.ok());
  for (const std::string board : {"none", "gone", "key"}) {  // a key is no board
    for (const auto& p : {top(*s, board, 0, 10), member(*s, board, "a"), around(*s, board, "a", 2),
                          info(*s, board)}) {
      EXPECT_EQ(p.status.code, Code::not_found) << board;
      EXPECT_EQ(p.status.message, "board not found") << board;
      EXPECT_TRUE(p.entries.empty());
    }
  }
  for (const auto& p : {member(*s, "b", "nobody"), around(*s, "b", "nobody", 2)}) {
    EXPECT_EQ(p.status.code, Code::not_found);
    EXPECT_EQ(p.status.message, "member not found");
    EXPECT_TRUE(p.entries.empty());
  }
  const auto st = s->stats();
  EXPECT_EQ(st.reads, 1u + 3 * 4 + 2);  // each board read counts once
  EXPECT_EQ(st.errors, 0u);             // not_found is no error
}

TEST_F(PostgresStoreTest, BoardReadsCompleteOffTheCallerAndClosedAfterClose) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "m", 1, 1)}).status.ok());
  const auto caller = std::this_thread::get_id();
  // Many at once: served by every reader, each answered.
  constexpr int kCalls = 40;
  std::vector<std::future<std::pair<store::BoardPage, bool>>> fs;
  for (int i = 0; i < kCalls; ++i) {
    auto p = std::make_shared<std::promise<std::pair<store::BoardPage, bool>>>();
    fs.push_back(p->get_future());
    auto done = [p, caller](store::BoardPage page) {
      p->set_value({std::move(page), std::this_thread::get_id() == caller});
    };
    switch (i % 4) {
      case 0:
        s->board_reader()->board_top("b", 0, 10, done);
        break;
      case 1:
        s->board_reader()->board_member("b", "m", done);
        break;
      case 2:
        s->board_reader()->board_around("b", "m", 3, done);
        break;
      default:
        s->board_reader()->board_info("b", done);
    }
    if (i % 5 == 0) s->read("k", [](store::ReadResult) {});  // mixed with key reads
  }
  for (auto& f : fs) {
    auto [page, was_inline] = wait_for(f);
    EXPECT_TRUE(page.status.ok()) << page.status.message;
    EXPECT_FALSE(was_inline);
  }
  s->close();
  for (int i = 0; i < 4; ++i) {
    auto p = std::make_shared<std::promise<std::pair<Code, bool>>>();
    auto f = p->get_future();
    auto done = [p, caller](store::BoardPage page) {
      p->set_value({page.status.code, std::this_thread::get_id() == caller});
    };
    if (i == 0) s->board_reader()->board_top("b", 0, 10, done);
    if (i == 1) s->board_reader()->board_member("b", "m", done);
    if (i == 2) s->board_reader()->board_around("b", "m", 1, done);
    if (i == 3) s->board_reader()->board_info("b", done);
    auto [code, was_inline] = wait_for(f);
    EXPECT_EQ(code, Code::closed);
    EXPECT_FALSE(was_inline);
  }
}

// A dropped board table fails board writes and reads with io_error (nothing sticky); with the
// table back, the connections work again. Connections made while it was missing could not
// prepare their statements and send the SQL itself: that path answers the same.
TEST_F(PostgresStoreTest, BoardStatementErrorsAndUnpreparedStatements) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_sync(*s, {board_set("b", "a", 2, 1), board_set("b", "b", 1, 2)}).status.ok());
  ASSERT_EQ(exec_sql("DROP TABLE \"" + board_table_ + "\""), "");
  auto r = write_sync(*s, {board_set("b", "c", 3, 3)});
  EXPECT_EQ(r.status.code, Code::io_error);
  EXPECT_NE(r.status.message.find("commit failed"), std::string::npos) << r.status.message;
  EXPECT_EQ(top(*s, "b", 0, 1).status.code, Code::io_error);
  EXPECT_EQ(s->load_boards([](const store::BoardRow&) {}).code, Code::io_error);
  EXPECT_FALSE(s->stats().failed);

  // Every store connection is cut while the table is missing: they reconnect unprepared.
  ASSERT_EQ(exec_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                     "application_name = 'cache_server store' AND pid <> pg_backend_pid()"),
            "");
  const auto deadline = Clock::now() + 15s;
  while (Clock::now() < deadline && s->stats().reconnects < 4) std::this_thread::sleep_for(50ms);
  ASSERT_GE(s->stats().reconnects, 4u);
  ASSERT_EQ(exec_sql("CREATE TABLE \"" + board_table_ +
                     "\"(board bytea, member bytea, score double precision not null, "
                     "seq bigint not null, primary key (board, member))"),
            "");
  ASSERT_TRUE(write_sync(*s, {board_set("b", "a", 2, 1), board_set("b", "b", 1, 2),
                              board_set("b", "c", 1, 1), board_remove("b", "c"), board_drop("x")})
                  .status.ok());
  ASSERT_TRUE(write_sync(*s, {board_remove("b", "c"), board_drop("x")}).status.ok());
  EXPECT_EQ(entries(top(*s, "b", 0, 5)), "1:a:2.000000 2:b:1.000000");
  auto page = member(*s, "b", "b");
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.entries[0].rank, 2u);
  EXPECT_EQ(entries(around(*s, "b", "a", 1)), "1:a:2.000000 2:b:1.000000");
  page = info(*s, "b");
  ASSERT_TRUE(page.status.ok()) << page.status.message;
  EXPECT_EQ(page.top_score, 2.0);
  EXPECT_EQ(describe(load_all(*s)), "b/a=2.000000#1 b/b=1.000000#2 ");
}

// --- close -----------------------------------------------------------------------------------

TEST_F(PostgresStoreTest, CloseCompletesQueuedOperationsThenRefusesNewOnes) {
  auto s = open();
  ASSERT_TRUE(s);
  check_close_completes_queued_operations_then_refuses_new_ones(*s);
  s.reset();
  auto again = open();
  ASSERT_TRUE(again);
  expect_closed_store_state(*again);
}

TEST_F(PostgresStoreTest, DestructorClosesAndCompletesQueuedWrites) {
  check_destructor_closes_and_completes_queued_writes([this] { return open(); });
}

TEST_F(PostgresStoreTest, ManyThreadsReadAndWriteConcurrently) {
  auto s = open(3);
  ASSERT_TRUE(s);
  constexpr int kThreads = 4, kOps = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        const std::string key = name("t", t * 1000 + i);
        auto w = write_sync(*s, {put(key, key)});
        EXPECT_TRUE(w.status.ok()) << w.status.message;
        EXPECT_EQ(value_of(*s, key), key);  // read-your-acknowledged-writes
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(s->stats().writes, static_cast<std::uint64_t>(kThreads * kOps));
}

}  // namespace
