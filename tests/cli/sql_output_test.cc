// `quarry sql` output for scripts (issue 8): --format json carries typed cells (numbers with
// round-trip precision, wide integers as exact strings, null, marked BLOBs), --format csv
// round-trips through Python's csv module, and text output cuts long cells visibly on a UTF-8
// character boundary.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::MakeSqlite;
using quarry::testing::RunProcess;
using quarry::testing::TempDir;

class SqlOutputTest : public ::testing::Test {
 protected:
  testing::ProcessResult Quarry(std::vector<std::string> args) {
    args.insert(args.begin(), quarry::testing::QuarryBinary().string());
    return RunProcess(args, dir_.path());
  }
  json SqlJson(const std::filesystem::path& data, const std::string& sql) {
    auto r = Quarry({"sql", "--format", "json", data.string(), sql});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }
  TempDir dir_;
};

TEST_F(SqlOutputTest, CleanedSumOfTextStoredNumbersIsExact) {
  const auto db = dir_.path() / "sales.sqlite";
  MakeSqlite(db,
             "CREATE TABLE sales(year INTEGER, amount INTEGER);"
             "INSERT INTO sales VALUES (2023, 700000), (2024, '1,000,000'), (2024, '1,000,000'),"
             "  (2024, '500,000');");
  // The card tells the model why a plain sum would be wrong.
  auto schema = Quarry({"schema", "--format", "json", db.string()});
  ASSERT_EQ(schema.exit_code, 0) << schema.err;
  const json cards = json::parse(schema.out);
  const json& amount = cards["tables"][0]["columns"][1];
  ASSERT_EQ(amount["name"], "amount");
  ASSERT_EQ(amount["notes"].size(), 1u);
  EXPECT_TRUE(amount["notes"][0].get<std::string>().starts_with(
      "declared INTEGER, stored as integer in 1 row, text in 3"))
      << amount["notes"];

  const json j = SqlJson(db,
                         "SELECT sum(CAST(replace(amount, ',', '') AS INTEGER)) AS total "
                         "FROM sales WHERE year=2024");
  EXPECT_EQ(j["types"], json::array({"INTEGER"}));
  ASSERT_TRUE(j["rows"][0][0].is_number_integer()) << j;
  EXPECT_EQ(j["rows"][0][0].get<int64_t>(), 2500000);
}

