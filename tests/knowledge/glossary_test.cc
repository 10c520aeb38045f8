// Remembered clarifications: Define finds what the glossary or the metrics already say of a
// phrase a clarification asks about (and stays silent when that is unclear), and SaveTerm
// appends a term to glossary.yaml keeping the file's own text, refusing what it cannot append
// safely and what is defined already.
#include <gtest/gtest.h>

#include <fstream>

#include "quarry/knowledge/knowledge.h"
#include "support/test_support.h"

namespace quarry::knowledge {
namespace {

using quarry::testing::ReadFile;
using quarry::testing::TempDir;
namespace fs = std::filesystem;

class GlossaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() / ".quarry";
    Write("metrics.yaml",
          "metrics:\n  revenue:\n    sql: sum(amount)\n    table: sales\n"
          "    synonyms: [turnover]\n  order count:\n    sql: count(*)\n    table: sales\n");
    Write("glossary.yaml",
          "# Reviewed by the sales team.\nterms:\n    active customer:   # four spaces here\n"
          "        means: a paid order in the last 90 days\n        synonyms: [active buyer]\n"
          "    top customer:\n        means: by revenue\n        metric: revenue\n");
  }
  void Write(const std::string& name, const std::string& text) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
  }
  Knowledge Loaded() {
    auto k = Load(dir_);
    EXPECT_TRUE(k) << k.error().message;
    return k ? *k : Knowledge{};
  }

  TempDir tmp_;
  fs::path dir_;
};

TEST_F(GlossaryTest, DefineFindsTheTermOrMetricAskedAbout) {
  const Knowledge k = Loaded();
  // By the term the model named: a term (any case, spacing), a synonym, a metric's synonym.
  auto top = Define(k, "Top  Customer", "");
  ASSERT_TRUE(top);
  EXPECT_EQ(top->item, "term top customer (glossary.yaml:6)");
  EXPECT_EQ(top->text,
            "top customer: by revenue → metric revenue [glossary.yaml:6]; revenue: sum(amount) "
            "over sales (also called: turnover) [metrics.yaml:2]");
  auto buyer = Define(k, "active buyer", "");
  ASSERT_TRUE(buyer);
  EXPECT_EQ(buyer->item, "term active customer (glossary.yaml:3)");
  auto turnover = Define(k, "turnover", "");
  ASSERT_TRUE(turnover);
  EXPECT_EQ(turnover->item, "metric revenue (metrics.yaml:2)");
  EXPECT_FALSE(Define(k, "top product", "Top product by units or by revenue?"))
      << "a named term the files do not define is asked";
  EXPECT_FALSE(Define(k, "customer", "")) << "a part of a term is not the term";
  // No term named: the one glossary term standing in the question.
  auto in_question = Define(k, "", "Who is the top customer: by revenue or by orders?");
  ASSERT_TRUE(in_question);
  EXPECT_EQ(in_question->item, "term top customer (glossary.yaml:6)");
  // ... but not a metric named among the choices, and not when two terms stand in it.
  EXPECT_FALSE(Define(k, "", "By revenue or by order count?"));
  EXPECT_FALSE(Define(k, "", "The top customer, or each active customer?"));
  EXPECT_FALSE(Define(k, "", "Which region do you mean?"));
  EXPECT_FALSE(Define(Knowledge{}, "top customer", ""));
}

// An answer cites what its SQL rests on: a metric by its expression over its table (and its
// filter, when it has one), a verified query by its whole SQL; case and spacing aside.
TEST_F(GlossaryTest, AnAnswersSqlCitesTheMetricsAndVerifiedQueriesItRestsOn) {
  Write("metrics.yaml",
        "metrics:\n  revenue:\n    sql: sum(amount)\n    table: sales\n"
        "    filter: status = 'paid'\n  order count:\n    sql: count(*)\n    table: sales\n");
  Write("queries/by-region.md",
        "---\nquestion: Orders by region?\n---\n```sql\nSELECT region, count(*) FROM sales "
        "GROUP BY region;\n```\n");
  const Knowledge k = Loaded();
  EXPECT_EQ(RestsOn(k, "SELECT SUM( amount ) FROM sales WHERE status='paid'"),
            std::vector<std::string>{"metric revenue (metrics.yaml:2)"});
  EXPECT_EQ(RestsOn(k, "SELECT sum(amount) FROM sales"), std::vector<std::string>{})
      << "without its filter it is not the metric";
  EXPECT_EQ(RestsOn(k, "SELECT count(*) FROM refunds"), std::vector<std::string>{})
      << "over another table it is not the metric";
  EXPECT_EQ(RestsOn(k, "select REGION, COUNT(*)\nfrom SALES group by region"),
            (std::vector<std::string>{"metric order count (metrics.yaml:6)",
                                      "verified query by-region (queries/by-region.md)"}));
  EXPECT_TRUE(RestsOn(k, "").empty());
  EXPECT_TRUE(RestsOn(Knowledge{}, "SELECT 1").empty());
}

