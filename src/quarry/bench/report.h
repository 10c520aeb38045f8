// `quarry report`: figures over the traces of many runs (a runs folder, a `quarry bench`
// results file, or a `quarry eval` output folder): per run the mean, median and maximum of
// model calls, tool calls, tokens, wall time and cost, with counts of answers and stop
// reasons; printed as text, JSON, or one self-contained HTML page with a latency histogram.
// Reads traces only; never writes next to them. Sits on bench.h, trace and chart.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/bench/bench.h"
#include "quarry/common/common.h"

namespace quarry::bench {

// What the report was made from.
enum class ReportSource {
  kRunsFolder,    // a folder of runs/<id>/trace.json (or events.jsonl), searched 3 levels deep
  kBenchResults,  // a `quarry bench` results file: the trace of every task x arm x sample
  kEvalOutput,    // a `quarry eval` output folder: questions.jsonl and summary.json
  kTrace,         // one trace.json or events.jsonl
};
std::string_view ReportSourceName(ReportSource source);  // "runs folder", ...

// One run as the report counts it.
struct ReportRun {
  std::string group;  // the arm ("on"/"off") when the listing has one; else ""
  std::string label;  // the task or question id from a listing; else ""
  std::string run_id;
  std::filesystem::path trace_path;  // the file read: trace.json, or events.jsonl
  std::string question;
  std::string provider;  // "replay" for recorded (scripted) turns
  std::string model;
  std::string stop_reason;
  bool incomplete = false;  // rebuilt from events.jsonl: the run was killed
  RunMetrics metrics;
};

// A trace that could not be read, or a listed run whose trace is missing.
struct SkippedTrace {
  std::filesystem::path path;
  std::string reason;
};

// Mean, median (linear interpolation, as Percentile) and maximum over a group's runs; NaN
// when the group has no runs.
struct Figure {
  double mean = 0.0;
  double median = 0.0;
  double max = 0.0;
};

// The figures of one group: every run, or the runs of one arm.
struct GroupFigures {
  std::string group;  // "" for all runs
  int runs = 0;
  int incomplete = 0;
  int answered = 0;  // stop_reason "answered"
  int grounded = 0;  // answered, and every value passed the verify gate
  // Summed over the runs: repairs (tool calls made while a failure was outstanding, and those
  // whose execution succeeded) and send-backs (answers the verify gate returned to the model).
  int repair_attempts = 0;
  int repair_successes = 0;
  int send_backs = 0;
  int runs_with_send_backs = 0;
  std::map<std::string, int> stop_reasons;
  Figure model_calls, tool_calls, prompt_tokens, completion_tokens;
  Figure wall_seconds;  // the trace's totals.wall_ms / 1000: the whole run, opening data included
  Figure cost_usd;
};

struct Report {
  ReportSource source = ReportSource::kRunsFolder;
  std::filesystem::path path;   // as given
  std::vector<ReportRun> runs;  // readable runs, in listing order (a folder: by path)
  std::vector<SkippedTrace> skipped;
  int replayed = 0;  // runs whose provider is "replay": a harness run, not a model's
  int not_run = 0;   // listing entries with neither a run id nor a trace (skipped tasks, --gold)
  // One group per arm, in order of first appearance, when any listed run has an arm; else one
  // group ("") of all runs.
  std::vector<GroupFigures> groups;
};

// Reads every run under `path`: a folder (of runs; holding bench_results.json; or holding an
// eval's questions.jsonl), a bench results file, an eval's questions.jsonl or summary.json, or
// one trace. A listing's trace paths are tried as written, then relative to the listing's
// folder and its parent; without one, its run id in the listing's runs_dir. A trace that
// cannot be read is skipped with the reason, never fatal. Errors: kUsage when the path does
// not exist, is a file of none of these kinds, or no run is found under it ("no runs found
// under X"); kData when a listing file is not valid JSON.
Result<Report> BuildReport(const std::filesystem::path& path);

// The figures of `runs` (already grouped by the caller).
GroupFigures FiguresOf(const std::vector<const ReportRun*>& runs, const std::string& group);

// Text tables for a terminal (strings from traces are not made terminal-safe here: the caller
// does that). Figures are "n/a" for an empty group.
std::string ReportText(const Report& report);
// {"source", "kind", "runs", "incomplete", "replayed", "not_run", "skipped": [{path, reason}],
//  "groups": [{group, runs, incomplete, answered, grounded, repair_attempts, repair_successes,
//  send_backs, runs_with_send_backs, stop_reasons, figures: {name: {mean, median, max}}}],
//  "run_list": [...]}; NaN figures are null.
nlohmann::ordered_json ReportJson(const Report& report);
// One self-contained page (no script, no network, every string escaped): the tables, the run
// list, the skipped traces, and a latency histogram rendered by the chart module as inline
// SVG. Errors: kInternal when the chart cannot be drawn.
Result<std::string> ReportHtml(const Report& report);

}  // namespace quarry::bench
