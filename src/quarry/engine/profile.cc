// One-pass profiling for DuckDB tables: the row count and, per column, nulls, distinct values,
// min/max and the most frequent values, all in one query. A 1,000-column file is one
// scan, not 2,000.
#include <nlohmann/json.hpp>

#include "quarry/engine/card_notes_internal.h"
#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

std::vector<ColumnInfo> DescribeInto(TableCard& card, const Rows& describe, const CsvPlan* plan) {
  std::vector<ColumnInfo> columns;
  if (plan) card.notes = plan->table_notes;
  for (const auto& row : describe) {
    const std::string type = row.size() > 1 ? row[1].value_or("") : "";
    // min/max mean nothing for nested values and blobs; they are compared as text instead.
    const bool nested = type.find('[') != std::string::npos || type.starts_with("STRUCT") ||
                        type.starts_with("MAP") || type.starts_with("UNION") || type == "BLOB";
    columns.push_back({row.empty() ? "" : row[0].value_or(""), type, !nested});
    ColumnCard col;
    col.name = columns.back().name;
    col.type = type;
    if (plan) {
      if (auto it = plan->column_notes.find(col.name); it != plan->column_notes.end()) {
        col.notes = it->second;
      }
    }
    card.columns.push_back(std::move(col));
  }
  return columns;
}

Result<void> ProfileDuckDb(TableCard& card, const std::string& sql_name,
                           const std::vector<ColumnInfo>& columns, const RunRows& run, bool exact) {
  // Columns go in groups of a few hundred aggregates: DuckDB plans one statement with
  // thousands of them in far more memory than the extra scans cost.
  constexpr size_t kColumnsPerQuery = 96;
  const std::string few = std::to_string(kCardFewValues);
  auto as_int = [](const std::optional<std::string>& v) -> int64_t {
    return v ? std::stoll(*v) : 0;
  };
  for (size_t first = 0; first == 0 || first < columns.size(); first += kColumnsPerQuery) {
    const size_t last = std::min(columns.size(), first + kColumnsPerQuery);
    std::string sql = "SELECT count(*)";
    for (size_t i = first; i < last; ++i) {
      const ColumnInfo& c = columns[i];
      const std::string q = QuoteIdent(c.name);
      // Values are compared typed (ties broken by value) where the type has an order, as text
      // otherwise; histogram is exact but keeps every distinct value, so large tables use
      // DuckDB's approximate top-k and distinct count instead.
      const std::string v = c.ordered ? q : "CAST(" + q + " AS VARCHAR)";
      sql += ", count(" + q + ")";
      sql += exact ? ", count(DISTINCT " + v + ")" : ", approx_count_distinct(" + v + ")";
      if (c.ordered) sql += ", CAST(min(" + q + ") AS VARCHAR), CAST(max(" + q + ") AS VARCHAR)";
      if (exact) {
        sql +=
            ", CAST(to_json(list_transform(list_slice(list_sort(list_transform(map_entries("
            "histogram(" +
            v + ")), e -> {'n': -e.value, 'k': e.key})), 1, " + few +
            "), "
            "e -> CAST(e.k AS VARCHAR))) AS VARCHAR)";
      } else {
        sql += ", CAST(to_json(approx_top_k(CAST(" + q + " AS VARCHAR), " + few + ")) AS VARCHAR)";
      }
    }
    auto stats = run(sql + " FROM " + sql_name);
    if (!stats) return std::unexpected(stats.error());
    if (stats->size() != 1) return Fail(Error::Code::kInternal, "profile returned no row");
    const auto& row = stats->front();
    size_t k = 0;
    card.row_count = as_int(row[k++]);
    for (size_t i = first; i < last; ++i) {
      ColumnCard& col = card.columns[i];
      col.null_count = card.row_count - as_int(row[k++]);
      col.distinct_count = as_int(row[k++]);
      col.distinct_approx = !exact;
      if (columns[i].ordered) {
        col.min = row[k++];
        col.max = row[k++];
      }
      const auto top = nlohmann::json::parse(row[k++].value_or("[]"), nullptr, false);
      col.samples.clear();
      if (top.is_array()) {
        for (const auto& s : top) {
          if (s.is_string()) col.samples.push_back(s.get<std::string>());
        }
      }
      KeepSamples(col);
      col.profiled = true;
    }
  }
  card.profiled = true;
  if (auto r = NoteNumericSentinels(card, sql_name, run); !r) return r;
  return NoteTextDates(card, sql_name, run, Dialect::kDuckDB);
}

}  // namespace quarry::engine::internal
