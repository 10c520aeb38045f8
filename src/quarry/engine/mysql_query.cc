// MySQL-protocol queries: each one alone in a READ ONLY transaction under the server's own
// statement time limit (max_statement_time on MariaDB, max_execution_time on MySQL), fetched a
// row at a time so the row cap bounds memory, then rolled back and the session reset. A watcher
// thread sends KILL QUERY from a second connection on a stop request or when the server's limit
// did not end the query in time. Cells come back in quarry's rendering.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include "quarry/engine/mysql_internal.h"

namespace quarry::engine::internal {
namespace {

// Server error numbers (include/mysqld_error.h, errmsg.h).
constexpr unsigned kParseError = 1064, kBadField = 1054, kNoSuchTable = 1146, kNonUniqError = 1052,
                   kInterrupted = 1317, kReadOnlyTransaction = 1792, kStatementTimeout = 1969,
                   kMySqlQueryTimeout = 3024, kServerGone = 2006, kServerLost = 2013,
                   kLockWaitTimeout = 1205;
constexpr unsigned kBinaryCharset = 63;
constexpr size_t kMessageBytes = 1200;

std::string Capped(std::string text) {
  if (text.size() <= kMessageBytes) return text;
  size_t cut = kMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

// Sends KILL QUERY from a connection of its own when the stop is requested or the client-side
// deadline passes; again every 500 ms until the query returns (a kill that lands before the
// server began the query does nothing).
class KillWatch {
 public:
  KillWatch(const MySqlSpec& spec, unsigned long thread_id, int64_t deadline_ms, StopToken stop)
      : thread_([this, spec, thread_id, deadline_ms] {
          const auto start = std::chrono::steady_clock::now();
          std::unique_lock lock(mu_);
          std::unique_ptr<MySqlSession> killer;
          while (!done_) {
            if (!cancelled_ && !fired_ && deadline_ms > 0 &&
                std::chrono::steady_clock::now() - start >=
                    std::chrono::milliseconds(deadline_ms)) {
              fired_ = true;
            }
            if (fired_ || cancelled_) {
              lock.unlock();
              if (!killer) {
                auto opened = MySqlSession::Connect(spec);
                if (opened) killer = std::move(*opened);
              }
              if (killer) killer->Exec("KILL QUERY " + std::to_string(thread_id));
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
  ~KillWatch() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  KillWatch(const KillWatch&) = delete;
  KillWatch& operator=(const KillWatch&) = delete;
  bool fired() {
    std::lock_guard lock(mu_);
    return fired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool fired_ = false;
  bool cancelled_ = false;
  std::thread thread_;
  std::stop_callback<std::function<void()>> on_stop_;
};

// The name in "Unknown column 'x' in 'field list'", "Table 'db.t' doesn't exist",
// "Column 'x' in field list is ambiguous": the first quoted piece.
std::string Quoted(const std::string& message) {
  const size_t open = message.find('\'');
  if (open == std::string::npos) return "";
  const size_t close = message.find('\'', open + 1);
  return close == std::string::npos ? "" : message.substr(open + 1, close - open - 1);
}

bool Integer(enum_field_types type) {
  return type == MYSQL_TYPE_TINY || type == MYSQL_TYPE_SHORT || type == MYSQL_TYPE_LONG ||
         type == MYSQL_TYPE_INT24 || type == MYSQL_TYPE_LONGLONG || type == MYSQL_TYPE_YEAR;
}

}  // namespace

std::string MySqlTypeName(const MYSQL_FIELD& f) {
  const bool unsigned_ = (f.flags & UNSIGNED_FLAG) != 0;
  const std::string u = unsigned_ ? " UNSIGNED" : "";
  const bool binary = f.charsetnr == kBinaryCharset;
  if (f.flags & ENUM_FLAG) return "ENUM";
  if (f.flags & SET_FLAG) return "SET";
  switch (f.type) {
    case MYSQL_TYPE_TINY:
      return "TINYINT" + u;
    case MYSQL_TYPE_SHORT:
      return "SMALLINT" + u;
    case MYSQL_TYPE_INT24:
      return "MEDIUMINT" + u;
    case MYSQL_TYPE_LONG:
      return "INT" + u;
    case MYSQL_TYPE_LONGLONG:
      return "BIGINT" + u;
    case MYSQL_TYPE_YEAR:
      return "YEAR";
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL: {
      const long length = static_cast<long>(f.length);
      const long precision = length - (f.decimals > 0 ? 1 : 0) - (unsigned_ ? 0 : 1);
      return "DECIMAL(" + std::to_string(precision > 0 ? precision : length) + "," +
             std::to_string(f.decimals) + ")" + u;
    }
    case MYSQL_TYPE_FLOAT:
      return "FLOAT";
    case MYSQL_TYPE_DOUBLE:
      return "DOUBLE";
    case MYSQL_TYPE_BIT:
      return "BIT(" + std::to_string(f.length) + ")";
    case MYSQL_TYPE_DATE:
    case MYSQL_TYPE_NEWDATE:
      return "DATE";
    case MYSQL_TYPE_TIME:
      return "TIME";
    case MYSQL_TYPE_DATETIME:
      return "DATETIME";
    case MYSQL_TYPE_TIMESTAMP:
      return "TIMESTAMP";
    case MYSQL_TYPE_JSON:
      return "JSON";
    case MYSQL_TYPE_ENUM:
      return "ENUM";
    case MYSQL_TYPE_SET:
      return "SET";
    case MYSQL_TYPE_GEOMETRY:
      return "GEOMETRY";
    case MYSQL_TYPE_NULL:
      return "NULL";
    case MYSQL_TYPE_TINY_BLOB:
    case MYSQL_TYPE_MEDIUM_BLOB:
    case MYSQL_TYPE_LONG_BLOB:
    case MYSQL_TYPE_BLOB:
      return binary ? "BLOB" : "TEXT";
    default:
      return binary ? "VARBINARY" : "VARCHAR";
  }
}

std::pair<CellKind, std::string> MySqlCell(const MYSQL_FIELD& f, const char* value,
                                           unsigned long length) {
  const std::string_view text(value, length);
  if (Integer(f.type)) return {CellKind::kInteger, std::string(text)};
  switch (f.type) {
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL:
      return {CellKind::kDecimal, std::string(text)};
    case MYSQL_TYPE_FLOAT:
      return {CellKind::kReal, RealText(std::strtof(std::string(text).c_str(), nullptr))};
    case MYSQL_TYPE_DOUBLE:
      return {CellKind::kReal, RealText(std::strtod(std::string(text).c_str(), nullptr))};
    case MYSQL_TYPE_BIT: {
      // The text protocol sends a BIT's bytes, most significant first.
      unsigned long long bits = 0;
      for (unsigned char c : text) bits = (bits << 8) | c;
      return {CellKind::kInteger, std::to_string(bits)};
    }
    case MYSQL_TYPE_GEOMETRY:
      return {CellKind::kBlob, BlobText(text)};
    default:
      break;
  }
  const bool stringish = f.type == MYSQL_TYPE_STRING || f.type == MYSQL_TYPE_VAR_STRING ||
                         f.type == MYSQL_TYPE_VARCHAR || f.type == MYSQL_TYPE_TINY_BLOB ||
                         f.type == MYSQL_TYPE_MEDIUM_BLOB || f.type == MYSQL_TYPE_LONG_BLOB ||
                         f.type == MYSQL_TYPE_BLOB;
  if (stringish && f.charsetnr == kBinaryCharset && !(f.flags & (ENUM_FLAG | SET_FLAG))) {
    return {CellKind::kBlob, BlobText(text)};
  }
  return {CellKind::kText, std::string(text)};
}

QueryOutcome RunMySql(MySqlSession& session, std::string_view sql, const Limits& limits,
                      const std::vector<TableCard>& cards) {
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  const int64_t timeout = std::max<int64_t>(limits.timeout_ms, 1);
  const std::string limit =
      session.flavor() == MySqlFlavor::kMariaDb
          ? "SET SESSION max_statement_time = " + std::to_string(timeout / 1000) + "." +
                std::to_string(1000 + timeout % 1000).substr(1)
          : "SET SESSION max_execution_time = " + std::to_string(timeout);
  std::string why;
  if (!session.Exec(limit, &why) || !session.Exec("START TRANSACTION READ ONLY", &why)) {
    // The server ended an idle session (a restart, wait_timeout): a query is safe to send
    // again, on a new connection.
    const unsigned err = mysql_errno(session.handle());
    if ((err != kServerGone && err != kServerLost) || !session.Reset() ||
        !session.Exec(limit, &why) || !session.Exec("START TRANSACTION READ ONLY", &why)) {
      return std::unexpected(QueryFailure{
          FailureClass::kRuntimeError, "",
          "mysql: cannot start a read-only transaction on " + session.spec().shown + ": " + why});
    }
  }
  struct Rollback {
    MySqlSession& session;
    ~Rollback() {
      session.Exec("ROLLBACK");
      session.Reset();
    }
  } rollback{session};

  MYSQL* m = session.handle();
  const auto started = std::chrono::steady_clock::now();
  ResultTable table;
  bool client_deadline = false;
  unsigned err = 0;
  std::string message;
  bool command = false;
  {
    KillWatch watch(session.spec(), session.thread_id(), timeout + 2000, limits.stop);
    if (mysql_real_query(m, sql.data(), sql.size()) != 0) {
      err = mysql_errno(m);
      message = mysql_error(m);
    } else if (MYSQL_RES* res = mysql_use_result(m)) {
      const unsigned n = mysql_num_fields(res);
      const MYSQL_FIELD* fields = mysql_fetch_fields(res);
      for (unsigned c = 0; c < n; ++c) {
        table.columns.emplace_back(fields[c].name, fields[c].name_length);
        table.types.push_back(MySqlTypeName(fields[c]));
      }
      while (MYSQL_ROW row = mysql_fetch_row(res)) {
        ++table.row_count;
        if (table.row_count > limits.max_rows) continue;  // count on, keep only the cap
        const unsigned long* lengths = mysql_fetch_lengths(res);
        std::vector<std::optional<std::string>> cells;
        std::vector<CellKind> kinds;
        for (unsigned c = 0; c < n; ++c) {
          if (!row[c]) {
            cells.emplace_back(std::nullopt);
            kinds.push_back(CellKind::kNull);
            continue;
          }
          auto [kind, cell] = MySqlCell(fields[c], row[c], lengths[c]);
          cells.emplace_back(std::move(cell));
          kinds.push_back(kind);
        }
        table.rows.push_back(std::move(cells));
        table.kinds.push_back(std::move(kinds));
      }
      err = mysql_errno(m);
      if (err != 0) message = mysql_error(m);
      mysql_free_result(res);
    } else if (mysql_field_count(m) == 0) {
      command = true;
    } else {
      err = mysql_errno(m);
      message = mysql_error(m);
    }
    client_deadline = watch.fired();
  }
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  const std::string timed_out = TimeoutFailure(limits.timeout_ms).message;
  // A query the time limit ended says so (1969, 3024), except through some storage engines:
  // Spider's remote reads end as "interrupted" (1317), known for a timeout by the time taken.
  const bool past_limit =
      std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(timeout);
  if (err == kStatementTimeout || err == kMySqlQueryTimeout ||
      (err == kInterrupted && past_limit) || (err != 0 && client_deadline)) {
    return std::unexpected(QueryFailure{FailureClass::kTimeout, "", timed_out});
  }
  if (err == kReadOnlyTransaction) {
    return std::unexpected(QueryFailure{FailureClass::kGuardViolation, "read_only",
                                        "guard: the server refused it in a read-only "
                                        "transaction (" +
                                            message + "): only a single read-only query may run"});
  }
  if (err == kLockWaitTimeout) {
    return std::unexpected(QueryFailure{FailureClass::kTimeout, "",
                                        "mysql: " + message +
                                            ": a table was locked by another session; try "
                                            "again later"});
  }
  if (err == kServerGone || err == kServerLost) {
    return std::unexpected(QueryFailure{
        FailureClass::kRuntimeError, "",
        Capped("mysql: " + message + " (the connection is opened again for the next query)")});
  }
  if (err != 0) {
    std::string text = "mysql: " + message;
    if (err == kBadField) {
      text += NoSuchColumnHint(Quoted(message), sql, cards);
    } else if (err == kNoSuchTable) {
      std::string name = Quoted(message);
      if (const size_t dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
      text += NoSuchTableHint(name, cards);
    } else if (err == kNonUniqError) {
      text += AmbiguousColumnHint(Quoted(message), sql, cards);
    }
    return std::unexpected(
        QueryFailure{err == kParseError ? FailureClass::kSyntaxError : FailureClass::kRuntimeError,
                     "", Capped(std::move(text))});
  }
  if (command) {
    return std::unexpected(QueryFailure{
        FailureClass::kGuardViolation, "read_only",
        "guard: only a query that returns rows may run (SELECT, WITH ... SELECT, VALUES, TABLE)"});
  }
  return table;
}

QueryOutcome MySqlEngine::Query(std::string_view sql, const Limits& limits) {
  if (auto v = CheckQueryText(sql, Dialect::kMySQL, table_names_)) return std::unexpected(*v);
  return QueryPastTextGuard(sql, limits);
}

QueryOutcome MySqlEngine::QueryPastTextGuard(std::string_view sql, const Limits& limits) {
  return RunMySql(*session_, sql, limits, cards_);
}

QueryOutcome QueryMySqlPastTextGuard(Engine& engine, std::string_view sql, const Limits& limits) {
  auto* my = dynamic_cast<MySqlEngine*>(&engine);
  if (!my) {
    return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "", "not a MySQL engine"});
  }
  return my->QueryPastTextGuard(sql, limits);
}

}  // namespace quarry::engine::internal
