// The task suite's deterministic graders on many answer shapes, traps included, and the
// loader's errors naming the file, the task and the field.
#include <cmath>

#include <gtest/gtest.h>

#include "quarry/bench/suite.h"
#include "support/test_support.h"

namespace quarry::bench {
namespace {

using json = nlohmann::ordered_json;

TEST(ParseWrittenNumberTest, ReadsTheShapesTheVerifyGateFinds) {
  EXPECT_DOUBLE_EQ(ParseWrittenNumber("2.7183053e5").value_or(-1), 271830.53);
  EXPECT_DOUBLE_EQ(ParseWrittenNumber("2.7183053E+05").value_or(-1), 271830.53);
  EXPECT_DOUBLE_EQ(ParseWrittenNumber("27183053e-2").value_or(-1), 271830.53);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("$1,234.50"), 1234.5);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("12.5%"), 12.5);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("-3.5%"), -3.5);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("1.2 million"), 1.2e6);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("1.2M"), 1.2e6);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("$504K"), 504000);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("3.1 bn"), 3.1e9);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("two thousand"), 2000);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("twenty-five"), 25);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("a dozen"), 12);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("one hundred and five"), 105);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("-$17.25"), -17.25);
  EXPECT_DOUBLE_EQ(*ParseWrittenNumber("\xE2\x82\xAC"
                                       "9.99"),
                   9.99);  // €9.99
  EXPECT_FALSE(ParseWrittenNumber("2025-03-01").has_value());
  EXPECT_FALSE(ParseWrittenNumber("2025-12").has_value());
  EXPECT_FALSE(ParseWrittenNumber("half").has_value());
  EXPECT_FALSE(ParseWrittenNumber("").has_value());
}

const Tolerance kCents{false, 0.01};

TEST(GradeNumericTest, FindsTheValueWrittenAnyWay) {
  EXPECT_TRUE(GradeNumeric("Revenue was $141,794.14 in the North.", {141794.14}, kCents).pass);
  EXPECT_TRUE(GradeNumeric("Revenue was 141794.14.", {141794.14}, kCents).pass);
  EXPECT_TRUE(GradeNumeric("It is 141,794.145 dollars", {141794.14}, kCents).pass);
  EXPECT_TRUE(
      GradeNumeric("Women survived at 74.2%, men at 18.9%.", {74.2, 18.9}, {false, 0.05}).pass);
  EXPECT_TRUE(GradeNumeric("There are two thousand rows.", {2000}, {false, 0}).pass);
  // A decrease written with a direction word matches the negative expected value.
  EXPECT_TRUE(GradeNumeric("Revenue fell 3.5% year over year.", {-3.5}, {false, 0.05}).pass);
  EXPECT_TRUE(GradeNumeric("The change was -3.5%.", {-3.5}, {false, 0.05}).pass);
}

TEST(GradeNumericTest, TrapsFail) {
  // A denied number is no claim of it.
  EXPECT_FALSE(GradeNumeric("Total revenue in 2025 was not $271,830.53; it is unknown.",
                            {271830.53}, {false, 0.01})
                   .pass);
  EXPECT_FALSE(
      GradeNumeric("It was NOT $271,830.53 (that figure is wrong).", {271830.53}, {false, 0.01})
          .pass);
  EXPECT_FALSE(GradeNumeric("It isn't 349.", {349}, {false, 0}).pass);
  EXPECT_TRUE(
      GradeNumeric("Not counting refunds, revenue was $271,830.53.", {271830.53}, {false, 0.01})
          .pass);
  // "$1.2 million" for 1,234,567 is 2.8% off: outside 1%, inside 5%.
  const Grade tight = GradeNumeric("Revenue was about $1.2 million.", {1234567}, {true, 0.01});
  EXPECT_FALSE(tight.pass);
  EXPECT_NE(tight.reason.find("1234567"), std::string::npos) << tight.reason;
  EXPECT_NE(tight.reason.find("$1.2 million"), std::string::npos) << tight.reason;
  EXPECT_TRUE(GradeNumeric("Revenue was about $1.2 million.", {1234567}, {true, 0.05}).pass);
  EXPECT_TRUE(GradeNumeric("Revenue was $1.23 million.", {1234567}, {true, 0.01}).pass);
  // A wrong number next to the right one: transposed cents.
  EXPECT_FALSE(GradeNumeric("North: $141,794.41.", {141794.14}, kCents).pass);
  // One of two expected values missing fails, and the reason names it.
  const Grade half = GradeNumeric("North has 141794.14.", {141794.14, 123825.24}, kCents);
  EXPECT_FALSE(half.pass);
  EXPECT_NE(half.reason.find("123825.24"), std::string::npos) << half.reason;
  // A signed positive number is not a decrease.
  EXPECT_FALSE(GradeNumeric("The change was +3.5%.", {-3.5}, {false, 0.05}).pass);
  // A year is not the count it resembles; a date is no number at all.
  EXPECT_FALSE(GradeNumeric("On 2025-03-01 nothing happened.", {2025}, {false, 0}).pass);
  EXPECT_FALSE(GradeNumeric("No numbers here.", {0}, {false, 0}).pass);
  // Digits glued to letters (Q4) are not claims.
  EXPECT_FALSE(GradeNumeric("Q4 was best.", {4}, {false, 0}).pass);
}

