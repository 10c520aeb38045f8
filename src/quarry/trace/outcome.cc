// The one presenter of a finished run (trace.h, "The one presenter"): its outcome as text for
// people and as JSON for programs, used by the CLI, chat, MCP and the web app alike.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "quarry/trace/trace.h"

namespace quarry::trace {

using json = nlohmann::ordered_json;

const ClarificationRecord* WaitingClarification(const Trace& t) {
  if (t.stop_reason != StopReason::kClarification || t.clarifications.empty()) return nullptr;
  return &t.clarifications.back();
}

namespace {

// A refused value as one number when it is one once currency signs, thousands separators and
// spaces are set aside ("$4,242.00", "4,242" and "4242" are one), else the value itself.
std::string SpellingKey(const std::string& value) {
  std::string digits;
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '$' || c == ',' || c == ' ' || c == '_') continue;
    if (value.compare(i, 2, "\xc2\xa3") == 0 || value.compare(i, 3, "\xe2\x82\xac") == 0) {
      i += value[i + 1] == '\xa3' ? 1 : 2;  // £ or €
      continue;
    }
    digits += c;
  }
  if (digits.empty()) return value;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return value;
  char key[40];
  std::snprintf(key, sizeof key, "#%.15g", v);
  return key;
}

}  // namespace

std::vector<VerifyCheck> UnsupportedValues(const Trace& t) {
  std::vector<VerifyCheck> out;
  std::vector<std::string> keys;
  for (const VerifyCheck& c : t.verify) {
    if (c.grounded) continue;
    const std::string key = SpellingKey(c.value);
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    keys.push_back(key);
    out.push_back(c);
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
      if (!t.rests_on.empty()) {
        line("\nRests on (knowledge files):");
        for (const auto& r : t.rests_on) line("- " + r);
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
          // A check of the run as a whole (no query ran) has a reason and no value to name.
          line(c.origin == "run" ? "- " + c.reason
                                 : "- " + c.value + (c.reason.empty() ? "" : ": " + c.reason));
        }
      }
      break;
  }
  // Notes are quarry's, not the model's: set apart and labelled, as an answer's are on stderr.
  if (!notes.empty()) out += "\n";
  for (const auto& n : notes) line("note: " + n);
  return out;
}

std::string_view StopHeading(StopReason reason) {
  switch (reason) {
    case StopReason::kAnswered:
      return "Answer";
    case StopReason::kUngrounded:
      return "Refused: the numbers were not found in any result";
    case StopReason::kExecutionFailed:
      return "Stopped: a query failed";
    case StopReason::kStepBudget:
      return "Stopped: step budget reached";
    case StopReason::kRepairBudget:
      return "Stopped: the errors could not be repaired within the repair budget";
    case StopReason::kCostBudget:
      return "Stopped: cost budget reached";
    case StopReason::kToolCallBudget:
      return "Stopped: too many tool calls in one turn";
    case StopReason::kNoToolCall:
      return "No answer: the model replied without using a tool";
    case StopReason::kModelError:
      return "Stopped: the model could not be reached or failed";
    case StopReason::kInterrupted:
      return "Stopped by you";
    case StopReason::kClarification:
      return "Waiting for your reply";
    case StopReason::kDeclined:
      return "Declined — not an answer";
    case StopReason::kIncomplete:
      return "Incomplete: the run ended without an outcome";
  }
  return "No answer";
}

json OutcomeJson(const Trace& t) {
  const json whole = ToJson(t);
  json out = {{"answer", t.answer},
              {"grounded", t.grounded},
              {"stop_reason", t.stop_reason},
              {"sql", t.answer_sql},
              {"supporting_values", t.supporting_values},
              {"assumptions", t.assumptions},
              {"rests_on", t.rests_on},
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
