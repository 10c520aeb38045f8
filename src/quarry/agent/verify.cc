// The verify gate: grounds each value an answer claims in execution output or the question,
// by the matching rules declared in verify.h. Pure string work: no I/O, no state.
#include "quarry/agent/verify.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

namespace quarry::agent {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWordChar(char c) { return IsDigit(c) || IsAlpha(c) || c == '_'; }
bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
char At(std::string_view s, size_t k) { return k < s.size() ? s[k] : '\0'; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

// Byte length of the symbol starting at s[i] from `symbols`, 0 when none does.
size_t SymbolLen(std::string_view s, size_t i, std::initializer_list<std::string_view> symbols) {
  for (std::string_view sym : symbols) {
    if (s.substr(i).starts_with(sym)) return sym.size();
  }
  return 0;
}
size_t CurrencyLen(std::string_view s, size_t i) {
  return SymbolLen(s, i, {"$", "\u20ac", "\u00a3", "\u00a5"});
}
size_t SignLen(std::string_view s, size_t i) { return SymbolLen(s, i, {"-", "+", "\u2212"}); }
size_t QuoteLen(std::string_view s, size_t i) {
  return SymbolLen(s, i, {"\"", "'", "`", "\u201c", "\u201d", "\u2018", "\u2019"});
}

// Case-fold, trim, collapse whitespace, strip surrounding quotes, currency symbols and
// thousands separators, so "  \"$1,234\" " and "1234" compare equal.
std::string Normalise(std::string_view s) {
  for (bool changed = true; changed;) {
    changed = false;
    while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1), changed = true;
    while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1), changed = true;
    if (size_t len = QuoteLen(s, 0); len > 0) s.remove_prefix(len), changed = true;
    for (std::string_view q : {"\"", "'", "`", "\u201c", "\u201d", "\u2018", "\u2019"}) {
      if (s.ends_with(q)) s.remove_suffix(q.size()), changed = true;
    }
  }
  std::string out;
  bool pending_space = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (IsSpace(s[i])) {
      pending_space = true;
    } else if (size_t len = CurrencyLen(s, i); len > 0) {
      i += len - 1;
    } else if (s[i] == ',' && !out.empty() && IsDigit(out.back()) && i + 1 < s.size() &&
               IsDigit(s[i + 1])) {
      continue;
    } else {
      if (pending_space && !out.empty()) out += ' ';
      pending_space = false;
      out += Lower(s[i]);
    }
  }
  return out;
}

// One numeric claim as scanned from text.
struct NumberToken {
  std::string text;  // as written: "$1,234.50", "-3.5%", "1.2 million"
  double value = 0;  // signed, magnitude applied; a percent keeps its written scale
  double step = 1;   // one unit in the last written place: 0.01 for "0.45", 1e5 for "1.2M"
  bool percent = false;
  bool explicit_sign = false;
  bool year_like = false;  // a bare four-digit integer, which a date may ground
  bool is_date = false;    // then only `key` is meaningful
  std::string key;         // canonical ISO date: "2025-03-01" or "2025-03-01 12:30:00"
};

struct ScanResult {
  std::optional<NumberToken> token;  // empty when the text there is not a numeric claim
  size_t end;                        // where scanning resumes
};

// Skips a word and any digits glued to it ("Q4", "COVID-19", "v1.2", "3rd").
size_t SkipWord(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size()) {
    if (IsWordChar(s[j])) {
      ++j;
    } else if ((s[j] == '.' || s[j] == '-') && j + 1 < s.size() && IsWordChar(s[j + 1])) {
      j += 2;
    } else {
      break;
    }
  }
  return std::max(j, i + 1);
}

// Matches an ISO date (YYYY-MM or YYYY-MM-DD, optionally with a time) at s[p]; returns its
// end, or 0 when there is none, and sets `key` to its canonical form.
size_t MatchDate(std::string_view s, size_t p, std::string& key) {
  auto digits = [s](size_t at, size_t count) {
    for (size_t k = at; k < at + count; ++k) {
      if (!IsDigit(At(s, k))) return false;
    }
    return true;
  };
  if (!digits(p, 4) || At(s, p + 4) != '-' || !digits(p + 5, 2)) return 0;
  const int month = (s[p + 5] - '0') * 10 + (s[p + 6] - '0');
  if (month < 1 || month > 12) return 0;
  size_t e = p + 7;
  const bool has_day = At(s, e) == '-' && digits(e + 1, 2) && !digits(e + 3, 1);
  if (has_day) e += 3;
  key = std::string(s.substr(p, e - p));
  if (has_day && (At(s, e) == ' ' || At(s, e) == 'T') && digits(e + 1, 2) && At(s, e + 3) == ':' &&
      digits(e + 4, 2)) {
    size_t t = e + 6;
    if (At(s, t) == ':' && digits(t + 1, 2)) t += 3;
    if (At(s, t) == '.' && digits(t + 1, 1)) {
      for (++t; IsDigit(At(s, t));) ++t;
    }
    key += ' ' + std::string(s.substr(e + 1, t - e - 1));
    e = t + (At(s, t) == 'Z' ? 1 : 0);
  }
  return IsWordChar(At(s, e)) ? 0 : e;
}

