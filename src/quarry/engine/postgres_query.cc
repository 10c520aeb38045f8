// PostgreSQL queries: each one alone in a READ ONLY transaction with its timeouts set locally,
// fetched a row at a time so the row cap bounds memory, then rolled back. A watcher thread sends
// a real cancel request (PQcancel) on a stop request or when the server's own
// statement_timeout did not end the query in time. Cells come back in quarry's rendering.
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include "quarry/engine/postgres_internal.h"

namespace quarry::engine::internal {
namespace {

// Type OIDs from pg_type.dat: stable across releases (they are part of the wire protocol).
constexpr Oid kBool = 16, kBytea = 17, kInt8 = 20, kInt2 = 21, kInt4 = 23, kOid = 26, kFloat4 = 700,
              kFloat8 = 701, kNumeric = 1700;

// A message the model reads stays short; the server may quote long values in it.
constexpr size_t kMessageBytes = 1200;

// Sends PQcancel when the stop is requested or the client-side deadline passes (the server's
// statement_timeout normally ends the query first; this covers a server that ignores it). A
// cancel that lands before the server began the query does nothing, so it is sent again every
// 500 ms until the query returns.
class CancelWatch {
 public:
  CancelWatch(PGconn* conn, int64_t deadline_ms, StopToken stop)
      : cancel_(PQgetCancel(conn)),
        thread_([this, deadline_ms] {
          const auto start = std::chrono::steady_clock::now();
          std::unique_lock lock(mu_);
          while (!done_) {
            if (!cancelled_ && !fired_ && deadline_ms > 0 &&
                std::chrono::steady_clock::now() - start >=
                    std::chrono::milliseconds(deadline_ms)) {
              fired_ = true;
            }
            if ((fired_ || cancelled_) && cancel_) {
              char err[256];
              lock.unlock();
              PQcancel(cancel_, err, sizeof err);
              lock.lock();
              cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; });
              continue;
            }
            cv_.wait_for(lock, std::chrono::milliseconds(50),
                         [this] { return done_ || cancelled_; });
          }
        }),
        on_stop_(std::move(stop), [this] {
          {
            std::lock_guard lock(mu_);
            if (!fired_) cancelled_ = true;
          }
          cv_.notify_all();
        }) {}
  ~CancelWatch() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (cancel_) PQfreeCancel(cancel_);
  }
  CancelWatch(const CancelWatch&) = delete;
  CancelWatch& operator=(const CancelWatch&) = delete;
  bool fired() {
    std::lock_guard lock(mu_);
    return fired_;
  }

 private:
  PGcancel* cancel_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool fired_ = false;
  bool cancelled_ = false;
  std::thread thread_;
  std::stop_callback<std::function<void()>> on_stop_;
};

std::string Field(const PGresult* res, int field) {
  const char* v = res ? PQresultErrorField(res, field) : nullptr;
  return v ? v : "";
}

// The SQL around a 1-based character position (the server counts characters, not bytes).
std::string Near(std::string_view sql, long position) {
  size_t byte = 0;
  for (long chars = 1; byte < sql.size() && chars < position; ++chars) {
    ++byte;
    while (byte < sql.size() && (static_cast<unsigned char>(sql[byte]) & 0xC0) == 0x80) ++byte;
  }
  std::string out;
  for (size_t i = byte; i < sql.size() && out.size() < 40; ++i) {
    out += sql[i] == '\n' || sql[i] == '\r' || sql[i] == '\t' ? ' ' : sql[i];
  }
  // Never end inside a UTF-8 sequence: drop a trailing lead byte and its partial tail.
  size_t keep = out.size();
  size_t start = keep;
  while (start > 0 && (static_cast<unsigned char>(out[start - 1]) & 0xC0) == 0x80) --start;
  if (start > 0 && (static_cast<unsigned char>(out[start - 1]) & 0x80)) {
    const auto lead = static_cast<unsigned char>(out[start - 1]);
    const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (keep - (start - 1) < need) keep = start - 1;
  }
  out.resize(keep);
  return out;
}

// The name inside `column "x" does not exist`, `column t.x does not exist`,
// `relation "s.t" does not exist`.
std::string MissingName(std::string_view message, std::string_view prefix) {
  std::string_view rest = message.substr(prefix.size());
  const size_t end = rest.find(" does not exist");
  if (end != std::string_view::npos) rest = rest.substr(0, end);
  const size_t of = rest.find(" of relation ");
  if (of != std::string_view::npos) rest = rest.substr(0, of);
  std::string out;
  for (char c : rest) {
    if (c != '"') out += c;
  }
  return out;
}

