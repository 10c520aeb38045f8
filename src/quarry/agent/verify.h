// The verify gate: an answer may only state values that appeared in real execution output
// (or in the question), as the same kind of quantity, with the same sign, at an honest
// precision. Part of the agent module's public surface (included by agent.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quarry::agent {

// What a result column holds, for grounding. Decided from the column's name (and the keys the
// schema declares), never from its values.
enum class ColumnRole {
  kMeasure,     // counts, amounts, dates, labels: grounds numbers of any kind
  kIdentifier,  // keys and row numbers (id, *_id, CustomerId, *_key, rank, row_number, rn):
                // grounds a number only where the answer writes it as a reference
                // ("order 17", "customer #4", "id 17"), never a count or an amount
};

// The tool name of the schema cards as evidence: what the system prompt showed the model (a
// date range, a count in a note, a sentinel) grounds as the card. It is no execution: an answer
// still needs one.
inline constexpr std::string_view kSchemaCardTool = "schema_card";

// One successful execution the model saw: a run_sql result (an empty one too) or a run_python
// run's stdout. `step` is the trace step index of the tool call.
struct EvidenceSource {
  int step = 0;
  std::string tool;        // "run_sql", "run_python"
  std::string query;       // the SQL or the Python code
  int64_t row_count = -1;  // run_sql: the true row count; -1 for free text
  // > 0: a result an earlier turn of the thread kept and showed again (its preview), cited as
  // "turn N"; 0 for this run's own executions and the cards.
  int turn = 0;
};

// Everything the model was shown by successful executions, with where each value came from.
class Evidence {
 public:
  // A query result: the column names and the rows shown to the model (nullopt is SQL NULL).
  // The true row count is evidence too (an empty result grounds 0). `keys` names columns the
  // schema declares as keys (foreign keys and what they reference): identifiers whatever
  // their name.
  void AddResult(const EvidenceSource& source, const std::vector<std::string>& columns,
                 const std::vector<std::vector<std::optional<std::string>>>& rows,
                 const std::vector<std::string>& keys = {});
  // Free text (a script's stdout): its numbers and words become evidence.
  void AddText(const EvidenceSource& source, std::string_view text);
  // The schema cards the model was shown, as source kSchemaCardTool (step 0): row and null
  // counts, ranges, samples, sentinels and the numbers in notes ground as the card. Distinct
  // counts ("17 distinct") do not: they are no figure an answer states, and small ones would
  // ground any small count ("17 orders").
  void AddCard(std::string_view card);
  // Code that ran but showed nothing that grounds (a run_python call that failed or timed
  // out): the warm kernel keeps what it assigned, so its literals still count as typed.
  void AddCode(const EvidenceSource& source);
  // Shorthands for tests and direct tool use: one cell (a measure), or free text, from a
  // run_sql / run_python source of step 0.
  void AddValue(std::string value);
  void AddText(std::string_view text);

  struct Cell {
    std::optional<std::string> value;  // nullopt: SQL NULL
    int source = 0;                    // index into sources()
    std::string column;                // "" for a row count
    ColumnRole role = ColumnRole::kMeasure;
    int direction = 1;  // -1 when the column's name says it holds a decrease ("drop_pct")
  };
  struct Text {
    std::string text;
    int source = 0;
  };
  const std::vector<EvidenceSource>& sources() const { return sources_; }
  const std::vector<Cell>& cells() const { return cells_; }
  const std::vector<Text>& texts() const { return texts_; }
  // Every execution's code in the order it ran, each with its index in sources() (-1 for
  // AddCode): the gate reads the literals of earlier code from it.
  struct Ran {
    EvidenceSource code;
    int source = -1;
  };
  const std::vector<Ran>& ran() const { return ran_; }

 private:
  int Source(const EvidenceSource& source);
  std::vector<EvidenceSource> sources_;
  std::vector<Cell> cells_;
  std::vector<Text> texts_;
  std::vector<Ran> ran_;
};

// How a column's name classifies it (see ColumnRole), and the direction its name states.
ColumnRole RoleOfColumn(std::string_view name, const std::vector<std::string>& keys = {});
int DirectionOfColumn(std::string_view name);

// The matching rules, in the order they are tried, plus the question.
enum class MatchRule {
  kNone,        // not grounded
  kVerbatim,    // equal after normalisation (case, whitespace, quotes, thousands separators,
                // currency symbols); a date also by prefix ("2025-03-01" in "2025-03-01 00:00:00")
  kNumeric,     // numerically equal within a relative tolerance of 1e-6
  kRounding,    // the computed value rounded to the written number of significant figures
                // ("0.45" for 0.4471, "$504K" or "0.5 million" for 504,488.21; not "$1 million")
  kPercent,     // percent <-> proportion (44.71% for 0.4471, or 0.4471 for 44.71)
  kQuestion,    // the value appears in the question itself
  kDefinition,  // a constant of a formula the answer writes out ("(F - 32) * 5 / 9") that the
                // code which ran used too: the answer's definition, not a result it claims
};
std::string_view MatchRuleName(MatchRule rule);

struct ValueCheck {
  std::string value;   // as the model wrote it
  std::string origin;  // "supporting_values", "answer_text", or "run" (no execution at all)
  MatchRule rule = MatchRule::kNone;
  std::string matched;  // the evidence it matched, empty when not grounded
  // Where the evidence came from (grounded by results only): the source's index in
  // Evidence::sources(), and the column ("" for a row count or free text).
  int source = -1;
  std::string column;
  std::string reason;  // why it is not grounded, in words the model can act on
  bool grounded() const { return rule != MatchRule::kNone; }
};

struct VerifyReport {
  std::vector<ValueCheck> checks;
  bool grounded() const;                         // every check grounded
  std::vector<std::string> unsupported() const;  // values of the checks that are not
  // The sources whose results grounded at least one check, in step order.
  std::vector<int> sources() const;
};

// Checks every supporting value and every number written in the answer text (digits or words:
// "two thousand", "a dozen", "half") against the evidence:
// - An answer needs at least one execution (an empty result counts): with none, a check with
//   origin "run" fails.
// - Numbers glued to letters (Q4, H2O, 3rd) are not claims and are skipped.
// - A number in an identifier column grounds only a reference ("order 17", "#17").
// - Numbers inside prose cells (more than four words) are not evidence.
// - Signs: an unsigned number is matched against non-negative values, unless a direction word
//   next to it ("58.69% lower", "fell 5%", "17 fewer") says which sign the cited value must
//   have; "higher" never cites a negative change, "lower" never a positive one (unless the
//   column's name states a decrease: "drop_pct").
// A textual value must equal a cell, or appear as whole words in free text or the question; a
// value mixing text and numbers is judged by its numbers only. Empty values are not checked.
VerifyReport Verify(std::string_view answer, const std::vector<std::string>& supporting_values,
                    const Evidence& evidence, std::string_view question);

// A reply that declines or says it cannot answer (final_answer with outcome "declined": a
// write on a read-only connection, a question the data cannot answer). It needs no execution,
// but every figure it states about the data is checked as Verify checks an answer's.
VerifyReport VerifyDeclined(std::string_view reply, const Evidence& evidence,
                            std::string_view question);

// The numeric claims in a text, as written: "$1,234.50", "-3.5%", "0.4471", "1.2M",
// "1.2 million", "two thousand", ISO dates kept whole. Skips numbers glued to letters and list
// markers ("1. ").
std::vector<std::string> ExtractNumbers(std::string_view text);

}  // namespace quarry::agent
