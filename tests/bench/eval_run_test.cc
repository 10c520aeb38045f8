// RunEval (bench/eval.h) through its library interface, with recorded model turns that really
// execute on the fixture's SQLite databases: which query counts as the prediction, and the
// test-suite rule of comparing on every database in the question's folder.
#include <gtest/gtest.h>

#include <fstream>

#include "bench/eval_fixture.h"
#include "quarry/bench/eval.h"
#include "support/test_support.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json Call(const std::string& name, const json& args) {
  return {{"content", ""}, {"tool_calls", {{{"name", name}, {"arguments", args}}}}};
}

// A client factory replaying `turns_by_question` (question text -> model turns, scripted).
ClientFactory Replay(std::map<std::string, json> turns_by_question) {
  return [turns = std::move(turns_by_question)](
             const std::string& question,
             const std::vector<std::string>&) -> Result<std::unique_ptr<llm::Client>> {
    const auto it = turns.find(question);
    if (it == turns.end()) return Fail(Error::Code::kUsage, "no recording for " + question);
    const json doc = {{"source", "scripted"}, {"question", question}, {"turns", it->second}};
    return llm::MakeReplayClientFromJson(doc, "eval_run_test");
  };
}

std::vector<json> Lines(const fs::path& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

class EvalRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp_.path() / "spider"));
    options_.out_dir = tmp_.path() / "out";
    options_.runs_dir = tmp_.path() / "out" / "runs";
    options_.config.python = false;
    options_.open.fingerprint = false;
    options_.turns = "recorded";
  }
  quarry::testing::TempDir tmp_;
  EvalOptions options_;
};

