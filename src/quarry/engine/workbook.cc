// What every workbook format shares: dates from number formats, cell ranges, and one sheet of
// typed cells written as CSV for the CSV loader, with notes on what changed on the way.
#include "quarry/engine/workbook.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>

namespace quarry::engine::internal {
namespace {

constexpr uint32_t kMaxCols = 16'384;
constexpr uint32_t kMaxRows = 1'048'576;
// A merged range larger than this is decoration (a banner over the whole sheet), not a label.
constexpr uint64_t kMaxMergedFill = 10'000;

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

namespace {

// A text cell as a quoted CSV field. A line break inside a cell is written as \n: a \r in a
// quoted field of a \n file stops DuckDB's strict reader ("invalid state").
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') continue;
      out += '\n';
      continue;
    }
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}

std::string CellName(uint32_t row, uint32_t col) {
  return ColumnLetters(col) + std::to_string(row + 1);
}

std::string Clip(std::string_view text, size_t n = 40) {
  if (text.size() <= n) return std::string(text);
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "…";
}

}  // namespace

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
  std::string plain(given.substr(given.rfind('!') == std::string_view::npos ? 0 : given.rfind('!') + 1));
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
  if ((id >= 18 && id <= 21) || id == 32 || id == 33 || (id >= 45 && id <= 47)) return DateStyle::kTime;
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
      if (!inside.empty() && inside.find_first_not_of("hHmMsS") == std::string_view::npos) elapsed = true;
      i = end;
    } else {
      plain += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  for (const char* ampm : {"am/pm", "a/p"}) {
    for (size_t at; (at = plain.find(ampm)) != std::string::npos;) plain.erase(at, std::strlen(ampm));
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

namespace {

constexpr uint64_t kMaxMergedFillTotal = 1'000'000;  // cells filled from merges, per sheet

using CellRefs = std::vector<const SheetCell*>;

bool Before(const SheetCell* a, const SheetCell* b) {
  return a->row != b->row ? a->row < b->row : a->col < b->col;
}

const SheetCell* Find(const std::vector<SheetCell>& cells, uint32_t row, uint32_t col) {
  const auto it = std::lower_bound(cells.begin(), cells.end(), std::pair{row, col},
                                   [](const SheetCell& c, const std::pair<uint32_t, uint32_t>& k) {
                                     return c.row != k.first ? c.row < k.first : c.col < k.second;
                                   });
  return it != cells.end() && it->row == row && it->col == col ? &*it : nullptr;
}

// A merged label (a region over three rows, a header over two columns) is stored in its first
// cell only; each row it covers needs it for a GROUP BY to be right. Numbers are never
// repeated: a merged amount counted three times would triple a sum. Each cell is filled once
// (overlapping merges), and at most kMaxMergedFillTotal per sheet.
void FillMerged(const Sheet& sheet, const std::function<bool(uint32_t, uint32_t)>& inside,
                std::deque<SheetCell>& fills, CellRefs& cells, std::vector<std::string>& notes) {
  std::set<uint64_t> taken;
  std::vector<std::string> named;
  size_t ranges = 0;
  bool capped = false;
  for (const CellRange& m : sheet.merged) {
    const uint64_t area = uint64_t{m.last_row - m.first_row + 1} * (m.last_col - m.first_col + 1);
    if (area < 2 || area > kMaxMergedFill) continue;
    const SheetCell* first = Find(sheet.cells, m.first_row, m.first_col);
    if (!first || first->kind != SheetValue::kText) continue;
    size_t added = 0;
    for (uint32_t r = m.first_row; r <= m.last_row && !capped; ++r) {
      for (uint32_t c = m.first_col; c <= m.last_col; ++c) {
        if ((r == m.first_row && c == m.first_col) || !inside(r, c) || Find(sheet.cells, r, c)) continue;
        if (!taken.insert(uint64_t{r} << 14 | c).second) continue;
        if (fills.size() >= kMaxMergedFillTotal) {
          capped = true;
          break;
        }
        fills.push_back(SheetCell{r, c, SheetValue::kText, first->text});
        cells.push_back(&fills.back());
        ++added;
      }
    }
    if (added == 0) continue;
    ++ranges;
    if (named.size() < 3) {
      named.push_back(CellName(m.first_row, m.first_col) + ":" + CellName(m.last_row, m.last_col) +
                      " ('" + Clip(first->text) + "')");
    }
  }
  if (!fills.empty()) std::stable_sort(cells.begin(), cells.end(), Before);
  if (ranges == 0) return;
  std::string list;
  for (const auto& f : named) list += (list.empty() ? "" : ", ") + f;
  if (ranges > named.size()) list += " and " + std::to_string(ranges - named.size()) + " more";
  notes.push_back("sheet '" + sheet.name + "': the text of " + std::to_string(ranges) +
                  " merged cell range(s) is repeated in every cell they cover (" + list +
                  "), so each row carries its label" +
                  (capped ? "; past " + std::to_string(kMaxMergedFillTotal) +
                                " filled cells the rest were left empty"
                          : std::string()));
}

// A title block: leading rows of one cell each ("Quarterly report", "generated 2024-05-01")
// above a row of several cells.
void DropTitleRows(const Sheet& sheet, CellRefs& cells, std::vector<std::string>& notes) {
  size_t start = 0;
  bool wide = false;
  for (size_t i = 0; i < cells.size();) {
    size_t j = i;
    while (j < cells.size() && cells[j]->row == cells[i]->row) ++j;
    if (j - i > 1) {
      wide = true;
      break;
    }
    start = j;
    i = j;
  }
  if (!wide || start == 0 || start >= cells.size()) return;
  notes.push_back("sheet '" + sheet.name + "': " + std::to_string(start) +
                  " title row(s) above the header are not part of the table ('" +
                  Clip(cells[0]->text) + "'" + (start > 1 ? ", …" : "") + ")");
  cells.erase(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(start));
}

// A header over two rows: merged group names ("Sales" over B1:C1) above sub-headers ("2023",
// "2024"). Read as one row, the sub-headers would be a row of data and the columns would hold
// years among the amounts. The two rows become one: "Sales 2023", "Sales 2024".
void JoinTwoRowHeader(const Sheet& sheet, std::deque<SheetCell>& fills, CellRefs& cells,
                      std::vector<std::string>& notes) {
  if (cells.empty()) return;
  const uint32_t top = cells.front()->row;
  size_t second = 0;
  while (second < cells.size() && cells[second]->row == top) ++second;
  if (second == cells.size() || cells[second]->row != top + 1) return;
  size_t end = second;
  while (end < cells.size() && cells[end]->row == top + 1) ++end;
  bool grouped = false;
  for (const CellRange& m : sheet.merged) {
    if (m.first_row != top || m.last_row != top || m.last_col == m.first_col) continue;
    const SheetCell* first = Find(sheet.cells, m.first_row, m.first_col);
    if (!first || first->kind != SheetValue::kText) continue;
    size_t under = 0;
    for (size_t i = second; i < end; ++i) {
      under += cells[i]->col >= m.first_col && cells[i]->col <= m.last_col ? 1 : 0;
    }
    grouped = grouped || under >= 2;
  }
  if (!grouped) return;
  std::map<uint32_t, std::string> names;
  for (size_t i = 0; i < end; ++i) {
    const SheetCell& c = *cells[i];
    if (c.kind == SheetValue::kError || c.kind == SheetValue::kNoValue || c.text.empty()) continue;
    std::string& name = names[c.col];
    if (name == c.text) continue;  // a label merged down over both rows
    name += (name.empty() ? "" : " ") + c.text;
  }
  CellRefs rest(cells.begin() + static_cast<std::ptrdiff_t>(end), cells.end());
  cells.clear();
  std::string shown;
  size_t n = 0;
  for (const auto& [col, name] : names) {
    // On the second row, so that no gap is left where it was.
    fills.push_back(SheetCell{top + 1, col, SheetValue::kText, name});
    cells.push_back(&fills.back());
    if (name.find(' ') != std::string::npos && n++ < 3) shown += (shown.empty() ? "'" : ", '") + Clip(name) + "'";
  }
  cells.insert(cells.end(), rest.begin(), rest.end());
  notes.push_back("sheet '" + sheet.name + "': the header spans rows " + std::to_string(top + 1) +
                  "-" + std::to_string(top + 2) + " (group names merged over sub-headers), read " +
                  "as one: " + shown + (n > 3 ? ", …" : ""));
}

// Cells apart from the table, past fully empty columns (a stray value at XFD50, a side note):
// a block of columns is left out when its fullest column holds under a tenth of the table's
// fullest, or it lies over 1,000 columns away and holds under half.
void DropStrayColumns(const Sheet& sheet, CellRefs& cells, std::vector<std::string>& notes) {
  std::map<uint32_t, int64_t> per_col;
  for (const SheetCell* c : cells) ++per_col[c->col];
  struct Block {
    uint32_t first = 0, last = 0;
    int64_t cells = 0, fullest = 0;
  };
  std::vector<Block> blocks;
  for (const auto& [col, n] : per_col) {
    if (blocks.empty() || col > blocks.back().last + 1) blocks.push_back(Block{col, col, 0, 0});
    Block& b = blocks.back();
    b.last = col;
    b.cells += n;
    b.fullest = std::max(b.fullest, n);
  }
  if (blocks.size() < 2) return;
  size_t main = 0;
  for (size_t i = 1; i < blocks.size(); ++i) {
    if (blocks[i].cells > blocks[main].cells) main = i;
  }
  std::vector<const Block*> dropped;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i == main) continue;
    const Block& b = blocks[i];
    const uint32_t gap = i < main ? blocks[main].first - b.last : b.first - blocks[main].last;
    const bool sparse = b.fullest * 10 < blocks[main].fullest || b.fullest < 2;
    const bool far = gap > 1000 && b.fullest * 2 < blocks[main].fullest;
    if (sparse || far) dropped.push_back(&b);
  }
  if (dropped.empty()) return;
  std::string shown;
  int64_t count = 0, listed = 0;
  const auto left_out = [&](const SheetCell* c) {
    return std::any_of(dropped.begin(), dropped.end(),
                       [&](const Block* b) { return c->col >= b->first && c->col <= b->last; });
  };
  for (const SheetCell* c : cells) {
    if (!left_out(c)) continue;
    ++count;
    if (listed++ < 3) {
      shown += (shown.empty() ? "" : ", ") + CellName(c->row, c->col) +
               (c->text.empty() ? std::string() : " ('" + Clip(c->text, 20) + "')");
    }
  }
  std::erase_if(cells, left_out);
  notes.push_back("sheet '" + sheet.name + "': " + std::to_string(count) +
                  " cell(s) apart from the table, past empty columns, are not part of it (" + shown +
                  (count > 3 ? ", …" : "") + "); read them with range=");
}

}  // namespace

