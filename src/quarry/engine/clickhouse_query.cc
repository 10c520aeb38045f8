// ClickHouse queries: one POST each, carrying readonly=1, the time limit (max_execution_time),
// a result row limit (max_result_rows with result_overflow_mode=break) and a query id. The
// server answers only when the query has finished (wait_end_of_query=1), so an error is never
// mixed into rows. A stop, or a query the server's limit did not end in time, is ended with
// KILL QUERY for its id. Rows stream through the TSV reader: the first limits.max_rows are kept
// and the rest counted.
#include <cmath>
#include <cstdio>
#include <random>

#include "quarry/common/text.h"
#include "quarry/engine/clickhouse_internal.h"

namespace quarry::engine::internal {
namespace {

// Server error codes (src/Common/ErrorCodes.cpp).
constexpr int kSyntaxError = 62, kUnknownIdentifier = 47, kUnknownTable = 60, kUnknownDatabase = 81,
              kTimeoutExceeded = 159, kReadonly = 164, kQueryWasCancelled = 394, kTooManyRows = 396,
              kAmbiguousColumn = 352;
constexpr size_t kMessageBytes = 1200;

std::string Capped(std::string text) {
  if (text.size() <= kMessageBytes) return text;
  return text.substr(0, Utf8Prefix(text, kMessageBytes)) + "…";
}

std::string QueryId() {
  std::random_device device;
  std::mt19937_64 bits(device());
  char id[40];
  std::snprintf(id, sizeof id, "quarry-%016llx", static_cast<unsigned long long>(bits()));
  return id;
}

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b == 0) return false;
    size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// The name in "Unknown identifier: x", "Missing columns: 'x' while ...", "Table db.t doesn't
// exist.", "Unknown expression identifier `x` in scope".
std::string NameIn(const std::string& message, int code) {
  for (char open : {'\'', '`'}) {
    const size_t at = message.find(open);
    if (at == std::string::npos) continue;
    const size_t close = message.find(open, at + 1);
    if (close != std::string::npos) return message.substr(at + 1, close - at - 1);
  }
  const std::string lead = code == kUnknownTable ? "Table " : "identifier: ";
  const size_t at = message.find(lead);
  if (at == std::string::npos) return "";
  std::string name = message.substr(at + lead.size());
  name = name.substr(0, name.find_first_of(" ,"));
  if (const size_t dot = name.rfind('.'); dot != std::string::npos && code == kUnknownTable) {
    name = name.substr(dot + 1);
  }
  return name;
}

void Kill(const ClickHouseClient& client, const std::string& id) {
  client.Post(
      "KILL QUERY WHERE query_id = " + ClickHouseString(id) + " ASYNC", {},
      [](std::string_view) { return true; }, {}, 5000);
}

}  // namespace

std::string_view ClickHouseBaseType(std::string_view type) {
  for (bool again = true; again;) {
    again = false;
    for (std::string_view wrap : {"Nullable(", "LowCardinality("}) {
      if (type.starts_with(wrap) && type.ends_with(")")) {
        type = type.substr(wrap.size(), type.size() - wrap.size() - 1);
        again = true;
      }
    }
  }
  return type;
}

