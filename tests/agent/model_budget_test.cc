// The loop's side of the model call: the cost bound checked before each call (with the prompt
// estimate it is given), a cancelled call ending the run as interrupted, and the trace written
// either way. The client is scripted in-process; the data is a real DuckDB table.
#include <gtest/gtest.h>

#include <deque>

#include "open_engine.h"
#include "quarry/agent/agent.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

// Plays scripted results and prices every call at `usd_per_prompt_token` per prompt token
// plus `usd_for_output` for the output limit; records what the loop asked.
class ScriptedClient final : public llm::Client {
 public:
  std::deque<Result<llm::Turn>> turns;
  double usd_per_prompt_token = 0.0;
  double usd_for_output = 0.0;
  bool priced = true;
  mutable std::vector<int64_t> bounds_asked;  // prompt tokens passed to MaxCostUsd
  std::vector<int64_t> estimates_sent;        // Request::prompt_tokens_estimate per call

  Result<llm::Turn> Complete(const llm::Request& request) override {
    estimates_sent.push_back(request.prompt_tokens_estimate);
    if (turns.empty()) return Fail(Error::Code::kModel, "script exhausted");
    Result<llm::Turn> next = std::move(turns.front());
    turns.pop_front();
    return next;
  }
  llm::Provider provider() const override { return llm::Provider::kReplay; }
  std::string model() const override { return "scripted-model"; }
  std::optional<double> MaxCostUsd(int64_t prompt_tokens) const override {
    bounds_asked.push_back(prompt_tokens);
    if (!priced) return std::nullopt;
    return static_cast<double>(prompt_tokens) * usd_per_prompt_token + usd_for_output;
  }
};

llm::Turn SqlTurn(int64_t input_tokens, int64_t output_tokens, double cost) {
  llm::Turn turn;
  turn.tool_calls = {{"call_1", "run_sql", R"({"sql": "SELECT count(*) AS n FROM sales"})"}};
  turn.usage = {input_tokens, output_tokens, 0};
  turn.cost_usd = cost;
  turn.cost_reported = true;
  return turn;
}

class ModelBudgetTest : public ::testing::Test {
 protected:
  trace::Trace RunWith(ScriptedClient& client, double max_cost) {
    static auto engine = testing::OpenOrDie({quarry::testing::SourceDir() / "data" / "sales.csv"});
    Config config;
    config.python = false;
    config.max_cost_usd = max_cost;
    const std::string id = "run" + std::to_string(++runs_made_);
    auto writer = trace::Writer::Create(runs_.path(), id);
    EXPECT_TRUE(writer.has_value());
    agent::RunInput input;
    input.question = "How many sales are there?";
    input.run_id = id;
    trace::Trace t =
        agent::Run(input, *engine, client, config, nullptr, writer ? &*writer : nullptr);
    trace_written_ = std::filesystem::exists(runs_.path() / id / "trace.json");
    return t;
  }

  quarry::testing::TempDir runs_;
  bool trace_written_ = false;
  int runs_made_ = 0;
};

std::string AllNotes(const trace::Trace& t) {
  std::string all;
  for (const auto& n : t.notes) all += n + "\n";
  return all;
}

TEST_F(ModelBudgetTest, NoCallIsMadeWhoseBoundWouldPassTheBudget) {
  ScriptedClient client;
  client.usd_for_output = 0.30;  // each call may cost $0.30 beyond its prompt
  client.turns.push_back(SqlTurn(1000, 20, 0.25));
  client.turns.push_back(SqlTurn(1100, 20, 0.25));
  const trace::Trace t = RunWith(client, 0.5);
  // First call: $0 + $0.30 <= $0.50; second: $0.25 + $0.30 > $0.50, so not made.
  EXPECT_EQ(t.stop_reason, trace::StopReason::kCostBudget);
  EXPECT_EQ(client.estimates_sent.size(), 1u);
  EXPECT_EQ(client.turns.size(), 1u);
  EXPECT_LE(t.totals.cost_usd, 0.5);
  EXPECT_NE(AllNotes(t).find("stopped before model turn 2: it could cost up to $0.3000"),
            std::string::npos)
      << AllNotes(t);
  EXPECT_TRUE(trace_written_);
}

TEST_F(ModelBudgetTest, PromptEstimateFollowsTheProvidersCount) {
  ScriptedClient client;
  client.turns.push_back(SqlTurn(50000, 300, 0.0));
  client.turns.push_back(SqlTurn(50500, 10, 0.0));
  RunWith(client, 1.0);
  ASSERT_GE(client.bounds_asked.size(), 2u);
  // The first estimate is of the system prompt, tools and question alone; the second starts
  // from the provider's 50,000 + 300 and adds the tool result's estimate.
  EXPECT_GT(client.bounds_asked[0], 500);
  EXPECT_LT(client.bounds_asked[0], 20000);
  EXPECT_GT(client.bounds_asked[1], 50300);
  EXPECT_LT(client.bounds_asked[1], 51000);
  ASSERT_GE(client.estimates_sent.size(), 2u);
  EXPECT_EQ(client.estimates_sent[1], client.bounds_asked[1]);
}

TEST_F(ModelBudgetTest, WithoutAPriceTheSpentCostIsChecked) {
  ScriptedClient client;
  client.priced = false;
  client.turns.push_back(SqlTurn(1000, 20, 0.6));
  client.turns.push_back(SqlTurn(1000, 20, 0.6));
  const trace::Trace t = RunWith(client, 0.5);
  EXPECT_EQ(t.stop_reason, trace::StopReason::kCostBudget);
  EXPECT_EQ(client.estimates_sent.size(), 1u) << "the turn that crossed it was already paid";
  EXPECT_NEAR(t.totals.cost_usd, 0.6, 1e-12);
}

TEST_F(ModelBudgetTest, CancelledCallEndsTheRunAsInterrupted) {
  ScriptedClient client;
  client.turns.push_back(std::unexpected(Error{Error::Code::kCancelled, "request aborted"}));
  const trace::Trace t = RunWith(client, 1.0);
  EXPECT_EQ(t.stop_reason, trace::StopReason::kInterrupted);
  EXPECT_NE(AllNotes(t).find("request aborted"), std::string::npos);
  EXPECT_TRUE(trace_written_);

  ScriptedClient failing;
  failing.turns.push_back(std::unexpected(Error{Error::Code::kModel, "HTTP 500: boom"}));
  EXPECT_EQ(RunWith(failing, 1.0).stop_reason, trace::StopReason::kModelError);
}

}  // namespace
}  // namespace quarry::agent
