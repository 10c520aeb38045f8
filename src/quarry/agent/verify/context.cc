// The verify gate's reading of the words around a number: the direction they give it
// ("58.69% higher", "fell 5%"), the entity they name ("order 17"), and the words of a column's
// name, which say whether it holds identifiers.
#include <algorithm>
#include <cmath>

#include "quarry/agent/verify/internal.h"

namespace quarry::agent::internal {

namespace {

bool In(std::string_view w, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), w) != list.end();
}

// Direction words read after a number ("58.69% higher", "17 fewer orders", "a 5% drop").
Direction DirectionAfter(std::string_view w) {
  if (In(w,
         {"higher", "more", "greater", "larger", "bigger", "above", "up", "increase", "increases",
          "gain", "gains", "rise", "growth", "jump", "over", "better", "stronger"})) {
    return Direction::kUp;
  }
  if (In(w, {"lower", "less",  "fewer",     "smaller",  "below",  "down",   "decrease", "decreases",
             "drop",  "drops", "decline",   "declines", "loss",   "losses", "fall",     "reduction",
             "under", "short", "shortfall", "worse",    "weaker", "dip"})) {
    return Direction::kDown;
  }
  return Direction::kNone;
}

// Direction words read before a number ("rose 5%", "fell by 5%", "a decline of 5%").
Direction DirectionBefore(std::string_view w) {
  if (In(w, {"increased", "increase", "increases", "increasing", "rose",     "rise",    "rises",
             "risen",     "rising",   "grew",      "grow",       "grows",    "grown",   "growing",
             "gained",    "gain",     "gains",     "up",         "jumped",   "climbed", "surged",
             "higher",    "growth",   "added",     "expanded",   "improved", "plus"})) {
    return Direction::kUp;
  }
  if (In(w, {"decreased", "decrease", "decreases",  "decreasing",  "fell",    "fall",
             "falls",     "fallen",   "falling",    "dropped",     "drop",    "drops",
             "declined",  "decline",  "declines",   "declining",   "lost",    "lose",
             "loses",     "losing",   "down",       "shrank",      "shrunk",  "shrinks",
             "slipped",   "plunged",  "lower",      "reduction",   "reduced", "negative",
             "loss",      "deficit",  "contracted", "contraction", "tumbled", "dipped",
             "dip",       "dips",     "sank",       "slid",        "slumped", "minus",
             "shortfall", "worsened"})) {
    return Direction::kDown;
  }
  return Direction::kNone;
}

// Words that compare two things: the sign of their difference depends on which was taken
// from which, which the gate cannot see, so either sign grounds the number.
bool Relational(std::string_view w) {
  return In(w, {"leads",          "led",           "lead",     "leading",      "beats",
                "beat",           "outsold",       "outsells", "outperformed", "outperforms",
                "underperformed", "underperforms", "trails",   "trailed",      "trailing",
                "trail",          "lags",          "lagged",   "lagging",      "lag",
                "ahead",          "behind",        "gap",      "difference",   "margin",
                "spread",         "apart",         "exceeds",  "exceeded",     "differ",
                "differs",        "differed"});
}

// Words that may stand between a direction word and its number ("fell by about 5%").
bool Filler(std::string_view w) {
  return In(w, {"by",
                "of",
                "a",
                "an",
                "about",
                "around",
                "roughly",
                "nearly",
                "almost",
                "approximately",
                "some",
                "just",
                "only",
                "over",
                "another",
                "additional",
                "extra",
                "sharply",
                "slightly",
                "steadily",
                "strongly",
                "modestly",
                "significantly",
                "further",
                "overall",
                "is",
                "was",
                "were",
                "are",
                "change",
                "changes",
                "total",
                "combined"});
}

// Up to `count` words after s[p], stopping at punctuation.
std::vector<std::string> WordsAfter(std::string_view s, size_t p, size_t count) {
  std::vector<std::string> out;
  while (out.size() < count && p < s.size()) {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
    if (p >= s.size() || !IsAlpha(s[p])) break;
    size_t end = p;
    out.push_back(WordAt(s, p, &end));
    p = end;
  }
  return out;
}

