// The verify gate's readers of dates and times written as prose and people write them: day
// and month names ("14 March 2025", "March 15th, 2025", "14-Mar-2025"), digits with slashes or
// dots ("3/31/2025", "31.03.2025"), and times of day ("23:00", "11 PM"). Each gives a key the
// index compares with the dates and timestamps results hold (rules.cc).
#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "quarry/agent/verify/internal.h"

namespace quarry::agent::internal {
namespace {

char At(std::string_view s, size_t k) { return k < s.size() ? s[k] : '\0'; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

int MonthNamed(std::string_view word) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "january", "february", "march",     "april",   "may",      "june",
      "july",    "august",   "september", "october", "november", "december"};
  for (size_t k = 0; k < kMonths.size(); ++k) {
    const bool abbreviated =
        word.size() >= 3 && kMonths[k].starts_with(word) && (word.size() == 3 || word == "sept");
    if (word == kMonths[k] || abbreviated) return static_cast<int>(k) + 1;
  }
  return 0;
}

std::string IsoKey(int year, int month, int day) {
  char key[16];
  std::snprintf(key, sizeof key, "%04d-%02d-%02d", year, month, day);
  return key;
}

size_t DigitRun(std::string_view s, size_t at) {
  size_t e = at;
  while (IsDigit(At(s, e))) ++e;
  return e - at;
}

}  // namespace

// The dates written with digits first that are no ISO date: "14 March 2025", "14 Mar. 2025",
// "14-Mar-2025",
// "3/31/2025", "31/03/2025", "2025/03/31", "31.03.2025". A day and month that both fit
// ("3/4/2025") keep both readings: the month-first one in `key`, the other in `alt_key`.
std::optional<NumberToken> DigitDate(std::string_view s, size_t i, size_t* resume) {
  if (i > 0 && (IsWordChar(s[i - 1]) || s[i - 1] == '/' || s[i - 1] == '.')) return std::nullopt;
  const size_t first = DigitRun(s, i);
  // No date part is longer than a year; a longer run would also overflow stoi (found by fuzzing:
  // "2222222222222222222.97.14").
  if (first == 0 || first > 4) return std::nullopt;
  NumberToken t;
  t.is_date = true;
  t.begin = i;
  const char gap = At(s, i + first);
  if (first >= 1 && first <= 2 && (gap == ' ' || (gap == '-' && IsAlpha(At(s, i + first + 1))))) {
    // "14 March 2025", "14-Mar-2025"
    const int day = std::stoi(std::string(s.substr(i, first)));
    size_t end = i + first + 1;
    const std::string w = WordAt(s, end, &end);
    const int month = MonthNamed(w);
    if (month == 0 || day < 1 || day > 31) return std::nullopt;
    size_t p = end;
    if (gap == ' ') {
      if (At(s, p) == '.') ++p;
      if (At(s, p) == ',') ++p;
    }
    if (At(s, p) != gap || DigitRun(s, p + 1) != 4 || IsWordChar(At(s, p + 5))) return std::nullopt;
    t.key = IsoKey(std::stoi(std::string(s.substr(p + 1, 4))), month, day);
    t.end = p + 5;
  } else {
    const char sep = At(s, i + first);
    if (sep != '/' && sep != '.') return std::nullopt;
    const size_t second_at = i + first + 1;
    const size_t second = DigitRun(s, second_at);
    if (second < 1 || second > 2 || At(s, second_at + second) != sep) return std::nullopt;
    const size_t third_at = second_at + second + 1;
    const size_t third = DigitRun(s, third_at);
    const int a = std::stoi(std::string(s.substr(i, first)));
    const int b = std::stoi(std::string(s.substr(second_at, second)));
    if (first == 4 && third >= 1 && third <= 2) {  // "2025/03/31"
      const int c = std::stoi(std::string(s.substr(third_at, third)));
      if (b < 1 || b > 12 || c < 1 || c > 31) return std::nullopt;
      t.key = IsoKey(a, b, c);
      t.end = third_at + third;
    } else if (first <= 2 && third == 4) {
      const int year = std::stoi(std::string(s.substr(third_at, 4)));
      if (a < 1 || b < 1 || a > 31 || b > 31 || (a > 12 && b > 12)) return std::nullopt;
      const bool month_first = a <= 12 && (b > 12 || sep == '/');
      t.key = month_first ? IsoKey(year, a, b) : IsoKey(year, b, a);
      if (a <= 12 && b <= 12 && a != b)
        t.alt_key = month_first ? IsoKey(year, b, a) : IsoKey(year, a, b);
      t.end = third_at + 4;
    } else {
      return std::nullopt;
    }
    // "3/31/2025." ends a sentence; "3/31/2025x" or "1.2.2025.5" is no date.
    if (IsWordChar(At(s, t.end)) || (At(s, t.end) == '.' && IsDigit(At(s, t.end + 1)))) {
      return std::nullopt;
    }
  }
  t.text = std::string(s.substr(i, t.end - i));
  *resume = t.end;
  return t;
}