// The multiplier a suffix stands for ("k", "M", "B" only glued to the number), 0 if none.
double Magnitude(std::string_view word, bool glued) {
  if (glued && (word == "k" || word == "K")) return 1e3;
  if (glued && (word == "M" || word == "B")) return word == "M" ? 1e6 : 1e9;
  const std::string lower = LowerAscii(word);
  if (lower == "bn" || lower == "billion") return 1e9;
  return lower == "thousand" ? 1e3 : lower == "million" ? 1e6 : lower == "trillion" ? 1e12 : 0;
}

bool AtLineStart(std::string_view s, size_t i) {
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) --i;
  return i == 0 || s[i - 1] == '\n';
}

// Parses the numeric token starting at s[i] (a sign, a currency symbol or a digit).
ScanResult ParseAt(std::string_view s, size_t i) {
  auto at = [s](size_t k) { return At(s, k); };
  NumberToken t;
  bool negative = false;
  size_t p = i;
  auto take_sign = [&] {
    const size_t len = SignLen(s, p);
    if (len == 0 || t.explicit_sign) return true;
    if (p > 0 && IsWordChar(s[p - 1])) return false;  // a hyphen: "10-15", not a minus
    t.explicit_sign = true;
    negative = s[p] != '+';
    p += len;
    return true;
  };
  if (!take_sign()) return {std::nullopt, p + SignLen(s, p)};
  const size_t currency = CurrencyLen(s, p);
  p += currency;
  if (!take_sign()) return {std::nullopt, p + SignLen(s, p)};
  if (!IsDigit(at(p))) return {std::nullopt, std::max(p, i + 1)};
  const size_t begin = p;
  if (p == i && i > 0 && (IsWordChar(s[i - 1]) || s[i - 1] == '.' || s[i - 1] == '#')) {
    return {std::nullopt, SkipWord(s, i)};
  }
  if (!t.explicit_sign && currency == 0) {
    if (size_t end = MatchDate(s, p, t.key); end > 0) {
      t.text = std::string(s.substr(i, end - i));
      t.is_date = true;
      return {std::move(t), end};
    }
  }

  std::string digits;
  size_t q = p;
  while (IsDigit(at(q))) digits += s[q++];
  const size_t int_len = q - p;
  // Only whole 3-digit groups are thousands: "1, 2" and "1,23" are separate numbers.
  while (int_len <= 3 && at(q) == ',' && IsDigit(at(q + 1)) && IsDigit(at(q + 2)) &&
         IsDigit(at(q + 3)) && !IsDigit(at(q + 4))) {
    digits.append(s.substr(q + 1, 3));
    q += 4;
  }
  const bool grouped = q - p != int_len;
  int decimals = 0;
  // A period not followed by a digit ends a sentence: "was 42." is 42.
  if (at(q) == '.' && IsDigit(at(q + 1))) {
    digits += s[q++];
    while (IsDigit(at(q))) digits += s[q++], ++decimals;
    if (at(q) == '.' && IsDigit(at(q + 1))) return {std::nullopt, SkipWord(s, begin)};  // 1.2.3
  }
  if (!t.explicit_sign && currency == 0 && decimals == 0 && !grouped &&
      (at(q) == '.' || at(q) == ')') && (at(q + 1) == ' ' || at(q + 1) == '\t') &&
      AtLineStart(s, i)) {
    return {std::nullopt, q + 1};  // a list marker: "1. West ..."
  }
  int exponent = 0;  // "1.234568e+06" as pandas prints it
  if (at(q) == 'e' || at(q) == 'E') {
    const size_t from = q + 1 + (at(q + 1) == '+' ? 1 : 0);
    size_t to = from + (at(from) == '-' ? 1 : 0);
    if (IsDigit(at(to))) {
      while (IsDigit(at(to))) ++to;
      std::from_chars(s.data() + from, s.data() + to, exponent);
      q = to;
    }
  }
  double scale = 1;
  size_t r = q;
  while (IsAlpha(at(r))) ++r;
  if (r > q) {
    const std::string word = LowerAscii(s.substr(q, r - q));
    scale = Magnitude(s.substr(q, r - q), /*glued=*/true);
    if (scale == 0) {
      // Ordinals name a position, not a quantity; any other glued unit ("7x", "5km", "50pct")
      // still states the number, so it is checked.
      if (word == "st" || word == "nd" || word == "rd" || word == "th") {
        return {std::nullopt, SkipWord(s, begin)};
      }
      scale = 1;
      if (word == "pct") t.percent = true;
    }
    q = r;
  } else if (at(q) == ' ' && IsAlpha(at(q + 1))) {
    for (r = q + 1; IsAlpha(at(r));) ++r;
    if (double m = Magnitude(s.substr(q + 1, r - q - 1), /*glued=*/false); m > 0) {
      scale = m;
      q = r;
    }
  }
  const size_t space = at(q) == ' ' ? 1 : 0;
  if (at(q + space) == '%') {
    t.percent = true, q += space + 1;
  } else if (space && LowerAscii(s.substr(q + 1, 7)) == "percent" && !IsAlpha(at(q + 8))) {
    t.percent = true, q += 8;
  } else if (space && LowerAscii(s.substr(q + 1, 16)) == "percentage point") {
    // A difference of proportions: "48.11 percentage points" for 0.4811.
    t.percent = true, q += 17;
    if (at(q) == 's') ++q;
  } else if (space && LowerAscii(s.substr(q + 1, 2)) == "pp" && !IsAlpha(at(q + 3))) {
    t.percent = true, q += 3;
  }
  if (IsWordChar(at(q))) return {std::nullopt, SkipWord(s, begin)};

  double mantissa = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), mantissa);
  const double power = std::pow(10.0, exponent) * scale;
  t.value = (negative ? -mantissa : mantissa) * power;
  t.step = std::pow(10.0, -decimals) * power;
  t.text = std::string(s.substr(i, q - i));
  t.year_like = !t.explicit_sign && currency == 0 && !grouped && digits.size() == 4 && power == 1 &&
                !t.percent;
  return {std::move(t), q};
}

