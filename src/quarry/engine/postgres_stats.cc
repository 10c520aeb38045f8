// PostgreSQL card statistics from the planner's own (pg_class.reltuples, pg_stats), so opening
// a database with huge tables reads catalogs, not tables. A table the planner knows nothing
// about (never analyzed) gets an exact count(*) when it is small, and a note otherwise.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "quarry/engine/postgres_internal.h"

namespace quarry::engine::internal {
namespace {

// pg_stats shows only the columns the role may read; it is empty for a never-analyzed table.
constexpr const char* kStatsSql = R"(
SELECT c.oid, s.attname, s.null_frac, s.n_distinct, s.most_common_vals::text,
       s.histogram_bounds::text
FROM pg_catalog.pg_stats s
JOIN pg_catalog.pg_namespace n ON n.nspname = s.schemaname
JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename
WHERE NOT s.inherited OR c.relkind = 'p')";

// Small enough to count exactly when the planner has no estimate (8 kB pages: 10 MB).
constexpr int64_t kSmallPages = 1280;
// Rows read for the statistics of a table pg_stats knows nothing about.
constexpr int kSampleRows = 1000;

struct Stats {
  double null_frac = 0;
  double n_distinct = 0;
  std::optional<std::string> common;     // most_common_vals as array text
  std::optional<std::string> histogram;  // histogram_bounds as array text
};

// The elements of an array's text form ({a,"b c",NULL}), unquoted; NULL elements skipped.
std::vector<std::string> ArrayItems(std::string_view text) {
  std::vector<std::string> out;
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return out;
  text = text.substr(1, text.size() - 2);
  size_t i = 0;
  while (i < text.size()) {
    std::string item;
    bool quoted = false;
    if (text[i] == '"') {
      quoted = true;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        item += text[i];
      }
      ++i;  // the closing quote
    } else {
      // An unquoted element may hold nested braces (an array of arrays): keep them whole.
      int depth = 0;
      for (; i < text.size() && (depth > 0 || text[i] != ','); ++i) {
        depth += text[i] == '{' ? 1 : text[i] == '}' ? -1 : 0;
        item += text[i];
      }
    }
    if (quoted || item != "NULL") out.push_back(std::move(item));
    while (i < text.size() && text[i] != ',') ++i;
    ++i;  // the comma
  }
  return out;
}

// Numbers, dates and times: where a histogram's first and last bounds read as a range.
bool Ranged(const std::string& type) {
  for (const char* t : {"smallint", "integer", "bigint", "numeric", "real", "double precision",
                        "date", "timestamp", "time", "money", "interval"}) {
    if (type.starts_with(t)) return true;
  }
  return false;
}

// The range of the values pg_stats saw: the histogram's bounds leave out the most common
// values (a key whose lowest value is common would read from the wrong start), so both are
// compared, as numbers or as ISO text (dates and times, which sort as written). An interval's
// text does not sort, so with common values beside its histogram it gets no range.
void RangeInto(ColumnCard& col, const std::vector<std::string>& bounds,
               const std::vector<std::string>& common) {
  const std::string type = BaseCardType(col.type);
  const bool numeric =
      !type.starts_with("date") && !type.starts_with("time") && !type.starts_with("interval");
  if (type.starts_with("interval") && !common.empty() && !bounds.empty()) return;
  // Without a histogram, the common values are the range only when they are every value.
  if (bounds.empty() && static_cast<int64_t>(common.size()) < col.distinct_count) return;
  std::optional<std::string> lo, hi;
  auto less = [&](const std::string& a, const std::string& b) {
    return numeric ? std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr) : a < b;
  };
  auto see = [&](const std::string& v) {
    if (numeric) {
      char* end = nullptr;
      std::strtod(v.c_str(), &end);
      if (end == v.c_str()) return;  // money with a currency sign, NaN text: no range
    }
    if (!lo || less(v, *lo)) lo = v;
    if (!hi || less(*hi, v)) hi = v;
  };
  if (!bounds.empty()) {
    see(bounds.front());
    see(bounds.back());
  }
  for (const auto& v : common) see(v);
  col.min = lo;
  col.max = hi;
}

