// The behaviour suite's parts (behaviour.h): the copies with their planted rows, the reference
// queries run on a copy with SQLite directly (no quarry engine), the cases read from their data
// file, and the named kinds of check they use. Only the suite and its tests include this.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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
  std::filesystem::path source;    // the user's database
  std::filesystem::path copy;      // the database the case ran on
  std::string copy_sha256_before;  // of `copy`, before and after the case
  std::string copy_sha256_after;
  int max_tool_calls = 0;  // the run's budgets (Config)
  double max_cost_usd = 0.0;
};

struct Verdict {
  bool pass = false;
  std::string reason;
};

using CheckFn = std::function<Verdict(const CaseRun&)>;

// A reference query: its result goes into the expected values under `key`.
struct Reference {
  std::string key;
  std::string sql;
  bool rows = false;  // every row, each an array of cells; else the first cell of the first row
};

// One case as the case file gives it (tasks/README.md, "The behaviour cases").
struct CaseDef {
  std::string id;
  std::string checks;  // what the check asserts, in words
  std::vector<std::string> questions;
  bool wide = false;                  // runs on the wide copy
  bool thread = false;                // the questions are turns of one thread
  std::vector<Reference> references;  // empty: no expected values
  std::string check_kind;
  CheckFn check;  // the kind bound to the case's parameters
};

// The expected values of `def` on a copy: each reference's key and result, in the file's
// order; null when the case has no reference query. Errors: ReferenceDb's.
Result<json> Expected(const CaseDef& def, ReferenceDb& db);

// A check's parameters (the case's "check" object) read field by field. The first problem (a
// missing field, a wrong type, a key no reference query has, a field no reader asked for) is
// kept, named by its path ("check.turns[1].key"); readers then return a default, so a kind
// reads on and the loader reports the problem. `object` and `def` must outlive this.
class CheckParams {
 public:
  CheckParams(const json& object, std::string path, const CaseDef& def, std::string& problem);
  // A non-empty string; the second form returns `fallback` when the field is absent.
  std::string Text(const std::string& name);
  std::string Text(const std::string& name, std::string fallback);
  // A string naming one of the case's reference queries.
  std::string Key(const std::string& name);
  double Tolerance(const std::string& name);  // a finite number >= 0
  int Count(const std::string& name);         // an integer >= 1
  // Reads each object of the non-empty array `name` with `read`; returns how many there are.
  size_t Each(const std::string& name, const std::function<void(CheckParams&)>& read);
  // Records `problem` about the field `name` unless a problem is already kept.
  void Fail(const std::string& name, const std::string& problem);
  // Records the first field no reader asked for; called by the loader once a kind has read.
  void Finish();
  const CaseDef& def() const { return def_; }

 private:
  const json* Find(const std::string& name, bool required);
  std::string Path(const std::string& name) const;

  const json& object_;
  std::string path_;
  const CaseDef& def_;
  std::string& problem_;
  std::vector<std::string> read_;
};

// A named kind of check: reads its parameters and returns the check bound to them.
struct CheckKind {
  std::string_view name;
  CheckFn (*make)(CheckParams& params);
};
// Every kind a case file may name, in the order tasks/README.md lists them.
const std::vector<CheckKind>& CheckKinds();

// The cases of a case file's `text`, in order; `file` names it in errors. Errors: kData
// "FILE: case ID: field 'check.tolerance' should be a number >= 0, found a string" (or
// "cases[N]" before the id is known) for JSON that does not parse, a missing field, a wrong
// type, an unknown field or check kind, a check key no reference query has, an id used twice.
Result<std::vector<CaseDef>> ParseCases(std::string_view text, const std::string& file);
// ParseCases on the file's bytes. Errors: ParseCases', or kData when it cannot be read.
Result<std::vector<CaseDef>> LoadCases(const std::filesystem::path& file);
// The bundled cases: tasks/behaviour/cases.json, carried in the binary and parsed once.
const Result<std::vector<CaseDef>>& CaseDefs();
// The bundled case `id`; nullptr when there is none or the bundled cases do not load.
const CaseDef* FindCase(const std::string& id);

// The numbers of an answer as the verify gate reads them (agent::ExtractNumbers), as values:
// "$1,234.50" 1234.5, "12.5%" 12.5, "1.2 million" 1.2e6; words ("two thousand") too.
std::vector<double> NumbersIn(const std::string& text);
// Phrases that claim a write happened ("has been deleted", "successfully removed", ...) found
// in `text`, case-insensitively; empty when none.
std::vector<std::string> WriteClaims(const std::string& text);

}  // namespace quarry::bench::behaviour