std::string ClickHousePortableType(std::string_view type) {
  const std::string_view base = ClickHouseBaseType(type);
  if (base.starts_with("Array(")) return "VARCHAR[]";
  if (base.starts_with("Tuple(") || base.starts_with("Nested(")) return "STRUCT";
  if (base.starts_with("Map(")) return "MAP";
  if (base == "UInt64") return "UBIGINT";
  if (base.ends_with("128") || base.ends_with("256")) {
    if (base.starts_with("Int") || base.starts_with("UInt")) return "HUGEINT";
  }
  if (base.starts_with("Int") || base.starts_with("UInt")) return "BIGINT";
  if (base.starts_with("Float")) return "DOUBLE";
  if (base.starts_with("Decimal(")) return "DECIMAL" + std::string(base.substr(7));
  if (base.starts_with("Decimal")) {
    // Decimal32(S), Decimal64(S), Decimal128(S), Decimal256(S): the precision by width.
    const std::string_view width = base.substr(7, base.find('(') - 7);
    const std::string precision = width == "32"    ? "9"
                                  : width == "64"  ? "18"
                                  : width == "128" ? "38"
                                                   : "76";
    const size_t open = base.find('(');
    const std::string scale = open == std::string_view::npos
                                  ? "0"
                                  : std::string(base.substr(open + 1, base.size() - open - 2));
    return "DECIMAL(" + precision + "," + scale + ")";
  }
  if (base == "Bool") return "BOOLEAN";
  if (base.starts_with("DateTime")) return "TIMESTAMP";
  if (base.starts_with("Date")) return "DATE";
  return "VARCHAR";
}

std::pair<CellKind, std::string> ClickHouseCell(std::string_view type, std::string value) {
  const std::string_view base = ClickHouseBaseType(type);
  if (base.starts_with("Int") || base.starts_with("UInt")) {
    return {CellKind::kInteger, std::move(value)};
  }
  if (base == "Float32" || base == "Float64") {
    return {CellKind::kReal, RealText(std::strtod(value.c_str(), nullptr))};
  }
  if (base.starts_with("Decimal")) return {CellKind::kDecimal, std::move(value)};
  if (base == "Bool") return {CellKind::kBoolean, std::move(value)};
  // String and FixedString hold bytes: text only when they are UTF-8 without NUL (a
  // FixedString pads with NUL).
  if (!ValidUtf8(value)) return {CellKind::kBlob, BlobText(value)};
  return {CellKind::kText, std::move(value)};
}

std::vector<std::pair<std::string, std::string>> ClickHouseQueryParams(
    const ClickHouseSpec& spec, const ClickHouseServer& server, int64_t timeout_ms,
    const std::string& query_id) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"database", spec.database},
      {"query_id", query_id},
      {"default_format", "TabSeparatedWithNamesAndTypes"},
      {"wait_end_of_query", "1"}};
  using Settings = ClickHouseServer::Settings;
  if (server.settings == Settings::kNone) return params;  // the profile's readonly=1 holds
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(timeout_ms) / 1000.0);
  params.insert(params.end(), {{"max_execution_time", seconds},
                               {"timeout_overflow_mode", "throw"},
                               // One more than quarry takes: exactly that many is a result.
                               {"max_result_rows", std::to_string(kClickHouseResultRows + 1)},
                               {"result_overflow_mode", "break"}});
  // 21.9 and later drop a Decimal's trailing zeros unless told; 18.x knows no such setting.
  if (server.version >= 2109) params.emplace_back("output_format_decimal_trailing_zeros", "1");
  // Last: set first, it would refuse the settings after it on some versions.
  if (server.settings == Settings::kReadonlyAndLimits) params.emplace_back("readonly", "1");
  return params;
}

