// quarry's MCP tools: describe_schema, run_sql, ask_database, make_chart and run_python. Each
// is a thin layer over the agent's own tools (or, for ask_database, the whole agent run) that
// shapes an Observation into an MCP CallToolResult; no engine call is re-implemented here.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <iterator>

#include "quarry/agent/threads.h"
#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {
namespace {

namespace fs = std::filesystem;

// Larger figures are named in text instead of inlined (clients cap a message's size).
constexpr std::uintmax_t kMaxImageBytes = 8u << 20;

json TextBlock(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

json ToolResult(const std::string& text, bool is_error) {
  return {{"content", json::array({TextBlock(text)})}, {"isError", is_error}};
}

bool Failed(const agent::Observation& obs) { return obs.failure != FailureClass::kNone; }

bool IsPng(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".png";
}

// Appends every PNG among `artifacts` to the result's content as an image block.
void AddImages(const std::vector<std::string>& artifacts, json& result) {
  for (const std::string& a : artifacts) {
    if (!IsPng(a)) continue;
    auto bytes = trace::ReadArtifact(a, kMaxImageBytes);
    if (!bytes) {
      result["content"].push_back(
          TextBlock("figure " + a + " is not inlined: " + bytes.error().message));
      continue;
    }
    result["content"].push_back(
        {{"type", "image"}, {"data", trace::Base64(*bytes)}, {"mimeType", "image/png"}});
  }
}

std::string Absolute(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal().string();
}

// Progress of an ask_database run: each tool call on stderr (a client's server log shows it),
// and every step as a progress notification when the client asked for them.
class StepLog final : public agent::Observer {
 public:
  explicit StepLog(const CallContext& call) : call_(call) {}
  void set_run(std::string run_id) { run_id_ = std::move(run_id); }
  void OnStep(const trace::Step& s) override {
    std::string what;
    if (s.kind == trace::StepKind::kTool) {
      what = s.tool + " " + std::string(trace::StepStatusName(s.status)) +
             (s.status == trace::StepStatus::kOk ? "" : " (" + s.failure_class + ")");
      Log("run " + run_id_ + " step " + std::to_string(s.index) + ": " + what);
    } else if (s.kind == trace::StepKind::kModel) {
      const size_t n = s.tool_calls.size();
      what =
          "model turn" + (n ? " (" + std::to_string(n) + (n == 1 ? " tool call)" : " tool calls)")
                            : std::string(" (no tool call)"));
    } else {
      what = s.tool.empty() ? std::string(trace::StepKindName(s.kind)) : s.tool;
    }
    call_.progress("step " + std::to_string(s.index) + ": " + what);
  }

 private:
  std::string run_id_;
  const CallContext& call_;
};

// A direct execution tool call (make_chart, run_python) gets its own runs/<id>/ so that what it
// writes (figures, the sandbox's work directory) lands beside the runs of ask_database.
json RunInRunDir(ToolBox& box, const agent::Tool& tool, const json& arguments,
                 const CallContext& call) {
  const std::string id = trace::NewRunId();
  auto writer = trace::Writer::Create(box.options().runs_dir, id);
  if (!writer) return ToolResult(writer.error().message, true);
  const agent::Config config = agent::ConfigForRun(box.options().config, writer->dir());
  const agent::Observation obs = box.RunAgentTool(tool, arguments, config, call.stop);
  std::string text = obs.text;
  for (const auto& a : obs.artifacts) text += "\nfile: " + Absolute(a);
  json result = ToolResult(text, Failed(obs));
  AddImages(obs.artifacts, result);
  return result;
}

json DescribeSchema(ToolBox& box, const json& arguments, const CallContext& call) {
  const agent::Observation obs = box.RunAgentTool(*box.AgentTool("inspect_schema"), arguments,
                                                  box.options().config, call.stop);
  return ToolResult(obs.text, Failed(obs));
}

json RunSql(ToolBox& box, const json& arguments, const CallContext& call) {
  // The agent shows its model a 30-row preview; an MCP client gets every row fetched.
  agent::Config config = box.options().config;
  config.preview_rows = config.limits.max_rows;
  const agent::Observation obs =
      box.RunAgentTool(*box.AgentTool("run_sql"), arguments, config, call.stop);
  // No rows is an answer for a client, not an error (the text still says so, with a hint).
  if (Failed(obs) && obs.failure != FailureClass::kEmptyResult) return ToolResult(obs.text, true);
  const BudgetedRows fit = FitRows(obs.text, obs.detail);
  json result = ToolResult(fit.text, false);
  result["structuredContent"] = {{"columns", obs.detail.value("columns", json::array())},
                                 {"types", obs.detail.value("types", json::array())},
                                 {"rows", fit.rows},
                                 {"row_count", fit.row_count},
                                 {"truncated", fit.truncated}};
  return result;
}

// The model asked instead of guessing and no reply could be had during the call: the question
// is the result (not an error), marked in structuredContent so a client can tell it from an
// answer, with how to continue.
json ClarificationResult(const trace::Trace& t, const trace::ClarificationRecord& c,
                         const std::string& thread, const std::string& trace_path) {
  // The question and its choices in the presenter's words; how to reply is MCP's own.
  std::string text = trace::OutcomeText(t, {});
  text += thread.empty() ? "Ask again with the missing detail in the question."
                         : "Reply by calling ask_database with thread '" + thread +
                               "' and the answer as the question.";
  text += "\n\ntrace: " + trace_path;
  json result = ToolResult(text, false);
  result["structuredContent"] = {
      {"status", "clarification_needed"},
      {"clarification", {{"question", c.question}, {"choices", c.choices}}},
      {"thread", thread},
      {"trace", trace_path}};
  return result;
}

json AskDatabase(ToolBox& box, const json& arguments, const CallContext& call) {
  const ServerOptions& options = box.options();
  if (!options.make_client)
    return ToolResult("ask_database has no model client in this server", true);
  auto client = options.make_client();
  if (!client) return ToolResult(client.error().message, true);

  const std::string text = arguments["question"].get<std::string>();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return ToolResult("the question is empty: ask something about the data", true);
  }
  agent::TurnInput turn;
  turn.text = text;
  turn.thread = arguments.value("thread", "");
  turn.clarification_thread = "ask-{run}";
  turn.stop = call.stop;
  turn.ask_user = call.ask_user;
  StepLog progress(call);
  agent::TurnHooks hooks;
  hooks.observer = &progress;
  hooks.begun = [&](const agent::TurnBegun& b) {
    for (const auto& note : b.data_notes) Log("thread '" + b.thread + "': " + note);
    Log("run " + b.run_id + ": " + (*client)->model() + " via " +
        std::string(llm::ProviderName((*client)->provider())) +
        (b.thread.empty() ? "" : ", thread '" + b.thread + "' turn " + std::to_string(b.turn)));
    progress.set_run(b.run_id);
  };
  agent::Config config = options.config;
  config.knowledge = box.knowledge().Get();
  auto end = agent::RunTurn(turn, config, options.runs_dir, options.threads_path, box.engine(),
                            **client, hooks);
  if (!end) return ToolResult(end.error().message, true);
  const trace::Trace& t = end->trace;
  const std::string thread = end->thread;
  const std::string trace_path = Absolute(end->trace_path);
  Log("run " + t.id + ": " + std::string(trace::StopReasonName(t.stop_reason)));
  if (!end->record_error.empty()) Log(end->record_error);

  if (t.stop_reason == trace::StopReason::kClarification && !t.clarifications.empty()) {
    return ClarificationResult(t, t.clarifications.back(), thread, trace_path);
  }
  // Figures by absolute path: the client may not share the server's working directory.
  trace::Trace shown = t;
  for (auto& a : shown.artifacts) a = Absolute(a);
  const bool answered = t.stop_reason == trace::StopReason::kAnswered;
  std::string out = trace::OutcomeText(shown, answered ? std::vector<std::string>{} : t.notes);
  // The user's reply to a clarification can be kept for later questions, if the user agrees.
  {
    for (const auto& offer : box.knowledge().Offers(t)) {
      out += "\n\nThe user's reply \"" + agent::OfferText(offer) +
             "\" can be kept in the knowledge files' glossary, so later questions use it "
             "instead of asking: ask the user, and only if they agree call "
             "remember_clarification with run_id '" +
             t.id + "' and term '" + offer.term.name + "'.";
    }
  }
  out += "\ntrace: " + trace_path;
  // A declined question is an outcome the client asked for, not a failure of the tool.
  json result = ToolResult(out, !answered && t.stop_reason != trace::StopReason::kDeclined);
  AddImages(t.artifacts, result);
  return result;
}

// Keeps a clarification reply of an earlier ask_database run in the glossary: a write to the
// user's knowledge files (never the data), made only on the user's word.
json RememberClarification(ToolBox& box, const json& arguments, const CallContext&) {
  auto kept = box.knowledge().Keep(box.options().runs_dir, arguments["run_id"].get<std::string>(),
                                   arguments.value("term", ""));
  if (!kept) return ToolResult(kept.error().message, true);
  return ToolResult("kept in " + (box.options().config.glossary_dir / kept->file).string() + ":" +
                        std::to_string(kept->line) +
                        "; later questions are given it and are not asked again",
                    false);
}

// The agent's make_chart takes the spec either whole as its arguments or as {"spec": ...}.
bool TakesSpecArgument(const agent::Tool& tool) {
  const json& p = tool.schema.parameters;
  return p.contains("properties") && p["properties"].contains("spec");
}

json MakeChart(ToolBox& box, const json& arguments, const CallContext& call) {
  const agent::Tool* tool = box.AgentTool("make_chart");
  if (!tool) return ToolResult("make_chart is not available in this build", true);
  const json args =
      TakesSpecArgument(*tool) ? json{{"spec", arguments["spec"]}} : arguments["spec"];
  if (std::string problem = agent::ValidateArguments(tool->schema.parameters, args);
      !problem.empty()) {
    return ToolResult("bad_arguments: " + problem, true);
  }
  return RunInRunDir(box, *tool, args, call);
}

json RunPython(ToolBox& box, const json& arguments, const CallContext& call) {
  return RunInRunDir(box, *box.AgentTool("run_python"), arguments, call);
}

// What make_chart tells the client: the agent tool's own words when this build has it.
std::string ChartDescription(const agent::Tool* chart_tool) {
  if (chart_tool) return chart_tool->schema.description + " Returns the chart as a PNG image.";
  return "Draw a chart as a PNG from a spec (a small Vega-Lite subset): {\"mark\": \"bar\"|"
         "\"line\"|\"point\"|\"area\"|\"arc\", \"title\"?, \"encoding\": {\"x\", \"y\", "
         "\"color\"?, \"theta\"?}, \"data\": {\"sql\": \"SELECT ...\"}}; the data is the result "
         "of data.sql, run read-only.";
}

json SpecSchema(const agent::Tool* chart_tool) {
  if (chart_tool && TakesSpecArgument(*chart_tool)) {
    return chart_tool->schema.parameters["properties"]["spec"];
  }
  if (chart_tool) return chart_tool->schema.parameters;
  return {{"type", "object"},
          {"description", "the chart spec; data.sql is the query whose rows are drawn"}};
}

json SpecArguments(const agent::Tool* chart_tool) {
  json schema = json::parse(R"({"type": "object", "properties": {}, "required": ["spec"],
                                "additionalProperties": false})");
  schema["properties"]["spec"] = SpecSchema(chart_tool);
  return schema;
}

}  // namespace

