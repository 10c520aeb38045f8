// The trace of one run: what was asked, about which data, with which model, every step the
// agent took (model turns and tool calls, with tokens, cost and latency), the answer and its
// verify report. Written atomically as runs/<id>/trace.json, with events.jsonl appended while
// the run goes so a crash still leaves a readable partial record. Depends only on JSON.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/common/common.h"
#include "quarry/common/private_dir.h"

namespace quarry::trace {

inline constexpr int kFormatVersion = 1;

// Why a run ended (trace.json's "stop_reason"). The trace owns this vocabulary: the writer and
// the reader are the only places that turn it into text and back.
enum class StopReason {
  kAnswered,         // "answered"
  kUngrounded,       // "final_answer_ungrounded": the verify gate refused the answer twice
  kExecutionFailed,  // "execution_failed": a tool failed with self-correction off
  kStepBudget,       // "step_budget_exhausted"
  kRepairBudget,     // "repair_budget_exhausted"
  kCostBudget,       // "cost_budget_exhausted"
  kToolCallBudget,   // "tool_call_budget_exhausted": one turn asked for too many tool calls
  kNoToolCall,       // "no_tool_call": the model wrote text without calling a tool
  kModelError,       // "model_error"
  kInterrupted,      // "interrupted": the caller asked the run to stop
  // "clarification_needed": the model called ask_user and no reply could be had during the
  // run; the question is the last of trace.clarifications, waiting on its reply.
  kClarification,
  // "declined": the model declined (a write on a read-only connection, a question the data
  // cannot answer); trace.declined holds its reply, never an answer.
  kDeclined,
  // "incomplete": rebuilt from events.jsonl with no end event (the run was killed).
  kIncomplete,
};

// The name trace.json writes ("answered").
std::string_view StopReasonName(StopReason reason);
// The reason a name stands for; nullopt for a name no quarry writes.
std::optional<StopReason> ParseStopReason(std::string_view name);

// What a step is (trace.json's "kind").
enum class StepKind {
  kModel,          // "model": a model turn
  kTool,           // "tool": a tool call's execution
  kClarification,  // "clarification": an ask_user call, shaped like a tool step
  kLoad,           // "load": opening the data
};
std::string_view StepKindName(StepKind kind);
std::optional<StepKind> ParseStepKind(std::string_view name);

// How a tool, clarification or load step ended (trace.json's "status"); kNone for a model turn,
// which has no status and writes none.
enum class StepStatus {
  kNone,    // ""
  kOk,      // "ok"
  kFailed,  // "failed"
  // "rejected": the verify gate refused the answer: a send-back, or the second refusal that
  // ends the run final_answer_ungrounded
  kRejected,
  kWaiting,      // "waiting": an ask_user with no reply yet
  kInterrupted,  // "interrupted": the run was asked to stop during the call
};
std::string_view StepStatusName(StepStatus status);
std::optional<StepStatus> ParseStepStatus(std::string_view name);

// What a final_answer says it is (its "outcome" argument, and a final_answer step's detail
// "outcome" when declined): an answer, or a reply declining the question.
enum class AnswerOutcome {
  kAnswer,    // "answer"
  kDeclined,  // "declined"
};
std::string_view AnswerOutcomeName(AnswerOutcome outcome);
std::optional<AnswerOutcome> ParseAnswerOutcome(std::string_view name);

// In JSON these are their names, never their numbers: nlohmann finds these by argument-dependent
// lookup wherever one is put into a JSON value, so no output can write "stop_reason": 0.
template <typename Json>
void to_json(Json& j, StopReason v) {
  j = std::string(StopReasonName(v));
}
template <typename Json>
void to_json(Json& j, StepKind v) {
  j = std::string(StepKindName(v));
}
template <typename Json>
void to_json(Json& j, StepStatus v) {
  j = std::string(StepStatusName(v));
}
template <typename Json>
void to_json(Json& j, AnswerOutcome v) {
  j = std::string(AnswerOutcomeName(v));
}

struct SourceRecord {
  std::string path;
  std::string format;
  int64_t size_bytes = 0;
  std::string sha256;
  std::vector<std::string> tables;
  std::string cache;  // the parse cache: "hit", "miss", or "" (not cached)
};

struct ToolCallRecord {
  std::string id;
  std::string name;
  std::string arguments;  // raw, as the model wrote it
};

// One step. kind "model": a model turn (content, tool_calls, tokens, cost; detail {"purpose":
// "explanation"} for the call without tools that explains a budget stop). kind "tool": a tool
// call's execution (tool, arguments, status, failure_class, observation as the model saw it).
// kind "clarification": an ask_user call, shaped like a tool step (status "waiting" while no
// reply came). kind "load": opening the data (tool "open_data"; observation: the loader's notes
// and the parse cache's use). duration_ms is wall time for all.
struct Step {
  int index = 0;
  StepKind kind = StepKind::kModel;
  int64_t duration_ms = 0;
  // model turns
  std::string content;
  std::vector<ToolCallRecord> tool_calls;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;       // of input_tokens, read from the provider's cache
  int64_t cache_write_tokens = 0;  // of input_tokens, written to the cache
  double cost_usd = 0.0;
  // What caching saved on this call (negative: writes cost more than reads saved); nullopt
  // when the model has no price. Written only when known.
  std::optional<double> cache_saved_usd;
  int attempts = 1;
  bool streamed = false;  // the reply came as server-sent events; written only when true
  // tool calls
  std::string tool;
  std::string tool_call_id;
  std::string arguments;
  StepStatus status = StepStatus::kNone;
  std::string failure_class;  // FailureClassName, "none" when ok
  std::string rule;           // the guard rule, for guard_violation
  std::string observation;
  bool repair = false;            // made while a failure was outstanding
  nlohmann::ordered_json detail;  // tool-specific facts: sql, columns, rows, row_count
};

struct Totals {
  int model_turns = 0;
  int tool_calls = 0;
  int repair_attempts = 0;
  int repair_successes = 0;
  // Answers the verify gate returned to the model to ground (at most one per run); not
  // repairs: no failure is outstanding, so they never count in repair_attempts.
  int send_backs = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t cache_write_tokens = 0;
  double cost_usd = 0.0;
  double cache_saved_usd = 0.0;  // the sum over the model steps whose saving is known
  int64_t wall_ms = 0;           // the whole run, opening the data included
  int64_t load_ms = 0;           // of which opening the data (the open_data step)
};

// One value the verify gate checked: as written, where in the answer ("answer_text",
// "supporting_values", or "run" for an answer with no execution behind it), the rule that
// grounded it, and where the evidence came from (step, tool, query, column). `reason` says
// why a value is not grounded.
struct VerifyCheck {
  std::string value;
  std::string origin;
  std::string rule;
  std::string matched;
  bool grounded = false;
  int step = 0;        // 0: not grounded by a result (the question, or not grounded)
  std::string tool;    // "run_sql", "run_python", "make_chart"
  std::string query;   // the SQL or the Python code
  std::string column;  // "" for a row count or free text
  std::string reason;
};

// A query an answer rests on: one whose result holds a value the answer states.
struct AnswerQuery {
  int step = 0;
  std::string tool;
  std::string query;
};

// A question the model put to the user (ask_user), with its optional choices, and the user's
// reply when one came ("" while the run waits on it). `term`: the phrase of the question it
// asks about ("top customer"; "" when the model named none), under which the reply can be
// saved to the knowledge folder's glossary.
struct ClarificationRecord {
  int step = 0;
  std::string question;
  std::vector<std::string> choices;
  std::string reply;
  std::string term;
};

// Text in the data that reads like instructions to the model: where it was found
// ("observation" of a step, "card" of a table, "file name"), the pattern that matched, and
// a short excerpt. Detection, not a guarantee.
struct InjectionRecord {
  int step = 0;  // 0: in the schema cards or the system prompt's data
  std::string where;
  std::string pattern;
  std::string excerpt;
};

struct Trace {
  int format_version = kFormatVersion;
  std::string id;
  std::string created_at;  // UTC, ISO 8601
  std::string question;
  std::vector<SourceRecord> sources;
  std::string dialect;
  std::string provider;
  std::string model;
  // Replayed turns: the fixture's "source" label ("recorded": saved from a live run by
  // --record; "scripted": written by hand; "trace": another run's trace). "" for a live model.
  std::string turns_source;
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  std::vector<Step> steps;
  Totals totals;
  StopReason stop_reason = StopReason::kIncomplete;
  std::string answer;
  std::vector<std::string> supporting_values;
  // The queries whose results hold the answer's values, in step order, joined by blank lines
  // (each ends with ";"); when no value cites a result, the last successful query.
  std::string answer_sql;
  std::vector<AnswerQuery> answer_queries;
  // Choices the model states it made ("top customer = by revenue"), shown with the answer.
  std::vector<std::string> assumptions;
  // The knowledge files' definitions the answer's SQL rests on ("metric revenue
  // (metrics.yaml:4)", knowledge::RestsOn), found in the SQL whether or not the model named them.
  std::vector<std::string> rests_on;
  // A run that ended without an answer (no_tool_call, a budget): what the model last wrote in
  // plain text without calling a tool, or "". Never verified; never the answer.
  std::string reply;
  bool grounded = false;
  std::vector<VerifyCheck> verify;
  std::vector<std::string> artifacts;
  std::vector<std::string> notes;
  // The conversation this run belongs to (quarry ask --thread, chat, MCP ask_database with
  // thread): its name and this run's turn number, from 1. "" and 0: no thread.
  std::string thread;
  int thread_turn = 0;
  // Every ask_user of the run, in order; the last without a reply is what the run waits on
  // (stop_reason "clarification_needed").
  std::vector<ClarificationRecord> clarifications;
  std::vector<InjectionRecord> injection_suspected;
  // A run that ended on a budget: the model's short account, without tools, of what failed and
  // what the user could try. Never an answer, never verified.
  std::string explanation;
  // stop_reason "declined": the model's reply declining the question (final_answer with
  // outcome "declined": a write on a read-only connection, a question the data cannot answer).
  // Checked to state no figure it was not shown; never an answer.
  std::string declined;
  // Rebuilt from events.jsonl because the run never wrote trace.json (it was killed): no
  // answer or verify report, totals summed from the recorded steps.
  bool incomplete = false;
};

nlohmann::ordered_json ToJson(const Trace& trace);
nlohmann::ordered_json ToJson(const Step& step);
// Whether `step` is a send-back: a final_answer the verify gate refused and returned to the
// model (detail "sent_back": true; in traces written before that mark, a refusal whose
// observation is not the second, run-ending one). ReadTrace counts totals.send_backs with it
// when a trace has no such total.
bool IsSendBack(const Step& step);
// Errors: kData naming the field of the wrong type by its path ("steps[2].duration_ms").
Result<Trace> FromJson(const nlohmann::ordered_json& doc);
// A trace document's model turns as a replay fixture (the format llm::MakeReplayClientFromJson
// plays back): {"source": "trace", "model": the trace's "model", "turns": its steps of kind
// "model", each as written, "turn_labels": where each was ("steps[4]"), for errors}. `doc`
// without "steps" (a fixture already) comes back unchanged.
// Errors: kData when "steps" is not an array.
Result<nlohmann::ordered_json> ReplayFixtureOf(const nlohmann::ordered_json& doc);

// The one presenter of a finished run: the CLI, chat, MCP and the web app show what a run came
// to through these, so their words cannot drift apart (trace/outcome.cc).
//
// The clarification a run waits on (stop_reason clarification_needed): its last ask_user;
// nullptr for any other run.
const ClarificationRecord* WaitingClarification(const Trace& t);
// The values the verify gate refused, in the order checked, each once with its first check's
// reason: spellings of one number ("$4,242.00", "4,242", "4242") count as one value. A check
// of origin "run" (no query ran) has no value: its reason says it all.
std::vector<VerifyCheck> UnsupportedValues(const Trace& t);
// For people, as lines of plain text (the caller escapes them for a terminal):
// - answered: the answer, "Assumptions:" with one "- " line each, "SQL:" and the query, one
//   "figure: PATH" line per figure;
// - declined: "declined (not an answer): " and the model's reply;
// - clarification_needed: "quarry needs a clarification: " and the question, then its choices
//   numbered from 1 (how to reply is the caller's: a command, a chat prompt, an MCP thread);
// - any other stop: "no answer: " and the stop reason's name, the model's unverified reply,
//   the agent's account of the stop, and for final_answer_ungrounded each unsupported value
//   with its reason;
// then, after a blank line, `notes` as "note: " lines, for all but an answer (whose notes a
// caller shows apart). No trace path, no totals.
std::string OutcomeText(const Trace& t, const std::vector<std::string>& notes);
// For programs: {"answer", "grounded", "stop_reason", "sql", "supporting_values",
// "assumptions", "rests_on", "queries", "verify" (every check), "figures", "totals", "notes"?,
// "reply"?:
// {"text", "verified": false}, "explanation"?: {"text", "answer": false}, "declined"?:
// {"text", "answer": false}, "clarification"?: {"question", "choices"}}.
nlohmann::ordered_json OutcomeJson(const Trace& t);

// What a stop means, as a short heading for people ("Declined — not an answer", "Stopped by
// you"): the web page heads each outcome and each stored turn with it.
std::string_view StopHeading(StopReason reason);

// A new run id: "<UTC yyyymmdd-hhmmss>-<6 hex>", sortable by time.
std::string NewRunId();
// Now as UTC ISO 8601 to the second ("2026-12-01T10:38:26Z"): every created_at and date.
std::string UtcTimestamp();

// How long old runs keep their workdir (runs/<id>/workdir: the sandbox's files). A workdir is
// emptied only when its run is neither among the newest `keep_runs` runs nor younger than
// `keep_days` days; even then the figures in it (.png, .svg: what `quarry view` embeds) are
// kept, and so are the run's trace.json, events.jsonl and charts: every run stays viewable and
// replayable. Set by QUARRY_KEEP_WORKDIRS (a number of runs, or "all": never prune; default
// 20) and QUARRY_KEEP_WORKDIR_DAYS (default 7).
struct Retention {
  int keep_runs = 20;
  int keep_days = 7;
  bool enabled = true;
};
// Errors: kUsage naming the variable with a value that is not a number (or "all").
Result<Retention> RetentionFromEnv();
// Empties the workdirs of runs_dir's runs (directories named by a run id, dated by it) that
// `keep` no longer keeps, as of `now`; never follows a link. Returns how many were emptied.
// Writer::Create calls it for every new run.
int PruneWorkdirs(const std::filesystem::path& runs_dir, const Retention& keep, std::time_t now);

// Owns runs/<id>/ for one run. Not thread-safe; movable.
class Writer {
 public:
  // Creates runs_dir/<id>/ exclusively, mode 0700, creating runs_dir (0700) when missing,
  // then prunes old runs' workdirs (Retention, from the environment).
  // Errors: kUsage for a bad QUARRY_KEEP_WORKDIRS / QUARRY_KEEP_WORKDIR_DAYS, or when runs_dir is
  // not private to the user (owned by another uid, or writable by group or others: another account
  // could plant links there; the message says what to do); kInternal when the run directory exists
  // already or cannot be created.
  static Result<Writer> Create(const std::filesystem::path& runs_dir, const std::string& id);
  const std::filesystem::path& dir() const { return dir_; }
  // Appends one line to events.jsonl (created 0600 on the first event, never through a link
  // or onto an existing file) and writes it at once. After a failure nothing more is
  // appended (a cut line would make the rest unreadable). Errors: kInternal naming the file
  // and strerror, the first time and every time after.
  Result<void> AppendEvent(const nlohmann::ordered_json& event);
  // Called with each event AppendEvent is given, on the caller's thread, before it is written.
  void SetListener(std::function<void(const nlohmann::ordered_json&)> listener) {
    listener_ = std::move(listener);
  }
  // Writes trace.json (0600) via trace.json.tmp and renameat in the run's directory fd, so
  // readers never see half a file and no link planted under either name is followed.
  Result<std::filesystem::path> WriteFinal(const Trace& trace);

