// The verify gate's check of a whole answer: reads each number it writes with the words around
// it (direction, reference, count, bound, an average named), matches it (rules.h), applies the
// answer-level readings (formula constants, thresholds, units the data is in), and reports.
// Pure string work: no I/O, no state.
#include "quarry/agent/verify.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

#include "quarry/agent/verify/index.h"
#include "quarry/agent/verify/internal.h"
#include "quarry/agent/verify/rules.h"

namespace quarry::agent {

using internal::BuildIndex;
using internal::CheckNumber;
using internal::CheckValue;
using internal::Claim;
using internal::Contains;
using internal::Index;
using internal::kNotFound;
using internal::Match;
using internal::Normalise;
using internal::NumberToken;
using internal::Scan;
using internal::Unhedge;

namespace {

// Up to three words on each side of the number, each span normalised, skipping what joins an
// id to its name ("=", ":", "(", "-", "#").
std::vector<std::string> BesideWords(std::string_view text, const NumberToken& t) {
  auto joiner = [](char c) {
    return c == ' ' || c == '=' || c == ':' || c == '(' || c == ')' || c == '-' || c == '#';
  };
  auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) & 0x80) ||
           c == '_' || c == '\'';
  };
  std::vector<std::string> out;
  size_t p = t.end;
  while (p < text.size() && joiner(text[p])) ++p;
  size_t e = p;
  for (int w = 0; w < 3 && e < text.size(); ++w) {
    while (e < text.size() && word_char(text[e])) ++e;
    if (e > p) out.push_back(Normalise(text.substr(p, e - p)));
    if (e >= text.size() || text[e] != ' ') break;
    ++e;
  }
  size_t b = t.begin;
  while (b > 0 && joiner(text[b - 1])) --b;
  size_t s = b;
  for (int w = 0; w < 3 && s > 0; ++w) {
    while (s > 0 && word_char(text[s - 1])) --s;
    if (s < b) out.push_back(Normalise(text.substr(s, b - s)));
    if (s == 0 || text[s - 1] != ' ') break;
    --s;
  }
  return out;
}

// Nouns that name one thing by its number ("customer 17", "order 12"): such a number is an
// identifier, and only an identifier grounds it.
const std::vector<std::string> kEntities = {
    "customer", "client", "order",   "invoice", "user",     "account",     "employee",
    "product",  "item",   "store",   "shop",    "ticket",   "transaction", "sku",
    "supplier", "vendor", "patient", "student", "member",   "session",     "record",
    "row",      "track",  "album",   "artist",  "playlist", "genre"};

// True when only a list separator stands between two numbers: ", ", " and ", ", and ", " or ".
bool ListBetween(std::string_view between) {
  std::string s = internal::LowerAscii(between);
  for (const char* unit : {"%", "percent"}) {
    if (s.starts_with(unit)) s.erase(0, std::string_view(unit).size());
  }
  auto trim = [](std::string& x) {
    while (!x.empty() && x.front() == ' ') x.erase(0, 1);
    while (!x.empty() && x.back() == ' ') x.pop_back();
  };
  trim(s);
  if (s == "," || s == "and" || s == ", and" || s == "or" || s == ", or" || s == "&" || s == "(") {
    return true;
  }
  // "Foxtrot dropped 50% and Cobalt 20%": one name between, the verb elided.
  for (const char* lead : {"and ", ", and ", ", "}) {
    if (!s.starts_with(lead)) continue;
    const std::string rest = s.substr(std::string_view(lead).size());
    return !rest.empty() && std::all_of(rest.begin(), rest.end(), internal::IsAlpha);
  }
  return false;
}

}  // namespace

std::string_view MatchRuleName(MatchRule rule) {
  static constexpr std::string_view kNames[] = {"none",    "verbatim", "numeric",   "rounding",
                                                "percent", "question", "definition"};
  const auto index = static_cast<size_t>(rule);
  return index < std::size(kNames) ? kNames[index] : "none";
}

bool VerifyReport::grounded() const {
  return std::all_of(checks.begin(), checks.end(),
                     [](const ValueCheck& c) { return c.grounded(); });
}

std::vector<std::string> VerifyReport::unsupported() const {
  std::vector<std::string> out;
  for (const ValueCheck& c : checks) {
    if (!c.grounded() && std::find(out.begin(), out.end(), c.value) == out.end()) {
      out.push_back(c.value);
    }
  }
  return out;
}

