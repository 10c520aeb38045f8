// The verify gate: an answer may only state values that appeared in real execution output
// (or in the question). Part of the agent module's public surface (included by agent.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace quarry::agent {

// Everything the model was shown by successful executions: result cells (as rendered to the
// model), row counts, and free text such as a script's stdout.
class Evidence {
 public:
  void AddValue(std::string value);  // one result cell or scalar
  void AddText(std::string_view text);  // free text; its numbers and words become evidence
  const std::vector<std::string>& values() const { return values_; }
  const std::vector<std::string>& texts() const { return texts_; }

 private:
  std::vector<std::string> values_;
  std::vector<std::string> texts_;
};

// The four matching rules, in the order they are tried, plus the question.
enum class MatchRule {
  kNone,       // not grounded
  kVerbatim,   // equal after normalisation (case, whitespace, quotes, thousands separators,
               // currency symbols); a date also by prefix ("2025-03-01" in "2025-03-01 00:00:00")
  kNumeric,    // numerically equal within a relative tolerance of 1e-6
  kRounding,   // a correct rounding of a computed value at the precision written (0.4471)
  kPercent,    // percent <-> proportion (44.71% for 0.4471, or 0.4471 for 44.71)
  kQuestion,   // the value appears in the question itself
};
std::string_view MatchRuleName(MatchRule rule);

struct ValueCheck {
  std::string value;     // as the model wrote it
  std::string origin;    // "supporting_values" or "answer_text"
  MatchRule rule = MatchRule::kNone;
  std::string matched;   // the evidence it matched, empty when not grounded
  bool grounded() const { return rule != MatchRule::kNone; }
};

struct VerifyReport {
  std::vector<ValueCheck> checks;
  bool grounded() const;                   // every check grounded
  std::vector<std::string> unsupported() const;  // values of the checks that are not
};

// Checks every supporting value and every number written in the answer text against the
// evidence. Numbers glued to letters (Q4, H2O, 3rd) are not claims and are skipped. A number
// written without a sign matches evidence of either sign (prose says "fell 5%"). A textual
// value must equal a cell, or appear as whole words in free text or the question; a value
// mixing text and numbers is judged by its numbers only. Empty values are not checked.
VerifyReport Verify(std::string_view answer, const std::vector<std::string>& supporting_values,
                    const Evidence& evidence, std::string_view question);

// The numeric claims in a text, as written: "$1,234.50", "-3.5%", "0.4471", "1.2M",
// "1.2 million", ISO dates kept whole. Skips numbers glued to letters and list markers ("1. ").
std::vector<std::string> ExtractNumbers(std::string_view text);

}  // namespace quarry::agent
