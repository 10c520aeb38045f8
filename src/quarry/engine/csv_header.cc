// Whether the sniffer's header is the file's: a header of numbers (a wide table's years, which
// the sniffer reads as data because they fit the columns' types) and a title line with as many
// delimiters as the header (which it reads as the header). Each is decided by what the rest of
// the column holds, not by the line's own types alone.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <regex>
#include <set>

#include "quarry/engine/csv_internal.h"

namespace quarry::engine::internal {
namespace {

// Years a wide table's header names: a sequence of them across the columns.
constexpr double kFirstYear = 1800, kLastYear = 2100;

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<double> Number(std::string_view text) {
  text = Trimmed(text);
  if (text.empty()) return std::nullopt;
  if (text.front() == '+') text.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A column's name as people write one: starts with a letter, then letters, digits, spaces and
// _ . - ( ) / %, at most 64 bytes. Bytes past ASCII count as letters (names in any language).
bool NameLike(std::string_view text) {
  text = Trimmed(text);
  if (text.empty() || text.size() > 64) return false;
  const auto first = static_cast<unsigned char>(text.front());
  if (!(std::isalpha(first) || first == '_' || first >= 0x80)) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || u >= 0x80 ||
           std::string_view(" _.-()/%#").find(c) != std::string_view::npos;
  });
}

bool AllDistinct(const std::vector<std::string>& fields) {
  std::set<std::string_view> seen;
  for (const auto& f : fields) {
    if (!seen.insert(Trimmed(f)).second) return false;
  }
  return true;
}

// A line that reads as a title rather than a header of names: only its first field filled
// ('Sales report, 2024, all regions' quoted, or 'Report,,'), or a field with a date or a page
// or print mark ('generated 2024-05-01', 'page 1', 'as of 31.12.2023'). 'name,score' above
// 'Alice,absent' is a header over a first row of words, never a title (a fresh-user trial lost
// Alice's row that way).
bool TitleLike(const std::vector<std::string>& fields) {
  const bool first_only = std::all_of(fields.begin() + 1, fields.end(),
                                      [](const std::string& f) { return Trimmed(f).empty(); });
  if (first_only && !Trimmed(fields.front()).empty()) return true;
  static const std::regex kMark(
      "([0-9]{4}-[0-9]{1,2}-[0-9]{1,2}|[0-9]{1,2}[./][0-9]{1,2}[./][0-9]{2,4}|\\b(page|seite|"
      "generated|exported|printed|as of|report|stand|bericht)\\b)",
      std::regex::icase);
  return std::any_of(fields.begin(), fields.end(),
                     [](const std::string& f) { return std::regex_search(f, kMark); });
}

std::string Joined(const std::vector<std::string>& fields) {
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ", ") + std::string(Trimmed(f));
  return PromptText(out, 100);
}

// The first lines from `skip` on, split into fields as text.
Result<std::vector<std::vector<std::string>>> Lines(const RunRows& run, const std::string& reader,
                                                    int64_t skip, int64_t n) {
  auto rows = run("SELECT * FROM " + reader + ", header = false, skip = " + std::to_string(skip) +
                  ") LIMIT " + std::to_string(n));
  if (!rows) return std::unexpected(rows.error());
  std::vector<std::vector<std::string>> lines;
  for (const auto& row : *rows) {
    std::vector<std::string> fields;
    for (const auto& v : row) fields.push_back(v.value_or(""));
    lines.push_back(std::move(fields));
  }
  return lines;
}