TEST_F(SqlOutputTest, SqliteJsonCellsAreTyped) {
  const auto db = dir_.path() / "world.sqlite";
  std::string sql = "CREATE TABLE country(life REAL, flag BLOB, big INTEGER, name TEXT);";
  for (int i = 0; i < 56; ++i) sql += "INSERT INTO country VALUES (52.5, NULL, NULL, NULL);";
  sql += "INSERT INTO country VALUES (56.599999999999454, x'00FF41', 9007199254740993, '42');";
  MakeSqlite(db, sql);
  const json j = SqlJson(db,
                         "SELECT avg(life) AS a, 0.1 + 0.2 AS s, count(*) AS n, max(flag) AS f, "
                         "max(big) AS big, max(name) AS t, NULL AS z, "
                         "9007199254740992 AS edge FROM country");
  const json& row = j["rows"][0];
  ASSERT_TRUE(row[0].is_number_float()) << j;
  EXPECT_EQ(row[0].get<double>(), 52.571929824561394);
  EXPECT_EQ(row[1].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(row[2], 57);
  EXPECT_EQ(row[3], json({{"base64", "AP9B"}}));
  EXPECT_EQ(row[4], "9007199254740993");  // past 2^53 a double would read ...992
  EXPECT_EQ(row[5], "42");                // text stays text, even when it looks like a number
  EXPECT_TRUE(row[6].is_null());
  EXPECT_EQ(row[7], 9007199254740992);
  EXPECT_EQ(j["types"], json::parse(R"(["REAL", "REAL", "INTEGER", "BLOB", "INTEGER", "TEXT",
                                       "NULL", "INTEGER"])"));
  // The text the digits came from, as printed: not 15 digits.
  auto text = Quarry({"sql", db.string(), "SELECT avg(life) AS a, 0.1 + 0.2 AS s FROM country"});
  EXPECT_NE(text.out.find("52.571929824561394 | 0.30000000000000004"), std::string::npos)
      << text.out;
}

TEST_F(SqlOutputTest, DuckDbJsonKeepsWideNumbersExact) {
  const auto csv = dir_.path() / "ids.csv";
  {
    std::ofstream out(csv);
    out << "id,big\n1,12345678901234567891\n2,unknown\n";
  }
  const json j =
      SqlJson(csv,
              "SELECT CAST(big AS HUGEINT) AS h, "
              "CAST('12345678901234567891' AS DECIMAL(38,0)) AS d, 504488.21::DECIMAL(18,2) AS m, "
              "0.1::DOUBLE + 0.2::DOUBLE AS s, id, true AS b, '\\x00\\xFFA'::BLOB AS blob, "
              "NULL::DOUBLE AS z, 'inf'::DOUBLE AS inf FROM ids WHERE id = 1");
  const json& row = j["rows"][0];
  EXPECT_EQ(row[0], "12345678901234567891");
  EXPECT_EQ(row[1], "12345678901234567891");
  ASSERT_TRUE(row[2].is_number_float()) << j;
  EXPECT_EQ(row[2].get<double>(), 504488.21);
  EXPECT_EQ(row[3].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(row[4], 1);
  EXPECT_EQ(row[5], true);
  EXPECT_EQ(row[6], json({{"base64", "AP9B"}}));
  EXPECT_TRUE(row[7].is_null());
  EXPECT_EQ(row[8], "inf");  // JSON has no infinity
  EXPECT_EQ(j["types"][0], "HUGEINT");
  EXPECT_EQ(j["types"][1], "DECIMAL(38,0)");
  EXPECT_EQ(j["types"][2], "DECIMAL(18,2)");
  // The dumped text itself carries the 17 digits.
  auto raw =
      Quarry({"sql", "--format", "json", csv.string(), "SELECT 0.1::DOUBLE + 0.2::DOUBLE AS s"});
  EXPECT_NE(raw.out.find("0.30000000000000004"), std::string::npos) << raw.out;
}

TEST_F(SqlOutputTest, CsvRoundTripsThroughPythonsCsvModule) {
  const auto db = dir_.path() / "notes.sqlite";
  MakeSqlite(db,
             "CREATE TABLE notes(id INTEGER, body TEXT, score REAL);"
             "INSERT INTO notes VALUES (1, 'plain', 0.5), (2, 'a, b', NULL),"
             "  (3, 'she said \"hi\"', 1.25), (4, 'two\nlines\r\nhere', 2.0), (5, '', 3.5);");
  auto r = Quarry(
      {"sql", "--format", "csv", db.string(), "SELECT id, body, score FROM notes ORDER BY id"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto file = dir_.path() / "out.csv";
  {
    std::ofstream out(file, std::ios::binary);
    out << r.out;
  }
  auto py = RunProcess({"/usr/bin/python3", "-c",
                        "import csv, json, sys\n"
                        "print(json.dumps(list(csv.reader(open(sys.argv[1], newline='')))))",
                        file.string()},
                       dir_.path());
  ASSERT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(json::parse(py.out), json::parse(R"([
      ["id", "body", "score"],
      ["1", "plain", "0.5"],
      ["2", "a, b", ""],
      ["3", "she said \"hi\"", "1.25"],
      ["4", "two\nlines\r\nhere", "2.0"],
      ["5", "", "3.5"]])"));
  // NULL is an empty field, the empty string a quoted one.
  EXPECT_NE(r.out.find("2,\"a, b\",\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5,\"\",3.5\n"), std::string::npos) << r.out;

  auto capped = Quarry({"sql", "--format", "csv", "--max-rows", "2", db.string(),
                        "SELECT id FROM notes ORDER BY id"});
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_EQ(capped.out, "id\n1\n2\n");
  EXPECT_NE(capped.err.find("5 rows, first 2 written"), std::string::npos) << capped.err;
}

TEST_F(SqlOutputTest, TextOutputCutsLongCellsOnACharacterBoundary) {
  const auto db = dir_.path() / "long.sqlite";
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\u20ac";  // 300 bytes
  MakeSqlite(db, "CREATE TABLE t(s TEXT); INSERT INTO t VALUES ('" + euros + "');");
  auto r = Quarry({"sql", db.string(), "SELECT s, 1 AS n FROM t"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string cut;
  for (int i = 0; i < 66; ++i) cut += "\u20ac";
  EXPECT_NE(r.out.find("\n" + cut + "\u2026 | 1\n"), std::string::npos) << r.out;
  // JSON output is not a preview: the whole cell.
  const json j = SqlJson(db, "SELECT s FROM t");
  EXPECT_EQ(j["rows"][0][0], euros);
}

}  // namespace
}  // namespace quarry
