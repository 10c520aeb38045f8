// The knowledge files: each kind read with its values, bad files refused with the file, the line
// and the problem, retrieval for a question within its budget, discovery of .quarry/, and check
// against a real DuckDB engine over a CSV (a stale verified query, a removed column).
#include <gtest/gtest.h>

#include <fstream>

#include "quarry/knowledge/knowledge.h"
#include "support/test_support.h"

namespace quarry::knowledge {
namespace {

using quarry::testing::TempDir;
namespace fs = std::filesystem;

constexpr const char* kMetrics = R"(metrics:
  revenue:
    sql: sum(amount)
    table: sales
    filter: status = 'paid'
    time: order_date
    description: Money received for paid orders, before refunds.
    synonyms: [turnover, takings]
  order count:
    sql: count(*)
    table: sales
)";

constexpr const char* kTable = R"(grain: one order
description: Orders from the web shop.
columns:
  amount:
    meaning: order value
    unit: USD
  status:
    meaning: where the order stands
    values:
      paid: settled by the customer
      refunded: money returned
  email:
    meaning: the customer's address
    values: [ana@shop.example]
    personal: true
  region: the sales region
)";

constexpr const char* kQuery = R"(---
question: What is the revenue by region?
verified_by: ana
verified_at: 2026-11-02
tags: [revenue, region]
---
Revenue per region, paid orders only.

```sql
SELECT region, sum(amount) AS revenue FROM sales WHERE status = 'paid' GROUP BY region ORDER BY region
```
)";

class KnowledgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() / ".quarry";
    Write("metrics.yaml", kMetrics);
    Write("tables/sales.yaml", kTable);
    Write("relationships.yaml",
          "relationships:\n  - from: sales.region\n    to: regions.name\n"
          "    cardinality: many-to-one\n    note: regions are named, not numbered\n");
    Write("glossary.yaml",
          "terms:\n  active customer:\n    means: a customer with a paid order in the last 90 "
          "days\n    synonyms: [active buyer]\n  top customer:\n    means: by revenue\n"
          "    metric: revenue\n");
    Write("rules/test-accounts.md",
          "# Test accounts\n\nExclude orders whose email ends in @test.example.\n");
    Write("queries/revenue-by-region.md", kQuery);
    Write("notes.txt", "not knowledge: ignored");
  }
  void Write(const std::string& name, const std::string& text) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
  }
  // The error of loading after `name` is written as `text`.
  std::string ErrorOf(const std::string& name, const std::string& text) {
    Write(name, text);
    auto k = Load(dir_);
    EXPECT_FALSE(k) << name;
    if (k) return "";
    EXPECT_EQ(k.error().code, Error::Code::kUsage);
    return k.error().message;
  }

  TempDir tmp_;
  fs::path dir_;
};

TEST_F(KnowledgeTest, EachKindIsReadWithItsValuesAndWhereItWasWritten) {
  auto k = Load(dir_);
  ASSERT_TRUE(k) << k.error().message;
  ASSERT_EQ(k->metrics.size(), 2u);
  const Metric& revenue = k->metrics[0];
  EXPECT_EQ(revenue.name, "revenue");
  EXPECT_EQ(revenue.sql, "sum(amount)");
  EXPECT_EQ(revenue.table, "sales");
  EXPECT_EQ(revenue.filter, "status = 'paid'");
  EXPECT_EQ(revenue.time, "order_date");
  EXPECT_EQ(revenue.synonyms, (std::vector<std::string>{"turnover", "takings"}));
  EXPECT_EQ(revenue.origin.file, "metrics.yaml");
  EXPECT_EQ(revenue.origin.line, 2);
  EXPECT_EQ(k->metrics[1].name, "order count");
  EXPECT_EQ(k->metrics[1].origin.line, 9);

  ASSERT_EQ(k->tables.size(), 1u);
  const TableDoc& sales = k->tables[0];
  EXPECT_EQ(sales.table, "sales");  // from the file's name
  EXPECT_EQ(sales.grain, "one order");
  ASSERT_EQ(sales.columns.size(), 4u);
  EXPECT_EQ(sales.columns[0].unit, "USD");
  EXPECT_EQ(sales.columns[1].values,
            (std::vector<std::pair<std::string, std::string>>{{"paid", "settled by the customer"},
                                                              {"refunded", "money returned"}}));
  EXPECT_TRUE(sales.columns[2].personal);
  EXPECT_EQ(sales.columns[3].meaning, "the sales region");

  ASSERT_EQ(k->relationships.size(), 1u);
  EXPECT_EQ(k->relationships[0].from, "sales.region");
  EXPECT_EQ(k->relationships[0].cardinality, "many-to-one");
  ASSERT_EQ(k->terms.size(), 2u);
  EXPECT_EQ(k->terms[1].metric, "revenue");
  ASSERT_EQ(k->rules.size(), 1u);
  EXPECT_EQ(k->rules[0].title, "Test accounts");
  EXPECT_EQ(k->rules[0].text, "Exclude orders whose email ends in @test.example.");
  ASSERT_EQ(k->queries.size(), 1u);
  const VerifiedQuery& q = k->queries[0];
  EXPECT_EQ(q.name, "revenue-by-region");
  EXPECT_EQ(q.question, "What is the revenue by region?");
  EXPECT_EQ(q.verified_by, "ana");
  EXPECT_EQ(q.verified_at, "2026-11-02");
  EXPECT_EQ(q.tags, (std::vector<std::string>{"revenue", "region"}));
  EXPECT_TRUE(q.sql.starts_with("SELECT region, sum(amount)"));
  EXPECT_FALSE(q.result_rows.has_value());
  EXPECT_EQ(k->size(), 8u);
}

