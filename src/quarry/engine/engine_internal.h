// Pieces the engine implementations share; only the engine module includes this header.
#pragma once

#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/engine/engine.h"

namespace quarry::engine::internal {

using Rows = std::vector<std::vector<std::optional<std::string>>>;
// Runs trusted, engine-internal SQL (card statistics), returning every row as text.
using RunRows = std::function<Result<Rows>(const std::string& sql)>;

struct ColumnInfo {
  std::string name;
  std::string type;
  bool ordered = true;  // min/max mean something for this type
};

// What an engine adds to one column's card: aggregates over the column computed in the same
// statistics scan as its counts and bounds, and `notes_from`, which turns their values (as
// text, in order), the column's non-null count and its card (counts, bounds, samples) into
// column notes. It may ask `run` for the values behind a count (which markers, how many rows
// each); its errors fail the card as the statistics' would.
struct ColumnExtra {
  std::vector<std::string> aggregates;
  std::function<Result<std::vector<std::string>>(
      const std::vector<std::optional<std::string>>& values, int64_t non_null,
      const ColumnCard& column, const RunRows& run)>
      notes_from;
};

// A query ended because Limits::stop was requested.
inline QueryFailure CancelledFailure() {
  return QueryFailure{FailureClass::kRuntimeError, "",
                      "the query was cancelled: the caller asked it to stop",
                      Error::Code::kCancelled};
}

// A query ran past Limits::timeout_ms (every engine says it the same way).
inline QueryFailure TimeoutFailure(int64_t timeout_ms) {
  return QueryFailure{FailureClass::kTimeout, "",
                      "the query was interrupted after " + std::to_string(timeout_ms) +
                          " ms: simplify it, filter earlier, or aggregate before joining"};
}

// A kReal cell: the shortest text that parses back to the same value (SQLite's own text keeps
// 15 digits, so 0.1+0.2 would read "0.3"); a whole number keeps ".0" so it still reads as a
// real; "nan", "inf", "-inf". The float overload keeps a float4's own shortest text ("0.1").
std::string RealText(double value);
std::string RealText(float value);
// A kBlob cell in DuckDB's rendering (printable ASCII as is, other bytes and \ ' " as \xNN), so
// engine::BlobBytes reverses it whichever engine produced it.
std::string BlobText(std::string_view bytes);

// "name" with embedded quotes doubled; valid in both dialects.
std::string QuoteIdent(std::string_view name);
// 'text' with embedded quotes doubled.
std::string QuoteLiteral(std::string_view text);

// A card column's type without the " NOT NULL"/" PRIMARY KEY" the cards append.
inline std::string BaseCardType(std::string type) {
  for (const char* suffix : {" NOT NULL", " PRIMARY KEY"}) {
    if (type.ends_with(suffix)) type.resize(type.size() - std::string_view(suffix).size());
  }
  return type;
}
// An export CSV's field in double quotes, embedded quotes doubled.
inline void AppendCsvQuoted(std::string& line, std::string_view text) {
  line += '"';
  for (const char c : text) line += c == '"' ? std::string("\"\"") : std::string(1, c);
  line += '"';
}
// An exported table's file name: <index>_<table, letters and digits, other bytes as '_'>.csv.
inline std::string ExportFileName(size_t index, const std::string& table) {
  std::string safe;
  for (const char c : table) safe += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return std::to_string(index) + "_" + safe.substr(0, 60) + ".csv";
}

// Samples a card keeps of a column with more than kCardFewValues distinct values.
inline constexpr size_t kSampleValues = 3;
// Trims `col.samples` (fetched up to kCardFewValues) to kSampleValues unless the column is one
// of few values (ColumnCard::samples).
inline void KeepSamples(ColumnCard& col) {
  if (col.distinct_count > static_cast<int64_t>(kCardFewValues) &&
      col.samples.size() > kSampleValues) {
    col.samples.resize(kSampleValues);
  }
}

// Row count, per-column null/distinct counts, min/max and the most frequent values (ColumnCard).
// `sql_name` is how queries reach the table (quoted, maybe schema-qualified). `extras`, when
// given, has one entry per column. Columns are counted in groups of at most 500 aggregates per
// statement (SQLite allows 2000 result columns), so any table SQLite can hold gets a card.
Result<TableCard> BuildCard(const std::string& table, const std::string& sql_name,
                            const std::string& source, const std::vector<ColumnInfo>& columns,
                            const RunRows& run, const std::vector<ColumnExtra>& extras = {});

// Hashes (when `hash`) and sizes the file; errors name the file (unreadable, directory, empty).
// A stop request ends the hash of a large file early with kCancelled.
Result<Source> Fingerprint(const std::filesystem::path& path, SourceFormat format, bool hash = true,
                           const StopToken& stop = {});

// A SQL-safe table name from a file stem: lower case, [a-z0-9_], not starting with a digit,
// not one of `keywords` (lower case), and distinct from every name in `taken`.
std::string TableNameFor(const std::filesystem::path& path, const std::vector<std::string>& taken,
                         const std::vector<std::string>& keywords);

// Per-file reading options for what sniffing cannot guess, given as PATH?key=value&...:
// delim, quote, header, skip, encoding, decimal, null (repeatable), types=col:TYPE;col:TYPE.
struct CsvOptions {
  std::optional<std::string> delimiter;
  std::optional<std::string> quote;
  std::optional<bool> header;
  std::optional<int64_t> skip;
  std::optional<std::string> encoding;
  std::optional<std::string> decimal;
  std::vector<std::string> nulls;
  std::vector<std::pair<std::string, std::string>> types;  // column, DuckDB type
  // Workbooks only: the sheet by name, and a cell range such as A3:F200.
  std::optional<std::string> sheet;
  std::optional<std::string> range;
  bool empty() const {
    return !delimiter && !quote && !header && !skip && !encoding && !decimal && nulls.empty() &&
           types.empty() && !sheet && !range;
  }
  // Options that say how to read text, which a workbook's cells do not need.
  bool TextOnly() const { return delimiter || quote || encoding || decimal; }
  bool operator==(const CsvOptions&) const = default;
};

// Errors (kUsage) name the option and the accepted values.
Result<CsvOptions> ParseCsvOptions(std::string_view query);

// How one CSV/TSV file becomes a table, and what the loader decided on the way.
struct CsvPlan {
  std::string select;  // SELECT ... FROM read_csv(...) with the dialect and columns fixed
  std::vector<std::string> table_notes;
  std::vector<std::string> user_notes;  // advice naming quarry's options: Source::notes
  std::map<std::string, std::vector<std::string>> column_notes;  // by column name
  std::string delimiter;                                         // "" when read as one column
  bool header = true;
  bool padded = false;
  bool sampled = false;  // judged on the first kSampleRows rows (PlanCsv's deep = false)
};

// The table note of a sampled plan; the cache builder drops it once every row has been read.
std::string SampledPlanNote();

// Plans the reading of `abs_path` with DuckDB (`run` executes trusted SQL). `deep`: check every
// row (types, repeated headers, ragged lines) in one extra pass; otherwise trust the sniffer's
// sample, and let a failing query ask for the deep plan. Errors are DuckDB's, unprefixed: the
// caller names the file.
Result<CsvPlan> PlanCsv(const RunRows& run, const std::string& abs_path, bool tsv,
                        const CsvOptions& options, bool deep);

// 8-bit encodings DuckDB lacks (encoding.cc). The iconv name of a file that is not UTF-8 and
// holds bytes 0x80-0x9F that only Windows-1252 defines ("CP1252"), judged on its first 64 MiB;
// nullopt for UTF-8, UTF-16 with a byte-order mark, Latin-1, gzip or zstd data (DuckDB
// decompresses it; the loader's Latin-1 retry reads it) and anything else.
std::optional<std::string> DetectWindows1252(const std::filesystem::path& path);
// DuckDB's reader of a Parquet file, else of a JSON file, at `abs` (export.cc).
std::string FileReader(SourceFormat format, const std::string& abs);

// For a gzip file (by its magic bytes; any other file passes): every member decompressed to its
// end and checksum (compressed.cc). Errors: kData "cannot load SHOWN: ..." naming a truncated or
// damaged file and the fix; kCancelled on `stop`. zstd data is not checked.
Result<void> CheckGzipWhole(const std::filesystem::path& path, const std::string& shown,
                            const StopToken& stop);
// The iconv name of an encoding a user may give that DuckDB cannot read: cp1252,
// windows-1252 ("CP1252"), iso-8859-15, latin-9 ("ISO-8859-15"); nullopt for others.
std::optional<std::string> IconvEncoding(std::string_view name);
// "Windows-1252 (cp1252)" for "CP1252": for notes.
std::string EncodingName(const std::string& iconv_name);
// What a UTF-8 copy changed: lines with bytes past ASCII kept as UTF-8 and converted, and
// undefined bytes made U+FFFD.
struct TranscodeCounts {
  int64_t utf8_lines = 0;
  int64_t converted_lines = 0;
  int64_t replaced = 0;
};
// The card's note on a file read through a UTF-8 copy; `named`: the user gave the encoding.
std::string TranscodedNote(const std::string& iconv_name, bool named,
                           const TranscodeCounts& counts);
// Writes `from`, read as `encoding`, to `to` as UTF-8. `by_line` (a detected encoding): a line
// that is valid UTF-8 is kept as it is, and a byte the encoding leaves undefined becomes
// U+FFFD; otherwise (the user named the encoding) the whole file is converted, and such a byte
// is an error. Errors (kData): that byte with its offset and what to give instead, unreadable
// input, unwritable output.
Result<TranscodeCounts> TranscodeToUtf8(const std::filesystem::path& from,
                                        const std::filesystem::path& to,
                                        const std::string& encoding, bool by_line);

// The one decision both the engine and the cache builder make for a CSV: when `abs` is in an
// 8-bit encoding DuckDB lacks (named in `options.encoding`, or detected Windows-1252), writes
// its UTF-8 copy to `copy`, clears `options.encoding` (the copy is UTF-8) and returns the
// card's note; nullopt when the file is read as it is. Errors: TranscodeToUtf8's, and kData
// for an encoding named on gzip or zstd data (decompress it first).
Result<std::optional<std::string>> ReadThroughUtf8Copy(const std::filesystem::path& abs,
                                                       CsvOptions& options,
                                                       const std::filesystem::path& copy);

// Plans the reading of a JSON file (json_loader.cc): read_json_auto's, with a column of integers
// it made DOUBLE (one past 64 bits) read exact instead, as HUGEINT or text, with a note. A file
// DuckDB cannot read gets the plain reading, so the view's creation reports the error.
Result<CsvPlan> PlanJson(const RunRows& run, const std::string& abs_path);

// Tables from sources at most this large get exact distinct counts and top values in their
// cards; larger ones DuckDB's approximations, which need no memory per distinct value.
inline constexpr int64_t kExactBytes = 64ll << 20;

// A card's columns from DESCRIBE's rows (name, type, ...), with the loader's notes attached
// (`plan` may be null), and the ColumnInfo the profile needs.
std::vector<ColumnInfo> DescribeInto(TableCard& card, const Rows& describe, const CsvPlan* plan);

// Fills card.row_count and every column's statistics in one query over `sql_name`; card.columns
// must already list `columns` in order. `exact`: exact distinct counts and top-3 values (small
// tables); otherwise DuckDB's approximate ones.
Result<void> ProfileDuckDb(TableCard& card, const std::string& sql_name,
                           const std::vector<ColumnInfo>& columns, const RunRows& run, bool exact);

// Loading errors end in advice for the user when a load runs out of time. A card note that
// quotes such an error keeps what happened, for the model (it cannot raise a flag), and the
// advice goes to Source::notes: this removes it from `message` and says whether it was there.
inline constexpr std::string_view kRaiseTimeout = "; raise --timeout-ms";
inline bool TakeTimeoutAdvice(std::string& message) {
  const size_t at = message.find(kRaiseTimeout);
  if (at == std::string::npos) return false;
  message.erase(at, kRaiseTimeout.size());
  return true;
}

// The format a file's extension names (".db": kSqlite, which Open corrects to kDuckDb by the
// header), nullopt for an extension quarry does not read. A .gz or .zst suffix is looked past.
std::optional<SourceFormat> FormatOf(const std::filesystem::path& path);
// The extension FormatOf reads: lower case, past .gz/.zst (".csv" for "Sales.CSV.gz").
std::string DataExtension(const std::filesystem::path& path);

// A usable parse-cache entry: the materialised table (in `entry`, as table `data`), its card
// and what the loader decided when it was built.
struct CacheHit {
  std::filesystem::path entry;
  TableCard card;
  std::string sha256;
  std::string delimiter;
  bool header = true;
  bool padded = false;
  std::vector<std::string> user_notes;  // CsvPlan::user_notes
};
std::filesystem::path CacheDir(const OpenOptions& options);
// nullopt when the file cannot be stat'ed.
std::optional<std::string> CacheKey(const std::filesystem::path& abs, const CsvOptions& options);
// The entry for this file as it is now, or nullopt (none, stale, unreadable, a link, or a file
// not owned by the user or writable by others). Errors: kUsage when the cache directory exists
// but is not private to the user (cache.cc says why), naming it and what to do.
Result<std::optional<CacheHit>> LookupCache(const std::filesystem::path& abs,
                                            const CsvOptions& options, const OpenOptions& open);
Result<std::filesystem::path> BuildCacheEntry(const std::filesystem::path& given,
                                              const OpenOptions& options);
// While another process builds this file's entry: waits for it when the build's progress says
// that is quicker than reading the file beside it, and returns the entry; nullopt at once when
// no build runs or waiting would be slower (the caller reads the file). A stop request ends
// the wait.
Result<std::optional<CacheHit>> WaitForCacheBuild(const std::filesystem::path& abs,
                                                  const CsvOptions& options,
                                                  const OpenOptions& open);

Result<std::unique_ptr<Engine>> OpenDuckDbFiles(const std::vector<std::filesystem::path>& paths,
                                                const std::vector<SourceFormat>& formats,
                                                const std::vector<CsvOptions>& csv_options,
                                                const OpenOptions& options);
Result<std::unique_ptr<Engine>> OpenDuckDbDatabase(const std::filesystem::path& path,
                                                   const OpenOptions& options);
// Text to append to SQLite's "no such column: X" (X as SQLite wrote it, maybe "t.col"): the
// nearest column names first (case and punctuation ignored, then small edit distances, then
// containment), then the columns of every table `sql` names, in the order it names them (of
// every table, up to 8, when it names none). A qualifier ("t.col") that is a table's name or
// alias puts that table first in both lists. Starts with ". "; "" when there are no cards.
std::string NoSuchColumnHint(std::string_view missing, std::string_view sql,
                             const std::vector<TableCard>& cards);
// Text to append to SQLite's "ambiguous column name: X": the tables `sql` names that have a
// column X (case aside), with their aliases, and the qualified names to use instead (alias.X
// for an aliased table: SQLite then no longer accepts its name). Starts with ". "; a general
// "qualify it" sentence when fewer than two qualified names are found (a CTE, a subquery).
std::string AmbiguousColumnHint(std::string_view column, std::string_view sql,
                                const std::vector<TableCard>& cards);
// The same for "no such table: X": the nearest table names, then every table (up to 100).
std::string NoSuchTableHint(std::string_view missing, const std::vector<TableCard>& cards);

// Tests only: a SQLite engine's query without the text guard (CheckQueryText), so a test can
// show the engine's own layer (authorizer, read-only statement check) refuses on its own.
// Any other engine gets a runtime_error failure.
QueryOutcome QuerySqlitePastTextGuard(Engine& engine, std::string_view sql, const Limits& limits);

// Tests only: the same for a DuckDB engine (its statement-type check, DuckDB's own file
// confinement), without the retry of a CSV planned on the sniffer's sample.
QueryOutcome QueryDuckDbPastTextGuard(Engine& engine, std::string_view sql, const Limits& limits);

Result<std::unique_ptr<Engine>> OpenSqlite(const std::filesystem::path& path,
                                           const OpenOptions& options);

// A PostgreSQL server from a postgresql:// or postgres:// URL or "service=NAME" (IsServerSpec).
// Errors: kUsage for a password in the spec (it must come from PGPASSWORD, ~/.pgpass or the
// service file) or a malformed one; kData when the server cannot be reached or read.
Result<std::unique_ptr<Engine>> OpenPostgres(const std::string& spec, const OpenOptions& options);

// The spec as it may be shown: user, host, port and database only; never a password.
std::string RedactServerSpec(std::string_view spec);

// A server URL's parts (server_url.cc): SCHEME://[USER[:PASSWORD]@]HOST[:PORT][/PATH][?K=V&...],
// percent-decoded. With a password, `password` is true and nothing after the user is read, so
// the caller can refuse the URL without repeating it.
struct ServerUrl {
  std::string scheme;  // lower-cased
  std::string user;
  bool password = false;
  std::string host;  // an IPv6 host without its brackets
  unsigned port = 0;
  std::string path;                                         // after the first '/'
  std::vector<std::pair<std::string, std::string>> params;  // keys lower-cased
};
// Errors: kUsage "cannot read the server URL SCHEME://…: WHY" + `usage`, for an IPv6 host never
// closed, a port that is not 1 to 65535, or a '%' without two hex digits.
Result<ServerUrl> ParseServerUrl(std::string_view spec, std::string_view usage);
// USER@HOST:PORT as shown (percent-encoded; brackets around an IPv6 host).
std::string ServerUrlAuthority(const ServerUrl& url);
std::string UrlEncode(std::string_view text);  // '/' kept
std::string UrlScheme(std::string_view spec);  // lower-cased; "" without "://"
// "the server URL has the parameter 'KEY' quarry does not know; " + `takes` (a key that is not
// a plain name is not repeated).
std::string UnknownUrlParameter(const std::string& key, std::string_view takes);

// A MariaDB or MySQL server from a mysql:// or mariadb:// URL (case aside).
bool IsMySqlSpec(std::string_view spec);
// RedactServerSpec for such a URL.
std::string RedactMySqlSpec(std::string_view spec);
// Errors: kUsage for a password or an unknown parameter in the URL, or no database; kData when
// the server cannot be reached or read.
Result<std::unique_ptr<Engine>> OpenMySql(const std::string& spec, const OpenOptions& options);
// ExportTables for a MySQL-protocol engine (mysql_export.cc).
Result<std::vector<TableExport>> ExportMySql(const Engine& engine, const std::filesystem::path& dir,
                                             int64_t max_rows);
// A ClickHouse server from a clickhouse://, clickhouse+http:// or clickhouse+https:// URL (case
// aside), reached over its HTTP interface.
bool IsClickHouseSpec(std::string_view spec);
std::string RedactClickHouseSpec(std::string_view spec);
// Errors: kUsage for a password or an unknown parameter in the URL; kData when the server
// cannot be reached or read.
Result<std::unique_ptr<Engine>> OpenClickHouse(const std::string& spec, const OpenOptions& options);
// ExportTables for a ClickHouse engine (clickhouse_export.cc).
Result<std::vector<TableExport>> ExportClickHouse(const Engine& engine,
                                                  const std::filesystem::path& dir,
                                                  int64_t max_rows);
// Tests only: a ClickHouse engine's query without the text guard (the server's layers alone:
// readonly=1, the execution time limit, the result row limit).
QueryOutcome QueryClickHousePastTextGuard(Engine& engine, std::string_view sql,
                                          const Limits& limits);
// Tests only: a MySQL-protocol engine's query without the text guard (the server's layers alone:
// the READ ONLY transaction, privileges, the statement time limit).
QueryOutcome QueryMySqlPastTextGuard(Engine& engine, std::string_view sql, const Limits& limits);

// Column statistics from sampled rows (one row per sampled table row, a cell per card column,
// in card order): null and distinct counts, the most frequent values, and min/max of the
// columns `ranged` says sort as numbers (1) or as text (2; ISO dates and times), 0 for none.
// `rows_known` is the table's row count (-1 unknown): when the sample is smaller, counts are
// scaled to it and marked approximate.
void SampleStatsInto(TableCard& card, const Rows& rows, int64_t rows_known,
                     const std::function<int(const ColumnCard&)>& ranged);

// Tests only: a PostgreSQL engine's query without the text guard (CheckQueryText), so a test
// can show the server's own layers (READ ONLY transaction, privileges, timeouts) refuse on
// their own. Any other engine gets a runtime_error failure.
QueryOutcome QueryPostgresPastTextGuard(Engine& engine, std::string_view sql, const Limits& limits);

}  // namespace quarry::engine::internal
