// SQLite behind the guard: opened read-only, extension loading off, defensive mode, no
// attached databases, and an authorizer that allows reads only (plus what SQLite's own
// virtual-table modules prepare inside a read); a progress handler enforces the wall-clock
// timeout. Results keep every digit of a REAL; the cards' column notes are sqlite_notes.cc's.
#include <sqlite3.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "quarry/engine/card_notes_internal.h"
#include "quarry/engine/engine_internal.h"
#include "quarry/engine/isolated_query.h"

namespace quarry::engine::internal {
namespace {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using SqlitePtr = std::unique_ptr<sqlite3, SqliteCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Functions that reach outside the database even in a SELECT.
bool ForbiddenFunction(const char* name) {
  for (const char* f : {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}) {
    if (name && sqlite3_stricmp(name, f) == 0) return true;
  }
  return false;
}

// `classes`: a bit per SQLite storage class seen (1 << SQLITE_INTEGER, ...), NULL excluded.
std::string StorageName(unsigned classes) {
  switch (classes) {
    case 0:
      return "NULL";
    case 1u << SQLITE_INTEGER:
      return "INTEGER";
    case 1u << SQLITE_FLOAT:
      return "REAL";
    case 1u << SQLITE_TEXT:
      return "TEXT";
    case 1u << SQLITE_BLOB:
      return "BLOB";
    default:
      return "mixed";
  }
}

// The longest string or blob a SQLite value may be (SQLITE_LIMIT_LENGTH).
constexpr int kMaxValueBytes = 128 << 20;

class SqliteEngine final : public Engine {
 public:
  Dialect dialect() const override { return Dialect::kSQLite; }
  const std::vector<TableCard>& describe() const override { return cards_; }
  const std::vector<Source>& sources() const override { return sources_; }

  QueryOutcome Query(std::string_view sql, const Limits& limits) override {
    if (auto v = CheckQueryText(sql, Dialect::kSQLite, table_names_)) return std::unexpected(*v);
    if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
    return QueryPastTextGuard(sql, limits);
  }

  // Everything but the text guard, in the query process (isolated_query.h): a scalar call
  // (replace() over an 8 MB blob) is never interrupted by the progress handler.
  QueryOutcome QueryPastTextGuard(std::string_view sql, const Limits& limits) {
    return process_.Run(sql, limits, {});
  }

