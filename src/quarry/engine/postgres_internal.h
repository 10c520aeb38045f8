// Pieces the PostgreSQL engine's files share (postgres_*.cc); only they include this header.
#pragma once

#include <libpq-fe.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

struct PgConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct PgResultClearer {
  void operator()(PGresult* res) const { PQclear(res); }
};
using PgConnPtr = std::unique_ptr<PGconn, PgConnCloser>;
using PgResultPtr = std::unique_ptr<PGresult, PgResultClearer>;

// A spec parsed and checked: the connection keywords to hand libpq (quarry's settings added)
// and the redacted form that may be shown.
struct PgSpec {
  std::vector<std::pair<std::string, std::string>> params;
  std::string shown;
};

// Errors: kUsage for a malformed spec or one that carries a password (or another secret).
Result<PgSpec> ParsePgSpec(std::string_view spec);

// A new connection with quarry's session settings (DateStyle ISO, bytea hex, read-only
// transactions by default). Errors: kData naming the redacted spec and libpq's reason.
Result<PgConnPtr> ConnectPg(const PgSpec& spec);

// Runs trusted, engine-internal SQL (catalog reads) and returns every row as text.
// Errors: kData with the server's message.
Result<Rows> PgRows(PGconn* conn, const std::string& sql);
// The same inside a transaction, under a savepoint: a failure leaves the transaction usable.
Result<Rows> PgRowsSaved(PGconn* conn, const std::string& sql);

// The cell kind for a column of type `oid`, and the cell's text converted to quarry's
// rendering (engine.h, CellKind): integers and numerics as the server writes them, floats as
// the shortest round-trip text, booleans "true"/"false", bytea decoded into DuckDB's rendering.
CellKind PgKindOf(Oid type);
std::pair<CellKind, std::string> PgCell(Oid type, const char* value, int length);

class PostgresEngine final : public Engine {
 public:
  Dialect dialect() const override { return Dialect::kPostgreSQL; }
  const std::vector<TableCard>& describe() const override { return cards_; }
  const std::vector<Source>& sources() const override { return sources_; }
  QueryOutcome Query(std::string_view sql, const Limits& limits) override;
  // Everything but the text guard: the READ ONLY transaction, the timeouts, the cap, cancel.
  QueryOutcome QueryPastTextGuard(std::string_view sql, const Limits& limits);

  const PgSpec& spec() const { return spec_; }

  PgSpec spec_;
  PgConnPtr conn_;
  std::vector<TableCard> cards_;
  std::vector<Source> sources_;
  std::vector<std::string> table_names_;
  std::vector<std::string> sql_names_;     // per card: "schema"."name", quoted
  std::vector<std::string> source_notes_;  // Source::notes, set when the cards are built
  // format_type(oid, typmod) of result columns already seen.
  std::map<std::pair<Oid, int>, std::string> type_names_;

 private:
  QueryFailure ServerFailure(const PGresult* res, std::string_view sql, const Limits& limits,
                             bool client_deadline);
  // After a broken connection (a server restart, idle_in_transaction_session_timeout).
  void Revive();
};

// Schema cards from the catalogs (postgres_cards.cc). `profile` false: names and types only.
// `timeout_ms` (0: 30 s) bounds each statement.
// Appends to engine.cards_ and engine.table_names_; notes about the role (it can write) go to
// the first card. Errors: kData when the catalogs cannot be read.
Result<void> BuildPgCards(PostgresEngine& engine, bool profile, int64_t timeout_ms);

// What the statistics of one relation are read with (postgres_stats.cc).
struct PgRelationFacts {
  Oid oid = 0;
  std::string sql_name;    // "schema"."name", quoted
  char kind = 'r';         // pg_class.relkind
  int64_t reltuples = -1;  // -1: never vacuumed or analyzed
  int64_t relpages = 0;    // from pg_relation_size: right even before the first VACUUM
};
// Row counts (estimated from reltuples, counted for small tables the planner knows nothing
// about) and column statistics from pg_stats, sampled by TABLESAMPLE where pg_stats is empty.
// Runs inside BuildPgCards' read-only transaction.
Result<void> ProfilePgCards(PostgresEngine& engine, size_t count, std::vector<TableCard>& cards,
                            const std::function<PgRelationFacts(size_t)>& facts);

// ExportTables for a PostgreSQL engine (postgres_export.cc).
Result<std::vector<TableExport>> ExportPostgres(const Engine& engine,
                                                const std::filesystem::path& dir, int64_t max_rows);

}  // namespace quarry::engine::internal