std::vector<NumberToken> Scan(std::string_view s) {
  std::vector<NumberToken> out;
  size_t i = 0;
  while (i < s.size()) {
    if (IsAlpha(s[i]) || s[i] == '_') {
      i = SkipWord(s, i);
    } else if (IsDigit(s[i]) || SignLen(s, i) > 0 || CurrencyLen(s, i) > 0) {
      ScanResult r = ParseAt(s, i);
      if (r.token) out.push_back(std::move(*r.token));
      i = std::max(r.end, i + 1);
    } else {
      ++i;
    }
  }
  return out;
}

struct EvidenceNumber {
  double value;
  std::string source;      // the cell or token as the model saw it
  std::string normalised;  // of source
};

// The evidence and the question, prepared once per Verify call.
struct Index {
  std::vector<std::pair<std::string, std::string>> values;  // {normalised, raw}
  std::vector<std::string> texts;                           // normalised
  std::vector<EvidenceNumber> numbers;
  std::vector<std::string> dates;  // canonical keys
  std::string question;            // normalised
  std::vector<NumberToken> question_tokens;
};

Index BuildIndex(const Evidence& evidence, std::string_view question) {
  Index ix;
  auto add_tokens = [&ix](std::string_view raw) {
    for (NumberToken& t : Scan(raw)) {
      if (t.is_date) {
        ix.dates.push_back(std::move(t.key));
      } else {
        std::string normalised = Normalise(t.text);
        ix.numbers.push_back({t.value, std::move(t.text), std::move(normalised)});
      }
    }
  };
  for (const std::string& raw : evidence.values()) {
    ix.values.emplace_back(Normalise(raw), raw);
    add_tokens(raw);
  }
  for (const std::string& raw : evidence.texts()) {
    ix.texts.push_back(Normalise(raw));
    add_tokens(raw);
  }
  ix.question = Normalise(question);
  ix.question_tokens = Scan(question);
  return ix;
}

bool NumericEqual(double a, double b) {
  const double diff = std::fabs(a - b);
  return diff <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) || diff <= 1e-12;
}

// True when `written`, given to the nearest `step`, is a correct rounding of `computed`
// (half either way).
bool RoundsTo(double written, double step, double computed) {
  const double slack = 4 * DBL_EPSILON * std::max(std::fabs(written), std::fabs(computed));
  return std::fabs(written - computed) <= 0.5 * step * (1 + 1e-9) + slack;
}

struct Match {
  MatchRule rule = MatchRule::kNone;
  std::string matched;
};

