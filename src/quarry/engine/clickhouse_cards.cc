// ClickHouse schema cards: tables and their engines from system.tables, columns from
// system.columns, and row counts from system.parts (the active parts' rows: no scan), in three
// queries whatever the number of tables; then each table's statistics from its first rows. The
// card states the table engine where it changes how rows are read (Distributed, the merging
// MergeTree variants). Then OpenClickHouse: the server probed, the engine built.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "quarry/common/text.h"
#include "quarry/engine/clickhouse_internal.h"

namespace quarry::engine::internal {
namespace {

constexpr int kSampleRows = 10000;
constexpr size_t kSampledTables = 300;

std::string Text(const std::optional<std::string>& v) { return v.value_or(""); }

// 1: min/max as numbers; 2: as text (ISO dates and times sort as written); 0: none.
int RangeOf(std::string_view type) {
  const std::string_view base = ClickHouseBaseType(type);
  if (base.starts_with("Int") || base.starts_with("UInt") || base.starts_with("Float") ||
      base.starts_with("Decimal")) {
    return 1;
  }
  if (base.starts_with("Date")) return 2;  // Date, Date32, DateTime, DateTime64
  return 0;
}

// What a table's engine changes about reading it, for the model.
std::optional<std::string> EngineNote(const std::string& engine, const std::string& full) {
  if (engine == "Distributed") {
    return "a Distributed table (" + full +
           "): its rows live on the cluster's shards, which answer its queries; a subquery "
           "over another distributed table needs GLOBAL IN or GLOBAL JOIN";
  }
  if (engine.ends_with("ReplacingMergeTree")) {
    return "a " + engine +
           ": rows with the same sorting key are merged in the background, so until then a "
           "count includes duplicates; FROM t FINAL reads the merged rows";
  }
  if (engine.ends_with("CollapsingMergeTree")) {
    return "a " + engine +
           ": a row with sign -1 cancels an earlier one with sign 1; sum(x * sign) and "
           "sum(sign) count what remains";
  }
  if (engine.ends_with("SummingMergeTree")) {
    return "a SummingMergeTree: rows with the same key are summed in the background, so until "
           "then one key may have several rows; aggregate with sum() and GROUP BY";
  }
  if (engine.ends_with("AggregatingMergeTree")) {
    return "an AggregatingMergeTree: columns hold aggregate states; read them with the -Merge "
           "combinators (sumMerge, uniqMerge) and GROUP BY";
  }
  return std::nullopt;
}

// The time zone a DateTime column's values are shown in, when it is not UTC.
std::optional<std::string> ZoneNote(std::string_view type, const std::string& server_zone) {
  const std::string_view base = ClickHouseBaseType(type);
  if (!base.starts_with("DateTime")) return std::nullopt;
  std::string zone = server_zone;
  if (const size_t quote = base.find('\''); quote != std::string_view::npos) {
    const size_t end = base.find('\'', quote + 1);
    if (end != std::string_view::npos) zone = std::string(base.substr(quote + 1, end - quote - 1));
  }
  if (zone.empty() || zone == "UTC" || zone == "Etc/UTC") return std::nullopt;
  return "values are shown in the time zone " + zone;
}

}  // namespace

Result<void> BuildClickHouseCards(ClickHouseEngine& engine, bool profile) {
  const ClickHouseClient& client = *engine.client_;
  const std::string db = ClickHouseString(client.spec().database);
  auto tables =
      client.Fetch("SELECT name, engine, engine_full FROM system.tables WHERE database = " + db +
                   " AND NOT is_temporary AND NOT startsWith(name, '.inner') ORDER BY name");
  if (!tables) return std::unexpected(tables.error());
  auto columns = client.Fetch(
      "SELECT table, name, type, comment, is_in_sorting_key FROM system.columns "
      "WHERE database = " +
      db);
  if (!columns) return std::unexpected(columns.error());
  auto parts =
      client.Fetch("SELECT table, toString(sum(rows)) FROM system.parts WHERE database = " + db +
                   " AND active GROUP BY table");
  if (!parts) return std::unexpected(parts.error());
  std::map<std::string, size_t> index;
  std::map<std::string, int64_t> part_rows;
  for (const auto& row : *parts) {
    if (row.size() >= 2 && row[0] && row[1]) part_rows[*row[0]] = std::atoll(row[1]->c_str());
  }
  std::vector<std::string> engines;
  for (const auto& row : *tables) {
    if (row.size() < 3 || !row[0]) continue;
    TableCard card;
    card.name = *row[0];
    card.source = client.spec().shown;
    if (auto note = EngineNote(Text(row[1]), Text(row[2]))) card.notes.push_back(*note);
    index[card.name] = engine.cards_.size();
    engines.push_back(Text(row[1]));
    engine.table_names_.push_back(card.name);
    engine.cards_.push_back(std::move(card));
  }
  for (const auto& row : *columns) {
    if (row.size() < 5 || !row[0] || !row[1]) continue;
    const auto it = index.find(*row[0]);
    if (it == index.end()) continue;
    ColumnCard col;
    col.name = *row[1];
    col.type = Text(row[2]);
    if (!Text(row[3]).empty()) col.notes.push_back("comment: " + Text(row[3]));
    if (auto note = ZoneNote(col.type, engine.server_.timezone)) col.notes.push_back(*note);
    engine.cards_[it->second].columns.push_back(std::move(col));
  }
  if (!profile) return {};
  for (size_t t = 0; t < engine.cards_.size(); ++t) {
    TableCard& card = engine.cards_[t];
    if (t >= kSampledTables) {
      card.notes.push_back("no statistics: only the first " + std::to_string(kSampledTables) +
                           " tables are sampled when the database is opened");
      continue;
    }
    if (card.columns.empty()) continue;
    std::string sql = "SELECT ";
    for (size_t c = 0; c < card.columns.size(); ++c) {
      sql += (c ? ", " : "") + ClickHouseIdent(card.columns[c].name);
    }
    sql += " FROM " + ClickHouseIdent(card.name) + " LIMIT " + std::to_string(kSampleRows);
    Limits limits;
    limits.timeout_ms = 30000;
    limits.max_rows = kSampleRows;
    auto sample = RunClickHouse(client, engine.server_, sql, limits, {});
    if (!sample) {
      card.notes.push_back("no statistics: sampling it failed (" + sample.error().message + ")");
      continue;
    }
    const auto got = static_cast<int64_t>(sample->rows.size());
    int64_t rows_known = got;
    if (got >= kSampleRows) {
      // The parts' rows for a MergeTree; else a count, which the engine answers from its
      // metadata for most.
      if (const auto it = part_rows.find(card.name); it != part_rows.end()) {
        rows_known = std::max(it->second, got);
      } else {
        limits.max_rows = 1;
        auto counted =
            RunClickHouse(client, engine.server_,
                          "SELECT count() FROM " + ClickHouseIdent(card.name), limits, {});
        if (counted && !counted->rows.empty() && counted->rows[0][0]) {
          rows_known = std::atoll(counted->rows[0][0]->c_str());
        }
      }
      card.notes.push_back("column statistics (counts, ranges, values) from the first " +
                           std::to_string(got) + " rows only, not the whole table");
    }
    card.row_count = rows_known;
    card.profiled = true;
    SampleStatsInto(card, sample->rows, rows_known,
                    [&](const ColumnCard& col) { return RangeOf(col.type); });
  }
  return {};
}

Result<std::unique_ptr<Engine>> OpenClickHouse(const std::string& spec,
                                               const OpenOptions& options) {
  auto parsed = ParseClickHouseSpec(spec);
  if (!parsed) return std::unexpected(parsed.error());
  auto engine = std::make_unique<ClickHouseEngine>();
  engine->client_ = std::make_unique<ClickHouseClient>(*parsed);
  const ClickHouseClient& client = *engine->client_;
  // The probe carries the settings every query will: a profile with readonly=1 refuses them,
  // and then queries go without (quarry's deadline and KILL QUERY still end them).
  const std::string probe = "SELECT version(), timezone()";
  Rows rows;
  auto read = [&](const std::vector<std::pair<std::string, std::string>>& params) {
    rows.clear();
    TsvReader reader(nullptr, [&](std::vector<std::optional<std::string>>& cells) {
      rows.push_back(std::move(cells));
      return true;
    });
    ClickHouseReply reply = client.Post(
        probe, params, [&](std::string_view chunk) { return reader.Feed(chunk); }, {}, 30000);
    reader.Finish();
    return reply;
  };
  using Settings = ClickHouseServer::Settings;
  ClickHouseReply reply = read(ClickHouseQueryParams(*parsed, engine->server_, 10000, ""));
  // A profile with readonly=2 refuses readonly itself; one with readonly=1, every setting.
  for (Settings fewer : {Settings::kLimits, Settings::kNone}) {
    if (reply.status == 0 || reply.status == 200 || ParseClickHouseError(reply.body).code != 164) {
      break;
    }
    engine->server_.settings = fewer;
    engine->client_->set_readonly_in_url(false);
    reply = read(ClickHouseQueryParams(*parsed, engine->server_, 10000, ""));
  }
  if (reply.status == 0) {
    return Fail(Error::Code::kData, "cannot open " + parsed->shown + ": " +
                                        (reply.deadline ? "no answer in 30 s" : reply.transport));
  }
  if (reply.status != 200) {
    const ClickHouseError error = ParseClickHouseError(reply.body);
    // 192 unknown user, 193 wrong password, 194 password required, 516 (current servers).
    const bool auth = error.code == 516 || (error.code >= 192 && error.code <= 194);
    return Fail(Error::Code::kData,
                "cannot open " + parsed->shown + ": " + error.message +
                    (auth ? "; the password comes from CLICKHOUSE_PASSWORD, never --data" : ""));
  }
  if (!rows.empty() && rows[0].size() >= 2) {
    engine->server_.version_text = Text(rows[0][0]);
    engine->server_.timezone = Text(rows[0][1]);
    const std::string& v = engine->server_.version_text;
    const int major = std::atoi(v.c_str());
    const size_t dot = v.find('.');
    const int minor = dot == std::string::npos ? 0 : std::atoi(v.c_str() + dot + 1);
    engine->server_.version = major * 100 + std::min(minor, 99);
  }
  if (auto built = BuildClickHouseCards(*engine, options.profile); !built) {
    return Fail(Error::Code::kData, "cannot read " + parsed->shown + ": " + built.error().message);
  }
  if (engine->cards_.empty()) {
    return Fail(Error::Code::kData, parsed->shown +
                                        " has no table this user can read in the "
                                        "database " +
                                        parsed->database);
  }
  const std::string who = "the user " + parsed->user;
  if (engine->server_.settings == Settings::kNone) {
    // Said only when the profile sets no time limit of its own.
    auto limit =
        client.Fetch("SELECT value FROM system.settings WHERE name = 'max_execution_time'");
    if (limit && !limit->empty() && !(*limit)[0].empty() && (*limit)[0][0] &&
        std::atof((*limit)[0][0]->c_str()) <= 0) {
      engine->source_notes_.push_back(
          who +
          "'s profile has readonly=1 and no max_execution_time, and refuses the limits "
          "quarry would send with each query: its own deadline and KILL QUERY end a "
          "query; set max_execution_time in the profile (docs/clickhouse.md)");
    }
  } else if (engine->server_.settings == Settings::kLimits) {
    engine->source_notes_.push_back(
        who +
        "'s profile has readonly=2: the server refuses writes but lets a query change "
        "its own settings and call table functions, which only quarry's guard refuses; "
        "a profile with readonly=1 is stricter (docs/clickhouse.md)");
  } else {
    // The profile's own readonly, read without the readonly=1 every query carries.
    client.Post(
        "SELECT value FROM system.settings WHERE name = 'readonly'",
        {{"default_format", "TabSeparated"}},
        [&](std::string_view chunk) {
          if (chunk.starts_with("0")) {
            engine->source_notes_.push_back(
                who +
                " may write (its profile has readonly=0): quarry sends readonly=1 with "
                "every query, but a user whose profile has readonly=1 is safer "
                "(docs/clickhouse.md)");
          }
          return true;
        },
        {}, 10000);
  }
  Source source;
  source.path = parsed->shown;
  source.notes = engine->source_notes_;
  source.format = SourceFormat::kClickHouse;
  source.tables = engine->table_names_;
  engine->sources_.push_back(std::move(source));
  return engine;
}

}  // namespace quarry::engine::internal
