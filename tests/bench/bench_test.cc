// The bench module's shared parts: the statistics against published values, and one question
// run through the real agent on real DuckDB with scripted model turns.
#include <cmath>

#include <gtest/gtest.h>

#include "quarry/bench/bench.h"
#include "support/test_support.h"

namespace quarry::bench {
namespace {

using json = nlohmann::ordered_json;

// Newcombe (1998), table I, method 3 (the Wilson score interval), to 4 decimals.
TEST(StatsTest, WilsonIntervalMatchesNewcombesTable) {
  struct Case {
    int64_t k, n;
    double low, high;
  } cases[] = {{81, 263, 0.2553, 0.3662},
               {15, 148, 0.0624, 0.1605},
               {0, 20, 0.0, 0.1611},
               {1, 29, 0.0061, 0.1718}};
  for (const auto& c : cases) {
    const Interval ci = WilsonInterval(c.k, c.n);
    EXPECT_NEAR(ci.low, c.low, 5e-5) << c.k << "/" << c.n;
    EXPECT_NEAR(ci.high, c.high, 5e-5) << c.k << "/" << c.n;
  }
  EXPECT_EQ(WilsonInterval(20, 20).high, 1.0);
  EXPECT_EQ(WilsonInterval(0, 0).low, 0.0);
  EXPECT_EQ(WilsonInterval(0, 0).high, 1.0);
  EXPECT_EQ(WilsonInterval(30, 20).high, 1.0);  // clamped, not a value above 1
}

TEST(StatsTest, McNemarExactIsTheTwoSidedBinomialOfTheDiscordantPairs) {
  EXPECT_NEAR(McNemarExactP(1, 9), 2.0 * 11.0 / 1024.0, 1e-12);
  EXPECT_NEAR(McNemarExactP(9, 1), 2.0 * 11.0 / 1024.0, 1e-12);
  EXPECT_NEAR(McNemarExactP(0, 5), 2.0 / 32.0, 1e-12);
  EXPECT_EQ(McNemarExactP(3, 3), 1.0);
  EXPECT_EQ(McNemarExactP(0, 0), 1.0);
  // Large counts stay finite and tiny rather than underflowing to NaN.
  const double p = McNemarExactP(0, 2000);
  EXPECT_GE(p, 0.0);
  EXPECT_LT(p, 1e-300);
}

TEST(StatsTest, PercentilesInterpolateLikeNumpy) {
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 95), 3.85);
  EXPECT_DOUBLE_EQ(Percentile({7}, 95), 7.0);
  EXPECT_DOUBLE_EQ(Median({5, 1, 3}), 3.0);
  EXPECT_TRUE(std::isnan(Median({})));
  EXPECT_DOUBLE_EQ(Mean({1, 2, 6}), 3.0);
}

TEST(RunAgentTest, RunsAQuestionAndKeepsItsTraceAndFigures) {
  testing::TempDir dir;
  auto engine = engine::Open({testing::SourceDir() / "data" / "sales.csv"});
  ASSERT_TRUE(engine) << engine.error().message;
  const json fixture = {
      {"source", "scripted"},
      {"turns",
       json::array(
           {{{"content", ""},
             {"tool_calls",
              json::array({{{"name", "run_sql"},
                            {"arguments", {{"sql", "SELECT count(*) AS orders FROM salez"}}}}})},
             {"usage", {{"input_tokens", 1000}, {"output_tokens", 20}}}},
            {{"content", ""},
             {"tool_calls",
              json::array({{{"name", "run_sql"},
                            {"arguments", {{"sql", "SELECT count(*) AS orders FROM sales"}}}}})},
             {"usage", {{"input_tokens", 1100}, {"output_tokens", 20}}}},
            {{"content", ""},
             {"tool_calls", json::array({{{"name", "final_answer"},
                                          {"arguments",
                                           {{"answer", "There are 2065 orders."},
                                            {"supporting_values", json::array({"2065"})}}}}})},
             {"usage", {{"input_tokens", 1200}, {"output_tokens", 15}}}}})}};
  auto client = llm::MakeReplayClientFromJson(fixture, "test");
  ASSERT_TRUE(client) << client.error().message;
  agent::Config config;
  config.python = false;
  agent::RunInput input;
  input.question = "How many orders are there?";
  auto run = RunAgent(input, **engine, **client, config, dir.path() / "runs");
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->trace.stop_reason, trace::StopReason::kAnswered);
  EXPECT_EQ(run->trace_path, dir.path() / "runs" / run->trace.id / "trace.json");
  auto read = trace::ReadTrace(run->trace_path);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->answer, "There are 2065 orders.");

  const RunMetrics m = MetricsOf(*read);
  EXPECT_EQ(m.model_calls, 3);
  EXPECT_EQ(m.tool_calls, 3);
  EXPECT_EQ(m.steps, 6);
  EXPECT_EQ(m.repair_attempts, 1);
  EXPECT_EQ(m.repair_successes, 1);
  EXPECT_EQ(m.prompt_tokens, 3300);
  EXPECT_EQ(m.completion_tokens, 55);
  EXPECT_EQ(m.guard_violations, 0);
  EXPECT_TRUE(m.answered);
  EXPECT_TRUE(m.grounded);
}

}  // namespace
}  // namespace quarry::bench
