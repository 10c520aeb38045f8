// ExportTables: every registered table copied to a typed CSV for the sandbox's pandas (no
// pyarrow there). The model-facing engine stays locked; a trusted, short-lived DuckDB (or the
// SQLite C API) reads the registered source read-only and writes only into the export directory.
#include <duckdb.h>
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <shared_mutex>

#include "quarry/engine/duckdb_internal.h"
#include "quarry/engine/engine_internal.h"
#include "quarry/engine/isolated_query.h"
#include "quarry/engine/postgres_internal.h"

namespace quarry::engine {

std::string internal::FileReader(SourceFormat format, const std::string& abs) {
  const std::string lit = QuoteLiteral(abs);
  if (format == SourceFormat::kParquet) return "read_parquet(" + lit + ")";
  return "read_json_auto(" + lit + ")";
}

namespace {

namespace fs = std::filesystem;
using internal::QuoteIdent;
using internal::QuoteLiteral;

// A trusted DuckDB for one export: its handles closed on every path out. Each call into DuckDB
// holds the fork gate shared (isolated_query.h): it runs beside the model's queries.
class Duck {
 public:
  Duck() = default;
  ~Duck() {
    std::shared_lock gate(internal::ForkGate());
    if (conn_) duckdb_disconnect(&conn_);
    if (db_) duckdb_close(&db_);
  }
  Duck(const Duck&) = delete;
  Duck& operator=(const Duck&) = delete;

  // path: nullptr for in-memory; otherwise that database, read-only.
  Result<void> Open(const char* path) {
    std::shared_lock gate(internal::ForkGate());
    // Extensions are never fetched; one thread is enough and leaves the other core to the run.
    internal::Config::Settings settings = {{"autoinstall_known_extensions", "false"},
                                           {"autoload_known_extensions", "false"},
                                           {"allow_community_extensions", "false"},
                                           {"memory_limit", "1GB"},
                                           {"threads", "1"}};
    if (path) settings.emplace_back("access_mode", "READ_ONLY");
    internal::Config config;
    if (auto set = config.SetAll(settings); !set) return set;
    char* err = nullptr;
    if (duckdb_open_ext(path, &db_, config.get(), &err) == DuckDBError) {
      std::string msg = err ? err : "unknown error";
      duckdb_free(err);
      return Fail(Error::Code::kData, "export: duckdb open failed: " + msg);
    }
    if (duckdb_connect(db_, &conn_) == DuckDBError) {
      return Fail(Error::Code::kInternal, "export: duckdb connect failed");
    }
    return {};
  }

  // Runs trusted SQL; returns the rows as text.
  Result<std::vector<std::vector<std::string>>> Run(const std::string& sql) {
    std::shared_lock gate(internal::ForkGate());
    duckdb_result r{};
    const bool failed = duckdb_query(conn_, sql.c_str(), &r) == DuckDBError;
    std::vector<std::vector<std::string>> rows;
    std::string error;
    if (failed) {
      error = duckdb_result_error(&r) ? duckdb_result_error(&r) : "unknown error";
    } else {
      for (idx_t row = 0; row < duckdb_row_count(&r); ++row) {
        std::vector<std::string> cells;
        for (idx_t col = 0; col < duckdb_column_count(&r); ++col) {
          char* v = duckdb_value_varchar(&r, col, row);
          cells.emplace_back(v ? v : "");
          duckdb_free(v);
        }
        rows.push_back(std::move(cells));
      }
    }
    duckdb_destroy_result(&r);
    if (failed) return Fail(Error::Code::kData, error.substr(0, 400));
    return rows;
  }