TEST_F(KnowledgeTest, BadFilesNameTheFileTheLineAndTheProblem) {
  struct Case {
    std::string file, text, error;
  };
  const std::vector<Case> cases = {
      {"metrics.yaml", "metrics:\n  revenue:\n    table: sales\n",
       "knowledge: metrics.yaml:2: metric 'revenue' has no sql: give an aggregate expression, "
       "e.g. sql: sum(amount)"},
      {"metrics.yaml",
       "metrics:\n  revenue:\n    sql: sum(amount)\n    table: sales\n    filtr: x\n",
       "knowledge: metrics.yaml:5: metric 'revenue' has an unknown key 'filtr' (known: sql, "
       "table, filter, time, description, synonyms)"},
      {"metrics.yaml", "metrics:\n  revenue: [\n",
       "knowledge: metrics.yaml:3: not valid YAML: end of sequence flow not found"},
      {"metrics.yaml", "- a\n- b\n",
       "knowledge: metrics.yaml:1: the file must be a map with 'metrics:' at the top"},
      {"metrics.yaml",
       "metrics:\n  revenue:\n    sql: sum(amount)\n    table: sales\n  Revenue:\n    sql: "
       "sum(x)\n    table: sales\n",
       "knowledge: metrics.yaml:5: metric 'Revenue' is defined twice (first at line 2)"},
      {"relationships.yaml", "relationships:\n  - from: sales\n    to: regions.name\n",
       "knowledge: relationships.yaml:2: a relationship's from and to are table.column, e.g. "
       "from: orders.customer_id"},
      {"relationships.yaml", "relationships:\n  - from: a.b\n    to: c.d\n    cardinality: lots\n",
       "knowledge: relationships.yaml:4: cardinality is one of many-to-one, one-to-many, "
       "one-to-one, many-to-many, not 'lots'"},
      {"tables/sales.yaml", "columns:\n  amount:\n    personal: maybe\n",
       "knowledge: tables/sales.yaml:3: personal of column 'amount' must be true or false, not "
       "'maybe'"},
      {"glossary.yaml", "terms:\n  churn:\n    synonyms: [lost]\n",
       "knowledge: glossary.yaml:2: term 'churn' says nothing: give means:, a column: or a "
       "metric:"},
      {"rules/empty.md", "# Nothing\n\n",
       "knowledge: rules/empty.md: the rule is empty: write "
       "what must always be done"},
      {"queries/q.md", "---\nquestion: How many?\n---\nno sql here\n",
       "knowledge: queries/q.md: no ```sql block: put the query's SQL in one, closed by ```"},
      {"queries/q.md", "---\nquestion: How many?\n---\n```sql\nSELECT 1\n",
       "knowledge: queries/q.md:4: the ```sql block is never closed by ```"},
      {"queries/q.md", "```sql\nSELECT 1\n```\n",
       "knowledge: queries/q.md:1: no question: start the file with front matter, ---, "
       "question: ..., ---"},
      {"queries/q.md", "---\nquestion: How many?\nresult_rows: many\n---\n```sql\nSELECT 1\n```\n",
       "knowledge: queries/q.md:3: result_rows must be a whole number, not 'many'"},
      {"metrics.yaml",
       "metrics:\n  revenue:\n    sql: sum(amount)\n    sql: sum(other)\n    table: sales\n",
       "knowledge: metrics.yaml:4: metric 'revenue' gives 'sql' twice"},
      {"metrics.yaml", "metrics:\n  \"\":\n    sql: sum(amount)\n    table: sales\n",
       "knowledge: metrics.yaml:2: a metric has an empty name"},
      {"metrics.yml", "metrics: {}\n",
       "knowledge: metrics.yml: knowledge files end in .yaml: rename it metrics.yaml"},
      {"rules/r.yaml", "x: 1\n", "knowledge: rules/r.yaml: files in rules/ end in .md: rename it"},
      {"tables/orders.yaml", "table: sales\n",
       "knowledge: tables/sales.yaml: table 'sales' is described twice (also in "
       "tables/orders.yaml)"},
      {"queries/q.md",
       "---\nquestion: How many?\n---\n```sql\nSELECT 1\n```\n```sql\nSELECT 2\n```\n",
       "knowledge: queries/q.md:7: a second ```sql block: a verified query holds one query"},
      {"rules/nul.md", std::string("# Nul\n\0text\n", 12),
       "knowledge: rules/nul.md: holds a NUL byte: a knowledge file is text (YAML or Markdown)"},
  };
  for (const Case& c : cases) {
    SetUp();  // a good folder again, then the one bad file
    std::error_code ec;
    fs::remove_all(dir_, ec);
    SetUp();
    EXPECT_EQ(ErrorOf(c.file, c.text), c.error) << c.file << ":\n" << c.text;
  }
}

