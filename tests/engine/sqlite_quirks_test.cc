// SQLite databases as people actually have them (issue 8): numbers stored as text in numeric
// columns, FTS5/FTS4/R*Tree virtual tables with their shadow tables, WITHOUT ROWID tables,
// views that no longer prepare, and names with spaces and quotes. Each database is built here
// with SQLite itself and must come out byte-identical.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::testing::MakeSqlite;
using quarry::testing::Sha256File;
using quarry::testing::TempDir;

const TableCard* FindCard(const Engine& engine, const std::string& name) {
  for (const auto& card : engine.describe()) {
    if (card.name == name) return &card;
  }
  return nullptr;
}

const ColumnCard* FindColumn(const TableCard& card, const std::string& name) {
  for (const auto& column : card.columns) {
    if (column.name == name) return &column;
  }
  return nullptr;
}

class SqliteQuirksTest : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> OpenDb(const std::string& sql) {
    path_ = tmp_.path() / "quirks.sqlite";
    MakeSqlite(path_, sql);
    hash_ = Sha256File(path_);
    auto engine = Open({path_});
    EXPECT_TRUE(engine.has_value()) << (engine ? "" : engine.error().message);
    return engine ? std::move(*engine) : nullptr;
  }
  void TearDown() override {
    if (!hash_.empty()) {
      EXPECT_EQ(Sha256File(path_), hash_) << "the database was written";
    }
    EXPECT_EQ(quarry::testing::DirectoryFingerprint(tmp_.path()).size(), 1u)
        << "a file appeared next to the database";
  }
  std::string Single(Engine& engine, const std::string& sql) {
    auto r = engine.Query(sql, Limits{});
    if (!r) return "failed: " + r.error().message;
    if (r->rows.size() != 1 || r->rows[0].size() != 1) return "not one cell";
    return r->rows[0][0].value_or("NULL");
  }

  TempDir tmp_;
  std::filesystem::path path_;
  std::string hash_;
};

TEST_F(SqliteQuirksTest, IntegerColumnHoldingTextIsNotedSoTheSumCanBeCleaned) {
  auto engine = OpenDb(
      "CREATE TABLE sales(year INTEGER, amount INTEGER);"
      "INSERT INTO sales VALUES (2023, 700000), (2023, 800000),"
      "  (2024, '1,000,000'), (2024, '1,000,000'), (2024, '500,000');"
      "CREATE TABLE ledger(amount INTEGER);"
      "INSERT INTO ledger VALUES ('1,000,000'), ('1,000,000'), ('500,000'), (NULL);");
  ASSERT_TRUE(engine);
  const TableCard* sales = FindCard(*engine, "sales");
  ASSERT_TRUE(sales);
  const ColumnCard* amount = FindColumn(*sales, "amount");
  ASSERT_TRUE(amount);
  ASSERT_EQ(amount->notes.size(), 1u);
  EXPECT_TRUE(
      amount->notes[0].starts_with("declared INTEGER, stored as integer in 2 rows, text in 3: "))
      << amount->notes[0];
  EXPECT_TRUE(FindColumn(*sales, "year")->notes.empty());

  const ColumnCard* all_text = FindColumn(*FindCard(*engine, "ledger"), "amount");
  ASSERT_EQ(all_text->notes.size(), 1u);
  EXPECT_TRUE(all_text->notes[0].starts_with("declared INTEGER, stored as text in 3/3 rows: "))
      << all_text->notes[0];
  // The model reads it in the cards it is given.
  EXPECT_NE(RenderCards(engine->describe()).find("    note: declared INTEGER, stored as text"),
            std::string::npos);

  // Why the note matters: the naive total is wrong, the cleaned one right.
  EXPECT_EQ(Single(*engine, "SELECT sum(amount) FROM sales WHERE year = 2024"), "502.0");
  EXPECT_EQ(Single(*engine,
                   "SELECT sum(CAST(replace(amount, ',', '') AS INTEGER)) FROM sales "
                   "WHERE year = 2024"),
            "2500000");
}