std::string DialectTitle(engine::Dialect dialect) {
  switch (dialect) {
    case engine::Dialect::kDuckDB:
      return "DuckDB";
    case engine::Dialect::kSQLite:
      return "SQLite";
    case engine::Dialect::kPostgreSQL:
      return "PostgreSQL";
    case engine::Dialect::kMySQL:
      return "MySQL";
    case engine::Dialect::kClickHouse:
      return "ClickHouse";
  }
  return std::string(engine::DialectName(dialect));
}

ToolBox::ToolBox(const ServerOptions& options, engine::Engine& engine)
    : options_(options),
      engine_(engine),
      agent_tools_(agent::DefaultTools(options.allow_python)),
      knowledge_(options.config.knowledge, options.config.glossary_dir) {
  const std::string dialect = DialectTitle(engine.dialect());
  const std::string max_rows = std::to_string(options.config.limits.max_rows);
  tools_.push_back({"describe_schema", "Describe the schema",
                    "The schema cards of the data quarry serves: tables, columns, types, null and "
                    "distinct counts, min/max, sample values, foreign keys and row counts. Give "
                    "`table` for one table's card. Read this before writing SQL.",
                    AgentTool("inspect_schema")->schema.parameters, std::nullopt, true, false,
                    DescribeSchema});

  json rows_schema = json::parse(R"({"type": "object",
      "properties": {
        "columns": {"type": "array", "items": {"type": "string"}},
        "types": {"type": "array", "items": {"type": "string"}},
        "rows": {"type": "array",
                 "items": {"type": "array", "items": {"anyOf": [
                   {"type": ["string", "number", "boolean", "null"]},
                   {"type": "object", "properties": {"base64": {"type": "string"}},
                    "required": ["base64"], "additionalProperties": false}]}}},
        "row_count": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"}},
      "required": ["columns", "types", "rows", "row_count", "truncated"]})");
  tools_.push_back({"run_sql", "Run a read-only SQL query",
                    "Run one read-only query (SELECT or WITH ... SELECT) in the " + dialect +
                        " dialect. A guard refuses writes, DDL, PRAGMA/ATTACH and file access, "
                        "naming the rule" +
                        std::string(engine.dialect() == engine::Dialect::kPostgreSQL ||
                                            engine.dialect() == engine::Dialect::kMySQL
                                        ? "; the server runs it in a read-only transaction"
                                    : engine.dialect() == engine::Dialect::kClickHouse
                                        ? "; the server runs it with readonly=1"
                                        : "") +
                        ". Returns at most " + max_rows +
                        " rows and the true row count. Cells are typed: numbers as JSON "
                        "numbers (integers beyond 2^53 and DECIMALs beyond 15 digits as strings "
                        "of their exact digits), null for NULL, {\"base64\": ...} for a BLOB, "
                        "text as strings.",
                    AgentTool("run_sql")->schema.parameters, std::move(rows_schema), true, false,
                    RunSql});

  json ask_schema = json::parse(R"({"type": "object",
      "properties": {
        "question": {"type": "string", "minLength": 1, "description": "the question"},
        "thread": {"type": "string", "minLength": 1}},
      "required": ["question"], "additionalProperties": false})");
  ask_schema["properties"]["thread"]["description"] =
      "a name for the conversation: follow-ups with the same thread see its earlier questions "
      "and answers";
  tools_.push_back({"ask_database", "Ask quarry's analyst agent",
                    "Hand a whole question in English to quarry's own agent: it writes and runs "
                    "SQL, repairs its errors, and answers only with numbers that appeared in real "
                    "query results. Returns the answer, the SQL it rests on, a chart when one was "
                    "drawn, and the trace path. Give the same `thread` to ask follow-ups.",
                    std::move(ask_schema), std::nullopt, false, true, AskDatabase});

  if (!options.config.glossary_dir.empty()) {
    tools_.push_back(
        {"remember_clarification", "Keep a clarification reply",
         "Keep the user's reply to a clarification that ask_database asked (\"top customer: by "
         "revenue or by orders?\") in the knowledge files' glossary (" +
             (options.config.glossary_dir / "glossary.yaml").string() +
             "), so later questions use it instead of asking again. Writes that file, never the "
             "data. Call it only when the user has agreed to keep the reply.",
         json::parse(R"({"type": "object",
             "properties": {
               "run_id": {"type": "string", "minLength": 1, "maxLength": 64,
                          "description": "the ask_database run that asked, from its result"},
               "term": {"type": "string", "maxLength": 80,
                        "description": "the phrase asked about, from the result's offer"}},
             "required": ["run_id"], "additionalProperties": false})"),
         std::nullopt, false, false, RememberClarification, /*read_only=*/false});
  }
  const agent::Tool* chart = AgentTool("make_chart");
  tools_.push_back({"make_chart", "Draw a chart", ChartDescription(chart), SpecArguments(chart),
                    std::nullopt, true, false, MakeChart});
  if (const agent::Tool* python = AgentTool("run_python"); options.allow_python && python) {
    // Over MCP each call is a fresh Python in its own run directory (no kernel per session
    // yet), so the agent's promise of persistent variables is replaced by the truth.
    std::string description = python->schema.description;
    const std::string persist =
        "Variables persist between run_python calls of this run, as in a "
        "notebook (unless a call times out or ends Python: then you are "
        "told the state was lost). ";
    if (const size_t at = description.find(persist); at != std::string::npos) {
      description.replace(at, persist.size(),
                          "Each call starts a fresh Python: variables do not "
                          "persist between calls. ");
    }
    tools_.push_back({"run_python", "Run sandboxed Python", description, python->schema.parameters,
                      std::nullopt, false, false, RunPython});
  }
}

