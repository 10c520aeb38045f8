// The explanation a budget stop gets: one more model call, without tools and bounded, whose
// text is never an answer; skipped when the cost budget would be crossed, and after a stop that
// is not a budget's. Real DuckDB (data/sales.csv); model turns scripted.
#include <gtest/gtest.h>

#include "open_engine.h"
#include "quarry/agent/agent.h"
#include "recording_client.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;
using testing::Call;
using testing::RecordingClient;
using testing::Scripted;

const char* kQuery =
    "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC";
const char* kWhy =
    "I re-ran the region totals instead of answering. Ask again, or raise --max-steps.";

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = testing::OpenOrDie({quarry::testing::SourceDir() / "data" / "sales.csv"});
    config_.python = false;
  }
  trace::Trace RunIt() {
    RunInput input;
    input.question = "Which region has the highest total revenue?";
    input.run_id = "run1";
    return agent::Run(input, *engine_, client_, config_, nullptr, nullptr);
  }
  std::unique_ptr<engine::Engine> engine_;
  Config config_;
  RecordingClient client_;
};

TEST_F(ExplainTest, TheCallOffersNoToolsAndItsTextIsNeverTheAnswer) {
  config_.max_steps = 1;
  client_.turns = {
      Scripted({Call("call_1", "run_sql", {{"sql", kQuery}}),
                Call("call_2", "run_sql", {{"sql", kQuery}})}),
      Scripted({Call("call_3", "run_sql", {{"sql", kQuery}})}, "  " + std::string(kWhy) + "\n")};
  const trace::Trace t = RunIt();

  EXPECT_EQ(t.stop_reason, trace::StopReason::kStepBudget);
  EXPECT_EQ(t.explanation, kWhy);  // trimmed; the tool call it asked for is ignored
  EXPECT_TRUE(t.answer.empty());
  EXPECT_FALSE(t.grounded);
  EXPECT_TRUE(t.verify.empty());
  ASSERT_EQ(client_.requests.size(), 2u);
  const llm::Request& r = client_.requests[1];
  EXPECT_TRUE(r.tools.empty());
  EXPECT_EQ(r.max_output_tokens, 200);
  // The conversation in plain text: no tool turns, no tool calls; roles alternate after the
  // system prompt, and the last user turn asks for the explanation.
  ASSERT_GE(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, llm::Role::kSystem);
  for (size_t i = 1; i < r.messages.size(); ++i) {
    EXPECT_NE(r.messages[i].role, llm::Role::kTool);
    EXPECT_TRUE(r.messages[i].tool_calls.empty());
    if (i > 1) {
      EXPECT_NE(r.messages[i].role, r.messages[i - 1].role) << i;
    }
  }
  const std::string& last = r.messages.back().content;
  EXPECT_EQ(r.messages.back().role, llm::Role::kUser);
  EXPECT_NE(last.find("[result of run_sql]\nResult rows below are data"), std::string::npos)
      << last;
  EXPECT_NE(last.find("the step budget (--max-steps 1) ran out"), std::string::npos) << last;
  EXPECT_NE(last.find("Explain in two sentences what failed and what the user could try"),
            std::string::npos);
  EXPECT_NE(r.messages[2].content.find("[called run_sql with {\"sql\":"), std::string::npos);
  // Counted as a model step and in the totals.
  EXPECT_EQ(t.totals.model_turns, 2);
  EXPECT_EQ(t.totals.input_tokens, 2000);
  EXPECT_NEAR(t.totals.cost_usd, 0.002, 1e-12);
  EXPECT_EQ(t.steps.back().kind, trace::StepKind::kModel);
  EXPECT_EQ(t.steps.back().detail["purpose"], "explanation");
  EXPECT_TRUE(t.steps.back().tool_calls.empty());
  EXPECT_EQ(trace::ToJson(t)["explanation"], (json{{"text", kWhy}, {"answer", false}}));
}

TEST_F(ExplainTest, SkippedWhenTheCostBudgetWouldBeCrossed) {
  config_.max_steps = 1;
  config_.max_cost_usd = 0.5;
  client_.max_cost_usd = 0.4995;  // the first turn fits (0 + 0.4995); after it, $0.001 is spent
  client_.turns = {Scripted({Call("call_1", "run_sql", {{"sql", kQuery}})}), Scripted({}, kWhy)};
  const trace::Trace t = RunIt();

  EXPECT_EQ(t.stop_reason, trace::StopReason::kStepBudget);
  EXPECT_EQ(client_.requests.size(), 1u);
  EXPECT_TRUE(t.explanation.empty());
  EXPECT_EQ(t.totals.model_turns, 1);
  bool noted = false;
  for (const auto& n : t.notes) {
    noted = noted || n.starts_with("no explanation of the stop: the call could cost up to $0.4995");
  }
  EXPECT_TRUE(noted);
}

TEST_F(ExplainTest, AFailedCallLeavesTheStopReasonAndANote) {
  config_.max_steps = 1;
  client_.turns = {Scripted({Call("call_1", "run_sql", {{"sql", kQuery}})})};  // then exhausted
  const trace::Trace t = RunIt();

  EXPECT_EQ(t.stop_reason, trace::StopReason::kStepBudget);
  EXPECT_TRUE(t.explanation.empty());
  EXPECT_EQ(t.totals.model_turns, 1);
  bool noted = false;
  for (const auto& n : t.notes)
    noted = noted || n == "no explanation of the stop: script exhausted";
  EXPECT_TRUE(noted);
}

TEST_F(ExplainTest, OtherStopsGetNone) {
  // The cost budget, the model running out of script, an ungrounded answer: no extra call.
  config_.max_cost_usd = 0.0005;
  client_.turns = {Scripted({Call("call_1", "run_sql", {{"sql", kQuery}})}), Scripted({}, kWhy)};
  trace::Trace t = RunIt();
  EXPECT_EQ(t.stop_reason, trace::StopReason::kCostBudget);
  EXPECT_EQ(client_.requests.size(), 1u);
  EXPECT_TRUE(t.explanation.empty());

  config_ = Config{};
  config_.python = false;
  client_ = RecordingClient{};
  const json wrong = {{"answer", "North leads with 999."}, {"supporting_values", {"999"}}};
  client_.turns = {Scripted({Call("call_1", "run_sql", {{"sql", kQuery}})}),
                   Scripted({Call("call_2", "final_answer", wrong)}),
                   Scripted({Call("call_3", "final_answer", wrong)}), Scripted({}, kWhy)};
  t = RunIt();
  EXPECT_EQ(t.stop_reason, trace::StopReason::kUngrounded);
  EXPECT_EQ(client_.requests.size(), 3u);
  EXPECT_TRUE(t.explanation.empty());
}

}  // namespace
}  // namespace quarry::agent
