// The deterministic graders (suite.h): numbers read from the answer as the verify gate reads
// them (agent::ExtractNumbers), compared with the computed truth within the task's tolerance;
// and required or forbidden strings on word boundaries.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include "quarry/common/text.h"
#include "quarry/agent/verify.h"
#include "quarry/bench/suite.h"

namespace quarry::bench {
namespace {

bool Digit(char c) { return c >= '0' && c <= '9'; }

bool ConsumePrefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// The scale a written suffix gives a number; nullopt when the suffix is not one.
std::optional<double> Scale(std::string_view suffix) {
  struct Entry {
    std::string_view word;
    double scale;
  };
  static constexpr Entry kSuffixes[] = {{"", 1},
                                        {"%", 1},
                                        {"percent", 1},
                                        {"per cent", 1},
                                        {"pp", 1},
                                        {"percentage points", 1},
                                        {"percentage point", 1},
                                        {"k", 1e3},
                                        {"thousand", 1e3},
                                        {"m", 1e6},
                                        {"mn", 1e6},
                                        {"million", 1e6},
                                        {"b", 1e9},
                                        {"bn", 1e9},
                                        {"billion", 1e9},
                                        {"t", 1e12},
                                        {"tn", 1e12},
                                        {"trillion", 1e12},
                                        {"dozen", 12}};
  for (const Entry& e : kSuffixes) {
    if (suffix == e.word) return e.scale;
  }
  return std::nullopt;
}

// Cardinal numbers in words: "two thousand", "twenty-five", "a dozen", "one hundred and
// five". Fractions and multiples ("half", "twice") are not values to compare.
std::optional<double> ParseWords(std::string_view text) {
  static constexpr std::string_view kUnits[] = {
      "zero",     "one",     "two",     "three",     "four",     "five",    "six",
      "seven",    "eight",   "nine",    "ten",       "eleven",   "twelve",  "thirteen",
      "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
  static constexpr std::string_view kTens[] = {"twenty", "thirty",  "forty",  "fifty",
                                               "sixty",  "seventy", "eighty", "ninety"};
  std::string words = Lower(text);
  for (char& c : words) {
    if (c == '-') c = ' ';
  }
  double total = 0, current = 0;
  bool any = false;
  size_t pos = 0;
  while (pos < words.size()) {
    const size_t end = words.find(' ', pos);
    const std::string_view w = std::string_view(words).substr(
        pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? words.size() : end + 1;
    if (w.empty() || w == "and") continue;
    if (w == "a" || w == "an") {
      current += 1;
      continue;
    }
    bool known = false;
    for (size_t i = 0; i < std::size(kUnits); ++i) {
      if (w == kUnits[i]) current += static_cast<double>(i), known = true;
    }
    for (size_t i = 0; i < std::size(kTens); ++i) {
      if (w == kTens[i]) current += 20.0 + 10.0 * static_cast<double>(i), known = true;
    }
    if (w == "hundred") current = (current == 0 ? 1 : current) * 100, known = true;
    if (w == "dozen") current = (current == 0 ? 1 : current) * 12, known = true;
    for (auto [name, scale] : {std::pair{"thousand", 1e3}, std::pair{"million", 1e6},
                               std::pair{"billion", 1e9}, std::pair{"trillion", 1e12}}) {
      if (w == name) {
        total += (current == 0 ? 1 : current) * scale;
        current = 0;
        known = true;
      }
    }
    if (!known) return std::nullopt;
    any = true;
  }
  if (!any) return std::nullopt;
  return total + current;
}

bool WordByte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// Runs of whitespace as one space, ASCII lower-case.
std::string Canonical(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Whether `needle` occurs in `hay` (both Canonical) not glued to a word on either side.
bool ContainsWord(const std::string& hay, const std::string& needle) {
  if (needle.empty()) return false;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
    const bool starts_word = WordByte(static_cast<unsigned char>(needle.front()));
    const bool ends_word = WordByte(static_cast<unsigned char>(needle.back()));
    const bool left_ok =
        at == 0 || !starts_word || !WordByte(static_cast<unsigned char>(hay[at - 1]));
    const size_t after = at + needle.size();
    const bool right_ok =
        after >= hay.size() || !ends_word || !WordByte(static_cast<unsigned char>(hay[after]));
    if (left_ok && right_ok) return true;
  }
  return false;
}

std::string Quoted(const Alternatives& alts) {
  std::string out;
  for (const auto& a : alts) out += (out.empty() ? "\"" : " or \"") + a + "\"";
  return out;
}

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

std::optional<double> ParseWrittenNumber(std::string_view written) {
  std::string_view s = Trim(written);
  // Dates and times are kept whole by the scanner; they are not quantities.
  if (s.size() >= 7 && Digit(s[0]) && Digit(s[1]) && Digit(s[2]) && Digit(s[3]) && s[4] == '-' &&
      Digit(s[5])) {
    return std::nullopt;
  }
  const std::string lower = Lower(s);
  std::string_view rest = lower;
  double sign = 1;
  auto read_sign = [&] {
    if (ConsumePrefix(rest, "-") || ConsumePrefix(rest, "\xE2\x88\x92")) {  // U+2212 minus
      sign = -1;
    } else {
      ConsumePrefix(rest, "+");
    }
  };
  read_sign();
  for (std::string_view currency : {"us$", "$", "\xE2\x82\xAC", "\xC2\xA3", "\xC2\xA5"}) {
    if (ConsumePrefix(rest, currency)) {
      if (sign > 0) read_sign();
      break;
    }
  }
  rest = Trim(rest);
  std::string digits;
  size_t i = 0;
  bool any_digit = false, dot = false;
  for (; i < rest.size(); ++i) {
    const char c = rest[i];
    if (Digit(c)) {
      digits += c;
      any_digit = true;
    } else if (c == ',' && !dot && i + 1 < rest.size() && Digit(rest[i + 1])) {
      continue;  // a thousands separator
    } else if (c == '.' && !dot && i + 1 < rest.size() && Digit(rest[i + 1])) {
      digits += c;
      dot = true;
    } else {
      break;
    }
  }
  // Scientific notation ("2.7183053e5", "27183053E-2"), which the verify gate also reads.
  if (any_digit && i + 1 < rest.size() && rest[i] == 'e') {
    size_t j = i + 1;
    std::string exponent = "e";
    if (rest[j] == '+' || rest[j] == '-') exponent += rest[j++];
    const size_t first = j;
    while (j < rest.size() && Digit(rest[j])) exponent += rest[j++];
    if (j > first) {
      digits += exponent;
      i = j;
    }
  }
  if (!any_digit) {
    auto words = ParseWords(rest);
    if (!words) return std::nullopt;
    return sign * *words;
  }
  char* end = nullptr;
  const double base = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || !std::isfinite(base)) return std::nullopt;
  const std::optional<double> scale = Scale(Trim(rest.substr(i)));
  // An unknown suffix (a unit, "x") leaves the number as written.
  return sign * base * scale.value_or(1.0);
}

// Whether the text right before a number denies it: "not", "never", "isn't"... as the last
// word, or before one more word ("not quite", "not exactly").
bool Negated(std::string_view before) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = before.size(); i-- > 0 && words.size() < 2;) {
    const char c = before[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '\'') {
      word.insert(word.begin(), c);
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    } else if (c != ' ' && c != '$' && c != '(') {
      break;  // other punctuation ends the clause
    }
  }
  if (!word.empty() && words.size() < 2) words.push_back(word);
  for (const std::string& w : words) {
    if (w == "not" || w == "never" || w == "no" || w.ends_with("n't")) return true;
  }
  return false;
}

Grade GradeNumeric(std::string_view answer, const std::vector<double>& expected,
                   const Tolerance& tolerance) {
  struct Read {
    std::string text;
    double value;
    bool signed_;
  };
  std::vector<Read> numbers;
  const std::string lower_answer = Lower(answer);
  size_t from = 0;
  for (const std::string& written : agent::ExtractNumbers(answer)) {
    // A number the answer denies ("not $271,830.53", "never 349") is no claim of it.
    const size_t at = lower_answer.find(Lower(written), from);
    if (at != std::string::npos) {
      from = at + written.size();
      if (Negated(std::string_view(lower_answer).substr(0, at))) continue;
    }
    if (auto v = ParseWrittenNumber(written)) {
      const std::string_view t = Trim(written);
      const bool explicit_sign =
          !t.empty() && (t[0] == '-' || t[0] == '+' || t.substr(0, 3) == "\xE2\x88\x92");
      numbers.push_back({written, *v, explicit_sign});
    }
  }
  std::string missing;
  for (double want : expected) {
    const double allowed =
        tolerance.relative ? tolerance.amount * std::fabs(want) : tolerance.amount;
    bool found = false;
    for (const Read& n : numbers) {
      if (std::fabs(n.value - want) <= allowed ||
          (!n.signed_ && want < 0 && std::fabs(n.value + want) <= allowed)) {
        found = true;
        break;
      }
    }
    if (!found) missing += (missing.empty() ? "" : ", ") + Number(want);
  }
  if (missing.empty()) return {true, "every expected value is in the answer"};
  std::string seen;
  for (const Read& n : numbers) seen += (seen.empty() ? "" : ", ") + n.text;
  const std::string within = (tolerance.relative ? "rel " : "abs ") + Number(tolerance.amount);
  return {false, "expected " + missing + " (within " + within +
                     ") not in the answer; its numbers: " + (seen.empty() ? "none" : seen)};
}

Grade GradePredicate(std::string_view answer, const std::vector<Alternatives>& must_contain,
                     const std::vector<Alternatives>& must_not_contain) {
  const std::string hay = Canonical(answer);
  std::vector<std::string> problems;
  for (const Alternatives& item : must_contain) {
    bool found = false;
    for (const std::string& alt : item) found = found || ContainsWord(hay, Canonical(alt));
    if (!found) problems.push_back("missing " + Quoted(item));
  }
  for (const Alternatives& item : must_not_contain) {
    for (const std::string& alt : item) {
      if (ContainsWord(hay, Canonical(alt))) {
        problems.push_back("contains the forbidden \"" + alt + "\"");
        break;
      }
    }
  }
  if (problems.empty()) return {true, "every required item is there and no forbidden one"};
  std::string reason;
  for (const auto& p : problems) reason += (reason.empty() ? "" : "; ") + p;
  return {false, reason};
}

}  // namespace quarry::bench
