// The query watchdog (duckdb_internal.h): a second thread that interrupts the query at its
// deadline or on a stop request, and reports DuckDB's progress estimate after a second.
#include "quarry/engine/duckdb_internal.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

namespace quarry::engine::internal {

SpillDirectory::SpillDirectory() {
  std::error_code ec;
  std::string dir = (std::filesystem::temp_directory_path(ec) / "quarry-spill-XXXXXX").string();
  if (ec) dir = "/tmp/quarry-spill-XXXXXX";
  if (mkdtemp(dir.data())) path_ = dir;  // mode 0700
}

SpillDirectory::~SpillDirectory() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> ConfineStatements(const std::string& spill_dir,
                                           const std::vector<std::string>& allowed_paths) {
  std::string paths;
  for (const auto& p : allowed_paths) paths += (paths.empty() ? "" : ", ") + QuoteLiteral(p);
  return {"SET temp_directory = " + QuoteLiteral(spill_dir), "SET allowed_directories = []",
          "SET allowed_paths = [" + paths + "]", "SET enable_external_access = false"};
}

std::vector<std::string> BuiltValueCaps() {
  // DuckDB checks for an interrupt only between chunks of rows: one call of repeat(), lpad()
  // or rpad() building a 1 GB string ran 17-40 s and took 2 GB that memory_limit does not
  // count, past every timeout and cancel. These macros, in the temp schema that name lookup
  // searches first (a view stored in a .duckdb file included), refuse such a value before it
  // is built. Bounding every function that can grow a value this way is not done: see
  // README, "Limits".
  const std::string cap = std::to_string(kMaxBuiltValueBytes);
  // The count's own type in the error branch, so the function still binds as without us.
  auto refuse = [&](const std::string& what, const std::string& size, const std::string& type) {
    return "CASE WHEN " + size + " > " + cap + " THEN error('" + what +
           "() would build a value of ' || (" + size + ") || ' bytes, more than " + cap +
           ": build a smaller one')::" + type + " ELSE n END";
  };
  return {
      "CREATE OR REPLACE TEMP MACRO repeat(s, n) AS system.main.repeat(s, " +
          refuse("repeat", "n * strlen(s::VARCHAR)", "BIGINT") + ")",
      "CREATE OR REPLACE TEMP MACRO lpad(s, n, f) AS system.main.lpad(s, " +
          refuse("lpad", "n", "INTEGER") + ", f)",
      "CREATE OR REPLACE TEMP MACRO rpad(s, n, f) AS system.main.rpad(s, " +
          refuse("rpad", "n", "INTEGER") + ", f)",
  };
}

Watchdog::Watchdog(duckdb_connection conn, int64_t timeout_ms, const ProgressFn* progress,
                   std::string what, StopToken stop)
    : thread_([this, conn, timeout_ms, progress, what = std::move(what)] {
        const auto start = std::chrono::steady_clock::now();
        std::unique_lock lock(mu_);
        bool reported = false;
        while (!done_) {
          const auto elapsed = std::chrono::steady_clock::now() - start;
          if (!fired_ && !cancelled_ && timeout_ms > 0 &&
              elapsed >= std::chrono::milliseconds(timeout_ms)) {
            fired_ = true;
          }
          if (fired_ || cancelled_) {
            duckdb_interrupt(conn);
            cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; });
            continue;
          }
          if (progress && *progress && elapsed >= std::chrono::seconds(1)) {
            const double pct = duckdb_query_progress(conn).percentage;
            if (pct >= 0) {
              (*progress)(what, pct);
              reported = true;
            }
          }
          auto slice = std::chrono::milliseconds(250);
          if (timeout_ms > 0) {
            slice = std::min(slice, std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::milliseconds(timeout_ms) - elapsed));
          }
          cv_.wait_for(lock, std::max(slice, std::chrono::milliseconds(1)),
                       [this] { return done_ || cancelled_; });
        }
        if (reported) (*progress)(what, -1.0);
      }),
      // Runs on the thread that requests the stop (or here, when it already was).
      on_stop_(std::move(stop), [this] {
        {
          std::lock_guard lock(mu_);
          if (!fired_) cancelled_ = true;
        }
        cv_.notify_all();
      }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace quarry::engine::internal
