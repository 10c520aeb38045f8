// `quarry eval`: execution accuracy on Spider and BIRD. Reads a benchmark in its official
// layout, runs each question through the agent (or, with --gold, takes the gold SQL as the
// prediction), executes gold and predicted SQL read-only on the question's SQLite database and
// compares the two results by the test-suite evaluation's rules (Zhong, Yu and Klein, "Semantic
// Evaluation for Text-to-SQL with Distilled Test Suites", EMNLP 2020; its exec_eval.py) or by
// BIRD's own rule (set equality, BIRD's evaluation.py). Writes one JSON line per question and a
// summary. Sits on bench.h (RunAgent, WilsonInterval, MetricsOf) and engine.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/bench/bench.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::bench {

// ---- Results as compared --------------------------------------------------------------

// One result cell, typed as SQLite stores it. A DuckDB DECIMAL counts as kReal, a boolean as
// kInteger (0/1), as Python's sqlite3 and its == see them.
struct Cell {
  enum class Kind { kNull, kInteger, kReal, kText, kBlob };
  Kind kind = Kind::kNull;
  int64_t integer = 0;
  double real = 0.0;
  std::string bytes;  // kText (UTF-8 as stored) and kBlob
};

// A query's result: column names (not compared) and every row.
struct Denotation {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

// Converts the engine's typed text cells (engine::CellKind) into Cells.
Denotation DenotationOf(const engine::ResultTable& table);

// Two numbers are equal when |a - b| <= max(relative * max(|a|, |b|), absolute) (Python's
// math.isclose with its default rel_tol=1e-9 and abs_tol 1e-12 here): it absorbs the last-bit
// differences of summing in another order and nothing a query could mean. Two integers are
// compared exactly.
struct Tolerance {
  double relative = 1e-9;
  double absolute = 1e-12;
};

// NULL equals NULL; an integer equals a real of (nearly, see Tolerance) the same value, as
// 1 == 1.0 in Python; text equals text byte for byte; a blob equals a blob; nothing else is
// equal ('1' is not 1, text is not a blob).
bool CellsEqual(const Cell& a, const Cell& b, const Tolerance& tolerance);

enum class MatchRule {
  // The test-suite rules: rows as multisets (order only when order_matters), columns matched
  // up to a permutation, two empty results equal whatever their columns.
  kTestSuite,
  // BIRD's: set(predicted rows) == set(gold rows): duplicates and order ignored, columns
  // compared by position.
  kBirdSet,
};
std::string_view MatchRuleName(MatchRule rule);  // "test-suite", "bird"

struct CompareOptions {
  MatchRule rule = MatchRule::kTestSuite;
  bool order_matters = false;  // kTestSuite only: the gold query has a top-level ORDER BY
  Tolerance tolerance;
  // Column permutations tried at most (kTestSuite). Only permutations under which every
  // column holds the same multiset of values are tried, and identical columns are not swapped,
  // so the cap is met only by many columns with the same values in different rows.
  int max_permutations = 10000;
};

struct Comparison {
  bool match = false;
  // Why not, in words ("row count differs: gold 3, predicted 4"); "" on a match.
  std::string reason;
};

// Compares the predicted result with the gold one. Never throws.
Comparison CompareDenotations(const Denotation& gold, const Denotation& predicted,
                              const CompareOptions& options);

// ---- SQL text -------------------------------------------------------------------------

// Whether `sql` has ORDER BY outside every parenthesis (so not in a subquery, a window's
// OVER (...) or a function call), outside string literals, quoted identifiers and comments.
bool HasTopLevelOrderBy(std::string_view sql);
// `sql` with every DISTINCT keyword (outside literals, quoted identifiers and comments)
// removed, as the test-suite evaluation does unless --keep_distinct.
std::string RemoveDistinct(std::string_view sql);
// "> =", "< =", "! =" joined into one operator outside literals (the test-suite postprocess).
std::string JoinSpacedOperators(std::string_view sql);

// ---- Executing a query for comparison --------------------------------------------------

struct ExecLimits {
  int64_t timeout_ms = 60000;  // the test-suite evaluation's TIMEOUT
  int max_rows = 100000;       // more rows than this: the result cannot be compared
};

// Runs `sql` on `engine` (read-only, under the guard) and returns every row. Errors (kData):
// the engine's message for a failed or timed-out query; "more than N rows" when the result
// is over ExecLimits::max_rows.
Result<Denotation> Execute(engine::Engine& engine, std::string_view sql, const ExecLimits& limits);

// ---- Benchmarks -----------------------------------------------------------------------

enum class Benchmark { kSpider, kBird };
std::string_view BenchmarkName(Benchmark b);  // "spider", "bird"

struct EvalQuestion {
  size_t index = 0;         // position in <split>.json, from 0
  std::string question_id;  // BIRD's question_id; Spider: the index as text
  std::string db_id;
  std::string question;
  std::string evidence;    // BIRD only ("" for Spider)
  std::string difficulty;  // BIRD only: simple, moderate, challenging
  std::string gold_sql;
  std::filesystem::path db_path;  // <databases>/<db_id>/<db_id>.sqlite
  // That file is absent: the question is skipped and counted (skipped_missing_db), not run.
  bool db_missing = false;
  // Every *.sqlite file in the database's folder, db_path first: the test-suite evaluation
  // compares on all of them (its distilled test suites are extra files there).
  std::vector<std::filesystem::path> suite_paths;
};

struct EvalDataset {
  Benchmark benchmark = Benchmark::kSpider;
  std::string split;
  std::filesystem::path dir;
  std::vector<EvalQuestion> questions;
};

// Spider's layout in `dir`: <split>.json ([{db_id, question, query}]), <split>_gold.sql (when
// present: one "SQL<TAB>db_id" line per question, the gold taken from it), databases under
// <split>_database/ when it exists (Spider's test split) else database/, each at
// <db_id>/<db_id>.sqlite. tables.json is not read: the agent reads the schema from the
// database file. A question whose database file is absent is kept, marked db_missing. Errors:
// kData naming the file and the problem (missing, not JSON, an entry without a field, a gold
// file whose line count or db_id disagrees, no database folder, a db_id that is no folder name).
Result<EvalDataset> LoadSpider(const std::filesystem::path& dir, const std::string& split);
// BIRD's layout in `dir`: <split>.json ([{question_id, db_id, question, evidence, SQL,
// difficulty}]), databases at <split>_databases/<db_id>/<db_id>.sqlite. Errors as LoadSpider.
Result<EvalDataset> LoadBird(const std::filesystem::path& dir, const std::string& split);

// The question as the model is given it: BIRD's evidence follows it as "\n\nHint: <evidence>"
// (nothing when there is none).
std::string PromptQuestion(const EvalQuestion& question);

// `n` of `total` indices, chosen by `seed`, in ascending order; all of them when n == 0 or
// n >= total. The same seed gives the same sample on every platform: a partial Fisher-Yates
// shuffle of 0..total-1 driven by std::mt19937_64(seed), each draw uniform in [i, total) by
// rejection of the 64-bit outputs past the largest multiple of the range.
std::vector<size_t> SampleIndices(size_t total, size_t n, uint64_t seed);

// ---- A run ----------------------------------------------------------------------------

// How BIRD's evidence reaches the model: kHint after the question, as BIRD's papers give it;
// kKnowledge as a rule of the run's knowledge section (docs/knowledge.md), as a user's
// knowledge files would; kNone not at all (BIRD without evidence).
enum class Evidence { kHint, kKnowledge, kNone };
std::string_view EvidenceName(Evidence e);  // "hint", "knowledge", "none"

// The knowledge a question's run is given: `dir`/<db_id>/ when that folder exists, else `dir`
// (nothing when `dir` is empty), plus with kKnowledge the question's evidence as the rule
// "evidence" (origin "BIRD evidence"). Null when there is none of either. Errors:
// knowledge::Load's.
Result<std::shared_ptr<const knowledge::Knowledge>> QuestionKnowledge(
    const std::filesystem::path& dir, const EvalQuestion& question, Evidence evidence);

struct EvalOptions {
  std::filesystem::path out_dir;    // questions.jsonl and summary.json; must not hold them yet
  std::filesystem::path runs_dir;   // each question's runs/<id>/trace.json
  bool gold_as_prediction = false;  // --gold: no model; the harness's own test
  MatchRule rule = MatchRule::kTestSuite;
  bool keep_distinct = false;  // test-suite rule: else DISTINCT is removed from both
  ExecLimits exec;
  Tolerance tolerance;
  agent::Config config;  // for the agent's runs (its prompt set to PromptMode::kEval)
  Evidence evidence = Evidence::kHint;  // BIRD's; Spider has none
  std::filesystem::path knowledge;      // QuestionKnowledge's folder; "" : none
  engine::OpenOptions open;             // how the agent's database is opened
  // "live", "recorded" (fixtures) or "none" (--gold): what the model turns were, in the summary.
  std::string turns = "live";
  std::string tag;
  std::string model;    // as the summary names it ("" : from the first run's trace)
  std::string command;  // the command line, for the summary
  // Called after each question with its result line (for progress on stderr).
  std::function<void(const nlohmann::ordered_json& question_result)> on_question;
  StopToken stop;  // Ctrl-C: the run ends after the current question, summary written
};

// What a run measured; written as summary.json.
struct EvalSummary {
  int questions = 0;  // picked
  int scored = 0;     // questions - harness_errors - skipped: the accuracy's denominator
  int matched = 0;
  int mismatched = 0;         // both ran, results differ
  int prediction_errors = 0;  // the predicted SQL failed, timed out or was over the row cap
  int no_prediction = 0;      // the run gave no SQL answer (no answer, a clarification, Python)
  int harness_errors = 0;     // the gold SQL failed or was over the row cap: not the model's miss
  // No model client for it (--offline without a recording), or its database is missing.
  int skipped = 0;
  int skipped_missing_db = 0;  // of skipped: the question's database file is absent
  bool interrupted = false;
  nlohmann::ordered_json json;  // the whole summary as written
};

// Runs the `picked` questions of `dataset` (indices into dataset.questions) and writes
// out_dir/questions.jsonl (one line per question, as each ends) and out_dir/summary.json.
// `clients` makes each question's model client (unused with gold_as_prediction). Errors:
// kUsage when out_dir already holds results; kInternal when they cannot be written.
Result<EvalSummary> RunEval(const EvalDataset& dataset, const std::vector<size_t>& picked,
                            const EvalOptions& options, const ClientFactory& clients);

// ---- Two runs compared -----------------------------------------------------------------

// Two eval runs paired by question (db_id and question_id): the questions scored in both
// (outcome match, mismatch, prediction_error or no_prediction), each run's matches among them,
// and McNemar's exact test (b: matched only in A, c: only in B).
struct EvalComparison {
  std::filesystem::path a, b;
  nlohmann::ordered_json a_summary, b_summary;  // each folder's summary.json (null if absent)
  int64_t pairs = 0;
  int64_t a_matched = 0, b_matched = 0;
  int64_t both = 0, neither = 0;
  int64_t a_only = 0, b_only = 0;
  double p_value = 1.0;
  int64_t only_in_a = 0, only_in_b = 0;  // questions scored in one run and not the other
};
// Errors: kUsage when a folder has no questions.jsonl; kData naming the file and line of a
// line that is not a result object.
Result<EvalComparison> CompareEvalRuns(const std::filesystem::path& a,
                                       const std::filesystem::path& b);
nlohmann::ordered_json ComparisonJson(const EvalComparison& c);
std::string ComparisonText(const EvalComparison& c);

}  // namespace quarry::bench