 private:
  std::filesystem::path dir_;
  UniqueFd dir_fd_;           // runs_dir/<id>, as created: every write goes through it
  UniqueFd events_fd_;        // events.jsonl once the first event is written
  std::string events_error_;  // why events.jsonl failed; "" while it works
  std::function<void(const nlohmann::ordered_json&)> listener_;
};

// Writes `bytes` to `path` (mode 0600) via path.tmp, created exclusively without following a
// link (a planted link named path.tmp is removed, not written through), and a rename.
// Errors: kUsage naming the file.
Result<void> WritePrivateFile(const std::filesystem::path& path, std::string_view bytes);

// "latest" or a run id (or a path to a trace.json or events.jsonl) -> the run's record: its
// trace.json, or its events.jsonl when a killed run never wrote trace.json.
// Errors: kUsage when there is no such run; kData when its folder holds neither file.
Result<std::filesystem::path> FindTrace(const std::filesystem::path& runs_dir,
                                        const std::string& which);
// A trace.json, or (for a path ending in .jsonl) a run rebuilt by RebuildFromEvents.
// Errors: kData naming the file and the problem (unreadable, not JSON, a field's type).
Result<Trace> ReadTrace(const std::filesystem::path& path);
// A killed run's trace from its events.jsonl (start, step and end events): marked incomplete,
// stop_reason "incomplete" unless an end event was recorded, totals summed from the steps, and
// a note saying so; a cut or unreadable line is skipped and counted in a note.
// Errors: kData when the file is unreadable, has no start event, or a field has the wrong type.
Result<Trace> RebuildFromEvents(const std::filesystem::path& events_path);

// One self-contained HTML page for a trace: question, answer and verify report first, then a
// timeline of steps (tool, status, failure class, duration, tokens, cost), each step's SQL or
// Python and the observation as the model saw it, result tables, charts, totals. No scripts
// and no network: charts are inlined as data: images (an SVG in <img> never runs script), and
// every string from the trace is HTML-escaped, so a data row holding markup shows as text.
// Images named in artifacts are embedded only from the run's own directory `trace_dir` (by
// file name, in it or its workdir/, no link followed), never from the path the trace names:
// a trace from someone else could name any local .png or .svg.
std::string RenderHtml(const Trace& trace, const std::filesystem::path& trace_dir);
// An artifact's bytes, for inlining. Only a regular file, opened without following links: a
// sandboxed script could leave a symlink to any host file under an artifact's name.
// Errors: kUsage when it is missing, a link, not a regular file, or larger than max_bytes.
Result<std::string> ReadArtifact(const std::filesystem::path& path, size_t max_bytes);
// The same, with `path` relative to the directory fd `dir_fd` (openat; AT_FDCWD allowed).
Result<std::string> ReadArtifactAt(int dir_fd, const std::filesystem::path& path, size_t max_bytes);
// RFC 4648 base64 (OpenSSL's encoder), for data: URIs and MCP image blocks.
std::string Base64(std::string_view bytes);

// A human summary: question, sources, model, each step on a line, answer, totals.
std::string Summary(const Trace& trace);
// The totals line printed at the end of `quarry ask`; it names cached and cache-written prompt
// tokens and what caching saved only when something was cached or written.
std::string TotalsLine(const Trace& trace);

}  // namespace quarry::trace
