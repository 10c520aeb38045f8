// The run's budgets and its repairs, apart from the loop that consults them (loop.cc): a Budget
// answers whether the next model turn or tool call may run, a RepairLedger keeps the failure
// still to be repaired and the counts the trace's totals report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "quarry/agent/agent.h"
#include "quarry/common/common.h"
#include "quarry/trace/trace.h"

namespace quarry::agent::internal {

// Every budget of Config in one place (--max-steps, --max-cost, --max-tool-calls,
// --max-repairs). Each check returns nullopt when the next thing may run, else the stop reason;
// `note`, when not null, receives the sentence the trace keeps about why ("" when the stop
// reason says it all).
class Budget {
 public:
  explicit Budget(const Config& config);
  // Before model turn totals.model_turns + 1: the step budget, then the cost budget. With a
  // price (`most_usd`: the turn's most expensive outcome, the estimated prompt of
  // `prompt_tokens` plus the whole output limit) the turn runs only if even that stays within
  // the budget; without one the spent cost is checked, so the turn that crossed it was paid.
  // A NaN on either side stops.
  std::optional<trace::StopReason> BeforeModelTurn(const trace::Totals& totals,
                                                   std::optional<double> most_usd,
                                                   int64_t prompt_tokens, std::string* note) const;
  // Before tool call totals.tool_calls + 1 (of model turn totals.model_turns): the tool-call
  // budget, then, for a repair attempt, the repair budget.
  std::optional<trace::StopReason> BeforeToolCall(const trace::Totals& totals, bool repair,
                                                  std::string* note) const;

 private:
  int max_steps_;
  double max_cost_usd_;
  int max_tool_calls_;
  int max_repairs_;
};

// A run's repairs (DESIGN.md, "Repair"): after a failed call a failure is outstanding, and each
// call made while it is counts as a repair attempt until an execution tool succeeds. The
// counts live in the trace's totals, which the ledger updates: tool_calls, repair_attempts,
// repair_successes and send_backs. Not thread-safe; `totals` must outlive it.
class RepairLedger {
 public:
  explicit RepairLedger(trace::Totals& totals) : totals_(totals) {}
  // Whether a failure waits to be repaired: the next call is then a repair attempt.
  bool outstanding() const { return outstanding_; }
  // A call is about to run: counted, and as a repair attempt when `repair`.
  void Started(bool repair);
  // What a call came to: an execution tool's success repairs the outstanding failure (counted
  // as a repair success); any failure leaves one outstanding.
  void Finished(FailureClass failure, bool execution);
  // The verify gate sent a final answer back to the model.
  void SentBack() { ++totals_.send_backs; }
  // Whether it has: a second ungrounded answer ends the run.
  bool sent_back() const { return totals_.send_backs > 0; }

 private:
  trace::Totals& totals_;
  bool outstanding_ = false;
};

}  // namespace quarry::agent::internal
