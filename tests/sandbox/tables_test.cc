// Every registered table reaches Python with its types, whatever its format, since a table
// the model can query in SQL but not read in pandas would make it guess:
// `quarry python` over a Parquet file and a .duckdb database made here by DuckDB, and over
// data/chinook.sqlite, each script printing dtypes and an aggregate; and the row cap, told.
#include <duckdb.h>
#include <gtest/gtest.h>

#include "quarry/agent/agent.h"
#include "quarry/engine/engine.h"
#include "quarry/sandbox/sandbox.h"
#include "support/test_support.h"

namespace quarry::sandbox {
namespace {

namespace fs = std::filesystem;
using quarry::testing::RunProcess;

// Runs SQL statements in a DuckDB at `path` ("" for in-memory).
void DuckDb(const std::string& path, const std::vector<std::string>& statements) {
  duckdb_database db;
  duckdb_connection conn;
  ASSERT_EQ(duckdb_open(path.empty() ? nullptr : path.c_str(), &db), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
  for (const std::string& sql : statements) {
    duckdb_result r;
    const bool ok = duckdb_query(conn, sql.c_str(), &r) == DuckDBSuccess;
    EXPECT_TRUE(ok) << sql << ": " << (duckdb_result_error(&r) ? duckdb_result_error(&r) : "");
    duckdb_destroy_result(&r);
  }
  duckdb_disconnect(&conn);
  duckdb_close(&db);
}

class TablesTest : public ::testing::Test {
 protected:
  void SetUp() override { QUARRY_SKIP_WITHOUT_SANDBOX(NamespaceUnavailableReason()); }
  quarry::testing::ProcessResult Python(const std::string& data, const std::string& script) {
    const fs::path file = cwd_.Write("script.py", script);
    return RunProcess({quarry::testing::QuarryBinary().string(), "python", data, file.string()},
                      cwd_.path(), {}, {});
  }
  quarry::testing::TempDir cwd_;
};

TEST_F(TablesTest, ParquetKeepsItsTypes) {
  const fs::path parquet = cwd_.path() / "visits.parquet";
  DuckDb("",
         {"COPY (SELECT * FROM (VALUES "
          "(1, 1.5, '02134', DATE '2024-01-31', TIMESTAMP '2024-02-01 10:30:00', "
          "12.50::DECIMAL(10,2)), "
          "(2, NULL, '00501', DATE '2024-03-01', NULL, 3.25::DECIMAL(10,2)), "
          "(NULL, 2.25, NULL, NULL, TIMESTAMP '2024-02-02 00:00:00', NULL), "
          "(40, 4.0, '', DATE '2023-12-25', TIMESTAMP '2023-12-25 08:00:00', 1.00::DECIMAL(10,2))"
          ") t(n, x, zip, d, ts, price)) TO '" +
          parquet.string() + "' (FORMAT parquet)"});
  auto r = Python(
      parquet.string(),
      "print(' '.join(f'{c}:{t}' for c, t in df.dtypes.astype(str).items()))\n"
      "print(df['zip'].tolist())\n"
      "print(int(df['n'].sum()), int(df['n'].isna().sum()), df['x'].sum(), df['price'].sum())\n"
      "print(df['d'].max().date(), df['ts'].min())\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string expected =
      "n:Int64 x:float64 zip:object d:datetime64[ns] ts:datetime64[ns] price:float64\n"
      "['02134', '00501', nan, '']\n"
      "43 1 7.75 16.75\n"
      "2024-03-01 2023-12-25 08:00:00\n";
  EXPECT_EQ(r.out, expected) << r.err;
  EXPECT_EQ(r.err.find("pyarrow"), std::string::npos) << r.err;
}

TEST_F(TablesTest, DuckDbDatabaseGivesEveryTableInEverySchema) {
  const fs::path db = cwd_.path() / "shop.duckdb";
  DuckDb(db.string(),
         {"CREATE TABLE orders(id INTEGER, amount DECIMAL(8,2), placed DATE)",
          "INSERT INTO orders VALUES (1, 10.25, '2024-05-01'), (2, 4.75, '2024-05-02'), "
          "(3, NULL, NULL)",
          "CREATE SCHEMA crm", "CREATE TABLE crm.customers(id BIGINT, zip VARCHAR, vip BOOLEAN)",
          "INSERT INTO crm.customers VALUES (7, '02134', true), (8, NULL, false)"});
  auto r = Python(
      db.string(),
      "print(sorted(tables))\n"
      "o, c = tables['orders'], tables['crm.customers']\n"
      "print(o.dtypes.astype(str).tolist(), c.dtypes.astype(str).tolist())\n"
      "print(o['amount'].sum(), int(c['id'].sum()), c['zip'].tolist(), int(c['vip'].sum()))\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "['crm.customers', 'orders']\n"
            "['Int64', 'float64', 'datetime64[ns]'] ['Int64', 'object', 'boolean']\n"
            "15.0 15 ['02134', nan] 1\n")
      << r.err;
}

TEST_F(TablesTest, UnusualTypesArriveAsTextWithANote) {
  const fs::path db = cwd_.path() / "odd.duckdb";
  DuckDb(db.string(), {"CREATE TYPE mood AS ENUM ('sad', 'ok')",
                       "CREATE TABLE odd AS SELECT [1, 2] AS tags, {'a': 1} AS s, 'ab'::BLOB AS b, "
                       "18446744073709551615::UBIGINT AS big, "
                       "170141183460469231731687303715884105727::HUGEINT AS huge, "
                       "TIME '10:30:00' AS t, INTERVAL 3 DAY AS span, 'ok'::mood AS m, "
                       "TIMESTAMPTZ '2024-01-01 12:00:00+00' AS tz, 7::UTINYINT AS small"});
  auto r = Python(db.string(),
                  "print(df.dtypes.astype(str).tolist())\n"
                  "print(df['tags'][0], df['t'][0], df['m'][0], int(df['small'][0]) + 1)\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[1, 2] 10:30:00 ok 8"), std::string::npos) << r.out << r.err;
  // A time zone survives; integers past Int64 stay exact as text, and that is said.
  EXPECT_NE(r.out.find("'datetime64[ns, UTC]', 'Int64']"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("column 'big' kept as read, not int"), std::string::npos) << r.err;
  // Nested values and blobs are text in Python, and the model and the user are told.
  EXPECT_NE(r.err.find("column 'tags' (INTEGER[]) is text in Python"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("column 'b' (BLOB) is text in Python"), std::string::npos) << r.err;
}

TEST_F(TablesTest, SqliteTablesKeepTheirTypes) {
  auto r = Python(
      (quarry::testing::SourceDir() / "data" / "chinook.sqlite").string(),
      "inv, trk = tables['Invoice'], tables['Track']\n"
      "print(len(tables), inv['InvoiceId'].dtype, inv['InvoiceDate'].dtype, inv['Total'].dtype)\n"
      "print(round(inv['Total'].sum(), 2), len(inv), inv['BillingState'].isna().sum())\n"
      "print(trk['Milliseconds'].dtype, int(trk['Composer'].notna().sum()))\n"
      "print(inv.groupby(inv['InvoiceDate'].dt.year)['Total'].sum().round(2).to_dict())\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "11 Int64 datetime64[ns] float64\n"
            "2328.6 412 202\n"
            "Int64 2526\n"
            // Per year, as sqlite3 computes it from the file.
            "{2021: 449.46, 2022: 481.45, 2023: 469.58, 2024: 477.53, 2025: 450.58}\n")
      << r.err;
}

TEST_F(TablesTest, ACsvIsSeenAsTheEngineSeesIt) {
  const fs::path csv =
      cwd_.Write("zips.csv", "zip,n,when\n02134,1,2024-01-02\n00501,,2024-02-03\n");
  auto r = Python(csv.string(), "print(df['zip'].tolist(), df['n'].dtype, df['when'].dtype)\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "['02134', '00501'] Int64 datetime64[ns]\n");
}

// The cap is stated to the model with the table's true row count (an observation note, and
// `quarry python`'s stderr through the same notes).
TEST_F(TablesTest, RowCapIsToldWithTheTrueCount) {
  auto engine = engine::Open({quarry::testing::SourceDir() / "data" / "sales.csv"});
  ASSERT_TRUE(engine.has_value());
  const int64_t rows = (*engine)->describe().front().row_count;
  ASSERT_EQ(rows, 2065);
  Options o;
  o.workdir = cwd_.path() / "run" / "workdir";
  o.tables_dir = cwd_.path() / "run" / "tables";
  auto tables = agent::SandboxTables(**engine, o.tables_dir, 100);
  ASSERT_TRUE(tables.has_value()) << tables.error().message;
  o.tables = *tables;
  auto r = RunPython("print(len(df))", o);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stdout_text, "100\n");
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("only the first 100 of its 2,065 rows"), std::string::npos)
      << r->notes[0];
  EXPECT_NE(RenderObservation(*r).find("note: table sales: Python holds only the first 100"),
            std::string::npos);
}

}  // namespace
}  // namespace quarry::sandbox
