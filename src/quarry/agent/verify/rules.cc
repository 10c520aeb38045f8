// The verify gate's matching rules (rules.h): grounds one number or value in execution output,
// the cards or the question, by the rules declared in verify.h, and says why one is not.
// Pure string work: no I/O, no state.
#include "quarry/agent/verify.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "quarry/agent/verify/index.h"
#include "quarry/agent/verify/internal.h"
#include "quarry/agent/verify/rules.h"

namespace quarry::agent {

using internal::BuildIndex;
using internal::Claim;
using internal::Contains;
using internal::EvidenceDate;
using internal::EvidenceNumber;
using internal::EvidenceValue;
using internal::Index;
using internal::IsWordChar;
using internal::Match;
using internal::Normalise;
using internal::NumberToken;
using internal::Scale;
using internal::Scan;
using internal::Unhedge;

namespace {

bool NumericEqual(double a, double b) {
  const double diff = std::fabs(a - b);
  return diff <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) || diff <= 1e-12;
}

// Equal up to floating-point noise, never by more than half a unit in the last place written:
// "1,150,001" is not 1150000, while "0.3" is 0.30000000000000004.
bool EqualAsWritten(const NumberToken& t, double written, double computed, double scale) {
  const double diff = std::fabs(written - computed);
  const double noise = 1e-6 * std::max(std::fabs(written), std::fabs(computed));
  return diff <= 1e-12 || diff <= std::min(noise, 0.5 * t.step * scale * (1 + 1e-9));
}

// The computed value rounded to `significant` figures.
double RoundSignificant(double computed, int significant) {
  if (computed == 0 || significant <= 0) return computed;
  const double q = std::pow(10.0, std::floor(std::log10(std::fabs(computed))) - significant + 1);
  return std::round(computed / q) * q;
}

// True when `written` is `computed` rounded to the significant figures written (a value half
// way may go either way). A written zero grounds only a zero, or what rounds to zero at the
// decimals written ("0.00" for 0.004).
bool RoundsTo(const NumberToken& t, double written, double computed, double scale) {
  if (!std::isfinite(written) || !std::isfinite(computed)) return false;
  const double tiny = 1e-9 * std::max(std::fabs(written), std::fabs(computed)) + 1e-300;
  if (written == 0) {
    return computed == 0 || (t.step * scale < 1 && std::fabs(computed) <= 0.5 * t.step * scale);
  }
  if (computed == 0) return false;
  if (t.significant <= 0) {
    return std::fabs(written - computed) <= 0.5 * t.step * scale * (1 + 1e-9) + tiny;
  }
  const double q = std::pow(10.0, std::floor(std::log10(std::fabs(computed))) - t.significant + 1);
  // A fraction in words is no rounding of digits: "a third" is 0.3333 within half a unit of
  // its one figure, as "half" is 0.46.
  if (t.ratio) return std::fabs(written - computed) <= 0.5 * q * (1 + 1e-9) + tiny;
  const double lo = std::floor(computed / q) * q, hi = lo + q;
  const double to_lo = computed - lo, to_hi = hi - computed;
  const bool tie = std::fabs(to_lo - to_hi) <= 1e-9 * q;
  auto same = [&](double r) { return std::fabs(written - r) <= 1e-9 * q + tiny; };
  if (tie) return same(lo) || same(hi);
  return same(to_lo < to_hi ? lo : hi);
}

std::string Where(const EvidenceNumber& e, const Index& ix) {
  std::string out = e.column.empty() ? "" : "column " + e.column + ", ";
  if (e.source < 0 || e.source >= static_cast<int>(ix.evidence->sources().size())) {
    return out + "step 0";
  }
  const EvidenceSource& s = ix.evidence->sources()[static_cast<size_t>(e.source)];
  if (s.tool == kSchemaCardTool) return out + "the schema card";
  if (s.turn > 0) return out + "turn " + std::to_string(s.turn) + "'s kept result";
  return out + "step " + std::to_string(s.step);
}

std::string Format(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

Match internal::CheckNumber(const NumberToken& t, const Claim& claim, const Index& ix) {
  if (t.is_time) {  // "at 23:00", "11 PM": the time part of a timestamp, or a time cell
    for (const EvidenceDate& d : ix.dates) {
      const bool stamped = d.key.size() > 11 && d.key[10] == ' ' &&
                           std::string_view(d.key).substr(11).starts_with(t.key);
      if (stamped || d.key.starts_with(t.key))
        return {MatchRule::kVerbatim, d.key, d.source, d.column, ""};
    }
    for (const NumberToken& q : ix.question_tokens) {
      if (q.is_time && q.key == t.key) return {MatchRule::kQuestion, q.text, -1, "", ""};
    }
    Match none;
    none.reason = "no time in any result is " + t.key;
    return none;
  }
  if (t.is_date) {  // verbatim only; "2025-03-01" is grounded by "2025-03-01 00:00:00"
    for (const std::string* key : {&t.key, &t.alt_key}) {
      if (key->empty()) continue;
      for (const EvidenceDate& d : ix.dates) {
        if (d.key.starts_with(*key)) return {MatchRule::kVerbatim, d.key, d.source, d.column, ""};
      }
      for (const NumberToken& q : ix.question_tokens) {
        if (q.is_date &&
            (q.key.starts_with(*key) || (!q.alt_key.empty() && q.alt_key.starts_with(*key)))) {
          return {MatchRule::kQuestion, q.text, -1, "", ""};
        }
      }
    }
    Match none;
    none.reason = "no date in any result starts with " + t.key;
    return none;
  }
  std::string identifier_reason, sign_reason, count_reason, bound_reason, card_reason;
  // The evidence a claim may use, as the value to compare with what is written (the sign
  // decided by the claim), or nothing.
  auto usable = [&](const EvidenceNumber& e, double* out) {
    // A table's row count is a total of rows: "2065 orders in total" may cite it (its table
    // rule below applies instead).
    if (e.exact && claim.aggregate && !claim.any_kind && e.card_table.empty()) {
      if (card_reason.empty()) {
        card_reason = "the schema card shows " + e.shown + " as one value (" + Where(e, ix) +
                      ": a range's end, a count, a sample), not an average or a total: compute "
                      "it with a query";
      }
      return false;
    }
    // A card's row count counts its own table's rows: "275 artists" of "table Artist (275
    // rows)" and "2065 orders" of sales (order_id), never "5 support reps" of MediaType when
    // another table's names say what support reps are.
    if (!e.card_table.empty() && !claim.any_kind && !t.percent && !t.currency &&
        std::floor(t.value) == t.value && !claim.counted.empty()) {
      auto names = [&](const std::string& table, const std::string& w) {
        for (const auto& [name, words] : ix.card_words) {
          if (name == table && Contains(words, w)) return true;
        }
        return false;
      };
      bool own = false, other = false;
      for (const std::string& w : claim.counted) {
        const std::string one = internal::Singular(w);
        own = own || one == "row" || one == "record" || one == "entry" || names(e.card_table, one);
        for (const auto& [name, words] : ix.card_words) {
          other = other || (name != e.card_table && Contains(words, one));
        }
        other = other || Contains(ix.result_words, one);
      }
      if (other && !own) {
        if (card_reason.empty()) {
          card_reason = "the schema card's " + e.shown + " is the number of rows of table " +
                        e.card_table + ", not of " +
                        (claim.counted.empty() ? std::string("this") : claim.counted[0]) +
                        ": count them with a query";
        }
        return false;
      }
    }
    if (e.row_count && !claim.any_kind &&
        (t.percent || t.ratio || t.currency || std::floor(t.value) != t.value)) {
      return false;  // a number of rows is a count, never a share or an amount
    }
    const bool names_it =
        !claim.reference.empty() && Contains(internal::NameWords(e.column), claim.reference);
    if ((claim.marked || claim.entity) && !claim.any_kind && e.role != ColumnRole::kIdentifier &&
        !names_it) {
      if (identifier_reason.empty()) {
        identifier_reason = "it is written as a reference ('" + claim.reference + " " + t.text +
                            "'), but the result shows it only as a measure (" + Where(e, ix) +
                            "), not as an id";
      }
      return false;
    }
    // An id is grounded as what it is where the question asks for ids, or where it stands
    // beside the entity it names in the same result; stated as a count it never is.
    const bool plain = !t.percent && !t.currency && !t.ratio && std::floor(t.value) == t.value;
    const bool asked = ix.question_asks_ids && plain && !claim.count;
    const bool beside =
        plain && !claim.count &&
        std::any_of(ix.values.begin(), ix.values.end(), [&](const EvidenceValue& v) {
          return v.source == e.source && v.column != e.column && !v.normalised.empty() &&
                 Contains(claim.beside, v.normalised);
        });
    if (e.role == ColumnRole::kIdentifier && !claim.any_kind && !claim.marked && !names_it &&
        !asked && !beside) {
      if (identifier_reason.empty()) {
        identifier_reason = "appears only as an identifier (" + Where(e, ix) +
                            "); an id is not a count or an amount: compute the figure with a "
                            "query (count, sum) and cite that result";
      }
      return false;
    }
    if (claim.count && std::floor(e.value) != e.value) {
      if (count_reason.empty()) {
        count_reason = "it counts things, but the nearest result is " + e.shown + " (" +
                       Where(e, ix) + "), which is not a whole number: cite the count itself";
      }
      return false;
    }
    if (t.explicit_sign) {
      if ((t.value < 0) != (e.value < 0) && e.value != 0 && sign_reason.empty()) {
        sign_reason = "the result shows " + e.shown + " (" + Where(e, ix) +
                      "), but the answer writes the opposite sign";
      }
      *out = e.value;
      return true;
    }
    if (claim.any_kind || claim.direction == internal::Direction::kMagnitude) {
      *out = std::fabs(e.value);
      return true;
    }
    if (claim.direction == internal::Direction::kNone) {
      if (e.value < 0) {
        if (sign_reason.empty()) {
          sign_reason = "the result shows " + e.shown + " (" + Where(e, ix) +
                        "), which is negative, but the answer states it without a sign; write "
                        "the sign, or the direction it means (lower, fell, fewer)";
        }
        return false;
      }
      *out = e.value;
      return true;
    }
    const int sign = e.value > 0 ? 1 : e.value < 0 ? -1 : 0;
    if (sign != 0 && sign * e.direction != internal::SignOf(claim.direction)) {
      if (sign_reason.empty()) {
        sign_reason = "the result shows " + e.shown + " (" + Where(e, ix) +
                      "), but the answer "
                      "says '" +
                      claim.direction_word + "', which means " +
                      (claim.direction == internal::Direction::kUp ? "an increase" : "a decrease") +
                      "; state the direction the value shows, or compute the difference the "
                      "other way round";
      }
      return false;
    }
    *out = std::fabs(e.value);
    return true;
  };
  if (!std::isfinite(t.value)) return {};
  const std::string normalised = Normalise(t.text);
  double c = 0;
  if (!t.words) {
    for (const EvidenceNumber& e : ix.numbers) {
      if (e.normalised == normalised && usable(e, &c)) {
        return {MatchRule::kVerbatim, e.shown, e.source, e.column, ""};
      }
    }
  }
  if (t.year_like) {
    for (const EvidenceDate& d : ix.dates) {
      if (d.key.starts_with(t.text + "-"))
        return {MatchRule::kVerbatim, d.key, d.source, d.column, ""};
    }
  }
  // Past 15 significant digits a double cannot tell neighbours apart: only the digits can.
  const bool exact_only = t.significant > 15;
  // 44.71% against a proportion, or a proportion 0.4471 against a percentage 44.71.
  const double factor = t.percent ? 0.01 : 100.0;
  // A percent written against a column named as a proportion ("share") only converts; against
  // percentage points ("pct_change" of 8.4) it only compares; a proportion written against a
  // proportion only compares.
  auto scale_allows = [&](bool converts, const EvidenceNumber& e) {
    if (t.percent && !converts && e.scale == Scale::kProportion) return false;
    if (t.percent && converts && e.scale == Scale::kPercent && std::fabs(e.value) > 1) return false;
    return !(!t.percent && converts && e.scale == Scale::kProportion);
  };
  auto close = [&](MatchRule rule, double w, const EvidenceNumber& e, double v) {
    if (!scale_allows(rule == MatchRule::kPercent, e)) return false;
    switch (rule) {
      case MatchRule::kNumeric:
        return EqualAsWritten(t, w, v, 1);
      case MatchRule::kRounding:
        return RoundsTo(t, w, v, 1);
      default:
        // A written proportion is at most 1: "0.4471" for 44.71, never "4" for 400; a zero is
        // a zero in any scale.
        if ((!t.percent && std::fabs(w) > 1) || w == 0) return false;
        return EqualAsWritten(t, w * factor, v, factor) || RoundsTo(t, w * factor, v, factor);
    }
  };
  for (MatchRule rule : {MatchRule::kNumeric, MatchRule::kRounding, MatchRule::kPercent}) {
    if (exact_only) break;
    for (const EvidenceNumber& e : ix.numbers) {
      if (e.exact && rule != MatchRule::kNumeric) continue;
      // Magnitudes first, so only evidence that would match explains a refusal.
      if (!close(rule, std::fabs(t.value), e, std::fabs(e.value)) || !usable(e, &c)) continue;
      if (close(rule, t.explicit_sign ? t.value : std::fabs(t.value), e, c)) {
        // "under $500K" is false of 504,488 though it rounds to 500K.
        const double w = std::fabs(rule == MatchRule::kPercent ? t.value * factor : t.value);
        const double v = std::fabs(c);
        if ((claim.bound > 0 && v < w) || (claim.bound < 0 && v > w)) {
          if (bound_reason.empty()) {
            bound_reason = "the result shows " + e.shown + " (" + Where(e, ix) + "), which is " +
                           (claim.bound > 0 ? "below" : "above") + " the bound the answer writes";
          }
          continue;
        }
        return {rule, e.shown, e.source, e.column, ""};
      }
    }
  }
  // A bound that holds and is tight to the figures written ("at least 45%" of 0.46, "more
  // than 2,000" of 2,065): within one unit of its last significant place.
  if (claim.bound != 0 && !exact_only) {
    for (const EvidenceNumber& e : ix.numbers) {
      for (const double scale : {1.0, factor}) {
        if (!scale_allows(scale != 1, e) || (scale != 1 && !t.percent && std::fabs(t.value) > 1)) {
          continue;
        }
        const double w = std::fabs(t.value) * scale, unit = t.step * scale;
        if (e.exact || !usable(e, &c)) continue;
        const double v = std::fabs(c);
        const bool holds = claim.bound > 0 ? v >= w : v <= w;
        // One figure ("almost $600K") is tight to half its unit, more figures to one unit.
        const double slack = t.significant <= 1 ? 0.5 * unit : unit;
        if (holds && std::fabs(v - w) <= slack * (1 + 1e-9)) {
          return {scale == 1 ? MatchRule::kRounding : MatchRule::kPercent, e.shown, e.source,
                  e.column, ""};
        }
      }
    }
  }
  for (size_t k = 0; k < ix.question_tokens.size(); ++k) {
    const NumberToken& q = ix.question_tokens[k];
    if (q.is_date) {
      if (t.year_like && q.key.starts_with(t.text + "-"))
        return {MatchRule::kQuestion, q.text, -1, "", ""};
      continue;
    }
    // The question's number grounds the same kind of number only: its "5%" is no "5 stores",
    // its "$400" no 400 orders, its "order 4" no "$4" nor "4 orders".
    const bool ref = k < ix.question_refs.size() && ix.question_refs[k];
    if (t.percent != q.percent || (q.currency && !t.currency) ||
        (ref && (t.currency || t.ratio || claim.count))) {
      continue;
    }
    if (NumericEqual(std::fabs(t.value), std::fabs(q.value))) {
      return {MatchRule::kQuestion, q.text, -1, "", ""};
    }
  }
  Match none;
  for (const EvidenceNumber& e : ix.echoes) {
    if (NumericEqual(std::fabs(t.value), std::fabs(e.value)) ||
        RoundsTo(t, std::fabs(t.value), std::fabs(e.value), 1)) {
      none.reason = "it appears only as a literal that the code of this run wrote (shown at " +
                    Where(e, ix) +
                    ": the query or script itself, or earlier code whose values "
                    "a script kept), not as a value computed from the data";
      return none;
    }
  }
  none.reason = !bound_reason.empty()        ? bound_reason
                : !sign_reason.empty()       ? sign_reason
                : !identifier_reason.empty() ? identifier_reason
                : !card_reason.empty()       ? card_reason
                                             : count_reason;
  if (none.reason.empty() && exact_only) {
    none.reason = "a number of more than 15 significant digits must match a result digit for digit";
  }
  if (none.reason.empty() && t.significant > 0 && !t.ratio) {
    // A rounding that kept too few figures: name what it should have been.
    for (const EvidenceNumber& e : ix.numbers) {
      if (e.row_count) continue;
      const double a = std::fabs(e.value), w = std::fabs(t.percent ? t.value * 0.01 : t.value);
      if (a == 0 || w == 0 || std::max(a, w) / std::min(a, w) > 3) continue;
      none.reason = "the nearest result is " + e.shown + " (" + Where(e, ix) + "); at the " +
                    std::to_string(t.significant) + " significant figure(s) written it is " +
                    Format(RoundSignificant(t.percent ? a * 100 : a, t.significant)) +
                    (t.percent ? "%" : "");
      break;
    }
  }
  return none;
}

namespace {

// Finds `needle` in `hay` at word boundaries, so "west" is not found in "northwest".
size_t FindWord(std::string_view hay, std::string_view needle) {
  for (size_t pos = hay.find(needle); pos != std::string_view::npos;
       pos = hay.find(needle, pos + 1)) {
    const size_t end = pos + needle.size();
    const bool left = !IsWordChar(needle.front()) || pos == 0 || !IsWordChar(hay[pos - 1]);
    const bool right = !IsWordChar(needle.back()) || end == hay.size() || !IsWordChar(hay[end]);
    if (left && right) return pos;
  }
  return std::string_view::npos;
}

// Up to 30 bytes of `text` either side of a match, for the report, cut between UTF-8 sequences.
std::string Excerpt(std::string_view text, size_t pos, size_t len) {
  size_t begin = pos > 30 ? pos - 30 : 0, end = std::min(text.size(), pos + len + 30);
  while (begin < pos && (text[begin] & 0xC0) == 0x80) ++begin;
  while (end < text.size() && (text[end] & 0xC0) == 0x80) ++end;
  return std::string(text.substr(begin, end - begin));
}

}  // namespace

Match internal::CheckValue(std::string_view value, const std::string& normalised, const Index& ix) {
  for (const EvidenceValue& e : ix.values) {
    if (e.normalised == normalised) return {MatchRule::kVerbatim, e.shown, e.source, e.column, ""};
  }
  const std::vector<NumberToken> tokens = Scan(value, /*words=*/false);
  if (!tokens.empty()) {
    // A value with numbers ("West: 1,234,567.89", "$1.2M") is grounded by its numbers alone:
    // the text parts of mixed values are not checked. The weakest rule used is reported.
    Match result{MatchRule::kVerbatim, "", -1, "", ""};
    Claim claim;
    claim.any_kind = true;
    for (const NumberToken& t : tokens) {
      Match m = CheckNumber(t, claim, ix);
      if (m.rule == MatchRule::kNone) return m;
      result.rule = std::max(result.rule, m.rule);
      result.matched += (result.matched.empty() ? "" : "; ") + m.matched;
      if (result.source < 0) result.source = m.source, result.column = m.column;
    }
    return result;
  }
  // Purely textual (or with only glued digits, like "Q4"): never grounded by being part of
  // a cell, only by a cell equal to it, a passage of free text or the question.
  for (const EvidenceValue& text : ix.texts) {
    if (size_t pos = FindWord(text.normalised, normalised); pos != std::string::npos) {
      return {MatchRule::kVerbatim, Excerpt(text.normalised, pos, normalised.size()), text.source,
              "", ""};
    }
  }
  if (size_t pos = FindWord(ix.question, normalised); pos != std::string::npos) {
    return {MatchRule::kQuestion, Excerpt(ix.question, pos, normalised.size()), -1, "", ""};
  }
  return {};
}

}  // namespace quarry::agent
