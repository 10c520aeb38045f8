// Dates written as text with month names ('Apr 1 2005', 'April 1, 2005', '1 Apr 2005',
// '01-Apr-2005'): recognised in a text column's values so its card shows the dates' real range
// and says how to read them. DuckDB's sniffer types none of these as dates and SQLite has no
// date type, so without this they read as text sorted by month name.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "quarry/engine/card_notes_internal.h"

namespace quarry::engine::internal {
namespace {

constexpr const char* kMonths[] = {"january",   "february", "march",    "april",
                                   "may",       "june",     "july",     "august",
                                   "september", "october",  "november", "december"};

// A column with more distinct values than this spans centuries of days: not read value by value.
constexpr int64_t kMaxDistinctDates = 50000;

// 1..12 for a month's full name or its three-letter abbreviation (any case), with `full` set
// for the full name; 0 for anything else.
int Month(std::string_view word, bool& full) {
  std::string w;
  for (const char c : word) w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int m = 0; m < 12; ++m) {
    const std::string_view name = kMonths[m];
    if (w == name) {
      full = name.size() > 3;  // "may" is both
      return m + 1;
    }
    if (w == name.substr(0, 3)) {
      full = false;
      return m + 1;
    }
  }
  return 0;
}

bool ValidDay(int year, int month, int day) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day >= 1 && day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

// The parts of a value: words, numbers and the separators between them.
struct Token {
  std::string text;
  bool digits = false;
  std::string after;  // the separator that follows: "", " ", ", ", "-"
};

std::optional<std::vector<Token>> Tokens(std::string_view text) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    Token t;
    t.digits = std::isdigit(c) != 0;
    size_t j = i;
    while (j < text.size() && (t.digits ? std::isdigit(static_cast<unsigned char>(text[j]))
                                        : std::isalpha(static_cast<unsigned char>(text[j])))) {
      ++j;
    }
    if (j == i) return std::nullopt;
    t.text = std::string(text.substr(i, j - i));
    size_t k = j;
    if (k < text.size() && (text[k] == ',' || text[k] == '-')) t.after += text[k++];
    while (k < text.size() && text[k] == ' ') ++k;
    if (k > j && t.after.empty()) t.after = " ";
    if (t.after == "," && k > j + 1) t.after = ", ";
    if (t.after == ",") return std::nullopt;  // "Apr 1,2005": not a form strptime is given
    out.push_back(std::move(t));
    i = k;
  }
  return out;
}

}  // namespace

std::optional<TextDate> ParseTextDate(std::string_view text) {
  const auto tokens = Tokens(text);
  if (!tokens || tokens->size() != 3 || !(*tokens)[2].after.empty()) return std::nullopt;
  const Token& a = (*tokens)[0];
  const Token& b = (*tokens)[1];
  const Token& y = (*tokens)[2];
  if (!y.digits || y.text.size() != 4) return std::nullopt;
  const Token& month_token = a.digits ? b : a;
  const Token& day_token = a.digits ? a : b;
  if (month_token.digits || !day_token.digits || day_token.text.size() > 2) return std::nullopt;
  bool full = false;
  TextDate d;
  d.month = Month(month_token.text, full);
  d.day = std::atoi(day_token.text.c_str());
  d.year = std::atoi(y.text.c_str());
  if (d.month == 0 || d.year < 1000 || !ValidDay(d.year, d.month, d.day)) return std::nullopt;
  // A dash joins both separators or neither: "01-Apr-2005", never "01-Apr 2005".
  if ((a.after == "-") != (b.after == "-")) return std::nullopt;
  const std::string month = full ? "%B" : "%b";
  d.format = (a.digits ? "%d" : month) + a.after + (a.digits ? month : "%d") + b.after + "%Y";
  d.either_month = month_token.text.size() == 3 && d.month == 5;  // "May" is both
  return d;
}

std::string TextDate::Iso() const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", year, month, day);
  return buf;
}

