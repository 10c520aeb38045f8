// libFuzzer target: an .xlsx package from anywhere, read as the engine reads a workbook:
// OpenXlsxBytes, every sheet, and the CSV each becomes. Limits are small so that a package
// which unpacks large is refused, not run out of memory; an error must say what is wrong.
//
// An input that starts with "PK" is the package itself (the zip layer is fuzzed). Any other
// input lists parts as "--part NAME\n" followed by the part's bytes: they are packed into a
// valid zip here, so the mutations reach the XML instead of failing a CRC.
#include <zip.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/engine/workbook.h"

namespace internal = quarry::engine::internal;

namespace {

std::string Pack(std::string_view text) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_t* zip = out ? zip_open_from_source(out, ZIP_TRUNCATE, &error) : nullptr;
  zip_error_fini(&error);
  if (!zip) {
    if (out) zip_source_free(out);
    return {};
  }
  zip_source_keep(out);
  std::vector<std::string> parts;  // zip_close reads them: they must live until then
  parts.reserve(64);
  size_t at = text.find("--part ");
  while (at != std::string_view::npos && parts.size() < 64) {
    const size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) break;
    const std::string name(text.substr(at + 7, eol - at - 7));
    const size_t next = text.find("--part ", eol + 1);
    parts.emplace_back(
        text.substr(eol + 1, (next == std::string_view::npos ? text.size() : next) - eol - 1));
    zip_source_t* src = zip_source_buffer(zip, parts.back().data(), parts.back().size(), 0);
    if (src && zip_file_add(zip, name.c_str(), src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE) < 0) {
      zip_source_free(src);
    }
    at = next;
  }
  std::string bytes;
  if (zip_close(zip) < 0) {
    zip_discard(zip);
  } else if (zip_source_open(out) == 0) {
    char buf[4096];
    for (zip_int64_t n; (n = zip_source_read(out, buf, sizeof buf)) > 0;)
      bytes.append(buf, static_cast<size_t>(n));
    zip_source_close(out);
  }
  zip_source_free(out);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  internal::WorkbookLimits limits;
  limits.max_part_bytes = 8 << 20;
  limits.max_total_bytes = 32 << 20;
  limits.max_cells = 200'000;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string package = input.starts_with("PK") ? std::string(input) : Pack(input);
  if (package.empty()) return 0;
  auto book = internal::OpenXlsxBytes(std::move(package), limits);
  if (!book) {
    if (book.error().message.empty()) std::abort();
    return 0;
  }
  const auto names = (*book)->SheetNames();
  if (names.empty()) std::abort();  // Open refuses a workbook without worksheets
  for (size_t i = 0; i < names.size(); ++i) {
    auto sheet = (*book)->ReadSheet(i, {});
    if (!sheet) {
      if (sheet.error().message.empty()) std::abort();
      continue;
    }
    for (size_t k = 1; k < sheet->cells.size(); ++k) {
      const auto& a = sheet->cells[k - 1];
      const auto& b = sheet->cells[k];
      if (a.row > b.row || (a.row == b.row && a.col > b.col)) std::abort();  // sorted, as promised
    }
    std::string csv;
    auto written = internal::WriteSheetCsv(*sheet, std::nullopt, csv);
    if (!written) std::abort();
    if ((written->rows == 0) != csv.empty()) std::abort();
  }
  return 0;
}
