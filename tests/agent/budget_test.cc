// The run's budgets and repair ledger (agent/budget_internal.h): each budget stops with its own
// reason at its own bound, a NaN cost stops, and repairs are counted as the trace reports them.
#include "quarry/agent/budget_internal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace quarry::agent::internal {
namespace {

Config Limits() {
  Config c;
  c.max_steps = 3;
  c.max_tool_calls = 4;
  c.max_repairs = 2;
  c.max_cost_usd = 0.10;
  return c;
}

TEST(BudgetTest, AModelTurnRunsOnlyWithinTheStepAndCostBudgets) {
  const Budget budget(Limits());
  trace::Totals t;
  std::string note;
  EXPECT_EQ(budget.BeforeModelTurn(t, 0.01, 1000, &note), std::nullopt);
  t.model_turns = 3;
  EXPECT_EQ(budget.BeforeModelTurn(t, 0.01, 1000, &note), trace::StopReason::kStepBudget);
  EXPECT_EQ(note, "") << "the stop reason says it all";

  // With a price: the turn's most expensive outcome must fit what is left.
  t.model_turns = 1;
  t.cost_usd = 0.08;
  EXPECT_EQ(budget.BeforeModelTurn(t, 0.02, 1000, &note), std::nullopt) << "0.08 + 0.02 fits";
  EXPECT_EQ(budget.BeforeModelTurn(t, 0.03, 5045, &note), trace::StopReason::kCostBudget);
  EXPECT_EQ(note,
            "stopped before model turn 2: it could cost up to $0.0300 (prompt ~5045 tokens "
            "estimated, plus the output limit), and $0.0800 of the $0.1000 budget (--max-cost) "
            "is spent");
  // Without a price: what was spent.
  EXPECT_EQ(budget.BeforeModelTurn(t, std::nullopt, 0, nullptr), std::nullopt);
  t.cost_usd = 0.11;
  EXPECT_EQ(budget.BeforeModelTurn(t, std::nullopt, 0, nullptr), trace::StopReason::kCostBudget);
  // A NaN on either side stops rather than never stopping.
  t.cost_usd = 0.0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(budget.BeforeModelTurn(t, nan, 0, nullptr), trace::StopReason::kCostBudget);
  t.cost_usd = nan;
  EXPECT_EQ(budget.BeforeModelTurn(t, std::nullopt, 0, nullptr), trace::StopReason::kCostBudget);
}

TEST(BudgetTest, AToolCallRunsOnlyWithinTheCallAndRepairBudgets) {
  const Budget budget(Limits());
  trace::Totals t;
  t.model_turns = 2;
  t.tool_calls = 3;
  std::string note;
  EXPECT_EQ(budget.BeforeToolCall(t, false, &note), std::nullopt);
  t.repair_attempts = 2;
  EXPECT_EQ(budget.BeforeToolCall(t, false, &note), std::nullopt) << "not a repair";
  EXPECT_EQ(budget.BeforeToolCall(t, true, &note), trace::StopReason::kRepairBudget);
  t.tool_calls = 4;
  EXPECT_EQ(budget.BeforeToolCall(t, true, &note), trace::StopReason::kToolCallBudget)
      << "the call budget is checked first";
  EXPECT_EQ(note,
            "model turn 2 asked for tool call 5, beyond the budget of 4 (--max-tool-calls); it "
            "and the calls after it were not run");
}

TEST(RepairLedgerTest, AFailureIsRepairedOnlyByAnExecutionThatSucceeds) {
  trace::Totals t;
  RepairLedger ledger(t);
  ledger.Started(ledger.outstanding());
  ledger.Finished(FailureClass::kRuntimeError, true);
  EXPECT_TRUE(ledger.outstanding());
  // inspect_schema succeeding repairs nothing; the failed attempt after it is a repair too.
  ledger.Started(ledger.outstanding());
  ledger.Finished(FailureClass::kNone, false);
  EXPECT_TRUE(ledger.outstanding());
  ledger.Started(ledger.outstanding());
  ledger.Finished(FailureClass::kSyntaxError, true);
  ledger.Started(ledger.outstanding());
  ledger.Finished(FailureClass::kNone, true);
  EXPECT_FALSE(ledger.outstanding());
  ledger.SentBack();
  EXPECT_EQ(t.tool_calls, 4);
  EXPECT_EQ(t.repair_attempts, 3);
  EXPECT_EQ(t.repair_successes, 1);
  EXPECT_EQ(t.send_backs, 1);
}

}  // namespace
}  // namespace quarry::agent::internal
