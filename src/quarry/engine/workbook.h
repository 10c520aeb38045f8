// Spreadsheet workbooks (.xlsx/.xlsm through libzip and expat, .xls through FreeXL), read into
// sheets of typed cells and written as plain CSV for the CSV loader, which then checks and
// profiles each sheet as it does any CSV. The user's workbook is only ever read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/common/common.h"
#include "quarry/engine/engine.h"

namespace quarry::engine::internal {

// What a package may unpack to before it is refused as hostile (a zip bomb, a 1 GB part).
struct WorkbookLimits {
  int64_t max_part_bytes = int64_t{512} << 20;  // one XML part, uncompressed
  int64_t max_total_bytes = int64_t{2} << 30;   // every entry of the package, uncompressed
  int64_t max_ratio = 500;                      // uncompressed / compressed, parts over 16 MiB
  int64_t max_cells = 16'000'000;               // non-empty cells kept from one sheet
};

enum class SheetValue : uint8_t {
  kText,
  kNumber,   // text: the shortest decimal that reads back as the same double
  kBool,     // text: TRUE or FALSE
  kDate,     // text: ISO 8601, YYYY-MM-DD[ HH:MM:SS] or HH:MM:SS, from the cell's number format
  kError,    // text: the error as Excel shows it (#N/A, #DIV/0!)
  kNoValue,  // a formula whose result the writer never saved
  kNoDate,   // text: a number in a date format that is no date (0, negative, 1900-02-29)
};

struct SheetCell {
  uint32_t row = 0;  // 0-based
  uint32_t col = 0;  // 0-based: A is 0
  SheetValue kind = SheetValue::kText;
  std::string text;
};

// A rectangle of cells, 0-based and inclusive: A3:F200 is rows 2..199, columns 0..5.
struct CellRange {
  uint32_t first_row = 0, first_col = 0, last_row = 0, last_col = 0;
};

struct Sheet {
  std::string name;
  bool hidden = false;
  std::vector<SheetCell> cells;  // in row order, then column order
  std::vector<CellRange> merged;
};

class Workbook {
 public:
  virtual ~Workbook() = default;
  // The sheets that hold cells (worksheets; not chart sheets), in workbook order.
  virtual std::vector<std::string> SheetNames() const = 0;
  // Errors (kData) name the sheet and what in the package is wrong.
  virtual Result<Sheet> ReadSheet(size_t index, const StopToken& stop) = 0;
  // Sheets the workbook lists that hold no cells (chart sheets), for a note.
  virtual std::vector<std::string> SkippedSheets() const { return {}; }
};

// Opens an .xlsx/.xlsm file, or the same bytes from memory (the fuzz target). Errors are kData
// and say what to do: a password-protected or .xlsb file, a hostile package.
Result<std::unique_ptr<Workbook>> OpenXlsx(const std::string& path,
                                           const WorkbookLimits& limits = {});
Result<std::unique_ptr<Workbook>> OpenXlsxBytes(std::string bytes,
                                                const WorkbookLimits& limits = {});
// Opens a BIFF .xls file through FreeXL.
Result<std::unique_ptr<Workbook>> OpenXls(const std::string& path);

// A cell's number as CSV text that reads back as the same double: plain digits between 1e-6
// and 1e15 (an integer stays an integer, never "1e+05"), the shortest form outside.
std::string CellNumberText(double value);

// "B12" -> row 11, column 1 (0-based). False for anything else, or past Excel's grid
// (XFD1048576).
bool ParseCellRef(std::string_view ref, uint32_t& row, uint32_t& col);

// "A3:F200" (or one cell, "B2"; "$A$3:$F$200" and "Sheet!A3:F200" as Excel writes them);
// kUsage error naming the expected form.
Result<CellRange> ParseCellRange(std::string_view text);
// The sheet a range names ("Q3" of "Q3!A1:B2", "Q3 2024" of "'Q3 2024'!A1"), or nullopt.
std::optional<std::string> RangeSheet(std::string_view text);
// 0-based column index to letters: 0 -> "A", 27 -> "AB".
std::string ColumnLetters(uint32_t col);

// What an Excel number format shows: a number, a date, a date and time, or a time of day.
enum class DateStyle : uint8_t { kNone, kDate, kDateTime, kTime };
// From a built-in format id (14 is m/d/yyyy) or, for a custom one, its format code.
DateStyle DateStyleOf(int num_fmt_id, std::string_view code);

// Excel's serial day number as ISO text in the 1900 (date1904 false) or 1904 date system:
// YYYY-MM-DD, with " HH:MM:SS" when the style or the serial has a time of day, or HH:MM:SS for
// a time under one day. nullopt when it is no date (negative, 1900-02-29, past 9999-12-31).
std::optional<std::string> SerialToIso(double serial, bool date1904, DateStyle style);

// One sheet written as CSV: the cells inside `range` (or the used range), empty rows left out,
// text of merged cells repeated across the cells they cover. `notes` tell the model and the
// user what changed on the way (errors read as NULL, formulas without saved values, merged
// labels filled, where the data starts).
struct SheetCsv {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<std::string> notes;
};
Result<SheetCsv> WriteSheetCsv(const Sheet& sheet, const std::optional<CellRange>& range,
                               std::string& out);

// Every sheet the user asked for (`sheet` by name, or all that hold cells), each written to
// `dir`/source-<index>-<k>.csv. Used by the DuckDB engine; errors name the workbook.
struct SheetCopy {
  std::string sheet;
  std::string csv_path;
  std::vector<std::string> notes;
};
// `label` is the path as the user gave it, for messages.
// `header`: false when the user said header=false (then a one-row sheet is data).
Result<std::vector<SheetCopy>> CopySheetsAsCsv(const std::string& path, const std::string& label,
                                               SourceFormat format,
                                               std::optional<std::string> sheet,
                                               const std::optional<std::string>& range, bool header,
                                               const std::string& dir, size_t index,
                                               const StopToken& stop);

}  // namespace quarry::engine::internal
