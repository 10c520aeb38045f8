// MySQL-protocol schema cards: tables, columns and declared foreign keys from information_schema
// (three queries, whatever the number of tables), the server's row estimates, and its own
// column statistics where it keeps them (MariaDB's mysql.column_stats, filled by ANALYZE TABLE
// ... PERSISTENT FOR ALL) and the indexes' cardinality (two queries). A table whose columns were
// all analyzed takes the server's figures, marked "~", and is not read. The others get
// statistics from a sample of their first rows: a table the sample reads whole gets exact
// figures; a larger one the server's estimated row count, the sample's statistics, and its
// indexed columns' cardinality, marked "~".
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "quarry/common/text.h"
#include "quarry/engine/mysql_internal.h"

namespace quarry::engine::internal {
namespace {

// Rows read per table for its statistics: Chinook's largest table (8,715 rows) is read whole.
constexpr int kSampleRows = 10000;
// Tables sampled at most; past them cards hold names and types (a note says so).
constexpr size_t kSampledTables = 300;

constexpr const char* kTablesSql =
    "SELECT TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_ROWS, TABLE_COMMENT FROM "
    "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME";
constexpr const char* kColumnsSql =
    "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, "
    "COLUMN_COMMENT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
    "ORDER BY TABLE_NAME, ORDINAL_POSITION";
constexpr const char* kKeysSql =
    "SELECT TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM "
    "information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() AND "
    "REFERENCED_TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL "
    "ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION";

// MariaDB's engine-independent statistics (ANALYZE TABLE ... PERSISTENT FOR ALL), readable by
// a user granted SELECT on mysql.column_stats; and the first column of each index's cardinality.
constexpr const char* kColumnStatsSql =
    "SELECT table_name, column_name, min_value, max_value, nulls_ratio, avg_frequency FROM "
    "mysql.column_stats WHERE db_name = DATABASE()";
constexpr const char* kCardinalitySql =
    "SELECT TABLE_NAME, COLUMN_NAME, MAX(CARDINALITY) FROM information_schema.STATISTICS WHERE "
    "TABLE_SCHEMA = DATABASE() AND SEQ_IN_INDEX = 1 AND CARDINALITY IS NOT NULL GROUP BY "
    "TABLE_NAME, COLUMN_NAME";

struct ColumnStat {
  std::optional<std::string> min, max;
  double nulls_ratio = 0;
  double avg_frequency = 0;
};

std::string Text(const std::optional<std::string>& v) { return v.value_or(""); }

// COLUMN_TYPE as a card shows it: the type's name in capitals, without an integer's display
// width ("int(11)" -> "INT"), its parameters (sizes, ENUM values) as declared.
std::string CardType(const std::string& data_type, const std::string& column_type) {
  std::string out = Upper(data_type);
  const size_t open = column_type.find('(');
  const bool integer = out == "TINYINT" || out == "SMALLINT" || out == "MEDIUMINT" ||
                       out == "INT" || out == "BIGINT";
  if (open != std::string::npos && !integer) {
    const size_t close = column_type.rfind(')');
    if (close != std::string::npos && close > open) {
      out += column_type.substr(open, close - open + 1);
    }
  }
  if (column_type.find(" unsigned") != std::string::npos) out += " UNSIGNED";
  return out;
}

// 1: min/max as numbers; 2: as text (ISO dates and times sort as written); 0: none.
int RangeOf(const std::string& data_type) {
  const std::string t = Lower(data_type);
  for (const char* n : {"tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float",
                        "double", "year"}) {
    if (t == n) return 1;
  }
  for (const char* d : {"date", "datetime", "timestamp", "time"}) {
    if (t == d) return 2;
  }
  return 0;
}

bool ZeroDate(const std::string& v) { return v.starts_with("0000-00-00"); }

// Zero dates ('0000-00-00', MySQL's "no date") are counted, said, and kept out of the range;
// dates with a zero month or day ('2024-05-00') are said.
void DateNotes(ColumnCard& col, size_t c, const Rows& sample) {
  int64_t zero = 0, partial = 0;
  std::optional<std::string> lo, hi;
  for (const auto& row : sample) {
    if (c >= row.size() || !row[c]) continue;
    const std::string& v = *row[c];
    if (ZeroDate(v)) {
      ++zero;
      continue;
    }
    if (v.size() >= 10 && (v.compare(5, 2, "00") == 0 || v.compare(8, 2, "00") == 0)) ++partial;
    if (!lo || v < *lo) lo = v;
    if (!hi || *hi < v) hi = v;
  }
  if (zero > 0) {
    col.min = lo;
    col.max = hi;
    std::erase_if(col.samples, ZeroDate);
    col.notes.push_back(std::to_string(zero) +
                        " rows hold the zero date '0000-00-00' (MySQL's \"no date\"): read them "
                        "as missing, not as a date; the range leaves them out");
  }
  if (partial > 0) {
    col.notes.push_back(std::to_string(partial) +
                        " rows hold dates with a zero month or day ('2024-05-00'): they are no "
                        "calendar date, and date functions may return NULL for them");
  }
}

// A note when the user can write here: a grant on *.* or on this database (SHOW GRANTS names
// the current user's, roles' and PUBLIC's) holds a writing privilege. Grants on other databases
// are not this data's risk.
std::optional<std::string> WriteNote(MySqlSession& session) {
  auto grants = session.Fetch("SHOW GRANTS");
  if (!grants) return std::nullopt;
  const std::string db = Upper(session.spec().database);
  for (const auto& row : *grants) {
    if (row.empty() || !row[0]) continue;
    const std::string g = Upper(*row[0]);
    const size_t on = g.find(" ON ");
    if (on == std::string::npos) continue;  // a role granted: its grants are listed too
    std::string object = g.substr(on + 4, g.find(" TO ", on) - on - 4);
    std::string scope = object.substr(0, object.find('.'));
    std::erase(scope, '`');
    if (scope != "*" && scope != db) continue;
    const std::string privileges = g.substr(0, on);
    for (const char* w : {"ALL PRIVILEGES", "INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER",
                          "SUPER", "FILE"}) {
      if (privileges.find(std::string(" ") + w) != std::string::npos ||
          privileges.find(std::string(",") + w) != std::string::npos) {
        std::string user = session.spec().user;
        if (user.empty()) {
          auto current = session.Fetch("SELECT CURRENT_USER()");
          if (current && !current->empty() && !(*current)[0].empty() && (*current)[0][0]) {
            user = *(*current)[0][0];
          }
        }
        return "the user " + user + " may write (" + w + " on " + object +
               " in SHOW GRANTS): quarry still runs every query read-only, but a user with "
               "SELECT only is safer (docs/engines.md)";
      }
    }
  }
  return std::nullopt;
}

}  // namespace

Result<void> BuildMySqlCards(MySqlEngine& engine, bool profile) {
  MySqlSession& session = *engine.session_;
  auto tables = session.Fetch(kTablesSql);
  if (!tables) return std::unexpected(tables.error());
  auto columns = session.Fetch(kColumnsSql);
  if (!columns) return std::unexpected(columns.error());
  auto keys = session.Fetch(kKeysSql);
  if (!keys) return std::unexpected(keys.error());
  std::map<std::string, size_t> index;
  std::vector<int64_t> estimates;
  std::vector<std::vector<int>> ranges;
  std::vector<std::vector<std::string>> data_types;
  for (const auto& row : *tables) {
    if (row.size() < 5 || !row[0]) continue;
    TableCard card;
    card.name = *row[0];
    card.source = session.spec().shown;
    const std::string engine_name = Text(row[2]);
    if (Upper(engine_name) == "SPIDER") {
      card.notes.push_back(
          "a Spider table: its rows live on other servers (shards), which "
          "answer its queries");
    }
    if (!Text(row[4]).empty() && Text(row[1]) != "VIEW") {
      card.notes.push_back("comment: " + Text(row[4]));
    }
    index[card.name] = engine.cards_.size();
    estimates.push_back(row[3] ? std::atoll(row[3]->c_str()) : -1);
    engine.table_names_.push_back(card.name);
    engine.cards_.push_back(std::move(card));
    ranges.emplace_back();
    data_types.emplace_back();
  }
  for (const auto& row : *columns) {
    if (row.size() < 7 || !row[0] || !row[1]) continue;
    const auto it = index.find(*row[0]);
    if (it == index.end()) continue;
    ColumnCard col;
    col.name = *row[1];
    col.type = CardType(Text(row[2]), Text(row[3]));
    if (Text(row[5]) == "PRI") col.type += " PRIMARY KEY";
    if (Text(row[4]) == "NO" && Text(row[5]) != "PRI") col.type += " NOT NULL";
    if (!Text(row[6]).empty()) col.notes.push_back("comment: " + Text(row[6]));
    if (Lower(Text(row[2])) == "timestamp") {
      col.notes.push_back("TIMESTAMP values are shown in UTC (quarry's session time zone)");
    }
    engine.cards_[it->second].columns.push_back(std::move(col));
    ranges[it->second].push_back(RangeOf(Text(row[2])));
    data_types[it->second].push_back(Lower(Text(row[2])));
  }
  for (const auto& row : *keys) {
    if (row.size() < 4 || !row[0] || !row[1] || !row[2] || !row[3]) continue;
    const auto it = index.find(*row[0]);
    if (it == index.end()) continue;
    engine.cards_[it->second].foreign_keys.push_back({*row[1], *row[2], *row[3]});
  }
  if (auto note = WriteNote(session)) engine.source_notes_.push_back(*note);
  if (!profile) return {};
  // The server's own statistics, where it keeps and shows them (two queries; an error, such as
  // no SELECT on mysql.column_stats, leaves the tables to the sample).
  std::map<std::string, std::map<std::string, ColumnStat>> stats;
  if (session.flavor() == MySqlFlavor::kMariaDb) {
    if (auto rows = session.Fetch(kColumnStatsSql)) {
      for (const auto& row : *rows) {
        if (row.size() < 6 || !row[0] || !row[1]) continue;
        stats[*row[0]][*row[1]] = {row[2], row[3], std::atof(Text(row[4]).c_str()),
                                   std::atof(Text(row[5]).c_str())};
      }
    }
  }
  std::map<std::string, std::map<std::string, int64_t>> cardinality;
  if (auto rows = session.Fetch(kCardinalitySql)) {
    for (const auto& row : *rows) {
      if (row.size() >= 3 && row[0] && row[1] && row[2]) {
        cardinality[*row[0]][*row[1]] = std::atoll(row[2]->c_str());
      }
    }
  }
  for (size_t t = 0; t < engine.cards_.size(); ++t) {
    TableCard& card = engine.cards_[t];
    if (t >= kSampledTables) {
      card.notes.push_back("no statistics: only the first " + std::to_string(kSampledTables) +
                           " tables are sampled when the database is opened");
      continue;
    }
    if (card.columns.empty()) continue;
    if (const auto it = stats.find(card.name);
        it != stats.end() && it->second.size() >= card.columns.size() && estimates[t] > 0) {
      // Every column analyzed: the server's figures, no scan. Counts are estimates ("~").
      const auto rows = static_cast<double>(estimates[t]);
      card.row_count = estimates[t];
      card.profiled = card.estimated = true;
      for (size_t c = 0; c < card.columns.size(); ++c) {
        ColumnCard& col = card.columns[c];
        const auto found = it->second.find(col.name);
        if (found == it->second.end()) continue;
        const ColumnStat& st = found->second;
        col.profiled = true;
        col.distinct_approx = true;
        col.null_count = std::llround(st.nulls_ratio * rows);
        col.distinct_count =
            st.avg_frequency > 0 ? std::llround(rows * (1 - st.nulls_ratio) / st.avg_frequency) : 0;
        if (ranges[t][c] != 0 && data_types[t][c] != "bit") {
          col.min = st.min;
          col.max = st.max;
        }
      }
      card.notes.push_back(
          "column statistics from the server's ANALYZE (mysql.column_stats), not a scan: "
          "counts are estimates, and the ranges are as of that ANALYZE");
      continue;
    }
    std::string sql = "SELECT ";
    for (size_t c = 0; c < card.columns.size(); ++c) {
      sql += (c ? ", " : "") + MySqlIdent(card.columns[c].name);
    }
    sql += " FROM " + MySqlIdent(card.name) + " LIMIT " + std::to_string(kSampleRows);
    Limits limits;
    limits.timeout_ms = 30000;
    limits.max_rows = kSampleRows;
    auto sample = RunMySql(session, sql, limits, {});
    if (!sample) {
      card.notes.push_back("no statistics: sampling it failed (" + sample.error().message + ")");
      continue;
    }
    const auto got = static_cast<int64_t>(sample->rows.size());
    const bool whole = got < kSampleRows;
    const int64_t rows_known = whole ? got : std::max(estimates[t], got);
    card.row_count = rows_known;
    card.profiled = true;
    card.estimated = !whole;
    SampleStatsInto(card, sample->rows, rows_known, [&](const ColumnCard& col) {
      const size_t c = static_cast<size_t>(&col - card.columns.data());
      return ranges[t][c];
    });
    for (size_t c = 0; c < card.columns.size(); ++c) {
      if (ranges[t][c] == 2) DateNotes(card.columns[c], c, sample->rows);
      if (data_types[t][c] == "bit") card.columns[c].samples.clear();
      // A sample sees a floor of the distinct values; an index's cardinality sees the table.
      if (const auto it = cardinality.find(card.name); !whole && it != cardinality.end()) {
        if (const auto k = it->second.find(card.columns[c].name); k != it->second.end()) {
          card.columns[c].distinct_count = k->second;
          card.columns[c].distinct_approx = true;
        }
      }
    }
    if (!whole) {
      card.notes.push_back("column statistics (counts, ranges, values) from the first " +
                           std::to_string(got) +
                           " rows only, not the whole table; the row count is the server's "
                           "estimate");
    }
  }
  return {};
}

}  // namespace quarry::engine::internal