Result<void> NoteTextDates(TableCard& card, const std::string& sql_name, const RunRows& run,
                           Dialect dialect) {
  for (ColumnCard& col : card.columns) {
    // SQLite keeps such text as text whatever the declared type (it is no number to convert).
    const bool text = dialect == Dialect::kSQLite ? col.type != "BLOB" : col.type == "VARCHAR";
    if (!text || !col.profiled || col.samples.empty() || !col.date_format.empty()) continue;
    if (!std::all_of(col.samples.begin(), col.samples.end(),
                     [](const std::string& s) { return ParseTextDate(s).has_value(); })) {
      continue;
    }
    if (col.distinct_count > kMaxDistinctDates) continue;
    const std::string q = QuoteIdent(col.name);
    auto values = run("SELECT CAST(" + q + " AS VARCHAR), count(*) FROM " + sql_name + " WHERE " +
                      q + " IS NOT NULL GROUP BY 1 LIMIT " + std::to_string(kMaxDistinctDates + 1));
    if (!values) return std::unexpected(values.error());
    if (static_cast<int64_t>(values->size()) > kMaxDistinctDates) continue;
    int64_t dates = 0, others = 0;
    std::map<std::string, int64_t> formats, may;  // may: formats of "May" alone (%b or %B)
    std::optional<TextDate> low, high;
    auto key = [](const TextDate& d) { return d.year * 10000 + d.month * 100 + d.day; };
    for (const auto& row : *values) {
      if (row.size() < 2 || !row[0]) continue;
      const int64_t n = std::strtoll(row[1].value_or("0").c_str(), nullptr, 10);
      const auto d = ParseTextDate(*row[0]);
      if (!d) {
        others += n;
        continue;
      }
      dates += n;
      (d->either_month ? may : formats)[d->format] += n;
      if (!low || key(*d) < key(*low)) low = d;
      if (!high || key(*d) > key(*high)) high = d;
    }
    // "May 9, 2005" is written as its neighbours are: %B beside "June 30, 2006".
    for (const auto& [f, n] : may) {
      std::string full = f;
      if (const size_t at = full.find("%b"); at != std::string::npos) full.replace(at, 2, "%B");
      formats[formats.contains(full) ? full : f] += n;
    }
    // Nine in ten rows at least: a column of names with a few dates in it is no date column.
    if (!low || dates < 9 * (dates + others) / 10) continue;
    std::vector<std::pair<int64_t, std::string>> by_rows;
    for (const auto& [f, n] : formats) by_rows.emplace_back(-n, f);
    std::sort(by_rows.begin(), by_rows.end());
    col.date_format = by_rows.front().second;
    col.min = low->Iso();
    col.max = high->Iso();
    std::string listed, sql_list;
    for (size_t i = 0; i < by_rows.size(); ++i) {
      listed += (i == 0 ? "" : i + 1 == by_rows.size() ? " and " : ", ") + by_rows[i].second;
      sql_list += (i ? ", " : "") + QuoteLiteral(by_rows[i].second);
    }
    std::string note = std::string("dates written as text in the format") +
                       (by_rows.size() > 1 ? "s " : " ") + listed;
    if (others > 0)
      note += " (" + std::to_string(others) + (others == 1 ? " row is" : " rows are") + " no date)";
    if (dialect == Dialect::kSQLite) {
      note +=
          "; SQLite's date functions cannot read them and as text they sort by month name: "
          "compare or sort them only as YYYY-MM-DD rebuilt from their parts";
    } else {
      const std::string formats_sql = by_rows.size() > 1 ? "[" + sql_list + "]" : sql_list;
      note += "; as text they sort by month name: read them with CAST(" +
              std::string(others > 0 ? "try_strptime(" : "strptime(") + q + ", " + formats_sql +
              ") AS DATE) to compare or sort";
    }
    col.notes.push_back(note);
  }
  return {};
}

}  // namespace quarry::engine::internal
