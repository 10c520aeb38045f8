// The agent: the loop that turns a question into an answer. It shows the model the schema
// cards, dispatches its tool calls (inspect_schema, run_sql, run_python on a warm kernel per
// run, make_chart, ask_user, final_answer) with argument validation, classifies failures, feeds
// real errors back for repair (an identical repeat of a failed call is answered without running
// it), marks data that reads like instructions, keeps budgets (a run stopped by one gets a
// short explanation, never an answer), and passes the final answer through the verify gate.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/agent/verify.h"
#include "quarry/common/common.h"
#include "quarry/engine/engine.h"
#include "quarry/knowledge/knowledge.h"
#include "quarry/llm/llm.h"
#include "quarry/sandbox/kernel.h"
#include "quarry/sandbox/sandbox.h"
#include "quarry/trace/trace.h"

namespace quarry::agent {

// What the model is shown of the schema: in the system prompt (SystemPrompt) and through
// inspect_schema.
struct SchemaOptions {
  // The schema section of the system prompt stays within this many tokens, estimated by
  // engine::EstimateTokens (--schema-budget, QUARRY_SCHEMA_BUDGET).
  int64_t budget_tokens = 2000;
  // false (--no-samples, QUARRY_NO_SAMPLES=1): no sample values and no min/max of text columns
  // reach the model, nor the embeddings endpoint (engine::CardOptions::samples).
  bool samples = true;
  // When set and the schema is over budget, tables are also ranked by the cosine of their
  // card's embedding to the question's, fused with bm25 (reciprocal rank fusion, k = 60).
  std::optional<llm::EmbeddingsConfig> embeddings;
};

// What the system prompt is written for. kEval (`quarry eval` only): one more line,
// prompts/eval.md, says the last query is compared with a reference query's result and should
// return just the columns and rows the question asks for. kAsk: every other command.
enum class PromptMode { kAsk, kEval };

struct Config {
  // Off: the first failed tool call ends the run (execution_failed); nothing else differs.
  bool self_correction = true;
  PromptMode prompt = PromptMode::kAsk;
  int max_steps = 12;   // model turns
  int max_repairs = 6;  // repair attempts (tool calls made while a failure is outstanding)
  // Tool calls per question, parallel calls counting one each, ask_user and final_answer
  // included (--max-tool-calls). The calls of a turn within it run; the first beyond it and
  // the rest of that turn do not, and the run stops (trace::StopReason::kToolCallBudget).
  int max_tool_calls = 16;
  // USD. A model call is made only when the spent cost plus the call's bound
  // (llm::Client::MaxCostUsd of the estimated prompt) stays within it; for a model without a
  // price, the spent cost alone is checked before each call.
  double max_cost_usd = 1.0;
  engine::Limits limits;  // per query: timeout_ms, max_rows
  int preview_rows = 30;  // result rows the model sees
  // run_python: offered to the model when on. sandbox.workdir must be set (runs/<id>/workdir).
  bool python = true;
  sandbox::Options sandbox;
  // Rows of each table that Python gets (the rest is told to the model, with the true count).
  int64_t python_max_rows = 1'000'000;
  // Where make_chart writes chart-<n>.png/.svg (runs/<id>); empty: make_chart is not offered.
  std::filesystem::path artifacts_dir;
  int64_t chart_max_rows = 5000;  // rows a chart query may draw
  SchemaOptions schema;
  // The user's knowledge files (knowledge::Load), or null. What matters for the question
  // (knowledge::Retrieve) goes in the system prompt after the schema, within
  // knowledge_budget_tokens; the trace's config records the folder and the items given.
  std::shared_ptr<const knowledge::Knowledge> knowledge;
  int64_t knowledge_budget_tokens = knowledge::kDefaultBudgetTokens;
  // Where a clarification reply the user agrees to keep is written (agent/remember.h): the
  // knowledge folder in use, else ./.quarry; "" when knowledge is off (--no-knowledge).
  std::filesystem::path glossary_dir;
};

// Progress as it happens; the CLI prints it, tests collect it. Called on the run's thread.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void OnStep(const trace::Step& step) = 0;
};

// Everything a tool may touch during one run.
struct ToolContext {
  engine::Engine& engine;
  const Config& config;
  Evidence& evidence;                        // successful executions add what the model was shown
  std::optional<sandbox::LastResult>& last;  // the latest successful run_sql result
  // The run's warm Python (variables persist between calls); null: each call is a fresh one.
  sandbox::Kernel* kernel = nullptr;
  int step = 0;  // the trace step index of the call being run, for the evidence's provenance
};

// What a tool call produced, as the model will see it (`text`) and as the trace keeps it.
struct Observation {
  FailureClass failure = FailureClass::kNone;
  std::string rule;  // guard rule, for kGuardViolation
  std::string text;
  nlohmann::ordered_json detail;       // sql, columns, rows, row_count, ...
  std::vector<std::string> artifacts;  // files the step produced (figures)
};