TEST_F(SqliteQuirksTest, OnlyTextInNumericColumnsIsNoted) {
  auto engine = OpenDb(
      "CREATE TABLE m(reading REAL, untyped, day DATE, label TEXT, price NUMERIC, blob_n INT);"
      "INSERT INTO m VALUES (1.5, 1, '2024-01-01', '10', 'N/A', 1),"
      "  (2.5, 2, '2024-01-02', '20', 3, 2), ('N/A', 3, '2024-01-03', '30', 4, x'00'),"
      "  ('N/A', 4, '2024-01-04', '40', 5, 3), (3.0, 5, '2024-01-05', '50', 6, 4);");
  ASSERT_TRUE(engine);
  const TableCard* m = FindCard(*engine, "m");
  ASSERT_TRUE(m);
  const ColumnCard* reading = FindColumn(*m, "reading");
  ASSERT_EQ(reading->notes.size(), 1u);
  EXPECT_TRUE(reading->notes[0].starts_with("declared REAL, stored as real in 3 rows, text in 2: "))
      << reading->notes[0];
  EXPECT_NE(reading->notes[0].find("typeof(\"reading\") IN ('integer', 'real')"), std::string::npos)
      << reading->notes[0];
  EXPECT_EQ(FindColumn(*m, "price")->notes.size(), 1u);
  const ColumnCard* blob_n = FindColumn(*m, "blob_n");
  ASSERT_EQ(blob_n->notes.size(), 1u);
  EXPECT_TRUE(blob_n->notes[0].starts_with("declared INT, stored as integer in 4 rows, blob in 1"))
      << blob_n->notes[0];
  // No declared type, all integers: nothing to say. SQLite keeps dates as text by design, and
  // numbers in a TEXT column change no arithmetic.
  EXPECT_TRUE(FindColumn(*m, "untyped")->notes.empty());
  EXPECT_TRUE(FindColumn(*m, "day")->notes.empty());
  EXPECT_TRUE(FindColumn(*m, "label")->notes.empty());
}

TEST_F(SqliteQuirksTest, Fts5TableIsQueryableAndItsShadowTablesAreHidden) {
  auto engine = OpenDb(
      "CREATE VIRTUAL TABLE docs USING fts5(title, body);"
      "INSERT INTO docs VALUES ('Refund policy', 'refunds are paid within 30 days'),"
      "  ('Shipping', 'we ship worldwide'), ('Returns', 'see the refunds page');");
  ASSERT_TRUE(engine);
  std::vector<std::string> names;
  for (const auto& card : engine->describe()) names.push_back(card.name);
  EXPECT_EQ(names, std::vector<std::string>{"docs"});
  EXPECT_EQ(FindCard(*engine, "docs")->row_count, 3);

  auto all = engine->Query("SELECT title FROM docs", Limits{});
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->row_count, 3);
  auto match =
      engine->Query("SELECT title FROM docs WHERE docs MATCH 'refunds' ORDER BY rank", Limits{});
  ASSERT_TRUE(match) << match.error().message;
  ASSERT_EQ(match->row_count, 2);
  auto again = engine->Query(
      "SELECT highlight(docs, 0, '[', ']') FROM docs WHERE docs MATCH 'shipping'", Limits{});
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_EQ(again->rows.size(), 1u);
  EXPECT_EQ(again->rows[0][0], "[Shipping]");
}

// External-content FTS5 (datasette#1991) reads its content table; fts5vocab (workerd#1540)
// reads the index: both through statements the module prepares itself.
TEST_F(SqliteQuirksTest, ExternalContentFts5AndVocabularyTablesWork) {
  auto engine = OpenDb(
      "CREATE TABLE captions(image_key TEXT PRIMARY KEY, caption TEXT NOT NULL);"
      "INSERT INTO captions VALUES ('a', 'a red cat'), ('b', 'a blue dog');"
      "CREATE VIRTUAL TABLE captions_fts USING fts5(caption, image_key UNINDEXED, "
      "  content=captions);"
      "INSERT INTO captions_fts(captions_fts) VALUES ('rebuild');"
      "CREATE VIRTUAL TABLE vocab USING fts5vocab('captions_fts', 'row');");
  ASSERT_TRUE(engine);
  std::vector<std::string> names;
  for (const auto& card : engine->describe()) names.push_back(card.name);
  EXPECT_EQ(names, (std::vector<std::string>{"captions", "captions_fts", "vocab"}));
  EXPECT_EQ(Single(*engine, "SELECT image_key FROM captions_fts WHERE captions_fts MATCH 'cat'"),
            "a");
  EXPECT_EQ(Single(*engine, "SELECT doc FROM vocab WHERE term = 'a'"), "2");
}

TEST_F(SqliteQuirksTest, Fts4AndRtreeTablesWorkToo) {
  auto engine = OpenDb(
      "CREATE VIRTUAL TABLE notes USING fts4(body);"
      "INSERT INTO notes VALUES ('hello world'), ('goodbye');"
      "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1);"
      "INSERT INTO boxes VALUES (1, 0, 5), (2, 10, 20);");
  ASSERT_TRUE(engine);
  std::vector<std::string> names;
  for (const auto& card : engine->describe()) names.push_back(card.name);
  EXPECT_EQ(names, (std::vector<std::string>{"boxes", "notes"}));
  EXPECT_EQ(Single(*engine, "SELECT body FROM notes WHERE notes MATCH 'hello'"), "hello world");
  EXPECT_EQ(Single(*engine, "SELECT id FROM boxes WHERE x0 >= 10"), "2");
}