 private:
  duckdb_database db_ = nullptr;
  duckdb_connection conn_ = nullptr;
};

std::string FileName(size_t index, const std::string& table) {
  std::string safe;
  for (const char c : table) safe += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return std::to_string(index) + "_" + safe.substr(0, 60) + ".csv";
}

// The engine's own definition of the table (the CSV loader's plan), so pandas sees the rows
// and types the engine sees.
std::string ReaderFor(const Source& s, const std::string& abs) {
  return s.select.empty() ? internal::FileReader(s.format, abs) : "(" + s.select + ")";
}

const TableCard* CardFor(const Engine& engine, const std::string& table) {
  for (const TableCard& c : engine.describe()) {
    if (c.name == table) return &c;
  }
  return nullptr;
}

TableExport Planned(const TableCard& card, const fs::path& path) {
  TableExport e;
  e.table = card.name;
  e.path = path;
  return e;
}

// The copy is checked against the engine's card, so that a loader which reads a file
// differently (skipped lines, renamed columns) can never make Python disagree in silence.
void Compare(TableExport& e, const TableCard& card, int64_t max_rows) {
  bool same_columns = e.columns.size() == card.columns.size();
  for (size_t i = 0; same_columns && i < e.columns.size(); ++i) {
    same_columns = e.columns[i].first == card.columns[i].name;
  }
  if (!same_columns) {
    e.notes.push_back("table " + e.table +
                      ": Python's columns differ from the engine's; use "
                      "run_sql for figures");
  }
  const bool counted = card.row_count > 0;  // a card without a profile has no count
  if (counted && e.row_count != card.row_count) {
    e.notes.push_back("table " + e.table + ": Python's copy has " + std::to_string(e.row_count) +
                      " rows, the engine's table " + std::to_string(card.row_count) +
                      "; use run_sql for figures");
  }
  (void)max_rows;
}

// What DuckDB's CSV writer would do with these types, done explicitly: decimals become
// doubles (pandas has no decimal dtype), nested values and blobs their text.
std::string SelectList(const std::vector<std::pair<std::string, std::string>>& columns) {
  std::string list;
  for (const auto& [name, type] : columns) {
    const std::string q = QuoteIdent(name);
    const bool decimal = type.starts_with("DECIMAL") || type.starts_with("NUMERIC");
    list += (list.empty() ? "" : ", ") + (decimal ? "CAST(" + q + " AS DOUBLE) AS " + q : q);
  }
  return list.empty() ? "*" : list;
}

std::string CopyTo(const std::string& from, const TableExport& e, int64_t max_rows) {
  return "COPY (SELECT " + SelectList(e.columns) + " FROM " + from + " LIMIT " +
         std::to_string(max_rows) + ") TO " + QuoteLiteral(e.path.string()) +
         " (FORMAT csv, HEADER true, DELIMITER ',', QUOTE '\"', NULLSTR " +
         QuoteLiteral(kExportNull) + ")";
}

int64_t ToInt(const std::string& text) {
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return 0;
  }
}

// Files (and the .duckdb database) may be read, the export directory written; nothing else,
// even if a view stored in a user's .duckdb names another file.
Result<void> Confine(Duck& duck, const std::string& readable, const fs::path& dir,
                     const fs::path& entry = {}, const fs::path& copy = {}) {
  std::string sets[] = {
      // DuckDB lets every query read its temp directory, by default ./.tmp wherever quarry
      // runs, symlinks followed; the export spills nowhere.
      "SET temp_directory = ''",
      "SET allowed_directories = [" + QuoteLiteral(dir.string() + "/") + "]",
      "SET allowed_paths = [" + QuoteLiteral(readable) +
          (entry.empty() ? std::string() : ", " + QuoteLiteral(entry.string())) +
          (copy.empty() ? std::string() : ", " + QuoteLiteral(copy.string())) + "]",
      "SET enable_external_access = false",
  };
  for (const std::string& s : sets) {
    if (auto r = duck.Run(s); !r) return std::unexpected(r.error());
  }
  // Timestamps with a time zone are written in UTC, not in the machine's zone (no ICU: ignored).
  (void)duck.Run("SET TimeZone = 'UTC'");
  return {};
}

Result<std::vector<TableExport>> ExportDuckDb(const Engine& engine, const fs::path& dir,
                                              int64_t max_rows) {
  std::vector<TableExport> out;
  size_t index = 0;
  for (const Source& s : engine.sources()) {
    const std::string abs = fs::absolute(s.path).lexically_normal().string();
    Duck duck;
    const bool database = s.format == SourceFormat::kDuckDb;
    if (auto r = duck.Open(database ? abs.c_str() : nullptr); !r) return std::unexpected(r.error());
    if (!s.cache_entry.empty()) {
      // Read from the parse cache, as the engine did: the entry, read-only.
      if (auto r =
              duck.Run("ATTACH " + QuoteLiteral(s.cache_entry.string()) + " AS entry (READ_ONLY)");
          !r) {
        return std::unexpected(r.error());
      }
    }
    if (auto r = Confine(duck, abs, dir, s.cache_entry, s.read_copy); !r)
      return std::unexpected(r.error());
    std::map<std::string, std::string> sql_names;  // display name -> quoted SQL name
    if (database) {
      // The engine's naming (duckdb_engine.cc): schema.table outside main.
      auto names = duck.Run(
          "SELECT CASE WHEN schema_name = 'main' THEN table_name ELSE schema_name || '.' || "
          "table_name END, '\"' || replace(schema_name, '\"', '\"\"') || '\".\"' || "
          "replace(table_name, '\"', '\"\"') || '\"' FROM (SELECT schema_name, table_name FROM "
          "duckdb_tables() WHERE database_name = current_database() UNION SELECT schema_name, "
          "view_name FROM duckdb_views() WHERE NOT internal AND database_name = "
          "current_database())");
      if (!names) return std::unexpected(names.error());
      for (const auto& row : *names) sql_names[row[0]] = row[1];
    }
    for (const std::string& table : s.tables) {
      const TableCard* card = CardFor(engine, table);
      if (!card) continue;
      std::string from;
      if (database) {
        if (!sql_names.contains(table)) continue;
        from = sql_names[table];
      } else {
        from = s.cache_entry.empty() ? "(SELECT * FROM " + ReaderFor(s, abs) + ")"
                                     : std::string("(SELECT * FROM entry.data)");
      }
      TableExport e = Planned(*card, dir / FileName(index++, table));
      auto described = duck.Run("DESCRIBE SELECT * FROM " + from);
      if (!described) {
        return Fail(Error::Code::kData,
                    "export of table " + table + " failed: " + described.error().message);
      }
      for (const auto& row : *described) e.columns.emplace_back(row[0], row[1]);
      auto copied = duck.Run(CopyTo(from, e, max_rows));
      if (!copied) {
        return Fail(Error::Code::kData,
                    "export of table " + table + " failed: " + copied.error().message);
      }
      e.rows_written = copied->empty() || copied->front().empty() ? 0 : ToInt(copied->front()[0]);
      e.row_count = e.rows_written;
      if (e.rows_written >= max_rows) {  // cut: the true count, from the card or counted
        e.row_count = card->row_count;
        if (e.row_count <= e.rows_written) {
          auto n = duck.Run("SELECT count(*) FROM " + from);
          if (n && !n->empty()) e.row_count = ToInt(n->front()[0]);
        }
      }
      Compare(e, *card, max_rows);
      out.push_back(std::move(e));
    }
  }
  return out;
}

// One CSV field: text always quoted (so "02134" and "" survive), numbers as SQLite holds them.
void WriteField(std::string& line, sqlite3_stmt* stmt, int col) {
  switch (sqlite3_column_type(stmt, col)) {
    case SQLITE_NULL:
      line += kExportNull;
      return;
    case SQLITE_INTEGER:
      line += std::to_string(sqlite3_column_int64(stmt, col));
      return;
    case SQLITE_FLOAT: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", sqlite3_column_double(stmt, col));
      line += buf;
      return;
    }
    default: {  // text, and blobs as their bytes
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, col));
      const std::string_view text(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(stmt, col)));
      line += '"';
      for (const char c : text) line += c == '"' ? std::string("\"\"") : std::string(1, c);
      line += '"';
    }
  }
}

