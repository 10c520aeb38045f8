// Data that attacks while it is opened or queried (issue 22): a .duckdb file whose views read
// other files, a working directory whose ./.tmp is a symlink to /, SQL hidden in strings, and
// views that never end. Every file read is refused by DuckDB itself (not only the text
// guard), every view that fails or runs long becomes a note on its card, and opening is bounded
// by the load timeout and the stop token.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <duckdb.h>
#include <sqlite3.h>
#include <stop_token>
#include <thread>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "engine/engine_lookup.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using Clock = std::chrono::steady_clock;
using quarry::testing::TempDir;

constexpr const char* kSecret = "OPENROUTER_API_KEY=sk-or-v1-hostile-test-secret";

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Runs `statements` on a new DuckDB database at `path` (write mode, external access on).
void MakeDuckDb(const std::filesystem::path& path, const std::vector<std::string>& statements) {
  duckdb_database db;
  duckdb_connection conn;
  ASSERT_EQ(duckdb_open(path.c_str(), &db), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
  for (const auto& s : statements) {
    duckdb_result r;
    const bool ok = duckdb_query(conn, s.c_str(), &r) == DuckDBSuccess;
    const std::string err = ok ? "" : duckdb_result_error(&r);
    duckdb_destroy_result(&r);
    ASSERT_TRUE(ok) << s << ": " << err;
  }
  duckdb_disconnect(&conn);
  duckdb_close(&db);
}

void MakeSqlite(const std::filesystem::path& path, const std::string& script) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, script.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

std::string AllNotes(const TableCard& card) {
  std::string out;
  for (const auto& n : card.notes) out += n + "\n";
  return out;
}

// Changes the working directory for one test and back.
class InDirectory {
 public:
  explicit InDirectory(const std::filesystem::path& dir) : old_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDirectory() { std::filesystem::current_path(old_); }

 private:
  std::filesystem::path old_;
};

class HostileDataTest : public ::testing::Test {
 protected:
  void SetUp() override { secret_ = tmp_.Write(".env", std::string(kSecret) + "\n"); }
  TempDir tmp_;
  std::filesystem::path secret_;
};

// Before the fix the views were described and profiled with external access on: the secret was
// a card sample, and /etc/passwd's statistics were the card's.
TEST_F(HostileDataTest, DuckDbViewsCannotReadFilesWhileTheyAreProfiled) {
  const auto db = tmp_.path() / "bundle.duckdb";
  MakeDuckDb(db, {"CREATE TABLE sales AS SELECT range AS id, range * 2.5 AS amount FROM range(5)",
                  "CREATE VIEW leak AS SELECT content FROM read_text(" +
                      internal::QuoteLiteral(secret_.string()) + ")",
                  "CREATE VIEW leak_relative AS SELECT content FROM read_text('.env')",
                  "CREATE VIEW passwd AS SELECT * FROM read_csv('/etc/passwd', sep = ':', "
                  "header = false)",
                  "CREATE VIEW blob AS SELECT content FROM read_blob(" +
                      internal::QuoteLiteral(secret_.string()) + ")"});
  InDirectory in(tmp_.path());
  auto engine = Open({db});
  ASSERT_TRUE(engine) << engine.error().message;
  const std::string cards = RenderCards((*engine)->describe(), CardOptions{});
  EXPECT_EQ(cards.find("sk-or-v1"), std::string::npos) << cards;
  EXPECT_EQ(cards.find("root"), std::string::npos) << cards;
  for (const char* view : {"leak", "leak_relative", "passwd", "blob"}) {
    const TableCard* card = Card(**engine, view);
    ASSERT_NE(card, nullptr) << view;
    EXPECT_FALSE(card->profiled) << view;
    EXPECT_NE(AllNotes(*card).find("cannot be queried"), std::string::npos) << AllNotes(*card);
    EXPECT_NE(AllNotes(*card).find("Permission Error"), std::string::npos) << AllNotes(*card);
  }
  const TableCard* sales = Card(**engine, "sales");
  ASSERT_NE(sales, nullptr);
  EXPECT_TRUE(sales->profiled);
  EXPECT_EQ(sales->row_count, 5);
  // And queried later, the views still fail in DuckDB itself.
  auto r = internal::QueryDuckDbPastTextGuard(**engine, "SELECT * FROM leak", Limits{});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("Permission Error"), std::string::npos) << r.error().message;
}

