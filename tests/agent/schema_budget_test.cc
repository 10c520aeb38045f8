// The schema budget at its edges: a single table too wide for it gets a partial card that puts
// the columns the question is about first; 2000 tables keep the prompt, inspect_schema and its
// errors bounded; small budgets are kept.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "quarry/agent/agent.h"
#include "agent/open_engine.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

using testing::OpenOrDie;

// A CSV of 501 columns (c000..c499 and zebra_stripes at position 490), 3 rows; column c250
// holds the word "platypus".
const std::filesystem::path& Wide500Csv() {
  static TempDir dir;
  static const std::filesystem::path path = [] {
    const auto out = dir.path() / "wide500.csv";
    std::vector<std::string> names;
    for (int k = 0; k < 500; ++k) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "c%03d", k);
      names.push_back(buf);
    }
    names.insert(names.begin() + 490, "zebra_stripes");
    std::ofstream f(out);
    for (size_t k = 0; k < names.size(); ++k) f << (k ? "," : "") << names[k];
    f << "\n";
    for (int row = 1; row <= 3; ++row) {
      for (size_t k = 0; k < names.size(); ++k) {
        f << (k ? "," : "");
        if (names[k] == "c250") {
          f << (row == 1 ? "platypus" : "wombat");
        } else {
          f << row * 10 + static_cast<int>(k % 7);
        }
      }
      f << "\n";
    }
    return out;
  }();
  return path;
}

// scripts/make_wide_sqlite.py with --tables 2000, made once per test binary run.
const std::filesystem::path& Db2000() {
  static TempDir dir;
  static const std::filesystem::path path = [] {
    const auto out = dir.path() / "wide2000.sqlite";
    const auto r = quarry::testing::RunProcess(
        {"/usr/bin/python3", (SourceDir() / "scripts" / "make_wide_sqlite.py").string(),
         out.string(), "--tables", "2000", "--rows", "3"},
        dir.path());
    if (r.exit_code != 0) throw std::runtime_error("make_wide_sqlite.py failed: " + r.err);
    return out;
  }();
  return path;
}

TEST(SchemaBudgetTest, ATableOverTheBudgetGetsAPartialCardWithTheColumnAskedFirst) {
  auto engine = OpenOrDie({Wide500Csv()});
  ASSERT_EQ(engine->describe().size(), 1u);
  ASSERT_EQ(engine->describe().front().columns.size(), 501u);
  SchemaView view;
  const std::string prompt = SystemPrompt(*engine, "What are the zebra stripes?", {}, &view);
  EXPECT_FALSE(view.whole);
  ASSERT_EQ(view.partial.size(), 1u) << view.text;
  EXPECT_EQ(view.listed, 0u);
  EXPECT_LE(view.tokens_estimated, 2000);
  EXPECT_GE(view.tokens_estimated, 1500) << "the budget is used: " << view.text;
  // The column asked about comes first, before c000.
  const size_t zebra = view.text.find("\n  zebra_stripes ");
  ASSERT_NE(zebra, std::string::npos) << view.text;
  EXPECT_LT(zebra, view.text.find("\n  c000 "));
  EXPECT_NE(view.text.find("more columns (inspect_schema with `table` and `columns`)\n"),
            std::string::npos)
      << view.text;
  EXPECT_NE(view.text.find("The table is larger than this prompt holds"), std::string::npos);
  EXPECT_EQ(view.text.find("1 tables"), std::string::npos);
  EXPECT_NE(prompt.find(view.text), std::string::npos);

  // A word found only in a column's samples brings that column first too.
  SystemPrompt(*engine, "How many platypus rows?", {}, &view);
  const size_t platypus = view.text.find("\n  c250 ");
  ASSERT_NE(platypus, std::string::npos) << view.text;
  EXPECT_LT(platypus, view.text.find("\n  c000 "));

  // A smaller budget: fewer columns, still within it, the asked column still shown.
  SchemaOptions small;
  small.budget_tokens = 300;
  SystemPrompt(*engine, "zebra_stripes", small, &view);
  EXPECT_LE(view.tokens_estimated, 300) << view.text;
  EXPECT_NE(view.text.find("\n  zebra_stripes "), std::string::npos) << view.text;
}