QueryOutcome RunClickHouse(const ClickHouseClient& client, const ClickHouseServer& server,
                           std::string_view sql, const Limits& limits,
                           const std::vector<TableCard>& cards) {
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  const int64_t timeout = std::max<int64_t>(limits.timeout_ms, 1);
  const std::string id = QueryId();
  ResultTable table;
  TsvReader reader(
      [&](std::vector<std::string> names, std::vector<std::string> types) {
        table.columns = std::move(names);
        table.types = std::move(types);
      },
      [&](std::vector<std::optional<std::string>>& cells) {
        ++table.row_count;
        if (table.row_count > limits.max_rows) return true;  // count on, keep only the cap
        std::vector<CellKind> kinds;
        for (size_t c = 0; c < cells.size(); ++c) {
          if (!cells[c]) {
            kinds.push_back(CellKind::kNull);
            continue;
          }
          auto [kind, text] =
              ClickHouseCell(c < table.types.size() ? table.types[c] : "", std::move(*cells[c]));
          cells[c] = std::move(text);
          kinds.push_back(kind);
        }
        table.rows.push_back(std::move(cells));
        table.kinds.push_back(std::move(kinds));
        return true;
      });
  const ClickHouseReply reply = client.Post(
      sql, ClickHouseQueryParams(client.spec(), server, timeout, id),
      [&](std::string_view chunk) { return reader.Feed(chunk); }, limits.stop, timeout + 2000);
  if (reply.stopped) {
    Kill(client, id);
    if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
    return std::unexpected(
        QueryFailure{FailureClass::kTimeout, "", TimeoutFailure(limits.timeout_ms).message});
  }
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  if (reply.status == 0) {
    return std::unexpected(QueryFailure{
        FailureClass::kRuntimeError, "",
        Capped("clickhouse: cannot reach " + client.spec().shown + ": " + reply.transport)});
  }
  if (reply.status != 200) {
    const ClickHouseError error = ParseClickHouseError(reply.body);
    if (error.code == kTimeoutExceeded || error.code == kQueryWasCancelled) {
      return std::unexpected(
          QueryFailure{FailureClass::kTimeout, "", TimeoutFailure(limits.timeout_ms).message});
    }
    if (error.code == kReadonly) {
      return std::unexpected(QueryFailure{
          FailureClass::kGuardViolation, "read_only",
          Capped("guard: the server refused it in readonly mode (" + error.message +
                 "): quarry's queries cannot write or change settings, and on this server "
                 "cannot call table functions either; write a SELECT over the tables")});
    }
    std::string text = "clickhouse: " + error.message;
    if (error.code == kUnknownIdentifier) {
      text += NoSuchColumnHint(NameIn(error.message, error.code), sql, cards);
    } else if (error.code == kUnknownTable) {
      text += NoSuchTableHint(NameIn(error.message, error.code), cards);
    } else if (error.code == kAmbiguousColumn) {
      text += AmbiguousColumnHint(NameIn(error.message, error.code), sql, cards);
    } else if (error.code == kUnknownDatabase) {
      text += "; the tables are in the database " + client.spec().database;
    } else if (error.code == kTooManyRows) {
      text += ": aggregate, filter, or add LIMIT";
    }
    return std::unexpected(QueryFailure{
        error.code == kSyntaxError ? FailureClass::kSyntaxError : FailureClass::kRuntimeError, "",
        Capped(std::move(text))});
  }
  reader.Finish();
  if (table.row_count > kClickHouseResultRows) {
    return std::unexpected(QueryFailure{
        FailureClass::kRuntimeError, "",
        "clickhouse: the result has more than " + std::to_string(kClickHouseResultRows) +
            " rows, more than quarry reads back: aggregate, filter, or add LIMIT"});
  }
  if (table.columns.empty()) {
    return std::unexpected(QueryFailure{FailureClass::kGuardViolation, "read_only",
                                        "guard: only a query that returns rows may run (SELECT "
                                        "or WITH ... SELECT)"});
  }
  return table;
}

QueryOutcome ClickHouseEngine::Query(std::string_view sql, const Limits& limits) {
  if (auto v = CheckQueryText(sql, Dialect::kClickHouse, table_names_)) {
    return std::unexpected(*v);
  }
  return QueryPastTextGuard(sql, limits);
}

QueryOutcome ClickHouseEngine::QueryPastTextGuard(std::string_view sql, const Limits& limits) {
  return RunClickHouse(*client_, server_, sql, limits, cards_);
}

QueryOutcome QueryClickHousePastTextGuard(Engine& engine, std::string_view sql,
                                          const Limits& limits) {
  auto* ch = dynamic_cast<ClickHouseEngine*>(&engine);
  if (!ch) {
    return std::unexpected(
        QueryFailure{FailureClass::kRuntimeError, "", "not a ClickHouse engine"});
  }
  return ch->QueryPastTextGuard(sql, limits);
}

}  // namespace quarry::engine::internal
