// The csv-spectrum corpus (npm csv-spectrum): every file loads through the DuckDB engine and
// gives exactly the values its JSON twin lists. Empty fields come back as NULL, which the
// corpus writes as "".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

namespace fs = std::filesystem;

class CsvSpectrumTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CsvSpectrumTest, ValuesMatchTheJson) {
  const fs::path root = quarry::testing::SourceDir() / "node_modules" / "csv-spectrum";
  ASSERT_TRUE(fs::exists(root)) << "run scripts/setup.sh --tests (npm ci) first";
  const fs::path csv = root / "csvs" / (GetParam() + ".csv");
  auto expected = nlohmann::ordered_json::parse(
      quarry::testing::ReadFile(root / "json" / (GetParam() + ".json")));

  auto engine = Open({csv});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  const std::string table = (*engine)->describe().at(0).name;
  // Cast every column to text so the comparison is on the characters, as the corpus is.
  std::string select;
  for (const auto& c : (*engine)->describe().at(0).columns) {
    select += (select.empty() ? "" : ", ") + std::string("CAST(\"") + c.name + "\" AS VARCHAR)";
  }
  auto r = (*engine)->Query("SELECT " + select + " FROM \"" + table + "\"", Limits{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->row_count, static_cast<int64_t>(expected.size()));
  const auto& cards = (*engine)->describe().at(0).columns;
  for (size_t i = 0; i < expected.size(); ++i) {
    size_t k = 0;
    for (const auto& [key, value] : expected[i].items()) {
      ASSERT_LT(k, cards.size());
      EXPECT_EQ(cards[k].name, key);
      EXPECT_EQ(r->rows[i][k].value_or(""), value.get<std::string>()) << GetParam() << " row " << i;
      ++k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CsvSpectrumTest,
                         ::testing::Values("comma_in_quotes", "empty", "empty_crlf",
                                           "escaped_quotes", "json", "newlines", "newlines_crlf",
                                           "quotes_and_newlines", "simple", "simple_crlf", "utf8"));

}  // namespace
}  // namespace quarry::engine
