// ExportTables for ClickHouse: each table read a row at a time through the TSV reader, under
// the same readonly=1 and limits as a query, into a CSV pandas reads: numbers bare, everything
// else quoted, NULL as kExportNull.
#include <fstream>

#include "quarry/engine/clickhouse_internal.h"

namespace quarry::engine::internal {
namespace {

namespace fs = std::filesystem;

Result<void> CopyTable(const ClickHouseEngine& engine, const TableCard& card, int64_t max_rows,
                       TableExport& e) {
  const ClickHouseClient& client = *engine.client_;
  std::ofstream file(e.path, std::ios::binary | std::ios::trunc);
  std::string line;
  std::vector<std::string> types;
  std::vector<int64_t> bytes_cells;  // per column: values that are not UTF-8 text
  TsvReader reader(
      [&](std::vector<std::string> names, std::vector<std::string> given) {
        types = std::move(given);
        for (size_t c = 0; c < names.size(); ++c) {
          e.columns.emplace_back(names[c],
                                 ClickHousePortableType(c < types.size() ? types[c] : ""));
          if (c) line += ',';
          AppendCsvQuoted(line, names[c]);
        }
        line += '\n';
      },
      [&](std::vector<std::optional<std::string>>& cells) {
        ++e.rows_written;
        for (size_t c = 0; c < cells.size(); ++c) {
          if (c) line += ',';
          if (!cells[c]) {
            line += kExportNull;
            continue;
          }
          const auto [kind, text] =
              ClickHouseCell(c < types.size() ? types[c] : "", std::move(*cells[c]));
          if (kind == CellKind::kBlob) {
            bytes_cells.resize(std::max(bytes_cells.size(), c + 1));
            ++bytes_cells[c];
          }
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
        return true;
      });
  const std::string sql =
      "SELECT * FROM " + ClickHouseIdent(card.name) + " LIMIT " + std::to_string(max_rows);
  const ClickHouseReply reply = client.Post(
      sql, ClickHouseQueryParams(client.spec(), engine.server_, 120000, ""),
      [&](std::string_view chunk) { return reader.Feed(chunk); }, {}, 122000);
  reader.Finish();
  file << line;
  file.close();
  if (reply.status != 200) {
    return Fail(Error::Code::kData,
                "clickhouse: " + (reply.status == 0 ? reply.transport
                                                    : ParseClickHouseError(reply.body).message));
  }
  if (!file) return Fail(Error::Code::kData, "cannot write " + e.path.string());
  for (size_t c = 0; c < bytes_cells.size() && c < e.columns.size(); ++c) {
    if (bytes_cells[c] == 0) continue;
    e.notes.push_back("table " + e.table + ": column " + e.columns[c].first + " has " +
                      std::to_string(bytes_cells[c]) +
                      " values that are bytes rather than UTF-8 text (or hold NUL); Python "
                      "has them as text with \\xNN escapes");
  }
  e.row_count =
      e.rows_written >= max_rows ? std::max(card.row_count, e.rows_written) : e.rows_written;
  return {};
}

}  // namespace

Result<std::vector<TableExport>> ExportClickHouse(const Engine& engine, const fs::path& dir,
                                                  int64_t max_rows) {
  const auto* ch = dynamic_cast<const ClickHouseEngine*>(&engine);
  if (!ch) return Fail(Error::Code::kInternal, "export: not a ClickHouse engine");
  std::vector<TableExport> out;
  const auto& cards = engine.describe();
  for (size_t i = 0; i < cards.size(); ++i) {
    TableExport e;
    e.table = cards[i].name;
    e.path = dir / ExportFileName(i, cards[i].name);
    if (auto copied = CopyTable(*ch, cards[i], max_rows, e); !copied) {
      return Fail(Error::Code::kData,
                  "export of table " + cards[i].name + " failed: " + copied.error().message);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace quarry::engine::internal
