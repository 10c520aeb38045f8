// Pieces the ClickHouse engine's files share (clickhouse_*.cc); only they include this header.
// quarry reaches ClickHouse over its HTTP interface with libcurl: every query is one POST whose
// URL carries the settings that make it safe (readonly=1, max_execution_time, max_result_rows
// with result_overflow_mode=break) and a query id a stop can name in KILL QUERY. Results come
// as TabSeparatedWithNamesAndTypes: names, then types, then rows of escaped text, so every
// value (Decimal, UInt64, Int128, DateTime64) arrives exact, as the server writes it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

// A URL parsed and checked.
struct ClickHouseSpec {
  bool tls = false;      // clickhouse+https://
  std::string host;      // required
  unsigned port = 0;     // 0: 8123 (http) or 8443 (https)
  std::string user;      // empty: CLICKHOUSE_USER, else "default"
  std::string database;  // empty: "default"
  std::string shown;     // clickhouse://user@host:port/db, never a password
  std::string base_url;  // http://host:port/
  std::string password;  // from CLICKHOUSE_PASSWORD; never shown, never in a URL
};

// Errors: kUsage for a password or an unknown parameter in the URL, or one that does not parse.
Result<ClickHouseSpec> ParseClickHouseSpec(std::string_view spec);

// One HTTP request's outcome. `status` 0: no HTTP answer (`transport` says why).
struct ClickHouseReply {
  long status = 0;
  std::string transport;  // libcurl's error, when the request did not complete
  bool stopped = false;   // ended by the stop token or the client-side deadline
  bool deadline = false;  // of those, by the deadline
  std::string body;       // the error text when status != 200 (rows go to the callback)
};

// The server's error: its code (0 when the text has none) and message without the
// exception-class noise of either the 18.x or the current format.
struct ClickHouseError {
  int code = 0;
  std::string message;
};
ClickHouseError ParseClickHouseError(std::string_view body);

// A streaming reader of TabSeparatedWithNamesAndTypes: fed the body in chunks, it calls
// `on_header` once with names and types, then `on_row` per row (nullopt for \N). Escapes are
// undone (\t \n \r \b \f \0 \\ \' \xHH), except in an Array, Tuple or Map, which the server
// writes in its quoted form ("['a','b\\'c']") and which is kept so. Returns false from Feed
// when `on_row` asks to stop.
class TsvReader {
 public:
  using HeaderFn =
      std::function<void(std::vector<std::string> names, std::vector<std::string> types)>;
  using RowFn = std::function<bool(std::vector<std::optional<std::string>>& cells)>;
  TsvReader(HeaderFn on_header, RowFn on_row)
      : on_header_(std::move(on_header)), on_row_(std::move(on_row)) {}
  bool Feed(std::string_view chunk);
  // A last line without its newline is a row too.
  bool Finish();

 private:
  bool Line(std::string_view line);
  HeaderFn on_header_;
  RowFn on_row_;
  std::string pending_;
  std::vector<std::string> names_;
  std::vector<bool> composite_;
  int header_lines_ = 0;
};

// The client: one libcurl request at a time, with the spec's credentials (HTTP basic auth over
// the spec's scheme) and no proxy from the environment (SQL and credentials go to the server
// only).
class ClickHouseClient {
 public:
  explicit ClickHouseClient(ClickHouseSpec spec) : spec_(std::move(spec)) {}
  const ClickHouseSpec& spec() const { return spec_; }

  // POSTs `sql` with `params` (name, value; percent-encoded here) on the URL. The body goes
  // to `on_body` when the status is 200 (it returns false to stop reading), else into
  // reply.body. `stop` and `deadline_ms` (0: none) end the transfer within about 50 ms.
  ClickHouseReply Post(std::string_view sql,
                       const std::vector<std::pair<std::string, std::string>>& params,
                       const std::function<bool(std::string_view)>& on_body,
                       const StopToken& stop = {}, int64_t deadline_ms = 0) const;

  // Trusted, engine-internal SQL (catalog reads), read-only, every row as text.
  // Errors: kData with the server's message.
  Result<Rows> Fetch(const std::string& sql) const;
  // false: the user's profile has readonly=1 or 2, and refuses readonly sent with a query.
  void set_readonly_in_url(bool sent) { readonly_in_url_ = sent; }

 private:
  ClickHouseSpec spec_;
  bool readonly_in_url_ = true;
};

// The server's major.minor version as a number (18.16 -> 1816, 23.8 -> 2308); 0 unknown.
struct ClickHouseServer {
  int version = 0;
  std::string version_text;
  std::string timezone;
  // What a query may carry, by the user's profile: readonly=0 takes readonly=1 and the limits;
  // readonly=2 takes the limits but refuses readonly itself; readonly=1 refuses every setting,
  // and quarry's own deadline and KILL QUERY are then the only time limit.
  enum class Settings { kReadonlyAndLimits, kLimits, kNone };
  Settings settings = Settings::kReadonlyAndLimits;
};

class ClickHouseEngine final : public Engine {
 public:
  Dialect dialect() const override { return Dialect::kClickHouse; }
  const std::vector<TableCard>& describe() const override { return cards_; }
  const std::vector<Source>& sources() const override { return sources_; }
  QueryOutcome Query(std::string_view sql, const Limits& limits) override;
  // Everything but the text guard: readonly=1, the time limit, the row limit, KILL QUERY.
  QueryOutcome QueryPastTextGuard(std::string_view sql, const Limits& limits);

  std::unique_ptr<ClickHouseClient> client_;
  ClickHouseServer server_;
  std::vector<TableCard> cards_;
  std::vector<Source> sources_;
  std::vector<std::string> table_names_;
  std::vector<std::string> source_notes_;
};

// The settings every query carries (ClickHouseServer says which the server takes).
std::vector<std::pair<std::string, std::string>> ClickHouseQueryParams(
    const ClickHouseSpec& spec, const ClickHouseServer& server, int64_t timeout_ms,
    const std::string& query_id);

// The cell kind and quarry's rendering of one value of a column of ClickHouse type `type`.
std::pair<CellKind, std::string> ClickHouseCell(std::string_view type, std::string value);
// The type without Nullable(...) and LowCardinality(...) around it.
std::string_view ClickHouseBaseType(std::string_view type);
// The type in the SQL names the export's readers know (the sandbox's pandas): BIGINT, UBIGINT,
// HUGEINT, DOUBLE, DECIMAL(P,S), BOOLEAN, DATE, TIMESTAMP, VARCHAR, VARCHAR[] (an Array),
// STRUCT (a Tuple), MAP.
std::string ClickHousePortableType(std::string_view type);

// Rows a query may return before the server stops it (result_overflow_mode=break): past this
// quarry refuses the result rather than count rows it never saw.
inline constexpr int64_t kClickHouseResultRows = 1000000;

// Runs `sql` under `limits` (at most limits.max_rows rows kept, the rest counted) with a fresh
// query id; a stop or the client-side deadline sends KILL QUERY for that id.
QueryOutcome RunClickHouse(const ClickHouseClient& client, const ClickHouseServer& server,
                           std::string_view sql, const Limits& limits,
                           const std::vector<TableCard>& cards);

// Schema cards from system.tables, system.columns and system.parts (clickhouse_cards.cc).
Result<void> BuildClickHouseCards(ClickHouseEngine& engine, bool profile);

// A name in backticks, backslashes and backticks escaped.
std::string ClickHouseIdent(std::string_view name);
// A string literal in single quotes, backslashes and quotes escaped.
std::string ClickHouseString(std::string_view text);

}  // namespace quarry::engine::internal
