// Internals of the verify gate, split as DESIGN.md plans: extract.cc reads numeric claims out of
// text and dates.cc the dates and times in it, context.cc reads the words around them and
// column names, evidence.cc records what the model was shown, index.cc (index.h) prepares it
// for a check, rules.cc (rules.h) matches one claim to it, check.cc checks a whole answer.
// Not part of the public surface.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quarry::agent::internal {

bool IsDigit(char c);
bool IsAlpha(char c);
bool IsWordChar(char c);
bool IsSpace(char c);
std::string LowerAscii(std::string_view s);
// The run of ASCII letters starting at s[p], lower-cased; `end` receives where it ends.
std::string WordAt(std::string_view s, size_t p, size_t* end);

// Case-fold, trim, collapse whitespace, strip surrounding quotes, currency symbols and
// thousands separators, so "  \"$1,234\" " and "1234" compare equal.
std::string Normalise(std::string_view s);

// One numeric claim as scanned from text.
struct NumberToken {
  std::string text;  // as written: "$1,234.50", "-3.5%", "1.2 million", "two thousand"
  size_t begin = 0;  // byte offsets in the scanned text
  size_t end = 0;
  double value = 0;  // signed, magnitude applied; a percent keeps its written scale
  // One unit in the last significant written place, magnitude applied: 0.01 for "0.45", 1 for
  // "500", 1e5 for "1.2M", 1e6 for "1 million" and for "500K" (trailing zeros of a scaled
  // integer are not significant).
  double step = 1;
  int significant = 0;  // significant figures written ("0.45": 2, "500K": 1, "504.0": 4)
  bool percent = false;
  bool explicit_sign = false;
  bool words = false;  // written in words ("two thousand", "a dozen", "half")
  bool ratio = false;  // a fraction or a multiple ("half", "two thirds", "twice", "doubled", "3x",
                       // "3 times")
  bool currency = false;   // written with a currency symbol ("$17")
  bool year_like = false;  // a bare four-digit integer, which a date may ground
  bool is_date = false;    // then only `key` is meaningful
  std::string key;         // canonical ISO date: "2025-03-01" or "2025-03-01 12:30:00"
  double scale = 1;        // the magnitude a word or suffix applied: 1e3 for "143 thousand", "5K"
  std::string alt_key;     // the other reading of a day and month that both fit ("3/4/2025")
  bool is_time = false;    // a time of day (is_date too): `key` is "23:00" or "23:00:15"
};

// Every numeric claim in `s`, digits and (when `words` is on) numbers written in words.
std::vector<NumberToken> Scan(std::string_view s, bool words);

// The date or time written at s[i] (dates.cc), or nothing; `resume` receives its end.
//   DigitDate: "14 March 2025", "14-Mar-2025", "3/31/2025" (both readings when day and month
//              both fit), "2025/03/31", "31.03.2025".
//   MonthDate: "March 2025", "Mar 2025", "March 12, 2025", "March 15th, 2025".
//   ClockTime: "23:00", "23:00:15", "9:30 am", "11 PM", "11 p.m."; is_time, key "HH:MM[:SS]".
std::optional<NumberToken> DigitDate(std::string_view s, size_t i, size_t* resume);
std::optional<NumberToken> MonthDate(std::string_view s, size_t i, size_t* resume);
std::optional<NumberToken> ClockTime(std::string_view s, size_t i, size_t* resume);

// The direction the words next to a number give it: kUp ("58.69% higher", "rose 5%", "17 more
// orders"), kDown ("lower", "fell", "fewer", "lost", "a decline of"), kNone when none does or
// the number is a level ("fell to 500", "more than 500", "up from 3"), and kMagnitude when the
// words compare two things whose order the gate cannot see ("North leads Central by $5",
// "trails by", "a gap of", "$5 ahead"): then either sign of the value grounds it. `word`
// receives the word found.
enum class Direction { kNone, kUp, kDown, kMagnitude };
Direction DirectionAt(std::string_view text, const NumberToken& token, std::string* word);
// +1 for kUp, -1 for kDown, 0 for a direction with no sign.
constexpr int SignOf(Direction d) {
  switch (d) {
    case Direction::kUp:
      return 1;
    case Direction::kDown:
      return -1;
    case Direction::kNone:
    case Direction::kMagnitude:
      return 0;
  }
  return 0;
}

// The word written right before a number, lower-cased and singular ("orders" -> "order"),
// skipping "#", "no.", "number", "id": "customer #4" gives "customer". `marked` is set when
// an identifier mark ("#", "id", "no.", "number") was skipped.
std::string ReferenceWord(std::string_view text, const NumberToken& token, bool* marked);

// A bound written before a number: +1 when the value is at least it ("over 2,000", "more
// than 500", "at least 3"), -1 when at most it ("under $500K", "less than", "nearly half"), 0
// when none is.
int BoundAt(std::string_view text, const NumberToken& token);

// True when a number is written as a condition's threshold: a bound word ("more than 0 mm",
// "over 40"), any comparative with "than" ("longer than 300000 ms"), or a comparison sign
// right before it ("> 40", "≥ 40").
bool ThresholdAt(std::string_view text, const NumberToken& token);

// True when a hedge stands right before a number ("about 400", "roughly 30%", "~2,000"): its
// trailing zeros are then not significant.
bool Hedged(std::string_view text, const NumberToken& token);

// Code's numerals as plain decimals: digit separators dropped (999_999), hex, octal and binary
// converted (0xF423F), so a literal scan reads each as the one number it is.
std::string PlainNumerals(std::string_view code);

// True when a number is an operand of a formula the text writes out: an arithmetic operator
// (* / × ÷) next to it, or + or - between it and a name or a parenthesis ("(F - 32) * 5 / 9",
// "x / 1000"). Such a number is the answer's definition, not a result it claims.
bool InFormula(std::string_view text, const NumberToken& token);

// True when the number at `begin` in SQL text is compared with, not produced: right after a
// comparison operator (= <> != < > <= >=, LIKE, BETWEEN, its AND), or inside an IN (...) list,
// a quote before it skipped ("x IN ('N/A', '-999')", "t > 300000").
bool InSqlComparison(std::string_view sql, size_t begin);

// True when a number is written as a count of things: a plain whole number (no currency,
// sign, percent or decimals) followed by a plural noun or "of" ("17 orders", "4 of them",
// "two thousand orders"). A count is grounded only by a whole number.
bool IsCount(std::string_view text, const NumberToken& token);
// The up to three words after a number, lower-cased ("59 invoice lines" -> {invoice,
// lines}): what a count counts.
std::vector<std::string> CountedWords(std::string_view text, const NumberToken& token);
// "customers" -> "customer", "entries" -> "entry"; "class" stays.
std::string Singular(std::string w);
// True when the sentence holding a number names an aggregate of many rows: an average, a
// median, a total, a sum, a figure per thing ("the average revenue per order is $9.77",
// "$9.77 on average", "Total revenue was $3,143"). A schema card's figure is one value of a
// column, never such an aggregate.
bool AggregateInSentence(std::string_view text, const NumberToken& token);

// The words of an identifier's name, lower-cased: "CustomerId" -> {customer, id},
// "invoice_line_id" -> {invoice, line, id}.
std::vector<std::string> NameWords(std::string_view name);

bool Contains(const std::vector<std::string>& list, std::string_view w);

// Words (runs of at least two letters) in a text, to tell prose cells from values.
int CountWords(std::string_view text);

}  // namespace quarry::agent::internal
