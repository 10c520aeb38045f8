// The read-only guard, on both engines: every forbidden construct on its own is rejected with
// the rule it broke, and the data files are byte-identical afterwards.
#include <gtest/gtest.h>

#include "quarry/engine/duckdb_internal.h"
#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::testing::Sha256File;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

struct Forbidden {
  std::string sql;
  std::string rule;  // the rule the rejection must name
};

class GuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    csv_ = tmp_.Write("sales.csv", "region,revenue\nNorth,10.5\nSouth,20\n");
    sqlite_ = tmp_.path() / "chinook.sqlite";
    std::filesystem::copy_file(SourceDir() / "data" / "chinook.sqlite", sqlite_);
    outside_ = tmp_.Write("secret.csv", "token\nhunter2\n");
    csv_hash_ = Sha256File(csv_);
    sqlite_hash_ = Sha256File(sqlite_);
  }
  void TearDown() override {
    EXPECT_EQ(Sha256File(csv_), csv_hash_) << "the CSV was written";
    EXPECT_EQ(Sha256File(sqlite_), sqlite_hash_) << "the SQLite file was written";
    EXPECT_EQ(quarry::testing::DirectoryFingerprint(tmp_.path()).size(), 3u)
        << "a file appeared next to the data";
  }

  void ExpectRejected(Engine& engine, const Forbidden& f) {
    auto r = engine.Query(f.sql, Limits{});
    ASSERT_FALSE(r.has_value()) << "ran: " << f.sql;
    EXPECT_EQ(r.error().failure_class, FailureClass::kGuardViolation) << f.sql << "\n"
                                                                      << r.error().message;
    EXPECT_EQ(r.error().rule, f.rule) << f.sql << "\n" << r.error().message;
    EXPECT_FALSE(r.error().message.empty());
  }

  TempDir tmp_;
  std::filesystem::path csv_, sqlite_, outside_;
  std::string csv_hash_, sqlite_hash_;
};

TEST_F(GuardTest, DuckDbRejectsEachForbiddenConstruct) {
  auto engine = Open({csv_});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  const std::string out = (tmp_.path() / "out.csv").string();
  const std::vector<Forbidden> cases = {
      {"INSERT INTO sales VALUES ('East', 1)", "read_only"},
      {"UPDATE sales SET revenue = 0", "read_only"},
      {"DELETE FROM sales", "read_only"},
      {"CREATE TABLE t AS SELECT 1", "read_only"},
      {"DROP VIEW sales", "read_only"},
      {"ALTER VIEW sales RENAME TO s2", "read_only"},
      {"WITH d AS (DELETE FROM sales RETURNING *) SELECT * FROM d", "read_only"},
      {"WITH x AS (SELECT 1) INSERT INTO sales SELECT 'a', 1", "read_only"},
      {"SELECT 1; DROP VIEW sales", "single_statement"},
      {"SELECT 1; SELECT 2", "single_statement"},
      {"ATTACH '" + out + ".db' AS other", "attach"},
      {"DETACH memory", "attach"},
      {"PRAGMA database_list", "pragma"},
      {"COPY sales TO '" + out + "'", "file_write"},
      {"COPY (SELECT * FROM sales) TO '" + out + "' (FORMAT csv)", "file_write"},
      {"EXPORT DATABASE '" + tmp_.path().string() + "/export'", "file_write"},
      {"INSTALL httpfs", "extension_loading"},
      {"LOAD httpfs", "extension_loading"},
      {"FORCE INSTALL httpfs", "extension_loading"},
      {"SET enable_external_access = true", "configuration"},
      {"SELECT * FROM read_csv('" + outside_.string() + "')", "file_access"},
      {"SELECT * FROM read_csv_auto('/etc/passwd')", "file_access"},
      {"SELECT * FROM read_text('/etc/hostname')", "file_access"},
      {"SELECT * FROM glob('/etc/*')", "file_access"},
      {"SELECT * FROM \"read_csv\"('/etc/passwd')", "file_access"},
      {"SELECT $$x$$; DROP VIEW sales", "single_statement"},
      {"PIVOT sales ON region USING sum(revenue)", "single_statement"},
      {"SELECT * FROM '" + outside_.string() + "'", "file_access"},
      {"SELECT * FROM read_parquet('https://example.com/x.parquet')", "file_access"},
      {"SELECT * FROM read_blob_x('https://example.com/data.csv')", "remote_url"},
      {"SELECT * FROM sales JOIN 's3://bucket/x.csv' USING (region)", "remote_url"},
  };
  for (const auto& f : cases) ExpectRejected(**engine, f);
  EXPECT_FALSE(std::filesystem::exists(out));
}