// A month written by name with its year, as prose writes dates: "March 2025", "Mar 2025",
// "March 12, 2025", "March 12 2025". The key is the ISO prefix a date cell must start with.
std::optional<NumberToken> MonthDate(std::string_view s, size_t i, size_t* resume) {
  if (i > 0 && IsWordChar(s[i - 1])) return std::nullopt;
  size_t end = i;
  const std::string w = WordAt(s, i, &end);
  const int month = MonthNamed(w);
  if (month == 0) return std::nullopt;
  size_t p = end;
  if (At(s, p) == '.') ++p;  // "Mar."
  if (At(s, p) != ' ') return std::nullopt;
  ++p;
  auto digits = [&](size_t at) {
    size_t e = at;
    while (IsDigit(At(s, e))) ++e;
    return e - at;
  };
  int day = 0;
  if (size_t n = digits(p); n >= 1 && n <= 2 && !IsDigit(At(s, p + n))) {
    day = std::stoi(std::string(s.substr(p, n)));
    p += n;
    // "March 15th, 2025": the ordinal is the day (a fresh-user trial found it skipped whole).
    const std::string suffix = LowerAscii(s.substr(p, 2));
    if ((suffix == "st" || suffix == "nd" || suffix == "rd" || suffix == "th") &&
        !IsWordChar(At(s, p + 2))) {
      p += 2;
    }
    if (At(s, p) == ',') ++p;
    if (At(s, p) != ' ') return std::nullopt;
    ++p;
  }
  if (digits(p) != 4 || IsWordChar(At(s, p + 4))) return std::nullopt;
  char key[16];
  if (day >= 1 && day <= 31) {
    std::snprintf(key, sizeof key, "%s-%02d-%02d", std::string(s.substr(p, 4)).c_str(), month, day);
  } else {
    std::snprintf(key, sizeof key, "%s-%02d", std::string(s.substr(p, 4)).c_str(), month);
  }
  NumberToken t;
  t.is_date = true;
  t.key = key;
  t.begin = i;
  t.end = p + 4;
  t.text = std::string(s.substr(i, t.end - i));
  *resume = t.end;
  return t;
}

// A time of day: "23:00", "23:00:15", "9:30 am", "11 PM", "11pm", "11 p.m.". The key is the
// 24-hour "HH:MM" (":SS" when written) that a timestamp cell holds after its date.
std::optional<NumberToken> ClockTime(std::string_view s, size_t i, size_t* resume) {
  if (i > 0 && (IsWordChar(s[i - 1]) || s[i - 1] == ':' || s[i - 1] == '.' || s[i - 1] == '-' ||
                s[i - 1] == '/')) {
    return std::nullopt;
  }
  const size_t h = DigitRun(s, i);
  if (h < 1 || h > 2) return std::nullopt;
  int hour = std::stoi(std::string(s.substr(i, h)));
  size_t p = i + h;
  int minute = -1, second = -1;
  if (At(s, p) == ':' && DigitRun(s, p + 1) == 2) {
    minute = std::stoi(std::string(s.substr(p + 1, 2)));
    p += 3;
    if (At(s, p) == ':' && DigitRun(s, p + 1) == 2) {
      second = std::stoi(std::string(s.substr(p + 1, 2)));
      p += 3;
    }
    if (IsDigit(At(s, p)) || (At(s, p) == ':' && IsDigit(At(s, p + 1))) ||
        (At(s, p) == '.' && IsDigit(At(s, p + 1)))) {
      return std::nullopt;  // "12:30:45:10", "1:30.5" are no times of day
    }
  }
  // am / pm, glued or after one space, as "am", "a.m." in any case.
  size_t q = At(s, p) == ' ' ? p + 1 : p;
  int meridiem = 0;
  const char m = Lower(At(s, q));
  if ((m == 'a' || m == 'p') && Lower(At(s, q + 1)) == 'm' && !IsWordChar(At(s, q + 2))) {
    meridiem = m == 'a' ? 1 : 2;
    q += 2;
  } else if ((m == 'a' || m == 'p') && At(s, q + 1) == '.' && Lower(At(s, q + 2)) == 'm' &&
             At(s, q + 3) == '.') {
    meridiem = m == 'a' ? 1 : 2;
    q += 4;
  }
  if (meridiem == 0 && minute < 0) return std::nullopt;  // "11" alone is a number
  if (meridiem != 0) {
    if (hour < 1 || hour > 12) return std::nullopt;
    hour = hour % 12 + (meridiem == 2 ? 12 : 0);
    p = q;
  } else if (hour > 23) {
    return std::nullopt;
  }
  if (minute > 59 || second > 59) return std::nullopt;
  char key[32];
  if (second >= 0) {
    std::snprintf(key, sizeof key, "%02d:%02d:%02d", hour, std::max(minute, 0), second);
  } else {
    std::snprintf(key, sizeof key, "%02d:%02d", hour, std::max(minute, 0));
  }
  NumberToken t;
  t.is_date = true;
  t.is_time = true;
  t.key = key;
  t.begin = i;
  t.end = p;
  t.text = std::string(s.substr(i, p - i));
  *resume = p;
  return t;
}

}  // namespace quarry::agent::internal