TEST_F(KnowledgeTest, HostileFilesAreErrorsNeverCrashes) {
  const std::vector<std::string> texts = {
      std::string(200000, '['),                  // nesting past yaml-cpp's depth guard
      "metrics: &a\n  x: *a\n",                  // an alias of itself
      std::string("metrics:\n  \xff\xfe: 1\n"),  // not UTF-8
      "metrics:\n  revenue:\n    sql: [1, 2]\n    table: sales\n",  // a list for text
      std::string(2 << 20, '#'),                                    // over 1 MiB
  };
  for (const auto& text : texts) {
    Write("metrics.yaml", text);
    auto k = Load(dir_);
    EXPECT_FALSE(k) << text.substr(0, 40);
    if (!k) {
      EXPECT_TRUE(k.error().message.starts_with("knowledge: metrics.yaml")) << k.error().message;
    }
  }
  auto missing = Load(tmp_.path() / "nowhere");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);
}

// A cloned repository's .quarry/ must not send local files to the model provider: a link is
// refused wherever it stands, and what cannot be read is an error, never silently no knowledge.
TEST_F(KnowledgeTest, LinksAndUnreadableFilesAreRefusedNeverFollowedOrSkipped) {
  fs::create_symlink("/etc/passwd", dir_ / "rules" / "readme.md");
  auto k = Load(dir_);
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().message,
            "knowledge: rules/readme.md: is a symbolic link; knowledge files must be regular "
            "files in the folder (copy the file in instead)");
  fs::remove(dir_ / "rules" / "readme.md");
  fs::remove(dir_ / "glossary.yaml");
  fs::create_symlink(dir_ / "nowhere.yaml", dir_ / "glossary.yaml");  // dangling
  k = Load(dir_);
  ASSERT_FALSE(k);
  EXPECT_TRUE(k.error().message.starts_with("knowledge: glossary.yaml: is a symbolic link"))
      << k.error().message;
  fs::remove(dir_ / "glossary.yaml");
  fs::remove_all(dir_ / "queries");
  fs::create_directory_symlink("/etc", dir_ / "queries");
  k = Load(dir_);
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().message, "knowledge: queries/: is a symbolic link; make it a folder");
  fs::remove(dir_ / "queries");
  // A byte-order mark is not part of the text: the rule keeps its title.
  Write("rules/test-accounts.md", "\xEF\xBB\xBF# Test accounts\n\nLeave them out.\n");
  k = Load(dir_);
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_EQ(k->rules[0].title, "Test accounts");
}