// The sniffer read the file without a header: its first line is a wide table's header when its
// numbers are years rising across the columns, its other fields are names, and the columns
// below do not hold years themselves (a table of birth and death years starts with data).
Result<std::optional<CsvHeaderFix>> CheckYearHeader(const RunRows& run, const std::string& reader,
                                                    int64_t skip,
                                                    const CsvSniffedColumns& columns) {
  auto lines = Lines(run, reader, skip, 1);
  if (!lines) return std::unexpected(lines.error());
  if (lines->empty() || lines->front().size() != columns.size()) return std::nullopt;
  const std::vector<std::string>& first = lines->front();
  std::vector<size_t> years;
  std::vector<double> values;
  for (size_t i = 0; i < first.size(); ++i) {
    const std::optional<double> n = Number(first[i]);
    const bool year = n && *n == static_cast<double>(static_cast<int64_t>(*n)) &&
                      *n >= kFirstYear && *n <= kLastYear;
    // A year heads a column of numbers, or of text where some values are not numbers ('n/a',
    // '1,056'): the sniffer then typed it VARCHAR, the year and all.
    if (year && (CsvNumericType(columns[i].second) || columns[i].second == "VARCHAR")) {
      values.push_back(*n);
      years.push_back(i);
    } else if (CsvNumericType(columns[i].second) || n || !NameLike(first[i])) {
      return std::nullopt;
    }
  }
  // Rising or falling across the columns (2010, 2000, 1990 is a header too).
  const bool rising = std::is_sorted(values.begin(), values.end(), std::less_equal<double>());
  const bool falling = std::is_sorted(values.begin(), values.end(), std::greater_equal<double>());
  if (years.size() < 2 || !AllDistinct(first) || !(rising || falling)) return std::nullopt;
  // The rest of each column: a column of years below a year is data, not a header.
  std::string sql;
  for (size_t i : years) {
    const std::string v =
        "TRY_CAST(replace(" + QuoteIdent(columns[i].first) + ", ',', '') AS DOUBLE)";
    sql += std::string(sql.empty() ? "" : ", ") + "count_if(" + v + " IS NOT NULL AND (" + v +
           " <> floor(" + v + ") OR " + v + " < " + std::to_string(kFirstYear) + " OR " + v +
           " > " + std::to_string(kLastYear) + "))";
  }
  auto rest = run("SELECT " + sql + " FROM (SELECT * FROM " + reader +
                  ", header = false, skip = " + std::to_string(skip + 1) + ", names = [" +
                  [&] {
                    std::string names;
                    for (const auto& c : columns) {
                      names += (names.empty() ? "" : ", ") + QuoteLiteral(c.first);
                    }
                    return names;
                  }() +
                  "]))");
  if (!rest) return std::unexpected(rest.error());
  if (rest->empty()) return std::nullopt;
  for (const auto& v : rest->front()) {
    if (v.value_or("0") == "0") return std::nullopt;
  }
  return CsvHeaderFix{
      true, skip,
      "the first line (" + Joined(first) +
          ") was read as the header: its numbers "
          "are years naming the columns of a wide table, not data (quote such names "
          "in SQL: \"" +
          std::string(Trimmed(first[years.front()])) + "\")"};
}

// The sniffer took the first line as the header: it is a title instead when every column below
// it is text only because of the second line, whose fields are all names, while the lines after
// that fit typed columns that the first line's fields do not ('Report, generated 2024-05-01,
// page 1' above 'id,name,amount').
Result<std::optional<CsvHeaderFix>> CheckTitleLine(const RunRows& run, const std::string& reader,
                                                   const CsvSniffedColumns& columns,
                                                   const CsvResniff& resniff) {
  if (columns.size() < 2) return std::nullopt;
  for (const auto& c : columns) {
    if (c.second != "VARCHAR") return std::nullopt;
  }
  auto lines = Lines(run, reader, 0, 2);
  if (!lines) return std::unexpected(lines.error());
  if (lines->size() < 2 || (*lines)[0].size() != columns.size() ||
      (*lines)[1].size() != columns.size()) {
    return std::nullopt;
  }
  const std::vector<std::string>& title = (*lines)[0];
  const std::vector<std::string>& names = (*lines)[1];
  if (!TitleLike(title)) return std::nullopt;
  if (!AllDistinct(names) || !std::all_of(names.begin(), names.end(), [](const std::string& f) {
        return NameLike(f) && !Number(f);
      })) {
    return std::nullopt;
  }
  auto below = resniff(1);
  if (!below) return std::unexpected(below.error());
  if (below->size() != columns.size()) return std::nullopt;
  std::string fits;
  int typed = 0;
  for (size_t i = 0; i < below->size(); ++i) {
    const std::string& type = (*below)[i].second;
    if (type == "VARCHAR") continue;
    ++typed;
    fits += std::string(fits.empty() ? "" : " OR ") + "TRY_CAST(" +
            QuoteLiteral(Trimmed(title[i])) + " AS " + type + ") IS NOT NULL";
  }
  if (typed == 0) return std::nullopt;
  auto fit = run("SELECT " + fits);
  if (!fit) return std::unexpected(fit.error());
  if (fit->empty() || fit->front().empty() || fit->front()[0].value_or("true") != "false") {
    return std::nullopt;
  }
  return CsvHeaderFix{
      true, 1,
      "the first line '" + Joined(title) +
          "' is a title, not the header: its "
          "fields fit none of the typed columns below, and the next line names them; "
          "skipped as a preamble"};
}

}  // namespace

