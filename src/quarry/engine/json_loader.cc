// The JSON loader: read_json_auto's reading, judged. Its sniffer makes a column of integers
// DOUBLE as soon as one is past 64 bits, which rounds 98765432109876543210987 to
// 9.876543210987654e22 and merges ids that differ in their last digits. Such a column is read
// again with every value kept exact, as the CSV loader does, with a note.
#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

Result<CsvPlan> PlanJson(const RunRows& run, const std::string& abs_path) {
  const std::string lit = QuoteLiteral(abs_path);
  CsvPlan plan;
  plan.select = "SELECT * FROM read_json_auto(" + lit + ")";
  // A file DuckDB cannot read fails where the view is made, with the message it always had.
  auto described = run("DESCRIBE " + plan.select);
  if (!described) return plan;
  std::vector<std::pair<std::string, std::string>> columns;
  std::vector<size_t> doubles;
  for (const auto& row : *described) {
    if (row.size() < 2 || !row[0] || !row[1]) return plan;
    if (*row[1] == "DOUBLE") doubles.push_back(columns.size());
    columns.emplace_back(*row[0], *row[1]);
  }
  if (doubles.empty()) return plan;
  auto reader = [&](const std::vector<std::pair<std::string, std::string>>& cols) {
    std::string spec;
    for (const auto& [name, type] : cols) {
      spec += (spec.empty() ? "" : ", ") + QuoteLiteral(name) + ": " + QuoteLiteral(type);
    }
    return "read_json(" + lit + ", columns = {" + spec + "})";
  };
  // The DOUBLE columns as the file writes them: DuckDB keeps a number's own text as VARCHAR.
  auto as_text = columns;
  std::string sql;
  for (size_t i : doubles) {
    as_text[i].second = "VARCHAR";
    const std::string v = "trim(" + QuoteIdent(columns[i].first) + ")";
    sql += std::string(sql.empty() ? "" : ", ") + "count(" + v + "), count_if(regexp_full_match(" +
           v + ", '-?[0-9]+')), max(length(ltrim(" + v + ", '-')))";
  }
  auto counts = run("SELECT " + sql + " FROM " + reader(as_text));
  if (!counts || counts->size() != 1) return plan;
  const auto& row = counts->front();
  auto num = [&](size_t k) {
    return k < row.size() && row[k] ? std::stoll(*row[k]) : int64_t{0};
  };
  auto exact = columns;
  bool changed = false;
  for (size_t d = 0; d < doubles.size(); ++d) {
    const int64_t values = num(3 * d), integers = num(3 * d + 1), digits = num(3 * d + 2);
    // Only integers, and DOUBLE: some are past 64 bits (a BIGINT would have held them all).
    if (values == 0 || integers != values) continue;
    const std::string& name = columns[doubles[d]].first;
    changed = true;
    if (digits > 38) {
      exact[doubles[d]].second = "VARCHAR";
      plan.column_notes[name].push_back("integers longer than 38 digits: kept exact as text; "
                                        "compare them as strings, never as numbers");
    } else {
      exact[doubles[d]].second = "HUGEINT";
      plan.column_notes[name].push_back("integers past 64 bits: kept exact as HUGEINT (a DOUBLE "
                                        "would round them and merge distinct ids)");
    }
  }
  if (!changed) return plan;
  const std::string select = "SELECT * FROM " + reader(exact);
  // The explicit reading must read what the automatic one did; if it cannot, keep that one.
  if (!run("DESCRIBE " + select)) {
    plan.column_notes.clear();
    return plan;
  }
  plan.select = select;
  return plan;
}

}  // namespace quarry::engine::internal
