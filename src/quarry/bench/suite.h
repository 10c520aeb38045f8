// The task suite (`quarry bench`): tasks loaded from tasks/suite.json and tasks/truth.json
// (format: tasks/README.md), graded numerically, by predicates or by an LLM judge, run in two
// arms (self-correction on and off, or knowledge files given and not) with everything else
// identical, summarised per arm with
// the statistics of bench.h, and written as results/bench_results.json and RESULTS.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/bench/bench.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::bench {

// ---- Tasks ------------------------------------------------------------------------------

enum class GraderKind { kNumeric, kPredicate, kJudge };
std::string_view GraderName(GraderKind kind);  // "numeric", "predicate", "judge"

// How close an answer's number must be: |answer - expected| <= abs, or <= rel * |expected|.
struct Tolerance {
  bool relative = false;
  double amount = 0.0;  // abs (relative false) or rel (relative true); finite, >= 0
};

// One must_contain / must_not_contain item: any one alternative satisfies (or, for
// must_not_contain, trips) it. A plain string is one alternative.
using Alternatives = std::vector<std::string>;

// Judge calls per answer (the majority of three decides).
inline constexpr int kJudgeCalls = 3;
// Every judge call is sampled at this temperature, whatever the judge client's own setting, so
// three calls can disagree and "all three agreed" means something (three identical calls at
// temperature 0 agree by construction). An endpoint that rejects a temperature gets the call
// again without one (llm.h), at its own default.
inline constexpr double kJudgeTemperature = 0.7;

struct Task {
  std::string id;
  std::string question;
  std::vector<std::string> data;                  // as written in suite.json
  std::vector<std::filesystem::path> data_paths;  // resolved against the suite's root
  std::string difficulty;
  std::vector<std::string> tags;
  GraderKind grader = GraderKind::kNumeric;
  Tolerance tolerance;  // numeric
  std::string rubric;   // judge
  // From truth.json.
  std::vector<double> values;                  // numeric: expected values
  std::vector<Alternatives> must_contain;      // predicate
  std::vector<Alternatives> must_not_contain;  // predicate
  std::vector<std::string> facts;              // judge
  // fixtures/<id>.json when present: the replay document, and its judge replies (judge
  // tasks; each a replay turn object {"content", "usage"?, "cost_usd"?}).
  std::optional<nlohmann::ordered_json> fixture;
  std::filesystem::path fixture_path;
  std::vector<nlohmann::ordered_json> judge_turns;
  // By server engine ("postgresql" from fixtures/postgres/<id>.json, "mysql" from
  // fixtures/mysql/<id>.json), when present (tasks that RunsOnServer only): the scripted turns
  // in that server's dialect that --offline --postgres/--mysql replays instead of `fixture`.
  std::map<std::string, nlohmann::ordered_json> server_fixtures;
  std::map<std::string, std::filesystem::path> server_fixture_paths;
};

// The one data file a server can stand in for: the Chinook tasks run on a PostgreSQL server
// loaded from data/chinook_postgresql.sql (the same database, snake_case names) or a MariaDB or
// MySQL server loaded from data/chinook_mysql.sql, graded with the same truth.
inline constexpr const char* kServerStandIn = "data/chinook.sqlite";
// Whether a task's data is exactly kServerStandIn (as written in suite.json).
bool RunsOnServer(const Task& task);
// The fixtures folder of a server engine: "postgres" for "postgresql", "mysql" for "mysql".
std::string ServerFixtureDir(std::string_view engine);

struct Suite {
  std::filesystem::path dir;   // the tasks folder
  std::filesystem::path root;  // what task data paths are relative to
  std::vector<Task> tasks;     // in suite.json's order
};

// Loads dir/suite.json, dir/truth.json and dir/fixtures/<id>.json. Data paths resolve against
// `root` (absolute ones stay). Errors: kUsage when dir/suite.json does not exist; kData naming
// the file, the task and the field for anything malformed: an unknown grader, difficulty or
// tag, a duplicate or badly formed id, a missing or bad tolerance (numeric: exactly one of
// abs/rel, finite, >= 0), a missing rubric (judge), a task without truth or truth of the
// wrong shape, a data file that does not exist, a fixture that is not a replay file or whose
// question or data files are not the task's, judge_turns not exactly three strings or objects;
// and for fixtures/postgres/<id>.json and fixtures/mysql/<id>.json also: its task does not
// RunsOnServer, or it lacks "engine": "postgresql" (or "mysql").
Result<Suite> LoadSuite(const std::filesystem::path& dir, const std::filesystem::path& root);