Match CheckNumber(const NumberToken& t, const Index& ix) {
  if (t.is_date) {  // verbatim only; "2025-03-01" is grounded by "2025-03-01 00:00:00"
    for (const std::string& d : ix.dates) {
      if (d.starts_with(t.key)) return {MatchRule::kVerbatim, d};
    }
    for (const NumberToken& q : ix.question_tokens) {
      if (q.is_date && q.key.starts_with(t.key)) return {MatchRule::kQuestion, q.text};
    }
    return {};
  }
  // Prose carries the sign in words ("fell 5%"), so an unsigned number matches either sign.
  auto comparable = [&t](double e) { return t.explicit_sign ? e : std::fabs(e); };
  const std::string normalised = Normalise(t.text);
  for (const EvidenceNumber& e : ix.numbers) {
    if (e.normalised == normalised) return {MatchRule::kVerbatim, e.source};
  }
  if (t.year_like) {
    for (const std::string& d : ix.dates) {
      if (d.starts_with(t.text + "-")) return {MatchRule::kVerbatim, d};
    }
  }
  // 44.71% against a proportion, or a proportion 0.4471 against a percentage 44.71.
  const double factor = t.percent ? 0.01 : 100.0;
  for (MatchRule rule : {MatchRule::kNumeric, MatchRule::kRounding, MatchRule::kPercent}) {
    for (const EvidenceNumber& e : ix.numbers) {
      const double c = comparable(e.value), v = t.value * factor;
      if ((rule == MatchRule::kNumeric && NumericEqual(t.value, c)) ||
          (rule == MatchRule::kRounding && RoundsTo(t.value, t.step, c)) ||
          (rule == MatchRule::kPercent &&
           (NumericEqual(v, c) || RoundsTo(v, t.step * factor, c)))) {
        return {rule, e.source};
      }
    }
  }
  for (const NumberToken& q : ix.question_tokens) {
    if (q.is_date) {
      if (t.year_like && q.key.starts_with(t.text + "-")) return {MatchRule::kQuestion, q.text};
    } else if (NumericEqual(t.value, comparable(q.value))) {
      return {MatchRule::kQuestion, q.text};
    }
  }
  return {};
}

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

Match CheckValue(std::string_view value, const std::string& normalised, const Index& ix) {
  for (const auto& [evidence, raw] : ix.values) {
    if (evidence == normalised) return {MatchRule::kVerbatim, raw};
  }
  const std::vector<NumberToken> tokens = Scan(value);
  if (!tokens.empty()) {
    // A value with numbers ("West: 1,234,567.89", "$1.2M") is grounded by its numbers alone:
    // the text parts of mixed values are not checked. The weakest rule used is reported.
    Match result{MatchRule::kVerbatim, ""};
    for (const NumberToken& t : tokens) {
      Match m = CheckNumber(t, ix);
      if (m.rule == MatchRule::kNone) return {};
      result.rule = std::max(result.rule, m.rule);
      result.matched += (result.matched.empty() ? "" : "; ") + m.matched;
    }
    return result;
  }
  // Purely textual (or with only glued digits, like "Q4"): never grounded by being part of
  // a cell, only by a cell equal to it, a passage of free text or the question.
  for (const std::string& text : ix.texts) {
    if (size_t pos = FindWord(text, normalised); pos != std::string::npos) {
      return {MatchRule::kVerbatim, Excerpt(text, pos, normalised.size())};
    }
  }
  if (size_t pos = FindWord(ix.question, normalised); pos != std::string::npos) {
    return {MatchRule::kQuestion, Excerpt(ix.question, pos, normalised.size())};
  }
  return {};
}

}  // namespace

void Evidence::AddValue(std::string value) { values_.push_back(std::move(value)); }
void Evidence::AddText(std::string_view text) { texts_.emplace_back(text); }

std::string_view MatchRuleName(MatchRule rule) {
  static constexpr std::string_view kNames[] = {"none",     "verbatim", "numeric",
                                                "rounding", "percent",  "question"};
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

VerifyReport Verify(std::string_view answer, const std::vector<std::string>& supporting_values,
                    const Evidence& evidence, std::string_view question) {
  const Index ix = BuildIndex(evidence, question);
  VerifyReport report;
  for (const std::string& value : supporting_values) {
    const std::string normalised = Normalise(value);
    if (normalised.empty()) continue;  // states nothing, so there is nothing to ground
    Match m = CheckValue(value, normalised, ix);
    report.checks.push_back({value, "supporting_values", m.rule, std::move(m.matched)});
  }
  for (const NumberToken& t : Scan(answer)) {
    Match m = CheckNumber(t, ix);
    report.checks.push_back({t.text, "answer_text", m.rule, std::move(m.matched)});
  }
  return report;
}

std::vector<std::string> ExtractNumbers(std::string_view text) {
  std::vector<std::string> out;
  for (NumberToken& t : Scan(text)) out.push_back(std::move(t.text));
  return out;
}

}  // namespace quarry::agent
