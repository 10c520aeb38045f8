// The verify gate's evidence index: every number, value, date and text the model was shown,
// prepared once per check with its provenance, role, sign direction and scale (index.cc).
// Internal to the gate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quarry/agent/verify.h"
#include "quarry/agent/verify/internal.h"

namespace quarry::agent::internal {

// What a column's name says about the scale of its numbers: percentage points ("pct_change",
// "growth_percent": 8.4 means 8.4%) or a proportion ("share", "ratio", "rate": 0.28 means 28%).
enum class Scale { kUnknown, kPercent, kProportion };

struct EvidenceNumber {
  double value;
  std::string shown;       // the cell or token as the model saw it
  std::string normalised;  // of shown
  int source;
  std::string column;
  ColumnRole role;
  int direction;
  Scale scale = Scale::kUnknown;
  bool row_count = false;  // a result's true row count: grounds only plain whole numbers
  // A schema card's figure: grounds only the number as the card writes it (kNumeric), never a
  // rounding or a percent ("about three thousand orders" is no card's 3143.0 rounded).
  bool exact = false;
  // A schema card's row count ("table Customer (59 rows)"): the table it counts, so it grounds
  // a count of that table's things only ("59 customers", never "59 support reps").
  std::string card_table;
};

struct EvidenceValue {
  std::string normalised;
  std::string shown;
  int source;
  std::string column;
};

struct EvidenceDate {
  std::string key;
  std::string shown;
  int source;
  std::string column;
};

// The evidence and the question, prepared once per Verify call.
struct Index {
  std::vector<EvidenceValue> values;
  std::vector<EvidenceValue> texts;  // free text, normalised
  std::vector<EvidenceNumber> numbers;
  std::vector<EvidenceNumber> echoes;  // shown, but only as literals the query wrote
  std::vector<EvidenceDate> dates;     // also years named by a result column ("revenue_2024")
  std::vector<std::string> id_words;   // the words naming identifier columns ("customer")
  // Per table of the schema card: the words of its name and of its columns' names, singular
  // ("Customer" -> customer, first, name, support, rep, ...).
  std::vector<std::pair<std::string, std::vector<std::string>>> card_words;
  std::vector<std::string> result_words;  // the words of the result columns' names, singular
  std::string question;                   // normalised
  std::vector<NumberToken> question_tokens;
  // Per question token: written as a reference ("order 4", "customer #4"), so it grounds only
  // a plain number, never an amount, a share or a count (set by the rules, which know the
  // entity words).
  std::vector<bool> question_refs;
  // The question asks for ids or codes ("What are the id and names of ...", "List the area
  // codes ..."): an identifier cell then grounds the number as what it is.
  bool question_asks_ids = false;
  const Evidence* evidence = nullptr;
};

// The evidence and the question, indexed. Numbers a query or script wrote as literals go to
// `echoes`; prose cells give no numbers; a result's row count is a number of its own.
Index BuildIndex(const Evidence& evidence, std::string_view question);

// A hedged number ("about 400", "roughly 30%") states fewer figures than its digits: its
// trailing zeros are not significant.
void Unhedge(NumberToken& t);

}  // namespace quarry::agent::internal