std::string Capped(std::string text) {
  if (text.size() <= kMessageBytes) return text;
  size_t cut = kMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

}  // namespace

CellKind PgKindOf(Oid type) {
  switch (type) {
    case kInt2:
    case kInt4:
    case kInt8:
    case kOid:
      return CellKind::kInteger;
    case kFloat4:
    case kFloat8:
      return CellKind::kReal;
    case kNumeric:
      return CellKind::kDecimal;
    case kBool:
      return CellKind::kBoolean;
    case kBytea:
      return CellKind::kBlob;
    default:
      return CellKind::kText;
  }
}

std::pair<CellKind, std::string> PgCell(Oid type, const char* value, int length) {
  const std::string_view text(value, static_cast<size_t>(length));
  switch (PgKindOf(type)) {
    case CellKind::kReal:
      // strtod reads the server's "Infinity", "-Infinity" and "NaN" too.
      if (type == kFloat4) return {CellKind::kReal, RealText(std::strtof(value, nullptr))};
      return {CellKind::kReal, RealText(std::strtod(value, nullptr))};
    case CellKind::kDecimal:
      // NUMERIC's NaN and ±Infinity are not decimals: given as the real values they equal.
      if (text == "NaN") return {CellKind::kReal, "nan"};
      if (text == "Infinity") return {CellKind::kReal, "inf"};
      if (text == "-Infinity") return {CellKind::kReal, "-inf"};
      return {CellKind::kDecimal, std::string(text)};
    case CellKind::kBoolean:
      return {CellKind::kBoolean, text == "t" ? "true" : "false"};
    case CellKind::kBlob: {
      size_t size = 0;
      unsigned char* bytes = PQunescapeBytea(reinterpret_cast<const unsigned char*>(value), &size);
      if (!bytes) return {CellKind::kText, std::string(text)};
      std::string out = BlobText(std::string_view(reinterpret_cast<const char*>(bytes), size));
      PQfreemem(bytes);
      return {CellKind::kBlob, std::move(out)};
    }
    default:
      return {PgKindOf(type), std::string(text)};
  }
}

QueryOutcome PostgresEngine::Query(std::string_view sql, const Limits& limits) {
  if (auto v = CheckQueryText(sql, Dialect::kPostgreSQL, table_names_)) return std::unexpected(*v);
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  return QueryPastTextGuard(sql, limits);
}

void PostgresEngine::Revive() {
  if (conn_ && PQstatus(conn_.get()) == CONNECTION_OK) return;
  auto fresh = ConnectPg(spec_);
  if (fresh) conn_ = std::move(*fresh);
}