TEST_F(GlossaryTest, ATermIsAppendedKeepingTheFileAndReadsBack) {
  const std::string before = ReadFile(dir_ / "glossary.yaml");
  Term t;
  t.name = "top channel";
  t.means = "by \"revenue\": the channel: with the most";  // quotes and colons stay text
  t.metric = "revenue";
  auto saved = SaveTerm(dir_, t, "the reply to \"Top channel?\"\n(run 1)");
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_EQ(saved->file, "glossary.yaml");
  EXPECT_EQ(saved->line, 10);
  const std::string after = ReadFile(dir_ / "glossary.yaml");
  EXPECT_EQ(after, before +
                       "    # the reply to \"Top channel?\" (run 1)\n"
                       "    \"top channel\":\n"
                       "      means: \"by \\\"revenue\\\": the channel: with the most\"\n"
                       "      metric: \"revenue\"\n");
  const Knowledge k = Loaded();
  ASSERT_EQ(k.terms.size(), 3u);
  EXPECT_EQ(k.terms[2].name, "top channel");
  EXPECT_EQ(k.terms[2].means, t.means);
  EXPECT_EQ(k.terms[2].metric, "revenue");
  EXPECT_EQ(k.terms[2].origin.line, 10);
  EXPECT_TRUE(Define(k, "top channel", ""));
}

TEST_F(GlossaryTest, AFolderOrFileThatDoesNotExistIsCreated) {
  const fs::path fresh = tmp_.path() / "new" / ".quarry";
  Term t;
  t.name = "big order";
  t.means = "over 500 USD";
  auto saved = SaveTerm(fresh, t, "");
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_EQ(saved->line, 2);
  EXPECT_EQ(ReadFile(fresh / "glossary.yaml"),
            "terms:\n  \"big order\":\n    means: \"over 500 USD\"\n");
  // A glossary of comments only, or `terms:` with nothing under it.
  for (const std::string& text : {std::string("# nothing yet\n"), std::string("terms:\n")}) {
    Write("glossary.yaml", text);
    ASSERT_TRUE(SaveTerm(dir_, t, "")) << text;
    const Knowledge k = Loaded();
    ASSERT_EQ(k.terms.size(), 1u) << text;
    EXPECT_EQ(k.terms[0].name, "big order");
  }
}

TEST_F(GlossaryTest, WhatIsDefinedAlreadyOrCannotBeAppendedIsRefusedAndTheFileKept) {
  const std::string before = ReadFile(dir_ / "glossary.yaml");
  Term t;
  t.means = "something";
  const auto error = [&](const std::string& name, const std::string& synonym = "") {
    t.name = name;
    t.synonyms = synonym.empty() ? std::vector<std::string>{} : std::vector{synonym};
    auto r = SaveTerm(dir_, t, "");
    EXPECT_FALSE(r) << name;
    return r ? std::string() : r.error().message;
  };
  EXPECT_EQ(error("TOP customer"),
            "'TOP customer' is already the glossary term 'top customer' (glossary.yaml:6): "
            "change it there if it has changed");
  EXPECT_EQ(error("Active Buyer"),
            "'Active Buyer' is already the glossary term 'active customer' (glossary.yaml:3): "
            "change it there if it has changed");
  EXPECT_EQ(error("takings", "turnover"),
            "'turnover' is already the metric 'revenue' (metrics.yaml:2): change it there if it "
            "has changed");
  EXPECT_EQ(error("  "), "the term has no name: name the phrase it defines");
  EXPECT_EQ(error(std::string(81, 'w')),
            "the term is 81 bytes: a term is a short phrase of at most 80 bytes");
  t.means = "";
  EXPECT_EQ(error("empty"), "the term 'empty' says nothing: give its meaning");
  EXPECT_EQ(ReadFile(dir_ / "glossary.yaml"), before);
  // A flow-style glossary: the lines to add by hand, and the file as it was.
  t.means = "over 500 USD";
  const std::string flow = "terms: {active customer: a paid order in the last 90 days}\n";
  Write("glossary.yaml", flow);
  const std::string message = error("big order");
  EXPECT_NE(message.find("is not laid out so a term can be added after its terms: add these "
                         "lines under terms: yourself:\n  \"big order\":\n    means: \"over "
                         "500 USD\"\n"),
            std::string::npos)
      << message;
  EXPECT_EQ(ReadFile(dir_ / "glossary.yaml"), flow);
  // A folder that does not load is not written to.
  Write("metrics.yaml", "metrics:\n  revenue: [\n");
  EXPECT_NE(error("big order").find("metrics.yaml:"), std::string::npos);
  EXPECT_EQ(ReadFile(dir_ / "glossary.yaml"), flow);
}

}  // namespace
}  // namespace quarry::knowledge
