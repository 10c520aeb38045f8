// The engine module: opens data sources, describes them as schema cards, and runs guarded,
// read-only, capped queries. DuckDB serves files (CSV, TSV, Parquet, JSON, Excel sheets) and
// .duckdb databases; SQLite serves .sqlite/.db files; libpq serves PostgreSQL servers (and engines
// that speak its wire protocol); libmariadb serves MariaDB and MySQL servers (and engines that
// speak the MySQL protocol); libcurl serves ClickHouse over its HTTP interface. Nothing here
// knows about the agent.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/common/common.h"

namespace quarry::engine {

enum class Dialect { kDuckDB, kSQLite, kPostgreSQL, kMySQL, kClickHouse };
// "duckdb", "sqlite", "postgresql", "mysql", "clickhouse"
std::string_view DialectName(Dialect dialect);

// Whether a --data value names a database server rather than a file: a postgresql:// or
// postgres:// URL, a libpq service name ("service=NAME"), a mysql:// or mariadb:// URL, or a
// clickhouse://, clickhouse+http:// or clickhouse+https:// URL.
bool IsServerSpec(std::string_view spec);
// The dialect of the server a spec names (kPostgreSQL, kMySQL or kClickHouse), or nullopt for a
// file.
std::optional<Dialect> ServerDialect(std::string_view spec);

// Per column: min/max only for ordered scalar types; samples are the most frequent non-null
// values (ties broken by value), rendered as text: all of them when the column has at most
// kCardFewValues distinct values, else three.
struct ColumnCard {
  std::string name;
  std::string type;
  int64_t null_count = 0;
  int64_t distinct_count = 0;
  bool distinct_approx = false;  // large tables: DuckDB's approx_count_distinct (HyperLogLog)
  bool profiled = false;         // false: only name, type and notes are known (quarry sql)
  std::optional<std::string> min;
  std::optional<std::string> max;
  // A text column whose values are dates written as text ('Apr 1 2005'): the format most of
  // them are written in, as strptime reads it ("%b %d %Y"); min and max are then the earliest
  // and latest of those dates in ISO form (2005-04-01), and a note says how to read them.
  // The data itself stays text.
  std::string date_format;
  std::vector<std::string> samples;
  // What the model must know to read this column right, one sentence each: a stored type
  // that differs from the declared one, a missing-value marker, a number format kept as text,
  // a type the loader changed ("declared INTEGER, stored as text in 3/3 rows").
  std::vector<std::string> notes;
};

struct ForeignKey {
  std::string column;
  std::string ref_table;
  std::string ref_column;
};

struct TableCard {
  std::string name;    // the SQL name to query it by
  std::string source;  // the file it comes from, as the user gave it
  int64_t row_count = 0;
  bool profiled = false;  // row_count and the column statistics were computed
  // They are estimates (PostgreSQL's planner statistics, or a sample of a table never
  // analyzed), not counts: the card shows them with "~".
  bool estimated = false;
  std::vector<ColumnCard> columns;
  std::vector<ForeignKey> foreign_keys;  // SQLite and PostgreSQL
  // What the loader decided on its own, one sentence each (lines skipped, rows padded, a
  // retry with another encoding): told to the model and the user, never silent.
  std::vector<std::string> notes;
};

// What a source is read as. Names (traces, `quarry data --format json`): "csv", "tsv",
// "parquet", "json", "xlsx", "xls", "sqlite", "duckdb", "postgresql", "mysql", "clickhouse".
enum class SourceFormat {
  kCsv,
  kTsv,
  kParquet,
  kJson,
  kXlsx,
  kXls,
  kSqlite,
  kDuckDb,
  kPostgreSql,
  kMySql,
  kClickHouse
};
std::string_view SourceFormatName(SourceFormat format);
std::optional<SourceFormat> ParseSourceFormat(std::string_view name);

// How a file met the parse cache. Names: "" (kNone: not cached, a database, Parquet, or the
// cache was off), "hit" (opened from an entry), "miss" (no entry yet; CacheWorthy says whether
// building one pays).
enum class CacheUse { kNone, kHit, kMiss };
std::string_view CacheUseName(CacheUse use);

// A registered data file (or server), fingerprinted when opened so a trace says what was asked
// about.
struct Source {
  // As the user gave it; for a server, its URL redacted ("postgresql://reader@db:5432/shop",
  // never a password), which is what traces, threads and messages show.
  std::string path;
  SourceFormat format = SourceFormat::kCsv;
  int64_t size_bytes = 0;
  std::string sha256;  // hex; empty when OpenOptions::fingerprint was off
  std::vector<std::string> tables;
  // CSV/TSV only: the dialect DuckDB's sniffer detected, so other readers (the sandbox's
  // pandas) load the file the same way.
  std::string delimiter;
  bool header = true;
  bool padded = false;  // some rows had missing or extra fields, kept and padded with NULL
  CacheUse cache = CacheUse::kNone;
  // For the user rather than the model, one sentence each: what the engine found about the
  // source as a whole (a PostgreSQL role that can write), and advice that names quarry's own
  // options ("give FILE?types=COLUMN:VARCHAR", "raise --timeout-ms"), which the model cannot
  // use. What the loader decided is in the cards' notes, told to both.
  std::vector<std::string> notes;
  // Files: the SELECT that defines the table over the file (the CSV loader's plan), so other
  // readers (the export for Python) read exactly what the engine reads; with a cache hit, the
  // entry it was read from instead (table `data`).
  std::string select;
  std::filesystem::path cache_entry;
  // The UTF-8 CSV copy `select` reads instead of `path` (a Windows-1252 CSV, a workbook's
  // sheet), in the engine's private temporary directory; empty when the file is read itself.
  std::filesystem::path read_copy;
};

// Per-query limits. At most max_rows rows are kept; row_count is still the true count.
struct Limits {
  int64_t timeout_ms = 10000;
  int max_rows = 200;
  // A stop request interrupts the query within about 100 ms (a query waiting for the engine
  // does not start): the failure has code Error::Code::kCancelled.
  StopToken stop;
};

using ProgressFn = std::function<void(const std::string& what, double percent)>;

struct OpenOptions {
  int64_t memory_limit_mb = 2048;
  // Schema cards with statistics (one scan per table). Off for one-off queries (quarry sql):
  // cards then hold names, types and the loader's notes only.
  bool profile = true;
  // sha256 of every file (a full read), for traces. Off when nothing records it.
  bool fingerprint = true;
  // Every statement that loads or profiles a file is interrupted after this long (0: never);
  // the error names the file and the flag to raise.
  int64_t timeout_ms = 0;
  // The parse cache (see BuildCacheEntry). `cache_dir` empty: $XDG_CACHE_HOME/quarry/parse,
  // else ~/.cache/quarry/parse.
  bool use_cache = true;
  std::filesystem::path cache_dir;
  // Without profiling, CSV files up to this size are still checked row by row when opened;
  // larger ones are read on the sniffer's sample, and a query that meets a value the sample
  // did not foresee makes the engine check every row and retry once.
  int64_t deep_bytes = 4ll << 20;
  // Called about every 250 ms, once a load or query has run for a second, with what is
  // running ("loading data/x.csv", "profiling x", "query") and DuckDB's estimate in percent;
  // then once with -1 when it ends. From another thread; DuckDB-served data only.
  ProgressFn progress;
  // A stop request interrupts loading and profiling (DuckDB-served data): Open then fails.
  StopToken stop;
};

// Files at least this large are worth a parse-cache entry; smaller ones load in milliseconds.
inline constexpr int64_t kCacheMinBytes = 4ll << 20;

// Loads one CSV/TSV/JSON file (the path may carry ?options) into the parse cache: a DuckDB
// database holding the table as the loader planned it, with its profile and notes, written
// atomically under a private (0700) directory. Returns the entry. Errors: kUsage for another
// format or no cache directory; kData when the file cannot be loaded, changed while being
// read, or another process is building the same entry.
Result<std::filesystem::path> BuildCacheEntry(const std::filesystem::path& path,
                                              const OpenOptions& options);
std::filesystem::path CacheDirectory(const OpenOptions& options);

// What a result cell holds, so JSON output can give it back typed. The cell's text is:
//   kInteger  the exact decimal digits (any width: HUGEINT and UBIGINT included);
//   kReal     the shortest text that parses back to the same double ("0.30000000000000004");
//             non-finite values as "inf", "-inf", "nan";
//   kDecimal  DuckDB DECIMAL, exact, with its scale ("504488.21", "1.10");
//   kBoolean  "true" or "false";
//   kBlob     printable ASCII as is, every other byte and \ ' " as \xNN (DuckDB's rendering;
//             BlobBytes() gives the bytes back);
//   kText     everything else (strings, dates, timestamps, lists, ...), as the engine renders it;
//   kNull     SQL NULL (the row holds nullopt).
enum class CellKind : uint8_t { kNull, kInteger, kReal, kDecimal, kBoolean, kText, kBlob };

// The bytes of a kBlob cell from its text form (see CellKind).
std::string BlobBytes(std::string_view text);

// Cells are rendered as text (see CellKind); nullopt is SQL NULL.
struct ResultTable {
  std::vector<std::string> columns;
  // Per column: the declared or engine type ("BIGINT", "DECIMAL(18,2)"); for a SQLite column
  // computed by an expression (no declared type), the storage class seen in the fetched rows:
  // "INTEGER", "REAL", "TEXT", "BLOB", "mixed", or "NULL" when no non-null value was fetched.
  std::vector<std::string> types;
  std::vector<std::vector<std::optional<std::string>>> rows;  // at most Limits::max_rows
  std::vector<std::vector<CellKind>> kinds;                   // same shape as rows
  int64_t row_count = 0;                                      // all rows the query produced
  bool truncated() const { return row_count > static_cast<int64_t>(rows.size()); }
};

// Why a query did not run. `rule` names the guard rule broken (guard_violation only), e.g.
// "single_statement", "read_only", "file_access"; `message` is what the model is shown.
struct QueryFailure {
  FailureClass failure_class = FailureClass::kRuntimeError;
  std::string rule;
  std::string message;
  // kCancelled when Limits::stop was requested (the run is over; no model should be shown the
  // message, and failure_class is kRuntimeError); kData for every other failure.
  Error::Code code = Error::Code::kData;
};

using QueryOutcome = std::expected<ResultTable, QueryFailure>;

// Thread safety: one query at a time per Engine, and describe()/sources() not during a query
// (a query may rebuild a card, see cards_version). Destroying it closes every handle.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual Dialect dialect() const = 0;
  // Schema cards, computed when the engine was opened; a query that finds a CSV value past the
  // sniffer's sample rebuilds that file's card (and its source's select).
  virtual const std::vector<TableCard>& describe() const = 0;
  virtual const std::vector<Source>& sources() const = 0;
  // Grows by one each time a query rebuilt cards or sources, so a caller that shares the
  // engine between threads knows when to take a fresh copy. 0 for engines that never do.
  virtual uint64_t cards_version() const { return 0; }
  // Runs one read-only query under the guard (CheckQueryText, then the engine's own
  // statement checks), a wall-clock timeout that interrupts it, the row cap, and Limits::stop.
  virtual QueryOutcome Query(std::string_view sql, const Limits& limits) = 0;
};