// What gets past the text layer must still be stopped by DuckDB's own configuration.
TEST_F(GuardTest, DuckDbConfigurationHoldsWhenTheTextLayerIsBypassed) {
  auto engine = Open({csv_});
  ASSERT_TRUE(engine.has_value());
  // A quoted identifier that names a file is a replacement scan, invisible to the text layer.
  auto r = (*engine)->Query("SELECT * FROM \"" + outside_.string() + "\"", Limits{});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("hunter2"), 0u);
  EXPECT_EQ(r.error().message.find("hunter2"), std::string::npos);
  // Settings cannot be read into being changed: lock_configuration is on.
  auto setting = (*engine)->Query(
      "SELECT current_setting('lock_configuration') AS v, "
      "current_setting('enable_external_access') AS e",
      Limits{});
  ASSERT_TRUE(setting.has_value()) << setting.error().message;
  EXPECT_EQ(setting->rows[0][0].value_or(""), "true");
  EXPECT_EQ(setting->rows[0][1].value_or(""), "false");
}

// The settings DuckDB opens with are guards: a name a later DuckDB renamed, or a value it
// refuses, stops the open instead of leaving autoloading on or the file writable.
TEST(DuckDbConfigTest, ASettingDuckDbDoesNotTakeStopsTheOpen) {
  // A value DuckDB refuses is refused at once, naming the setting.
  internal::Config config;
  EXPECT_TRUE(config.Set("autoload_known_extensions", "false"));
  const Result<void> bad_value =
      config.SetAll({{"memory_limit", "1GB"}, {"access_mode", "READ_MOSTLY"}, {"threads", "1"}});
  ASSERT_FALSE(bad_value);
  EXPECT_EQ(bad_value.error().code, Error::Code::kInternal);
  EXPECT_NE(bad_value.error().message.find("access_mode = 'READ_MOSTLY'"), std::string::npos)
      << bad_value.error().message;
  // Before this check, enable_progress_bar sat in the engine's configuration and was dropped.
  EXPECT_FALSE(config.Set("enable_progress_bar", "true"));
  EXPECT_TRUE(config.Set("access_mode", "READ_ONLY"));

  // A name DuckDB does not know (renamed in a later release) is taken by the configuration
  // and refused by the open: either way the engine never opens without it.
  internal::Config renamed;
  ASSERT_TRUE(renamed.Set("autoload_known_extension", "false"));
  duckdb_database db = nullptr;
  char* err = nullptr;
  EXPECT_EQ(duckdb_open_ext(nullptr, &db, renamed.get(), &err), DuckDBError);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("autoload_known_extension"), std::string::npos) << err;
  duckdb_free(err);
}

TEST_F(GuardTest, SqliteRejectsEachForbiddenConstruct) {
  auto engine = Open({sqlite_});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  const std::string other = (tmp_.path() / "other.db").string();
  const std::vector<Forbidden> cases = {
      {"INSERT INTO Genre (Name) VALUES ('Polka')", "read_only"},
      {"UPDATE Track SET UnitPrice = 0", "read_only"},
      {"DELETE FROM Track", "read_only"},
      {"REPLACE INTO Genre (GenreId, Name) VALUES (1, 'x')", "read_only"},
      {"CREATE TABLE t (a)", "read_only"},
      {"DROP TABLE Track", "read_only"},
      {"CREATE TEMP VIEW v AS SELECT 1", "read_only"},
      {"WITH d AS (SELECT 1) DELETE FROM Track", "read_only"},
      {"WITH d AS (SELECT 1) INSERT INTO Genre (Name) SELECT 'x'", "read_only"},
      {"SELECT 1; DELETE FROM Track", "single_statement"},
      {"ATTACH DATABASE '" + other + "' AS other", "attach"},
      {"PRAGMA writable_schema = 1", "pragma"},
      {"PRAGMA table_info(Track)", "pragma"},
      {"VACUUM INTO '" + other + "'", "read_only"},
      {"SELECT load_extension('/tmp/evil.so')", "file_access"},
      {"SELECT readfile('/etc/passwd')", "file_access"},
      {"SELECT * FROM Genre WHERE Name IN ('https://example.com/')", "remote_url"},
  };
  for (const auto& f : cases) ExpectRejected(**engine, f);
  EXPECT_FALSE(std::filesystem::exists(other));
}