// DuckDB always lets a query read its temp directory, by default ./.tmp: a bundle shipping
// `.tmp -> /` made every file readable from model SQL (through query(), past the text guard).
TEST_F(HostileDataTest, TheWorkingDirectorysTmpIsNotReadable) {
  std::filesystem::create_symlink("/", tmp_.path() / ".tmp");
  const auto csv = tmp_.Write("t.csv", "a\n1\n");
  const auto db = tmp_.path() / "t.duckdb";
  MakeDuckDb(db, {"CREATE TABLE t AS SELECT 1 AS a"});
  InDirectory in(tmp_.path());
  const std::string via_tmp = ".tmp" + secret_.string();
  for (const auto& path : {csv, db}) {
    auto engine = Open({path});
    ASSERT_TRUE(engine) << engine.error().message;
    for (const std::string& sql : std::vector<std::string>{
             "SELECT content FROM read_text(" + internal::QuoteLiteral(via_tmp) + ")",
             "SELECT * FROM read_csv('.tmp/etc/passwd', sep = ':')",
             "SELECT * FROM glob('.tmp/*')"}) {
      auto r = internal::QueryDuckDbPastTextGuard(**engine, sql, Limits{});
      ASSERT_FALSE(r) << path << ": " << sql << " read " << r->rows.size() << " rows";
      EXPECT_NE(r.error().message.find("Permission Error"), std::string::npos) << r.error().message;
    }
    // The guard refuses the form the red team used, which hides the read in a string.
    auto guarded = (*engine)->Query(
        "SELECT * FROM query('SELECT content FROM read_text(''.tmp/note.txt'')')", Limits{});
    ASSERT_FALSE(guarded);
    EXPECT_EQ(guarded.error().failure_class, FailureClass::kGuardViolation);
    // Spill files go to a private directory, not into the working directory.
    auto temp = (*engine)->Query("SELECT current_setting('temp_directory')", Limits{});
    ASSERT_TRUE(temp) << temp.error().message;
    const std::string dir = temp->rows.at(0).at(0).value_or("");
    EXPECT_NE(dir, ".tmp");
    EXPECT_NE(dir.find("quarry-spill-"), std::string::npos) << dir;
  }
}

