// The Open XML spreadsheet reader (.xlsx/.xlsm) over a checked package (xlsx_package.h). Only
// what a table needs is read: the workbook's sheet list and date system, the relationships
// that locate the parts, shared strings, the cell formats that tell dates from numbers, and
// each sheet's cells and merged ranges.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "quarry/engine/xlsx_package.h"

namespace quarry::engine::internal {
namespace {

constexpr uint32_t kMaxRows = 1'048'576;  // Excel's own limit

Error DataError(std::string message) { return Error{Error::Code::kData, std::move(message)}; }

// Open XML's escape for characters XML cannot hold (ST_Xstring): _x000D_ is a carriage return,
// _x005F_ an underscore (so "_x005F_x000D_" is the text "_x000D_").
std::string DecodeXstring(std::string text) {
  if (text.find("_x") == std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t code = 0;
    if (i + 7 <= text.size() && text[i] == '_' && text[i + 1] == 'x' && text[i + 6] == '_' &&
        std::from_chars(text.data() + i + 2, text.data() + i + 6, code, 16).ptr ==
            text.data() + i + 6) {
      // UTF-8 of a code point under U+10000 (four hex digits).
      if (code < 0x80) {
        out += static_cast<char>(code);
      } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
      } else {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
      }
      i += 7;
      continue;
    }
    out += text[i++];
  }
  return out;
}

class XlsxWorkbook final : public Workbook {
 public:
  XlsxWorkbook(std::unique_ptr<OpcPackage> package, const WorkbookLimits& limits)
      : package_(std::move(package)), label_(package_->label()), limits_(limits) {}

  std::vector<std::string> SheetNames() const override {
    std::vector<std::string> names;
    for (const auto& s : sheets_) names.push_back(s.name);
    return names;
  }
  std::vector<std::string> SkippedSheets() const override { return skipped_; }

  Result<void> Load() {
    // _rels/.rels names the workbook part; xl/workbook.xml is where every writer puts it.
    std::string workbook = "xl/workbook.xml";
    if (package_->Has("_rels/.rels")) {
      auto rels = package_->ReadRels("_rels/.rels", "");
      if (!rels) return std::unexpected(rels.error());
      for (const auto& [id, rel] : *rels) {
        if (rel.type.ends_with("/officeDocument")) workbook = rel.target;
      }
    }
    if (!package_->Has(workbook)) {
      if (package_->Has("xl/workbook.bin")) {
        return std::unexpected(DataError(label_ + " is a binary workbook (.xlsb): save it as "
                                                  ".xlsx in Excel or LibreOffice"));
      }
      return std::unexpected(DataError(label_ + " holds no workbook part (" + workbook +
                                       "): it is a zip file but not an Excel workbook"));
    }
    const std::string dir = workbook.substr(0, workbook.rfind('/') + 1);
    auto rels = package_->ReadRels(dir + "_rels/" + workbook.substr(dir.size()) + ".rels", dir);
    if (!rels) return std::unexpected(rels.error());
    std::string shared = dir + "sharedStrings.xml", styles = dir + "styles.xml";
    for (const auto& [id, rel] : *rels) {
      if (rel.type.ends_with("/sharedStrings")) shared = rel.target;
      if (rel.type.ends_with("/styles")) styles = rel.target;
    }
    if (auto r = ReadWorkbook(workbook, *rels); !r) return r;
    if (package_->Has(shared)) {
      if (auto r = ReadSharedStrings(shared); !r) return r;
    }
    if (package_->Has(styles)) {
      if (auto r = ReadStyles(styles); !r) return r;
    }
    return {};
  }

