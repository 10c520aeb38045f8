// One guarded query on a DuckDB connection, as the query process runs it: prepared, checked to
// be a single read-only SELECT by DuckDB's own parse, run under the watchdog, and its rows
// rendered by DuckDB's VARCHAR cast with each column's type and kind.
#include <duckdb.h>

#include <algorithm>
#include <cctype>

#include "quarry/engine/duckdb_internal.h"

namespace quarry::engine::internal {

std::string DuckDbTypeName(duckdb_type t) {
  switch (t) {
    case DUCKDB_TYPE_BOOLEAN:
      return "BOOLEAN";
    case DUCKDB_TYPE_TINYINT:
      return "TINYINT";
    case DUCKDB_TYPE_SMALLINT:
      return "SMALLINT";
    case DUCKDB_TYPE_INTEGER:
      return "INTEGER";
    case DUCKDB_TYPE_BIGINT:
      return "BIGINT";
    case DUCKDB_TYPE_HUGEINT:
      return "HUGEINT";
    case DUCKDB_TYPE_FLOAT:
      return "FLOAT";
    case DUCKDB_TYPE_DOUBLE:
      return "DOUBLE";
    case DUCKDB_TYPE_DECIMAL:
      return "DECIMAL";
    case DUCKDB_TYPE_DATE:
      return "DATE";
    case DUCKDB_TYPE_TIMESTAMP:
      return "TIMESTAMP";
    case DUCKDB_TYPE_TIME:
      return "TIME";
    case DUCKDB_TYPE_INTERVAL:
      return "INTERVAL";
    case DUCKDB_TYPE_VARCHAR:
      return "VARCHAR";
    case DUCKDB_TYPE_BLOB:
      return "BLOB";
    case DUCKDB_TYPE_LIST:
      return "LIST";
    case DUCKDB_TYPE_STRUCT:
      return "STRUCT";
    case DUCKDB_TYPE_MAP:
      return "MAP";
    case DUCKDB_TYPE_UUID:
      return "UUID";
    case DUCKDB_TYPE_TIMESTAMP_TZ:
      return "TIMESTAMP WITH TIME ZONE";
    case DUCKDB_TYPE_TIMESTAMP_S:
      return "TIMESTAMP_S";
    case DUCKDB_TYPE_TIMESTAMP_MS:
      return "TIMESTAMP_MS";
    case DUCKDB_TYPE_TIMESTAMP_NS:
      return "TIMESTAMP_NS";
    case DUCKDB_TYPE_ENUM:
      return "ENUM";
    case DUCKDB_TYPE_ARRAY:
      return "ARRAY";
    case DUCKDB_TYPE_UBIGINT:
      return "UBIGINT";
    case DUCKDB_TYPE_UINTEGER:
      return "UINTEGER";
    case DUCKDB_TYPE_USMALLINT:
      return "USMALLINT";
    case DUCKDB_TYPE_UTINYINT:
      return "UTINYINT";
    case DUCKDB_TYPE_TIME_TZ:
      return "TIME WITH TIME ZONE";
    default:
      return "OTHER";
  }
}

QueryOutcome ExecuteDuckDbQuery(duckdb_connection conn, std::string_view sql, const Limits& limits,
                                const ProgressFn& progress) {
  const std::string text(sql);
  Extracted extracted;
  idx_t count = duckdb_extract_statements(conn, text.c_str(), extracted.out());
  if (count == 0) {
    const char* e = duckdb_extract_statements_error(extracted.get());
    return std::unexpected(QueryFailure{FailureClass::kSyntaxError, "", e ? e : "parse failed"});
  }
  if (count != 1) {
    // The text layer already saw one statement; DuckDB expands a PIVOT without an IN list
    // into a second query that looks up the values.
    return std::unexpected(
        QueryFailure{FailureClass::kGuardViolation, "single_statement",
                     "guard: exactly one statement is allowed, and this one expands into " +
                         std::to_string(count) +
                         " (a PIVOT needs an explicit list: PIVOT t ON c IN "
                         "('a', 'b') USING sum(x))"});
  }
  Prepared stmt;
  if (duckdb_prepare_extracted_statement(conn, extracted.get(), 0, stmt.out()) == DuckDBError) {
    std::string e = duckdb_prepare_error(stmt.get()) ? duckdb_prepare_error(stmt.get()) : "";
    return std::unexpected(
        QueryFailure{ClassifyDuckDbError(e), e.starts_with("Permission") ? "file_access" : "", e});
  }
  // The authoritative check: whatever the text looked like, DuckDB's own parse must be a query.
  if (duckdb_prepared_statement_type(stmt.get()) != DUCKDB_STATEMENT_TYPE_SELECT) {
    return std::unexpected(QueryFailure{FailureClass::kGuardViolation, "read_only",
                                        "guard: only a read-only SELECT query may run"});
  }
  // Names and types come from the query as written; the values are rendered by DuckDB
  // itself (every column cast to VARCHAR in a wrapping SELECT), because the C API's value
  // accessors do not cover every type (UUID, TIMESTAMPTZ, LIST, STRUCT, ...). The wrapper
  // only projects the guarded query's result, so it adds no capability.
  std::vector<std::string> names, types;
  std::vector<CellKind> kinds;  // per column: DuckDB's types are static
  for (idx_t c = 0; c < duckdb_prepared_statement_column_count(stmt.get()); ++c) {
    // The name is a copy the caller frees (duckdb.h); LeakSanitizer found it leaked per column.
    const char* name = duckdb_prepared_statement_column_name(stmt.get(), c);
    names.emplace_back(name ? name : "");
    duckdb_free(const_cast<char*>(name));
    const duckdb_type type = duckdb_prepared_statement_column_type(stmt.get(), c);
    types.push_back(DuckDbTypeName(type));
    switch (type) {
      case DUCKDB_TYPE_TINYINT:
      case DUCKDB_TYPE_SMALLINT:
      case DUCKDB_TYPE_INTEGER:
      case DUCKDB_TYPE_BIGINT:
      case DUCKDB_TYPE_HUGEINT:
      case DUCKDB_TYPE_UTINYINT:
      case DUCKDB_TYPE_USMALLINT:
      case DUCKDB_TYPE_UINTEGER:
      case DUCKDB_TYPE_UBIGINT:
      case DUCKDB_TYPE_UHUGEINT:
      case DUCKDB_TYPE_BIGNUM:
        kinds.push_back(CellKind::kInteger);
        break;
      case DUCKDB_TYPE_FLOAT:
      case DUCKDB_TYPE_DOUBLE:
        kinds.push_back(CellKind::kReal);
        break;
      case DUCKDB_TYPE_DECIMAL: {
        // The width and scale say whether a double can hold the values (README, --format json).
        duckdb_logical_type logical = duckdb_prepared_statement_column_logical_type(stmt.get(), c);
        if (logical) {
          types.back() = "DECIMAL(" + std::to_string(duckdb_decimal_width(logical)) + "," +
                         std::to_string(duckdb_decimal_scale(logical)) + ")";
          duckdb_destroy_logical_type(&logical);
        }
        kinds.push_back(CellKind::kDecimal);
        break;
      }
      case DUCKDB_TYPE_BOOLEAN:
        kinds.push_back(CellKind::kBoolean);
        break;
      case DUCKDB_TYPE_BLOB:
        kinds.push_back(CellKind::kBlob);
        break;
      default:
        kinds.push_back(CellKind::kText);
    }
  }
  std::string inner = text;
  while (!inner.empty() &&
         (std::isspace(static_cast<unsigned char>(inner.back())) || inner.back() == ';')) {
    inner.pop_back();
  }
  Prepared wrapped;
  const std::string wrapper = "SELECT COLUMNS(*)::VARCHAR FROM (\n" + inner + "\n)";
  const bool as_text = duckdb_prepare(conn, wrapper.c_str(), wrapped.out()) == DuckDBSuccess &&
                       duckdb_prepared_statement_column_count(wrapped.get()) == names.size();
  QueryResult result;
  duckdb_state state;
  bool timed_out = false, cancelled = false;
  {
    Watchdog watchdog(conn, limits.timeout_ms, &progress, "query", limits.stop);
    state = duckdb_execute_prepared(as_text ? wrapped.get() : stmt.get(), result.out());
    timed_out = watchdog.fired();
    cancelled = watchdog.cancelled();
  }
  if (state == DuckDBError) {
    if (cancelled) return std::unexpected(CancelledFailure());
    if (timed_out) return std::unexpected(TimeoutFailure(limits.timeout_ms));
    std::string e = result.error();
    return std::unexpected(
        QueryFailure{ClassifyDuckDbError(e), e.starts_with("Permission") ? "file_access" : "", e});
  }
  ResultTable table;
  const idx_t cols = duckdb_column_count(result.get());
  for (idx_t c = 0; c < cols; ++c) {
    table.columns.push_back(c < names.size() ? names[c] : duckdb_column_name(result.get(), c));
    table.types.push_back(c < types.size() ? types[c]
                                           : DuckDbTypeName(duckdb_column_type(result.get(), c)));
  }
  const idx_t rows = duckdb_row_count(result.get());
  table.row_count = static_cast<int64_t>(rows);
  const idx_t keep = std::min<idx_t>(rows, static_cast<idx_t>(std::max(limits.max_rows, 0)));
  // DuckDB's own VARCHAR cast already gives each DOUBLE its shortest round-trip text.
  for (idx_t r = 0; r < keep; ++r) {
    std::vector<std::optional<std::string>> row;
    std::vector<CellKind> row_kinds;
    for (idx_t c = 0; c < cols; ++c) {
      row.push_back(Cell(result.get(), c, r));
      row_kinds.push_back(!row.back()        ? CellKind::kNull
                          : c < kinds.size() ? kinds[c]
                                             : CellKind::kText);
    }
    table.rows.push_back(std::move(row));
    table.kinds.push_back(std::move(row_kinds));
  }
  return table;
}

}  // namespace quarry::engine::internal