// Up to `count` words before s[p], nearest first, stopping at punctuation.
std::vector<std::string> WordsBefore(std::string_view s, size_t p, size_t count) {
  std::vector<std::string> out;
  while (out.size() < count && p > 0) {
    while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) --p;
    if (p == 0 || !IsAlpha(s[p - 1])) break;
    size_t b = p;
    while (b > 0 && IsAlpha(s[b - 1])) --b;
    out.push_back(LowerAscii(s.substr(b, p - b)));
    p = b;
  }
  return out;
}

}  // namespace

Direction DirectionAt(std::string_view text, const NumberToken& token, std::string* word) {
  const std::vector<std::string> after = WordsAfter(text, token.end, 2);
  if (!after.empty()) {
    if (Direction d = DirectionAfter(after[0]); d != Direction::kNone) return *word = after[0], d;
    if (Relational(after[0])) return *word = after[0], Direction::kMagnitude;  // "$5 ahead of"
  }
  // Before the number: direction words through fillers ("fell by about 5%"). After "by" the
  // verb may stand further back ("fell at Birch and Echo by 8.4%"), across commas; a "by"
  // with no direction word before it states a size ("North beats Central by $5").
  bool by = false;
  size_t p = token.begin;
  for (int n = 0; n < 10 && p > 0; ++n) {
    while (p > 0 && (text[p - 1] == ' ' || text[p - 1] == '\t' || (by && text[p - 1] == ','))) --p;
    if (p == 0 || !IsAlpha(text[p - 1])) break;
    size_t b = p;
    while (b > 0 && IsAlpha(text[b - 1])) --b;
    const std::string w = LowerAscii(text.substr(b, p - b));
    p = b;
    if (Direction d = DirectionBefore(w); d != Direction::kNone) return *word = w, d;
    if (Relational(w)) return *word = w, Direction::kMagnitude;
    if (w == "by") by = true;
    if (!by && !Filler(w)) break;
  }
  if (by) return *word = "by", Direction::kMagnitude;
  // "5 points lower", "3 times higher": a unit between; not "5 or fewer", a threshold.
  if (after.size() == 2 && In(after[0], {"point", "points", "percentage", "pp", "times", "dollars",
                                         "units", "euros", "pounds"})) {
    Direction d = DirectionAfter(after[1]);
    if (d != Direction::kNone && after[1] != "over") return *word = after[1], d;
  }
  return Direction::kNone;
}

int BoundAt(std::string_view text, const NumberToken& token) {
  const std::vector<std::string> before = WordsBefore(text, token.begin, 2);
  if (before.empty()) return 0;
  const std::string& w = before[0];
  const std::string pair = before.size() > 1 ? before[1] + " " + w : "";
  if (In(w, {"over", "above", "exceeding", "exceeds", "exceeded"}) ||
      In(pair,
         {"more than", "greater than", "higher than", "larger than", "at least", "upwards of"})) {
    return 1;
  }
  if (In(w, {"under", "below", "nearly", "almost"}) ||
      In(pair, {"less than", "fewer than", "lower than", "smaller than", "at most", "up to",
                "just under"})) {
    return -1;
  }
  return 0;
}

bool ThresholdAt(std::string_view text, const NumberToken& token) {
  // "more than 45 customers" states a count, not a condition: a unit of measure after it
  // ("longer than 300 seconds") keeps it a threshold.
  if (IsCount(text, token)) {
    const std::vector<std::string> after = WordsAfter(text, token.end, 1);
    if (after.empty() ||
        !In(after[0],
            {"seconds",    "minutes",     "hours",       "days",      "weeks",  "months",
             "years",      "millimetres", "millimeters", "metres",    "meters", "kilometres",
             "kilometers", "miles",       "grams",       "kilograms", "pounds", "bytes",
             "degrees",    "points",      "dollars",     "euros",     "units",  "items"})) {
      return false;
    }
  }
  if (BoundAt(text, token) != 0) return true;
  size_t p = token.begin;
  while (p > 0 && text[p - 1] == ' ') --p;
  if (p > 0 && (text[p - 1] == '>' || text[p - 1] == '<' || text[p - 1] == '=')) return true;
  for (std::string_view sign : {"\xe2\x89\xa5", "\xe2\x89\xa4"}) {  // ≥ ≤
    if (p >= sign.size() && text.substr(p - sign.size(), sign.size()) == sign) return true;
  }
  const std::vector<std::string> before = WordsBefore(text, token.begin, 1);
  if (!before.empty() && In(before[0], {"than", "exactly", "precisely"})) return true;
  // A condition restated in another unit: "longer than 5 minutes (300,000 ms)".
  if (p > 0 && text[p - 1] == '(') {
    const size_t from = p > 41 ? p - 41 : 0;
    const std::string before_paren = " " + LowerAscii(text.substr(from, p - 1 - from)) + " ";
    for (const char* w : {" than ", " over ", " under ", " above ", " below ", " exactly ",
                          " at least ", " at most "}) {
      if (before_paren.find(w) != std::string::npos) return true;
    }
  }
  return false;
}