TEST_F(KnowledgeTest, AQuestionGetsItsMetricItsNearestVerifiedQueryAndEveryRuleWithinBudget) {
  auto k = Load(dir_);
  ASSERT_TRUE(k) << k.error().message;
  Selection s = Retrieve(*k, "What was the turnover by region last year?", 2000, {"sales"});
  ASSERT_FALSE(s.text.empty());
  // The rule always; the metric named by its synonym, first after the rules; the verified
  // query nearest the question.
  ASSERT_GE(s.items.size(), 3u);
  EXPECT_EQ(s.items[0], "rule test-accounts (rules/test-accounts.md)");
  EXPECT_EQ(s.items[1], "metric revenue (metrics.yaml:2)");
  EXPECT_NE(std::ranges::find(s.items,
                              "verified query revenue-by-region "
                              "(queries/revenue-by-region.md)"),
            s.items.end());
  EXPECT_NE(s.text.find("- revenue: sum(amount) over sales where status = 'paid'; dates from "
                        "order_date"),
            std::string::npos)
      << s.text;
  EXPECT_NE(s.text.find("```sql\nSELECT region, sum(amount)"), std::string::npos);
  EXPECT_NE(s.text.find("Exclude orders whose email ends in @test.example."), std::string::npos);
  // A personal column is named and marked, its values never shown.
  EXPECT_NE(s.text.find("  - email: the customer's address; personal data\n"), std::string::npos)
      << s.text;
  EXPECT_EQ(s.text.find("ana@shop.example"), std::string::npos);
  EXPECT_LE(s.tokens, 2000);
  EXPECT_TRUE(s.left_out.empty());

  // A small budget keeps the rule and the named metric, and leaves the rest out whole; the
  // section stays within it, headings included.
  Selection tight = Retrieve(*k, "What was the turnover by region last year?", 200, {"sales"});
  ASSERT_GE(tight.items.size(), 2u);
  EXPECT_EQ(tight.items[0], "rule test-accounts (rules/test-accounts.md)");
  EXPECT_EQ(tight.items[1], "metric revenue (metrics.yaml:2)");
  EXPECT_FALSE(tight.left_out.empty());
  EXPECT_LE(tight.tokens, 200);
  for (int64_t budget : {10, 40, 80, 120, 200, 400}) {
    EXPECT_LE(Retrieve(*k, "turnover by region", budget, {"sales"}).tokens, budget) << budget;
  }

  // Metrics and tables of tables the data does not have are not offered.
  Selection other = Retrieve(*k, "What was the turnover?", 2000, {"invoices"});
  EXPECT_EQ(std::ranges::count_if(other.items,
                                  [](const std::string& i) { return i.starts_with("metric "); }),
            0);
  // Nothing relevant and no rules: nothing at all.
  Knowledge empty;
  EXPECT_EQ(Retrieve(empty, "anything", 2000).text, "");
}

TEST_F(KnowledgeTest, TheFolderIsFoundBesideTheDataOrInTheWorkingDirectory) {
  const fs::path data = tmp_.Write("sales.csv", "a\n1\n");
  EXPECT_EQ(Discover("", {data}, "/nonexistent"), dir_);
  EXPECT_EQ(Discover(tmp_.path() / "mine", {data}, "/"), tmp_.path() / "mine");
  TempDir other;
  const fs::path elsewhere = other.Write("x.csv", "a\n1\n");
  EXPECT_EQ(Discover("", {elsewhere}, other.path()), std::nullopt);
  EXPECT_EQ(Discover("", {elsewhere}, tmp_.path()), dir_);  // the working directory's
  EXPECT_EQ(Discover("", {"postgresql://u@127.0.0.1/db"}, other.path()), std::nullopt);
}