const agent::Tool* ToolBox::AgentTool(std::string_view name) const {
  for (const agent::Tool& t : agent_tools_) {
    if (t.schema.name == name && t.run) return &t;
  }
  return nullptr;
}

agent::Observation ToolBox::RunAgentTool(const agent::Tool& tool, const json& arguments,
                                         agent::Config config, const StopToken& stop) {
  config.limits.stop = stop;
  config.sandbox.stop = stop;
  agent::Evidence evidence;  // no verify gate runs over direct tool calls
  std::optional<sandbox::LastResult> last;
  {
    std::lock_guard lock(mu_);
    last = last_;
  }
  // The client's model is a model too: personal columns show it no values (describe_schema).
  std::optional<knowledge::PersonalRedaction> redacted;
  if (const auto known = knowledge_.Get(); known && knowledge::HasPersonalColumns(*known)) {
    redacted.emplace(engine_, *known);
  }
  engine::Engine& seen = redacted ? static_cast<engine::Engine&>(*redacted) : engine_;
  agent::ToolContext context{seen, config, evidence, last};
  agent::Observation obs = tool.run(arguments, context);
  // Only a successful run_sql sets it; of concurrent ones, the last to finish wins.
  if (tool.schema.name == "run_sql" && obs.failure == FailureClass::kNone && last) {
    std::lock_guard lock(mu_);
    last_ = std::move(last);
  }
  return obs;
}

