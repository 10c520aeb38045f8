// The verify gate's scanner: numeric claims read out of text (digits, magnitude words, number
// words, ISO dates), the words around them that give a direction or name a reference, and the
// normalisation that makes a cell and a written value comparable.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "quarry/agent/verify/internal.h"

namespace quarry::agent::internal {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWordChar(char c) { return IsDigit(c) || IsAlpha(c) || c == '_'; }
bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

namespace {

char At(std::string_view s, size_t k) { return k < s.size() ? s[k] : '\0'; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

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

}  // namespace

std::string WordAt(std::string_view s, size_t p, size_t* end) {
  size_t e = p;
  while (e < s.size() && IsAlpha(s[e])) ++e;
  *end = e;
  return LowerAscii(s.substr(p, e - p));
}

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
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

namespace {

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
  t.currency = currency > 0;
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
      t.begin = i;
      t.end = end;
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
      if (word == "x" || word == "fold") t.ratio = true;  // "3x", "3fold"
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
  } else if (space && LowerAscii(s.substr(q + 1, 8)) == "per cent" && !IsAlpha(at(q + 9))) {
    t.percent = true, q += 9;  // British spelling: "69.7 per cent"
  } else if (space && LowerAscii(s.substr(q + 1, 16)) == "percentage point") {
    // A difference of proportions: "48.11 percentage points" for 0.4811.
    t.percent = true, q += 17;
    if (at(q) == 's') ++q;
  } else if (space && LowerAscii(s.substr(q + 1, 2)) == "pp" && !IsAlpha(at(q + 3))) {
    t.percent = true, q += 3;
  }
  // A multiple: "3 times", "2.5-fold", "3×" (U+00D7) state a ratio a result must hold.
  if (!t.percent && !t.ratio) {
    if ((space && LowerAscii(s.substr(q + 1, 5)) == "times" && !IsAlpha(at(q + 6))) ||
        (at(q) == '-' && LowerAscii(s.substr(q + 1, 4)) == "fold" && !IsAlpha(at(q + 5)))) {
      t.ratio = true;
    } else if (s.substr(q, 2) == "\xc3\x97") {
      t.ratio = true, q += 2;
    }
  }
  if (IsWordChar(at(q))) return {std::nullopt, SkipWord(s, begin)};

  double mantissa = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), mantissa);
  const double power = std::pow(10.0, exponent) * scale;
  t.value = (negative ? -mantissa : mantissa) * power;
  // Significant figures as written. A plain integer means every digit ("500" is 500, not
  // about 500); a scaled one does not ("500K" and "1 million" are roundings).
  const size_t first = digits.find_first_not_of("0.");
  int trailing = 0;
  if (first != std::string::npos) {
    t.significant = static_cast<int>(
        std::count_if(digits.begin() + static_cast<std::ptrdiff_t>(first), digits.end(), IsDigit));
    if (decimals == 0 && power != 1) {
      while (trailing + 1 < t.significant &&
             digits[digits.size() - 1 - static_cast<size_t>(trailing)] == '0') {
        ++trailing;
      }
      t.significant -= trailing;
    }
  }
  t.step = std::pow(10.0, trailing - decimals) * power;
  t.scale = scale;
  t.text = std::string(s.substr(i, q - i));
  t.begin = i;
  t.end = q;
  t.year_like = !t.explicit_sign && currency == 0 && !grouped && digits.size() == 4 && power == 1 &&
                !t.percent;
  return {std::move(t), q};
}

