// Result cells as both engines hand them over (issue 8): the text the model reads keeps every
// digit a double holds (the shortest round-trip form), each cell says what kind of value it
// is, computed SQLite columns get the storage class as their type, and the model's preview
// cuts long cells on a UTF-8 character boundary with a visible mark.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <charconv>

#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::testing::MakeSqlite;
using quarry::testing::TempDir;

double ParseDouble(const std::string& text) {
  double d = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  EXPECT_TRUE(ec == std::errc() && end == text.data() + text.size()) << text;
  return d;
}

class ResultValuesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 56 countries at 52.5 and one whose value brings the sum one step below 2996.6, as the
    // world database's LifeExpectancy does: the average is 52.571929824561394, which 15
    // digits would show as 52.5719298245614. Every partial sum is exact, so the result does
    // not depend on how SQLite adds.
    std::string sql = "CREATE TABLE country(name TEXT, life REAL, flag BLOB, big INTEGER);";
    for (int i = 0; i < 56; ++i) {
      sql += "INSERT INTO country VALUES ('c" + std::to_string(i) + "', 52.5, NULL, NULL);";
    }
    sql +=
        "INSERT INTO country VALUES ('last', 56.599999999999454, x'00FF41', "
        "9007199254740993);";
    sqlite_ = tmp_.path() / "world.sqlite";
    MakeSqlite(sqlite_, sql);
    // DuckDB's sniffer reads a 20-digit column as DOUBLE; with a placeholder it stays text.
    csv_ = tmp_.Write("nums.csv", "id,big\n1,12345678901234567891\n2,unknown\n");
  }
  std::unique_ptr<Engine> OpenOne(const std::filesystem::path& path) {
    auto engine = Open({path});
    EXPECT_TRUE(engine.has_value()) << (engine ? "" : engine.error().message);
    return engine ? std::move(*engine) : nullptr;
  }
  TempDir tmp_;
  std::filesystem::path sqlite_, csv_;
};

TEST_F(ResultValuesTest, SqliteRealsKeepEveryDigitAndComputedColumnsGetStorageTypes) {
  auto engine = OpenOne(sqlite_);
  ASSERT_TRUE(engine);
  auto r = engine->Query(
      "SELECT avg(life) AS a, 0.1 + 0.2 AS s, count(*) AS n, 2.0 * 1 AS whole, "
      "max(big) AS big, NULL AS z FROM country",
      Limits{});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 1u);
  ASSERT_EQ(r->kinds.size(), 1u);
  const auto& row = r->rows[0];
  EXPECT_EQ(row[0], "52.571929824561394");
  EXPECT_EQ(ParseDouble(*row[0]), 52.571929824561394);
  EXPECT_EQ(row[1], "0.30000000000000004");
  EXPECT_EQ(ParseDouble(*row[1]), 0.1 + 0.2);
  EXPECT_EQ(row[2], "57");
  EXPECT_EQ(row[3], "2.0");               // still reads as a real
  EXPECT_EQ(row[4], "9007199254740993");  // beyond 2^53: exact, not rounded through a double
  EXPECT_EQ(row[5], std::nullopt);
  EXPECT_EQ(r->kinds[0],
            (std::vector<CellKind>{CellKind::kReal, CellKind::kReal, CellKind::kInteger,
                                   CellKind::kReal, CellKind::kInteger, CellKind::kNull}));
  EXPECT_EQ(r->types,
            (std::vector<std::string>{"REAL", "REAL", "INTEGER", "REAL", "INTEGER", "NULL"}));

  // Declared columns keep the declared type; a computed column of several storage classes
  // says so.
  auto mixed = engine->Query(
      "SELECT name, life, CASE WHEN name = 'last' THEN flag ELSE life END AS m FROM country "
      "WHERE name IN ('c0', 'last') ORDER BY name",
      Limits{});
  ASSERT_TRUE(mixed) << mixed.error().message;
  EXPECT_EQ(mixed->types, (std::vector<std::string>{"TEXT", "REAL", "mixed"}));
  EXPECT_EQ(mixed->rows[1][2], "\\x00\\xFFA");
  EXPECT_EQ(mixed->kinds[1][2], CellKind::kBlob);
  EXPECT_EQ(BlobBytes(*mixed->rows[1][2]), std::string("\x00\xff"
                                                       "A",
                                                       3));
}