namespace {

bool OperandChar(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ')' || c == '(';
}

// The operator at text[p] (a byte, or × ÷ in UTF-8): its length, 0 when there is none.
size_t OperatorAt(std::string_view text, size_t p, bool* multiplicative) {
  if (p >= text.size()) return 0;
  if (text[p] == '*' || text[p] == '/') return *multiplicative = true, 1;
  if (text[p] == '+' || text[p] == '-') return *multiplicative = false, 1;
  if (text.substr(p, 2) == "\xc3\x97" || text.substr(p, 2) == "\xc3\xb7")
    return *multiplicative = true, 2;
  return 0;
}

}  // namespace

bool InFormula(std::string_view text, const NumberToken& token) {
  // Before: "<operand> <op> N".
  size_t p = token.begin;
  while (p > 0 && text[p - 1] == ' ') --p;
  for (size_t len : {size_t{1}, size_t{2}}) {
    if (p < len) continue;
    bool mult = false;
    if (OperatorAt(text, p - len, &mult) != len) continue;
    if (mult) return true;
    size_t q = p - len;
    while (q > 0 && text[q - 1] == ' ') --q;
    // "F - 32" is a formula; "10 - 15" and "from 3 - 4" are ranges.
    if (q > 0 && OperandChar(text[q - 1]) && text[q - 1] != '(') return true;
  }
  // After: "N <op> <operand>".
  size_t e = token.end;
  while (e < text.size() && text[e] == ' ') ++e;
  bool mult = false;
  if (const size_t len = OperatorAt(text, e, &mult); len > 0 && e > token.end) {
    size_t q = e + len;
    while (q < text.size() && text[q] == ' ') ++q;
    if (mult && q < text.size() &&
        (OperandChar(text[q]) || std::isdigit(static_cast<unsigned char>(text[q]))))
      return true;
    if (!mult && q < text.size() && OperandChar(text[q]) && text[q] != ')') return true;
  }
  return false;
}

bool InSqlComparison(std::string_view sql, size_t begin) {
  size_t p = begin;
  while (p > 0 && sql[p - 1] == ' ') --p;
  if (p > 0 && (sql[p - 1] == '\'' || sql[p - 1] == '"')) --p;
  while (p > 0 && (sql[p - 1] == ' ' || sql[p - 1] == '\n' || sql[p - 1] == '\t')) --p;
  if (p == 0) return false;
  const char c = sql[p - 1];
  if (c == '=' || c == '<' || c == '>') return true;
  auto word_before = [&](size_t at) {
    while (at > 0 && (sql[at - 1] == ' ' || sql[at - 1] == '\n' || sql[at - 1] == '\t')) --at;
    size_t b = at;
    while (b > 0 && std::isalpha(static_cast<unsigned char>(sql[b - 1]))) --b;
    return LowerAscii(sql.substr(b, at - b));
  };
  const std::string w = word_before(p);
  if (w == "like" || w == "ilike" || w == "between" || w == "glob") return true;
  if (w == "and") {
    // BETWEEN x AND y: the word two back is BETWEEN.
    size_t b = p;
    while (b > 0 && std::isalpha(static_cast<unsigned char>(sql[b - 1]))) --b;
    size_t v = b;
    while (v > 0 && sql[v - 1] == ' ') --v;
    size_t vb = v;
    while (vb > 0 && sql[vb - 1] != ' ' && sql[vb - 1] != '(') --vb;
    return word_before(vb) == "between";
  }
  if (c != ',' && c != '(') return false;
  // Inside a parenthesised list: the word before its opening parenthesis is IN.
  int depth = 0;
  bool quoted = false;
  for (size_t q = p; q > 0; --q) {
    const char d = sql[q - 1];
    if (d == '\'') quoted = !quoted;
    if (quoted) continue;
    if (d == ')') ++depth;
    if (d == '(') {
      if (depth == 0) return word_before(q - 1) == "in";
      --depth;
    }
  }
  return false;
}

