// Open(): checks the paths the user gave, decides the format of each from its extension (and
// for .db its header), and hands them to the DuckDB or SQLite engine.
#include <algorithm>
#include <duckdb.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <cstring>
#include <fstream>

#include "quarry/common/text.h"
#include "quarry/common/names.h"
#include "quarry/engine/engine_internal.h"
#include "quarry/engine/versions.h"

namespace quarry::engine {
namespace {}  // namespace

namespace internal {
std::string DataExtension(const std::filesystem::path& path) {
  std::string name = Lower(path.filename().string());
  for (const char* gz : {".gz", ".zst"}) {
    if (name.ends_with(gz)) name.resize(name.size() - std::strlen(gz));
  }
  return std::filesystem::path(name).extension().string();
}

// Every extension quarry reads, in the order the unsupported-type error lists them.
constexpr NamePair<SourceFormat> kExtensions[] = {
    {SourceFormat::kCsv, ".csv"},
    {SourceFormat::kTsv, ".tsv"},
    {SourceFormat::kTsv, ".tab"},
    {SourceFormat::kParquet, ".parquet"},
    {SourceFormat::kParquet, ".pq"},
    {SourceFormat::kJson, ".json"},
    {SourceFormat::kJson, ".jsonl"},
    {SourceFormat::kJson, ".ndjson"},
    {SourceFormat::kXlsx, ".xlsx"},
    {SourceFormat::kXlsx, ".xlsm"},
    {SourceFormat::kXls, ".xls"},
    {SourceFormat::kSqlite, ".sqlite"},
    {SourceFormat::kSqlite, ".sqlite3"},
    {SourceFormat::kSqlite, ".db"},  // or DuckDB: Open reads its header
    {SourceFormat::kDuckDb, ".duckdb"},
    {SourceFormat::kDuckDb, ".ddb"},
};

std::optional<SourceFormat> FormatOf(const std::filesystem::path& path) {
  return ValueOf(kExtensions, DataExtension(path));
}

std::string KnownExtensions() {
  std::string list;
  for (const auto& [format, ext] : kExtensions) {
    list += (list.empty() ? "" : ", ") + std::string(ext);
  }
  return list +
         " (.db: SQLite or DuckDB, by its header; CSV, TSV and JSON also compressed as .gz or "
         ".zst)";
}
}  // namespace internal

namespace {

constexpr NamePair<SourceFormat> kSourceFormatNames[] = {
    {SourceFormat::kCsv, "csv"},
    {SourceFormat::kTsv, "tsv"},
    {SourceFormat::kParquet, "parquet"},
    {SourceFormat::kJson, "json"},
    {SourceFormat::kXlsx, "xlsx"},
    {SourceFormat::kXls, "xls"},
    {SourceFormat::kSqlite, "sqlite"},
    {SourceFormat::kDuckDb, "duckdb"},
    {SourceFormat::kPostgreSql, "postgresql"},
    {SourceFormat::kMySql, "mysql"},
    {SourceFormat::kClickHouse, "clickhouse"},
};

constexpr NamePair<CacheUse> kCacheUseNames[] = {
    {CacheUse::kNone, ""}, {CacheUse::kHit, "hit"}, {CacheUse::kMiss, "miss"}};

}  // namespace

std::string_view SourceFormatName(SourceFormat format) {
  return NameOf(kSourceFormatNames, format);
}
std::optional<SourceFormat> ParseSourceFormat(std::string_view name) {
  return ValueOf(kSourceFormatNames, name);
}
std::string_view CacheUseName(CacheUse use) { return NameOf(kCacheUseNames, use); }

namespace {

bool HasDuckDbMagic(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char head[12] = {};
  in.read(head, sizeof head);
  return in.gcount() == 12 && std::memcmp(head + 8, "DUCK", 4) == 0;
}

}  // namespace

std::string_view DialectName(Dialect dialect) {
  switch (dialect) {
    case Dialect::kDuckDB:
      return "duckdb";
    case Dialect::kSQLite:
      return "sqlite";
    case Dialect::kPostgreSQL:
      return "postgresql";
    case Dialect::kMySQL:
      return "mysql";
    case Dialect::kClickHouse:
      return "clickhouse";
  }
  return "unknown";
}

std::optional<Dialect> ServerDialect(std::string_view spec) {
  if (!IsServerSpec(spec)) return std::nullopt;
  if (internal::IsClickHouseSpec(spec)) return Dialect::kClickHouse;
  return internal::IsMySqlSpec(spec) ? Dialect::kMySQL : Dialect::kPostgreSQL;
}

bool IsServerSpec(std::string_view spec) {
  const std::string head = Lower(std::string(spec.substr(0, 13)));
  if (head.starts_with("postgresql://") || head.starts_with("postgres://")) return true;
  if (internal::IsMySqlSpec(spec) || internal::IsClickHouseSpec(spec)) return true;
  // libpq's keyword/value form ("host=db user=reader dbname=shop", "service=warehouse"): its
  // first word is one of libpq's keywords, unless a file of that name exists.
  const size_t start = spec.find_first_not_of(" \t");
  if (start == std::string_view::npos) return false;
  size_t end = start;
  while (end < spec.size() &&
         (std::islower(static_cast<unsigned char>(spec[end])) || spec[end] == '_')) {
    ++end;
  }
  const size_t eq = spec.find_first_not_of(" \t", end);
  if (end == start || eq == std::string_view::npos || spec[eq] != '=') return false;
  std::error_code ec;
  if (std::filesystem::exists(std::string(spec), ec)) return false;
  const std::string keyword(spec.substr(start, end - start));
  bool known = false;
  if (PQconninfoOption* defaults = PQconndefaults()) {
    for (PQconninfoOption* o = defaults; o->keyword; ++o) known = known || keyword == o->keyword;
    PQconninfoFree(defaults);
  }
  return known;
}

Result<std::vector<std::filesystem::path>> ExpandFolders(
    const std::vector<std::filesystem::path>& paths, std::vector<std::string>* notes) {
  std::vector<std::filesystem::path> out;
  for (const auto& given : paths) {
    std::error_code ec;
    if (IsServerSpec(given.string()) || !std::filesystem::is_directory(given, ec)) {
      out.push_back(given);
      continue;
    }
    std::vector<std::filesystem::path> data;
    std::vector<std::string> skipped, empty;
    for (std::filesystem::directory_iterator it(given, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.starts_with(".")) continue;  // .quarry/, editors' files: never data
      std::error_code type_ec;
      if (it->is_regular_file(type_ec) && internal::FormatOf(it->path())) {
        // An empty file holds no table: one in a folder is skipped, not an error for the rest.
        if (it->file_size(type_ec) == 0 && !type_ec) {
          empty.push_back(name);
        } else {
          data.push_back(it->path());
        }
      } else {
        skipped.push_back(name);
      }
    }
    if (ec) {
      return Fail(Error::Code::kData,
                  "cannot list the folder " + given.string() + ": " + ec.message());
    }
    if (data.empty()) {
      return Fail(Error::Code::kData, "the folder " + given.string() +
                                          " holds no data file quarry reads (" +
                                          internal::KnownExtensions() + ")");
    }
    std::ranges::sort(data);
    std::ranges::sort(skipped);
    std::ranges::sort(empty);
    if (notes) {
      auto names = [](const std::vector<std::string>& list) {
        std::string text = " (";
        for (size_t i = 0; i < list.size() && i < 5; ++i) text += (i ? ", " : "") + list[i];
        return text + (list.size() > 5 ? ", ...)" : ")");
      };
      std::string note =
          "folder " + given.string() + ": reading " + std::to_string(data.size()) + " data file(s)";
      if (!skipped.empty()) {
        note +=
            "; skipped " + std::to_string(skipped.size()) + " that are not data" + names(skipped);
      }
      if (!empty.empty()) {
        note += "; skipped " + std::to_string(empty.size()) + " empty" + names(empty);
      }
      notes->push_back(note);
    }
    out.insert(out.end(), data.begin(), data.end());
  }
  return out;
}

Result<std::unique_ptr<Engine>> Open(const std::vector<std::filesystem::path>& paths,
                                     const OpenOptions& options) {
  if (paths.empty()) {
    return Fail(Error::Code::kUsage, "no data given: pass a file with --data PATH");
  }
  for (const auto& given : paths) {
    std::error_code exists_ec;
    const std::string text = given.string();
    if (const size_t sep = text.find("://"); sep != std::string::npos && sep > 0 && sep < 24 &&
                                             !IsServerSpec(text) &&
                                             !std::filesystem::exists(given, exists_ec)) {
      const std::string scheme = text.substr(0, sep);
      const bool name = scheme.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            "0123456789+.-") == std::string::npos;
      if (name) {
        return Fail(Error::Code::kUsage,
                    "quarry does not read " + scheme +
                        ":// URLs: give a file, or a server as postgresql://, mysql://, "
                        "mariadb://, clickhouse://, clickhouse+http:// or clickhouse+https://");
      }
    }
    if (!IsServerSpec(given.string())) continue;
    if (paths.size() > 1) {
      return Fail(Error::Code::kUsage,
                  "a database server must be the only data source: ask about " +
                      internal::RedactServerSpec(given.string()) + " and the files separately");
    }
    if (internal::IsMySqlSpec(given.string())) return internal::OpenMySql(given.string(), options);
    if (internal::IsClickHouseSpec(given.string())) {
      return internal::OpenClickHouse(given.string(), options);
    }
    return internal::OpenPostgres(given.string(), options);
  }
  std::vector<SourceFormat> formats;
  std::vector<std::filesystem::path> files;
  std::vector<internal::CsvOptions> csv_options;
  bool database = false;
  for (const auto& given : paths) {
    std::error_code ec;
    // data.csv?delim=; carries reading options, unless a file of that whole name exists.
    std::filesystem::path path = given;
    internal::CsvOptions csv;
    const std::string text = given.string();
    if (const auto q = text.rfind('?');
        q != std::string::npos && !std::filesystem::exists(given, ec)) {
      path = text.substr(0, q);
      auto parsed = internal::ParseCsvOptions(std::string_view(text).substr(q + 1));
      if (!parsed) return std::unexpected(Context(parsed.error(), text));
      csv = std::move(*parsed);
    }
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) {
      return Fail(Error::Code::kData, "data file not found: " + path.string() +
                                          "; check the path (relative paths start at the "
                                          "current directory)");
    }
    if (std::filesystem::is_directory(status)) {
      return Fail(Error::Code::kData, path.string() +
                                          " is a directory; pass the data files in it "
                                          "one by one");
    }
    // A FIFO, socket or device would block the loader on a read no stop can interrupt (a
    // trial's `mkfifo data.csv` hung until SIGTERM): only a regular file is data.
    if (!std::filesystem::is_regular_file(status)) {
      const char* kind = std::filesystem::is_fifo(status)             ? "a named pipe (FIFO)"
                         : std::filesystem::is_socket(status)         ? "a socket"
                         : std::filesystem::is_character_file(status) ? "a character device"
                         : std::filesystem::is_block_file(status)     ? "a block device"
                                                                      : "not a regular file";
      return Fail(Error::Code::kData, path.string() + " is " + kind +
                                          ", not a file: copy the data into a file and pass "
                                          "that");
    }
    std::optional<SourceFormat> known = internal::FormatOf(path);
    if (!known) {
      return Fail(Error::Code::kData,
                  "unsupported file type: " + path.string() + "; quarry reads " +
                      internal::KnownExtensions() +
                      (Lower(path.extension().string()) == ".xlsb" ||
                               Lower(path.extension().string()) == ".ods"
                           ? std::string(" (save this workbook as .xlsx and ask again)")
                           : std::string()));
    }
    SourceFormat format = *known;
    if (internal::DataExtension(path) == ".db") {
      // The extension promises a database; the header says which kind, if any.
      std::ifstream probe(path, std::ios::binary);
      if (!probe) {
        return Fail(Error::Code::kData,
                    "cannot read " + path.string() + ": permission denied or unreadable");
      }
      format = HasDuckDbMagic(path) ? SourceFormat::kDuckDb : SourceFormat::kSqlite;
    }
    const bool workbook = format == SourceFormat::kXlsx || format == SourceFormat::kXls;
    const bool delimited = format == SourceFormat::kCsv || format == SourceFormat::kTsv;
    if (!csv.empty() && !delimited && !workbook) {
      return Fail(Error::Code::kUsage,
                  "reading options (after '?') apply to CSV/TSV files and "
                  "workbooks only, not to " +
                      path.string());
    }
    if (workbook && csv.TextOnly()) {
      return Fail(Error::Code::kUsage,
                  "delim, quote, encoding and decimal describe CSV text, "
                  "not a workbook: " +
                      path.string() +
                      " takes sheet, range, "
                      "header, skip, null and types");
    }
    if (!workbook && (csv.sheet || csv.range)) {
      return Fail(Error::Code::kUsage,
                  "sheet= and range= apply to workbooks (.xlsx, .xls), not "
                  "to " +
                      path.string());
    }
    // The same file twice would load as two tables (sales, sales_2) that the model would
    // compare as if they were different data.
    for (size_t k = 0; k < files.size(); ++k) {
      if (std::filesystem::equivalent(files[k], path, ec) && csv_options[k] == csv) {
        return Fail(Error::Code::kUsage, path.string() + " is given twice (also as " +
                                             paths[k].string() + "): pass it once");
      }
    }
    database = database || format == SourceFormat::kSqlite || format == SourceFormat::kDuckDb;
    formats.push_back(format);
    files.push_back(path);
    csv_options.push_back(std::move(csv));
  }
  if (database && paths.size() > 1) {
    // Name the database, wherever it stands among the paths.
    size_t db = 0;
    while (db + 1 < formats.size() && formats[db] != SourceFormat::kSqlite &&
           formats[db] != SourceFormat::kDuckDb) {
      ++db;
    }
    return Fail(Error::Code::kUsage, "a database must be the only data source: use " +
                                         paths[db].string() + " and the other files separately");
  }
  if (formats[0] == SourceFormat::kSqlite) return internal::OpenSqlite(files[0], options);
  if (formats[0] == SourceFormat::kDuckDb) return internal::OpenDuckDbDatabase(files[0], options);
  return internal::OpenDuckDbFiles(files, formats, csv_options, options);
}

std::string LibraryVersions() {
  // libpq says 150014 for 15.14 (major * 10000 + minor since version 10).
  const int pq = PQlibVersion();
  return std::string("DuckDB ") + duckdb_library_version() + ", SQLite " + sqlite3_libversion() +
         ", libpq " + std::to_string(pq / 10000) + "." + std::to_string(pq % 10000);
}

}  // namespace quarry::engine