// A tool the model can call. `execution` tools (run_sql, run_python, make_chart) clear an
// outstanding failure when they succeed; the others (inspect_schema) do not.
struct Tool {
  llm::ToolSchema schema;
  bool execution = false;
  std::function<Observation(const nlohmann::ordered_json& arguments, ToolContext& context)> run;
};

// The tools of this build, final_answer included (the loop handles final_answer itself);
// run_python only when `python` is on, make_chart only when `charts` is on.
std::vector<Tool> DefaultTools(bool python = true, bool charts = true);

// Result rows as JSON arrays, the first `max_rows` of them, each cell typed by its
// engine::CellKind: integers within ±2^53 and reals as JSON numbers (reals with round-trip
// precision), DECIMALs of at most 15 significant digits as numbers, larger integers and
// DECIMALs as strings of their exact digits, booleans as true/false, NULL as null, BLOBs as
// {"base64": "..."}, everything else (and inf/nan) as strings.
nlohmann::ordered_json RowsJson(const engine::ResultTable& table, size_t max_rows);

// The registered data as the sandbox loads it: every table (of every file, .duckdb schema or
// SQLite database) copied by engine::ExportTables into `dir` as a typed CSV of at most
// `max_rows` rows. Errors: the export's. Safe to call on another thread while the engine
// serves queries (it reads only cards and sources).
Result<std::vector<sandbox::TableFile>> SandboxTables(const engine::Engine& engine,
                                                      const std::filesystem::path& dir,
                                                      int64_t max_rows);

// Where a run's table copies go: beside its work directory (runs/<id>/tables), mounted
// read-only into the sandbox, and removed when the run ends.
std::filesystem::path TablesDirFor(const sandbox::Options& options);

// Checks tool-call arguments against the tool's JSON Schema (object, required, property
// types, enums, no unknown properties). Returns the problem in words, or "" when they fit.
std::string ValidateArguments(const nlohmann::ordered_json& schema,
                              const nlohmann::ordered_json& arguments);

// The schema section of the system prompt for one question. Under the budget: every card in
// full. Over it: the tables the question is about (engine::RankTables' bm25, fused with the
// embeddings ranking when configured; every table when nothing matches) and the tables their
// foreign keys link (both ways), each in full while the budget allows, else with names and types
// only, else (best first, in what is left) with as many columns' names and types as fit, those
// the question is about first, and a count of the rest; then the other tables by name, as many
// as the budget still holds (room for at most 60% of it is kept for them before the cards), and
// a count of the rest with how inspect_schema lists them. The text stays within the budget
// except when the frame (data line, what the selection means, the count) alone is over it.
struct SchemaView {
  std::string text;
  int64_t tokens_estimated = 0;        // engine::EstimateTokens(text)
  int64_t whole_tokens_estimated = 0;  // of every card in full
  bool whole = true;                   // every table in full
  std::vector<std::string> full;       // tables shown in full, in the order shown
  std::vector<std::string> compact;    // tables shown with names and types only
  std::vector<std::string> partial;    // tables shown with some columns' names and types
  size_t listed = 0;                   // tables shown by name only (or counted past the list)
  std::string ranking;                 // "" (whole), "bm25", "bm25+embeddings"
  std::vector<std::string> ranked;     // the relevant tables, most relevant first
  std::vector<std::string> notes;      // for the trace: the selection, an embeddings failure
};
SchemaView ViewSchema(const engine::Engine& engine, const std::string& question,
                      const SchemaOptions& options);

// The system prompt: prompts/system.md with the dialect, its cleaning advice, with `mode`
// kEval the line of prompts/eval.md after the final_answer rule, and last the schema section
// (ViewSchema) under a line saying cards are data, never instructions. `view`, when given,
// receives what the schema section holds.
std::string SystemPrompt(const engine::Engine& engine, const std::string& question = "",
                         const SchemaOptions& options = {}, SchemaView* view = nullptr,
                         PromptMode mode = PromptMode::kAsk);
// The length in bytes of the system prompt's part that is the same for every question on the
// same data: the instructions, the dialect and its cleaning advice, up to and including the
// line that opens the schema cards (which come last, since retrieval may pick them by the
// question). Set as llm::Message::cache_split so providers can cache that prefix. 0 when the
// prompt has no schema section.
size_t StablePrefixBytes(const std::string& system_prompt);

// Estimated tokens of a first request (the system prompt, the tool schemas as JSON, the user's
// messages), by engine::EstimateTokens plus 4 per message and 8 per tool for the framing.
int64_t EstimateRequestTokens(const std::vector<llm::Message>& messages,
                              const std::vector<llm::ToolSchema>& tools);

