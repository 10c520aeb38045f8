// Per-file reading options, as users write them after a path: data.csv?delim=;&header=false.
// Parsing and checking only; the CSV loader (csv_loader.cc) applies them.
#include <charconv>

#include "quarry/engine/engine_internal.h"
#include "quarry/engine/workbook.h"

namespace quarry::engine::internal {

Result<CsvOptions> ParseCsvOptions(std::string_view query) {
  CsvOptions o;
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view item = query.substr(start, end - start);
    start = end + 1;
    if (item.empty()) {
      if (end == query.size()) break;
      continue;
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Fail(Error::Code::kUsage, "CSV option '" + std::string(item) +
                                           "' has no value: write key=value (e.g. delim=;)");
    }
    const std::string key(item.substr(0, eq));
    std::string value(item.substr(eq + 1));
    if (value == "\\t" || value == "tab") value = "\t";
    if (key == "delim" || key == "sep" || key == "delimiter") {
      o.delimiter = value;
    } else if (key == "quote") {
      o.quote = value;
    } else if (key == "header") {
      if (value != "true" && value != "false") {
        return Fail(Error::Code::kUsage, "CSV option header=" + value + ": use true or false");
      }
      o.header = value == "true";
    } else if (key == "skip") {
      int64_t n = -1;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 0) {
        return Fail(Error::Code::kUsage, "CSV option skip=" + value + ": give a line count");
      }
      o.skip = n;
    } else if (key == "encoding") {
      // DuckDB reads these without extensions, and extensions are never loaded here.
      std::string e = value;
      for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (e == "utf8") e = "utf-8";
      if (e == "utf16") e = "utf-16";
      if (e == "latin1" || e == "iso-8859-1") e = "latin-1";
      // Windows-1252 and Latin-9 DuckDB lacks: the engine transcodes those with iconv.
      if (e != "utf-8" && e != "utf-16" && e != "latin-1" && !IconvEncoding(e)) {
        return Fail(Error::Code::kUsage, "CSV option encoding=" + value +
                                             ": quarry reads utf-8, utf-16, latin-1, cp1252 "
                                             "(windows-1252) and iso-8859-15");
      }
      o.encoding = e;
    } else if (key == "decimal") {
      if (value != "," && value != ".") {
        return Fail(Error::Code::kUsage, "CSV option decimal=" + value + ": use , or .");
      }
      o.decimal = value;
    } else if (key == "null" || key == "nullstr") {
      o.nulls.push_back(value);
    } else if (key == "types") {
      // types=id:VARCHAR;amount:DOUBLE
      size_t s = 0;
      while (s < value.size()) {
        size_t e = value.find(';', s);
        if (e == std::string::npos) e = value.size();
        const std::string pair = value.substr(s, e - s);
        s = e + 1;
        const size_t colon = pair.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == pair.size()) {
          return Fail(Error::Code::kUsage, "CSV option types: '" + pair +
                                               "' should be column:TYPE (e.g. types=id:VARCHAR)");
        }
        o.types.emplace_back(pair.substr(0, colon), pair.substr(colon + 1));
      }
    } else if (key == "sheet") {
      if (value.empty()) return Fail(Error::Code::kUsage, "option sheet= needs a sheet name");
      o.sheet = value;
    } else if (key == "range") {
      if (auto r = ParseCellRange(value); !r) return std::unexpected(r.error());
      o.range = value;
    } else {
      return Fail(Error::Code::kUsage,
                  "unknown CSV option '" + key +
                      "': use delim, quote, header, skip, encoding, "
                      "decimal, null or types (and for workbooks sheet and range)");
    }
  }
  return o;
}

}  // namespace quarry::engine::internal