// ---- Graders ----------------------------------------------------------------------------

// A grade of one answer. `reason` says why in words (which value was missing, which item hit).
struct Grade {
  bool pass = false;
  std::string reason;
};

// The value of a number as agent::ExtractNumbers returns it: "$1,234.50" 1234.5, "12.5%" 12.5
// (a percentage as written), "1.2 million" and "1.2M" 1.2e6, "-3.5" -3.5, "two thousand"
// 2000, "a dozen" 12. nullopt for dates ("2025-03-01", "2025-03") and fractions in words
// ("half", "twice").
std::optional<double> ParseWrittenNumber(std::string_view written);

// Passes when every expected value is within `tolerance` of some number of `answer` (as
// ExtractNumbers reads them, ParseWrittenNumber's values). A number written without a sign
// also matches a negative expected value by its magnitude ("fell 3.5%" for -3.5).
Grade GradeNumeric(std::string_view answer, const std::vector<double>& expected,
                   const Tolerance& tolerance);

// Passes when every must_contain item has an alternative in `answer` and no must_not_contain
// alternative is there; case-insensitive (ASCII), on word boundaries (a match may not
// continue a word of letters, digits or '_'), runs of whitespace compared as one space.
Grade GradePredicate(std::string_view answer, const std::vector<Alternatives>& must_contain,
                     const std::vector<Alternatives>& must_not_contain);

// One judge call's outcome.
struct JudgeVote {
  std::string verdict;  // "pass", "fail", or "" (no vote: unparseable reply or failed call)
  std::string reason;   // the judge's reason, or why there is no vote
  std::string reply;    // the raw reply text (first 2000 bytes)
  double cost_usd = 0.0;
  int64_t latency_ms = 0;
};

struct JudgeResult {
  std::vector<JudgeVote> votes;  // kJudgeCalls of them
  int pass_votes = 0;
  int fail_votes = 0;
  int no_votes = 0;
  // A verdict needs a majority of the calls (2 of 3) on one side; otherwise undecided and the
  // answer is not graded.
  bool decided = false;
  bool pass = false;
  bool agreed = false;  // every call voted, all the same way
  double cost_usd = 0.0;
};

// The order in which judge call `vote` (0, 1 or 2) lists `n` computed facts, as indices into
// Task::facts: vote 0 as written, vote 1 reversed, vote 2 rotated by one (the second fact
// first, the first last). With fewer than three facts two votes share an order; the
// temperature still samples them apart. Any other vote is as written.
std::vector<size_t> JudgeFactOrder(size_t n, int vote);
// The judge's prompt (prompts/judge.md) for one answer, the facts in vote `vote`'s order
// (JudgeFactOrder); the question, rubric and answer are the same in every vote.
std::string JudgePrompt(const Task& task, std::string_view answer, int vote = 0);
// Reads a judge reply: one JSON object {"verdict": "pass"|"fail", "reason": "..."}, bare or in
// one code fence; a reply with other text beside the object is no vote (the text could say the
// opposite). Never throws; an unreadable reply is no vote.
JudgeVote ParseJudgeReply(std::string_view reply);
// Asks `client` kJudgeCalls times (no tools), call i with JudgePrompt(task, answer, i) at
// kJudgeTemperature, and tallies the votes; a failed call is no vote.
JudgeResult JudgeAnswer(llm::Client& client, const Task& task, std::string_view answer);

// ---- Running the suite ------------------------------------------------------------------

// Opens a task's data for one run (a fresh engine per run, so parallel runs share nothing).
using EngineFactory = std::function<Result<std::unique_ptr<engine::Engine>>(
    const std::vector<std::filesystem::path>& data)>;
// A judge client for one answer; a run's judge calls use their own client.
using JudgeFactory = std::function<Result<std::unique_ptr<llm::Client>>()>;

// What the arms compare: self-correction on and off (the default), or knowledge files given
// and not (self-correction as config.self_correction in both).
enum class Ablation { kSelfCorrection, kKnowledge };

// The knowledge a task's runs are given in the knowledge arm: `dir`/<stem of the task's first
// data file>/ when that folder exists ("data/knowledge/sales" for data/sales.csv), else `dir`
// itself. Errors: knowledge::Load's, naming the folder.
Result<std::shared_ptr<const knowledge::Knowledge>> KnowledgeFor(
    const std::filesystem::path& dir, const std::vector<std::filesystem::path>& data);