// The engines read a statement up to its first NUL: a guard that read past it checked text that
// never ran (a web page's SQL box or an MCP run_sql can carry "\u0000"). Refused, whatever
// stands on either side.
TEST_F(GuardTest, SqlHoldingANulIsRefusedOnEveryEngine) {
  using namespace std::string_literals;
  for (const auto& path : {csv_, sqlite_}) {
    auto engine = Open({path});
    ASSERT_TRUE(engine.has_value()) << engine.error().message;
    for (const std::string& sql :
         {"SELECT 1\0; DELETE FROM t"s, "SELECT 1 /* \0 */"s, "\0"s, "SELECT 'a\0b'"s}) {
      auto r = (*engine)->Query(sql, Limits{});
      ASSERT_FALSE(r.has_value()) << path;
      EXPECT_EQ(r.error().failure_class, FailureClass::kGuardViolation);
      EXPECT_EQ(r.error().message,
                "guard: the SQL holds a NUL character (\\u0000), and the engine would run only "
                "the text before it; remove it and send one SELECT query");
    }
  }
  // A NUL made by the query, not written in its text, is a value like any other.
  auto engine = Open({sqlite_});
  ASSERT_TRUE(engine.has_value());
  auto fine = (*engine)->Query("SELECT length('a' || char(0) || 'b') AS n", Limits{});
  ASSERT_TRUE(fine.has_value()) << fine.error().message;
  EXPECT_EQ(fine->rows.at(0).at(0), "1");
}

// SQLite has no dollar quotes and no E'' strings: $a$ is a parameter name there and E a
// column, so reading either as a string would hide the call between them from the text guard.
TEST_F(GuardTest, SqliteTextGuardDoesNotReadOtherDialectsStrings) {
  for (const std::string sql : {"SELECT $a$, load_extension('/tmp/evil.so'), $a$",
                                "SELECT E'\\', load_extension('/tmp/evil.so') --'"}) {
    const auto sqlite = CheckQueryText(sql, Dialect::kSQLite, {});
    ASSERT_TRUE(sqlite.has_value()) << sql;
    EXPECT_EQ(sqlite->rule, "file_access") << sql;
  }
  // In DuckDB and PostgreSQL the same texts hold strings where the calls were: nothing is
  // called. E'\'' is one quote there, so the call after it is seen. DuckDB still refuses the
  // first (issue 22): a macro in a .duckdb file can run a string as SQL, so a refused call in
  // any string is refused, as on PostgreSQL.
  const auto in_string =
      CheckQueryText("SELECT $a$, load_extension('x'), $a$", Dialect::kDuckDB, {});
  ASSERT_TRUE(in_string.has_value());
  EXPECT_NE(in_string->message.find("a string holds a call to LOAD_EXTENSION()"), std::string::npos)
      << in_string->message;
  EXPECT_FALSE(CheckQueryText("SELECT E'\\', read_csv('x') --'", Dialect::kPostgreSQL, {}));
  const auto duck = CheckQueryText("SELECT E'\\'', read_csv('x') --'", Dialect::kDuckDB, {});
  ASSERT_TRUE(duck.has_value());
  EXPECT_EQ(duck->rule, "file_access");
}

TEST_F(GuardTest, SqliteAuthorizerHoldsWhenTheTextLayerIsBypassed) {
  auto engine = Open({sqlite_});
  ASSERT_TRUE(engine.has_value());
  // A quoted function name slips past the text layer; the authorizer and the disabled
  // extension loading still refuse it.
  auto r = (*engine)->Query("SELECT \"load_extension\"('/tmp/evil.so')", Limits{});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().failure_class, FailureClass::kGuardViolation) << r.error().message;
  EXPECT_EQ(r.error().rule, "file_access");
  // pragma functions are reads of the schema, but PRAGMA as a function is refused too.
  auto p = (*engine)->Query("SELECT * FROM pragma_table_info('Track')", Limits{});
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().failure_class, FailureClass::kGuardViolation)
      << p.error().message << p.error().rule;
}

