// DuckDB's C handles with owners (their destroy functions take a pointer to the handle), the
// error classification, and the watchdog that interrupts a query at its deadline or on a stop
// request. Internal to the engine module.
#pragma once

#include <duckdb.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

// A directory only this process uses, for DuckDB's spill files, removed with everything in it
// when destroyed. DuckDB lets every query read its temp directory even with external access
// off, and its default is ./.tmp, relative to wherever quarry runs, symlinks followed: a data
// bundle that ships `.tmp -> /` would make every file readable. path() is empty when no
// directory could be made; the engine then spills nowhere.
class SpillDirectory {
 public:
  SpillDirectory();
  ~SpillDirectory();
  SpillDirectory(const SpillDirectory&) = delete;
  SpillDirectory& operator=(const SpillDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The settings that confine a DuckDB connection, to run before it evaluates any SQL that data
// defines (a view in a .duckdb file, a model's query): the private spill directory (or none),
// no allowed directories, only `allowed_paths` readable, external access off. Configuration is
// not locked yet: the engine still attaches and loads.
std::vector<std::string> ConfineStatements(const std::string& spill_dir,
                                           const std::vector<std::string>& allowed_paths);

// The largest value repeat(), lpad() and rpad() may build, in bytes.
inline constexpr int64_t kMaxBuiltValueBytes = 100000;
// Temp macros over repeat(), lpad() and rpad() that refuse to build a value past
// kMaxBuiltValueBytes, with an error naming the size: run with ConfineStatements.
std::vector<std::string> BuiltValueCaps();

class Database {
 public:
  Database() = default;
  ~Database() {
    if (db_) duckdb_close(&db_);
  }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  duckdb_database* out() { return &db_; }
  duckdb_database get() const { return db_; }

 private:
  duckdb_database db_ = nullptr;
};

class Connection {
 public:
  Connection() = default;
  ~Connection() {
    if (conn_) duckdb_disconnect(&conn_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  duckdb_connection* out() { return &conn_; }
  duckdb_connection get() const { return conn_; }

 private:
  duckdb_connection conn_ = nullptr;
};

// A DuckDB configuration being built. Every setting is checked: the ones quarry opens with
// (no extension autoloading, read-only, memory limits) are its guards, and a value DuckDB
// refuses must stop the open, never leave the engine writable or autoloading. (A name DuckDB
// does not know, as after a rename, is accepted here and refused by duckdb_open_ext.)
class Config {
 public:
  using Settings = std::vector<std::pair<std::string, std::string>>;
  Config() { duckdb_create_config(&config_); }
  ~Config() { duckdb_destroy_config(&config_); }
  Config(const Config&) = delete;
  Config& operator=(const Config&) = delete;
  // Errors: kInternal naming the setting and value DuckDB refused.
  [[nodiscard]] Result<void> Set(const std::string& name, const std::string& value) {
    if (config_ == nullptr ||
        duckdb_set_config(config_, name.c_str(), value.c_str()) == DuckDBError) {
      return Fail(Error::Code::kInternal, "duckdb refused the setting " + name + " = '" + value +
                                              "', which quarry opens the engine with; the "
                                              "engine stays closed (report this as a bug)");
    }
    return {};
  }
  // Each of `settings` in order; the first refused one is the error.
  [[nodiscard]] Result<void> SetAll(const Settings& settings) {
    for (const auto& [name, value] : settings) {
      if (auto r = Set(name, value); !r) return r;
    }
    return {};
  }
  duckdb_config get() const { return config_; }

 private:
  duckdb_config config_ = nullptr;
};

// duckdb_destroy_result must run even after a failed query.
class QueryResult {
 public:
  QueryResult() = default;
  ~QueryResult() { duckdb_destroy_result(&result_); }
  QueryResult(const QueryResult&) = delete;
  QueryResult& operator=(const QueryResult&) = delete;
  duckdb_result* out() { return &result_; }
  duckdb_result* get() { return &result_; }
  std::string error() { return duckdb_result_error(&result_) ? duckdb_result_error(&result_) : ""; }

 private:
  duckdb_result result_{};
};

class Prepared {
 public:
  Prepared() = default;
  ~Prepared() { duckdb_destroy_prepare(&stmt_); }
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
  duckdb_prepared_statement* out() { return &stmt_; }
  duckdb_prepared_statement get() const { return stmt_; }

 private:
  duckdb_prepared_statement stmt_ = nullptr;
};

class Extracted {
 public:
  Extracted() = default;
  ~Extracted() { duckdb_destroy_extracted(&ex_); }
  Extracted(const Extracted&) = delete;
  Extracted& operator=(const Extracted&) = delete;
  duckdb_extracted_statements* out() { return &ex_; }
  duckdb_extracted_statements get() const { return ex_; }

 private:
  duckdb_extracted_statements ex_ = nullptr;
};

inline std::optional<std::string> Cell(duckdb_result* r, idx_t col, idx_t row) {
  if (duckdb_value_is_null(r, col, row)) return std::nullopt;
  char* v = duckdb_value_varchar(r, col, row);
  if (!v) return std::nullopt;
  std::string s(v);
  duckdb_free(v);
  return s;
}

// DuckDB's messages start with the error kind ("Parser Error: ..."), which decides the class.
inline FailureClass ClassifyDuckDbError(std::string_view message) {
  if (message.starts_with("Parser Error")) return FailureClass::kSyntaxError;
  if (message.starts_with("Permission Error")) return FailureClass::kGuardViolation;
  return FailureClass::kRuntimeError;
}

// Stops a query at its deadline or when `stop` is requested, from a second thread
// (duckdb_interrupt is the documented way), and after a second reports DuckDB's progress
// estimate, so a long load or query is not silent. timeout_ms 0: no deadline. Once it fires it
// interrupts again every 100 ms until the query returns: an interrupt that lands before DuckDB
// has begun executing is cleared when execution begins.
class Watchdog {
 public:
  Watchdog(duckdb_connection conn, int64_t timeout_ms, const ProgressFn* progress = nullptr,
           std::string what = {}, StopToken stop = {});
  ~Watchdog();
  bool fired() {
    std::lock_guard lock(mu_);
    return fired_;
  }
  bool cancelled() {
    std::lock_guard lock(mu_);
    return cancelled_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool fired_ = false;      // the deadline passed
  bool cancelled_ = false;  // the stop was requested first
  std::thread thread_;
  std::stop_callback<std::function<void()>> on_stop_;
};

// DuckDB's name for a column type ("BIGINT", "TIMESTAMP WITH TIME ZONE"; "OTHER" for a type
// without one). DECIMAL's width and scale come from the logical type (duckdb_query.cc).
std::string DuckDbTypeName(duckdb_type t);

// Runs `sql` on `conn` in the query process (duckdb_query.cc): exactly one statement, which
// DuckDB's own parse must find a SELECT (else guard_violation "read_only"; a PIVOT that expands
// into two, "single_statement"); interrupted at limits.timeout_ms or on limits.stop; at most
// limits.max_rows rows kept, with the true row count. `progress`, when set, hears the
// watchdog's progress.
QueryOutcome ExecuteDuckDbQuery(duckdb_connection conn, std::string_view sql, const Limits& limits,
                                const ProgressFn& progress);

}  // namespace quarry::engine::internal
