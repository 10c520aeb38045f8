// The one presenter of a finished run (trace.h, "The one presenter"): its outcome as text for
// people and as JSON for programs, used by the CLI, chat, MCP and the web app alike.
#include <algorithm>
#include <string>
#include <vector>

#include "quarry/trace/trace.h"

namespace quarry::trace {

using json = nlohmann::ordered_json;

const ClarificationRecord* WaitingClarification(const Trace& t) {
  if (t.stop_reason != StopReason::kClarification || t.clarifications.empty()) return nullptr;
  return &t.clarifications.back();
}

std::vector<VerifyCheck> UnsupportedValues(const Trace& t) {
  std::vector<VerifyCheck> out;
  for (const VerifyCheck& c : t.verify) {
    if (c.grounded) continue;
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const VerifyCheck& o) { return o.value == c.value; });
    if (!seen) out.push_back(c);
  }
  return out;
}

std::string OutcomeText(const Trace& t, const std::vector<std::string>& notes) {
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };
  switch (t.stop_reason) {
    case StopReason::kAnswered:
      line(t.answer);
      if (!t.assumptions.empty()) {
        line("\nAssumptions:");
        for (const auto& a : t.assumptions) line("- " + a);
      }
      if (!t.answer_sql.empty()) line("\nSQL:\n" + t.answer_sql);
      for (const auto& a : t.artifacts) line("figure: " + a);
      return out;
    case StopReason::kDeclined:
      line("declined (not an answer): " + t.declined);
      break;
    case StopReason::kClarification:
      if (const ClarificationRecord* c = WaitingClarification(t)) {
        line("quarry needs a clarification: " + c->question);
        for (size_t i = 0; i < c->choices.size(); ++i) {
          line("  " + std::to_string(i + 1) + ". " + c->choices[i]);
        }
      } else {
        line("no answer: the model asked for a clarification the trace does not hold");
      }
      break;
    case StopReason::kUngrounded:
    case StopReason::kExecutionFailed:
    case StopReason::kStepBudget:
    case StopReason::kRepairBudget:
    case StopReason::kCostBudget:
    case StopReason::kToolCallBudget:
    case StopReason::kNoToolCall:
    case StopReason::kModelError:
    case StopReason::kInterrupted:
    case StopReason::kIncomplete:
      line("no answer: " + std::string(StopReasonName(t.stop_reason)));
      if (!t.reply.empty())
        line("the model replied without a tool call (not verified): " + t.reply);
      if (!t.explanation.empty()) line("not an answer: " + t.explanation);
      if (t.stop_reason == StopReason::kUngrounded) {
        line("values not supported by any result:");
        for (const VerifyCheck& c : UnsupportedValues(t)) {
          line("- " + c.value + (c.reason.empty() ? "" : ": " + c.reason));
        }
      }
      break;
  }
  // Notes are quarry's, not the model's: set apart and labelled, as an answer's are on stderr.
  if (!notes.empty()) out += "\n";
  for (const auto& n : notes) line("note: " + n);
  return out;
}

json OutcomeJson(const Trace& t) {
  const json whole = ToJson(t);
  json out = {{"answer", t.answer},
              {"grounded", t.grounded},
              {"stop_reason", t.stop_reason},
              {"sql", t.answer_sql},
              {"supporting_values", t.supporting_values},
              {"assumptions", t.assumptions},
              {"queries", whole["answer"]["queries"]},
              {"verify", whole["verify"]["checks"]},
              {"figures", t.artifacts},
              {"totals", whole["totals"]}};
  if (!t.notes.empty()) out["notes"] = t.notes;
  if (!t.reply.empty()) out["reply"] = {{"text", t.reply}, {"verified", false}};
  if (!t.explanation.empty()) out["explanation"] = {{"text", t.explanation}, {"answer", false}};
  if (!t.declined.empty()) out["declined"] = {{"text", t.declined}, {"answer", false}};
  if (const ClarificationRecord* c = WaitingClarification(t)) {
    out["clarification"] = {{"question", c->question}, {"choices", c->choices}};
  }
  return out;
}

}  // namespace quarry::trace