// The text guard refuses PRAGMA; the authorizer must refuse it on its own too, although it
// lets FTS5's own PRAGMA data_version through.
TEST_F(SqliteQuirksTest, UserPragmaAndShadowWritesAreRefusedBelowTheTextGuard) {
  auto engine = OpenDb(
      "CREATE VIRTUAL TABLE docs USING fts5(title, body);"
      "INSERT INTO docs VALUES ('Refund policy', 'refunds');"
      "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1);"
      "INSERT INTO boxes VALUES (1, 0, 5);");
  ASSERT_TRUE(engine);
  ASSERT_TRUE(engine->Query("SELECT title FROM docs WHERE docs MATCH 'refunds'", Limits{}));
  struct Case {
    std::string sql;
    std::string rule;
  };
  for (const Case& c : std::vector<Case>{
           {"PRAGMA data_version", "pragma"},
           {"PRAGMA main.data_version", "pragma"},
           {"PRAGMA page_size", "pragma"},
           {"PRAGMA page_size = 8192", "pragma"},
           {"SELECT * FROM pragma_table_info('docs')", "pragma"},
           {"INSERT INTO docs_data VALUES (99, x'00')", "read_only"},
           {"DELETE FROM boxes_node", "read_only"},
           {"UPDATE docs_config SET v = 1", "read_only"},
       }) {
    auto past = internal::QuerySqlitePastTextGuard(*engine, c.sql, Limits{});
    ASSERT_FALSE(past.has_value()) << "ran past the text guard: " << c.sql;
    EXPECT_EQ(past.error().failure_class, FailureClass::kGuardViolation) << c.sql;
    EXPECT_EQ(past.error().rule, c.rule) << c.sql << ": " << past.error().message;
    auto guarded = engine->Query(c.sql, Limits{});
    ASSERT_FALSE(guarded.has_value()) << "ran: " << c.sql;
    EXPECT_EQ(guarded.error().failure_class, FailureClass::kGuardViolation) << c.sql;
  }
  // Still usable afterwards.
  EXPECT_EQ(Single(*engine, "SELECT count(*) FROM docs WHERE docs MATCH 'refunds'"), "1");
}

TEST_F(SqliteQuirksTest, WithoutRowidBrokenViewAndOddNamesOpen) {
  auto engine = OpenDb(
      "CREATE TABLE kv(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;"
      "INSERT INTO kv VALUES ('a', 1), ('b', 2);"
      "CREATE TABLE gone(x);"
      "CREATE VIEW stale AS SELECT x FROM gone;"
      "DROP TABLE gone;"
      "CREATE TABLE \"my \"\"odd\"\" table\"(\"a b\" INTEGER, \"c'd\" TEXT);"
      "INSERT INTO \"my \"\"odd\"\" table\" VALUES (7, 'it''s');");
  ASSERT_TRUE(engine);
  const TableCard* kv = FindCard(*engine, "kv");
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->row_count, 2);
  ASSERT_EQ(kv->columns.size(), 2u);

  const TableCard* stale = FindCard(*engine, "stale");
  ASSERT_TRUE(stale);
  ASSERT_EQ(stale->notes.size(), 1u);
  EXPECT_NE(stale->notes[0].find("cannot be queried"), std::string::npos) << stale->notes[0];
  EXPECT_NE(stale->notes[0].find("gone"), std::string::npos) << stale->notes[0];
  // Its row count is unknown, so the card claims none.
  const std::string cards = RenderCards(engine->describe());
  EXPECT_NE(cards.find("table stale\n"), std::string::npos) << cards;
  EXPECT_NE(cards.find("  note: cannot be queried"), std::string::npos) << cards;

  const TableCard* odd = FindCard(*engine, "my \"odd\" table");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->row_count, 1);
  EXPECT_EQ(FindColumn(*odd, "c'd")->samples, std::vector<std::string>{"it's"});
  EXPECT_EQ(Single(*engine, "SELECT \"a b\" FROM \"my \"\"odd\"\" table\""), "7");
  auto view = engine->Query("SELECT * FROM stale", Limits{});
  ASSERT_FALSE(view.has_value());
  EXPECT_EQ(view.error().failure_class, FailureClass::kRuntimeError) << view.error().message;
}

}  // namespace
}  // namespace quarry::engine
