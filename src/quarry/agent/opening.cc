// A run before its first model turn: the trace's head, the system prompt with the schema as
// ranked for the question and the data's suspect text marked, the earlier turns of a thread,
// the question, and a resumed clarification. Built before the loop's Session, under the run's
// stop token, so the embeddings call that ranks the schema can be cancelled like any other.
#include <filesystem>

#include "quarry/agent/agent_internal.h"
#include "quarry/agent/injection_internal.h"
#include "quarry/common/json.h"

namespace quarry::agent {

namespace {

using json = nlohmann::ordered_json;

// Who ran what on which data with which settings, and whether Python is isolated here.
trace::Trace TraceHead(const RunInput& input, const engine::Engine& engine,
                       const llm::Client& client, const Config& config) {
  trace::Trace t;
  t.id = input.run_id;
  t.created_at = UtcNow();
  t.question = input.question;
  for (const auto& s : engine.sources()) {
    t.sources.push_back({s.path, std::string(engine::SourceFormatName(s.format)), s.size_bytes,
                         s.sha256, s.tables, std::string(engine::CacheUseName(s.cache))});
  }
  t.dialect = std::string(engine::DialectName(engine.dialect()));
  t.provider = llm::ProviderName(client.provider());
  t.model = client.model();
  t.turns_source = client.turns_source();
  t.config = {
      {"self_correction", config.self_correction}, {"max_steps", config.max_steps},
      {"max_repairs", config.max_repairs},         {"max_tool_calls", config.max_tool_calls},
      {"max_cost_usd", config.max_cost_usd},       {"timeout_ms", config.limits.timeout_ms},
      {"max_rows", config.limits.max_rows},        {"preview_rows", config.preview_rows}};
  if (config.prompt == PromptMode::kEval) t.config["prompt"] = "eval";
  if (config.python && config.sandbox.allow_unisolated) {
    if (auto why = sandbox::NamespaceUnavailableReason()) {
      t.notes.push_back("run_python is NOT isolated on this machine (" + *why +
                        "): rlimits, seccomp and the Python guard only");
    }
  }
  t.thread = input.thread;
  t.thread_turn = input.thread_turn;
  return t;
}

}  // namespace

Opening OpenRun(const RunInput& input, engine::Engine& engine, const llm::Client& client,
                const Config& config) {
  Opening o;
  o.trace = TraceHead(input, engine, client, config);
  std::string system =
      SystemPrompt(engine, input.question, config.schema, &o.schema, config.prompt);
  std::vector<std::string> files;
  for (const auto& s : engine.sources()) {
    // A server's path is its redacted spec: a URL's last "/" part is no name.
    files.push_back(
        engine::IsServerSpec(s.path) ? s.path : std::filesystem::path(s.path).filename().string());
  }
  MarkSystemPrompt(system, o.schema.text, files, o.trace.injection_suspected);
  MarkDataScan(system, ScanTextColumns(engine, config.limits.stop), o.trace.injection_suspected,
               o.trace.notes);
  if (config.knowledge) {
    // The user's own definitions: after the schema, and after the scan of the data's text,
    // which they are not (they are trusted as the user's words).
    std::vector<std::string> tables;
    for (const auto& card : engine.describe()) tables.push_back(card.name);
    const knowledge::Selection chosen = knowledge::Retrieve(*config.knowledge, input.question,
                                                            config.knowledge_budget_tokens, tables);
    if (!chosen.text.empty()) system += "\n" + chosen.text;
    o.trace.config["knowledge"] = {{"dir", config.knowledge->dir.string()},
                                   {"items", chosen.items},
                                   {"left_out", chosen.left_out},
                                   {"tokens_estimated", chosen.tokens}};
    if (!chosen.items.empty()) {
      std::string note = "knowledge given to the model: ";
      for (size_t i = 0; i < chosen.items.size(); ++i) note += (i ? ", " : "") + chosen.items[i];
      o.trace.notes.push_back(note);
    }
    if (!chosen.left_out.empty()) {
      o.trace.notes.push_back("knowledge left out (over the budget of " +
                              std::to_string(config.knowledge_budget_tokens) +
                              " tokens): " + std::to_string(chosen.left_out.size()) + " item(s)");
    }
  }
  const size_t stable = StablePrefixBytes(system);
  o.messages.push_back({llm::Role::kSystem, std::move(system), {}, {}, stable});
  std::vector<llm::Message> prior =
      PriorMessages(input.history, input.history_budget_tokens, &o.trace.notes);
  AddKeptResults(input.history, prior, o.evidence);
  for (llm::Message& m : prior) {
    // Earlier turns carry data again (result previews, file names in data notes): scanned
    // like any observation, recorded at step 0 as the system prompt's data is.
    MarkInjection(m.content, 0, "thread context", o.trace.injection_suspected);
    o.messages.push_back(std::move(m));
  }
  o.messages.push_back({llm::Role::kUser, input.question, {}, {}});
  if (input.resume) {  // answered after an earlier run ended on it: step 0, as if asked now
    for (llm::Message& m : ResumeMessages(*input.resume)) o.messages.push_back(std::move(m));
    o.trace.clarifications.push_back({0, input.resume->asked.question, input.resume->asked.choices,
                                      input.resume->reply, input.resume->asked.term});
    o.replies += "\n" + TypedPart(input.resume->reply, input.resume->asked.choices);
  }
  // The cards the model read are evidence too, cited as the card (a date range and a count
  // from a card's note are as shown as any result).
  o.evidence.AddCard(o.schema.text);
  return o;
}

trace::Step LoadStep(const engine::Engine& engine, int64_t load_ms) {
  trace::Step step;
  step.kind = trace::StepKind::kLoad;
  step.tool = "open_data";
  step.status = trace::StepStatus::kOk;
  step.failure_class = "none";
  step.duration_ms = load_ms;
  json sources = json::array();
  std::string text;
  for (const auto& s : engine.sources()) {
    sources.push_back(
        {{"path", s.path}, {"size_bytes", s.size_bytes}, {"cache", engine::CacheUseName(s.cache)}});
    if (s.cache == engine::CacheUse::kHit) text += s.path + ": read from the parse cache\n";
  }
  for (const auto& card : engine.describe()) {
    for (const auto& n : card.notes) text += card.name + ": " + n + "\n";
    for (const auto& c : card.columns) {
      for (const auto& n : c.notes) text += card.name + "." + c.name + ": " + n + "\n";
    }
  }
  step.observation = text;
  step.detail = {{"sources", sources}};
  return step;
}

}  // namespace quarry::agent
