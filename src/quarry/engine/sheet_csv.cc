// One sheet of typed cells written as CSV for the CSV loader: merged labels filled, title rows,
// a header over two rows and cells apart from the table handled, and notes on each change.
#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>

#include "quarry/engine/workbook.h"

namespace quarry::engine::internal {
namespace {

// A merged range larger than this is decoration (a banner over the whole sheet), not a label.
constexpr uint64_t kMaxMergedFill = 10'000;

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
        if ((r == m.first_row && c == m.first_col) || !inside(r, c) || Find(sheet.cells, r, c))
          continue;
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
    if (name.find(' ') != std::string::npos && n++ < 3)
      shown += (shown.empty() ? "'" : ", '") + Clip(name) + "'";
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
                  " cell(s) apart from the table, past empty columns, are not part of it (" +
                  shown + (count > 3 ? ", …" : "") + "); read them with range=");
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
    if (c->kind == SheetValue::kDate && c->text.size() > 10 && c->text[4] == '-')
      timestamps.insert(c->col);
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
        case SheetValue::kText:
          out += Quote(c.text);
          break;
        case SheetValue::kNumber:
        case SheetValue::kBool:
          out += c.text;
          break;
        case SheetValue::kDate:
          out += c.text;
          if (c.text.size() == 10 && c.text[4] == '-' && timestamps.contains(c.col))
            out += " 00:00:00";
          break;
        case SheetValue::kError:
          ++errors[c.col][c.text];
          break;
        case SheetValue::kNoValue:
          ++no_value[c.col];
          break;
        case SheetValue::kNoDate:
          ++no_date[c.col];
          break;
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

}  // namespace quarry::engine::internal