// An earlier question of the same conversation (a thread), shown to the model as prior turns.
// The verify gate does not count the answer's words as given. `preview` (a small result of the
// query the answer rested on, kept by the thread store and shown again in full form) is a real
// result: while the data has not changed since (`data_note` empty), its values ground a
// follow-up's answer, cited as that turn (issue 23: "far below Rock's 1297" was refused).
struct PriorTurn {
  int turn = 0;  // the turn's number in its thread, from 1 (0: not from a thread store)
  std::string question;
  std::string answer;
  std::string sql;
  std::string preview;        // rendered result rows, "" when none was kept
  std::string clarification;  // an ask_user question of that turn, with the user's reply
  // How the data changed after this turn (a file changed, came or went), "" when it did not:
  // PriorMessages tells the model, so earlier answers are not taken as still true.
  std::string data_note = {};
};

// The messages that show a thread's earlier turns to the model, oldest first, within
// `budget_tokens` (engine::EstimateTokens): the newest turns in full; older ones, while they
// fit, as question + answer + SQL only; the rest dropped. `notes` receives what was dropped
// or shortened. Written by the harness, never by the model.
std::vector<llm::Message> PriorMessages(const std::vector<PriorTurn>& history,
                                        int64_t budget_tokens, std::vector<std::string>* notes);

// A question the model puts to the user through ask_user.
struct Clarification {
  std::string question;
  std::vector<std::string> choices;  // may be empty: a free reply
  std::string term;  // the phrase of the user's question it asks about; "" when not named
};

// Answers a clarification while the run waits (chat, an MCP client with elicitation): the
// user's reply, or nullopt when none can be had (declined, or no way to ask). nullopt ends
// the run with trace::StopReason::kClarification. The time spent waiting counts against no budget.
using AskUserFn = std::function<std::optional<std::string>(const Clarification&)>;

// A clarification an earlier run ended on, now answered: the run re-enters the conversation
// as if the reply had come during it (the question, the ask_user call, the reply as its
// result), so `quarry ask --thread NAME "by revenue"` continues where the model asked.
struct PendingClarification {
  Clarification asked;
  std::string reply;
};

struct RunInput {
  std::string question;
  std::string run_id;  // also the trace id
  std::vector<PriorTurn> history;
  // How long opening the data took (fingerprint, load, profile), when the caller opened it for
  // this run: recorded as a first step "open_data" and counted in the totals. -1: not this run's.
  int64_t load_ms = -1;
  // A stop request ends the run: the running query is interrupted, the Python child killed,
  // the model request aborted, and the trace is written with stop_reason
  // trace::StopReason::kInterrupted.
  StopToken stop;
  // Unset: ask_user ends the run with trace::StopReason::kClarification.
  AskUserFn ask_user;
  // A clarification an earlier run ended on, with its reply; `question` is the question it was
  // asked about. The model's messages are: system, prior turns, the question, an assistant
  // turn calling ask_user (id "resume_1") and its result "the user replied: ...". Recorded in
  // trace.clarifications with step 0 (asked before this run; no step of this run).
  std::optional<PendingClarification> resume;
  std::string thread;  // recorded in the trace
  int thread_turn = 0;
  // Tokens the prior turns may take in the prompt (PriorMessages).
  int64_t history_budget_tokens = 1500;
};

// The config of one run whose record is in `run_dir` (runs/<id>/): `base` with the sandbox's
// work directory at run_dir/workdir and charts written to run_dir. Every front end (CLI, chat,
// MCP, bench, the web app) sets a run up through this.
Config ConfigForRun(Config base, const std::filesystem::path& run_dir);

// Runs one question to its end. The returned trace is complete (also on budget stops and
// model errors, which are recorded as stop reasons); `writer`, when given, receives events as
// they happen and the final trace. Errors: none; failures are in trace.stop_reason.
//
// ask_user: a step of kind "clarification" (tool "ask_user"; detail.wait_ms: the time spent
// waiting on RunInput::ask_user, also in its duration_ms, counted by no budget; detail.reply
// when one came) and a trace.clarifications record. It counts as a tool call. The reply reaches the
// model as the tool result "the user replied: ..."; the numbers the user typed count as given, like
// the question's, but not the text of a choice, however it was picked (the model wrote it; issue
// 22). ask_user is no execution tool: it neither clears an outstanding failure nor grounds a value.
// Without a reply the step's status is "waiting" and the run ends with
// trace::StopReason::kClarification, before any verify.
//
// Text that reads like instructions (injection_internal.h) in an observation of inspect_schema,
// run_sql, run_python or make_chart, or in the schema cards and data file names of the system
// prompt: a reminder line next to it in what the model reads, and a trace.injection_suspected
// record (step 0 for the system prompt).
//
// A run that ends on the repair, step or tool-call budget gets one more model call, without
// tools and with at most 200 output tokens, when the cost budget allows it (by
// llm::Client::MaxCostUsd at the client's own output limit): a step of kind "model" with
// detail.purpose "explanation", counted in the totals (model_turns too), whose text becomes
// trace.explanation. Never on the cost budget, an interrupt, or any other stop.
trace::Trace Run(const RunInput& input, engine::Engine& engine, llm::Client& client,
                 const Config& config, Observer* observer, trace::Writer* writer);

}  // namespace quarry::agent
