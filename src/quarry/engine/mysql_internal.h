// Pieces the MySQL-protocol engine's files share (mysql_*.cc); only they include this header.
// One client library (libmariadb) serves MariaDB and MySQL servers and the engines that speak
// their protocol; `flavor` says which server answered, where their settings differ.
#pragma once

#include <mysql.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

struct MysqlCloser {
  void operator()(MYSQL* m) const { mysql_close(m); }
};
using MysqlPtr = std::unique_ptr<MYSQL, MysqlCloser>;

// A URL parsed and checked: what to hand mysql_real_connect, and the redacted form to show.
struct MySqlSpec {
  std::string user;      // empty: the option file's, else the login name
  std::string host;      // empty or "localhost": the socket
  unsigned port = 0;     // 0: the default (3306)
  std::string database;  // required
  std::string socket;    // empty: the option file's or the client's default
  std::string shown;     // mysql://user@host:port/db, never a password
};

// Errors: kUsage for a password in the URL, a missing database, an unknown parameter, or a
// URL that does not parse.
Result<MySqlSpec> ParseMySqlSpec(std::string_view spec);

enum class MySqlFlavor { kMariaDb, kMySql };

// One connection with quarry's session settings: utf8mb4, time zone +00:00, a sql_mode without
// ANSI_QUOTES and NO_BACKSLASH_ESCAPES (so the guard reads strings as the server does), read-only
// transactions, no LOCAL INFILE, no multi-statements. Reset after every query
// (COM_RESET_CONNECTION: user variables, locks, temporary tables and session settings go) and
// set again.
class MySqlSession {
 public:
  // Errors: kData naming the redacted URL and the client's reason.
  static Result<std::unique_ptr<MySqlSession>> Connect(const MySqlSpec& spec);

  MYSQL* handle() { return conn_.get(); }
  MySqlFlavor flavor() const { return flavor_; }
  unsigned long thread_id() { return mysql_thread_id(conn_.get()); }
  const MySqlSpec& spec() const { return spec_; }

  // Runs trusted, engine-internal SQL (catalog reads) and returns every row as text.
  // Errors: kData with the server's message.
  Result<Rows> Fetch(const std::string& sql);
  // Statements whose results are not needed; false on an error (message in `why`).
  bool Exec(const std::string& sql, std::string* why = nullptr);
  // Back to quarry's settings after a query: reset, then the settings again. Reconnects when
  // the connection was lost. False when neither works.
  bool Reset();

 private:
  bool Configure(std::string* why);
  MySqlSpec spec_;
  MysqlPtr conn_;
  MySqlFlavor flavor_ = MySqlFlavor::kMariaDb;
  std::string sql_mode_;  // the server's default, less the two modes above
};

// The cell kind and quarry's rendering (engine.h, CellKind) of one value of `field`.
std::pair<CellKind, std::string> MySqlCell(const MYSQL_FIELD& field, const char* value,
                                           unsigned long length);
// The column type as a card or result shows it ("DECIMAL(30,10)", "BIGINT UNSIGNED").
std::string MySqlTypeName(const MYSQL_FIELD& field);

class MySqlEngine final : public Engine {
 public:
  Dialect dialect() const override { return Dialect::kMySQL; }
  const std::vector<TableCard>& describe() const override { return cards_; }
  const std::vector<Source>& sources() const override { return sources_; }
  QueryOutcome Query(std::string_view sql, const Limits& limits) override;
  // Everything but the text guard: the READ ONLY transaction, the time limit, the cap, KILL.
  QueryOutcome QueryPastTextGuard(std::string_view sql, const Limits& limits);

  std::unique_ptr<MySqlSession> session_;
  std::vector<TableCard> cards_;
  std::vector<Source> sources_;
  std::vector<std::string> table_names_;
  std::vector<std::string> source_notes_;
};

// Schema cards from information_schema (mysql_cards.cc) and a sample of each table.
// `profile` false: names and types only. Errors: kData when the catalogs cannot be read.
Result<void> BuildMySqlCards(MySqlEngine& engine, bool profile);

// Runs `sql` on `session` in a READ ONLY transaction under `limits`, a row at a time: `on_row`
// gets each row's cells (at most limits.max_rows; the rest are counted), `on_columns` the
// fields once. A second connection sends KILL QUERY on a stop or past the deadline.
QueryOutcome RunMySql(MySqlSession& session, std::string_view sql, const Limits& limits,
                      const std::vector<TableCard>& cards);

// A name in backticks, embedded backticks doubled.
std::string MySqlIdent(std::string_view name);

}  // namespace quarry::engine::internal
