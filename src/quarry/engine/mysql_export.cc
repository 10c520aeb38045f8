// ExportTables for MySQL-protocol engines: a connection of its own from the engine's URL (the
// engine's stays free for queries), each table read in a READ ONLY transaction a row at a time
// (mysql_use_result), into a CSV pandas reads: numbers bare, everything else quoted, NULL as
// kExportNull.
#include <fstream>

#include "quarry/engine/mysql_internal.h"

namespace quarry::engine::internal {
namespace {

namespace fs = std::filesystem;

Result<void> CopyTable(MySqlSession& session, const TableCard& card, int64_t max_rows,
                       TableExport& e) {
  MYSQL* m = session.handle();
  std::string why;
  session.Exec(session.flavor() == MySqlFlavor::kMariaDb ? "SET SESSION max_statement_time = 120"
                                                         : "SET SESSION max_execution_time = "
                                                           "120000");
  if (!session.Exec("START TRANSACTION READ ONLY", &why)) {
    return Fail(Error::Code::kData, "mysql: " + why);
  }
  struct Rollback {
    MySqlSession& session;
    ~Rollback() {
      session.Exec("ROLLBACK");
      session.Reset();
    }
  } rollback{session};
  const std::string sql =
      "SELECT * FROM " + MySqlIdent(card.name) + " LIMIT " + std::to_string(max_rows);
  if (mysql_real_query(m, sql.data(), sql.size()) != 0) {
    return Fail(Error::Code::kData, std::string("mysql: ") + mysql_error(m));
  }
  MYSQL_RES* res = mysql_use_result(m);
  if (!res) return Fail(Error::Code::kData, std::string("mysql: ") + mysql_error(m));
  std::ofstream file(e.path, std::ios::binary | std::ios::trunc);
  std::string line;
  const unsigned n = mysql_num_fields(res);
  const MYSQL_FIELD* fields = mysql_fetch_fields(res);
  for (unsigned c = 0; c < n; ++c) {
    const std::string name(fields[c].name, fields[c].name_length);
    std::string type = MySqlTypeName(fields[c]);
    for (const ColumnCard& col : card.columns) {
      if (col.name == name) type = BaseCardType(col.type);
    }
    e.columns.emplace_back(name, type);
    if (c) line += ',';
    AppendCsvQuoted(line, name);
  }
  line += '\n';
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    const unsigned long* lengths = mysql_fetch_lengths(res);
    ++e.rows_written;
    for (unsigned c = 0; c < n; ++c) {
      if (c) line += ',';
      if (!row[c]) {
        line += kExportNull;
        continue;
      }
      const auto [kind, text] = MySqlCell(fields[c], row[c], lengths[c]);
      if (kind == CellKind::kInteger || kind == CellKind::kReal || kind == CellKind::kDecimal) {
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
  const std::string error = mysql_errno(m) ? mysql_error(m) : "";
  mysql_free_result(res);
  file << line;
  file.close();
  if (!error.empty()) return Fail(Error::Code::kData, "mysql: " + error);
  if (!file) return Fail(Error::Code::kData, "cannot write " + e.path.string());
  e.row_count = e.rows_written;
  if (e.rows_written >= max_rows) {
    e.row_count = std::max(card.row_count, e.rows_written);
    auto counted = session.Fetch("SELECT COUNT(*) FROM " + MySqlIdent(card.name));
    if (counted && !counted->empty() && (*counted)[0][0]) {
      e.row_count = std::atoll((*counted)[0][0]->c_str());
    } else {
      e.notes.push_back("table " + e.table + ": the row count is the server's estimate");
    }
  }
  return {};
}

}  // namespace

Result<std::vector<TableExport>> ExportMySql(const Engine& engine, const fs::path& dir,
                                             int64_t max_rows) {
  const auto* my = dynamic_cast<const MySqlEngine*>(&engine);
  if (!my) return Fail(Error::Code::kInternal, "export: not a MySQL engine");
  auto session = MySqlSession::Connect(my->session_->spec());
  if (!session) return Fail(Error::Code::kData, "export: " + session.error().message);
  std::vector<TableExport> out;
  const auto& cards = engine.describe();
  for (size_t i = 0; i < cards.size(); ++i) {
    TableExport e;
    e.table = cards[i].name;
    e.path = dir / ExportFileName(i, cards[i].name);
    if (auto copied = CopyTable(**session, cards[i], max_rows, e); !copied) {
      return Fail(Error::Code::kData,
                  "export of table " + cards[i].name + " failed: " + copied.error().message);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace quarry::engine::internal
