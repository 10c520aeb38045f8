// The cleaning recipes the system prompt gives (prompts/cleaning_*.md), run on numbers written
// for people in each engine they are written for: a recipe that reads '(1,234.00)' as +1234
// flips a sign in every answer that follows it (issue 25). Each recipe is checked to be in its
// prompt word for word, so the prompt cannot drift from what is tested here.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <duckdb.h>
#include <sqlite3.h>

#include "support/pg_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

struct Want {
  const char* text;
  std::optional<double> value;  // nullopt: the recipe leaves it out (NULL)
};

// What an analyst reads each value as. Recipes may leave out what they cannot read, never
// read it wrong.
const std::vector<Want> kValues = {
    {"(1,234.00)", -1234.0}, {"1,234.00", 1234.0},
    {"-15.5", -15.5},        {"(15.50)", -15.5},
    {"2,000.50", 2000.5},    {"$12.50", 12.5},
    {"-$0.50", -0.5},        {"45%", 45.0},
    {"7 kg", 7.0},           {"-3 kg", -3.0},
    {"N/A", std::nullopt},   {"1,234.00-", -1234.0},
    {"$(5.00)", -5.0},       {"USD 1,234.00", 1234.0},
    {"10-20", std::nullopt},
};

std::string Prompt(const char* name) {
  std::string text = quarry::testing::ReadFile(quarry::testing::SourceDir() / "prompts" / name);
  return std::regex_replace(text, std::regex("\\s+"), " ");
}

// The recipe over column x of a VALUES list, one row per value, in kValues' order.
std::string Query(const std::string& expression, bool sqlite = false) {
  std::string values;
  for (size_t i = 0; i < kValues.size(); ++i) {
    values += std::string(i ? ", " : "") + "(" + std::to_string(i) + ", '" + kValues[i].text + "')";
  }
  const std::string from = sqlite
                               ? "(SELECT column1 AS i, column2 AS x FROM (VALUES " + values + "))"
                               : "(VALUES " + values + ") AS t(i, x)";
  return "SELECT " + expression + " FROM " + from + " ORDER BY i";
}

void Check(const std::vector<std::optional<std::string>>& got, bool may_leave_out,
           const std::string& engine) {
  ASSERT_EQ(got.size(), kValues.size()) << engine;
  for (size_t i = 0; i < kValues.size(); ++i) {
    const Want& want = kValues[i];
    if (!got[i]) {
      EXPECT_TRUE(!want.value || may_leave_out) << engine << ": '" << want.text << "' read as NULL";
      continue;
    }
    ASSERT_TRUE(want.value.has_value()) << engine << ": '" << want.text << "' read as " << *got[i];
    EXPECT_NEAR(std::stod(*got[i]), *want.value, 1e-9) << engine << ": '" << want.text << "'";
  }
}

TEST(CleaningRecipesTest, DuckDbRecipeKeepsTheSignOfEveryNumberWrittenForPeople) {
  const std::string recipe =
      "(CASE WHEN regexp_matches(trim(x), '^[^0-9]*[(-]|-$') THEN -1 ELSE 1 END) * "
      "TRY_CAST(regexp_replace(trim(x), '^[^0-9.]*|[^0-9.]*$|,', '', 'g') AS DOUBLE)";
  ASSERT_NE(Prompt("cleaning_duckdb.md").find(recipe), std::string::npos);
  duckdb_database db = nullptr;
  duckdb_connection con = nullptr;
  ASSERT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &con), DuckDBSuccess);
  duckdb_result result;
  ASSERT_EQ(duckdb_query(con, Query("CAST(" + recipe + " AS VARCHAR)").c_str(), &result),
            DuckDBSuccess)
      << duckdb_result_error(&result);
  std::vector<std::optional<std::string>> got;
  for (idx_t r = 0; r < duckdb_row_count(&result); ++r) {
    if (duckdb_value_is_null(&result, 0, r)) {
      got.emplace_back();
    } else {
      char* v = duckdb_value_varchar(&result, 0, r);
      got.emplace_back(v);
      duckdb_free(v);
    }
  }
  duckdb_destroy_result(&result);
  duckdb_disconnect(&con);
  duckdb_close(&db);
  Check(got, false, "DuckDB");
}

TEST(CleaningRecipesTest, SqliteRecipeLeavesOutWhatItCannotReadAndFlipsNoSign) {
  const std::string v = "replace(replace(replace(trim(x), ',', ''), '(', '-'), ')', '')";
  ASSERT_NE(Prompt("cleaning_sqlite.md").find("v = " + v), std::string::npos);
  const std::string check =
      "ltrim(v, '-') GLOB '[0-9]*' AND ltrim(v, '-') NOT GLOB '*[^0-9.]*' AND v NOT GLOB "
      "'*.*.*' AND v NOT GLOB '?*-*'";
  ASSERT_NE(Prompt("cleaning_sqlite.md").find(check), std::string::npos);
  std::string expression = "CASE WHEN " + check + " THEN CAST(v AS REAL) END";
  expression = std::regex_replace(expression, std::regex("\\bv\\b"), v);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &raw), SQLITE_OK);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.get(), Query(expression, true).c_str(), -1, &stmt, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db.get());
  std::vector<std::optional<std::string>> got;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    if (sqlite3_column_type(stmt, 0) == SQLITE_NULL) {
      got.emplace_back();
    } else {
      got.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    }
  }
  sqlite3_finalize(stmt);
  Check(got, true, "SQLite");
}

TEST(CleaningRecipesTest, PostgresRecipeKeepsTheSignOfEveryNumberWrittenForPeople) {
  const std::string v = "NULLIF(regexp_replace(trim(x), '^[^0-9.]*|[^0-9.]*$|,', '', 'g'), '')";
  const std::string prompt = Prompt("cleaning_postgres.md");
  ASSERT_NE(prompt.find("v = " + v), std::string::npos);
  const std::string check = "CASE WHEN v ~ '^[0-9]+(\\.[0-9]+)?$' THEN v::numeric END";
  const std::string sign = "CASE WHEN trim(x) ~ '^[^0-9]*[(-]|-$' THEN -1 ELSE 1 END";
  ASSERT_NE(prompt.find(check), std::string::npos);
  ASSERT_NE(prompt.find(sign), std::string::npos);
  std::string expression = "(" + check + ") * (" + sign + ")";
  expression = std::regex_replace(expression, std::regex("\\bv\\b"), "(" + v + ")");
  const auto rows = test::SharedPgServer().Rows("chinook", Query(expression));
  std::vector<std::optional<std::string>> got;
  for (const auto& row : rows) got.push_back(row.empty() ? std::nullopt : row[0]);
  Check(got, false, "PostgreSQL");
}

}  // namespace
}  // namespace quarry