// Statistics from a capped sample, for a table pg_stats knows nothing about (never analyzed):
// null and distinct counts within the sample and its most frequent values. TABLESAMPLE reads
// pages, not the whole table: BERNOULLI (every page, some rows) when it is small, SYSTEM (some
// pages) when it is not.
void SampleInto(PGconn* conn, const PgRelationFacts& f, int64_t rows_known, TableCard& card) {
  if (card.columns.empty()) return;
  std::string sql = "SELECT ";
  for (size_t i = 0; i < card.columns.size(); ++i) {
    sql += (i ? ", " : "") + std::string("CAST(") + QuoteIdent(card.columns[i].name) + " AS text)";
  }
  sql += " FROM " + f.sql_name;
  if (f.kind == 'r' || f.kind == 'm' || f.kind == 'p') {
    const bool small = rows_known >= 0 && rows_known <= kSampleRows;
    if (!small) {
      double percent = 100.0;
      if (rows_known > 0) {
        percent = 100.0 * 2 * kSampleRows / static_cast<double>(rows_known);
        sql += " TABLESAMPLE BERNOULLI (" + std::to_string(std::min(percent, 100.0)) + ")";
      } else {
        // Unknown rows: about 20 pages' worth.
        percent = f.relpages > 0 ? 100.0 * 20 / static_cast<double>(f.relpages) : 100.0;
        sql += " TABLESAMPLE SYSTEM (" + std::to_string(std::min(percent, 100.0)) + ")";
      }
    }
  }
  sql += " LIMIT " + std::to_string(kSampleRows);
  auto rows = PgRowsSaved(conn, sql);
  if (!rows) return;
  SampleStatsInto(card, *rows, rows_known, [](const ColumnCard&) { return 0; });
  if (static_cast<int64_t>(rows->size()) != rows_known) {
    card.estimated = true;
    card.notes.push_back("column statistics from a sample of " + std::to_string(rows->size()) +
                         " rows (the table was never analyzed)");
  }
}

}  // namespace

Result<void> ProfilePgCards(PostgresEngine& engine, size_t count, std::vector<TableCard>& cards,
                            const std::function<PgRelationFacts(size_t)>& facts) {
  PGconn* conn = engine.conn_.get();
  auto rows = PgRows(conn, kStatsSql);
  if (!rows) return std::unexpected(rows.error());
  std::map<std::pair<Oid, std::string>, Stats> stats;
  std::set<Oid> analyzed;
  for (const auto& r : *rows) {
    if (r.size() < 6 || !r[0] || !r[1]) continue;
    const Oid oid = static_cast<Oid>(std::strtoul(r[0]->c_str(), nullptr, 10));
    Stats s;
    s.null_frac = r[2] ? std::strtod(r[2]->c_str(), nullptr) : 0;
    s.n_distinct = r[3] ? std::strtod(r[3]->c_str(), nullptr) : 0;
    s.common = r[4];
    s.histogram = r[5];
    stats[{oid, *r[1]}] = std::move(s);
    analyzed.insert(oid);
  }
  for (size_t i = 0; i < count && i < cards.size(); ++i) {
    const PgRelationFacts f = facts(i);
    TableCard& card = cards[i];
    int64_t rows_known = f.reltuples;
    if (rows_known < 0 && (f.kind == 'r' || f.kind == 'm') && f.relpages <= kSmallPages) {
      // Never analyzed, but small: counting it costs at most a 10 MB scan.
      auto counted = PgRowsSaved(conn, "SELECT count(*) FROM " + f.sql_name);
      if (counted && !counted->empty() && (*counted)[0][0]) {
        rows_known = std::atoll((*counted)[0][0]->c_str());
      }
    } else if (rows_known >= 0) {
      card.estimated = true;
    }
    const bool table = f.kind == 'r' || f.kind == 'm' || f.kind == 'p';
    if (rows_known < 0 && table) {
      card.notes.push_back("row count unknown: the table was never analyzed");
      engine.source_notes_.push_back(card.name + " was never analyzed: ANALYZE " + f.sql_name +
                                     " gives the planner, and quarry, a row count");
    }
    // A view is not read: it may be any query, at any cost.
    if (!table) continue;
    if (!analyzed.contains(f.oid)) SampleInto(conn, f, rows_known, card);
    if (rows_known < 0) continue;
    card.row_count = rows_known;
    card.profiled = true;
    for (ColumnCard& col : card.columns) {
      const auto it = stats.find({f.oid, col.name});
      if (it == stats.end()) continue;
      const Stats& s = it->second;
      col.profiled = true;
      col.null_count = std::llround(s.null_frac * static_cast<double>(rows_known));
      // n_distinct < 0: minus a fraction of all the rows (it grows with the table); 0: unknown
      // (a type without equality, such as json), left out of the card.
      col.distinct_count = s.n_distinct >= 0
                               ? std::llround(s.n_distinct)
                               : std::llround(-s.n_distinct * static_cast<double>(rows_known));
      col.distinct_approx = true;
      const auto common = s.common ? ArrayItems(*s.common) : std::vector<std::string>{};
      for (size_t k = 0; k < common.size() && k < kCardFewValues; ++k) {
        col.samples.push_back(common[k]);
      }
      KeepSamples(col);
      if (Ranged(BaseCardType(col.type))) {
        RangeInto(col, s.histogram ? ArrayItems(*s.histogram) : std::vector<std::string>{}, common);
      }
    }
  }
  return {};
}

}  // namespace quarry::engine::internal