TEST_F(ResultValuesTest, DuckDbDoublesAreShortestRoundTripAndWideIntegersExact) {
  auto engine = OpenOne(csv_);
  ASSERT_TRUE(engine);
  auto r = engine->Query(
      "SELECT 0.1::DOUBLE + 0.2::DOUBLE AS s, 2996.5999999999995::DOUBLE / 57 AS a, "
      "CAST(big AS HUGEINT) AS h, CAST('12345678901234567891' AS DECIMAL(38,0)) AS d, "
      "504488.21::DECIMAL(18,2) AS m, 18446744073709551615::UBIGINT AS u, true AS b, "
      "'\\x00\\xFFA'::BLOB AS blob, NULL::INTEGER AS z FROM nums WHERE id = 1",
      Limits{});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 1u);
  const auto& row = r->rows[0];
  EXPECT_EQ(row[0], "0.30000000000000004");
  EXPECT_EQ(ParseDouble(*row[0]), 0.1 + 0.2);
  EXPECT_EQ(row[1], "52.571929824561394");
  EXPECT_EQ(row[2], "12345678901234567891");
  EXPECT_EQ(row[3], "12345678901234567891");
  EXPECT_EQ(row[4], "504488.21");
  EXPECT_EQ(row[5], "18446744073709551615");
  EXPECT_EQ(row[6], "true");
  EXPECT_EQ(BlobBytes(*row[7]), std::string("\x00\xff"
                                            "A",
                                            3));
  EXPECT_EQ(row[8], std::nullopt);
  EXPECT_EQ(r->kinds[0],
            (std::vector<CellKind>{CellKind::kReal, CellKind::kReal, CellKind::kInteger,
                                   CellKind::kDecimal, CellKind::kDecimal, CellKind::kInteger,
                                   CellKind::kBoolean, CellKind::kBlob, CellKind::kNull}));
  EXPECT_EQ(r->types[3], "DECIMAL(38,0)");
  EXPECT_EQ(r->types[4], "DECIMAL(18,2)");
  EXPECT_EQ(r->types[2], "HUGEINT");

  // DuckDB reads 0.1 as a DECIMAL literal, and DECIMAL sums are exact: 0.3, not a rounding.
  auto literal = engine->Query("SELECT 0.1 + 0.2 AS s", Limits{});
  ASSERT_TRUE(literal) << literal.error().message;
  EXPECT_EQ(literal->rows[0][0], "0.3");
  EXPECT_EQ(literal->kinds[0][0], CellKind::kDecimal);
}

// Many doubles, not two: DuckDB's VARCHAR cast must give back the very same double each time.
TEST_F(ResultValuesTest, DuckDbDoubleTextRoundTripsForManyValues) {
  auto engine = OpenOne(csv_);
  ASSERT_TRUE(engine);
  auto r = engine->Query(
      "SELECT i, i / 7.0::DOUBLE AS q, 1.0::DOUBLE / (i * 3 + 1) AS inv, exp(i / 10.0) AS e "
      "FROM range(1, 101) t(i)",
      Limits{});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 100u);
  for (size_t k = 0; k < r->rows.size(); ++k) {
    const double i = static_cast<double>(k + 1);
    EXPECT_EQ(ParseDouble(*r->rows[k][1]), i / 7.0) << *r->rows[k][1];
    EXPECT_EQ(ParseDouble(*r->rows[k][2]), 1.0 / (i * 3 + 1)) << *r->rows[k][2];
    // Shortest: as short as std::to_chars's shortest form (whole numbers keep their ".0").
    const std::string& text = *r->rows[k][1];
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, i / 7.0);
    std::string shortest(buf, end);
    if (shortest.find_first_of(".e") == std::string::npos) shortest += ".0";
    EXPECT_EQ(text, shortest);
  }
}

TEST_F(ResultValuesTest, LongMultiByteCellsAreCutOnACharacterWithAMark) {
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\u20ac";  // 3 bytes each: 300 bytes
  ResultTable table;
  table.columns = {"text", "short"};
  table.types = {"VARCHAR", "VARCHAR"};
  table.rows = {{euros, std::string("ok")}};
  table.kinds = {{CellKind::kText, CellKind::kText}};
  table.row_count = 1;
  const std::string out = RenderResult(table, 30);
  std::string cut;
  for (int i = 0; i < 66; ++i) cut += "\u20ac";  // 198 bytes: the 67th would pass 200
  EXPECT_NE(out.find(cut + "\u2026 | ok\n"), std::string::npos) << out;
  EXPECT_EQ(out.find(cut + "\u20ac"), std::string::npos);
  // A cell of exactly 200 bytes is whole, with no mark.
  table.rows = {{std::string(200, 'x'), std::string("ok")}};
  EXPECT_NE(RenderResult(table, 30).find(std::string(200, 'x') + " | ok\n"), std::string::npos);
}

}  // namespace
}  // namespace quarry::engine
