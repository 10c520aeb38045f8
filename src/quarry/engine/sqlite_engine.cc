// SQLite behind the guard: opened read-only, extension loading off, defensive mode, no
// attached databases, and an authorizer that allows reads only; a progress handler enforces
// the wall-clock timeout.
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "quarry/engine/engine_internal.h"

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

class SqliteEngine final : public Engine {
 public:
  Dialect dialect() const override { return Dialect::kSQLite; }
  const std::vector<TableCard>& describe() const override { return cards_; }
  const std::vector<Source>& sources() const override { return sources_; }

  QueryOutcome Query(std::string_view sql, const Limits& limits) override {
    if (auto v = CheckQueryText(sql, Dialect::kSQLite, table_names_)) return std::unexpected(*v);
    denied_.clear();
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    const int rc = sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw,
                                      &tail);
    StmtPtr stmt(raw);
    if (rc != SQLITE_OK) return std::unexpected(PrepareFailure(rc));
    if (!stmt) return std::unexpected(QueryFailure{FailureClass::kSyntaxError, "", "the SQL is empty"});
    if (HasMoreStatements(tail, sql.data() + sql.size())) {
      return std::unexpected(QueryFailure{FailureClass::kGuardViolation, "single_statement",
                                          "guard: exactly one statement is allowed"});
    }
    if (!sqlite3_stmt_readonly(stmt.get())) {
      return std::unexpected(QueryFailure{FailureClass::kGuardViolation, "read_only",
                                          "guard: only a read-only SELECT query may run"});
    }
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.timeout_ms);
    ResultTable table;
    const int cols = sqlite3_column_count(stmt.get());
    for (int c = 0; c < cols; ++c) {
      table.columns.emplace_back(sqlite3_column_name(stmt.get(), c));
      const char* decl = sqlite3_column_decltype(stmt.get(), c);
      table.types.emplace_back(decl ? decl : "");
    }
    int step;
    while ((step = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      ++table.row_count;
      if (table.row_count > limits.max_rows) continue;  // count on, keep only the cap
      std::vector<std::optional<std::string>> row;
      for (int c = 0; c < cols; ++c) {
        if (sqlite3_column_type(stmt.get(), c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), c));
          row.emplace_back(std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt.get(), c))));
        }
      }
      table.rows.push_back(std::move(row));
    }
    if (step == SQLITE_INTERRUPT) {
      return std::unexpected(QueryFailure{
          FailureClass::kTimeout, "",
          "the query was interrupted after " + std::to_string(limits.timeout_ms) +
              " ms: simplify it, filter earlier, or aggregate before joining"});
    }
    if ((step & 0xff) == SQLITE_AUTH) return std::unexpected(PrepareFailure(step));
    if (step != SQLITE_DONE) {
      return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "",
                                          std::string("sqlite: ") + sqlite3_errmsg(db_.get())});
    }
    return table;
  }

  // Failures at prepare time, and authorizer denials whenever they surface.
  QueryFailure PrepareFailure(int rc) {
    const std::string msg = sqlite3_errmsg(db_.get());
    if ((rc & 0xff) == SQLITE_AUTH || !denied_.empty()) {
      return QueryFailure{FailureClass::kGuardViolation, denied_rule_.empty() ? "read_only" : denied_rule_,
                          "guard: " + (denied_.empty() ? msg : denied_) +
                              " is not allowed: only a single read-only SELECT query may run"};
    }
    // SQLite reports unknown tables and columns at prepare time; those are not syntax errors.
    const bool syntax = msg.find("syntax error") != std::string::npos ||
                        msg.find("incomplete input") != std::string::npos ||
                        msg.find("unrecognized token") != std::string::npos;
    return QueryFailure{syntax ? FailureClass::kSyntaxError : FailureClass::kRuntimeError, "",
                        "sqlite: " + msg};
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
  static int Authorize(void* self_ptr, int action, const char* a, const char* b, const char*,
                       const char*) {
    auto* self = static_cast<SqliteEngine*>(self_ptr);
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
        self->Deny("pragma", std::string("PRAGMA ") + (a ? a : ""));
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
    return std::chrono::steady_clock::now() > self->deadline_ ? 1 : 0;
  }

  Result<Rows> RunTrusted(const std::string& sql) {
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
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), c));
        row.push_back(t ? std::optional<std::string>(t) : std::nullopt);
      }
      rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) {
      return Fail(Error::Code::kData, std::string("sqlite: ") + sqlite3_errmsg(db_.get()));
    }
    return rows;
  }

  SqlitePtr db_;
  std::vector<TableCard> cards_;
  std::vector<Source> sources_;
  std::vector<std::string> table_names_;
  std::string denied_;
  std::string denied_rule_;
  std::chrono::steady_clock::time_point deadline_{};
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

}  // namespace

Result<std::unique_ptr<Engine>> OpenSqlite(const std::filesystem::path& path,
                                           const OpenOptions& options) {
  auto source = Fingerprint(path, "sqlite");
  if (!source) return std::unexpected(source.error());
  if (!HasSqliteMagic(path)) {
    return Fail(Error::Code::kData, path.string() + " is not a SQLite database (no SQLite header); "
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
  const int rc = sqlite3_open_v2(uri.c_str(), &raw,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                                 nullptr);
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
  sqlite3_soft_heap_limit64(options.memory_limit_mb * 1024 * 1024);

  auto names = engine->RunTrusted(
      "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
      "ORDER BY name");
  if (!names) {
    return Fail(Error::Code::kData, "cannot read " + path.string() + " as SQLite: " +
                                        names.error().message);
  }
  for (const auto& row : *names) {
    const std::string table = row[0].value_or("");
    auto info = engine->RunTrusted("SELECT name, type FROM pragma_table_info(" +
                                   QuoteLiteral(table) + ")");
    if (!info) return std::unexpected(info.error());
    std::vector<ColumnInfo> columns;
    for (const auto& c : *info) {
      const std::string type = c[1].value_or("");
      columns.push_back({c[0].value_or(""), type.empty() ? "ANY" : type, type != "BLOB"});
    }
    auto card = BuildCard(table, QuoteIdent(table), path.string(), columns,
                          [&](const std::string& s) { return engine->RunTrusted(s); });
    if (!card) return std::unexpected(card.error());
    auto fks = engine->RunTrusted("SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(" +
                                  QuoteLiteral(table) + ")");
    if (!fks) return std::unexpected(fks.error());
    for (const auto& fk : *fks) {
      card->foreign_keys.push_back({fk[0].value_or(""), fk[1].value_or(""), fk[2].value_or("")});
    }
    engine->cards_.push_back(std::move(*card));
    engine->table_names_.push_back(table);
    source->tables.push_back(table);
  }
  if (engine->cards_.empty()) {
    return Fail(Error::Code::kData, path.string() + " has no tables: there is nothing to query");
  }
  engine->sources_.push_back(std::move(*source));
  // From here on only model queries run, so the read-only authorizer goes in now.
  sqlite3_set_authorizer(db, &SqliteEngine::Authorize, engine.get());
  sqlite3_progress_handler(db, 1000, &SqliteEngine::Progress, engine.get());
  return engine;
}

}  // namespace quarry::engine::internal