TEST(GradePredicateTest, ContainsOnWordBoundariesCaseInsensitively) {
  EXPECT_TRUE(GradePredicate("NORTH leads.", {{"North"}}, {}).pass);
  EXPECT_TRUE(
      GradePredicate("The peak was in December   2025.", {{"2025-12", "December 2025"}}, {}).pass);
  EXPECT_TRUE(
      GradePredicate("The peak month was 2025-12.", {{"2025-12", "December 2025"}}, {}).pass);
  // "North" inside "Northeast" is not the region North.
  const Grade glued = GradePredicate("Northeast leads.", {{"North"}}, {});
  EXPECT_FALSE(glued.pass);
  EXPECT_NE(glued.reason.find("missing \"North\""), std::string::npos) << glued.reason;
  // Every item is needed; any alternative satisfies one.
  EXPECT_FALSE(GradePredicate("North leads.", {{"North"}, {"East"}}, {}).pass);
  const Grade alt = GradePredicate("East is second.", {{"runner-up", "second"}, {"East"}}, {});
  EXPECT_TRUE(alt.pass) << alt.reason;
}

TEST(GradePredicateTest, MustNotContainHitFails) {
  const Grade hit = GradePredicate("North leads; South is last.", {{"North"}}, {{"South"}});
  EXPECT_FALSE(hit.pass);
  EXPECT_NE(hit.reason.find("forbidden \"South\""), std::string::npos) << hit.reason;
  EXPECT_TRUE(
      GradePredicate("North leads; Southeast is not a region.", {{"North"}}, {{"South"}}).pass);
  EXPECT_FALSE(GradePredicate("north, then central", {}, {{"West", "CENTRAL"}}).pass);
}

// ---- Loading ------------------------------------------------------------------------------

class LoadSuiteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "tasks" / "fixtures");
    std::filesystem::create_directories(dir_.path() / "data");
    std::filesystem::copy_file(testing::SourceDir() / "data" / "sales.csv",
                               dir_.path() / "data" / "sales.csv");
  }
  json Task(const std::string& id, const std::string& grader) {
    json t = {{"id", id},
              {"question", "What is the total revenue?"},
              {"data", {"data/sales.csv"}},
              {"difficulty", "easy"},
              {"tags", {"aggregation"}},
              {"grader", grader}};
    if (grader == "numeric") t["tolerance"] = {{"abs", 0.01}};
    if (grader == "judge") t["rubric"] = "Says the total.";
    return t;
  }
  void Write(const json& tasks, const json& truth) {
    dir_.Write("tasks/suite.json", json({{"version", 1}, {"tasks", tasks}}).dump());
    dir_.Write("tasks/truth.json", json({{"tasks", truth}}).dump());
  }
  std::string LoadError() {
    auto suite = LoadSuite(dir_.path() / "tasks", dir_.path());
    if (suite) return "loaded";
    return suite.error().message;
  }
  testing::TempDir dir_;
};

TEST_F(LoadSuiteTest, LoadsTasksTruthAndFixtures) {
  Write(json::array({Task("a", "numeric"), Task("b", "predicate"), Task("c", "judge")}),
        {{"a", {{"values", {504488.21}}}},
         {"b",
          {{"must_contain", json::array({"North", json::array({"x", "y"})})},
           {"must_not_contain", {"South"}}}},
         {"c", {{"facts", {"total 504488.21"}}}}});
  dir_.Write("tasks/fixtures/c.json",
             json({{"source", "scripted"},
                   {"question", "What is the total revenue"},
                   {"data", {"data/sales.csv"}},
                   {"turns", json::array({{{"content", "no tool call"}}})},
                   {"judge_turns", {"{\"verdict\": \"pass\"}", {{"content", "x"}}, "y"}}})
                 .dump());
  auto suite = LoadSuite(dir_.path() / "tasks", dir_.path());
  ASSERT_TRUE(suite) << suite.error().message;
  ASSERT_EQ(suite->tasks.size(), 3u);
  EXPECT_EQ(suite->tasks[0].values, std::vector<double>{504488.21});
  EXPECT_FALSE(suite->tasks[0].tolerance.relative);
  EXPECT_DOUBLE_EQ(suite->tasks[0].tolerance.amount, 0.01);
  EXPECT_EQ(suite->tasks[0].data_paths[0], dir_.path() / "data/sales.csv");
  ASSERT_EQ(suite->tasks[1].must_contain.size(), 2u);
  EXPECT_EQ(suite->tasks[1].must_contain[1], (Alternatives{"x", "y"}));
  EXPECT_EQ(suite->tasks[1].must_not_contain[0], (Alternatives{"South"}));
  EXPECT_FALSE(suite->tasks[1].fixture.has_value());
  ASSERT_TRUE(suite->tasks[2].fixture.has_value());
  ASSERT_EQ(suite->tasks[2].judge_turns.size(), 3u);
  EXPECT_EQ(suite->tasks[2].judge_turns[1]["content"], "x");
  EXPECT_FALSE(suite->tasks[2].fixture->contains("judge_turns"));
}