// Issue 23: the prediction is the model's final answering query (the last run_sql before its
// final_answer), not an earlier exploratory one that also holds the cited value; an answer the
// gate refused still has one, and is counted apart.
TEST_F(EvalRunTest, ThePredictionIsTheFinalQueryBeforeTheAnswer) {
  auto data = LoadSpider(tmp_.path() / "spider", "dev");
  ASSERT_TRUE(data) << data.error().message;
  std::map<std::string, json> turns;
  // Question 0: explores (a query that holds 7 too), then answers with the gold query.
  turns["How many singers do we have?"] = {
      Call("run_sql", {{"sql", "SELECT count(*) AS n, avg(age) AS mean_age FROM singer"}}),
      Call("run_sql", {{"sql", "SELECT count(*) FROM singer"}}),
      Call("final_answer", {{"answer", "There are 7 singers."}, {"supporting_values", {"7"}}})};
  // Question 7: the answer cites nothing; its only query returned no rows.
  turns["Which singers are from Atlantis?"] = {
      Call("run_sql", {{"sql", "SELECT name FROM singer WHERE country = 'Atlantis'"}}),
      Call("final_answer",
           {{"answer", "No singer is from Atlantis."}, {"supporting_values", json::array()}})};
  // Question 3: the right query, then a value the results do not hold, twice: the gate
  // refuses, and the query is still the prediction.
  turns["How many singers are from each country?"] = {
      Call("run_sql", {{"sql", "SELECT country, count(*) FROM singer GROUP BY country"}}),
      Call("final_answer", {{"answer", "France has 12."}, {"supporting_values", {"12"}}}),
      Call("final_answer", {{"answer", "France has 12."}, {"supporting_values", {"12"}}})};
  auto summary = RunEval(*data, {0, 3, 7}, options_, Replay(turns));
  ASSERT_TRUE(summary) << summary.error().message;
  const auto lines = Lines(options_.out_dir / "questions.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["predicted_sql"], "SELECT count(*) FROM singer");
  EXPECT_EQ(lines[0]["outcome"], "match");
  EXPECT_EQ(lines[0]["grounded"], true);
  EXPECT_EQ(lines[1]["stop_reason"], "final_answer_ungrounded");
  EXPECT_EQ(lines[1]["grounded"], false);
  EXPECT_EQ(lines[1]["predicted_sql"], "SELECT country, count(*) FROM singer GROUP BY country");
  EXPECT_EQ(lines[1]["outcome"], "match");
  // Its first refusal was a send-back (the second ended the run); neither is a repair.
  EXPECT_EQ(lines[1]["send_backs"], 1);
  EXPECT_EQ(lines[1]["repair_attempts"], 0);
  EXPECT_EQ(lines[0]["send_backs"], 0);
  EXPECT_EQ(lines[2]["predicted_sql"], "SELECT name FROM singer WHERE country = 'Atlantis'");
  EXPECT_EQ(lines[2]["outcome"], "match");
  EXPECT_EQ(summary->matched, 3);
  EXPECT_EQ(summary->scored, 3);
  EXPECT_EQ(summary->no_prediction, 0);
  EXPECT_EQ(summary->json["grounded_answers"]["scored"], 2);
  EXPECT_EQ(summary->json["grounded_answers"]["matched"], 2);
  EXPECT_EQ(summary->json["matched_but_refused"], 1);
  EXPECT_EQ(summary->json["refused_with_prediction"], 1);
  EXPECT_EQ(summary->json["send_backs"], 1);
  EXPECT_EQ(summary->json["runs_with_send_backs"], 1);
  // Question 7's empty result is a failure; its final_answer is the one repair attempt.
  EXPECT_EQ(summary->json["repair_attempts"], 1);
  // 3 + 3 + 2 model turns.
  EXPECT_NEAR(summary->json["mean_model_calls"].get<double>(), 8.0 / 3.0, 1e-12);
}

TEST_F(EvalRunTest, TestSuiteRuleComparesOnEveryDatabaseOfTheFolder) {
  // A second database for `singers` where two singers share the top age: a query that only
  // happens to agree on the first database is caught on the second.
  const fs::path extra = tmp_.path() / "spider" / "database" / "singers" / "singers_2.sqlite";
  ASSERT_NO_FATAL_FAILURE(quarry::testing::MakeSqlite(
      extra, quarry::testing::ReadFile(EvalFixtureDir() / "sql" / "singers.sql") +
                 "UPDATE singer SET age = 52 WHERE singer_id = 5;"));
  auto data = LoadSpider(tmp_.path() / "spider", "dev");
  ASSERT_TRUE(data) << data.error().message;
  ASSERT_EQ(data->questions[0].suite_paths.size(), 2u);
  EXPECT_EQ(data->questions[0].suite_paths[1], extra);
  std::map<std::string, json> turns;
  // Gold: SELECT name, age FROM singer ORDER BY age DESC LIMIT 1. The same on the first
  // database; on the second the tie leaves LIMIT 1 to pick by rowid, the filter returns two.
  turns["What is the name and age of the oldest singer?"] = {
      Call("run_sql", {{"sql", "SELECT name, age FROM singer WHERE age >= 50"}}),
      Call("final_answer", {{"answer", "Joe Sharp."}, {"supporting_values", {"Joe Sharp"}}})};
  auto summary = RunEval(*data, {6}, options_, Replay(turns));
  ASSERT_TRUE(summary) << summary.error().message;
  const auto lines = Lines(options_.out_dir / "questions.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["outcome"], "mismatch");
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("(on singers_2.sqlite)"), std::string::npos)
      << lines[0]["reason"];

  // BIRD's rule compares on the question's own database only: there it matches.
  EvalOptions bird = options_;
  bird.out_dir = tmp_.path() / "out-bird";
  bird.rule = MatchRule::kBirdSet;
  auto by_bird = RunEval(*data, {6}, bird, Replay(turns));
  ASSERT_TRUE(by_bird) << by_bird.error().message;
  EXPECT_EQ(by_bird->matched, 1);
}

TEST_F(EvalRunTest, QuestionsWithoutAClientAreSkippedNotScored) {
  auto data = LoadSpider(tmp_.path() / "spider", "dev");
  ASSERT_TRUE(data);
  auto summary = RunEval(*data, {0, 1}, options_, Replay({}));
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->skipped, 2);
  EXPECT_EQ(summary->scored, 0);
  EXPECT_TRUE(summary->json["accuracy"].is_null());
  EXPECT_EQ(summary->json["wilson_95"][1], 1.0);
}

}  // namespace
}  // namespace quarry::bench