const McpTool* ToolBox::Find(std::string_view name) const {
  for (const McpTool& t : tools_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string ToolBox::Names() const {
  std::string names;
  for (const McpTool& t : tools_) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

json ToolBox::List(bool structured) const {
  json list = json::array();
  for (const McpTool& t : tools_) {
    json entry = {{"name", t.name}};
    if (structured) entry["title"] = t.title;
    entry["description"] = t.description;
    entry["inputSchema"] = t.input_schema;
    if (structured && t.output_schema) entry["outputSchema"] = *t.output_schema;
    entry["annotations"] = {{"title", t.title},
                            {"readOnlyHint", t.read_only},
                            {"destructiveHint", false},
                            {"idempotentHint", t.idempotent},
                            {"openWorldHint", t.open_world}};
    list.push_back(std::move(entry));
  }
  return list;
}

json ToolBox::Call(const McpTool& tool, const json& arguments, bool structured,
                   const CallContext& call) {
  const auto started = std::chrono::steady_clock::now();
  json result;
  if (std::string problem = agent::ValidateArguments(tool.input_schema, arguments);
      !problem.empty()) {
    result = ToolResult("bad_arguments: " + problem, true);
  } else {
    result = tool.handler(*this, arguments, call);
  }
  if (!structured) result.erase("structuredContent");
  FitText(result);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  Log(tool.name + ": " + (result.value("isError", false) ? "error" : "ok") + " in " +
      std::to_string(ms) + " ms");
  return result;
}

}  // namespace quarry::mcp