int SmallNumber(std::string_view w) {
  static constexpr std::array<std::string_view, 20> kSmall = {
      "zero",     "one",     "two",     "three",     "four",     "five",    "six",
      "seven",    "eight",   "nine",    "ten",       "eleven",   "twelve",  "thirteen",
      "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
  for (size_t k = 0; k < kSmall.size(); ++k) {
    if (w == kSmall[k]) return static_cast<int>(k);
  }
  return -1;
}

int Tens(std::string_view w) {
  static constexpr std::array<std::string_view, 8> kTens = {
      "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};
  for (size_t k = 0; k < kTens.size(); ++k) {
    if (w == kTens[k]) return 20 + 10 * static_cast<int>(k);
  }
  return -1;
}

double ScaleWord(std::string_view w) {
  if (w == "thousand") return 1e3;
  if (w == "million") return 1e6;
  if (w == "billion") return 1e9;
  return w == "trillion" ? 1e12 : 0;
}

// The denominator a fraction word stands for ("half" 2, "thirds" 3, "quarter" 4), 0 if none.
int Fraction(std::string_view w) {
  if (w == "half" || w == "halves") return 2;
  if (w == "third" || w == "thirds") return 3;
  return (w == "quarter" || w == "quarters") ? 4 : 0;
}

// The ratio a multiplier word states ("twice" and "doubled" 2, "tripled" 3, "halved" 0.5), 0
// if none. Adjectives ("double quotes", "a triple join") are not among them.
double Multiple(std::string_view w) {
  for (std::string_view m : {"twice", "doubled", "doubling", "twofold"}) {
    if (w == m) return 2;
  }
  for (std::string_view m : {"thrice", "tripled", "tripling", "threefold"}) {
    if (w == m) return 3;
  }
  for (std::string_view m : {"quadrupled", "quadrupling", "fourfold"}) {
    if (w == m) return 4;
  }
  return w == "halved" || w == "halving" ? 0.5 : 0;
}

bool NumberWord(std::string_view w) {
  return SmallNumber(w) >= 0 || Tens(w) >= 0 || w == "hundred" || ScaleWord(w) > 0 ||
         w == "dozen" || Fraction(w) > 0 || Multiple(w) > 0;
}

// The word before s[p] (skipping spaces), lower-cased.
std::string WordBefore(std::string_view s, size_t p) {
  while (p > 0 && s[p - 1] == ' ') --p;
  size_t b = p;
  while (b > 0 && IsAlpha(s[b - 1])) --b;
  return LowerAscii(s.substr(b, p - b));
}

// Significant figures of a whole number written in words, trailing zeros not counted
// ("two thousand": 1, "twenty-one": 2), and one unit in its last significant place.
void WordPrecision(NumberToken& t) {
  double v = std::fabs(t.value);
  double step = 1;
  while (v >= 10 && std::fmod(v, 10) == 0) v /= 10, step *= 10;
  t.significant = v < 1 ? 1 : static_cast<int>(std::floor(std::log10(v))) + 1;
  t.step = step;
}

// A number written in words at s[i]: "two thousand", "twenty-one", "a dozen", "half of them",
// "two thirds of", "twice". Lone "one" and "a", ordinals ("third place") and periods ("first
// half", "third quarter") are not claims.
std::optional<NumberToken> ParseWords(std::string_view s, size_t i, size_t* resume) {
  size_t end = i;
  std::string w = WordAt(s, i, &end);
  *resume = std::max(end, i + 1);
  if (i > 0 && (IsWordChar(s[i - 1]) || s[i - 1] == '-')) return std::nullopt;
  const bool article = w == "a" || w == "an";
  if (!article && !NumberWord(w)) return std::nullopt;

  double total = 0, current = 0;
  bool any = false, fraction = false, multiple = false;
  int words = 0;
  size_t last_end = i, p = i;
  // Reads the next word after a space or a hyphen; false when there is none.
  auto next = [&](size_t from) {
    size_t q = from;
    if (q < s.size() && (s[q] == ' ' || s[q] == '-')) ++q;
    if (q >= s.size() || !IsAlpha(s[q])) return false;
    p = q;
    w = WordAt(s, q, &end);
    return true;
  };
  for (bool more = true; more;) {
    const bool first = words == 0;
    if (first && article) {
      current = 1;  // "a thousand", "a dozen", "a half"
    } else if (int n = SmallNumber(w); n >= 0) {
      current += n;
    } else if (int t = Tens(w); t >= 0) {
      current += t;
    } else if (w == "hundred") {
      current = std::max(current, 1.0) * 100;
    } else if (double sc = ScaleWord(w); sc > 0) {
      total += std::max(current, 1.0) * sc;
      current = 0;
    } else if (w == "dozen") {
      current = std::max(current, 1.0) * 12;
    } else if (int d = Fraction(w); d > 0) {
      // "half" stands alone ("half of them"); thirds and quarters need a count ("a third
      // of", "three quarters"), or they are ordinals and periods.
      const std::string before = WordBefore(s, i);
      const bool period = before == "first" || before == "second" || before == "last" ||
                          before == "other" || before == "latter" || before == "former" ||
                          before == "back" || before == "front" || before == "top" ||
                          before == "bottom" || before == "third" || before == "fourth";
      if (period || (d != 2 && (first || current == 0))) return std::nullopt;
      current = std::max(current, 1.0) / d;
      fraction = true;
    } else if (const double m = Multiple(w); m > 0 && first) {
      current = m;
      multiple = true;
    } else if (w == "and" && any) {
      // "two hundred and five": only when a number word follows.
      size_t save_p = p, save_end = end;
      std::string save = w;
      if (!next(end) || !NumberWord(w) || Fraction(w) > 0) {
        p = save_p, end = save_end, w = save;
        break;
      }
      continue;
    } else {
      break;
    }
    any = any || !(first && article);
    ++words;
    last_end = end;
    if (fraction) {
      // "half a million", "a quarter of a million" scale the fraction.
      size_t q = end;
      for (std::string_view lead : {" of a ", " a "}) {
        if (LowerAscii(s.substr(q, lead.size())) != lead) continue;
        size_t scale_end = q + lead.size();
        const double sc = ScaleWord(WordAt(s, q + lead.size(), &scale_end));
        if (sc > 0) current *= sc, last_end = scale_end;
        break;
      }
      break;
    }
    if (multiple) break;
    more = next(end) && (NumberWord(w) || w == "and");
  }
  if (!any) return std::nullopt;
  const std::string_view text = s.substr(i, last_end - i);
  if (words == 1 && LowerAscii(text) == "one") return std::nullopt;  // "one of", "the one"
  NumberToken t;
  t.value = total + current;
  t.words = true;
  t.ratio = fraction || multiple;
  t.begin = i;
  t.end = last_end;
  if (fraction || multiple) {
    t.significant = 1;
    t.step = std::pow(10.0, std::floor(std::log10(t.value)));
  } else {
    WordPrecision(t);
  }
  // "twenty percent", "ten %"
  size_t q = last_end;
  if (q < s.size() && s[q] == ' ' && LowerAscii(s.substr(q + 1, 7)) == "percent" &&
      (q + 8 >= s.size() || !IsAlpha(s[q + 8]))) {
    t.percent = true, q += 8;
  } else if (q < s.size() && s[q] == ' ' && LowerAscii(s.substr(q + 1, 8)) == "per cent" &&
             (q + 9 >= s.size() || !IsAlpha(s[q + 9]))) {
    t.percent = true, q += 9;
  } else if (q < s.size() &&
             (s[q] == '%' || (s[q] == ' ' && q + 1 < s.size() && s[q + 1] == '%'))) {
    q += s[q] == '%' ? 1 : 2;
    t.percent = true;
  }
  t.end = q;
  t.text = std::string(s.substr(i, q - i));
  *resume = q;
  return t;
}
}  // namespace

std::vector<NumberToken> Scan(std::string_view s, bool words) {
  std::vector<NumberToken> out;
  size_t i = 0;
  while (i < s.size()) {
    if (IsAlpha(s[i]) || s[i] == '_') {
      size_t resume = i + 1;
      if (words && IsAlpha(s[i])) {
        if (auto t = MonthDate(s, i, &resume)) {
          out.push_back(std::move(*t));
          i = resume;
          continue;
        }
        if (auto t = ParseWords(s, i, &resume)) {
          out.push_back(std::move(*t));
          i = resume;
          continue;
        }
      }
      i = SkipWord(s, i);
    } else if (IsDigit(s[i]) || SignLen(s, i) > 0 || CurrencyLen(s, i) > 0) {
      size_t resume = i + 1;
      if (IsDigit(s[i])) {
        if (auto t = ClockTime(s, i, &resume)) {
          out.push_back(std::move(*t));
          i = resume;
          continue;
        }
        if (auto t = DigitDate(s, i, &resume)) {
          out.push_back(std::move(*t));
          i = resume;
          continue;
        }
      }
      ScanResult r = ParseAt(s, i);
      if (r.token) out.push_back(std::move(*r.token));
      i = std::max(r.end, i + 1);
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace quarry::agent::internal
