// Every definition run against the data (knowledge.h, Check), through the engine's guard: what
// no longer exists, what no longer runs, and verified queries whose result has changed.
#include <algorithm>
#include <map>

#include "quarry/common/sha256.h"
#include "quarry/common/text.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::knowledge {

namespace {

// Rows a verified query may return and still be fingerprinted whole.
constexpr int kMaxFingerprintRows = 100000;

std::string Quote(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The engine's tables by lower-case name, each with its columns' lower-case names.
using Catalog = std::map<std::string, std::pair<std::string, std::vector<std::string>>>;

Catalog CatalogOf(const engine::Engine& engine) {
  Catalog out;
  for (const auto& card : engine.describe()) {
    std::vector<std::string> columns;
    for (const auto& c : card.columns) columns.push_back(Lower(c.name));
    out[Lower(card.name)] = {card.name, std::move(columns)};
  }
  return out;
}

// "" when table.column exists, else what is missing.
std::string Missing(const Catalog& catalog, const std::string& table_column) {
  const size_t dot = table_column.rfind('.');
  if (dot == std::string::npos) return "'" + table_column + "' is not table.column";
  const std::string table = table_column.substr(0, dot), column = table_column.substr(dot + 1);
  auto it = catalog.find(Lower(table));
  if (it == catalog.end()) return "table '" + table + "' does not exist";
  if (std::ranges::find(it->second.second, Lower(column)) == it->second.second.end()) {
    return "column '" + column + "' of " + table + " does not exist";
  }
  return "";
}

}  // namespace

ResultFingerprint Fingerprint(const engine::ResultTable& result) {
  Sha256 digest;
  for (const auto& c : result.columns) digest.Update(c + "\x1f");
  digest.Update("\x1e");
  for (const auto& row : result.rows) {
    for (const auto& cell : row) digest.Update(cell ? "v" + *cell + "\x1f" : std::string("n\x1f"));
    digest.Update("\x1e");
  }
  auto hex = digest.Hex();
  return {result.row_count, hex ? *hex : ""};
}

std::vector<Finding> Check(const Knowledge& k, engine::Engine& engine,
                           const engine::Limits& limits) {
  const Catalog catalog = CatalogOf(engine);
  std::vector<Finding> out;
  auto run = [&](const std::string& sql, int max_rows) {
    engine::Limits l = limits;
    l.max_rows = max_rows;
    return engine.Query(sql, l);
  };
  // Rules go first into every prompt; one that does not fit even so is never given.
  const Selection empty = Retrieve(k, "", kDefaultBudgetTokens);
  for (const Rule& r : k.rules) {
    const std::string label = "rule " + r.name + " (" + r.origin.file + ")";
    Finding f{"rule " + r.name, r.origin, "", false};
    if (std::ranges::find(empty.left_out, label) != empty.left_out.end()) {
      f.problem = "does not fit the knowledge budget of " + std::to_string(kDefaultBudgetTokens) +
                  " tokens after the rules before it, so no question is given it: shorten it "
                  "(about " +
                  std::to_string(engine::EstimateTokens(r.text)) + " tokens now)";
    }
    out.push_back(std::move(f));
  }
  for (const TableDoc& t : k.tables) {
    Finding f{"table " + t.table, t.origin, "", false};
    auto it = catalog.find(Lower(t.table));
    if (it == catalog.end()) {
      f.problem = "table '" + t.table + "' does not exist";
    } else {
      for (const ColumnDoc& c : t.columns) {
        if (std::ranges::find(it->second.second, Lower(c.name)) == it->second.second.end()) {
          f.problem = "column '" + c.name + "' of " + t.table + " does not exist";
          break;
        }
      }
    }
    out.push_back(std::move(f));
  }
  for (const Metric& m : k.metrics) {
    Finding f{"metric " + m.name, m.origin, "", false};
    auto it = catalog.find(Lower(m.table));
    if (it == catalog.end()) {
      f.problem = "table '" + m.table + "' does not exist";
    } else {
      // Each part in parentheses on lines of its own: a comment or a FROM inside the
      // definition breaks the statement instead of replacing the rest of it.
      const std::string sql = "SELECT (\n" + m.sql + "\n) AS value\nFROM " +
                              Quote(it->second.first) +
                              (m.filter.empty() ? "" : "\nWHERE (\n" + m.filter + "\n)");
      if (auto r = run(sql, 1); !r) {
        f.problem = "does not run: " + r.error().message;
      } else if (r->row_count != 1) {
        f.problem = "is not an aggregate: it gives " + std::to_string(r->row_count) +
                    " rows, not one (write sum(...), count(*), avg(...))";
      }
      if (f.problem.empty() && !m.time.empty()) {
        if (std::ranges::find(it->second.second, Lower(m.time)) == it->second.second.end()) {
          f.problem = "its time column '" + m.time + "' does not exist";
        }
      }
    }
    out.push_back(std::move(f));
  }
  for (const Relationship& r : k.relationships) {
    Finding f{"join " + r.from + " = " + r.to, r.origin, Missing(catalog, r.from), false};
    if (f.problem.empty()) f.problem = Missing(catalog, r.to);
    if (f.problem.empty()) {
      const size_t a = r.from.rfind('.'), b = r.to.rfind('.');
      // Aliased, so a table joined to itself (Employee.ReportsTo = Employee.EmployeeId) runs.
      const std::string sql = "SELECT count(*) AS n FROM " + Quote(r.from.substr(0, a)) +
                              " AS a JOIN " + Quote(r.to.substr(0, b)) + " AS b ON a." +
                              Quote(r.from.substr(a + 1)) + " = b." + Quote(r.to.substr(b + 1));
      if (auto q = run(sql, 1); !q) {
        f.problem = "does not run: " + q.error().message;
      } else if (!q->rows.empty() && q->rows[0][0] == "0") {
        f.problem = "joins no rows: the columns share no value";
      }
    }
    out.push_back(std::move(f));
  }
  for (const Term& t : k.terms) {
    Finding f{"term " + t.name, t.origin, t.column.empty() ? "" : Missing(catalog, t.column),
              false};
    if (f.problem.empty() && !t.metric.empty() &&
        std::ranges::none_of(k.metrics,
                             [&](const Metric& m) { return Lower(m.name) == Lower(t.metric); })) {
      f.problem = "metric '" + t.metric + "' is not defined in metrics.yaml";
    }
    if (f.problem.empty() && !t.column.empty() && !t.value.empty()) {
      // The value as a literal, compared as text: it must occur in the column.
      const size_t dot = t.column.rfind('.');
      std::string literal = "'";
      for (char c : t.value) literal += c == '\'' ? std::string("''") : std::string(1, c);
      literal += "'";
      const std::string sql = "SELECT count(*) AS n FROM " + Quote(t.column.substr(0, dot)) +
                              " WHERE CAST(" + Quote(t.column.substr(dot + 1)) +
                              " AS VARCHAR) = " + literal;
      if (auto q = run(sql, 1); !q) {
        f.problem = "does not run: " + q.error().message;
      } else if (!q->rows.empty() && q->rows[0][0] == "0") {
        f.problem = "value '" + t.value + "' does not occur in " + t.column;
      }
    }
    out.push_back(std::move(f));
  }
  for (const VerifiedQuery& q : k.queries) {
    Finding f{"verified query " + q.name, q.origin, "", false};
    auto r = run(q.sql, kMaxFingerprintRows);
    if (!r) {
      f.problem = "does not run: " + r.error().message;
    } else if (q.result_rows || !q.result_sha256.empty()) {
      const ResultFingerprint now = Fingerprint(*r);
      if (q.result_rows && *q.result_rows != now.rows) {
        f.problem = "it returned " + std::to_string(*q.result_rows) + " row(s) when saved, " +
                    std::to_string(now.rows) + " now";
        f.stale = true;
      } else if (!q.result_sha256.empty() && q.result_sha256 != now.sha256) {
        f.problem = "it returns other values than when it was saved (" + q.verified_at + ")";
        f.stale = true;
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace quarry::knowledge
