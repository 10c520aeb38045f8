// Measuring answer quality: the statistics every suite reports, one question run through the
// agent with its trace kept, and the figures read back from a trace. The task suite, the
// behaviour suite, `eval` (Spider, BIRD) and `report` sit on these; each has its own header
// in this folder (suite.h, behaviour.h, eval.h, report.h). Sits above agent and engine.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/agent/agent.h"
#include "quarry/common/common.h"
#include "quarry/engine/engine.h"
#include "quarry/llm/llm.h"
#include "quarry/trace/trace.h"

namespace quarry::bench {

// ---- Statistics -------------------------------------------------------------------------

// A proportion's interval, both ends in [0, 1].
struct Interval {
  double low = 0.0;
  double high = 0.0;
};

// The Wilson score interval for `successes` out of `n` at the normal quantile `z` (1.96 for
// 95%): Wilson, "Probable inference...", JASA 22 (1927); Newcombe, Stat. Med. 17 (1998),
// method 3. n == 0 gives [0, 1] (nothing is known). successes is clamped to [0, n].
Interval WilsonInterval(int64_t successes, int64_t n, double z = 1.959963984540054);

// McNemar's exact test for paired binary outcomes: `b` pairs where only the first arm
// succeeded, `c` where only the second did. The two-sided p-value of the binomial test of b
// out of b + c at 1/2 (twice the smaller tail, at most 1). b + c == 0 gives 1.
double McNemarExactP(int64_t b, int64_t c);

// The p-th percentile (p in [0, 100]) by linear interpolation between the closest ranks
// (numpy's default, "linear"); NaN for no values.
double Percentile(std::vector<double> values, double p);
double Median(std::vector<double> values);
double Mean(const std::vector<double>& values);  // NaN for no values

// ---- One question through the agent ----------------------------------------------------

// A run whose trace.json is written to runs_dir/<run id>/, its charts and Python work beside
// it (the same layout as `quarry ask`).
struct RunRecord {
  trace::Trace trace;
  std::filesystem::path trace_path;
};

// Runs `input` (run_id: a new one when empty) with `base`'s configuration, its work directory
// and artifacts placed in the run's folder. Safe to call from several threads at once, each
// with its own engine and client. Errors: kInternal when the run folder cannot be made; the
// run's own failures are in trace.stop_reason.
Result<RunRecord> RunAgent(agent::RunInput input, engine::Engine& engine, llm::Client& client,
                           const agent::Config& base, const std::filesystem::path& runs_dir,
                           agent::Observer* observer = nullptr);

// Makes the model client for one question about `data` (the paths as given): live, or the
// recorded turns of a fixture. Errors: the client's, or kUsage when no recording fits (the
// caller counts that question as skipped).
using ClientFactory = std::function<Result<std::unique_ptr<llm::Client>>(
    const std::string& question, const std::vector<std::string>& data)>;

// ---- Writing results --------------------------------------------------------------------

// Writes `text` to `path` through `path`.tmp and a rename, so a reader never sees half a file;
// makes the parent directories. Errors: kInternal naming the file.
Result<void> WriteFileAtomically(const std::filesystem::path& path, std::string_view text);
// Text as one cell of a markdown table: on one line, its pipes escaped.
std::string MarkdownCell(std::string_view text);

// ---- Figures of one run ----------------------------------------------------------------

// What a trace says about one run, as the suites and `report` count it.
struct RunMetrics {
  int model_calls = 0;       // model turns, an explanation call included
  int tool_calls = 0;        // tool calls, ask_user and final_answer included
  int steps = 0;             // trace steps other than open_data
  int repair_attempts = 0;   // tool calls made while a failure was outstanding
  int repair_successes = 0;  // repairs whose execution succeeded
  int send_backs = 0;        // answers the verify gate returned to the model (not repairs)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;       // of prompt_tokens, read from the provider's cache
  int64_t cache_write_tokens = 0;  // of prompt_tokens, written to the cache
  double cost_usd = 0.0;
  int64_t wall_ms = 0;
  // Tool calls refused by a guard (the SQL guard, the Python guard or the sandbox):
  // failure_class guard_violation.
  int guard_violations = 0;
  bool answered = false;  // stop_reason "answered"
  bool grounded = false;  // answered and every value passed the verify gate
};
RunMetrics MetricsOf(const trace::Trace& trace);

}  // namespace quarry::bench