QueryOutcome PostgresEngine::QueryPastTextGuard(std::string_view sql, const Limits& limits) {
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  Revive();
  if (!conn_ || PQstatus(conn_.get()) != CONNECTION_OK) {
    return std::unexpected(QueryFailure{
        FailureClass::kRuntimeError, "",
        "postgresql: the connection to " + spec_.shown + " is lost and could not be opened again"});
  }
  PGconn* conn = conn_.get();
  const int64_t timeout = std::max<int64_t>(limits.timeout_ms, 1);
  const std::string ms = std::to_string(timeout);
  // Every setting is LOCAL: the ROLLBACK below undoes it with everything else.
  const std::string begin =
      "BEGIN READ ONLY; SET LOCAL statement_timeout = " + ms + "; SET LOCAL lock_timeout = " + ms +
      "; SET LOCAL idle_in_transaction_session_timeout = " + std::to_string(timeout + 10000);
  {
    PgResultPtr res(PQexec(conn, begin.c_str()));
    if (PQstatus(conn) != CONNECTION_OK) {
      // The server ended an idle session (a restart, a pooler, a timeout): a query is safe to
      // send again, on a new connection.
      conn_.reset();
      Revive();
      if (!conn_) {
        return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "",
                                            "postgresql: the connection to " + spec_.shown +
                                                " is lost and could not be opened again"});
      }
      conn = conn_.get();
      res.reset(PQexec(conn, begin.c_str()));
    }
    if (!res || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      const std::string why =
          res ? Field(res.get(), PG_DIAG_MESSAGE_PRIMARY) : PQerrorMessage(conn);
      PgResultPtr rollback(PQexec(conn, "ROLLBACK"));
      return std::unexpected(
          QueryFailure{FailureClass::kRuntimeError, "",
                       "postgresql: cannot start a read-only transaction: " + why});
    }
  }
  struct Rollback {
    PGconn* conn;
    ~Rollback() {
      // A cancel still in flight may interrupt the first ROLLBACK; the second one then ends
      // the transaction, so the next query starts clean.
      for (int i = 0;
           i < 2 && PQtransactionStatus(conn) != PQTRANS_IDLE && PQstatus(conn) == CONNECTION_OK;
           ++i) {
        PgResultPtr res(PQexec(conn, "ROLLBACK"));
      }
      // What outlives a rollback: session-level advisory locks and prepared statements.
      if (PQstatus(conn) == CONNECTION_OK) {
        PgResultPtr res(PQexec(conn, "SELECT pg_catalog.pg_advisory_unlock_all(); DEALLOCATE ALL"));
      }
    }
  } rollback{conn};

  const std::string text(sql);
  // The extended protocol (PQsendQueryParams) takes exactly one statement: the server refuses
  // a second one, whatever the text guard let through.
  if (!PQsendQueryParams(conn, text.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) {
    return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "",
                                        std::string("postgresql: ") + PQerrorMessage(conn)});
  }
  PQsetSingleRowMode(conn);
  ResultTable table;
  std::vector<Oid> oids;
  std::vector<int> typmods;
  PgResultPtr error;
  bool command = false;
  bool copy = false;
  bool client_deadline = false;
  {
    CancelWatch watch(conn, timeout + 2000, limits.stop);
    while (PGresult* raw = PQgetResult(conn)) {
      PgResultPtr res(raw);
      const ExecStatusType status = PQresultStatus(raw);
      if (status == PGRES_SINGLE_TUPLE || status == PGRES_TUPLES_OK) {
        if (oids.empty() && table.columns.empty()) {
          for (int c = 0; c < PQnfields(raw); ++c) {
            table.columns.emplace_back(PQfname(raw, c));
            oids.push_back(PQftype(raw, c));
            typmods.push_back(PQfmod(raw, c));
          }
        }
        if (status == PGRES_TUPLES_OK) continue;
        ++table.row_count;
        if (table.row_count > limits.max_rows) continue;  // count on, keep only the cap
        std::vector<std::optional<std::string>> row;
        std::vector<CellKind> kinds;
        for (int c = 0; c < PQnfields(raw); ++c) {
          if (PQgetisnull(raw, 0, c)) {
            row.emplace_back(std::nullopt);
            kinds.push_back(CellKind::kNull);
            continue;
          }
          auto [kind, cell] =
              PgCell(PQftype(raw, c), PQgetvalue(raw, 0, c), PQgetlength(raw, 0, c));
          row.emplace_back(std::move(cell));
          kinds.push_back(kind);
        }
        table.rows.push_back(std::move(row));
        table.kinds.push_back(std::move(kinds));
      } else if (status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY) {
        command = true;
      } else if (status == PGRES_COPY_OUT) {
        // COPY ... TO STDOUT past the guard: drained and dropped (the timeout bounds it).
        copy = true;
        char* buf = nullptr;
        while (PQgetCopyData(conn, &buf, 0) > 0) PQfreemem(buf);
      } else if (status == PGRES_COPY_IN || status == PGRES_COPY_BOTH) {
        copy = true;
        PQputCopyEnd(conn, "quarry sends no data");
      } else if (!error) {
        error = std::move(res);
      }
    }
    client_deadline = watch.fired();
  }
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  if (copy) {
    return std::unexpected(
        QueryFailure{FailureClass::kGuardViolation, "file_write",
                     "guard: COPY is not allowed: only a single read-only query may run"});
  }
  if (error || PQstatus(conn) != CONNECTION_OK) {
    return std::unexpected(ServerFailure(error.get(), sql, limits, client_deadline));
  }
  if (command) {
    return std::unexpected(QueryFailure{
        FailureClass::kGuardViolation, "read_only",
        "guard: only a query that returns rows may run (SELECT, WITH ... SELECT, VALUES, TABLE)"});
  }
  table.types.resize(table.columns.size());
  std::string want_oids, want_mods;
  for (size_t c = 0; c < oids.size(); ++c) {
    const auto it = type_names_.find({oids[c], typmods[c]});
    if (it != type_names_.end()) {
      table.types[c] = it->second;
      continue;
    }
    want_oids += (want_oids.empty() ? "" : ",") + std::to_string(oids[c]);
    want_mods += (want_mods.empty() ? "" : ",") + std::to_string(typmods[c]);
  }
  if (!want_oids.empty()) {
    auto names = PgRows(conn,
                        "SELECT t.o, t.m, pg_catalog.format_type(t.o, NULLIF(t.m, -1)) FROM "
                        "unnest('{" +
                            want_oids + "}'::oid[], '{" + want_mods + "}'::int[]) AS t(o, m)");
    if (names) {
      for (const auto& row : *names) {
        if (row.size() < 3 || !row[0] || !row[1] || !row[2]) continue;
        type_names_[{static_cast<Oid>(std::strtoul(row[0]->c_str(), nullptr, 10)),
                     std::atoi(row[1]->c_str())}] = *row[2];
      }
    }
    for (size_t c = 0; c < oids.size(); ++c) {
      const auto it = type_names_.find({oids[c], typmods[c]});
      table.types[c] = it != type_names_.end() ? it->second : "oid " + std::to_string(oids[c]);
    }
  }
  return table;
}