bool Hedged(std::string_view text, const NumberToken& token) {
  size_t p = token.begin;
  while (p > 0 && text[p - 1] == ' ') --p;
  if (p > 0 && text[p - 1] == '~') return true;
  const std::vector<std::string> before = WordsBefore(text, p, 1);
  return !before.empty() &&
         In(before[0], {"about",  "around", "roughly", "approximately", "approx", "nearly",
                        "almost", "over",   "under",   "some",          "circa",  "ca",
                        "close",  "just",   "upwards", "estimated",     "than",   "least",
                        "most",   "above",  "below",   "exceeding"});
}

std::string ReferenceWord(std::string_view text, const NumberToken& token, bool* marked) {
  *marked = false;
  size_t p = token.begin;
  // A list of references shares its word: "orders 17, 23 and 4".
  for (int items = 0; items < 8 && p > 0; ++items) {
    size_t q = p;
    while (q > 0 && text[q - 1] == ' ') --q;
    if (q > 0 && text[q - 1] == ',') {
      --q;
    } else if (q >= 3 && LowerAscii(text.substr(q - 3, 3)) == "and" &&
               (q == 3 || text[q - 4] == ' ')) {
      q -= 3;
    } else if (q >= 2 && LowerAscii(text.substr(q - 2, 2)) == "or" &&
               (q == 2 || text[q - 3] == ' ')) {
      q -= 2;
    } else {
      break;
    }
    while (q > 0 && text[q - 1] == ' ') --q;
    size_t d = q;
    while (d > 0 && (IsDigit(text[d - 1]) || text[d - 1] == '#')) --d;
    if (d == q) break;  // not a list of numbers
    p = d;
  }
  while (p > 0 && text[p - 1] == ' ') --p;
  // "IDs: 4, 17" names its ids; "items: 17" is a label, not a reference.
  const bool colon = p > 0 && text[p - 1] == ':';
  if (colon) --p;
  if (p > 0 && text[p - 1] == '.') --p;  // "no. 17"
  const std::vector<std::string> before = WordsBefore(text, p, 2);
  if (before.empty()) return "";
  const bool mark = In(before[0], {"id", "ids", "number", "numbers", "no", "nos", "num", "nr"});
  if (colon && !mark) return "";
  if (mark) {
    *marked = true;
    return before.size() > 1 ? Singular(before[1]) : "";
  }
  return Singular(before[0]);
}

bool Contains(const std::vector<std::string>& list, std::string_view w) {
  return std::find(list.begin(), list.end(), w) != list.end();
}

bool IsCount(std::string_view text, const NumberToken& token) {
  if (token.is_date || token.percent || token.explicit_sign || token.value < 0 ||
      std::floor(token.value) != token.value) {
    return false;
  }
  if (!token.words && token.text.find_first_not_of("0123456789,") != std::string::npos) {
    return false;  // "$17", "17.0", "1.2M"
  }
  const std::vector<std::string> after = WordsAfter(text, token.end, 2);
  if (after.empty()) return false;
  const std::string& w = after[0];
  if (w == "of") return !token.ratio;
  if (token.ratio || In(w, {"dollars", "euros", "pounds", "yen", "cents", "bucks"})) return false;
  // A unit of measure is no count of things: "102 hours" may round 102.29.
  if (In(w,
         {"seconds",   "minutes",      "hours",       "days",        "weeks",       "months",
          "years",     "milliseconds", "millimetres", "millimeters", "centimetres", "centimeters",
          "metres",    "meters",       "kilometres",  "kilometers",  "miles",       "feet",
          "inches",    "grams",        "kilograms",   "tonnes",      "tons",        "pounds",
          "ounces",    "litres",       "liters",      "gallons",     "bytes",       "megabytes",
          "gigabytes", "degrees",      "kilowatts",   "watts",       "hertz",       "calories"})) {
    return false;
  }
  return w.size() > 3 && w.back() == 's' && !w.ends_with("ss") && !w.ends_with("us") &&
         !w.ends_with("is") && !In(w, {"does", "goes", "makes", "takes", "gives", "comes"});
}

