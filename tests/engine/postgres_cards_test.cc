// PostgreSQL schema cards from the catalogs: tables and views the role reads, schema-qualified
// outside the search path, types with NOT NULL and primary keys, foreign keys, comments, the
// planner's row counts and pg_stats; names and types only without profiling; and the note when
// the role can write.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "quarry/engine/engine.h"
#include "support/pg_server.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::test::SharedPgServer;

const TableCard& Card(const Engine& engine, const std::string& name) {
  const auto& cards = engine.describe();
  const auto it =
      std::find_if(cards.begin(), cards.end(), [&](const TableCard& c) { return c.name == name; });
  if (it == cards.end()) throw std::runtime_error("no card " + name);
  return *it;
}

const ColumnCard& Column(const TableCard& card, const std::string& name) {
  const auto it = std::find_if(card.columns.begin(), card.columns.end(),
                               [&](const ColumnCard& c) { return c.name == name; });
  if (it == card.columns.end()) throw std::runtime_error("no column " + name);
  return *it;
}

bool HasNote(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

TEST(PostgresCards, CatalogCardsStatisticsAndWriteRole) {
  const auto& pg = SharedPgServer();
  pg.Exec("quarry_types", "ANALYZE");
  auto opened = Open({pg.Url("quarry_types", "reader")});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  const Engine& engine = **opened;
  std::vector<std::string> names;
  for (const auto& c : engine.describe()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"measure_summary", "measures", "sales.Order Items",
                                             "sales.customers", "sales.orders"}));
  EXPECT_EQ(engine.sources()[0].tables, names);
  const TableCard& measures = Card(engine, "measures");
  EXPECT_EQ(measures.row_count, 3);
  EXPECT_TRUE(HasNote(measures.notes, "comment: One measurement per row"));
  EXPECT_EQ(Column(measures, "id").type, "integer PRIMARY KEY");
  EXPECT_EQ(Column(measures, "label").type, "text NOT NULL");
  const ColumnCard& amount = Column(measures, "amount");
  EXPECT_EQ(amount.type, "numeric(20,6)");
  EXPECT_EQ(amount.notes,
            std::vector<std::string>{"comment: Amount in euros, exact to the micro-euro."});
  EXPECT_TRUE(amount.profiled);
  EXPECT_EQ(amount.null_count, 1);
  EXPECT_EQ(amount.distinct_count, 2);
  EXPECT_EQ(amount.min, "0.000001");
  EXPECT_EQ(amount.max, "12345678901234.123456");
  EXPECT_TRUE(HasNote(Card(engine, "measure_summary").notes, "a view"));
  const TableCard& orders = Card(engine, "sales.orders");
  EXPECT_EQ(orders.row_count, 4);
  ASSERT_EQ(orders.foreign_keys.size(), 1u);
  EXPECT_EQ(orders.foreign_keys[0].column, "customer_id");
  EXPECT_EQ(orders.foreign_keys[0].ref_table, "sales.customers");
  EXPECT_EQ(orders.foreign_keys[0].ref_column, "customer_id");
  const TableCard& items = Card(engine, "sales.Order Items");
  EXPECT_EQ(items.row_count, 5);
  // A key of two columns: neither is unique alone, so neither says PRIMARY KEY.
  EXPECT_EQ(Column(items, "Order Id").type, "integer NOT NULL");
  EXPECT_EQ(Column(items, "Line No").type, "integer NOT NULL");
  EXPECT_TRUE(HasNote(items.notes, "primary key (Order Id, Line No): unique as a combination"));
  // Its range counts the most common value (10), which pg_stats keeps out of the histogram.
  EXPECT_EQ(Column(items, "Order Id").min, "10");
  EXPECT_EQ(Column(items, "Order Id").max, "13");
  // pg_stats has no distinct estimate for json (no equality): none is shown, not "~0".
  EXPECT_EQ(Column(measures, "doc").distinct_count, 0);
  EXPECT_TRUE(HasNote(items.notes,
                      "PostgreSQL needs these names in double quotes, as written here: "
                      "sales.\"Order Items\", \"Order Id\", \"Line No\", \"Product Name\""));
  EXPECT_FALSE(HasNote(orders.notes, "double quotes"));
  ASSERT_EQ(items.foreign_keys.size(), 1u);
  EXPECT_EQ(items.foreign_keys[0].ref_table, "sales.orders");
  const ColumnCard& country = Column(Card(engine, "sales.customers"), "country");
  EXPECT_EQ(country.null_count, 1);
  EXPECT_EQ(country.distinct_count, 2);
  const std::string text = RenderCards(engine.describe());
  EXPECT_NE(text.find("table sales.Order Items (~5 rows)"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  doc json, ~1 null\n"), std::string::npos) << text;
  // "Line No" holds 1 and 2; pg_stats keeps only 1 as common, and has no histogram: no range
  // (it read "only 1").
  EXPECT_FALSE(Column(items, "Line No").min.has_value()) << text;
  // The server is named whole (it is short and its database is at the end), not cut as a path.
  EXPECT_TRUE(text.starts_with("data: " + engine.sources()[0].path + "\n")) << text;
  EXPECT_NE(text.find("customer_id integer NOT NULL -> sales.customers.customer_id"),
            std::string::npos)
      << text;
  // The role reads only: no write warning anywhere.
  EXPECT_TRUE(engine.sources()[0].notes.empty());
  for (const auto& c : engine.describe()) EXPECT_FALSE(HasNote(c.notes, "can write")) << c.name;
  // Analyzed tables: the planner's counts, marked as estimates on the card.
  EXPECT_TRUE(measures.estimated);
  EXPECT_NE(text.find("table measures (~3 rows)"), std::string::npos) << text;
  EXPECT_NE(text.find("amount numeric(20,6), ~1 null"), std::string::npos) << text;

  // Tables the planner knows nothing about (never analyzed): counted when small, and their
  // statistics read from a capped sample (all of a small table; TABLESAMPLE of a larger one).
  pg.Exec("postgres", "DROP DATABASE IF EXISTS pgengine_fresh");
  pg.Exec("postgres", "CREATE DATABASE pgengine_fresh");
  pg.Exec("pgengine_fresh",
          "CREATE TABLE fresh (id int, kind text) WITH (autovacuum_enabled = off); "
          "INSERT INTO fresh SELECT g, CASE g % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' END "
          "FROM generate_series(1, 300) g; "
          "CREATE TABLE big (id int, kind text) WITH (autovacuum_enabled = off); "
          "INSERT INTO big SELECT g, 'k' || (g % 7) FROM generate_series(1, 20000) g");
  auto fresh = Open({pg.Url("pgengine_fresh", "reader")});
  ASSERT_TRUE(fresh.has_value()) << fresh.error().message;
  const TableCard& small = Card(**fresh, "fresh");
  EXPECT_EQ(small.row_count, 300);
  EXPECT_TRUE(small.profiled);
  EXPECT_FALSE(small.estimated);  // counted, and read whole
  const ColumnCard& kind = Column(small, "kind");
  EXPECT_EQ(kind.null_count, 100);
  EXPECT_EQ(kind.distinct_count, 2);
  EXPECT_FALSE(kind.distinct_approx);
  EXPECT_EQ(kind.samples, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Column(small, "id").distinct_count, 300);
  EXPECT_FALSE(HasNote(small.notes, "sample"));
  const TableCard& big = Card(**fresh, "big");
  EXPECT_EQ(big.row_count, 20000);
  ASSERT_TRUE(HasNote(big.notes, "column statistics from a sample of ")) << big.notes.size();
  EXPECT_TRUE(big.estimated);
  const ColumnCard& big_kind = Column(big, "kind");
  EXPECT_TRUE(big_kind.distinct_approx);
  EXPECT_EQ(big_kind.distinct_count, 7);
  EXPECT_EQ(big_kind.null_count, 0);
  // A sample's counts are scaled to the table: every sampled id differs, so all 20000 do (the
  // sample alone said 1000, which read as a fact).
  EXPECT_EQ(Column(big, "id").distinct_count, 20000);
  EXPECT_NE(RenderCards((*fresh)->describe()).find("table big (~20000 rows)"), std::string::npos);
  // Nulls in proportion: a third of the rows are NULL in `half`, and the card says about that.
  pg.Exec("pgengine_fresh",
          "CREATE TABLE nulls (v text) WITH (autovacuum_enabled = off); "
          "INSERT INTO nulls SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE 'x' END "
          "FROM generate_series(1, 30000) g");
  auto again = Open({pg.Url("pgengine_fresh", "reader")});
  ASSERT_TRUE(again.has_value()) << again.error().message;
  const int64_t scaled = Column(Card(**again, "nulls"), "v").null_count;
  EXPECT_GT(scaled, 7000) << "a sample's nulls unscaled";
  EXPECT_LT(scaled, 13000);
  EXPECT_EQ(Column(big, "id").samples.size(), 3u);

  // Without profiling: names and types, no counts.
  OpenOptions quick;
  quick.profile = false;
  auto names_only = Open({pg.Url("chinook", "reader")}, quick);
  ASSERT_TRUE(names_only.has_value()) << names_only.error().message;
  const TableCard& track = Card(**names_only, "track");
  EXPECT_EQ(track.row_count, 0);
  EXPECT_FALSE(Column(track, "unit_price").profiled);
  EXPECT_EQ(Column(track, "unit_price").type, "numeric(10,2) NOT NULL");
  EXPECT_EQ(Column(track, "track_id").type, "integer PRIMARY KEY");
  EXPECT_EQ(track.foreign_keys.size(), 3u);

  // Roles that can write are named, with what they can do and what to use instead.
  auto writer = Open({pg.Url("chinook", "writer")}, quick);
  ASSERT_TRUE(writer.has_value()) << writer.error().message;
  // For the user, about the source as a whole: not a note on the first table.
  EXPECT_EQ(
      (*writer)->sources()[0].notes,
      std::vector<std::string>{
          "the role writer can write to 11 tables (INSERT, UPDATE, DELETE or TRUNCATE); quarry "
          "only reads, but use a role with only pg_read_all_data (README)"});
  EXPECT_FALSE(HasNote((*writer)->describe().front().notes, "can write"));
  // PostgreSQL 17 added MAINTAIN (granted on every table by pg_maintain): no write privilege,
  // but ANALYZE rewrites the statistics even in a read-only transaction. 15 has no such role.
  const auto version = pg.Rows("postgres", "SHOW server_version_num");
  ASSERT_EQ(version.size(), 1u);
  if (std::atoi(version[0][0].value_or("0").c_str()) >= 170000) {
    pg.Exec("postgres",
            "CREATE ROLE maintainer LOGIN; GRANT pg_read_all_data, pg_maintain TO maintainer");
    auto maintainer = Open({pg.Url("chinook", "maintainer")}, quick);
    ASSERT_TRUE(maintainer.has_value()) << maintainer.error().message;
    EXPECT_EQ((*maintainer)->sources()[0].notes,
              std::vector<std::string>{
                  "the role maintainer can maintain 11 tables (MAINTAIN: ANALYZE rewrites their "
                  "statistics even in a read-only transaction); quarry only reads, but use a role "
                  "with only pg_read_all_data (README)"});
    maintainer->reset();
    pg.Exec("postgres", "DROP ROLE maintainer");
  }
  auto admin = Open({pg.Url("chinook", "quarry_admin")}, quick);
  ASSERT_TRUE(admin.has_value()) << admin.error().message;
  ASSERT_EQ((*admin)->sources()[0].notes.size(), 1u);
  EXPECT_TRUE((*admin)->sources()[0].notes[0].starts_with("the role quarry_admin is a superuser;"));
}

// The sandbox's copy: a CSV per table, from a connection of the export's own, capped, with the
// true count; values as the engine shows them, NULL as kExportNull.
TEST(PostgresExport, CsvPerTableCappedWithTrueCounts) {
  const auto& pg = SharedPgServer();
  auto opened = Open({pg.Url("quarry_types", "reader")});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  quarry::testing::TempDir tmp;
  auto exported = ExportTables(**opened, tmp.path() / "export", 2);
  ASSERT_TRUE(exported.has_value()) << exported.error().message;
  ASSERT_EQ(exported->size(), 5u);
  const TableExport& measures = (*exported)[1];
  EXPECT_EQ(measures.table, "measures");
  EXPECT_EQ(measures.path.filename(), "1_measures.csv");
  EXPECT_EQ(measures.rows_written, 2);
  EXPECT_EQ(measures.row_count, 3);
  ASSERT_EQ(measures.columns.size(), 12u);
  EXPECT_EQ(measures.columns[2], (std::pair<std::string, std::string>{"amount", "numeric(20,6)"}));
  std::ifstream in(measures.path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(
      text.str(),
      "\"id\",\"label\",\"amount\",\"taken_at\",\"readings\",\"tags\",\"doc\",\"docb\",\"uid\","
      "\"span\",\"raw\",\"ok\"\n"
      "1,\"exact\",12345678901234.123456,\"2024-03-01 12:34:56.789+00\",\"{1,2,3}\","
      "\"{alpha,\"\"with space\"\"}\",\"{\"\"k\"\": [1, 2.5, \"\"x\"\"]}\",\"{\"\"a\"\": 1, "
      "\"\"b\"\": 2}\","
      "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\",\"1 day 02:03:04\",\"\\xDE\\xAD\\xBE\\xEF\",true\n"
      "2,\"small\",0.000001,\"1999-12-31 18:59:59+00\",\"{}\",\"{}\",\"null\",\"[]\","
      "\"00000000-0000-0000-0000-000000000000\",\"-3 mons\",\"\",false\n");
  const TableExport& items = (*exported)[2];
  EXPECT_EQ(items.table, "sales.Order Items");
  EXPECT_EQ(items.path.filename(), "2_sales_Order_Items.csv");
  EXPECT_EQ(items.rows_written, 2);
  EXPECT_EQ(items.row_count, 5);
  EXPECT_EQ(items.columns[0].first, "Order Id");
  // Uncapped, NULLs are written as the marker.
  auto all = ExportTables(**opened, tmp.path() / "all", 100);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  std::ifstream again((*all)[1].path);
  std::stringstream full;
  full << again.rdbuf();
  const std::string n(kExportNull);
  EXPECT_NE(full.str().find("3,\"nulls\"," + n + "," + n + "," + n), std::string::npos)
      << full.str();
  EXPECT_EQ((*all)[1].row_count, 3);
  // The engine's own connection is untouched and still answers.
  auto q = (*opened)->Query("SELECT count(*) FROM sales.orders", Limits{});
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->rows[0][0], "4");
}

}  // namespace
}  // namespace quarry::engine