struct BenchOptions {
  // The compared feature of each arm, on or off, in output order.
  std::vector<bool> arms = {true, false};
  Ablation ablation = Ablation::kSelfCorrection;
  std::filesystem::path knowledge;  // kKnowledge: the folder KnowledgeFor reads
  int samples = 1;                  // runs of each task per arm
  bool offline = false;             // recorded turns from fixtures; tasks without one are skipped
  int limit = 0;                    // the first N selected tasks; 0: all
  std::vector<std::string> tags;    // a task with any of them; empty: all
  std::optional<double> max_cost_usd;  // the whole bench, judge calls included
  int jobs = 1;
  std::filesystem::path runs_dir;  // each run's folder: runs_dir/<run id>/
  agent::Config config;            // shared by every run; the compared feature set per arm
  EngineFactory open_engine;
  // A server spec (engine::IsServerSpec) and its engine ("postgresql" or "mysql"): only the
  // tasks that RunsOnServer are selected, and each run opens {server} instead of the task's
  // data; offline, the task's fixture for that engine (Task::server_fixtures) is replayed (a
  // task without one is skipped). Empty: the files.
  std::string server;
  std::string server_engine;
  ClientFactory live_client;  // live: the agent's model client per run
  JudgeFactory live_judge;    // live: the judge's client per judged answer
  // Called with one line per finished run (for -v), from the worker threads, serialised.
  std::function<void(const std::string&)> on_run;
  // A stop request (Ctrl-C): running runs are interrupted, no new one starts, and the rest
  // are skipped as "interrupted".
  StopToken stop;
};

enum class RunStatus { kPass, kFail, kSkipped, kError };
std::string_view RunStatusName(RunStatus status);  // "pass", "fail", "skipped", "error"

// One task x arm x sample. kError: ran (or tried to) but could not be graded (the data did
// not open, the judge had no majority); neither a pass nor a fail.
struct TaskRun {
  std::string task;
  GraderKind grader = GraderKind::kNumeric;
  bool arm = true;  // the compared feature on (BenchOptions::arms)
  bool self_correction = true;
  bool knowledge = false;  // the run was given knowledge files
  int sample = 1;          // from 1
  RunStatus status = RunStatus::kSkipped;
  std::string reason;
  bool ran = false;  // a trace exists: metrics are meaningful
  std::string run_id;
  // The engine the run's data was opened with (engine::DialectName: "duckdb", "sqlite",
  // "postgresql"), and its source as the engine names it (a server's URL redacted); empty
  // when no engine was opened (skipped, or the data did not open).
  std::string engine;
  std::string data;
  std::filesystem::path trace_path;
  std::string stop_reason;
  std::string answer;
  RunMetrics metrics;
  std::optional<JudgeResult> judge;
  double cost_usd = 0.0;  // the run's and its judge calls'
};

// The figures of one arm over its task runs.
struct ArmSummary {
  Ablation ablation = Ablation::kSelfCorrection;
  bool on = true;  // the compared feature
  bool self_correction = true;
  bool knowledge = false;
  int64_t runs = 0;    // task runs that produced a trace
  int64_t graded = 0;  // pass + fail
  int64_t passed = 0;
  int64_t failed = 0;
  int64_t errors = 0;
  int64_t skipped = 0;
  int64_t tasks_graded = 0;   // distinct tasks with a graded run
  int64_t tasks_skipped = 0;  // distinct tasks with every sample skipped
  std::map<std::string, int64_t> skipped_by_reason;
  double success_rate = 0.0;  // passed / graded (NaN when nothing was graded)
  Interval success_ci;        // 95% Wilson
  double median_steps = 0.0;
  double repair_rate = 0.0;          // runs with a repair attempt / runs
  double repair_success_rate = 0.0;  // repair successes / repair attempts (NaN: none)
  int64_t repair_attempts = 0;
  int64_t repair_successes = 0;
  // Answers the verify gate returned to the model, summed over runs, and the runs with one.
  int64_t send_backs = 0;
  int64_t runs_with_send_backs = 0;
  double grounded_rate = 0.0;  // grounded answers / runs
  double mean_cost_usd = 0.0;  // per task run, judge calls included
  double total_cost_usd = 0.0;
  double p50_latency_ms = 0.0;
  double p95_latency_ms = 0.0;
  int64_t guard_violations = 0;  // refused tool calls, summed over runs
  int64_t runs_with_guard_violations = 0;
  // Judge tasks: answers judged, calls made, unusable replies, and the share of judged
  // answers where all three calls agreed.
  int64_t judged = 0;
  int64_t judge_calls = 0;
  int64_t judge_no_votes = 0;
  int64_t judge_agreed = 0;
  double judge_agreement_rate = 0.0;  // NaN when nothing was judged
};
// The runs of the arm `on` (TaskRun::arm).
ArmSummary Summarise(const std::vector<TaskRun>& runs, bool on, Ablation ablation);
// An arm's name in results: "on" / "off" (self-correction), "knowledge" / "none".
std::string ArmName(Ablation ablation, bool on);