  Result<Sheet> ReadSheet(size_t index, const StopToken& stop) override {
    if (index >= sheets_.size())
      return std::unexpected(DataError("no sheet " + std::to_string(index)));
    const SheetEntry& entry = sheets_[index];
    Sheet sheet;
    sheet.name = entry.name;
    sheet.hidden = entry.hidden;
    if (!package_->Has(entry.part)) {
      return std::unexpected(DataError(label_ + ": sheet '" + entry.name + "' has no part (" +
                                       entry.part + "); the workbook is damaged"));
    }
    struct {
      uint32_t row = 0, next_row = 0, col = 0, next_col = 0;
      std::string type, value, inline_text;
      int style = 0;
      bool formula = false, has_v = false, in_v = false, in_is = false, in_t = false,
           in_phonetic = false;
    } c;
    XmlHandler h;
    h.start = [&](std::string_view name, const char** attrs) {
      if (name == "row") {
        const char* r = Attr(attrs, "r");
        uint64_t n = 0;
        if (r) {
          const auto [p, ec] = std::from_chars(r, r + std::strlen(r), n);
          if (ec != std::errc() || n == 0 || n > kMaxRows) {
            h.Stop("row number '" + std::string(r).substr(0, 20) + "' is outside Excel's grid");
            return;
          }
          c.row = static_cast<uint32_t>(n - 1);
        } else {
          c.row = c.next_row;
        }
        c.next_row = c.row + 1;
        c.next_col = 0;
      } else if (name == "c") {
        c.type.clear();
        c.value.clear();
        c.inline_text.clear();
        c.formula = false;
        c.has_v = false;
        c.style = 0;
        if (const char* r = Attr(attrs, "r")) {
          uint32_t row = 0;
          if (!ParseCellRef(r, row, c.col)) {
            h.Stop("cell reference '" + std::string(r).substr(0, 20) + "' is not an Excel cell");
            return;
          }
          c.row = row;
        } else {
          c.col = c.next_col;
        }
        c.next_col = c.col + 1;
        if (const char* t = Attr(attrs, "t")) c.type = t;
        if (const char* s = Attr(attrs, "s")) {
          std::from_chars(s, s + std::strlen(s), c.style);
        }
      } else if (name == "v") {
        c.in_v = true;
        c.has_v = true;
      } else if (name == "f") {
        c.formula = true;
      } else if (name == "is") {
        c.in_is = true;
      } else if (name == "t" && c.in_is) {
        c.in_t = true;
      } else if (name == "rPh") {
        c.in_phonetic = true;
      } else if (name == "mergeCell") {
        if (const char* ref = Attr(attrs, "ref")) {
          if (auto range = ParseCellRange(ref)) sheet.merged.push_back(*range);
        }
      }
    };
    h.text = [&](std::string_view text) {
      if (c.in_v) c.value += text;
      if (c.in_t && !c.in_phonetic) c.inline_text += text;
    };
    h.end = [&](std::string_view name) {
      if (name == "v")
        c.in_v = false;
      else if (name == "is")
        c.in_is = false;
      else if (name == "t")
        c.in_t = false;
      else if (name == "rPh")
        c.in_phonetic = false;
      else if (name == "c") {
        if (sheet.cells.size() >= static_cast<size_t>(limits_.max_cells)) {
          h.Stop("more than " + std::to_string(limits_.max_cells) +
                 " cells; export the sheet to CSV and ask about that");
          return;
        }
        std::string error;
        // openpyxl writes <v></v> for a formula it never calculated; only a text result (str)
        // can be a saved empty string.
        const bool unsaved = c.formula && (!c.has_v || (c.value.empty() && c.type != "str"));
        auto cell = MakeCell(c.type, c.value, c.inline_text, unsaved, c.style, error);
        if (!error.empty()) h.Stop(std::move(error));
        if (!cell) return;
        cell->row = c.row;
        cell->col = c.col;
        sheet.cells.push_back(std::move(*cell));
      }
    };
    if (auto r = package_->Parse(entry.part, h, stop); !r) {
      Error e = r.error();
      if (e.code == Error::Code::kData) e.message += " (sheet '" + entry.name + "')";
      return std::unexpected(std::move(e));
    }
    // Writers emit rows and cells in order; a package need not.
    if (!std::is_sorted(sheet.cells.begin(), sheet.cells.end(), CellBefore)) {
      std::stable_sort(sheet.cells.begin(), sheet.cells.end(), CellBefore);
    }
    return sheet;
  }