QueryFailure PostgresEngine::ServerFailure(const PGresult* res, std::string_view sql,
                                           const Limits& limits, bool client_deadline) {
  const std::string state = Field(res, PG_DIAG_SQLSTATE);
  std::string primary = Field(res, PG_DIAG_MESSAGE_PRIMARY);
  const std::string timed_out = TimeoutFailure(limits.timeout_ms).message;
  if (client_deadline) return QueryFailure{FailureClass::kTimeout, "", timed_out};
  if (primary.empty()) {
    std::string why = PQerrorMessage(conn_.get());
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    const bool lost = PQstatus(conn_.get()) != CONNECTION_OK;
    return QueryFailure{
        FailureClass::kRuntimeError, "",
        Capped("postgresql: " + (why.empty() ? "the query failed" : why) +
               (lost ? " (the connection is opened again for the next query)" : ""))};
  }
  if (state == "57014") {
    if (primary.find("statement timeout") != std::string::npos) {
      return QueryFailure{FailureClass::kTimeout, "", timed_out};
    }
    return QueryFailure{FailureClass::kRuntimeError, "", "postgresql: " + primary};
  }
  if (state == "55P03") {
    return QueryFailure{FailureClass::kTimeout, "",
                        "postgresql: " + primary +
                            ": a table was locked by another session for over " +
                            std::to_string(limits.timeout_ms) + " ms; try again later"};
  }
  if (state == "25006") {
    return QueryFailure{FailureClass::kGuardViolation, "read_only",
                        "guard: the server refused it in a read-only transaction (" + primary +
                            "): only a single read-only query may run"};
  }
  std::string message = "postgresql: " + primary;
  const std::string position = Field(res, PG_DIAG_STATEMENT_POSITION);
  if (!position.empty()) {
    const std::string near = Near(sql, std::atol(position.c_str()));
    message += " (at character " + position + (near.empty() ? "" : ": '" + near + "'") + ")";
  }
  std::string ours;
  if (state == "42703" && primary.starts_with("column ")) {
    ours = NoSuchColumnHint(MissingName(primary, "column "), sql, cards_);
  } else if (state == "42P01" && primary.starts_with("relation ")) {
    ours = NoSuchTableHint(MissingName(primary, "relation "), cards_);
  } else if (state == "42702" && primary.starts_with("column reference ")) {
    std::string name = primary.substr(17);
    name = name.substr(0, name.find(" is ambiguous"));
    std::erase(name, '"');
    ours = AmbiguousColumnHint(name, sql, cards_);
  }
  message += ours;
  const std::string detail = Field(res, PG_DIAG_MESSAGE_DETAIL);
  const std::string hint = Field(res, PG_DIAG_MESSAGE_HINT);
  if (!detail.empty()) message += ". Detail: " + detail;
  if (!hint.empty() && ours.empty()) message += ". Hint: " + hint;
  return QueryFailure{state == "42601" ? FailureClass::kSyntaxError : FailureClass::kRuntimeError,
                      "", Capped(std::move(message))};
}

QueryOutcome QueryPostgresPastTextGuard(Engine& engine, std::string_view sql,
                                        const Limits& limits) {
  auto* pg = dynamic_cast<PostgresEngine*>(&engine);
  if (!pg) {
    return std::unexpected(
        QueryFailure{FailureClass::kRuntimeError, "", "not a PostgreSQL engine"});
  }
  return pg->QueryPastTextGuard(sql, limits);
}

}  // namespace quarry::engine::internal