  // In the child: the authorizer, the read-only check, the timeout, the cap.
  QueryOutcome Execute(std::string_view sql, const Limits& limits) {
    denied_.clear();
    first_action_ = true;
    query_statement_ = false;
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    const int rc =
        sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw, &tail);
    StmtPtr stmt(raw);
    if (rc != SQLITE_OK) return std::unexpected(PrepareFailure(rc, sql));
    if (!stmt)
      return std::unexpected(QueryFailure{FailureClass::kSyntaxError, "", "the SQL is empty"});
    if (HasMoreStatements(tail, sql.data() + sql.size())) {
      return std::unexpected(QueryFailure{FailureClass::kGuardViolation, "single_statement",
                                          "guard: exactly one statement is allowed"});
    }
    if (!sqlite3_stmt_readonly(stmt.get())) {
      return std::unexpected(QueryFailure{FailureClass::kGuardViolation, "read_only",
                                          "guard: only a read-only SELECT query may run"});
    }
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.timeout_ms);
    // The progress handler reads it every 1000 virtual machine steps: well under a millisecond.
    stop_ = limits.stop;
    const struct ClearStop {
      StopToken& stop;
      ~ClearStop() { stop = {}; }
    } clear_stop{stop_};
    ResultTable table;
    const int cols = sqlite3_column_count(stmt.get());
    std::vector<bool> declared(static_cast<size_t>(cols), false);
    for (int c = 0; c < cols; ++c) {
      table.columns.emplace_back(sqlite3_column_name(stmt.get(), c));
      const char* decl = sqlite3_column_decltype(stmt.get(), c);
      declared[static_cast<size_t>(c)] = decl && *decl;
      table.types.emplace_back(decl ? decl : "");
    }
    // Storage classes seen per column, for the type of computed columns (no declared type).
    std::vector<unsigned> seen(static_cast<size_t>(cols), 0);
    int step;
    while ((step = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      ++table.row_count;
      if (table.row_count > limits.max_rows) continue;  // count on, keep only the cap
      std::vector<std::optional<std::string>> row;
      std::vector<CellKind> kinds;
      for (int c = 0; c < cols; ++c) {
        const int type = sqlite3_column_type(stmt.get(), c);
        seen[static_cast<size_t>(c)] |= 1u << type;
        switch (type) {
          case SQLITE_NULL:
            row.emplace_back(std::nullopt);
            kinds.push_back(CellKind::kNull);
            break;
          case SQLITE_INTEGER:
            row.emplace_back(std::to_string(sqlite3_column_int64(stmt.get(), c)));
            kinds.push_back(CellKind::kInteger);
            break;
          case SQLITE_FLOAT:
            row.emplace_back(RealText(sqlite3_column_double(stmt.get(), c)));
            kinds.push_back(CellKind::kReal);
            break;
          case SQLITE_BLOB: {
            const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt.get(), c));
            const auto size = static_cast<size_t>(sqlite3_column_bytes(stmt.get(), c));
            row.emplace_back(BlobText(std::string_view(bytes ? bytes : "", size)));
            kinds.push_back(CellKind::kBlob);
            break;
          }
          default: {
            const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), c));
            row.emplace_back(std::string(text ? text : "",
                                         static_cast<size_t>(sqlite3_column_bytes(stmt.get(), c))));
            kinds.push_back(CellKind::kText);
          }
        }
      }
      table.rows.push_back(std::move(row));
      table.kinds.push_back(std::move(kinds));
    }
    if (step == SQLITE_INTERRUPT && limits.stop.stop_requested()) {
      return std::unexpected(CancelledFailure());
    }
    if (step == SQLITE_INTERRUPT) return std::unexpected(TimeoutFailure(limits.timeout_ms));
    // A denial inside a statement a virtual table prepares while running surfaces as its error.
    if ((step & 0xff) == SQLITE_AUTH || !denied_.empty()) {
      return std::unexpected(PrepareFailure(step));
    }
    if (step != SQLITE_DONE) {
      return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "",
                                          std::string("sqlite: ") + sqlite3_errmsg(db_.get())});
    }
    for (size_t c = 0; c < seen.size(); ++c) {
      if (!declared[c]) table.types[c] = StorageName(seen[c] & ~(1u << SQLITE_NULL));
    }
    return table;
  }

  // Failures at prepare time, and authorizer denials whenever they surface. `sql`, when
  // given, lets an unknown column be answered with the columns of the tables it names.
  QueryFailure PrepareFailure(int rc, std::string_view sql = {}) {
    const std::string msg = sqlite3_errmsg(db_.get());
    if ((rc & 0xff) == SQLITE_AUTH || !denied_.empty()) {
      return QueryFailure{FailureClass::kGuardViolation,
                          denied_rule_.empty() ? "read_only" : denied_rule_,
                          "guard: " + (denied_.empty() ? msg : denied_) +
                              " is not allowed: only a single read-only SELECT query may run"};
    }
    // Defensive mode refuses writes to shadow tables before the authorizer is asked.
    if (msg.find("may not be modified") != std::string::npos ||
        msg.find("readonly database") != std::string::npos) {
      return QueryFailure{FailureClass::kGuardViolation, "read_only",
                          "guard: " + msg + ": only a single read-only SELECT query may run"};
    }
    // SQLite reports unknown tables and columns at prepare time; those are not syntax errors.
    const bool syntax = msg.find("syntax error") != std::string::npos ||
                        msg.find("incomplete input") != std::string::npos ||
                        msg.find("unrecognized token") != std::string::npos;
    // SQLite names only the unknown name; DuckDB lists the candidates, and so do we.
    std::string hint;
    constexpr std::string_view kColumn = "no such column: ", kTable = "no such table: ",
                               kAmbiguous = "ambiguous column name: ";
    if (msg.starts_with(kColumn)) {
      hint = NoSuchColumnHint(std::string_view(msg).substr(kColumn.size()), sql, cards_);
    } else if (msg.starts_with(kAmbiguous)) {
      hint = AmbiguousColumnHint(std::string_view(msg).substr(kAmbiguous.size()), sql, cards_);
    } else if (msg.starts_with(kTable)) {
      hint = NoSuchTableHint(std::string_view(msg).substr(kTable.size()), cards_);
    }
    return QueryFailure{syntax ? FailureClass::kSyntaxError : FailureClass::kRuntimeError, "",
                        "sqlite: " + msg + hint};
  }

  static bool HasMoreStatements(const char* tail, const char* end) {
    for (const char* p = tail; p && p < end; ++p) {
      if (std::isspace(static_cast<unsigned char>(*p)) || *p == ';') continue;
      if (p + 1 < end && p[0] == '-' && p[1] == '-') {
        while (p < end && *p != '\n') ++p;
        continue;
      }
      if (p + 1 < end && p[0] == '/' && p[1] == '*') {
        const char* close = std::strstr(p + 2, "*/");
        if (!close || close >= end) return false;
        p = close + 1;
        continue;
      }
      return true;
    }
    return false;
  }

  // Allows reading and pure functions; records what it refused so the message can name it.
  // SQLite's own modules prepare statements of their own while a query runs (FTS5 reads
  // PRAGMA data_version, FTS4 PRAGMA page_size, R*Tree prepares its shadow-table writes when
  // it connects), and the authorizer sees those too, with no flag that says "internal". What
  // tells them apart is the user's statement itself: its first authorized action is
  // SQLITE_SELECT for a query, and SQLITE_PRAGMA for a PRAGMA statement. So those exact
  // read-only pragmas, and writes to shadow tables, pass only inside a query; a PRAGMA the user
  // writes is refused here as well as by the text guard.
  static int Authorize(void* self_ptr, int action, const char* a, const char* b, const char*,
                       const char*) {
    auto* self = static_cast<SqliteEngine*>(self_ptr);
    if (self->first_action_) {
      self->first_action_ = false;
      self->query_statement_ = action == SQLITE_SELECT;
    }
    switch (action) {
      case SQLITE_SELECT:
      case SQLITE_READ:
      case SQLITE_RECURSIVE:
        return SQLITE_OK;
      case SQLITE_FUNCTION:
        if (!ForbiddenFunction(b)) return SQLITE_OK;
        self->Deny("file_access", std::string(b) + "()");
        return SQLITE_DENY;
      case SQLITE_PRAGMA:
        if (self->query_statement_ && a && !b &&
            (sqlite3_stricmp(a, "data_version") == 0 || sqlite3_stricmp(a, "page_size") == 0)) {
          return SQLITE_OK;
        }
        self->Deny("pragma", std::string("PRAGMA ") + (a ? a : ""));
        return SQLITE_DENY;
      case SQLITE_INSERT:
      case SQLITE_UPDATE:
      case SQLITE_DELETE:
        // Prepared by a virtual table module, never run by a read: the database is open
        // read-only and defensive mode makes shadow tables read-only to SQL anyway.
        if (self->query_statement_ && a && self->shadow_tables_.contains(a)) return SQLITE_OK;
        self->Deny("read_only", "writing or changing the schema");
        return SQLITE_DENY;
      case SQLITE_ATTACH:
      case SQLITE_DETACH:
        self->Deny("attach", "ATTACH/DETACH");
        return SQLITE_DENY;
      default:
        self->Deny("read_only", "writing or changing the schema");
        return SQLITE_DENY;
    }
  }

  void Deny(std::string rule, std::string what) {
    if (denied_.empty()) {
      denied_rule_ = std::move(rule);
      denied_ = std::move(what);
    }
  }

  static int Progress(void* self_ptr) {
    auto* self = static_cast<SqliteEngine*>(self_ptr);
    return std::chrono::steady_clock::now() > self->deadline_ || self->stop_.stop_requested() ? 1
                                                                                              : 0;
  }

  // Opening: every card statement runs under the progress handler, against the deadline of the
  // table being described (StartLoadDeadline) and the open's stop token.
  // `cap`: a view's card also ends at the views' shared deadline. Returns whether earlier views
  // used part of it, so that the cap, not this view's own limit, is what bounds it.
  bool StartLoadDeadline(std::optional<std::chrono::steady_clock::time_point> cap = {}) {
    deadline_ = load_timeout_ms_ > 0
                    ? std::chrono::steady_clock::now() + std::chrono::milliseconds(load_timeout_ms_)
                    : std::chrono::steady_clock::time_point::max();
    if (!cap || *cap >= deadline_) return false;
    // The first view is bounded as any table is; the cap binds once earlier views used it.
    const bool binds = *cap + std::chrono::milliseconds(50) < deadline_;
    deadline_ = *cap;
    return binds;
  }

  Result<Rows> RunTrusted(const std::string& sql) {
    if (stop_.stop_requested()) {
      return Fail(Error::Code::kCancelled, "opening was interrupted: the caller asked it to stop");
    }
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      return Fail(Error::Code::kData, std::string("sqlite: ") + sqlite3_errmsg(db_.get()));
    }
    StmtPtr stmt(raw);
    Rows rows;
    const int cols = sqlite3_column_count(stmt.get());
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      std::vector<std::optional<std::string>> row;
      for (int c = 0; c < cols; ++c) {
        // By length, not as a C string: text may hold NUL bytes ('a\0b' is three bytes).
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), c));
        if (!t) {
          row.emplace_back(std::nullopt);
          continue;
        }
        row.emplace_back(std::string(t, static_cast<size_t>(sqlite3_column_bytes(stmt.get(), c))));
      }
      rows.push_back(std::move(row));
    }
    if (rc == SQLITE_INTERRUPT && stop_.stop_requested()) {
      return Fail(Error::Code::kCancelled, "opening was interrupted: the caller asked it to stop");
    }
    if (rc == SQLITE_INTERRUPT) {
      return Fail(Error::Code::kData, "reading it took longer than " +
                                          std::to_string(load_timeout_ms_) +
                                          " ms and was stopped; raise --timeout-ms");
    }
    if (rc != SQLITE_DONE) {
      return Fail(Error::Code::kData, std::string("sqlite: ") + sqlite3_errmsg(db_.get()));
    }
    return rows;
  }

  SqlitePtr db_;
  int64_t load_timeout_ms_ = 0;  // OpenOptions::timeout_ms, while opening
  std::vector<TableCard> cards_;
  std::vector<Source> sources_;
  std::vector<std::string> source_notes_;  // Source::notes, gathered while the cards are built
  std::vector<std::string> table_names_;
  std::set<std::string> shadow_tables_;  // e.g. docs_data, docs_idx for an FTS5 table docs
  std::string denied_;
  std::string denied_rule_;
  bool first_action_ = true;      // the next authorizer call is the statement's first
  bool query_statement_ = false;  // the user's statement began as a SELECT
  std::chrono::steady_clock::time_point deadline_{};
  StopToken stop_;  // the running query's Limits::stop
  // Last, so it is ended before the connection closes.
  QueryProcess process_{{}, [this](const IsolatedQuery& q, const ProgressFn&) {
                          return Execute(q.sql, Limits{q.timeout_ms, q.max_rows, {}});
                        }};
};