TEST_F(GuardTest, AllowedQueriesStillRun) {
  auto duck = Open({csv_});
  ASSERT_TRUE(duck.has_value());
  // Keywords inside strings, comments and as function names are not statements.
  auto r = (*duck)->Query(
      "-- delete everything\nSELECT region, replace(region, 'N', 'n') AS r, "
      "'DROP TABLE x; INSERT' AS s FROM sales /* ; */ ORDER BY revenue DESC;",
      Limits{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->row_count, 2);
  EXPECT_EQ(r->rows[0][0].value_or(""), "South");
  EXPECT_EQ(r->rows[1][1].value_or(""), "north");
  auto like = (*duck)->Query("SELECT count(*) FROM sales WHERE region LIKE 'http://%'", Limits{});
  ASSERT_TRUE(like.has_value()) << like.error().message;
  EXPECT_EQ(like->rows[0][0].value_or(""), "0");
  auto dollar = (*duck)->Query("SELECT $$x;y$$ AS s, $t$DELETE$t$ AS d", Limits{});
  ASSERT_TRUE(dollar.has_value()) << dollar.error().message;
  EXPECT_EQ(dollar->rows[0][0].value_or(""), "x;y");
  auto pivot =
      (*duck)->Query("PIVOT sales ON region IN ('North', 'South') USING sum(revenue)", Limits{});
  ASSERT_TRUE(pivot.has_value()) << pivot.error().message;
  EXPECT_EQ(pivot->columns, (std::vector<std::string>{"North", "South"}));

  auto lite = Open({sqlite_});
  ASSERT_TRUE(lite.has_value());
  auto g = (*lite)->Query("WITH t AS (SELECT GenreId FROM Track) SELECT count(*) FROM t", Limits{});
  ASSERT_TRUE(g.has_value()) << g.error().message;
  EXPECT_EQ(g->rows[0][0].value_or(""), "3503");
}

TEST_F(GuardTest, ErrorsAreClassified) {
  auto duck = Open({csv_});
  ASSERT_TRUE(duck.has_value());
  auto syntax = (*duck)->Query("SELEC region FROM sales", Limits{});
  ASSERT_FALSE(syntax.has_value());
  EXPECT_EQ(syntax.error().failure_class, FailureClass::kSyntaxError) << syntax.error().message;
  auto syntax2 = (*duck)->Query("SELECT region FROM sales WHERE", Limits{});
  ASSERT_FALSE(syntax2.has_value());
  EXPECT_EQ(syntax2.error().failure_class, FailureClass::kSyntaxError) << syntax2.error().message;
  auto missing = (*duck)->Query("SELECT total FROM sales", Limits{});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().failure_class, FailureClass::kRuntimeError);
  EXPECT_NE(missing.error().message.find("total"), std::string::npos);

  auto lite = Open({sqlite_});
  ASSERT_TRUE(lite.has_value());
  auto lsyntax = (*lite)->Query("SELECT FROM Track WHERE", Limits{});
  ASSERT_FALSE(lsyntax.has_value());
  EXPECT_EQ(lsyntax.error().failure_class, FailureClass::kSyntaxError) << lsyntax.error().message;
  auto lmissing = (*lite)->Query("SELECT Nope FROM Track", Limits{});
  ASSERT_FALSE(lmissing.has_value());
  EXPECT_EQ(lmissing.error().failure_class, FailureClass::kRuntimeError);
}

TEST_F(GuardTest, TimeoutInterruptsBothEngines) {
  auto duck = Open({csv_});
  ASSERT_TRUE(duck.has_value());
  auto slow = (*duck)->Query("SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3",
                             Limits{300, 200, {}});
  ASSERT_FALSE(slow.has_value());
  EXPECT_EQ(slow.error().failure_class, FailureClass::kTimeout) << slow.error().message;

  auto lite = Open({sqlite_});
  ASSERT_TRUE(lite.has_value());
  auto lslow = (*lite)->Query(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
      Limits{300, 200, {}});
  ASSERT_FALSE(lslow.has_value());
  EXPECT_EQ(lslow.error().failure_class, FailureClass::kTimeout) << lslow.error().message;
  // The engine is usable after an interrupt.
  auto after = (*lite)->Query("SELECT count(*) FROM Genre", Limits{});
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->rows[0][0].value_or(""), "25");
}

TEST_F(GuardTest, RowCapKeepsTheTrueCount) {
  auto lite = Open({sqlite_});
  ASSERT_TRUE(lite.has_value());
  auto r = (*lite)->Query("SELECT TrackId FROM Track ORDER BY TrackId", Limits{10000, 200, {}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rows.size(), 200u);
  EXPECT_EQ(r->row_count, 3503);
  EXPECT_TRUE(r->truncated());
  const std::string shown = RenderResult(*r, 30);
  EXPECT_NE(shown.find("never instructions"), std::string::npos);
  EXPECT_NE(shown.find("(3503 rows, first 30 shown)"), std::string::npos);
  EXPECT_EQ(shown.find("\n31\n"), std::string::npos);

  auto duck = Open({csv_});
  auto d = (*duck)->Query("SELECT * FROM range(1000)", Limits{10000, 200, {}});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rows.size(), 200u);
  EXPECT_EQ(d->row_count, 1000);
}

}  // namespace
}  // namespace quarry::engine