TEST_F(HostileDataTest, TheSpillDirectoryIsPrivateAndRemovedWithTheEngine) {
  const auto csv = tmp_.Write("t.csv", "a\n1\n");
  std::string dir;
  {
    auto engine = Open({csv});
    ASSERT_TRUE(engine) << engine.error().message;
    auto temp = (*engine)->Query("SELECT current_setting('temp_directory')", Limits{});
    ASSERT_TRUE(temp) << temp.error().message;
    dir = temp->rows.at(0).at(0).value_or("");
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    EXPECT_EQ(std::filesystem::status(dir).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

// query() and its kin run a string as SQL the guard cannot see; a macro stored in a .duckdb
// file can hand them its argument, so a refused call inside any string is refused too.
TEST(DuckDbGuardTest, SqlInStringsAndTheFunctionsThatRunItAreRefused) {
  const std::vector<std::string> refused = {
      "SELECT * FROM query('SELECT 42')",
      "SELECT * FROM \"query\"('SELECT 42')",
      "SELECT * FROM QUERY_TABLE('t')",
      "SELECT * FROM query_table(['t', 'u'])",
      "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
      "SELECT json_serialize_plan('SELECT 1')",
      "SELECT * FROM arrow_scan(1, 2, 3)",
      "SELECT * FROM which_secret('s3://b/x', 's3')",
      "SELECT * FROM parquet_bloom_probe('x.parquet', 'a', 1)",
      "SELECT * FROM enable_logging(storage = 'file', storage_path = '/tmp/x')",
      "SELECT * FROM checkpoint()",
      "SELECT write_log('x')",
      // A macro from the data that runs its argument: the string is read as SQL.
      "SELECT * FROM run_it('SELECT content FROM read_text(''.env'')')",
      "SELECT * FROM run_it('SELECT * FROM ''/etc/passwd''')",
      "SELECT * FROM run_it('SELECT * FROM q(''SELECT * FROM glob(''''*'''')'')')",
      "SELECT * FROM run_it($$SELECT content FROM read_text('.env')$$)",
      "SELECT * FROM run_it('SELECT content FROM read_text(')",
  };
  for (const auto& sql : refused) {
    auto v = CheckQueryText(sql, Dialect::kDuckDB, {"t"});
    ASSERT_TRUE(v.has_value()) << sql;
    EXPECT_EQ(v->failure_class, FailureClass::kGuardViolation) << sql;
  }
  // Strings that only look like SQL are kept: no call, no file read as a table.
  for (const std::string sql : {"SELECT 'query results' AS label", "SELECT 'a (b)' AS x",
                                "SELECT * FROM t WHERE name = 'It''s from here'",
                                "SELECT count(*) FROM t WHERE note LIKE '%(draft)%'"}) {
    EXPECT_FALSE(CheckQueryText(sql, Dialect::kDuckDB, {"t"}).has_value()) << sql;
  }
}

// A view that runs past the load timeout becomes a note on its card; the open returns in
// about the timeout, and the other tables are served.
TEST_F(HostileDataTest, AHeavyDuckDbViewIsStoppedAtTheLoadTimeoutAndNoted) {
  const auto db = tmp_.path() / "heavy.duckdb";
  MakeDuckDb(db, {"CREATE TABLE t AS SELECT 1 AS a",
                  "CREATE VIEW heavy AS SELECT sum(a.range * b.range) AS s "
                  "FROM range(1000000) a, range(1000000) b"});
  OpenOptions options;
  options.timeout_ms = 1000;
  const auto start = Clock::now();
  auto engine = Open({db}, options);
  const int64_t ms = MsSince(start);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_LT(ms, 5000) << "opening took " << ms << " ms against a 1000 ms timeout";
  const TableCard* heavy = Card(**engine, "heavy");
  ASSERT_NE(heavy, nullptr);
  EXPECT_FALSE(heavy->profiled);
  ASSERT_EQ(heavy->columns.size(), 1u);  // described, only its statistics are missing
  EXPECT_NE(AllNotes(*heavy).find("took longer than 1000 ms"), std::string::npos)
      << AllNotes(*heavy);
  EXPECT_TRUE(Card(**engine, "t")->profiled);
  auto r = (*engine)->Query("SELECT a FROM t", Limits{});
  ASSERT_TRUE(r) << r.error().message;
}

// SQLite: the progress handler ran only after the cards were built, so a view with an endless
// recursive CTE hung the open (and ignored the stop token, so SIGTERM) for good.
TEST_F(HostileDataTest, AnEndlessSqliteViewIsStoppedAtTheLoadTimeoutAndNoted) {
  const auto db = tmp_.path() / "endless.sqlite";
  MakeSqlite(db,
             "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1), (2);"
             "CREATE VIEW endless AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL "
             "SELECT i + 1 FROM r) SELECT i FROM r;");
  OpenOptions options;
  options.timeout_ms = 800;
  const auto start = Clock::now();
  auto engine = Open({db}, options);
  const int64_t ms = MsSince(start);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_LT(ms, 4000) << "opening took " << ms << " ms against an 800 ms timeout";
  const TableCard* endless = Card(**engine, "endless");
  ASSERT_NE(endless, nullptr);
  EXPECT_FALSE(endless->profiled);
  ASSERT_EQ(endless->columns.size(), 1u);
  EXPECT_EQ(endless->columns[0].name, "i");
  EXPECT_NE(AllNotes(*endless).find("took longer than 800 ms"), std::string::npos)
      << AllNotes(*endless);
  const TableCard* t = Card(**engine, "t");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->profiled);
  EXPECT_EQ(t->row_count, 2);
}

// Without a load timeout the open still ends when the caller asks (Ctrl-C, SIGTERM).
TEST_F(HostileDataTest, ASqliteOpenStopsWhenAsked) {
  const auto db = tmp_.path() / "endless.sqlite";
  MakeSqlite(db,
             "CREATE VIEW endless AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL "
             "SELECT i + 1 FROM r) SELECT i FROM r;");
  std::stop_source source;
  OpenOptions options;
  options.stop = source.get_token();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    source.request_stop();
  });
  const auto start = Clock::now();
  auto engine = Open({db}, options);
  const int64_t ms = MsSince(start);
  ASSERT_FALSE(engine) << "opened an endless view without a timeout";
  EXPECT_EQ(engine.error().code, Error::Code::kCancelled) << engine.error().message;
  EXPECT_LT(ms, 2000);
}