// Percent-encodes what a file: URI cannot hold literally (RFC 3986, as sqlite3 reads it).
std::string UriPath(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/-._~", c)) {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

bool HasSqliteMagic(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[16] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 16 && std::memcmp(magic, "SQLite format 3", 16) == 0;
}

// One table's card. A table or view SQLite cannot read (a view over a missing table, a
// virtual table whose module this build lacks) gets a card that says so instead of failing
// the whole database: the other tables are still worth asking about.
// A view that runs past the load timeout keeps its columns, with a note instead of statistics.
// Errors only for a stop request (kCancelled).
Result<TableCard> SqliteCard(SqliteEngine& engine, const std::string& table,
                             const std::string& source,
                             std::optional<std::chrono::steady_clock::time_point> cap = {}) {
  const bool capped = engine.StartLoadDeadline(cap);
  // What the card says of an error; advice to raise a flag is the user's (Source::notes).
  auto for_card = [&](std::string message) {
    if (TakeTimeoutAdvice(message)) {
      engine.source_notes_.push_back(table + ": " + message + std::string(kRaiseTimeout));
    }
    return message;
  };
  auto unreadable = [&](const Error& e) {
    TableCard card;
    card.name = table;
    card.source = source;
    card.notes.push_back("cannot be queried: " + for_card(e.message));
    return card;
  };
  auto info =
      engine.RunTrusted("SELECT name, type FROM pragma_table_info(" + QuoteLiteral(table) + ")");
  if (!info && info.error().code == Error::Code::kCancelled) return std::unexpected(info.error());
  if (!info) return unreadable(info.error());
  std::vector<ColumnInfo> columns;
  std::vector<ColumnExtra> extras;
  for (const auto& c : *info) {
    const std::string name = c[0].value_or("");
    const std::string type = c[1].value_or("");
    columns.push_back({name, type.empty() ? "ANY" : type, type != "BLOB"});
    // Counted in the card's statistics scan, beside the null and distinct counts.
    extras.push_back(type == "BLOB" ? ColumnExtra{}
                                    : SqliteColumnExtra(QuoteIdent(table), name, type));
  }
  if (columns.empty()) return unreadable({Error::Code::kData, "SQLite reports no columns"});
  auto card = BuildCard(
      table, QuoteIdent(table), source, columns,
      [&](const std::string& s) { return engine.RunTrusted(s); }, extras);
  if (!card && card.error().code == Error::Code::kCancelled) return std::unexpected(card.error());
  if (!card) {
    TableCard described;
    described.name = table;
    described.source = source;
    for (const ColumnInfo& c : columns) {
      ColumnCard column;
      column.name = c.name;
      column.type = c.type;
      described.columns.push_back(std::move(column));
    }
    // A view stopped at the deadline can still be queried (with a filter, a LIMIT); one that
    // fails cannot.
    const bool slow = card.error().message.find("took longer than") != std::string::npos;
    if (slow && capped) {
      const std::string budget = "the views share one opening budget of " +
                                 std::to_string(engine.load_timeout_ms_) + " ms and it ran out";
      described.notes.push_back("no statistics: " + budget);
      engine.source_notes_.push_back(table + ": no statistics: " + budget +
                                     std::string(kRaiseTimeout));
    } else {
      described.notes.push_back((slow ? "no statistics: " : "cannot be queried: ") +
                                for_card(card.error().message));
    }
    return described;
  }
  if (auto dates = NoteTextDates(
          *card, QuoteIdent(table), [&](const std::string& s) { return engine.RunTrusted(s); },
          Dialect::kSQLite);
      !dates && dates.error().code == Error::Code::kCancelled) {
    return std::unexpected(dates.error());
  }
  auto fks = engine.RunTrusted("SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(" +
                               QuoteLiteral(table) + ")");
  if (fks) {
    for (const auto& fk : *fks) {
      card->foreign_keys.push_back({fk[0].value_or(""), fk[1].value_or(""), fk[2].value_or("")});
    }
  }
  return std::move(*card);
}

}  // namespace

