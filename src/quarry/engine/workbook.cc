// What every workbook format shares: dates from number formats, cell ranges, and the copy of
// each sheet the engine reads (CopySheetsAsCsv; the sheet's shaping is in sheet_csv.cc).
#include "quarry/engine/workbook.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <cstring>

namespace quarry::engine::internal {
namespace {

constexpr uint32_t kMaxCols = 16'384;
constexpr uint32_t kMaxRows = 1'048'576;

}  // namespace

bool ParseCellRef(std::string_view ref, uint32_t& row, uint32_t& col) {
  size_t i = 0;
  uint64_t c = 0;
  while (i < ref.size() && i < 3 && std::isalpha(static_cast<unsigned char>(ref[i]))) {
    c = c * 26 + static_cast<uint64_t>(std::toupper(static_cast<unsigned char>(ref[i])) - 'A' + 1);
    ++i;
  }
  if (i == 0 || c > kMaxCols || i == ref.size()) return false;
  uint64_t r = 0;
  for (size_t k = i; k < ref.size(); ++k) {
    if (!std::isdigit(static_cast<unsigned char>(ref[k]))) return false;
    r = r * 10 + static_cast<uint64_t>(ref[k] - '0');
    if (r > kMaxRows) return false;
  }
  if (r == 0) return false;
  row = static_cast<uint32_t>(r - 1);
  col = static_cast<uint32_t>(c - 1);
  return true;
}

std::string CellNumberText(double value) {
  char buf[64];
  const double magnitude = std::fabs(value);
  const auto format = magnitude == 0 || (magnitude >= 1e-6 && magnitude < 1e15)
                          ? std::chars_format::fixed
                          : std::chars_format::general;
  const auto res = std::to_chars(buf, buf + sizeof buf, value, format);
  if (res.ec != std::errc()) return std::to_string(value);
  return std::string(buf, res.ptr);
}

std::string ColumnLetters(uint32_t col) {
  std::string out;
  uint64_t n = static_cast<uint64_t>(col) + 1;
  while (n > 0) {
    out.insert(out.begin(), static_cast<char>('A' + (n - 1) % 26));
    n = (n - 1) / 26;
  }
  return out;
}

std::optional<std::string> RangeSheet(std::string_view text) {
  const size_t bang = text.rfind('!');
  if (bang == std::string_view::npos) return std::nullopt;
  std::string name(text.substr(0, bang));
  if (name.size() >= 2 && name.front() == '\'' && name.back() == '\'') {
    name = name.substr(1, name.size() - 2);
    for (size_t at; (at = name.find("''")) != std::string::npos;) name.erase(at, 1);
  }
  return name;
}

Result<CellRange> ParseCellRange(std::string_view given) {
  // As Excel writes a reference too: Report!$A$4:$E$10 ('Q3 2024'!A1:B2).
  std::string plain(
      given.substr(given.rfind('!') == std::string_view::npos ? 0 : given.rfind('!') + 1));
  std::erase(plain, '$');
  const std::string_view text = plain;
  const size_t colon = text.find(':');
  CellRange r;
  const std::string_view a = text.substr(0, colon);
  const std::string_view b = colon == std::string_view::npos ? a : text.substr(colon + 1);
  if (!ParseCellRef(a, r.first_row, r.first_col) || !ParseCellRef(b, r.last_row, r.last_col)) {
    return Fail(Error::Code::kUsage, "range=" + std::string(given.substr(0, 40)) +
                                         ": give cells as Excel writes them, e.g. range=A3:F200");
  }
  if (r.first_row > r.last_row) std::swap(r.first_row, r.last_row);
  if (r.first_col > r.last_col) std::swap(r.first_col, r.last_col);
  return r;
}

DateStyle DateStyleOf(int id, std::string_view code) {
  // ECMA-376 part 1, 18.8.30: the built-in formats that show dates and times.
  if ((id >= 14 && id <= 17) || (id >= 27 && id <= 31) || (id >= 34 && id <= 36) ||
      (id >= 50 && id <= 58)) {
    return DateStyle::kDate;
  }
  if (id == 22) return DateStyle::kDateTime;
  if ((id >= 18 && id <= 21) || id == 32 || id == 33 || (id >= 45 && id <= 47))
    return DateStyle::kTime;
  if (code.empty()) return DateStyle::kNone;
  // A custom code: only its first section (positive numbers), without quoted text, escaped
  // characters, fills, colours and conditions, which may hold any letter.
  std::string plain;
  bool elapsed = false;
  for (size_t i = 0; i < code.size(); ++i) {
    const char ch = code[i];
    if (ch == ';') break;
    if (ch == '"') {
      const size_t end = code.find('"', i + 1);
      if (end == std::string_view::npos) break;
      i = end;
    } else if (ch == '\\' || ch == '_' || ch == '*') {
      ++i;
    } else if (ch == '[') {
      const size_t end = code.find(']', i + 1);
      if (end == std::string_view::npos) break;
      const std::string_view inside = code.substr(i + 1, end - i - 1);
      if (!inside.empty() && inside.find_first_not_of("hHmMsS") == std::string_view::npos)
        elapsed = true;
      i = end;
    } else {
      plain += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  for (const char* ampm : {"am/pm", "a/p"}) {
    for (size_t at; (at = plain.find(ampm)) != std::string::npos;)
      plain.erase(at, std::strlen(ampm));
  }
  // General, 0.00E+00 and the like hold none of these letters; "mmm" alone is a month.
  const bool y = plain.find('y') != std::string::npos, d = plain.find('d') != std::string::npos;
  const bool m = plain.find('m') != std::string::npos, h = plain.find('h') != std::string::npos;
  const bool s = plain.find('s') != std::string::npos;
  if (plain.find("general") != std::string::npos) return DateStyle::kNone;
  const bool date = y || d || (m && !h && !s && !elapsed);
  const bool time = h || s || elapsed;
  if (date && time) return DateStyle::kDateTime;
  if (date) return DateStyle::kDate;
  if (time) return DateStyle::kTime;
  return DateStyle::kNone;
}

std::optional<std::string> SerialToIso(double serial, bool date1904, DateStyle style) {
  using namespace std::chrono;
  if (!(serial >= 0) || serial >= 2958466.0) return std::nullopt;  // 9999-12-31 is 2958465
  int64_t days = static_cast<int64_t>(std::floor(serial));
  int64_t seconds = std::llround((serial - static_cast<double>(days)) * 86400.0);
  if (seconds >= 86400) {
    ++days;
    seconds -= 86400;
  }
  char clock[16];
  std::snprintf(clock, sizeof clock, "%02d:%02d:%02d", static_cast<int>(seconds / 3600),
                static_cast<int>(seconds / 60 % 60), static_cast<int>(seconds % 60));
  if (style == DateStyle::kTime) {
    if (days == 0) return std::string(clock);
    return std::nullopt;  // a duration past a day ([h]:mm): kept as a number of days
  }
  sys_days base;
  if (date1904) {
    base = sys_days{year{1904} / January / 1};
  } else if (days == 0 || days == 60) {
    return std::nullopt;  // 1900-01-00 and Lotus's 1900-02-29 are no dates
  } else if (days < 60) {
    base = sys_days{year{1899} / December / 31};
  } else {
    base = sys_days{year{1899} / December / 30};
  }
  const year_month_day ymd{base + std::chrono::days{days}};
  if (ymd.year() > year{9999}) return std::nullopt;
  char date[16];
  std::snprintf(date, sizeof date, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  std::string out = date;
  if (style == DateStyle::kDateTime || seconds != 0) out += std::string(" ") + clock;
  return out;
}

Result<std::vector<SheetCopy>> CopySheetsAsCsv(const std::string& path, const std::string& label,
                                               SourceFormat format,
                                               std::optional<std::string> sheet,
                                               const std::optional<std::string>& range, bool header,
                                               const std::string& dir, size_t index,
                                               const StopToken& stop) {
  // The readers name the file by its absolute path; messages name it as the user gave it.
  const auto relabel = [&](Error e) {
    if (e.message.starts_with(path)) e.message = label + e.message.substr(path.size());
    return std::unexpected(std::move(e));
  };
  auto book = format == SourceFormat::kXls ? OpenXls(path) : OpenXlsx(path);
  if (!book) return relabel(book.error());
  if (!book) return std::unexpected(book.error());
  const std::vector<std::string> names = (*book)->SheetNames();
  std::optional<CellRange> cells;
  if (range && RangeSheet(*range)) {
    const std::string named = *RangeSheet(*range);
    const auto lower = [](std::string s) {
      for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      return s;
    };
    if (sheet && lower(*sheet) != lower(named)) {
      return Fail(Error::Code::kUsage, "range=" + *range + " names sheet '" + named +
                                           "' but sheet=" + *sheet + ": give one of them");
    }
    sheet = named;
  }
  if (range) {
    auto parsed = ParseCellRange(*range);
    if (!parsed) return std::unexpected(parsed.error());
    cells = *parsed;
  }
  std::vector<size_t> chosen;
  if (sheet) {
    for (size_t i = 0; i < names.size() && chosen.empty(); ++i) {
      if (names[i] == *sheet) chosen.push_back(i);
    }
    for (size_t i = 0; i < names.size() && chosen.empty(); ++i) {
      std::string a = names[i], b = *sheet;
      for (auto* s : {&a, &b}) {
        for (char& ch : *s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      }
      if (a == b) chosen.push_back(i);
    }
    if (chosen.empty()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
      return Fail(Error::Code::kUsage,
                  label + " has no sheet '" + *sheet + "'; its sheets are " + list);
    }
  } else {
    if (cells && names.size() > 1) {
      return Fail(Error::Code::kUsage, "range= needs sheet= too: " + label + " has " +
                                           std::to_string(names.size()) + " sheets");
    }
    for (size_t i = 0; i < names.size(); ++i) chosen.push_back(i);
  }
  std::vector<SheetCopy> copies;
  std::vector<std::string> empty;
  for (size_t k = 0; k < chosen.size(); ++k) {
    auto read = (*book)->ReadSheet(chosen[k], stop);
    if (!read) return relabel(read.error());
    std::string csv;
    auto written = WriteSheetCsv(*read, cells, csv);
    if (!written) return std::unexpected(written.error());
    // A sheet of only a header (a template, an empty log) is no table to ask about, unless
    // it is the one the user named.
    if (written->rows == 0 || (written->rows == 1 && header && !sheet)) {
      empty.push_back(read->name);
      continue;
    }
    SheetCopy copy;
    copy.sheet = read->name;
    copy.csv_path = dir + "/source-" + std::to_string(index) + "-" + std::to_string(k) + ".csv";
    copy.notes = std::move(written->notes);
    if (read->hidden) {
      copy.notes.insert(copy.notes.begin(), "sheet '" + read->name + "' is hidden in the workbook");
    }
    std::ofstream file(copy.csv_path, std::ios::binary | std::ios::trunc);
    file.write(csv.data(), static_cast<std::streamsize>(csv.size()));
    if (!file.flush()) {
      return Fail(Error::Code::kData, "cannot write the copy of sheet '" + read->name + "' of " +
                                          label + " to " + dir + ": the disk may be full");
    }
    copies.push_back(std::move(copy));
  }
  if (copies.empty()) {
    return Fail(Error::Code::kData, label +
                                        (sheet ? " has no cells in sheet '" + *sheet + "'"
                                               : std::string(" has no cells in any sheet")) +
                                        (cells ? " inside range=" + *range : std::string()) +
                                        ": nothing to ask about");
  }
  std::vector<std::string> skipped = (*book)->SkippedSheets();
  for (const auto& e : empty) skipped.push_back(e);
  if (!skipped.empty()) {
    std::string list;
    for (const auto& s : skipped) list += (list.empty() ? "'" : ", '") + s + "'";
    copies.front().notes.push_back(label + ": sheet(s) " + list +
                                   " hold no table (a chart, no cells, or a header only) and "
                                   "were not loaded");
  }
  return copies;
}

}  // namespace quarry::engine::internal
