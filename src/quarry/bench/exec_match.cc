// Execution match (eval.h): whether a predicted query's result equals the gold one's, by the
// test-suite evaluation's rules or BIRD's set rule, with typed cells and a float tolerance;
// and running a query on the engine with every row kept for the comparison.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "quarry/bench/eval.h"

namespace quarry::bench {
namespace {

using Row = std::vector<Cell>;
using Rows = std::vector<Row>;

int Rank(Cell::Kind k) {
  switch (k) {
    case Cell::Kind::kNull:
      return 0;
    case Cell::Kind::kInteger:
    case Cell::Kind::kReal:
      return 1;
    case Cell::Kind::kText:
      return 2;
    case Cell::Kind::kBlob:
      return 3;
  }
  return 0;
}

double AsDouble(const Cell& c) {
  return c.kind == Cell::Kind::kInteger ? static_cast<double>(c.integer) : c.real;
}

// A total order with no tolerance, so that equal rows sort next to each other; NaN (DuckDB
// only) sorts after every number.
int Order(const Cell& a, const Cell& b) {
  const int ra = Rank(a.kind), rb = Rank(b.kind);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0:
      return 0;
    case 1: {
      if (a.kind == Cell::Kind::kInteger && b.kind == Cell::Kind::kInteger) {
        return a.integer < b.integer ? -1 : a.integer > b.integer ? 1 : 0;
      }
      const double x = AsDouble(a), y = AsDouble(b);
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) - std::isnan(y);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    default: {
      const int c = a.bytes.compare(b.bytes);
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
  }
}

bool RowLess(const Row& a, const Row& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (const int c = Order(a[i], b[i]); c != 0) return c < 0;
  }
  return a.size() < b.size();
}

bool RowsEqual(const Row& a, const Row& b, const Tolerance& t) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!CellsEqual(a[i], b[i], t)) return false;
  }
  return true;
}

bool HasReal(const Rows& rows) {
  for (const Row& r : rows) {
    for (const Cell& c : r) {
      if (c.kind == Cell::Kind::kReal) return true;
    }
  }
  return false;
}

// A perfect matching between the rows under the tolerance (Kuhn's augmenting paths). Needed
// only when sorting may misalign rows whose reals differ within the tolerance.
bool PerfectMatching(const Rows& a, const Rows& b, const Tolerance& t) {
  const size_t n = a.size();
  std::vector<std::vector<size_t>> adj(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (RowsEqual(a[i], b[j], t)) adj[i].push_back(j);
    }
    if (adj[i].empty()) return false;
  }
  std::vector<size_t> owner(n, n);
  std::vector<char> seen;
  std::function<bool(size_t)> augment = [&](size_t i) {
    for (size_t j : adj[i]) {
      if (seen[j]) continue;
      seen[j] = 1;
      if (owner[j] == n || augment(owner[j])) {
        owner[j] = i;
        return true;
      }
    }
    return false;
  };
  for (size_t i = 0; i < n; ++i) {
    seen.assign(n, 0);
    if (!augment(i)) return false;
  }
  return true;
}

// Rows at most this many are matched exactly under the tolerance when sorting did not align
// them; above it, the sorted comparison stands (O(n^2) pairs would be too slow).
constexpr size_t kMatchingMaxRows = 2000;

// Multiset equality of two row lists; `sorted_gold` is the gold rows sorted by RowLess.
bool MultisetEqual(const Rows& sorted_gold, Rows pred, const Tolerance& t) {
  if (sorted_gold.size() != pred.size()) return false;
  std::sort(pred.begin(), pred.end(), RowLess);
  bool aligned = true;
  for (size_t i = 0; i < pred.size() && aligned; ++i) {
    aligned = RowsEqual(sorted_gold[i], pred[i], t);
  }
  if (aligned) return true;
  if (pred.size() > kMatchingMaxRows || !HasReal(pred) || !HasReal(sorted_gold)) return false;
  return PerfectMatching(sorted_gold, pred, t);
}