QueryOutcome QuerySqlitePastTextGuard(Engine& engine, std::string_view sql, const Limits& limits) {
  auto* sqlite = dynamic_cast<SqliteEngine*>(&engine);
  if (!sqlite) {
    return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "", "not a SQLite engine"});
  }
  return sqlite->QueryPastTextGuard(sql, limits);
}

Result<std::unique_ptr<Engine>> OpenSqlite(const std::filesystem::path& path,
                                           const OpenOptions& options) {
  auto source = Fingerprint(path, SourceFormat::kSqlite);
  if (!source) return std::unexpected(source.error());
  if (!HasSqliteMagic(path)) {
    return Fail(Error::Code::kData, path.string() +
                                        " is not a SQLite database (no SQLite header); "
                                        "check the file, or give CSV/Parquet/JSON files "
                                        "their own extension");
  }
  auto engine = std::make_unique<SqliteEngine>();
  sqlite3* raw = nullptr;
  // immutable=1: no locks, no -shm or -wal files next to the user's database. A database with
  // a live write-ahead log is read through it instead (mode=ro), or its newest rows would be
  // missed; that log and its -shm exist already, so nothing new appears.
  std::error_code ec;
  const auto wal = std::filesystem::path(path.string() + "-wal");
  const bool live_wal = std::filesystem::exists(wal, ec) && std::filesystem::file_size(wal, ec) > 0;
  const std::string uri = "file:" + UriPath(std::filesystem::absolute(path).string()) +
                          (live_wal ? "?mode=ro" : "?mode=ro&immutable=1");
  const int rc = sqlite3_open_v2(
      uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nullptr);
  engine->db_.reset(raw);
  if (rc != SQLITE_OK) {
    return Fail(Error::Code::kData, "cannot open " + path.string() + " as SQLite: " +
                                        (raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  sqlite3* db = engine->db_.get();
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  // A string or blob past kMaxValueBytes fails at once ("string or blob too big"): one
  // operation building a 900 MB string ran for many seconds between two progress-handler
  // checks. The heap limit is hard (the soft one only asks SQLite to free its caches): an
  // allocation past it fails the statement with "out of memory". Both limits are the
  // process's: every SQLite connection shares them.
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  sqlite3_hard_heap_limit64(options.memory_limit_mb * 1024 * 1024);
  sqlite3_soft_heap_limit64(options.memory_limit_mb * 1024 * 1024);
  // Cards evaluate views, SQL the data chose: bounded from the first statement (per table,
  // OpenOptions::timeout_ms) and stopped by OpenOptions::stop (Ctrl-C, SIGTERM).
  engine->load_timeout_ms_ = options.timeout_ms;
  engine->stop_ = options.stop;
  engine->StartLoadDeadline();
  sqlite3_progress_handler(db, 1000, &SqliteEngine::Progress, engine.get());

  // PRAGMA table_list (SQLite 3.37+) marks the shadow tables of virtual tables (FTS5's
  // docs_data, docs_idx, ...): storage the module manages, not tables of the user's. Older
  // SQLite lists everything from sqlite_schema.
  auto names = engine->RunTrusted(
      "SELECT name, type FROM pragma_table_list WHERE schema = 'main' AND "
      "type IN ('table', 'view', 'virtual', 'shadow') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
      "ORDER BY name");
  if (!names) {
    names = engine->RunTrusted(
        "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND "
        "name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name");
  }
  if (!names && names.error().code == Error::Code::kCancelled)
    return std::unexpected(names.error());
  if (!names) {
    return Fail(Error::Code::kData,
                "cannot read " + path.string() + " as SQLite: " + names.error().message);
  }
  for (const auto& row : *names) {
    if (row[1].value_or("") == "shadow") engine->shadow_tables_.insert(row[0].value_or(""));
  }
  // Views, SQL the data chose, share one timeout: six endless ones kept initialize a minute.
  std::optional<std::chrono::steady_clock::time_point> views_deadline;
  if (engine->load_timeout_ms_ > 0) {
    views_deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(engine->load_timeout_ms_);
  }
  for (const auto& row : *names) {
    const std::string table = row[0].value_or("");
    if (engine->shadow_tables_.contains(table)) continue;
    const bool view = row[1].value_or("") == "view";
    auto card = SqliteCard(*engine, table, path.string(), view ? views_deadline : std::nullopt);
    if (!card) return std::unexpected(card.error());
    engine->cards_.push_back(std::move(*card));
    engine->table_names_.push_back(table);
    source->tables.push_back(table);
  }
  if (engine->cards_.empty()) {
    return Fail(Error::Code::kData, path.string() + " has no tables: there is nothing to query");
  }
  source->notes = std::move(engine->source_notes_);
  engine->sources_.push_back(std::move(*source));
  engine->load_timeout_ms_ = 0;
  engine->stop_ = {};
  // From here on only model queries run, so the read-only authorizer goes in now.
  sqlite3_set_authorizer(db, &SqliteEngine::Authorize, engine.get());
  return engine;
}

}  // namespace quarry::engine::internal