 private:
  struct SheetEntry {
    std::string name, part;
    bool hidden = false;
  };

  static bool CellBefore(const SheetCell& a, const SheetCell& b) {
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  }

  // `unsaved`: a formula with no <v> at all; an empty <v> is a saved empty string.
  std::optional<SheetCell> MakeCell(const std::string& type, const std::string& value,
                                    const std::string& inline_text, bool unsaved, int style,
                                    std::string& error) const {
    SheetCell cell;
    if (type == "s") {
      size_t index = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), index);
      if (ec != std::errc() || index >= shared_.size()) {
        error = "a cell refers to shared string '" + value.substr(0, 20) + "' of " +
                std::to_string(shared_.size()) + "; the workbook is damaged";
        return std::nullopt;
      }
      cell.text = shared_[index];
    } else if (type == "inlineStr") {
      cell.text = DecodeXstring(inline_text);
    } else if (type == "str" || type == "d") {
      if (value.empty() && unsaved) cell.kind = SheetValue::kNoValue;
      cell.kind = type == "d" && !value.empty() ? SheetValue::kDate : cell.kind;
      cell.text = type == "str" ? DecodeXstring(value) : value;
    } else if (type == "b" &&
               (value == "0" || value == "1" || value == "true" || value == "false")) {
      cell.kind = SheetValue::kBool;
      cell.text = value == "1" || value == "true" ? "TRUE" : "FALSE";
    } else if (type == "b") {
      cell.text = value;  // not a boolean after all: kept as written
    } else if (type == "e") {
      cell.kind = SheetValue::kError;
      cell.text = value.empty() ? "#VALUE!" : value;
    } else if (value.empty()) {
      if (!unsaved) return std::nullopt;  // a formatted, empty cell
      cell.kind = SheetValue::kNoValue;
    } else {
      double number = 0;
      const char* begin = value.data();
      const char* end = begin + value.size();
      while (begin < end && *begin == ' ') ++begin;
      const auto [p, ec] = std::from_chars(begin, end, number);
      if (ec != std::errc() || p != end || !std::isfinite(number)) {
        cell.text = value;  // not a number after all: kept as written
      } else {
        const DateStyle date = style >= 0 && static_cast<size_t>(style) < xf_dates_.size()
                                   ? xf_dates_[static_cast<size_t>(style)]
                                   : DateStyle::kNone;
        std::optional<std::string> iso;
        if (date != DateStyle::kNone) iso = SerialToIso(number, date1904_, date);
        if (iso) {
          cell.kind = SheetValue::kDate;
          cell.text = std::move(*iso);
        } else if (date != DateStyle::kNone && date != DateStyle::kTime) {
          cell.kind = SheetValue::kNoDate;  // 0 from a formula over an empty cell, mostly
          cell.text = value;
        } else {
          cell.kind = SheetValue::kNumber;
          cell.text = CellNumberText(number);
        }
      }
    }
    if (cell.kind == SheetValue::kText && cell.text.empty()) return std::nullopt;
    return cell;
  }

  Result<void> ReadWorkbook(const std::string& part, const std::map<std::string, OpcRel>& rels) {
    XmlHandler h;
    h.start = [&](std::string_view name, const char** attrs) {
      if (name == "workbookPr") {
        const char* d = Attr(attrs, "date1904");
        date1904_ = d && (std::string_view(d) == "1" || std::string_view(d) == "true");
      } else if (name == "sheet") {
        const char* sheet_name = Attr(attrs, "name");
        const char* id = Attr(attrs, "id", true);
        const char* state = Attr(attrs, "state");
        if (!sheet_name || !id) return;
        const auto rel = rels.find(id);
        if (rel == rels.end() || !rel->second.type.ends_with("/worksheet")) {
          skipped_.push_back(sheet_name);  // a chart sheet, a dialog or macro sheet
          return;
        }
        sheets_.push_back(SheetEntry{sheet_name, rel->second.target,
                                     state && std::string_view(state) != "visible"});
      }
    };
    if (auto r = package_->Parse(part, h); !r) return r;
    if (sheets_.empty()) {
      return std::unexpected(DataError(label_ + " has no worksheets (only charts or macros): "
                                                "nothing to read as a table"));
    }
    return {};
  }

  Result<void> ReadSharedStrings(const std::string& part) {
    std::string current;
    bool in_si = false, in_t = false, in_phonetic = false;
    XmlHandler h;
    h.start = [&](std::string_view name, const char**) {
      if (name == "si") {
        in_si = true;
        current.clear();
      } else if (name == "t" && in_si) {
        in_t = true;
      } else if (name == "rPh") {
        in_phonetic = true;
      }
    };
    h.end = [&](std::string_view name) {
      if (name == "si") {
        in_si = false;
        shared_.push_back(DecodeXstring(std::move(current)));
        current.clear();
      } else if (name == "t") {
        in_t = false;
      } else if (name == "rPh") {
        in_phonetic = false;
      }
    };
    h.text = [&](std::string_view text) {
      if (in_t && !in_phonetic) current += text;
    };
    return package_->Parse(part, h);
  }

  Result<void> ReadStyles(const std::string& part) {
    std::map<int, std::string> codes;
    std::vector<int> xf_formats;
    bool in_cell_xfs = false;
    XmlHandler h;
    h.start = [&](std::string_view name, const char** attrs) {
      if (name == "numFmt") {
        const char* id = Attr(attrs, "numFmtId");
        const char* code = Attr(attrs, "formatCode");
        int n = 0;
        if (id && code && std::from_chars(id, id + std::strlen(id), n).ec == std::errc())
          codes[n] = code;
      } else if (name == "cellXfs") {
        in_cell_xfs = true;
      } else if (name == "xf" && in_cell_xfs) {
        const char* id = Attr(attrs, "numFmtId");
        int n = 0;
        if (id) std::from_chars(id, id + std::strlen(id), n);
        xf_formats.push_back(n);
      }
    };
    h.end = [&](std::string_view name) {
      if (name == "cellXfs") in_cell_xfs = false;
    };
    if (auto r = package_->Parse(part, h); !r) return r;
    for (int id : xf_formats) {
      const auto it = codes.find(id);
      xf_dates_.push_back(DateStyleOf(id, it == codes.end() ? std::string_view() : it->second));
    }
    return {};
  }

  std::unique_ptr<OpcPackage> package_;
  std::string label_;
  WorkbookLimits limits_;
  std::vector<SheetEntry> sheets_;
  std::vector<std::string> skipped_;
  std::vector<std::string> shared_;
  std::vector<DateStyle> xf_dates_;
  bool date1904_ = false;
};

Result<std::unique_ptr<Workbook>> Finish(Result<std::unique_ptr<OpcPackage>> package,
                                         const WorkbookLimits& limits) {
  if (!package) return std::unexpected(package.error());
  auto book = std::make_unique<XlsxWorkbook>(std::move(*package), limits);
  if (auto r = book->Load(); !r) return std::unexpected(r.error());
  return std::unique_ptr<Workbook>(std::move(book));
}

}  // namespace

Result<std::unique_ptr<Workbook>> OpenXlsx(const std::string& path, const WorkbookLimits& limits) {
  return Finish(OpcPackage::Open(path, limits), limits);
}

Result<std::unique_ptr<Workbook>> OpenXlsxBytes(std::string bytes, const WorkbookLimits& limits) {
  return Finish(OpcPackage::FromBytes(std::move(bytes), limits), limits);
}

}  // namespace quarry::engine::internal