Rows Permuted(const Rows& rows, const std::vector<size_t>& perm) {
  Rows out;
  out.reserve(rows.size());
  for (const Row& r : rows) {
    Row p;
    p.reserve(perm.size());
    for (size_t j : perm) p.push_back(r[j]);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Cell> ColumnSorted(const Rows& rows, size_t c) {
  std::vector<Cell> col;
  col.reserve(rows.size());
  for (const Row& r : rows) col.push_back(r[c]);
  std::sort(col.begin(), col.end(), [](const Cell& a, const Cell& b) { return Order(a, b) < 0; });
  return col;
}

bool SameColumn(const Rows& rows, size_t a, size_t b) {
  for (const Row& r : rows) {
    if (Order(r[a], r[b]) != 0) return false;
  }
  return true;
}

Comparison Differ(std::string reason) { return {false, std::move(reason)}; }

Comparison CompareTestSuite(const Denotation& gold, const Denotation& pred,
                            const CompareOptions& o) {
  const Rows& g = gold.rows;
  const Rows& p = pred.rows;
  if (g.empty() && p.empty()) return {true, ""};
  if (g.size() != p.size()) {
    return Differ("row count differs: gold " + std::to_string(g.size()) + ", predicted " +
                  std::to_string(p.size()));
  }
  const size_t cols = g[0].size();
  if (p[0].size() != cols) {
    return Differ("column count differs: gold " + std::to_string(cols) + ", predicted " +
                  std::to_string(p[0].size()));
  }
  // A gold column can only be matched by a predicted column holding the same multiset of
  // values: this prunes the permutations before any row is compared.
  std::vector<std::vector<Cell>> gold_cols, pred_cols;
  for (size_t c = 0; c < cols; ++c) {
    gold_cols.push_back(ColumnSorted(g, c));
    pred_cols.push_back(ColumnSorted(p, c));
  }
  std::vector<std::vector<size_t>> candidates(cols);
  for (size_t i = 0; i < cols; ++i) {
    for (size_t j = 0; j < cols; ++j) {
      bool same = true;
      for (size_t r = 0; r < g.size() && same; ++r) {
        same = CellsEqual(gold_cols[i][r], pred_cols[j][r], o.tolerance);
      }
      if (same) candidates[i].push_back(j);
    }
    if (candidates[i].empty()) {
      const std::string name = i < gold.columns.size() ? " (" + gold.columns[i] + ")" : "";
      return Differ("no predicted column holds the values of gold column " + std::to_string(i + 1) +
                    name);
    }
  }
  // Identical predicted columns are interchangeable: only the first unused of each is tried.
  std::vector<size_t> twin_of(cols);
  for (size_t j = 0; j < cols; ++j) {
    twin_of[j] = j;
    for (size_t k = 0; k < j; ++k) {
      if (twin_of[k] == k && SameColumn(p, k, j)) {
        twin_of[j] = k;
        break;
      }
    }
  }
  Rows sorted_gold = g;
  if (!o.order_matters) std::sort(sorted_gold.begin(), sorted_gold.end(), RowLess);
  std::vector<size_t> perm(cols);
  std::vector<char> used(cols, 0);
  int tried = 0;
  bool found = false;
  std::function<void(size_t)> assign = [&](size_t i) {
    if (found || tried >= o.max_permutations) return;
    if (i == cols) {
      ++tried;
      Rows permuted = cols == 1 ? p : Permuted(p, perm);
      if (o.order_matters) {
        found = true;
        for (size_t r = 0; r < g.size() && found; ++r) {
          found = RowsEqual(g[r], permuted[r], o.tolerance);
        }
      } else {
        found = MultisetEqual(sorted_gold, std::move(permuted), o.tolerance);
      }
      return;
    }
    for (size_t j : candidates[i]) {
      if (used[j]) continue;
      bool earlier_twin_free = false;
      for (size_t k = 0; k < j; ++k) {
        if (twin_of[k] == twin_of[j] && !used[k]) earlier_twin_free = true;
      }
      if (earlier_twin_free) continue;
      used[j] = 1;
      perm[i] = j;
      assign(i + 1);
      used[j] = 0;
      if (found) return;
    }
  };
  assign(0);
  if (found) return {true, ""};
  if (tried >= o.max_permutations) {
    return Differ("no match within the first " + std::to_string(o.max_permutations) +
                  " column permutations (the cap)");
  }
  if (o.order_matters) {
    // Would the rows match in another order? Say which rule decided.
    CompareOptions unordered = o;
    unordered.order_matters = false;
    if (CompareTestSuite(gold, pred, unordered).match) {
      return Differ("row order differs (the gold query has a top-level ORDER BY)");
    }
  }
  return Differ("rows differ (each column holds the gold values, but not in the same rows)");
}

Rows SortedUnique(Rows rows, const Tolerance& t) {
  std::sort(rows.begin(), rows.end(), RowLess);
  Rows out;
  for (Row& r : rows) {
    if (out.empty() || !RowsEqual(out.back(), r, t)) out.push_back(std::move(r));
  }
  return out;
}

Comparison CompareBirdSet(const Denotation& gold, const Denotation& pred, const Tolerance& t) {
  const Rows g = SortedUnique(gold.rows, t);
  const Rows p = SortedUnique(pred.rows, t);
  if (g.size() != p.size()) {
    return Differ("distinct row count differs: gold " + std::to_string(g.size()) + ", predicted " +
                  std::to_string(p.size()));
  }
  for (size_t i = 0; i < g.size(); ++i) {
    if (!RowsEqual(g[i], p[i], t)) return Differ("row sets differ (columns compared by position)");
  }
  return {true, ""};
}

}  // namespace

bool CellsEqual(const Cell& a, const Cell& b, const Tolerance& t) {
  const int ra = Rank(a.kind), rb = Rank(b.kind);
  if (ra != rb) return false;
  switch (ra) {
    case 0:
      return true;
    case 1: {
      if (a.kind == Cell::Kind::kInteger && b.kind == Cell::Kind::kInteger) {
        return a.integer == b.integer;
      }
      const double x = AsDouble(a), y = AsDouble(b);
      if (x == y) return true;  // infinities too
      if (!std::isfinite(x) || !std::isfinite(y)) return false;
      const double scale = std::max(std::fabs(x), std::fabs(y));
      return std::fabs(x - y) <= std::max(t.relative * scale, t.absolute);
    }
    default:
      return a.kind == b.kind && a.bytes == b.bytes;
  }
}

std::string_view MatchRuleName(MatchRule rule) {
  return rule == MatchRule::kBirdSet ? "bird" : "test-suite";
}

Comparison CompareDenotations(const Denotation& gold, const Denotation& predicted,
                              const CompareOptions& options) {
  // Rows of ragged width cannot come from an engine; refuse rather than index past them.
  for (const Denotation* d : {&gold, &predicted}) {
    for (const Row& r : d->rows) {
      if (!d->rows.empty() && r.size() != d->rows[0].size()) return Differ("ragged rows");
    }
  }
  if (options.rule == MatchRule::kBirdSet) {
    return CompareBirdSet(gold, predicted, options.tolerance);
  }
  return CompareTestSuite(gold, predicted, options);
}

Denotation DenotationOf(const engine::ResultTable& table) {
  Denotation d;
  d.columns = table.columns;
  d.rows.reserve(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    Row row;
    row.reserve(table.rows[r].size());
    for (size_t c = 0; c < table.rows[r].size(); ++c) {
      const auto& text = table.rows[r][c];
      const engine::CellKind kind = r < table.kinds.size() && c < table.kinds[r].size()
                                        ? table.kinds[r][c]
                                        : engine::CellKind::kText;
      Cell cell;
      if (!text || kind == engine::CellKind::kNull) {
        row.push_back(cell);
        continue;
      }
      const std::string& s = *text;
      switch (kind) {
        case engine::CellKind::kInteger: {
          const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), cell.integer);
          if (ec == std::errc() && end == s.data() + s.size()) {
            cell.kind = Cell::Kind::kInteger;
          } else {  // wider than 64 bits (DuckDB HUGEINT)
            cell.kind = Cell::Kind::kReal;
            cell.real = std::strtod(s.c_str(), nullptr);
          }
          break;
        }
        case engine::CellKind::kReal:
        case engine::CellKind::kDecimal:
          cell.kind = Cell::Kind::kReal;
          cell.real = std::strtod(s.c_str(), nullptr);
          break;
        case engine::CellKind::kBoolean:
          cell.kind = Cell::Kind::kInteger;
          cell.integer = s == "true" ? 1 : 0;
          break;
        case engine::CellKind::kBlob:
          cell.kind = Cell::Kind::kBlob;
          cell.bytes = engine::BlobBytes(s);
          break;
        default:
          cell.kind = Cell::Kind::kText;
          cell.bytes = s;
          break;
      }
      row.push_back(std::move(cell));
    }
    d.rows.push_back(std::move(row));
  }
  return d;
}

Result<Denotation> Execute(engine::Engine& engine, std::string_view sql, const ExecLimits& limits) {
  engine::Limits l;
  l.timeout_ms = limits.timeout_ms;
  l.max_rows = limits.max_rows;
  auto outcome = engine.Query(sql, l);
  if (!outcome) {
    std::string cls(FailureClassName(outcome.error().failure_class));
    // An empty result is a result, not a failure, when comparing.
    if (outcome.error().failure_class != FailureClass::kEmptyResult) {
      return Fail(Error::Code::kData, cls + ": " + outcome.error().message);
    }
    return Denotation{};
  }
  if (outcome->truncated()) {
    return Fail(Error::Code::kData, "the result has " + std::to_string(outcome->row_count) +
                                        " rows, more than the " + std::to_string(limits.max_rows) +
                                        " compared at most (--max-rows)");
  }
  return DenotationOf(*outcome);
}

}  // namespace quarry::bench