TEST_F(KnowledgeTest, CheckRunsEveryDefinitionAndFindsWhatChanged) {
  const fs::path csv = tmp_.Write(
      "sales.csv",
      "order_id,region,amount,status,email,order_date\n1,North,10.5,paid,a@x.example,2026-01-02\n"
      "2,South,20,paid,b@x.example,2026-01-03\n3,North,7,refunded,c@x.example,2026-01-04\n");
  tmp_.Write("regions.csv", "name,manager\nNorth,Ana\nSouth,Bo\n");
  // The verified query saved with its result; one column documented that the data lacks.
  auto engine = engine::Open({csv, tmp_.path() / "regions.csv"});
  ASSERT_TRUE(engine) << engine.error().message;
  auto k = Load(dir_);
  ASSERT_TRUE(k) << k.error().message;
  auto result = (*engine)->Query(k->queries[0].sql, engine::Limits{});
  ASSERT_TRUE(result) << result.error().message;
  const ResultFingerprint saved = Fingerprint(*result);
  EXPECT_EQ(saved.rows, 2);
  EXPECT_EQ(saved.sha256.size(), 64u);
  k->queries[0].result_rows = saved.rows;
  k->queries[0].result_sha256 = saved.sha256;

  auto findings = Check(*k, **engine, engine::Limits{});
  std::map<std::string, std::string> problems;
  for (const auto& f : findings) problems[f.item] = f.problem;
  EXPECT_EQ(problems.size(), 8u);
  EXPECT_EQ(problems["rule test-accounts"], "");
  EXPECT_EQ(problems["table sales"], "");
  EXPECT_EQ(problems["metric revenue"], "");
  EXPECT_EQ(problems["metric order count"], "");
  EXPECT_EQ(problems["join sales.region = regions.name"], "");
  EXPECT_EQ(problems["term active customer"], "");
  EXPECT_EQ(problems["term top customer"], "");
  EXPECT_EQ(problems["verified query revenue-by-region"], "");

  // A rule too long for the knowledge section is never given: said, with its size.
  std::string long_rule = "# Everything\n\n";
  for (int i = 0; i < 2000; ++i) long_rule += "always ";
  Write("rules/zz-everything.md", long_rule + "\n");
  auto grown = Load(dir_);
  ASSERT_TRUE(grown) << grown.error().message;
  bool seen = false;
  for (const auto& f : Check(*grown, **engine, engine::Limits{})) {
    if (f.item != "rule zz-everything") continue;
    seen = true;
    EXPECT_TRUE(
        f.problem.starts_with("does not fit the knowledge budget of 1500 tokens after the "
                              "rules before it, so no question is given it: shorten it"))
        << f.problem;
  }
  EXPECT_TRUE(seen);

  // The data changes: a row more, a column gone.
  const fs::path changed =
      tmp_.Write("sales.csv",
                 "order_id,region,amount,status,order_date\n1,North,10.5,paid,2026-01-02\n"
                 "2,South,25,paid,2026-01-03\n3,East,7,paid,2026-01-04\n");
  auto again = engine::Open({changed, tmp_.path() / "regions.csv"});
  ASSERT_TRUE(again) << again.error().message;
  problems.clear();
  for (const auto& f : Check(*k, **again, engine::Limits{})) problems[f.item] = f.problem;
  EXPECT_EQ(problems["table sales"], "column 'email' of sales does not exist");
  EXPECT_EQ(problems["verified query revenue-by-region"], "it returned 2 row(s) when saved, 3 now");
  EXPECT_EQ(problems["metric revenue"], "");
  // A definition cannot replace the rest of the check's statement, and must be an aggregate.
  k->metrics[0].sql = "max(x) FROM (SELECT 1 AS x) --";
  k->metrics[1].sql = "amount";
  problems.clear();
  for (const auto& f : Check(*k, **again, engine::Limits{})) problems[f.item] = f.problem;
  EXPECT_TRUE(problems["metric revenue"].starts_with("does not run: "))
      << problems["metric revenue"];
  EXPECT_EQ(problems["metric order count"],
            "is not an aggregate: it gives 3 rows, not one (write sum(...), count(*), avg(...))");
  // A glossary value must occur in its column.
  k->terms[0].column = "sales.status";
  k->terms[0].value = "paid";
  k->terms[1].column = "sales.status";
  k->terms[1].value = "cancelled'); DROP TABLE sales; --";
  problems.clear();
  for (const auto& f : Check(*k, **again, engine::Limits{})) problems[f.item] = f.problem;
  EXPECT_EQ(problems["term active customer"], "");
  EXPECT_EQ(problems["term top customer"],
            "value 'cancelled'); DROP TABLE sales; --' does not occur in sales.status");
  // A table joined to itself checks like any join.
  k->relationships[0].from = "regions.manager";
  k->relationships[0].to = "regions.name";
  problems.clear();
  for (const auto& f : Check(*k, **again, engine::Limits{})) problems[f.item] = f.problem;
  EXPECT_EQ(problems["join regions.manager = regions.name"],
            "joins no rows: the columns share no value");
  // A metric that no longer runs names the engine's error.
  k->metrics[0].sql = "sum(no_such_column)";
  problems.clear();
  for (const auto& f : Check(*k, **again, engine::Limits{})) problems[f.item] = f.problem;
  EXPECT_TRUE(problems["metric revenue"].starts_with("does not run: "))
      << problems["metric revenue"];
}

}  // namespace
}  // namespace quarry::knowledge
