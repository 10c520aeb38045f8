// Internals shared by the agent's files; not part of its public surface.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quarry/agent/agent.h"

namespace quarry::agent {

// Now, in UTC, ISO 8601 to the second ("2026-12-01T06:10:00Z"): trace and thread times.
std::string UtcNow();

// The prompt file prompts/<name>.md with each {{key}} replaced by its value.
std::string Prompt(const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& values);

// A result as the model reads it (RenderResult with the preview size), recording what that
// shows (the preview cells and the true row count) as evidence for the verify gate, with the
// tool and the query that produced it.
std::string ShowResult(const engine::ResultTable& table, ToolContext& context,
                       const std::string& tool, const std::string& sql);
// Only the evidence part of ShowResult (an empty result, shown as a failure, still grounds 0).
void RecordEvidence(const engine::ResultTable& table, ToolContext& context, const std::string& tool,
                    const std::string& sql);

// The results earlier turns kept (PriorTurn::preview) that `shown` (PriorMessages' output) shows
// the model on data unchanged since, as evidence cited by turn: its header and rows split at
// " | ", a row the byte cut left partial dropped, the row count from its "(N rows" line.
void AddKeptResults(const std::vector<PriorTurn>& history, const std::vector<llm::Message>& shown,
                    Evidence& evidence);

// The JSON Schema of a tool's arguments as the model sees it (inspect_schema, run_sql,
// run_python, make_chart, ask_user, final_answer; arguments.cc); an empty object for any other
// name.
nlohmann::ordered_json ToolParameters(std::string_view tool);

// final_answer's assumptions are shown to the user as they are: a few short sentences. The
// problem in words (too many, one too long), or "" (arguments.cc).
inline constexpr size_t kMaxAssumptions = 5;
inline constexpr size_t kMaxAssumptionBytes = 300;
std::string CheckAssumptions(const std::vector<std::string>& assumptions);

// make_chart's implementation (chart_tool.cc).
Observation MakeChart(const nlohmann::ordered_json& args, ToolContext& context);

// inspect_schema's index of the tables whose names start with `prefix` (ignoring case; "" for
// all), from the `offset`-th: one line each (name, rows, columns) up to kIndexPageBytes, a line
// of counts by name prefix when they do not all fit, and the offset of the next page.
inline constexpr size_t kIndexPageBytes = 6000;
std::string TableIndex(const std::vector<engine::TableCard>& cards, const std::string& prefix,
                       size_t offset);

// The error for a table name that matches none: every name when they fit kNamesInErrorBytes,
// else the kNearestNames nearest (containing it, then by edit distance, ignoring case), the count,
// and how to list them.
inline constexpr size_t kNamesInErrorBytes = 2000;
inline constexpr size_t kNearestNames = 8;
std::string UnknownTableText(const std::vector<engine::TableCard>& cards, const std::string& want);

// ask_user (clarify.cc). The question and choices of a call whose arguments fit the schema,
// with the limits the schema cannot say (a question not blank and <= kMaxClarificationBytes, 2
// to 6 distinct one-line choices of at most kMaxChoiceBytes, none blank); `problem` is "" when
// they hold.
inline constexpr size_t kMaxClarificationBytes = 500;
inline constexpr size_t kMaxChoiceBytes = 100;
Clarification ClarificationFrom(const nlohmann::ordered_json& args, std::string* problem);
// The tool result the model sees for a reply; and for a question the run ends on, the step's
// observation, which names the question (progress lines show it).
std::string ReplyObservation(const std::string& reply);
// What of a reply the user typed, for the verify gate's "given" text: the reply with the text
// of every choice (any case) cut out, since a choice is the model's words whichever way it was
// picked (its number, its text, an MCP client's enum value). Each cut leaves a line break, so
// the text on either side cannot join into a new number. Issue 22.
std::string TypedPart(std::string_view reply, const std::vector<std::string>& choices);
std::string WaitingObservation(const Clarification& c);
// Calls `ask` (the caller's AskUserFn); an exception from it reads as no reply, with a note.
std::optional<std::string> AskTheUser(const AskUserFn& ask, const Clarification& c,
                                      std::vector<std::string>& notes);
// The assistant turn that asked (an ask_user call with id "resume_1") and the tool result with
// the reply: a resumed run continues as if the reply had come during it.
std::vector<llm::Message> ResumeMessages(const PendingClarification& resume);

// The queries an accepted answer rests on (answer.cc), in step order: those of the results its
// checked values were found in (not the schema cards, nor an earlier turn's kept result), else
// the latest successful run_sql (`last_query`) when no chart was drawn; and every chart's query.
std::vector<trace::AnswerQuery> AnswerQueries(const VerifyReport& report,
                                              const std::vector<EvidenceSource>& sources,
                                              const trace::AnswerQuery& last_query,
                                              const std::vector<trace::AnswerQuery>& charts);
// Their SQL as one script: each query without its trailing ";" and blanks, ended by one ";",
// separated by a blank line; run_python's code left out.
std::string AnswerSql(const std::vector<trace::AnswerQuery>& queries);

// A run before its first model turn (opening.cc), built before the loop starts and under
// `config`'s stop token (config.limits.stop, also in config.schema.embeddings): the trace's head
// (id, question, sources, provider, model, settings; notes such as Python without isolation),
// the conversation so far (the system prompt with the schema ranked for the question and
// suspect data text marked, the earlier turns, the question, a resumed clarification), what the
// schema section holds, and the evidence it brings (the cards, earlier turns' kept results).
struct Opening {
  trace::Trace trace;  // the head; notes, injection marks and a resumed clarification so far
  std::vector<llm::Message> messages;
  SchemaView schema;
  Evidence evidence;
  std::string replies;  // the typed part of a resumed clarification's reply (TypedPart)
};
Opening OpenRun(const RunInput& input, engine::Engine& engine, const llm::Client& client,
                const Config& config);

// The first step of a run that opened its data: kind "load", tool "open_data", lasting
// `load_ms`, whose observation says what the loader decided (its notes per table and column,
// parse cache hits).
trace::Step LoadStep(const engine::Engine& engine, int64_t load_ms);

// The explanation a budget stop gets (explain.cc): one model call without tools, bounded to
// kExplanationMaxTokens of output, never an answer.
inline constexpr int kExplanationMaxTokens = 200;
inline constexpr size_t kMaxExplanationBytes = 1200;
// Whether a run that stopped for `stop_reason` gets one: the repair, step and tool-call budgets.
bool ExplainsStop(trace::StopReason stop_reason);
struct Explanation {
  std::optional<trace::Step> step;  // the model call, when one was made (kind "model")
  std::string text;                 // "" when there is none
  std::string note;                 // why there is none, or ""
};
// Makes the call when the cost budget allows it: the conversation as plain text (tool calls
// and results written out, so no provider needs the tool schemas), and a last user message
// asking what failed and what the user could try. `spent_usd`: the run's cost so far.
Explanation Explain(llm::Client& client, const std::vector<llm::Message>& messages,
                    trace::StopReason stop_reason, const Config& config, double spent_usd,
                    const StopToken& stop);

}  // namespace quarry::agent