std::vector<std::string> NameWords(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(LowerAscii(cur));
    cur.clear();
  };
  for (size_t k = 0; k < name.size(); ++k) {
    const char c = name[k];
    if (!IsAlpha(c) && !IsDigit(c)) {
      flush();
      continue;
    }
    // camelCase and CustomerID: a capital after a lower-case letter starts a word, and so
    // does a capital followed by a lower-case one after capitals ("IDName" -> ID, Name).
    const bool upper = c >= 'A' && c <= 'Z';
    if (upper && !cur.empty()) {
      const char prev = cur.back();
      const bool prev_lower = prev >= 'a' && prev <= 'z';
      const bool next_lower = k + 1 < name.size() && name[k + 1] >= 'a' && name[k + 1] <= 'z';
      const bool prev_upper = prev >= 'A' && prev <= 'Z';
      if (prev_lower || (prev_upper && next_lower)) flush();
    }
    cur += c;
  }
  flush();
  return out;
}

int CountWords(std::string_view text) {
  int count = 0;
  size_t run = 0;
  for (size_t k = 0; k <= text.size(); ++k) {
    const bool letter =
        k < text.size() && (IsAlpha(text[k]) || static_cast<unsigned char>(text[k]) >= 0x80);
    if (letter) {
      ++run;
    } else {
      if (run >= 2) ++count;
      run = 0;
    }
  }
  return count;
}

std::string Singular(std::string w) {
  if (w.size() > 4 && w.ends_with("ies")) return w.substr(0, w.size() - 3) + "y";
  if (w.size() > 3 && w.back() == 's' && !w.ends_with("ss")) w.pop_back();
  return w;
}

std::vector<std::string> CountedWords(std::string_view text, const NumberToken& token) {
  return WordsAfter(text, token.end, 3);
}

bool AggregateInSentence(std::string_view text, const NumberToken& token) {
  // The sentence ends at '.', '!', '?', ';' or a line break ('.' before a digit is a decimal
  // point); the clause also at ',', ':', '(' and ')', so "Average humidity is 54.3%, leaving
  // out 27 empty values" names no average of 27.
  auto sentence_end = [&](size_t k) {
    const char c = text[k];
    if (c == '!' || c == '?' || c == ';' || c == '\n') return true;
    return c == '.' && !(k + 1 < text.size() && IsDigit(text[k + 1]));
  };
  auto clause_end = [&](size_t k) {
    const char c = text[k];
    const bool thousands =
        c == ',' && k > 0 && IsDigit(text[k - 1]) && k + 1 < text.size() && IsDigit(text[k + 1]);
    return sentence_end(k) || (!thousands && (c == ',' || c == ':' || c == '(' || c == ')'));
  };
  auto words_in = [&](size_t from, size_t to, auto&& visit) {
    for (size_t p = from; p < to;) {
      if (!IsAlpha(text[p])) {
        ++p;
        continue;
      }
      size_t e = p;
      const std::string w = WordAt(text, p, &e);
      p = e;
      if (visit(w, p)) return true;
    }
    return false;
  };
  size_t s_begin = token.begin, s_end = token.end;
  while (s_begin > 0 && !sentence_end(s_begin - 1)) --s_begin;
  while (s_end < text.size() && !sentence_end(s_end)) ++s_end;
  // "On average, an order brings in $9.77": the sentence's adverb.
  std::string previous;
  if (words_in(s_begin, s_end, [&](const std::string& w, size_t) {
        const bool on_average = previous == "on" && w == "average";
        previous = w;
        return on_average;
      })) {
    return true;
  }
  size_t c_begin = token.begin, c_end = token.end;
  while (c_begin > 0 && !clause_end(c_begin - 1)) --c_begin;
  while (c_end < text.size() && !clause_end(c_end)) ++c_end;
  return words_in(c_begin, c_end, [&](const std::string& w, size_t after) {
    if (!In(w, {"average", "averages", "averaged", "avg", "mean", "median", "typical", "typically",
                "total", "totals", "totalled", "totaled", "sum", "summed", "per", "overall",
                "combined", "altogether", "aggregate"})) {
      return false;
    }
    // "per cent" is a percent sign, not a rate.
    return !(w == "per" && LowerAscii(text.substr(after, 4)) == " cen");
  });
}

}  // namespace quarry::agent::internal
