// The run's budgets and repair accounting (budget_internal.h).
#include "quarry/agent/budget_internal.h"

#include <cstdio>

namespace quarry::agent::internal {

Budget::Budget(const Config& config)
    : max_steps_(config.max_steps),
      max_cost_usd_(config.max_cost_usd),
      max_tool_calls_(config.max_tool_calls),
      max_repairs_(config.max_repairs) {}

std::optional<trace::StopReason> Budget::BeforeModelTurn(const trace::Totals& totals,
                                                         std::optional<double> most_usd,
                                                         int64_t prompt_tokens,
                                                         std::string* note) const {
  if (totals.model_turns >= max_steps_) return trace::StopReason::kStepBudget;
  // Written so that a NaN on either side stops rather than never stopping.
  if (most_usd && !(totals.cost_usd + *most_usd <= max_cost_usd_)) {
    if (note) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "stopped before model turn %d: it could cost up to $%.4f (prompt ~%lld "
                    "tokens estimated, plus the output limit), and $%.4f of the $%.4f budget "
                    "(--max-cost) is spent",
                    totals.model_turns + 1, *most_usd, static_cast<long long>(prompt_tokens),
                    totals.cost_usd, max_cost_usd_);
      *note = line;
    }
    return trace::StopReason::kCostBudget;
  }
  if (!(totals.cost_usd <= max_cost_usd_)) return trace::StopReason::kCostBudget;
  return std::nullopt;
}

std::optional<trace::StopReason> Budget::BeforeToolCall(const trace::Totals& totals, bool repair,
                                                        std::string* note) const {
  if (totals.tool_calls >= max_tool_calls_) {
    if (note) {
      *note = "model turn " + std::to_string(totals.model_turns) + " asked for tool call " +
              std::to_string(totals.tool_calls + 1) + ", beyond the budget of " +
              std::to_string(max_tool_calls_) +
              " (--max-tool-calls); it and the calls after it were not run";
    }
    return trace::StopReason::kToolCallBudget;
  }
  // The next repair attempt would exceed the budget.
  if (repair && totals.repair_attempts >= max_repairs_) return trace::StopReason::kRepairBudget;
  return std::nullopt;
}

void RepairLedger::Started(bool repair) {
  ++totals_.tool_calls;
  if (repair) ++totals_.repair_attempts;
}

void RepairLedger::Finished(FailureClass failure, bool execution) {
  if (failure == FailureClass::kNone && execution && outstanding_) {
    ++totals_.repair_successes;
    outstanding_ = false;
  }
  if (failure != FailureClass::kNone) outstanding_ = true;
}

}  // namespace quarry::agent::internal