Result<SheetCsv> WriteSheetCsv(const Sheet& sheet, const std::optional<CellRange>& range,
                               std::string& out) {
  SheetCsv result;
  const std::function<bool(uint32_t, uint32_t)> inside = [&](uint32_t row, uint32_t col) {
    return !range || (row >= range->first_row && row <= range->last_row &&
                      col >= range->first_col && col <= range->last_col);
  };
  CellRefs cells;
  cells.reserve(sheet.cells.size());
  for (const SheetCell& c : sheet.cells) {
    if (inside(c.row, c.col)) cells.push_back(&c);
  }
  std::deque<SheetCell> fills;  // stable addresses: `cells` points into it
  FillMerged(sheet, inside, fills, cells, result.notes);
  // Within a range the user chose, every row and column is kept as it is.
  if (!range) {
    DropTitleRows(sheet, cells, result.notes);
    JoinTwoRowHeader(sheet, fills, cells, result.notes);
    DropStrayColumns(sheet, cells, result.notes);
  }
  if (cells.empty()) return result;
  uint32_t first_col = UINT32_MAX, last_col = 0;
  for (const SheetCell* c : cells) {
    first_col = std::min(first_col, c->col);
    last_col = std::max(last_col, c->col);
  }
  result.cols = last_col - first_col + 1;
  // A column of dates where some carry a time of day is written as timestamps throughout, so
  // it reads as one type (TIMESTAMP) rather than as text.
  std::set<uint32_t> timestamps;
  for (const SheetCell* c : cells) {
    if (c->kind == SheetValue::kDate && c->text.size() > 10 && c->text[4] == '-') timestamps.insert(c->col);
  }
  // Errors, unsaved formula results and dates that are no dates become empty fields (NULL),
  // counted per column.
  std::map<uint32_t, std::map<std::string, int64_t>> errors;
  std::map<uint32_t, int64_t> no_value, no_date;
  std::map<uint32_t, std::string> header;
  const uint32_t first_row = cells.front()->row;
  int64_t gaps = 0;
  uint32_t previous = first_row;
  for (size_t i = 0; i < cells.size();) {
    const uint32_t row = cells[i]->row;
    if (row > previous + 1) gaps += row - previous - 1;
    previous = row;
    uint32_t col = first_col;
    bool first_field = true;
    for (; i < cells.size() && cells[i]->row == row; ++i) {
      const SheetCell& c = *cells[i];
      if (c.col < col) continue;  // a cell given twice: the first one counts
      for (; col < c.col; ++col) {
        out += first_field ? "" : ",";
        first_field = false;
      }
      out += first_field ? "" : ",";
      first_field = false;
      ++col;
      switch (c.kind) {
        case SheetValue::kText: out += Quote(c.text); break;
        case SheetValue::kNumber:
        case SheetValue::kBool: out += c.text; break;
        case SheetValue::kDate:
          out += c.text;
          if (c.text.size() == 10 && c.text[4] == '-' && timestamps.contains(c.col)) out += " 00:00:00";
          break;
        case SheetValue::kError: ++errors[c.col][c.text]; break;
        case SheetValue::kNoValue: ++no_value[c.col]; break;
        case SheetValue::kNoDate: ++no_date[c.col]; break;
      }
      if (row == first_row && c.kind == SheetValue::kText) header[c.col] = c.text;
    }
    for (; col <= last_col; ++col) {
      out += first_field ? "" : ",";
      first_field = false;
    }
    out += '\n';
    ++result.rows;
  }
  const auto column = [&](uint32_t col) {
    const auto it = header.find(col);
    return "column " + ColumnLetters(col) +
           (it == header.end() ? std::string() : " ('" + Clip(it->second) + "')");
  };
  const auto columns = [&](const std::map<uint32_t, int64_t>& counts, int64_t* total) {
    std::string list;
    for (const auto& [col, n] : counts) {
      *total += n;
      list += (list.empty() ? "" : ", ") + column(col);
    }
    return list;
  };
  if (gaps > 0) {
    result.notes.push_back("sheet '" + sheet.name + "': " + std::to_string(gaps) +
                           " empty row(s) between the data were skipped");
  }
  if (!errors.empty()) {
    std::string list;
    int64_t total = 0;
    for (const auto& [col, kinds] : errors) {
      std::string each;
      for (const auto& [kind, n] : kinds) {
        each += (each.empty() ? "" : ", ") + std::to_string(n) + " × " + kind;
        total += n;
      }
      list += (list.empty() ? "" : "; ") + column(col) + ": " + each;
    }
    result.notes.push_back("sheet '" + sheet.name + "': " + std::to_string(total) +
                           " cell(s) hold Excel errors, read as NULL (" + list +
                           "); COUNT(column) leaves them out, and the workbook's formulas "
                           "would need fixing for a value");
  }
  if (!no_value.empty()) {
    int64_t total = 0;
    const std::string list = columns(no_value, &total);
    result.notes.push_back("sheet '" + sheet.name + "': " + std::to_string(total) +
                           " formula cell(s) have no saved result and read as NULL (" + list +
                           "): the program that wrote the workbook did not calculate them; "
                           "open and save it in Excel or LibreOffice to fill them");
  }
  if (!no_date.empty()) {
    int64_t total = 0;
    const std::string list = columns(no_date, &total);
    result.notes.push_back("sheet '" + sheet.name + "': " + std::to_string(total) +
                           " cell(s) formatted as dates hold no date (0, a negative number or "
                           "1900-02-29, as a formula over an empty cell gives), read as NULL (" +
                           list + ")");
  }
  return result;
}

Result<std::vector<SheetCopy>> CopySheetsAsCsv(const std::string& path, const std::string& label,
                                               const std::string& format,
                                               std::optional<std::string> sheet,
                                               const std::optional<std::string>& range,
                                               bool header, const std::string& dir, size_t index,
                                               const StopToken& stop) {
  // The readers name the file by its absolute path; messages name it as the user gave it.
  const auto relabel = [&](Error e) {
    if (e.message.starts_with(path)) e.message = label + e.message.substr(path.size());
    return std::unexpected(std::move(e));
  };
  auto book = format == "xls" ? OpenXls(path) : OpenXlsx(path);
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
      return Fail(Error::Code::kUsage, label + " has no sheet '" + *sheet + "'; its sheets are " + list);
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
    return Fail(Error::Code::kData, label + (sheet ? " has no cells in sheet '" + *sheet + "'"
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