// Each folder among `paths` replaced by the data files directly in it (a known extension, not
// hidden), sorted by name; other paths (files, server URLs) stay as given. Not recursive.
// `notes` receives one sentence per folder: how many files are read and which were skipped.
// Errors (kData, naming the folder): it cannot be listed, or holds no data file.
Result<std::vector<std::filesystem::path>> ExpandFolders(
    const std::vector<std::filesystem::path>& paths, std::vector<std::string>* notes);

// The one opened engine as concurrent callers (MCP tool calls, the web app's runs) share it.
// Queries take turns (a DuckDB or SQLite connection serves one query at a time), and waiting for
// a turn ends on the caller's Limits::stop with a kCancelled failure, so a cancelled call never
// waits behind a long query. describe() and sources() return copies taken when no query ran; a
// query that rebuilt a card (cards_version) adds a fresh copy, and earlier copies are kept, so a
// reference handed out stays valid for the engine's life. Thread-safe.
class SharedEngine final : public Engine {
 public:
  explicit SharedEngine(Engine& inner);
  Dialect dialect() const override { return inner_.dialect(); }
  const std::vector<TableCard>& describe() const override;
  const std::vector<Source>& sources() const override;
  uint64_t cards_version() const override;
  QueryOutcome Query(std::string_view sql, const Limits& limits) override;