std::vector<int> VerifyReport::sources() const {
  std::vector<int> out;
  for (const ValueCheck& c : checks) {
    if (c.grounded() && c.source >= 0) out.push_back(c.source);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// The words that name a unit of `scale` in a question or a column's name.
std::vector<std::string> UnitWords(double scale) {
  if (scale == 1e3) return {"thousand", "thousands", "k", "000s", "kusd", "keur"};
  if (scale == 1e6) return {"million", "millions", "m", "mn", "mln", "mil", "musd", "meur"};
  if (scale == 1e9) return {"billion", "billions", "bn", "b", "busd"};
  return {};
}

// Whether the question or the matched column names the unit of `scale` ("(thousands)",
// population_thousands, gross_musd).
bool NamesUnit(double scale, std::string_view question, const std::string& column) {
  const std::vector<std::string> units = UnitWords(scale);
  for (const std::string& w : internal::NameWords(question)) {
    if (internal::Contains(units, w)) return true;
  }
  if (column.empty()) return false;
  for (const std::string& w : internal::NameWords(column)) {
    if (internal::Contains(units, w)) return true;
  }
  return internal::LowerAscii(column).find(units[0]) != std::string::npos;  // "popthousands"
}

// A number whose data is in a unit the question or the column names: "143,093 thousand"
// restates the unit of 143093 (thousands), "143.1 million" and "143,093,000" convert it, and
// "$2.92 billion" converts 2923.7 of gross_musd. The number is compared in the data's unit,
// its written precision kept. With no unit named, a magnitude word scales the number as
// written ("$1 million" for 504,488 stays refused).
Match UnitRestated(const NumberToken& t, const Claim& claim, const Index& ix,
                   std::string_view question) {
  for (const double unit : {1e3, 1e6, 1e9}) {
    if (std::fabs(t.value) < unit && t.value != 0) continue;  // less than one unit of the data
    NumberToken plain = t;
    plain.value = t.value / unit;
    plain.step = t.step / unit;
    plain.scale = t.scale / unit;
    Match m = CheckNumber(plain, claim, ix);
    if (m.rule != MatchRule::kNone && NamesUnit(unit, question, m.column)) return m;
  }
  return {};
}

// Whether a column's name says it is in thousands, millions or billions in so many words
// (population_thousands, gross_musd, sales_bn); not a lone letter, which may be a metre or a
// kelvin (distance_m, temp_k).
bool NamesUnitPlainly(double unit, const std::string& column) {
  for (const std::string& w : internal::NameWords(column)) {
    if (w.size() > 1 && w != "mil" && internal::Contains(UnitWords(unit), w)) return true;
  }
  return false;
}

// Whether the sentence of a number writes the unit `unit` or the column's name: "$2.5 million",
// "2.5 (USD millions)", "revenue_musd of 2.5".
bool UnitWritten(std::string_view answer, const NumberToken& t, double unit,
                 const std::string& column) {
  size_t begin = t.begin, end = t.end;
  while (begin > 0 && answer[begin - 1] != '.' && answer[begin - 1] != '\n') --begin;
  while (
      end < answer.size() && answer[end] != '\n' &&
      !(answer[end] == '.' && !(end + 1 < answer.size() && internal::IsDigit(answer[end + 1])))) {
    ++end;
  }
  const std::string_view sentence = answer.substr(begin, end - begin);
  for (const std::string& w : internal::NameWords(sentence)) {
    if (internal::Contains(UnitWords(unit), w)) return true;
  }
  const std::string bare =
      column.substr(column.rfind('.') == std::string::npos ? 0 : column.rfind('.') + 1);
  return internal::LowerAscii(sentence).find(internal::LowerAscii(bare)) != std::string::npos;
}

VerifyReport Check(std::string_view answer, const std::vector<std::string>& supporting_values,
                   const Evidence& evidence, std::string_view question, bool needs_execution) {
  Index ix = BuildIndex(evidence, question);
  for (const NumberToken& q : ix.question_tokens) {
    bool marked = false;
    const std::string ref = q.is_date ? "" : internal::ReferenceWord(question, q, &marked);
    ix.question_refs.push_back(marked || Contains(kEntities, ref) || Contains(ix.id_words, ref));
  }
  VerifyReport report;
  const bool executed =
      std::any_of(evidence.sources().begin(), evidence.sources().end(),
                  [](const EvidenceSource& s) { return s.tool != kSchemaCardTool; });
  if (needs_execution && !executed) {
    ValueCheck none;
    none.value = "(no query)";
    none.origin = "run";
    none.reason =
        "no query or Python run succeeded in this run, so nothing supports the "
        "answer: run the query that computes it, then call final_answer";
    report.checks.push_back(std::move(none));
  }
  for (const std::string& value : supporting_values) {
    const std::string normalised = Normalise(value);
    if (normalised.empty()) continue;  // states nothing, so there is nothing to ground
    Match m = CheckValue(value, normalised, ix);
    if (m.rule == MatchRule::kNone && m.reason.empty()) m.reason = kNotFound;
    report.checks.push_back({value, "supporting_values", m.rule, std::move(m.matched), m.source,
                             std::move(m.column), std::move(m.reason)});
  }
  // Every number the code that ran wrote, for the constants of a formula the answer states.
  std::vector<std::pair<double, int>> code_literals;  // value, source (-1: code that failed)
  for (const Evidence::Ran& ran : evidence.ran()) {
    for (const NumberToken& t : Scan(internal::PlainNumerals(ran.code.query), /*words=*/false)) {
      if (!t.is_date && std::isfinite(t.value)) code_literals.emplace_back(t.value, ran.source);
    }
  }
  // The literals a query compared with ("WHERE Milliseconds > 300000"): the thresholds an
  // answer may write as its condition ("longer than 300000 ms").
  std::vector<std::pair<double, int>> thresholds;  // value, source
  for (const Evidence::Ran& ran : evidence.ran()) {
    if (ran.source < 0 || ran.code.tool != "run_sql") continue;
    const std::string plain = internal::PlainNumerals(ran.code.query);
    for (const NumberToken& t : Scan(plain, /*words=*/false)) {
      if (!t.is_date && std::isfinite(t.value) && internal::InSqlComparison(plain, t.begin)) {
        thresholds.emplace_back(t.value, ran.source);
      }
    }
  }
  const auto same = [](double a, double b) {
    return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(a));
  };
  std::optional<NumberToken> previous;
  Claim previous_claim;
  for (NumberToken t : Scan(answer, /*words=*/true)) {
    Claim claim;
    if (!t.is_date) {
      claim.direction = internal::DirectionAt(answer, t, &claim.direction_word);
      claim.reference = internal::ReferenceWord(answer, t, &claim.marked);
      claim.entity = Contains(kEntities, claim.reference) || Contains(ix.id_words, claim.reference);
      claim.count = internal::IsCount(answer, t);
      claim.aggregate = internal::AggregateInSentence(answer, t);
      claim.counted = internal::CountedWords(answer, t);
      claim.bound = internal::BoundAt(answer, t);
      claim.beside = BesideWords(answer, t);
      // "by 8.4% and 25%", "fell 3, 4 and 5 points": a list shares its direction.
      if (claim.direction == internal::Direction::kNone && previous && !previous->is_date &&
          ListBetween(answer.substr(previous->end, t.begin - previous->end))) {
        claim.direction = previous_claim.direction;
        claim.direction_word = previous_claim.direction_word;
      }
      if (internal::Hedged(answer, t)) Unhedge(t);
    }
    Match m = CheckNumber(t, claim, ix);
    if (m.rule == MatchRule::kNone && !t.is_date && !t.percent && !t.currency &&
        internal::InFormula(answer, t)) {
      for (const auto& [value, source] : code_literals) {
        if (!same(std::fabs(value), std::fabs(t.value))) continue;
        m = {MatchRule::kDefinition, t.text, source, "", ""};
        break;
      }
    }
    if (m.rule == MatchRule::kNone && !t.is_date && internal::ThresholdAt(answer, t)) {
      for (const auto& [value, source] : thresholds) {
        if (!same(value, t.value)) continue;
        m = {MatchRule::kDefinition, t.text, source, "", ""};
        break;
      }
    }
    if (m.rule == MatchRule::kNone && !t.is_date && !t.percent) {
      if (Match u = UnitRestated(t, claim, ix, question); u.rule != MatchRule::kNone) m = u;
    }
    // A figure of a column in millions written with no unit ("revenue is $2.5" for
    // revenue_musd 2.5) misstates it a millionfold: the unit must be written, or the column.
    if (m.rule != MatchRule::kNone && !t.is_date && !t.percent && t.scale == 1 &&
        !m.column.empty()) {
      for (const double unit : {1e3, 1e6, 1e9}) {
        if (!NamesUnitPlainly(unit, m.column)) continue;
        if (UnitWritten(answer, t, unit, m.column) || NamesUnit(unit, question, "")) break;
        const std::vector<std::string> words = UnitWords(unit);
        m.rule = MatchRule::kNone;
        m.reason = "the result's column " + m.column + " is in " + words[1] + ", so " + t.text +
                   " there means " + t.text + " " + words[1] + ": write the unit (" + t.text + " " +
                   words[0] + ") or name the column";
        break;
      }
    }
    if (m.rule == MatchRule::kNone && m.reason.empty()) m.reason = kNotFound;
    report.checks.push_back({t.text, "answer_text", m.rule, std::move(m.matched), m.source,
                             std::move(m.column), std::move(m.reason)});
    previous = t;
    previous_claim = claim;
  }
  return report;
}

}  // namespace

VerifyReport Verify(std::string_view answer, const std::vector<std::string>& supporting_values,
                    const Evidence& evidence, std::string_view question) {
  return Check(answer, supporting_values, evidence, question, /*needs_execution=*/true);
}

VerifyReport VerifyDeclined(std::string_view reply, const Evidence& evidence,
                            std::string_view question) {
  return Check(reply, {}, evidence, question, /*needs_execution=*/false);
}

std::vector<std::string> ExtractNumbers(std::string_view text) {
  std::vector<std::string> out;
  for (NumberToken& t : Scan(text, /*words=*/true)) out.push_back(std::move(t.text));
  return out;
}

}  // namespace quarry::agent
