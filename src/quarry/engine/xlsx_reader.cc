// The Open XML spreadsheet reader (.xlsx/.xlsm): the package through libzip, its XML parts
// through expat, streamed. Only what a table needs is read: the workbook's sheet list and date
// system, the relationships that locate the parts, shared strings, the cell formats that tell
// dates from numbers, and each sheet's cells and merged ranges.
//
// The package is untrusted input. Entry sizes come from the central directory and are checked
// before a byte is inflated (a 1 GB part, a zip bomb), reads stop at the declared size, names
// and relationship targets that climb out of the package are refused, and a DTD is refused
// (no entity expansion at all).
#include <expat.h>
#include <zip.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "quarry/engine/workbook.h"

namespace quarry::engine::internal {
namespace {

constexpr uint32_t kMaxRows = 1'048'576;  // Excel's own limits
constexpr uint32_t kMaxCols = 16'384;

Error DataError(std::string message) { return Error{Error::Code::kData, std::move(message)}; }

std::string_view LocalName(const char* name) {
  std::string_view n(name);
  const size_t bar = n.rfind('|');
  return bar == std::string_view::npos ? n : n.substr(bar + 1);
}

const char* Attr(const char** attrs, std::string_view local, bool namespaced = false) {
  for (size_t i = 0; attrs[i]; i += 2) {
    const std::string_view n(attrs[i]);
    if ((n.find('|') != std::string_view::npos) != namespaced) continue;
    if (LocalName(attrs[i]) == local) return attrs[i + 1];
  }
  return nullptr;
}

// Open XML's escape for characters XML cannot hold (ST_Xstring): _x000D_ is a carriage return,
// _x005F_ an underscore (so "_x005F_x000D_" is the text "_x000D_").
std::string DecodeXstring(std::string text) {
  if (text.find("_x") == std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t code = 0;
    if (i + 7 <= text.size() && text[i] == '_' && text[i + 1] == 'x' && text[i + 6] == '_' &&
        std::from_chars(text.data() + i + 2, text.data() + i + 6, code, 16).ptr == text.data() + i + 6) {
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

// An entry name that is absolute ("/etc/x", "C:\\x") or has a ".." segment.
bool ClimbsOut(std::string_view name) {
  if (name.starts_with('/') || name.starts_with('\\')) return true;
  if (name.size() >= 2 && name[1] == ':') return true;
  size_t s = 0;
  while (s <= name.size()) {
    size_t e = name.find_first_of("/\\", s);
    if (e == std::string_view::npos) e = name.size();
    if (name.substr(s, e - s) == "..") return true;
    s = e + 1;
  }
  return false;
}

// One XML part, streamed through expat into three callbacks (names are "uri|local").
struct XmlHandler {
  std::function<void(std::string_view local, const char** attrs)> start;
  std::function<void(std::string_view local)> end;
  std::function<void(std::string_view text)> text;
  std::string error;  // set by Stop()
  bool doctype = false;
  XML_Parser parser = nullptr;
  void Stop(std::string message) {
    if (error.empty()) error = std::move(message);
    XML_StopParser(parser, XML_FALSE);
  }
};

extern "C" void OnStart(void* data, const char* name, const char** attrs) {
  auto* h = static_cast<XmlHandler*>(data);
  if (h->start) h->start(LocalName(name), attrs);
}
extern "C" void OnEnd(void* data, const char* name) {
  auto* h = static_cast<XmlHandler*>(data);
  if (h->end) h->end(LocalName(name));
}
extern "C" void OnText(void* data, const char* s, int len) {
  auto* h = static_cast<XmlHandler*>(data);
  if (h->text) h->text(std::string_view(s, static_cast<size_t>(len)));
}
extern "C" void OnDoctype(void* data, const char*, const char*, const char*, int) {
  auto* h = static_cast<XmlHandler*>(data);
  h->doctype = true;
  XML_StopParser(h->parser, XML_FALSE);
}

struct ParserFree {
  void operator()(XML_Parser p) const { XML_ParserFree(p); }
};
struct ZipClose {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

// Joins a relationship target to the folder of the part that names it, as OPC says; nullopt
// when it climbs above the package root.
std::optional<std::string> ResolveTarget(const std::string& base_dir, std::string_view target) {
  std::string joined = target.starts_with('/') ? std::string(target.substr(1))
                                               : base_dir + std::string(target);
  std::vector<std::string> parts;
  size_t s = 0;
  while (s <= joined.size()) {
    size_t e = joined.find('/', s);
    if (e == std::string::npos) e = joined.size();
    const std::string part = joined.substr(s, e - s);
    s = e + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

class XlsxWorkbook final : public Workbook {
 public:
  XlsxWorkbook(std::unique_ptr<zip_t, ZipClose> zip, std::string label, WorkbookLimits limits)
      : zip_(std::move(zip)), label_(std::move(label)), limits_(limits) {}

  std::vector<std::string> SheetNames() const override {
    std::vector<std::string> names;
    for (const auto& s : sheets_) names.push_back(s.name);
    return names;
  }
  std::vector<std::string> SkippedSheets() const override { return skipped_; }

  Result<void> Load() {
    if (auto r = CheckEntries(); !r) return r;
    // _rels/.rels names the workbook part; xl/workbook.xml is where every writer puts it.
    std::string workbook = "xl/workbook.xml";
    if (Locate("_rels/.rels")) {
      auto rels = ReadRels("_rels/.rels", "");
      if (!rels) return std::unexpected(rels.error());
      for (const auto& [id, rel] : *rels) {
        if (rel.type.ends_with("/officeDocument")) workbook = rel.target;
      }
    }
    if (!Locate(workbook)) {
      if (Locate("xl/workbook.bin")) {
        return std::unexpected(DataError(label_ + " is a binary workbook (.xlsb): save it as "
                                                  ".xlsx in Excel or LibreOffice"));
      }
      return std::unexpected(DataError(label_ + " holds no workbook part (" + workbook +
                                       "): it is a zip file but not an Excel workbook"));
    }
    const std::string dir = workbook.substr(0, workbook.rfind('/') + 1);
    auto rels = ReadRels(dir + "_rels/" + workbook.substr(dir.size()) + ".rels", dir);
    if (!rels) return std::unexpected(rels.error());
    std::string shared = dir + "sharedStrings.xml", styles = dir + "styles.xml";
    for (const auto& [id, rel] : *rels) {
      if (rel.type.ends_with("/sharedStrings")) shared = rel.target;
      if (rel.type.ends_with("/styles")) styles = rel.target;
    }
    if (auto r = ReadWorkbook(workbook, *rels); !r) return r;
    if (Locate(shared)) {
      if (auto r = ReadSharedStrings(shared); !r) return r;
    }
    if (Locate(styles)) {
      if (auto r = ReadStyles(styles); !r) return r;
    }
    return {};
  }

  Result<Sheet> ReadSheet(size_t index, const StopToken& stop) override {
    if (index >= sheets_.size()) return std::unexpected(DataError("no sheet " + std::to_string(index)));
    const SheetEntry& entry = sheets_[index];
    Sheet sheet;
    sheet.name = entry.name;
    sheet.hidden = entry.hidden;
    if (!Locate(entry.part)) {
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
      if (name == "v") c.in_v = false;
      else if (name == "is") c.in_is = false;
      else if (name == "t") c.in_t = false;
      else if (name == "rPh") c.in_phonetic = false;
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
    if (auto r = Parse(entry.part, h, stop); !r) {
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
  struct Rel {
    std::string type, target;
  };
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
    } else if (type == "b" && (value == "0" || value == "1" || value == "true" || value == "false")) {
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

  // Sizes from the central directory, before anything is inflated.
  Result<void> CheckEntries() {
    const zip_int64_t n = zip_get_num_entries(zip_.get(), 0);
    int64_t total = 0;
    for (zip_int64_t i = 0; i < n; ++i) {
      zip_stat_t st;
      zip_stat_init(&st);
      if (zip_stat_index(zip_.get(), static_cast<zip_uint64_t>(i), 0, &st) != 0) continue;
      const std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "";
      if (ClimbsOut(name)) {
        return std::unexpected(DataError(
            label_ + " holds an entry whose path climbs out of the package ('" +
            name.substr(0, 80) + "'): quarry does not read such a file; re-save it in Excel or "
                                 "LibreOffice"));
      }
      if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
        return std::unexpected(DataError(label_ + " has encrypted parts: save it without a "
                                                  "password and ask again"));
      }
      const int64_t size = (st.valid & ZIP_STAT_SIZE) ? static_cast<int64_t>(st.size) : 0;
      const int64_t packed = (st.valid & ZIP_STAT_COMP_SIZE) ? static_cast<int64_t>(st.comp_size) : 0;
      total += size;
      std::string what;
      if (size > limits_.max_part_bytes) {
        what = "its part '" + name.substr(0, 80) + "' unpacks to " + std::to_string(size >> 20) +
               " MiB, over the " + std::to_string(limits_.max_part_bytes >> 20) + " MiB quarry reads";
      } else if (size > (int64_t{16} << 20) && size / std::max<int64_t>(packed, 1) > limits_.max_ratio) {
        what = "its part '" + name.substr(0, 80) + "' unpacks " +
               std::to_string(size / std::max<int64_t>(packed, 1)) +
               " times larger than it is packed (a zip bomb)";
      } else if (total > limits_.max_total_bytes) {
        what = "its parts unpack to more than " + std::to_string(limits_.max_total_bytes >> 20) + " MiB";
      }
      if (!what.empty()) {
        return std::unexpected(DataError(label_ + " is refused: " + what +
                                         ". Export the sheet you need to CSV and ask about that"));
      }
      // Two entries of one name: readers differ on which they take, so the data is ambiguous.
      if (!entries_.emplace(Lower(name), static_cast<zip_uint64_t>(i)).second) {
        return std::unexpected(DataError(label_ + " holds two entries named '" + name.substr(0, 80) +
                                         "': which one is the data is ambiguous; re-save it in "
                                         "Excel or LibreOffice"));
      }
    }
    return {};
  }

  static std::string Lower(std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  }

  // Part names are case-insensitive in a package (OPC).
  std::optional<zip_uint64_t> Locate(const std::string& name) const {
    const auto it = entries_.find(Lower(name));
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }

  Result<void> Parse(const std::string& part, XmlHandler& h, const StopToken& stop = {}) {
    const auto index = Locate(part);
    if (!index) return std::unexpected(DataError(label_ + ": part " + part + " is missing"));
    std::unique_ptr<zip_file_t, ZipFileClose> file(zip_fopen_index(zip_.get(), *index, 0));
    if (!file) {
      return std::unexpected(DataError(label_ + ": cannot unpack " + part + " (" +
                                       zip_strerror(zip_.get()) + ")"));
    }
    std::unique_ptr<XML_ParserStruct, ParserFree> parser(XML_ParserCreateNS(nullptr, '|'));
    if (!parser) return std::unexpected(DataError("out of memory for the XML parser"));
    h.parser = parser.get();
    XML_SetUserData(parser.get(), &h);
    XML_SetElementHandler(parser.get(), OnStart, OnEnd);
    XML_SetCharacterDataHandler(parser.get(), OnText);
    XML_SetStartDoctypeDeclHandler(parser.get(), OnDoctype);
    std::vector<char> buf(1 << 16);
    int64_t read_total = 0;
    for (;;) {
      if (stop.stop_requested()) return std::unexpected(Error{Error::Code::kCancelled, "stopped"});
      const zip_int64_t n = zip_fread(file.get(), buf.data(), buf.size());
      if (n < 0) {
        return std::unexpected(DataError(label_ + ": part " + part + " is damaged (" +
                                         zip_file_strerror(file.get()) + ")"));
      }
      read_total += n;
      if (read_total > limits_.max_part_bytes) {
        return std::unexpected(DataError(label_ + ": part " + part + " unpacks past its size"));
      }
      const bool last = n == 0;
      if (XML_Parse(parser.get(), buf.data(), static_cast<int>(n), last) != XML_STATUS_OK) {
        if (!h.error.empty()) return std::unexpected(DataError(label_ + ": " + part + ": " + h.error));
        if (h.doctype) {
          return std::unexpected(DataError(label_ + ": part " + part + " declares a DTD, which "
                                                   "no Excel workbook does; quarry does not read it"));
        }
        return std::unexpected(DataError(
            label_ + ": part " + part + " is not well-formed XML (line " +
            std::to_string(XML_GetCurrentLineNumber(parser.get())) + ": " +
            XML_ErrorString(XML_GetErrorCode(parser.get())) + ")"));
      }
      if (last) break;
    }
    return {};
  }

  Result<std::map<std::string, Rel>> ReadRels(const std::string& part, const std::string& dir) {
    std::map<std::string, Rel> rels;
    if (!Locate(part)) return rels;
    XmlHandler h;
    h.start = [&](std::string_view name, const char** attrs) {
      if (name != "Relationship") return;
      const char* id = Attr(attrs, "Id");
      const char* type = Attr(attrs, "Type");
      const char* target = Attr(attrs, "Target");
      const char* mode = Attr(attrs, "TargetMode");
      if (!id || !type || !target || (mode && std::string_view(mode) == "External")) return;
      auto resolved = ResolveTarget(dir, target);
      if (!resolved) {
        h.Stop("a relationship points outside the package ('" + std::string(target).substr(0, 80) + "')");
        return;
      }
      rels[id] = Rel{type, *resolved};
    };
    if (auto r = Parse(part, h); !r) return std::unexpected(r.error());
    return rels;
  }

  Result<void> ReadWorkbook(const std::string& part, const std::map<std::string, Rel>& rels) {
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
    if (auto r = Parse(part, h); !r) return r;
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
    return Parse(part, h);
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
        if (id && code && std::from_chars(id, id + std::strlen(id), n).ec == std::errc()) codes[n] = code;
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
    if (auto r = Parse(part, h); !r) return r;
    for (int id : xf_formats) {
      const auto it = codes.find(id);
      xf_dates_.push_back(DateStyleOf(id, it == codes.end() ? std::string_view() : it->second));
    }
    return {};
  }

  std::unique_ptr<zip_t, ZipClose> zip_;
  std::string label_;
  WorkbookLimits limits_;
  std::map<std::string, zip_uint64_t> entries_;
  std::vector<SheetEntry> sheets_;
  std::vector<std::string> skipped_;
  std::vector<std::string> shared_;
  std::vector<DateStyle> xf_dates_;
  bool date1904_ = false;
};

Result<std::unique_ptr<Workbook>> Finish(zip_t* zip, std::string label, const WorkbookLimits& limits) {
  auto book = std::make_unique<XlsxWorkbook>(std::unique_ptr<zip_t, ZipClose>(zip), std::move(label), limits);
  if (auto r = book->Load(); !r) return std::unexpected(r.error());
  return std::unique_ptr<Workbook>(std::move(book));
}

Error NotAZip(const std::string& label, int code, bool ole) {
  if (ole) {
    return DataError(label + " is a compound document, not an .xlsx package: either it is "
                             "password-protected (save it without a password) or it is an "
                             "old .xls file renamed (rename it to .xls)");
  }
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string message = label + " is not a readable .xlsx workbook (" + zip_error_strerror(&e) +
                        "): save it again as .xlsx in Excel or LibreOffice";
  zip_error_fini(&e);
  return DataError(message);
}

bool LooksOle(std::string_view head) {
  return head.size() >= 8 && head.substr(0, 8) == std::string_view("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", 8);
}

}  // namespace

Result<std::unique_ptr<Workbook>> OpenXlsx(const std::string& path, const WorkbookLimits& limits) {
  int code = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!zip) {
    char head[8] = {};
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t n = std::fread(head, 1, sizeof head, f);
      std::fclose(f);
      return std::unexpected(NotAZip(path, code, LooksOle(std::string_view(head, n))));
    }
    return std::unexpected(NotAZip(path, code, false));
  }
  return Finish(zip, path, limits);
}

Result<std::unique_ptr<Workbook>> OpenXlsxBytes(std::string bytes, const WorkbookLimits& limits) {
  auto owned = std::make_shared<std::string>(std::move(bytes));
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(owned->data(), owned->size(), 0, &error);
  if (!source) {
    zip_error_fini(&error);
    return std::unexpected(DataError("out of memory for the workbook"));
  }
  zip_t* zip = zip_open_from_source(source, ZIP_RDONLY, &error);
  if (!zip) {
    const int code = zip_error_code_zip(&error);
    zip_error_fini(&error);
    zip_source_free(source);
    return std::unexpected(NotAZip("the workbook", code, LooksOle(*owned)));
  }
  zip_error_fini(&error);
  // The buffer must outlive the archive: keep it with the workbook.
  auto book = Finish(zip, "the workbook", limits);
  if (!book) return book;
  struct Holder final : Workbook {
    std::shared_ptr<std::string> bytes;
    std::unique_ptr<Workbook> inner;
    std::vector<std::string> SheetNames() const override { return inner->SheetNames(); }
    std::vector<std::string> SkippedSheets() const override { return inner->SkippedSheets(); }
    Result<Sheet> ReadSheet(size_t i, const StopToken& stop) override { return inner->ReadSheet(i, stop); }
    ~Holder() override { inner.reset(); }  // the archive goes before its bytes
  };
  auto holder = std::make_unique<Holder>();
  holder->bytes = owned;
  holder->inner = std::move(*book);
  return std::unique_ptr<Workbook>(std::move(holder));
}

}  // namespace quarry::engine::internal
