// The old binary workbook (.xls, BIFF 2-8) through FreeXL, which decodes the compound file,
// the shared strings and the cell formats (its dates arrive as ISO text already).
#include <freexl.h>

#include <charconv>
#include <cmath>

#include "quarry/engine/workbook.h"

namespace quarry::engine::internal {
namespace {

// FreeXL keeps a table of every cell of the selected sheet: a sheet whose dimensions promise
// more is refused before FreeXL allocates it.
constexpr uint64_t kMaxGrid = 64'000'000;

std::string Why(int code) {
  switch (code) {
    case FREEXL_INSUFFICIENT_MEMORY:
      return "out of memory";
    case FREEXL_INVALID_CFBF_HEADER:
    case FREEXL_CFBF_INVALID_SIGNATURE:
      return "it is not an .xls workbook";
    case FREEXL_BIFF_WORKBOOK_NOT_FOUND:
      return "it holds no workbook stream";
    case FREEXL_CRAFTED_FILE:
      return "it is damaged or crafted";
    case FREEXL_UNSUPPORTED_CHARSET:
    case FREEXL_INVALID_CHARACTER:
      return "its text is in a character set FreeXL cannot convert";
    default:
      return "FreeXL error " + std::to_string(code);
  }
}

class XlsWorkbook final : public Workbook {
 public:
  XlsWorkbook(const void* handle, std::string label) : handle_(handle), label_(std::move(label)) {}
  ~XlsWorkbook() override { freexl_close(handle_); }
  XlsWorkbook(const XlsWorkbook&) = delete;
  XlsWorkbook& operator=(const XlsWorkbook&) = delete;

  Result<void> Load() {
    unsigned int info = 0;
    if (freexl_get_info(handle_, FREEXL_BIFF_PASSWORD, &info) == FREEXL_OK &&
        info == FREEXL_BIFF_OBFUSCATED) {
      return Fail(Error::Code::kData, label_ +
                                          " is protected by a password: save it without "
                                          "one and ask again");
    }
    unsigned int count = 0;
    if (const int rc = freexl_get_info(handle_, FREEXL_BIFF_SHEET_COUNT, &count); rc != FREEXL_OK) {
      return Fail(Error::Code::kData, label_ + " cannot be read: " + Why(rc));
    }
    for (unsigned int i = 0; i < count && i < 65535; ++i) {
      const char* name = nullptr;
      if (freexl_get_worksheet_name(handle_, static_cast<unsigned short>(i), &name) != FREEXL_OK)
        continue;
      names_.push_back(name ? name : "Sheet" + std::to_string(i + 1));
      indexes_.push_back(static_cast<unsigned short>(i));
    }
    if (names_.empty()) return Fail(Error::Code::kData, label_ + " has no worksheets");
    return {};
  }

  std::vector<std::string> SheetNames() const override { return names_; }

  Result<Sheet> ReadSheet(size_t index, const StopToken& stop) override {
    if (index >= names_.size())
      return Fail(Error::Code::kData, "no sheet " + std::to_string(index));
    Sheet sheet;
    sheet.name = names_[index];
    if (const int rc = freexl_select_active_worksheet(handle_, indexes_[index]); rc != FREEXL_OK) {
      return Fail(Error::Code::kData,
                  label_ + ": sheet '" + sheet.name + "' cannot be read: " + Why(rc));
    }
    unsigned int rows = 0;
    unsigned short cols = 0;
    if (const int rc = freexl_worksheet_dimensions(handle_, &rows, &cols); rc != FREEXL_OK) {
      return Fail(Error::Code::kData,
                  label_ + ": sheet '" + sheet.name + "' cannot be read: " + Why(rc));
    }
    if (uint64_t{rows} * cols > kMaxGrid) {
      return Fail(Error::Code::kData, label_ + ": sheet '" + sheet.name + "' claims " +
                                          std::to_string(rows) + " rows by " +
                                          std::to_string(cols) +
                                          " columns, more than quarry reads from an .xls; save it "
                                          "as .xlsx or CSV");
    }
    for (unsigned int r = 0; r < rows; ++r) {
      if ((r & 1023) == 0 && stop.stop_requested()) return Fail(Error::Code::kCancelled, "stopped");
      for (unsigned short c = 0; c < cols; ++c) {
        FreeXL_CellValue v;
        if (freexl_get_cell_value(handle_, r, c, &v) != FREEXL_OK) continue;
        SheetCell cell{r, c, SheetValue::kText, {}};
        switch (v.type) {
          case FREEXL_CELL_INT:
            cell.kind = SheetValue::kNumber;
            cell.text = std::to_string(v.value.int_value);
            break;
          case FREEXL_CELL_DOUBLE: {
            if (!std::isfinite(v.value.double_value)) continue;
            cell.kind = SheetValue::kNumber;
            cell.text = CellNumberText(v.value.double_value);
            break;
          }
          case FREEXL_CELL_TEXT:
          case FREEXL_CELL_SST_TEXT:
            if (!v.value.text_value || !*v.value.text_value) continue;
            cell.text = v.value.text_value;
            break;
          case FREEXL_CELL_DATE:
          case FREEXL_CELL_DATETIME:
          case FREEXL_CELL_TIME:
            if (!v.value.text_value) continue;
            cell.kind = SheetValue::kDate;
            cell.text = v.value.text_value;
            break;
          default:
            continue;  // empty
        }
        sheet.cells.push_back(std::move(cell));
      }
    }
    return sheet;
  }

 private:
  const void* handle_;
  std::string label_;
  std::vector<std::string> names_;
  std::vector<unsigned short> indexes_;
};

}  // namespace

Result<std::unique_ptr<Workbook>> OpenXls(const std::string& path) {
  const void* handle = nullptr;
  if (const int rc = freexl_open(path.c_str(), &handle); rc != FREEXL_OK) {
    if (handle) freexl_close(handle);
    return Fail(Error::Code::kData, path + " is not a readable .xls workbook (" + Why(rc) +
                                        "): save it as .xlsx or CSV and ask about that");
  }
  auto book = std::make_unique<XlsWorkbook>(handle, path);
  if (auto r = book->Load(); !r) return std::unexpected(r.error());
  return std::unique_ptr<Workbook>(std::move(book));
}

}  // namespace quarry::engine::internal