void WriteHeader(std::string& line,
                 const std::vector<std::pair<std::string, std::string>>& columns) {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) line += ',';
    line += '"';
    for (const char c : columns[i].first) {
      line += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    line += '"';
  }
  line += '\n';
}

Result<std::vector<TableExport>> ExportSqlite(const Engine& engine, const fs::path& dir,
                                              int64_t max_rows) {
  std::vector<TableExport> out;
  const Source& s = engine.sources().front();
  const std::string abs = fs::absolute(s.path).string();
  std::error_code ec;
  const bool live_wal = fs::exists(abs + "-wal", ec) && fs::file_size(abs + "-wal", ec) > 0;
  std::string escaped;  // a URI path: '?', '#' and '%' in a file name would end or bend it
  for (const char c : abs) {
    if (c == '?' || c == '#' || c == '%') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      escaped += buf;
    } else {
      escaped += c;
    }
  }
  const std::string uri = "file:" + escaped + (live_wal ? "?mode=ro" : "?mode=ro&immutable=1");
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)> db(raw, sqlite3_close_v2);
  if (rc != SQLITE_OK) {
    return Fail(Error::Code::kData, "export: cannot open " + s.path + " as SQLite");
  }
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  size_t index = 0;
  for (const TableCard& card : engine.describe()) {
    TableExport e = Planned(card, dir / FileName(index++, card.name));
    const std::string sql =
        "SELECT * FROM " + QuoteIdent(card.name) + " LIMIT " + std::to_string(max_rows);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      return Fail(Error::Code::kData,
                  "export of table " + card.name + " failed: " + sqlite3_errmsg(raw));
    }
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt(st, sqlite3_finalize);
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const char* name = sqlite3_column_name(st, c);
      std::string type;
      for (const ColumnCard& col : card.columns) {
        if (name && col.name == name) type = col.type;
      }
      e.columns.emplace_back(name ? name : "", type);
    }
    std::ofstream file(e.path, std::ios::binary | std::ios::trunc);
    std::string line;
    WriteHeader(line, e.columns);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      ++e.rows_written;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        if (c) line += ',';
        WriteField(line, st, c);
      }
      line += '\n';
      if (line.size() > (1 << 20)) {
        file << line;
        line.clear();
      }
    }
    file << line;
    file.close();
    if (step != SQLITE_DONE || !file) {
      return Fail(Error::Code::kData,
                  "export of table " + card.name +
                      " failed: " + (step != SQLITE_DONE ? sqlite3_errmsg(raw) : "write error"));
    }
    e.row_count = e.rows_written;
    if (e.rows_written >= max_rows) {
      e.row_count = card.row_count;
      sqlite3_stmt* count = nullptr;
      const std::string count_sql = "SELECT count(*) FROM " + QuoteIdent(card.name);
      if (e.row_count <= e.rows_written &&
          sqlite3_prepare_v2(raw, count_sql.c_str(), -1, &count, nullptr) == SQLITE_OK) {
        if (sqlite3_step(count) == SQLITE_ROW) e.row_count = sqlite3_column_int64(count, 0);
      }
      sqlite3_finalize(count);
    }
    Compare(e, card, max_rows);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

Result<std::vector<TableExport>> ExportTables(const Engine& engine, const fs::path& dir,
                                              int64_t max_rows) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Fail(Error::Code::kInternal, "cannot create " + dir.string() + ": " + ec.message());
  const fs::path abs = fs::absolute(dir).lexically_normal();
  if (engine.sources().empty()) return std::vector<TableExport>{};
  if (engine.dialect() == Dialect::kPostgreSQL)
    return internal::ExportPostgres(engine, abs, max_rows);
  if (engine.dialect() == Dialect::kMySQL) return internal::ExportMySql(engine, abs, max_rows);
  if (engine.dialect() == Dialect::kClickHouse) {
    return internal::ExportClickHouse(engine, abs, max_rows);
  }
  return engine.dialect() == Dialect::kSQLite ? ExportSqlite(engine, abs, max_rows)
                                              : ExportDuckDb(engine, abs, max_rows);
}

}  // namespace quarry::engine
