// Schema cards on the bundled data (three generated CSVs and Chinook), values checked against
// what the files hold.
#include <gtest/gtest.h>

#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::testing::SourceDir;

const ColumnCard& Column(const TableCard& t, const std::string& name) {
  for (const auto& c : t.columns) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no column " + name + " in " + t.name);
}

const TableCard& Table(const Engine& e, const std::string& name) {
  for (const auto& t : e.describe()) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no table " + name);
}

TEST(SchemaCardTest, ThreeCsvsAreThreeTables) {
  const auto data = SourceDir() / "data";
  auto engine = Open({data / "sales.csv", data / "sensors.csv", data / "passengers.csv"});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  EXPECT_EQ((*engine)->dialect(), Dialect::kDuckDB);
  ASSERT_EQ((*engine)->describe().size(), 3u);

  const TableCard& sales = Table(**engine, "sales");
  EXPECT_EQ(sales.row_count, 2065);
  EXPECT_EQ(sales.columns.size(), 11u);
  const ColumnCard& region = Column(sales, "region");
  EXPECT_EQ(region.type, "VARCHAR");
  EXPECT_EQ(region.distinct_count, 5);
  EXPECT_EQ(region.null_count, 0);
  EXPECT_EQ(region.samples,
            (std::vector<std::string>{"North", "East", "South", "West", "Central"}));
  const ColumnCard& date = Column(sales, "order_date");
  EXPECT_EQ(date.type, "DATE");
  EXPECT_EQ(date.min.value_or(""), "2024-01-01");
  EXPECT_EQ(date.max.value_or(""), "2025-12-31");
  const ColumnCard& id = Column(sales, "order_id");
  EXPECT_EQ(id.distinct_count, 2065);
  EXPECT_EQ(id.min.value_or(""), "1");
  EXPECT_EQ(id.max.value_or(""), "2065");
  EXPECT_EQ(id.samples, (std::vector<std::string>{"1", "2", "3"}));

  const TableCard& passengers = Table(**engine, "passengers");
  EXPECT_EQ(passengers.row_count, 340);
  EXPECT_EQ(Column(passengers, "Age").null_count, 79);
  EXPECT_EQ(Column(passengers, "Cabin").null_count, 259);
  EXPECT_EQ(Column(passengers, "Embarked").null_count, 2);
  EXPECT_EQ(Column(passengers, "Survived").distinct_count, 2);

  const TableCard& sensors = Table(**engine, "sensors");
  EXPECT_EQ(sensors.row_count, 600);
  // Temperatures carry unit suffixes, so the sniffer must keep them as text.
  EXPECT_EQ(Column(sensors, "temperature").type, "VARCHAR");
  EXPECT_EQ(Column(sensors, "temperature").null_count, 15);
  EXPECT_EQ(Column(sensors, "status").distinct_count, 6);
  EXPECT_EQ(Column(sensors, "status").samples.front(), "ok");

  // The sources are fingerprinted for the trace.
  ASSERT_EQ((*engine)->sources().size(), 3u);
  EXPECT_EQ((*engine)->sources()[0].sha256, quarry::testing::Sha256File(data / "sales.csv"));
  EXPECT_EQ((*engine)->sources()[0].tables, std::vector<std::string>{"sales"});

  // Tables from different files join in one query.
  auto joined = (*engine)->Query(
      "SELECT (SELECT count(*) FROM sales) + (SELECT count(*) FROM passengers) AS n", Limits{});
  ASSERT_TRUE(joined.has_value()) << joined.error().message;
  EXPECT_EQ(joined->rows[0][0].value_or(""), "2405");
}

TEST(SchemaCardTest, ChinookHasForeignKeysAndCounts) {
  auto engine = Open({SourceDir() / "data" / "chinook.sqlite"});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  EXPECT_EQ((*engine)->dialect(), Dialect::kSQLite);
  EXPECT_EQ((*engine)->describe().size(), 11u);
  const TableCard& track = Table(**engine, "Track");
  EXPECT_EQ(track.row_count, 3503);
  EXPECT_EQ(Column(track, "Composer").null_count, 977);
  EXPECT_EQ(Column(track, "GenreId").distinct_count, 25);
  EXPECT_EQ(Column(track, "UnitPrice").min.value_or(""), "0.99");
  EXPECT_EQ(Column(track, "UnitPrice").max.value_or(""), "1.99");
  EXPECT_EQ(Column(track, "Name").type, "NVARCHAR(200)");
  bool genre_fk = false;
  for (const auto& fk : track.foreign_keys) {
    genre_fk = genre_fk ||
               (fk.column == "GenreId" && fk.ref_table == "Genre" && fk.ref_column == "GenreId");
  }
  EXPECT_TRUE(genre_fk);
  EXPECT_EQ(Table(**engine, "Genre").row_count, 25);
  const std::string text = RenderCards((*engine)->describe());
  EXPECT_NE(text.find("table Track (3503 rows"), std::string::npos);
  // Foreign keys sit on their column; ids read from their range, text from its samples.
  EXPECT_NE(text.find("  GenreId INTEGER -> Genre.GenreId, 25 distinct, 1..25\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  TrackId INTEGER, unique, 1..3503\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Composer NVARCHAR, 977 null, 853 distinct, e.g. 'Steve Harris', 'U2'\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(" 0 null"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("data: ", 0), 0u) << text;  // one source, named once
}

}  // namespace
}  // namespace quarry::engine