TEST(SchemaBudgetTest, TwoThousandTablesStayBoundedInThePromptAndInspectSchema) {
  auto engine = OpenOrDie({Db2000()});
  ASSERT_EQ(engine->describe().size(), 2000u);
  SchemaView view;
  SystemPrompt(*engine, "How many invoices in billing7_invoices?", {}, &view);
  EXPECT_LE(view.tokens_estimated, 2000) << view.text;
  EXPECT_EQ(view.full.front(), "billing7_invoices");
  EXPECT_EQ(view.full.size() + view.compact.size() + view.partial.size() + view.listed, 2000u);
  EXPECT_NE(view.text.find(" more (inspect_schema without `table` lists them, `prefix` filters "
                           "by name)\n"),
            std::string::npos)
      << view.text;

  Config config;
  Evidence evidence;
  std::optional<sandbox::LastResult> last;
  ToolContext context{*engine, config, evidence, last, nullptr};
  const auto tools = DefaultTools(false, false);
  const Tool& inspect = tools.front();
  ASSERT_EQ(inspect.schema.name, "inspect_schema");

  // Without arguments: the first page of the index, with counts by prefix, under 8 KB; the
  // pages together name every table once.
  const Observation first = inspect.run(json::object(), context);
  EXPECT_EQ(first.failure, FailureClass::kNone);
  EXPECT_LE(first.text.size(), 8000u);
  EXPECT_NE(first.text.find("2000 tables (give `table` for one table's card); 1 to "),
            std::string::npos)
      << first.text.substr(0, 400);
  EXPECT_NE(first.text.find("by name prefix: billing2_ 15, billing3_ 15,"), std::string::npos)
      << first.text.substr(0, 400);
  std::set<std::string> seen;
  size_t offset = 0;
  for (int page = 0; page < 100; ++page) {
    const Observation obs = page == 0 ? first : inspect.run(json{{"offset", offset}}, context);
    ASSERT_EQ(obs.failure, FailureClass::kNone) << obs.text;
    EXPECT_LE(obs.text.size(), 8000u);
    size_t at = 0;
    while ((at = obs.text.find("\n  ", at)) != std::string::npos) {
      at += 3;
      const std::string name = obs.text.substr(at, obs.text.find(' ', at) - at);
      EXPECT_TRUE(seen.insert(name).second) << name;
    }
    const size_t next = obs.text.find("`offset` ");
    if (next == std::string::npos) break;
    offset = std::stoul(obs.text.substr(next + 9));
  }
  EXPECT_EQ(seen.size(), 2000u);

  // A prefix narrows the index, ignoring case.
  const Observation billing7 = inspect.run(json{{"prefix", "BILLING7_"}}, context);
  EXPECT_TRUE(billing7.text.starts_with("15 tables whose names start with 'BILLING7_'"))
      << billing7.text;
  EXPECT_NE(billing7.text.find("\n  billing7_invoices (3 rows, "), std::string::npos);
  const Observation none = inspect.run(json{{"prefix", "zzz"}}, context);
  EXPECT_TRUE(none.text.starts_with("no table whose names start with 'zzz' (of 2000)"))
      << none.text;
  const Observation negative = inspect.run(json{{"offset", -1}}, context);
  EXPECT_EQ(negative.failure, FailureClass::kBadArguments);

  // An unknown table: the nearest names and the count, not 2000 names.
  const Observation missing = inspect.run(json{{"table", "biling7_invoice"}}, context);
  EXPECT_EQ(missing.failure, FailureClass::kBadArguments);
  EXPECT_LE(missing.text.size(), 1000u) << missing.text;
  EXPECT_TRUE(missing.text.starts_with(
      "no table named 'biling7_invoice'; the nearest names: billing7_invoices"))
      << missing.text;
  EXPECT_NE(missing.text.find("(of 2000 tables: inspect_schema without `table` lists them"),
            std::string::npos)
      << missing.text;
}

TEST(SchemaBudgetTest, SmallBudgetsAreKept) {
  auto engine = OpenOrDie({Db2000()});
  for (const int64_t budget : {100, 150, 250, 600, 1200}) {
    SchemaOptions options;
    options.budget_tokens = budget;
    SchemaView view;
    SystemPrompt(*engine, "billing_invoices totals", options, &view);
    if (view.tokens_estimated > budget) {
      // Only the frame (what the selection means, the count of tables) may go over, and the
      // trace's notes say so.
      EXPECT_EQ(view.full.size() + view.compact.size() + view.partial.size(), 0u) << view.text;
      EXPECT_NE(view.notes.back().find("over the " + std::to_string(budget) + "-token budget"),
                std::string::npos);
      EXPECT_LE(budget, 100);
    }
    EXPECT_NE(view.text.find("inspect_schema without `table` lists them"), std::string::npos)
        << view.text;
  }
}

TEST(SchemaBudgetTest, AFewTablesAreAllNamedInTheUnknownTableError) {
  auto engine = OpenOrDie({SourceDir() / "data" / "chinook.sqlite"});
  Config config;
  Evidence evidence;
  std::optional<sandbox::LastResult> last;
  ToolContext context{*engine, config, evidence, last, nullptr};
  const Observation obs =
      DefaultTools(false, false).front().run(json{{"table", "Tracks"}}, context);
  EXPECT_EQ(obs.failure, FailureClass::kBadArguments);
  EXPECT_TRUE(obs.text.starts_with("no table named 'Tracks'; the tables are: ")) << obs.text;
  EXPECT_NE(obs.text.find("Track"), std::string::npos);
}

}  // namespace
}  // namespace quarry::agent
