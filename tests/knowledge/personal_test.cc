// Personal columns: a column the knowledge marks personal shows the model no values in its
// card (no samples, no min or max) and says so, while every other column and every query are
// as the engine gives them. A real DuckDB engine over a CSV.
#include <gtest/gtest.h>

#include <fstream>

#include "quarry/knowledge/knowledge.h"
#include "support/test_support.h"

namespace quarry::knowledge {
namespace {

using quarry::testing::TempDir;
namespace fs = std::filesystem;

const engine::ColumnCard* Column(const std::vector<engine::TableCard>& cards,
                                 const std::string& name) {
  for (const auto& card : cards) {
    for (const auto& c : card.columns) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

TEST(PersonalTest, APersonalColumnShowsNoValuesAndSaysWhy) {
  TempDir tmp;
  const fs::path csv =
      tmp.Write("customers.csv",
                "id,email,birth_date,country\n1,ana@shop.example,1980-02-03,PT\n2,bo@shop.example,"
                "1991-07-08,SE\n3,cy@shop.example,2001-11-12,PT\n");
  fs::create_directories(tmp.path() / "k" / "tables");
  // Any case for the table and the column, as a user writes them.
  std::ofstream(tmp.path() / "k" / "tables" / "Customers.yaml")
      << "columns:\n  EMAIL: {meaning: where we write, personal: true}\n"
         "  birth_date: {meaning: born on, personal: true}\n  country: the country\n";
  auto k = Load(tmp.path() / "k");
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_TRUE(HasPersonalColumns(*k));
  auto engine = engine::Open({csv});
  ASSERT_TRUE(engine) << engine.error().message;
  const auto& raw = (*engine)->describe();
  ASSERT_NE(Column(raw, "email"), nullptr);
  ASSERT_FALSE(Column(raw, "email")->samples.empty()) << "the engine itself samples it";

  PersonalRedaction seen(**engine, *k);
  const auto& cards = seen.describe();
  for (const std::string name : {"email", "birth_date"}) {
    const engine::ColumnCard* c = Column(cards, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_TRUE(c->samples.empty()) << name;
    EXPECT_FALSE(c->min) << name;
    EXPECT_FALSE(c->max) << name;
    EXPECT_EQ(c->distinct_count, Column(raw, name)->distinct_count) << "counts stay";
    ASSERT_FALSE(c->notes.empty()) << name;
    EXPECT_EQ(c->notes.back(), "personal data (tables/Customers.yaml): its values are not shown");
  }
  EXPECT_EQ(Column(cards, "country")->samples, Column(raw, "country")->samples);
  EXPECT_EQ(Column(cards, "id")->max, Column(raw, "id")->max);
  // The same view each time (references stay valid); queries pass through.
  EXPECT_EQ(&seen.describe(), &cards);
  auto result = seen.Query("SELECT count(*) FROM customers WHERE email LIKE '%@shop.example'",
                           engine::Limits{});
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->rows.size(), 1u);
  EXPECT_EQ(result->rows[0][0], "3");
  // A glossary value of a personal column stays out of the knowledge section too, and out of
  // a clarification answered from it; another column's value is shown.
  std::ofstream(tmp.path() / "k" / "glossary.yaml")
      << "terms:\n  vip customer: {means: our VIP, column: customers.email, value: "
         "ana@shop.example}\n  home market: {means: where we began, column: customers.country, "
         "value: PT}\n";
  auto with_terms = Load(tmp.path() / "k");
  ASSERT_TRUE(with_terms) << with_terms.error().message;
  const Selection s = Retrieve(*with_terms, "vip customer in the home market", 1500);
  EXPECT_EQ(s.text.find("ana@shop.example"), std::string::npos) << s.text;
  EXPECT_NE(s.text.find("→ column customers.email = a value not shown (personal data)"),
            std::string::npos)
      << s.text;
  EXPECT_NE(s.text.find("→ column customers.country = 'PT'"), std::string::npos) << s.text;
  auto vip = Define(*with_terms, "vip customer", "");
  ASSERT_TRUE(vip);
  EXPECT_EQ(vip->text.find("ana@shop.example"), std::string::npos) << vip->text;
  // Knowledge without a personal column has none to hide.
  EXPECT_FALSE(HasPersonalColumns(Knowledge{}));
}

}  // namespace
}  // namespace quarry::knowledge
