// The PostgreSQL guard in its layers: the text rules refuse every line of the hostile corpus
// (tests/engine/postgres_hostile.txt), and sent past them, the server's own layers (a READ ONLY
// transaction, the role's privileges, one statement, rollback) refuse or defuse each one; every
// table's checksum is the same afterwards. Also a timeout and a cancel that leave the engine
// usable.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <stop_token>
#include <thread>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "engine/engine_lookup.h"
#include "support/pg_server.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::test::SharedPgServer;

struct Hostile {
  std::string rule;
  bool refused = true;  // by the server's layers too
  std::string sql;
};

std::vector<Hostile> Corpus() {
  std::ifstream in(quarry::testing::SourceDir() / "tests/engine/postgres_hostile.txt");
  std::vector<Hostile> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t a = line.find(" | ");
    const size_t b = line.find(" | ", a + 3);
    if (a == std::string::npos || b == std::string::npos) {
      ADD_FAILURE() << "malformed corpus line: " << line;
      continue;
    }
    out.push_back(
        {line.substr(0, a), line.substr(a + 3, b - a - 3) == "refused", line.substr(b + 3)});
  }
  return out;
}

TEST(PostgresGuard, TextRules) {
  const auto corpus = Corpus();
  ASSERT_GE(corpus.size(), 90u);
  for (const Hostile& h : corpus) {
    const auto v = CheckQueryText(h.sql, Dialect::kPostgreSQL, {"track"});
    ASSERT_TRUE(v.has_value()) << "passed the guard: " << h.sql;
    EXPECT_EQ(v->failure_class, FailureClass::kGuardViolation) << h.sql;
    EXPECT_EQ(v->rule, h.rule) << h.sql << "\n" << v->message;
  }
  for (const char* ok :
       {"SELECT * FROM track", "select name from track where name like '%;%'",
        "WITH t AS (SELECT 1 AS x) SELECT x FROM t", "VALUES (1), (2)", "TABLE genre",
        "(SELECT 1) UNION (SELECT 2)", "SELECT 'pg_sleep' AS s, $$for update$$ AS t, 'f(x)' AS u",
        "SELECT \"into\", updated_at FROM t", "SELECT current_setting('TimeZone')",
        "SELECT name FROM sales.\"Order Items\" ORDER BY 1 FOR", "SELECT 1;"}) {
    // The last two are the server's to judge (a syntax error, a trailing ';').
    EXPECT_EQ(CheckQueryText(ok, Dialect::kPostgreSQL, {}), std::nullopt) << ok;
  }
  // A call in a string may run (ts_rewrite, a function with EXECUTE): refused, even in a string
  // that is only shown. Strings in strings are read too.
  for (const char* hidden :
       {"SELECT 'pg_sleep(1)'", "SELECT concat('SELECT ''x'', ''pg_sleep(2)''')",
        "SELECT E'pg_sleep(1)'"}) {
    const auto v = CheckQueryText(hidden, Dialect::kPostgreSQL, {});
    ASSERT_TRUE(v.has_value()) << hidden;
    EXPECT_EQ(v->rule, "sleep") << hidden;
    EXPECT_NE(v->message.find("a string holds a call to PG_SLEEP()"), std::string::npos)
        << v->message;
  }
  // PostgreSQL ends a -- comment at a carriage return too: the call after it is seen.
  const auto cr =
      CheckQueryText("SELECT 1 --x\r, pg_read_file('/etc/passwd')", Dialect::kPostgreSQL, {});
  ASSERT_TRUE(cr.has_value());
  EXPECT_EQ(cr->rule, "file_access");
  // What the guard cannot read is refused, not passed on to a lexer that may read it otherwise.
  const auto open_string = CheckQueryText("SELECT 'abc", Dialect::kPostgreSQL, {});
  ASSERT_TRUE(open_string.has_value());
  EXPECT_EQ(open_string->failure_class, FailureClass::kSyntaxError);
  EXPECT_EQ(CheckQueryText("SELECT $a1$'$a1$ AS quote, E'\\'' AS also", Dialect::kPostgreSQL, {}),
            std::nullopt);
  // DuckDB's FROM-first and SHOW stay DuckDB's: PostgreSQL refuses them.
  EXPECT_EQ(CheckQueryText("FROM track", Dialect::kDuckDB, {}), std::nullopt);
  EXPECT_EQ(CheckQueryText("FROM track", Dialect::kPostgreSQL, {})->rule, "read_only");
  EXPECT_EQ(
      CheckQueryText("SELECT pg_sleep(1)", Dialect::kPostgreSQL, {})->message,
      "guard: PG_SLEEP() only waits, which is not allowed: only a single read-only query may run");
}