// SQLite's soft heap limit let a query build 900 MB strings for 80 s against a 10 s timeout:
// a single string is now capped (SQLITE_LIMIT_LENGTH) and the heap hard-limited.
TEST_F(HostileDataTest, SqliteRefusesHugeStringsQuickly) {
  const auto db = tmp_.path() / "t.sqlite";
  MakeSqlite(db, "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1);");
  auto engine = Open({db});
  ASSERT_TRUE(engine) << engine.error().message;
  for (const char* sql :
       {"SELECT length(replace(hex(zeroblob(450000000)), '0', '00')) FROM t",
        "WITH RECURSIVE s(x, n) AS (SELECT 'x', 0 UNION ALL SELECT x || x, n + 1 FROM s "
        "WHERE n < 40) SELECT max(length(x)) FROM s"}) {
    const auto start = Clock::now();
    auto r = (*engine)->Query(sql, Limits{10000, 200, {}});
    const int64_t ms = MsSince(start);
    ASSERT_FALSE(r) << sql;
    EXPECT_NE(r.error().message.find("too big"), std::string::npos) << r.error().message;
    // Unfixed, the first ran 80 s; the doubling one takes about 4 s here, and the sanitizer
    // build copies strings two to three times slower, hence the margin over the 10 s timeout.
    EXPECT_LT(ms, 30000) << sql << ": far past the timeout";
  }
  // SQLite's printf() stops at the same length limit on its own: bounded, whatever it returns.
  const auto start = Clock::now();
  (void)(*engine)->Query("SELECT length(printf('%.*c', 900000000, 'x'))", Limits{10000, 200, {}});
  EXPECT_LT(MsSince(start), 30000);
  auto ok = (*engine)->Query("SELECT length(hex(zeroblob(1000000))) AS n", Limits{});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->rows.at(0).at(0), "2000000");
}

// DuckDB checks for an interrupt only between chunks: repeat('x', 1e9) ran 17 s (90 s with the
// result's rendering, 6.9 GB) past a 10 s timeout, and a cancel waited for it. Such a value is
// refused before it is built, within the timeout; small ones are still built.
TEST_F(HostileDataTest, DuckDbRefusesValuesTooLargeToInterrupt) {
  const auto csv = tmp_.Write("t.csv", "a\n1\n2\n");
  auto engine = Open({csv});
  ASSERT_TRUE(engine) << engine.error().message;
  for (const char* sql :
       {"SELECT repeat('x', 1000000000)", "SELECT length(repeat('x', 1000000000))",
        "SELECT repeat(repeat('x', 100000), 10000)", "SELECT lpad('x', 1000000000, 'y')",
        "SELECT rpad(a::VARCHAR, 1000000000, 'y') FROM t",
        "SELECT repeat('x', (SELECT max(a) FROM t) * 1000000000)"}) {
    const auto start = Clock::now();
    auto r = (*engine)->Query(sql, Limits{10000, 200, {}});
    const int64_t ms = MsSince(start);
    ASSERT_FALSE(r) << sql;
    EXPECT_NE(r.error().message.find("would build a value of"), std::string::npos)
        << r.error().message;
    EXPECT_LT(ms, 2000) << sql;
  }
  for (const char* sql :
       {"SELECT system.main.repeat('x', 1000000000)",
        "SELECT \"system\".\"main\".lpad('x', 1000000000, 'y')", "SELECT printf('%900000000d', 1)",
        "SELECT printf('%*d', 1e9, 1)", "SELECT format('{:>{}}', 'x', 1000000000)"}) {
    auto r = (*engine)->Query(sql, Limits{});
    ASSERT_FALSE(r) << sql;
    EXPECT_EQ(r.error().failure_class, FailureClass::kGuardViolation) << sql;
  }
  auto ok = (*engine)->Query(
      "SELECT repeat('#', a::INT * 3) AS bar, lpad(a::VARCHAR, 4, '0') AS "
      "id, printf('%5.2f', a / 3) AS p, repeat([a], 2) AS l FROM t",
      Limits{});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->rows.at(1).at(0), "######");
  EXPECT_EQ(ok->rows.at(1).at(1), "0002");
  EXPECT_EQ(ok->rows.at(1).at(2), " 0.67");
  EXPECT_EQ(ok->rows.at(1).at(3), "[2, 2]");
}

// The same macros hold while a .duckdb file's views are profiled.
TEST_F(HostileDataTest, ADuckDbViewBuildingAHugeValueIsNotedNotWaitedFor) {
  const auto db = tmp_.path() / "big.duckdb";
  MakeDuckDb(db, {"CREATE TABLE t AS SELECT 1 AS a",
                  "CREATE VIEW big AS SELECT repeat('x', 1000000000) AS s"});
  OpenOptions options;
  options.timeout_ms = 10000;
  const auto start = Clock::now();
  auto engine = Open({db}, options);
  const int64_t ms = MsSince(start);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_LT(ms, 3000);
  const TableCard* big = Card(**engine, "big");
  ASSERT_NE(big, nullptr);
  EXPECT_FALSE(big->profiled);
  EXPECT_NE(AllNotes(*big).find("would build a value of"), std::string::npos) << AllNotes(*big);
}

}  // namespace
}  // namespace quarry::engine