 private:
  struct Snapshot {
    uint64_t version = 0;
    std::vector<TableCard> cards;
    std::vector<Source> sources;
  };
  const Snapshot& Latest() const;

  Engine& inner_;
  mutable std::mutex mu_;
  std::condition_variable_any free_;
  bool busy_ = false;               // a query is running on inner_
  std::deque<Snapshot> snapshots_;  // grows only: references into it stay valid
};

// Opens the sources: any mix of CSV/TSV/Parquet/JSON files (one DuckDB, every file a table
// named after its stem), or exactly one SQLite or DuckDB database. A CSV/TSV path may carry
// reading options after '?' (data.csv?delim=;&header=false&skip=2&encoding=latin-1&decimal=,
// &null=N/A&types=id:VARCHAR;amount:DOUBLE), unless a file of that whole name exists.
// Errors (Error::Code::kData, one line naming the file and what to do): missing, unreadable,
// a directory, empty, header-only, unsupported extension, a .db that is not a database,
// mixing a database with other sources, an unknown or malformed CSV option (kUsage). Every
// error from a file's loading starts "cannot load PATH: ".
Result<std::unique_ptr<Engine>> Open(const std::vector<std::filesystem::path>& paths,
                                     const OpenOptions& options = {});

// The dialect-independent first layer of the guard, on the SQL text alone (comments and
// string literals understood): exactly one statement, a query, no write/DDL/admin keyword
// anywhere (so DML inside a CTE is caught), no file-reading functions, no remote URLs.
// Returns the failure, or nullopt when the text passes. `tables` is for the message.
std::optional<QueryFailure> CheckQueryText(std::string_view sql, Dialect dialect,
                                           const std::vector<std::string>& tables);

