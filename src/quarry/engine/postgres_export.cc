// ExportTables for PostgreSQL: a connection of its own from the engine's stored spec (the
// engine's stays free for queries), each table read in its own READ ONLY transaction, a row at a
// time, into a CSV pandas reads: numbers and booleans bare, everything else quoted, NULL as
// kExportNull.
#include <fstream>

#include "quarry/engine/postgres_internal.h"

namespace quarry::engine::internal {
namespace {

namespace fs = std::filesystem;

// Copies one table; `e` gets its columns, rows_written and row_count.
Result<void> CopyTable(PGconn* conn, const std::string& sql_name, const TableCard& card,
                       int64_t max_rows, TableExport& e) {
  PgResultPtr begin(PQexec(conn, "BEGIN READ ONLY; SET LOCAL statement_timeout = '120s'"));
  struct Rollback {
    PGconn* conn;
    ~Rollback() { PgResultPtr r(PQexec(conn, "ROLLBACK")); }
  } rollback{conn};
  const std::string sql = "SELECT * FROM " + sql_name + " LIMIT " + std::to_string(max_rows);
  if (!PQsendQueryParams(conn, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) {
    return Fail(Error::Code::kData, std::string("postgresql: ") + PQerrorMessage(conn));
  }
  PQsetSingleRowMode(conn);
  std::ofstream file(e.path, std::ios::binary | std::ios::trunc);
  std::string line;
  std::string error;
  bool header = false;
  while (PGresult* raw = PQgetResult(conn)) {
    PgResultPtr res(raw);
    const ExecStatusType status = PQresultStatus(raw);
    if (status != PGRES_SINGLE_TUPLE && status != PGRES_TUPLES_OK) {
      if (error.empty()) {
        const char* m = PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY);
        error = m ? m : PQerrorMessage(conn);
      }
      continue;
    }
    if (!header) {
      header = true;
      for (int c = 0; c < PQnfields(raw); ++c) {
        const std::string name = PQfname(raw, c);
        std::string type;
        for (const ColumnCard& col : card.columns) {
          if (col.name == name) type = BaseCardType(col.type);
        }
        e.columns.emplace_back(name, type);
        if (c) line += ',';
        AppendCsvQuoted(line, name);
      }
      line += '\n';
    }
    if (status == PGRES_TUPLES_OK) continue;
    ++e.rows_written;
    for (int c = 0; c < PQnfields(raw); ++c) {
      if (c) line += ',';
      if (PQgetisnull(raw, 0, c)) {
        line += kExportNull;
        continue;
      }
      const auto [kind, text] =
          PgCell(PQftype(raw, c), PQgetvalue(raw, 0, c), PQgetlength(raw, 0, c));
      const bool bare = kind == CellKind::kInteger || kind == CellKind::kReal ||
                        kind == CellKind::kDecimal || kind == CellKind::kBoolean;
      if (bare) {
        line += text;
      } else {
        AppendCsvQuoted(line, text);
      }
    }
    line += '\n';
    if (line.size() > (1 << 20)) {
      file << line;
      line.clear();
    }
  }
  file << line;
  file.close();
  if (!error.empty()) return Fail(Error::Code::kData, "postgresql: " + error);
  if (!file) return Fail(Error::Code::kData, "cannot write " + e.path.string());
  e.row_count = e.rows_written;
  if (e.rows_written >= max_rows) {
    // The true count, when the server gives it within the timeout; else the planner's estimate.
    e.row_count = std::max(card.row_count, e.rows_written);
    auto counted = PgRows(conn, "SELECT count(*) FROM " + sql_name);
    if (counted && !counted->empty() && (*counted)[0][0]) {
      e.row_count = std::atoll((*counted)[0][0]->c_str());
    } else {
      e.notes.push_back("table " + e.table + ": the row count is the planner's estimate");
    }
  }
  return {};
}

}  // namespace

Result<std::vector<TableExport>> ExportPostgres(const Engine& engine, const fs::path& dir,
                                                int64_t max_rows) {
  const auto* pg = dynamic_cast<const PostgresEngine*>(&engine);
  if (!pg) return Fail(Error::Code::kInternal, "export: not a PostgreSQL engine");
  auto conn = ConnectPg(pg->spec());
  if (!conn) return Fail(Error::Code::kData, "export: " + conn.error().message);
  std::vector<TableExport> out;
  const auto& cards = engine.describe();
  for (size_t i = 0; i < cards.size() && i < pg->sql_names_.size(); ++i) {
    TableExport e;
    e.table = cards[i].name;
    e.path = dir / ExportFileName(i, cards[i].name);
    if (auto copied = CopyTable(conn->get(), pg->sql_names_[i], cards[i], max_rows, e); !copied) {
      return Fail(Error::Code::kData,
                  "export of table " + cards[i].name + " failed: " + copied.error().message);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace quarry::engine::internal