TEST_F(LoadSuiteTest, ErrorsNameTheFileTheTaskAndTheField) {
  const json truth = {{"a", {{"values", {1}}}}};
  json bad = Task("a", "regex");
  Write(json::array({bad}), truth);
  std::string e = LoadError();
  EXPECT_NE(e.find("suite.json"), std::string::npos) << e;
  EXPECT_NE(e.find("task a"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown grader \"regex\""), std::string::npos) << e;

  bad = Task("a", "numeric");
  bad["tolerance"] = {{"abs", -1}};
  Write(json::array({bad}), truth);
  e = LoadError();
  EXPECT_NE(e.find("tolerance.abs"), std::string::npos) << e;

  bad["tolerance"] = {{"abs", 1}, {"rel", 0.1}};
  Write(json::array({bad}), truth);
  EXPECT_NE(LoadError().find("exactly one of abs or rel"), std::string::npos);

  bad.erase("tolerance");
  Write(json::array({bad}), truth);
  EXPECT_NE(LoadError().find("needs 'tolerance'"), std::string::npos);

  Write(json::array({Task("a", "numeric"), Task("b", "numeric")}), truth);
  e = LoadError();
  EXPECT_NE(e.find("truth.json"), std::string::npos) << e;
  EXPECT_NE(e.find("task b has no truth"), std::string::npos) << e;

  Write(json::array({Task("a", "numeric")}), {{"a", {{"values", {"12"}}}}});
  EXPECT_NE(LoadError().find("not a finite number"), std::string::npos);

  Write(json::array({Task("a", "judge")}), {{"a", {{"values", {1}}}}});
  EXPECT_NE(LoadError().find("needs 'facts'"), std::string::npos);

  bad = Task("a", "numeric");
  bad["tags"] = {"time series"};
  Write(json::array({bad}), truth);
  EXPECT_NE(LoadError().find("unknown tag \"time series\""), std::string::npos);

  bad = Task("a", "numeric");
  bad["data"] = {"data/nope.csv"};
  Write(json::array({bad}), truth);
  EXPECT_NE(LoadError().find("data file data/nope.csv does not exist"), std::string::npos);

  Write(json::array({Task("a", "numeric"), Task("a", "numeric")}), truth);
  EXPECT_NE(LoadError().find("the id is used twice"), std::string::npos);

  Write(json::array({Task("A-1", "numeric")}), truth);
  EXPECT_NE(LoadError().find("[a-z0-9_]+"), std::string::npos);

  Write(json::array({Task("a", "numeric")}), truth);
  dir_.Write("tasks/fixtures/a.json",
             json({{"question", "Something else?"}, {"turns", json::array()}}).dump());
  e = LoadError();
  EXPECT_NE(e.find("a.json"), std::string::npos) << e;
  EXPECT_NE(e.find("is not the task's"), std::string::npos) << e;

  dir_.Write("tasks/fixtures/a.json", "{\"turns\": [");
  e = LoadError();
  EXPECT_NE(e.find("a.json: not valid JSON"), std::string::npos) << e;

  dir_.Write("tasks/suite.json", "{\"tasks\": 3}");
  EXPECT_NE(LoadError().find("field 'tasks' should be an array"), std::string::npos);

  auto missing = LoadSuite(dir_.path() / "nowhere", dir_.path());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::kUsage);
  EXPECT_NE(missing.error().message.find("--tasks DIR"), std::string::npos);
}

TEST_F(LoadSuiteTest, JudgeTurnsMustBeThree) {
  Write(json::array({Task("c", "judge")}), {{"c", {{"facts", {"f"}}}}});
  dir_.Write("tasks/fixtures/c.json", json({{"question", "What is the total revenue?"},
                                            {"turns", json::array()},
                                            {"judge_turns", {"a", "b"}}})
                                          .dump());
  const std::string e = LoadError();
  EXPECT_NE(e.find("exactly 3 judge replies"), std::string::npos) << e;
}

}  // namespace
}  // namespace quarry::bench