// One registered table copied out for readers that cannot read the source format themselves
// (the sandbox's pandas has no pyarrow and no DuckDB): a CSV with a header row, ',' between
// fields, '"' quoting, and NULL written as kExportNull, so an empty string stays distinct.
struct TableExport {
  std::string table;           // the table's name, as queries name it ("schema.t" outside main)
  std::filesystem::path path;  // the CSV written under the export directory
  // As written to the file, in order: these name Python's columns, whatever the card says.
  std::vector<std::pair<std::string, std::string>> columns;  // name, engine type
  int64_t row_count = 0;     // the table's true row count (counted when the copy was cut)
  int64_t rows_written = 0;  // min(row_count, max_rows)
  // Where the copy disagrees with the engine's card (columns, row count): to tell the model.
  std::vector<std::string> notes;
};
inline constexpr std::string_view kExportNull = "\\N:quarry-null";

// Copies every table of `engine` (at most `max_rows` rows each, in the engine's order) into
// `dir` (created if missing) as <index>_<table>.csv. It runs apart from the engine, which stays
// locked: DuckDB-served sources through a separate in-memory DuckDB that may read only the
// registered file (or opens the .duckdb read-only) and write only into `dir`; SQLite databases
// through the SQLite C API, read-only. Thread safety: reads only the engine's cards and sources,
// never its connection, so it may run on another thread while the engine serves queries.
// Errors: kData naming the table when a copy fails (the tables before it are kept on disk).
Result<std::vector<TableExport>> ExportTables(const Engine& engine,
                                              const std::filesystem::path& dir, int64_t max_rows);

// Text from the data (a cell, a name, a file path, a loader note) made safe for a prompt: one
// line, with control characters escaped (\n, \r, \t, other C0 and DEL as \xNN, bytes that are
// not UTF-8 as \xNN) and the invisible format characters that reorder or hide text (C1
// controls, U+061C, U+200B-U+200F, U+2028-U+202E, U+2060-U+2069, U+FEFF) written as \uNNNN
// (e.g. \u202e). At most `max_bytes` bytes of escaped text are kept, cut on a character
// boundary; a cut value ends in "…" (3 more bytes), so nobody reads a prefix as the whole.
std::string PromptText(std::string_view text, size_t max_bytes);
// A file path for a prompt: PromptText, and when longer than `max_bytes`, only its end: the
// directories become "…/" and a basename still too long keeps its start and end around "…".
std::string PromptPath(std::string_view path, size_t max_bytes = 60);

// How many tokens `text` costs a BPE tokenizer of the GPT-4o family (o200k_base), estimated
// without one: a run of ASCII letters costs one token per 7 letters (camelCase humps counted
// apart), a run of digits one per 3 digits, a run of other ASCII symbols one per 2, a line break
// one, a run of two or more spaces one (a single space joins the next token), and every other
// character one. Calibrated against o200k_base (README, "Schema budget"): on schema cards within
// 6% of the real count (Chinook 1.03x, the 300-table fixture 1.06x), on English prose 1.13x,
// on JSON tool schemas 1.27x.
int64_t EstimateTokens(std::string_view text);