TEST(PostgresGuard, HostileCorpusRefusedTwiceDatabaseUnchanged) {
  const auto& pg = SharedPgServer();
  const auto chinook_before = pg.TableChecksums("chinook");
  const auto types_before = pg.TableChecksums("quarry_types");
  ASSERT_EQ(chinook_before.size(), 11u);
  auto opened = Open({pg.Url("chinook", "reader")}, NoProfile());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Engine& engine = **opened;
  int refused_by_server = 0;
  for (const Hostile& h : Corpus()) {
    auto guarded = engine.Query(h.sql, Limits{});
    ASSERT_FALSE(guarded.has_value()) << "ran: " << h.sql;
    EXPECT_EQ(guarded.error().failure_class, FailureClass::kGuardViolation) << h.sql;
    EXPECT_EQ(guarded.error().rule, h.rule) << h.sql;
    auto past = internal::QueryPostgresPastTextGuard(engine, h.sql, Limits{5000, 10, {}});
    if (h.refused) {
      EXPECT_FALSE(past.has_value()) << "the server ran: " << h.sql;
      refused_by_server += past.has_value() ? 0 : 1;
    }
    // Whatever happened, the session is back to read-only, idle and in no transaction.
    auto state = engine.Query(
        "SELECT current_setting('default_transaction_read_only'), "
        "current_setting('transaction_read_only')",
        Limits{});
    ASSERT_TRUE(state.has_value()) << h.sql << ": " << state.error().message;
    EXPECT_EQ(state->rows[0][0], "on") << h.sql;
    EXPECT_EQ(state->rows[0][1], "on") << h.sql;
  }
  EXPECT_GE(refused_by_server, 70);
  EXPECT_EQ(pg.TableChecksums("chinook"), chinook_before);
  EXPECT_EQ(pg.TableChecksums("quarry_types"), types_before);
  // Nothing that outlives a transaction was left behind: no advisory lock, no large object,
  // no file in the data directory, no prepared statement.
  EXPECT_EQ(pg.Rows("chinook", "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")[0][0],
            "0");
  EXPECT_EQ(pg.Rows("chinook", "SELECT count(*) FROM pg_largeobject_metadata")[0][0], "0");
  for (const char* file : {"quarry-stolen.csv", "quarry-pwned", "quarry-lo"}) {
    EXPECT_EQ(pg.Rows("chinook", std::string("SELECT pg_stat_file('") + file + "', true)")[0][0],
              std::nullopt)
        << file;
  }
  auto prepared = engine.Query("SELECT count(*) FROM pg_prepared_statements", Limits{});
  ASSERT_TRUE(prepared.has_value());
  EXPECT_EQ(prepared->rows[0][0], "0");
}

// A heavy query that runs for minutes: a cross join counted. Both it and pg_sleep(30) run 30 s
// or more unstopped, so a bound of 10 s proves the stop without timing the machine (the
// sanitizer build on a loaded CI machine took 2.5 s to connect, cancel and reconnect).
constexpr int64_t kFarUnderTheUnstoppedRunMs = 10000;
constexpr const char* kHeavy =
    "SELECT count(*) FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100000) b";

TEST(PostgresGuard, TimeoutAndCancelLeaveTheEngineUsable) {
  const auto& pg = SharedPgServer();
  auto opened = Open({pg.Url("chinook", "reader")}, NoProfile());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Engine& engine = **opened;
  for (const std::string& sql : {std::string("SELECT pg_sleep(30)"), std::string(kHeavy)}) {
    const auto start = std::chrono::steady_clock::now();
    auto slow = internal::QueryPostgresPastTextGuard(engine, sql, Limits{300, 10, {}});
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    ASSERT_FALSE(slow.has_value()) << sql;
    EXPECT_EQ(slow.error().failure_class, FailureClass::kTimeout) << slow.error().message;
    EXPECT_EQ(slow.error().message,
              "the query was interrupted after 300 ms: simplify it, filter "
              "earlier, or aggregate before joining");
    EXPECT_LT(ms, kFarUnderTheUnstoppedRunMs) << sql;
    auto next = engine.Query("SELECT count(*) FROM track", Limits{});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ(next->rows[0][0], "3503");
  }
  // Through the guard, the heavy query times out the same way.
  auto guarded = engine.Query(kHeavy, Limits{300, 10, {}});
  ASSERT_FALSE(guarded.has_value());
  EXPECT_EQ(guarded.error().failure_class, FailureClass::kTimeout);
  for (const std::string& sql : {std::string("SELECT pg_sleep(30)"), std::string(kHeavy)}) {
    std::stop_source stop;
    std::jthread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop.request_stop();
    });
    const auto start = std::chrono::steady_clock::now();
    auto stopped =
        internal::QueryPostgresPastTextGuard(engine, sql, Limits{60000, 10, stop.get_token()});
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    ASSERT_FALSE(stopped.has_value()) << sql;
    EXPECT_EQ(stopped.error().code, Error::Code::kCancelled) << stopped.error().message;
    EXPECT_LT(ms, kFarUnderTheUnstoppedRunMs) << sql;
    // The server really stopped it: no backend of this test still runs the query.
    auto running =
        pg.Rows("chinook",
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND query LIKE '%generate_series(1, 100000)%' AND pid <> pg_backend_pid()");
    EXPECT_EQ(running[0][0], "0");
    auto next = engine.Query("SELECT count(*) FROM genre", Limits{});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ(next->rows[0][0], "25");
  }
  // The server ends the session (a restart, an administrator): the next query reconnects.
  EXPECT_EQ(pg.Rows("chinook",
                    "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
                    "pg_stat_activity WHERE application_name = 'quarry') t")[0][0],
            "1");
  auto revived = engine.Query("SELECT count(*) FROM album", Limits{});
  ASSERT_TRUE(revived.has_value()) << revived.error().message;
  EXPECT_EQ(revived->rows[0][0], "347");
  auto settings = engine.Query("SELECT current_setting('DateStyle')", Limits{});
  ASSERT_TRUE(settings.has_value());
  EXPECT_EQ(settings->rows[0][0], "ISO, YMD");
}

}  // namespace
}  // namespace quarry::engine
