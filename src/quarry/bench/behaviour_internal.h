// The behaviour suite's parts (behaviour.h): the copies with their planted rows, the reference
// queries run on a copy with SQLite directly (no quarry engine), and the case table with each
// case's check. Only the suite and its tests include this.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/bench/behaviour.h"

struct sqlite3;

namespace quarry::bench::behaviour {

using json = nlohmann::ordered_json;

// The SQL applied to the copy, in order: the planted instruction (a new Artist row) and the
// text 'NULL' in one Company cell that was NULL.
std::vector<std::string> PlantedSql();
// Generated tables added to the wide copy, and the names they use.
inline constexpr int kWideTables = 160;

// The two databases a suite runs on, in `dir`.
struct Copies {
  std::filesystem::path dir;
  std::filesystem::path copy;  // dir/chinook.sqlite, planted
  std::filesystem::path wide;  // dir/chinook_wide.sqlite: the planted copy + kWideTables tables
};
// Copies `source` into `dir` and plants the rows. Errors: kUsage when a copy would be the source
// itself; kData when the source is missing or not a SQLite database, or SQLite refuses the SQL.
Result<Copies> MakeCopies(const std::filesystem::path& source, const std::filesystem::path& dir);

// A copy opened read-only with the SQLite C API, for the reference queries.
class ReferenceDb {
 public:
  // Errors: kData naming the file.
  static Result<ReferenceDb> Open(const std::filesystem::path& path);
  ReferenceDb(ReferenceDb&& other) noexcept;
  ReferenceDb& operator=(ReferenceDb&&) = delete;
  ReferenceDb(const ReferenceDb&) = delete;
  ~ReferenceDb();
  // Every row of `sql`, cells as JSON (integer, real, text, null). Errors: kData with SQLite's
  // message and the query.
  Result<json> Rows(const std::string& sql);
  // The first cell of the first row. Errors: Rows', or kData when there is no row.
  Result<json> Value(const std::string& sql);

 private:
  explicit ReferenceDb(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

// What a check is given: the case's traces (one per question, in order), the expected values
// from the reference queries, and the files it ran on.
struct CaseRun {
  std::vector<trace::Trace> traces;
  std::vector<std::filesystem::path> trace_paths;
  json expected;
  std::filesystem::path source;       // the user's database
  std::filesystem::path copy;         // the database the case ran on
  std::string copy_sha256_before;     // of `copy`, before and after the case
  std::string copy_sha256_after;
  int max_tool_calls = 0;             // the run's budgets (Config)
  double max_cost_usd = 0.0;
};

struct Verdict {
  bool pass = false;
  std::string reason;
};

struct CaseDef {
  std::string id;
  std::string checks;
  std::vector<std::string> questions;
  bool wide = false;    // runs on the wide copy
  bool thread = false;  // the questions are turns of one thread
  // The expected values, from reference queries on the copy; null: none.
  std::function<Result<json>(ReferenceDb&)> expect;
  std::function<Verdict(const CaseRun&)> check;
};
const std::vector<CaseDef>& CaseDefs();
const CaseDef* FindCase(const std::string& id);

// The numbers of an answer as the verify gate reads them (agent::ExtractNumbers), as values:
// "$1,234.50" 1234.5, "12.5%" 12.5, "1.2 million" 1.2e6; words ("two thousand") too.
std::vector<double> NumbersIn(const std::string& text);
// Phrases that claim a write happened ("has been deleted", "successfully removed", ...) found
// in `text`, case-insensitively; empty when none.
std::vector<std::string> WriteClaims(const std::string& text);

}  // namespace quarry::bench::behaviour