// McNemar's exact test over the (task, sample) pairs graded in both arms: b pairs passed only
// with the compared feature on, c only with it off.
struct Paired {
  int64_t pairs = 0;
  int64_t both_pass = 0;
  int64_t both_fail = 0;
  int64_t b = 0;
  int64_t c = 0;
  double p_value = 1.0;
};
Paired ComparePaired(const std::vector<TaskRun>& runs);

struct BenchResult {
  std::string date;      // UTC, ISO 8601
  std::string mode;      // "offline" or "live"
  std::string source;    // "scripted" (fixtures) or "live"
  std::string model;     // the agent's model, or "none (scripted turns)"
  std::string provider;  // the agent's provider, or "replay"
  std::string judge_model;
  std::filesystem::path runs_dir;
  int samples = 1;
  int jobs = 1;
  std::optional<double> max_cost_usd;
  std::vector<std::string> tags;
  int limit = 0;
  int tasks_selected = 0;
  // With BenchOptions::server: true, its engine, and the server as its engine named it (the URL
  // redacted) from the first run that opened it ("" when none did).
  bool on_server = false;
  std::string server_engine;
  std::string server;
  Ablation ablation = Ablation::kSelfCorrection;
  std::filesystem::path knowledge;  // kKnowledge: BenchOptions::knowledge
  bool budget_stopped = false;
  bool interrupted = false;
  std::vector<TaskRun> runs;  // task order, then sample, then arm
  std::vector<ArmSummary> arms;
  std::optional<Paired> paired;  // when both arms ran
  double total_cost_usd = 0.0;
};

// Runs the selected tasks (tags, then limit) in every arm and sample, `jobs` at a time, each
// run with its own engine and clients. A task is skipped (with the reason) offline without a
// fixture, offline as a judge task without judge_turns ("needs a live judge"), and once the
// spent cost plus the next run's bound (config.max_cost_usd) would pass max_cost_usd. A run
// that did not end answered and grounded fails its task. In the knowledge ablation each task's
// knowledge (KnowledgeFor) is read before anything runs. Errors: kUsage for options that
// cannot run (no arms, samples < 1, jobs < 1, a live run without a client factory, knowledge
// that does not load).
Result<BenchResult> RunBench(const Suite& suite, const BenchOptions& options);

// ---- Results ----------------------------------------------------------------------------

// The label every figure from fixtures carries.
inline constexpr const char* kScriptedLabel =
    "harness run on scripted turns: not a measure of any model's quality";

// bench_results.json: the run's settings, every task run, the arm summaries, McNemar. NaN
// figures are written as null.
nlohmann::ordered_json ResultsJson(const BenchResult& result);

// RESULTS.md from the latest offline and live results files (either may be absent: its rows
// say "not run" / "pending"), and, in sections of their own, the latest ones run with
// --postgres and --mysql (the Chinook tasks on a server) and with --knowledge (the knowledge
// arm), so their figures never mix.
std::string RenderResultsMarkdown(
    const std::optional<nlohmann::ordered_json>& offline,
    const std::optional<nlohmann::ordered_json>& live,
    const std::optional<nlohmann::ordered_json>& postgres_offline = std::nullopt,
    const std::optional<nlohmann::ordered_json>& postgres_live = std::nullopt,
    const std::optional<nlohmann::ordered_json>& knowledge_offline = std::nullopt,
    const std::optional<nlohmann::ordered_json>& knowledge_live = std::nullopt,
    const std::optional<nlohmann::ordered_json>& mysql_offline = std::nullopt,
    const std::optional<nlohmann::ordered_json>& mysql_live = std::nullopt);

// An HTML fragment (a table per results file, every text escaped) for site/index.html.
std::string RenderSiteBlock(const nlohmann::ordered_json& results);

// Replaces what lies between "<!-- bench:begin -->" and "<!-- bench:end -->" in `page` with
// `block`. Errors: kData when the markers are missing, repeated or out of order.
Result<std::string> ReplaceMarkedBlock(const std::string& page, const std::string& block);

}  // namespace quarry::bench