Result<std::optional<CsvHeaderFix>> CheckCsvHeader(const RunRows& run, const std::string& reader,
                                                   bool header, int64_t skip,
                                                   const CsvSniffedColumns& columns,
                                                   const CsvResniff& resniff) {
  if (!header) return CheckYearHeader(run, reader, skip, columns);
  if (skip == 0) return CheckTitleLine(run, reader, columns, resniff);
  return std::nullopt;
}

namespace {

// How many fields `line` splits into at `delimiter`, outside `quote`d text.
int64_t FieldsOutsideQuotes(std::string_view line, char delimiter, char quote) {
  int64_t n = 1;
  bool quoted = false;
  for (char c : line) {
    if (c == quote) quoted = !quoted;
    if (c == delimiter && !quoted) ++n;
  }
  return n;
}

}  // namespace

std::optional<std::string> QuotedTitleLine(const std::vector<std::string>& lines, char quote) {
  if (lines.size() < 2) return std::nullopt;
  std::string_view first = lines[0];
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  first = Trimmed(first);
  if (first.size() < 3 || first.front() != quote || first.back() != quote) return std::nullopt;
  // One field: the quotes inside are doubled, so every quote but the ends comes in pairs.
  const std::string_view inside = first.substr(1, first.size() - 2);
  for (size_t at = 0; at < inside.size(); ++at) {
    if (inside[at] != quote) continue;
    if (at + 1 >= inside.size() || inside[at + 1] != quote) return std::nullopt;
    ++at;
  }
  // Below it, a table: each of the next lines splits into the same number of fields, two or
  // more, at one delimiter. A one-column file of quoted values has no such lines.
  for (char delimiter : {',', ';', '\t', '|'}) {
    const int64_t width = FieldsOutsideQuotes(lines[1], delimiter, quote);
    if (width < 2) continue;
    size_t agree = 0, seen = 0;
    for (size_t i = 1; i < lines.size(); ++i) {
      if (lines[i].empty() || lines[i] == "\r") continue;
      ++seen;
      if (FieldsOutsideQuotes(lines[i], delimiter, quote) == width) ++agree;
    }
    if (agree * 10 >= seen * 9) return std::string(first);
  }
  return std::nullopt;
}

Result<void> RefuseBlankCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64 << 10, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (!in.eof() || head.empty()) return {};  // larger than that, or the empty-file error
  std::string_view rest = head;
  for (std::string_view bom : {"\xEF\xBB\xBF", "\xFF\xFE", "\xFE\xFF"}) {
    if (rest.starts_with(bom)) rest.remove_prefix(bom.size());
  }
  const bool blank = std::all_of(rest.begin(), rest.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0';
  });
  if (!blank) return {};
  return Fail(Error::Code::kData, path +
                                      " holds only blank lines: there is no header and no "
                                      "rows to query; point at a file with rows");
}

bool CsvLineIsANumber(const std::string& text) {
  static const std::regex kNumber(
      "^\\(?[+-]?\\(?([$€£¥]\\s?)?[0-9]{1,3}([, .]?[0-9]{3})*([.,][0-9]+)?\\s?[$€£¥%]?\\)?$");
  int year = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), year);
  const bool a_year = ec == std::errc() && end == text.data() + text.size() && year >= kFirstYear &&
                      year <= kLastYear;
  return std::regex_match(text, kNumber) && !a_year;
}

}  // namespace quarry::engine::internal