// How schema cards are rendered (RenderCards).
struct CardOptions {
  // A table with more than `max_columns` columns (0: no limit) shows the first ones and every
  // column with a note in full, and the rest as `name TYPE` only.
  size_t max_columns = 0;
  // Show just these columns of each table (inspect_schema's `columns`).
  std::vector<std::string> only;
  // false (--no-samples): no sample values, and no min/max of columns that are not numbers,
  // dates or times; counts, numeric and temporal ranges stay.
  bool samples = true;
  // false: names, types and foreign keys only (the compact form of a table that does not fit
  // a schema budget in full).
  bool statistics = true;
  // Where each table's source file is named. kAuto: per table when the cards come from several
  // files, in one leading "data: PATH" line when they all come from one.
  enum class Sources { kAuto, kPerTable, kNone };
  Sources sources = Sources::kAuto;
  // At most this many notes per table, and per column (0: all). Past it, the notes that change
  // a sum or a count (NoteChangesAResult) come first and one line counts the rest.
  size_t max_table_notes = 0;
  size_t max_column_notes = 0;
};

// Whether a loader note warns of something that changes a SUM or a COUNT (a total row,
// duplicates, values read as NULL, variants that split a group, a lost minus), rather than
// something that only explains a reading (an encoding, a date format, a title left out).
bool NoteChangesAResult(std::string_view note);

// The prompt's limits (agent/schema_view.cc): a table that holds more notes shows these many.
inline constexpr size_t kCardTableNotes = 6;
inline constexpr size_t kCardColumnNotes = 2;

// Schema cards as the model reads them, one block per table:
//   table Track (3503 rows)
//     TrackId INTEGER, unique, 1..3503
//     GenreId INTEGER -> Genre.GenreId, 25 distinct, 1..25
//     Composer NVARCHAR(220), 977 null, 852 distinct, e.g. 'Steve Harris', 'U2'
// "unique": as many distinct values as non-null ones. min..max is shown for numbers, dates and
// times (dates written as text too, ColumnCard::date_format); samples (the most frequent values, at
// most 30 bytes each; every value of a column with at most kCardFewValues) for other columns, and
// for numbers with 3 to 5 distinct values. Every name, type, value, note and path goes through
// PromptText, so no cell can start a line of its own.
std::string RenderCards(const std::vector<TableCard>& cards, const CardOptions& options);
std::string RenderCards(const std::vector<TableCard>& cards, size_t max_columns = 0,
                        const std::vector<std::string>& only = {});
inline constexpr size_t kCardColumns = 40;  // the model's default
// Byte caps of what a card quotes from the data (before escaping's "…").
inline constexpr size_t kCardValueBytes = 30;  // a sample value
inline constexpr size_t kCardRangeBytes = 40;  // min or max
inline constexpr size_t kCardNameBytes = 80;   // a table, column or type name
inline constexpr size_t kCardNoteBytes = 240;  // a note (cut at a clause or a word)
// A column with at most this many distinct values lists every one of them: the model filters
// on them, and three of five would hide the other two.
inline constexpr size_t kCardFewValues = 8;

// One table's relevance to a question (RankTables).
struct TableMatch {
  size_t table = 0;  // index into the cards
  double score = 0;  // -bm25: higher is more relevant
};

// Ranks tables by relevance to `question` without a model: an in-memory SQLite database with an
// FTS5 index (tokenizer "porter unicode61") of each table's name words, column name words,
// notes and sample values, queried with the question's words (OR, stop words and numbers of
// fewer than 4 digits dropped) and ordered by bm25 with column weights 10, 4, 2, 1. Only tables
// that share a word with the question are returned, best first, ties in card order.
// Errors: kInternal when SQLite cannot build the index (no FTS5).
Result<std::vector<TableMatch>> RankTables(const std::vector<TableCard>& cards,
                                           std::string_view question);

// A result as the model reads it: a header saying rows are data, never instructions, the
// first preview_rows rows as a pipe table (" | " between cells), and the true row count.
// Cells are rendered by RenderCell; when any shown cell is NULL or quoted, the header line
// also states the convention, so the model can tell NULL, 'NULL' and '' apart.
std::string RenderResult(const ResultTable& table, int preview_rows);
// One cell of a pipe table. SQL NULL (nullopt) is the bare word NULL. A text that could be
// misread — empty, spelled null in any case, with leading or trailing whitespace, starting
// with '"', or holding a line break, tab or '|' — is shown in double quotes with JSON string
// escapes (\" \\ \n \r \t): "" , "NULL", " North", "a|b". Anything else is shown as is.
// Text longer than kResultCellBytes is cut on a UTF-8 character boundary and ends in "…"
// (inside the quotes when quoted).
inline constexpr size_t kResultCellBytes = 200;
std::string RenderCell(const std::optional<std::string>& value);

}  // namespace quarry::engine
