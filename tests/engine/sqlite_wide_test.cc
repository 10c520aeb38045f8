// SQLite tables near SQLite's own limits (a user trial: 250 INTEGER columns showed as
// unqueryable with no columns, because the card's statistics crossed SQLite's 2000
// result-column limit), and text that holds NUL bytes. Databases are built here with SQLite.
#include <gtest/gtest.h>

#include <string>

#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::testing::MakeSqlite;
using quarry::testing::TempDir;

// A table t of `n` INTEGER columns c1..cn: rows 1-3 hold c<j> = 10*j + row; row 4 is NULL
// except in cn, which holds the text 'n/a' (stored as text despite the INTEGER type).
std::string WideTableSql(int n) {
  std::string sql = "CREATE TABLE t(";
  for (int j = 1; j <= n; ++j) sql += (j > 1 ? ", c" : "c") + std::to_string(j) + " INTEGER";
  sql += ");";
  for (int row = 1; row <= 3; ++row) {
    sql += "INSERT INTO t VALUES(";
    for (int j = 1; j <= n; ++j) sql += (j > 1 ? ", " : "") + std::to_string(10 * j + row);
    sql += ");";
  }
  sql += "INSERT INTO t(c" + std::to_string(n) + ") VALUES('n/a');";
  return sql;
}

class SqliteWideTest : public ::testing::TestWithParam<int> {};

TEST_P(SqliteWideTest, EveryColumnGetsStatisticsAndTheLastColumnQueries) {
  const int n = GetParam();
  TempDir tmp;
  const auto path = tmp.path() / "wide.sqlite";
  ASSERT_NO_FATAL_FAILURE(MakeSqlite(path, WideTableSql(n)));
  auto engine = Open({path});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  const auto& cards = (*engine)->describe();
  ASSERT_EQ(cards.size(), 1u);
  const TableCard& card = cards[0];
  EXPECT_TRUE(card.notes.empty()) << card.notes[0];
  EXPECT_TRUE(card.profiled);
  EXPECT_EQ(card.row_count, 4);
  ASSERT_EQ(card.columns.size(), static_cast<size_t>(n));
  for (int j = 1; j < n; ++j) {
    const ColumnCard& c = card.columns[static_cast<size_t>(j - 1)];
    SCOPED_TRACE(c.name);
    ASSERT_EQ(c.name, "c" + std::to_string(j));
    EXPECT_EQ(c.type, "INTEGER");
    EXPECT_TRUE(c.profiled);
    EXPECT_EQ(c.null_count, 1);
    EXPECT_EQ(c.distinct_count, 3);
    EXPECT_EQ(c.min.value_or("none"), std::to_string(10 * j + 1));
    EXPECT_EQ(c.max.value_or("none"), std::to_string(10 * j + 3));
    EXPECT_EQ(c.samples.size(), 3u);
    EXPECT_TRUE(c.notes.empty());
  }
  // The last column's stored-type counts come from the last statistics group: its note must
  // be its own, not a neighbour's.
  const ColumnCard& last = card.columns.back();
  EXPECT_EQ(last.name, "c" + std::to_string(n));
  EXPECT_EQ(last.null_count, 0);
  EXPECT_EQ(last.distinct_count, 4);
  EXPECT_EQ(last.max.value_or("none"), "n/a");
  ASSERT_EQ(last.notes.size(), 1u);
  EXPECT_NE(last.notes[0].find("integer in 3 rows, text in 1"), std::string::npos) << last.notes[0];

  const std::string q = "c" + std::to_string(n);
  auto r = (*engine)->Query("SELECT max(" + q + ") FROM t WHERE typeof(" + q + ") = 'integer'",
                            Limits{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0][0].value_or("NULL"), std::to_string(10 * n + 3));

  const std::string text = RenderCards(cards);
  EXPECT_EQ(text.find("cannot be queried"), std::string::npos);
}

// 249 columns fit in one statement before the fix; 250 was the first to fail; 2000 is
// SQLite's default maximum number of columns in a table.
INSTANTIATE_TEST_SUITE_P(Widths, SqliteWideTest, ::testing::Values(249, 250, 1000, 2000));

TEST(SqliteTextTest, NulBytesInTextSurviveCardsAndResults) {
  TempDir tmp;
  const auto path = tmp.path() / "nul.sqlite";
  ASSERT_NO_FATAL_FAILURE(
      MakeSqlite(path,
                 "CREATE TABLE t(s TEXT);"
                 "INSERT INTO t VALUES('a' || char(0) || 'b' || char(10) || 'how');"));
  auto engine = Open({path});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  const std::string value("a\0b\nhow", 7);
  const ColumnCard& c = (*engine)->describe().at(0).columns.at(0);
  ASSERT_EQ(c.samples.size(), 1u);
  EXPECT_EQ(c.samples[0], value);
  EXPECT_EQ(c.min.value_or("none"), value);
  EXPECT_EQ(c.max.value_or("none"), value);

  const std::string text = RenderCards((*engine)->describe());
  EXPECT_NE(text.find("a\\x00b\\nhow"), std::string::npos) << text;

  auto r = (*engine)->Query("SELECT s, length(CAST(s AS BLOB)) FROM t", Limits{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0][0].value_or("NULL"), value);
  EXPECT_EQ(r->rows[0][1].value_or("NULL"), "7");
}

}  // namespace
}  // namespace quarry::engine
