// The agent loop: model turn, tool calls, observations, repair accounting, budgets and the
// verify gate, every step recorded in the trace as it happens.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "quarry/agent/agent.h"
#include "quarry/common/text.h"
#include "quarry/common/json.h"
#include "quarry/agent/agent_internal.h"
#include "quarry/agent/budget_internal.h"
#include "quarry/common/scratch.h"
#include "quarry/agent/hygiene_internal.h"
#include "quarry/agent/injection_internal.h"

namespace quarry::agent {

std::string UtcNow() { return trace::UtcTimestamp(); }

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

std::string ValueText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The run's configuration with its stop request reaching every query and Python call.
Config WithStop(const Config& config, const StopToken& stop) {
  Config c = config;
  c.limits.stop = stop;
  c.sandbox.stop = stop;
  if (c.schema.embeddings) c.schema.embeddings->stop = stop;
  return c;
}

// One run's mutable state; Run() below is its only user.
class Session {
 public:
  Session(const RunInput& input, engine::Engine& engine, llm::Client& client, const Config& config,
          Observer* observer, trace::Writer* writer)
      : engine_(engine),
        client_(client),
        config_(WithStop(config, input.stop)),
        stop_(input.stop),
        observer_(observer),
        writer_(writer),
        ask_user_(input.ask_user),
        tools_(DefaultTools(config.python, !config.artifacts_dir.empty())),
        context_{engine, config_, evidence_, last_, nullptr},
        budget_(config_),
        repairs_(trace_.totals) {
    trace_.id = input.run_id;
    trace_.created_at = UtcNow();
    trace_.question = input.question;
    for (const auto& s : engine.sources()) {
      trace_.sources.push_back({s.path, std::string(engine::SourceFormatName(s.format)),
                                s.size_bytes, s.sha256, s.tables,
                                std::string(engine::CacheUseName(s.cache))});
    }
    trace_.dialect = std::string(engine::DialectName(engine.dialect()));
    trace_.provider = llm::ProviderName(client.provider());
    trace_.model = client.model();
    trace_.turns_source = client.turns_source();
    trace_.config = {
        {"self_correction", config.self_correction}, {"max_steps", config.max_steps},
        {"max_repairs", config.max_repairs},         {"max_tool_calls", config.max_tool_calls},
        {"max_cost_usd", config.max_cost_usd},       {"timeout_ms", config.limits.timeout_ms},
        {"max_rows", config.limits.max_rows},        {"preview_rows", config.preview_rows}};
    if (config.prompt == PromptMode::kEval) trace_.config["prompt"] = "eval";
    for (const Tool& t : tools_) schemas_.push_back(t.schema);
    if (config.python && config.sandbox.allow_unisolated) {
      if (auto why = sandbox::NamespaceUnavailableReason()) {
        trace_.notes.push_back("run_python is NOT isolated on this machine (" + *why +
                               "): rlimits, seccomp and the Python guard only");
      }
    }
    SchemaView schema;
    std::string system =
        SystemPrompt(engine, input.question, config_.schema, &schema, config.prompt);
    std::vector<std::string> files;
    for (const auto& s : engine.sources()) {
      // A server's path is its redacted spec: a URL's last "/" part is no name.
      files.push_back(engine::IsServerSpec(s.path)
                          ? s.path
                          : std::filesystem::path(s.path).filename().string());
    }
    MarkSystemPrompt(system, schema.text, files, trace_.injection_suspected);
    MarkDataScan(system, ScanTextColumns(engine, stop_), trace_.injection_suspected, trace_.notes);
    const size_t stable = StablePrefixBytes(system);
    messages_.push_back({llm::Role::kSystem, std::move(system), {}, {}, stable});
    std::vector<llm::Message> prior =
        PriorMessages(input.history, input.history_budget_tokens, &trace_.notes);
    AddKeptResults(input.history, prior, evidence_);
    for (llm::Message& m : prior) {
      // Earlier turns carry data again (result previews, file names in data notes): scanned
      // like any observation, recorded at step 0 as the system prompt's data is.
      MarkInjection(m.content, 0, "thread context", trace_.injection_suspected);
      messages_.push_back(std::move(m));
    }
    trace_.thread = input.thread;
    trace_.thread_turn = input.thread_turn;
    messages_.push_back({llm::Role::kUser, input.question, {}, {}});
    if (input.resume) {  // answered after an earlier run ended on it: step 0, as if asked now
      for (llm::Message& m : ResumeMessages(*input.resume)) messages_.push_back(std::move(m));
      trace_.clarifications.push_back(
          {0, input.resume->asked.question, input.resume->asked.choices, input.resume->reply});
      replies_ += "\n" + TypedPart(input.resume->reply, input.resume->asked.choices);
    }
    RecordSchema(schema);
    // The cards the model read are evidence too, cited as the card (issue 23: a date range and
    // a count from a note were refused as "not in any result you were shown").
    evidence_.AddCard(schema.text);
    load_ms_ = input.load_ms;
    StartKernel();
  }

  ~Session() { StopKernel(); }

  trace::Trace Run() {
    const auto start = Clock::now();
    if (writer_) {
      // Enough to rebuild the trace from events.jsonl alone if the process is killed.
      const json whole = trace::ToJson(trace_);
      json started = {{"event", "start"},
                      {"id", trace_.id},
                      {"question", trace_.question},
                      {"model", trace_.model},
                      {"provider", trace_.provider},
                      {"created_at", trace_.created_at},
                      {"dialect", trace_.dialect},
                      {"sources", whole["sources"]},
                      {"config", trace_.config}};
      if (!trace_.turns_source.empty()) started["source"] = trace_.turns_source;
      AppendEvent(started);
    }
    if (load_ms_ >= 0) EmitLoad();
    while (!stop_reason_) Turn();
    StopKernel();
    if (ExplainsStop(*stop_reason_)) {
      Explanation e =
          Explain(client_, messages_, *stop_reason_, config_, trace_.totals.cost_usd, stop_);
      if (e.step) Emit(Count(std::move(*e.step)));
      trace_.explanation = e.text;
      if (!e.note.empty()) trace_.notes.push_back(e.note);
    }
    trace_.stop_reason = *stop_reason_;
    // A run that ends without an answer keeps what the model last said in plain text.
    if (*stop_reason_ != trace::StopReason::kAnswered) trace_.reply = text_reply_;
    trace_.totals.wall_ms = MsSince(start) + std::max<int64_t>(load_ms_, 0);
    trace_.totals.load_ms = std::max<int64_t>(load_ms_, 0);
    if (writer_) {
      AppendEvent({{"event", "end"}, {"stop_reason", trace::StopReasonName(*stop_reason_)}});
      if (auto w = writer_->WriteFinal(trace_); !w) trace_.notes.push_back(w.error().message);
    }
    return trace_;
  }

 private:
  void Turn() {
    if (stop_.stop_requested()) {
      stop_reason_ = trace::StopReason::kInterrupted;
      return;
    }
    const int64_t prompt_tokens = PromptTokensEstimate();
    std::string why;
    stop_reason_ = budget_.BeforeModelTurn(trace_.totals, client_.MaxCostUsd(prompt_tokens),
                                           prompt_tokens, &why);
    if (!why.empty()) trace_.notes.push_back(why);
    if (stop_reason_) return;
    const auto started = Clock::now();
    llm::Request request{messages_, schemas_, {}, {}, stop_, prompt_tokens};
    auto turn = client_.Complete(request);
    if (!turn) {
      trace_.notes.push_back(turn.error().message);
      const bool stopped = turn.error().code == Error::Code::kCancelled || stop_.stop_requested();
      stop_reason_ = stopped ? trace::StopReason::kInterrupted : trace::StopReason::kModelError;
      return;
    }
    trace::Step step;
    step.kind = trace::StepKind::kModel;
    step.content = turn->content;
    for (const auto& c : turn->tool_calls)
      step.tool_calls.push_back({c.id, c.name, c.arguments_json});
    step.input_tokens = turn->usage.input_tokens;
    step.output_tokens = turn->usage.output_tokens;
    step.cached_tokens = turn->usage.cached_tokens;
    step.cache_write_tokens = turn->usage.cache_write_tokens;
    step.cost_usd = turn->cost_usd;
    step.cache_saved_usd = turn->cache_saved_usd;
    step.attempts = turn->attempts;
    step.streamed = turn->streamed;
    for (const auto& e : turn->retried_errors) trace_.notes.push_back("retried: " + e);
    if (!turn->cost_known && !cost_unknown_noted_ && client_.provider() != llm::Provider::kReplay) {
      cost_unknown_noted_ = true;
      trace_.notes.push_back("no cost for model '" + trace_.model +
                             "': the provider reported none and the price table has no entry, "
                             "so costs show as $0 and --max-cost cannot apply; add the model to "
                             "a QUARRY_PRICES file");
    }
    step.duration_ms = turn->latency_ms > 0 ? turn->latency_ms : MsSince(started);
    Emit(Count(std::move(step)));
    messages_.push_back({llm::Role::kAssistant, turn->content, turn->tool_calls, {}});
    last_prompt_tokens_ = turn->usage.input_tokens;
    last_output_tokens_ = turn->usage.output_tokens;
    last_prompt_messages_ = messages_.size();
    cut_off_ = turn->finish_reason == llm::FinishReason::kLength;
    if (cut_off_) {
      trace_.notes.push_back("model turn " + std::to_string(trace_.totals.model_turns) +
                             " was cut off at the output token limit (finish_reason: length); "
                             "raise --max-tokens or QUARRY_MAX_TOKENS");
    }

    if (turn->tool_calls.empty()) {
      if (!turn->content.empty()) text_reply_ = turn->content;
      if (nudged_) {
        stop_reason_ = trace::StopReason::kNoToolCall;
        return;
      }
      nudged_ = true;
      messages_.push_back({llm::Role::kUser, Prompt("no_tool_call", {}), {}, {}});
      return;
    }
    text_reply_.clear();
    for (const auto& call : turn->tool_calls) {
      Call(call);
      if (stop_reason_) return;
    }
  }

  // What a tool call asks, read before it runs: the tool, its arguments, what is wrong with
  // them, and whether it repeats a call that failed.
  struct CallPlan {
    const Tool* tool = nullptr;
    json args;
    std::string problem;  // "" when the arguments fit the tool's schema
    Clarification asked;  // ask_user's question and choices
    std::string key;      // the call as the repeat check compares it
    std::optional<RepeatLog::Earlier> earlier;
    bool stuck = false;  // this send is the kStuckSends-th of a failed call, no success between
  };

  // One tool call: admitted by the budgets, validated, checked for a repeat, run, recorded.
  void Call(const llm::ToolCall& call) {
    if (stop_.stop_requested()) {  // the calls after the stop are not run
      stop_reason_ = trace::StopReason::kInterrupted;
      return;
    }
    const auto started = Clock::now();
    trace::Step step;
    step.kind = call.name == "ask_user" ? trace::StepKind::kClarification : trace::StepKind::kTool;
    step.tool = call.name;
    step.tool_call_id = call.id;
    step.arguments = call.arguments_json;
    step.repair = repairs_.outstanding();
    std::string why;  // this call and the rest are not run
    stop_reason_ = budget_.BeforeToolCall(trace_.totals, step.repair, &why);
    if (!why.empty()) trace_.notes.push_back(why);
    if (stop_reason_) return;
    repairs_.Started(step.repair);
    const CallPlan plan = Plan(call);
    bool answered = false;
    const Observation obs = Execute(call, plan, step, &answered);
    Record(call, plan, std::move(step), obs, answered, started);
  }

  CallPlan Plan(const llm::ToolCall& call) {
    CallPlan plan;
    for (const Tool& t : tools_) {
      if (t.schema.name == call.name) plan.tool = &t;
    }
    plan.args = ParseJson(call.arguments_json.empty() ? std::string_view("{}")
                                                      : std::string_view(call.arguments_json));
    if (!plan.tool) {
      std::string names;
      for (const Tool& t : tools_) names += (names.empty() ? "" : ", ") + t.schema.name;
      plan.problem = "there is no tool named '" + call.name + "'; the tools are: " + names;
    } else if (plan.args.is_discarded() && cut_off_) {
      plan.problem =
          "your reply was cut off at the output token limit (finish_reason: length) "
          "before these arguments were complete; send a shorter call";
    } else if (plan.args.is_discarded()) {
      plan.problem = "the arguments are not valid JSON: " +
                     call.arguments_json.substr(0, Utf8Prefix(call.arguments_json, 200));
    } else {
      plan.problem = ValidateArguments(plan.tool->schema.parameters, plan.args);
    }
    if (plan.problem.empty() && call.name == "ask_user") {
      plan.asked = ClarificationFrom(plan.args, &plan.problem);
    }
    // An identical repeat of a failed call is answered from the first one, not run again.
    plan.key = plan.args.is_discarded() ? RawCallKey(call.name, call.arguments_json)
                                        : CallKey(call.name, plan.args);
    plan.earlier = repeats_.Find(call.name, plan.key);
    plan.stuck = plan.earlier && plan.earlier->sends_since_success + 1 >= kStuckSends;
    return plan;
  }

  // The call's observation: from the repeated call, a bad-arguments reply, the verify gate,
  // the user, or the tool itself. `answered`: final_answer ended the run.
  Observation Execute(const llm::ToolCall& call, const CallPlan& plan, trace::Step& step,
                      bool* answered) {
    Observation obs;
    if (plan.earlier) return RepeatObservation(*plan.earlier, plan.stuck);
    if (!plan.problem.empty()) {
      obs.failure = FailureClass::kBadArguments;
      obs.text = "bad_arguments: " + plan.problem;
    } else if (call.name == "final_answer") {
      *answered = FinalAnswer(plan.args, obs, step);
    } else if (call.name == "ask_user") {
      AskUser(plan.asked, obs, step);
    } else {
      try {
        context_.step = static_cast<int>(trace_.steps.size()) + 1;  // the index Emit gives
        obs = plan.tool->run(plan.args, context_);
      } catch (const std::exception& e) {  // the tool runner is an edge: nothing escapes it
        obs = Observation{};
        obs.failure = FailureClass::kRuntimeError;
        obs.text = std::string("runtime_error: ") + e.what();
      }
      if (obs.failure == FailureClass::kNone && call.name == "run_sql") {
        last_query_ = {context_.step, "run_sql", obs.detail.value("sql", "")};
      }
      if (obs.failure == FailureClass::kNone && !obs.artifacts.empty() && obs.detail.is_object()) {
        charts_.push_back({context_.step, call.name, obs.detail.value("sql", "")});
      }
      // What the data says reaches the model; text in it that reads like instructions is
      // marked as data where the model reads it.
      MarkInjection(obs.text, context_.step, "observation", trace_.injection_suspected);
    }
    return obs;
  }

  // The call's step in the trace and its observation in the conversation; then whether the
  // run stops here (interrupted, stuck on a repeat, a failure without self-correction).
  void Record(const llm::ToolCall& call, const CallPlan& plan, trace::Step step,
              const Observation& obs, bool answered, Clock::time_point started) {
    const bool execution = plan.tool && plan.tool->execution;
    repairs_.Finished(obs.failure, execution);
    // Whatever the call returned, it was cut short (or its result is no longer wanted).
    const bool interrupted = !answered && stop_.stop_requested();
    if (interrupted) step.status = trace::StepStatus::kInterrupted;
    if (step.status == trace::StepStatus::kNone) {
      step.status =
          obs.failure == FailureClass::kNone ? trace::StepStatus::kOk : trace::StepStatus::kFailed;
    }
    step.failure_class = std::string(FailureClassName(obs.failure));
    step.rule = obs.rule;
    step.observation = obs.text;
    step.detail = obs.detail;
    for (const auto& a : obs.artifacts) trace_.artifacts.push_back(a);
    step.duration_ms = MsSince(started);
    Emit(std::move(step));
    messages_.push_back({llm::Role::kTool, obs.text, {}, call.id});
    if (interrupted) {
      stop_reason_ = trace::StopReason::kInterrupted;
      return;
    }
    repeats_.Record(call.name, plan.key, trace_.steps.back().index, obs, plan.earlier.has_value(),
                    !plan.earlier && plan.problem.empty() && execution);
    if (plan.stuck) {
      trace_.notes.push_back("the call of step " + std::to_string(plan.earlier->step) +
                             " was sent " + std::to_string(plan.earlier->sends_since_success + 1) +
                             " times unchanged after it failed, with no successful execution "
                             "call in between; the run stopped at the last");
      stop_reason_ = trace::StopReason::kRepairBudget;
      return;
    }
    if (answered) return;
    if (obs.failure != FailureClass::kNone && !config_.self_correction) {
      stop_reason_ = trace::StopReason::kExecutionFailed;
    }
  }

  // The verify gate. Returns true when the run ends here (answered, or ungrounded twice).
  bool FinalAnswer(const json& args, Observation& obs, trace::Step& step) {
    const std::string answer = args["answer"].get<std::string>();
    std::vector<std::string> values;
    for (const auto& v : args.value("supporting_values", json::array()))
      values.push_back(ValueText(v));
    std::vector<std::string> assumptions;
    for (const auto& a : args.value("assumptions", json::array()))
      assumptions.push_back(a.get<std::string>());
    if (std::string problem = CheckAssumptions(assumptions); !problem.empty()) {
      obs.failure = FailureClass::kBadArguments;
      obs.text = "bad_arguments: " + problem;
      return false;
    }
    // What the user typed in reply to ask_user is theirs like the question: its numbers are
    // given. A picked choice is not: the model wrote it (TypedPart).
    // The schema allows only the two names; anything else was refused as bad_arguments.
    const bool declined = trace::ParseAnswerOutcome(args.value("outcome", "answer")) ==
                          trace::AnswerOutcome::kDeclined;
    const VerifyReport report = declined
                                    ? VerifyDeclined(answer, evidence_, trace_.question + replies_)
                                    : Verify(answer, values, evidence_, trace_.question + replies_);
    const auto& sources = evidence_.sources();
    auto source = [&](int i) -> const EvidenceSource* {
      return i >= 0 && i < static_cast<int>(sources.size()) ? &sources[static_cast<size_t>(i)]
                                                            : nullptr;
    };
    // Only a grounded answer is the run's answer; a rejected one stays in its step's detail.
    if (report.grounded() && declined) {
      trace_.declined = answer;
    } else if (report.grounded()) {
      trace_.answer = answer;
      trace_.supporting_values = values;
      trace_.assumptions = assumptions;
      trace_.answer_queries.clear();
      for (int i : report.sources()) {
        const EvidenceSource* s = source(i);
        // The cards and an earlier turn's kept result are no query of this run.
        if (s->tool == kSchemaCardTool || s->turn > 0) continue;
        trace_.answer_queries.push_back({s->step, s->tool, s->query});
      }
      if (trace_.answer_queries.empty() && !last_query_.query.empty() && charts_.empty()) {
        trace_.answer_queries.push_back(last_query_);
      }
      // A chart is a deliverable: its query is the answer's too, grounded values or not.
      for (const trace::AnswerQuery& c : charts_) {
        const bool listed =
            std::any_of(trace_.answer_queries.begin(), trace_.answer_queries.end(),
                        [&](const trace::AnswerQuery& q) { return q.step == c.step; });
        if (!listed && !c.query.empty()) trace_.answer_queries.push_back(c);
      }
      std::sort(
          trace_.answer_queries.begin(), trace_.answer_queries.end(),
          [](const trace::AnswerQuery& a, const trace::AnswerQuery& b) { return a.step < b.step; });
      trace_.answer_sql.clear();
      for (const auto& q : trace_.answer_queries) {
        if (q.tool == "run_python") continue;
        std::string sql = q.query;
        while (!sql.empty() && (sql.back() == ';' || sql.back() == ' ' || sql.back() == '\n'))
          sql.pop_back();
        trace_.answer_sql += (trace_.answer_sql.empty() ? "" : "\n\n") + sql + ";";
      }
    }
    trace_.grounded = report.grounded() && !declined;  // a decline grounds no answer
    trace_.verify.clear();
    json checks = json::array();
    for (const auto& c : report.checks) {
      trace::VerifyCheck v{c.value,   c.origin,     std::string(MatchRuleName(c.rule)),
                           c.matched, c.grounded(), 0,
                           "",        "",           c.column,
                           c.reason};
      if (const EvidenceSource* s = c.grounded() ? source(c.source) : nullptr) {
        v.step = s->step, v.tool = s->tool, v.query = s->query;
      }
      checks.push_back({{"value", v.value},
                        {"rule", v.rule},
                        {"step", v.step},
                        {"column", v.column},
                        {"reason", v.reason}});
      trace_.verify.push_back(std::move(v));
    }
    obs.detail = {{"grounded", report.grounded()},       {"answer", answer},
                  {"supporting_values", values},         {"assumptions", assumptions},
                  {"unsupported", report.unsupported()}, {"checks", checks}};
    if (declined) obs.detail["outcome"] = trace::AnswerOutcome::kDeclined;
    if (report.grounded()) {
      obs.text = declined ? "accepted as declined" : "accepted";
      stop_reason_ = declined ? trace::StopReason::kDeclined : trace::StopReason::kAnswered;
      return true;
    }
    std::string list;
    for (const auto& c : report.checks) {
      if (c.grounded() || list.find("- " + c.value + ":") != std::string::npos) continue;
      list +=
          "- " + c.value + ": " +
          (c.reason.empty() ? "not in any result you were shown, nor in the question" : c.reason) +
          "\n";
    }
    step.status = trace::StepStatus::kRejected;
    obs.detail["sent_back"] = !sent_back_;  // the mark trace::IsSendBack reads
    if (sent_back_) {
      obs.text = "verify: not grounded again:\n" + list;
      stop_reason_ = trace::StopReason::kUngrounded;
      return true;
    }
    sent_back_ = true;
    repairs_.SentBack();
    obs.text = Prompt("verify_sendback", {{"unsupported", list}});
    return false;
  }

  // ask_user: the reply while the run waits (its wait counts against no budget), or the end of
  // the run, waiting on the question (clarification_needed).
  void AskUser(const Clarification& asked, Observation& obs, trace::Step& step) {
    const auto started = Clock::now();
    const std::optional<std::string> reply = AskTheUser(ask_user_, asked, trace_.notes);
    obs.detail = {{"wait_ms", MsSince(started)}};
    if (reply) obs.detail["reply"] = *reply;  // so a killed run's events still hold it
    trace_.clarifications.push_back({static_cast<int>(trace_.steps.size()) + 1, asked.question,
                                     asked.choices, reply.value_or("")});
    if (!reply) {
      obs.text = WaitingObservation(asked);
      step.status = trace::StepStatus::kWaiting;
      stop_reason_ = trace::StopReason::kClarification;
      return;
    }
    obs.text = ReplyObservation(*reply);
    replies_ += "\n" + TypedPart(*reply, asked.choices);
  }

  // A model step into the totals.
  trace::Step Count(trace::Step step) {
    trace::Totals& x = trace_.totals;
    ++x.model_turns;
    x.input_tokens += step.input_tokens;
    x.output_tokens += step.output_tokens;
    x.cached_tokens += step.cached_tokens;
    x.cache_write_tokens += step.cache_write_tokens;
    x.cost_usd += step.cost_usd;
    x.cache_saved_usd += step.cache_saved_usd.value_or(0.0);
    return step;
  }

  // The next prompt's tokens: the provider's count of the last prompt plus that turn's output
  // and the estimate of what came since, or the estimate of the whole conversation when that
  // is larger (or no turn was counted yet).
  int64_t PromptTokensEstimate() const {
    int64_t whole = EstimateRequestTokens(messages_, schemas_);
    for (const auto& m : messages_) {
      for (const auto& c : m.tool_calls) {
        whole += 8 + engine::EstimateTokens(c.name) + engine::EstimateTokens(c.arguments_json);
      }
    }
    if (last_prompt_tokens_ <= 0) return whole;
    int64_t counted = last_prompt_tokens_ + last_output_tokens_;
    for (size_t i = last_prompt_messages_; i < messages_.size(); ++i) {
      counted += 4 + engine::EstimateTokens(messages_[i].content);
    }
    return std::max(whole, counted);
  }

  // What the model was shown of the schema, and the first request's estimated size, which the
  // trace summary sets beside the provider's count of the first turn.
  void RecordSchema(const SchemaView& schema) {
    trace_.config["schema_budget_tokens"] = config_.schema.budget_tokens;
    trace_.config["schema_samples"] = config_.schema.samples;
    trace_.config["schema_tokens_estimated"] = schema.tokens_estimated;
    trace_.config["schema_tables_full"] = schema.full.size();
    if (!schema.whole) {
      trace_.config["schema_tables_compact"] = schema.compact.size();
      trace_.config["schema_tables_listed"] = schema.listed;
      trace_.config["schema_ranking"] = schema.ranking;
    }
    trace_.config["prompt_tokens_estimated"] = EstimateRequestTokens(messages_, schemas_);
    for (const auto& n : schema.notes) trace_.notes.push_back(n);
  }

  // One warm Python per run, only when run_python is offered: it imports pandas and loads the
  // tables while the model thinks, and serves every call of the run.
  void StartKernel() {
    if (!config_.python || config_.sandbox.workdir.empty()) return;
    sandbox::Options options = config_.sandbox;
    options.tables_dir = TablesDirFor(options);
    tables_dir_ = options.tables_dir;
    ScratchDirs::Add(tables_dir_);
    const engine::Engine* engine = &engine_;
    const int64_t max_rows = config_.python_max_rows;
    const std::filesystem::path dir = tables_dir_;
    kernel_ = std::make_unique<sandbox::Kernel>(
        options, [engine, dir, max_rows] { return SandboxTables(*engine, dir, max_rows); });
    (void)kernel_->Start();  // an error here (no isolation) is the first call's to report
    context_.kernel = kernel_.get();
  }

  // No process outlives the run, and the copies of the user's tables go with it.
  void StopKernel() {
    if (!kernel_) return;
    kernel_->Shutdown();
    context_.kernel = nullptr;
    kernel_.reset();
    std::error_code ec;
    std::filesystem::remove_all(tables_dir_, ec);
    ScratchDirs::Forget(tables_dir_);
  }

  // Opening the data, as the first step: what it cost and what the loader decided.
  void EmitLoad() {
    trace::Step step;
    step.kind = trace::StepKind::kLoad;
    step.tool = "open_data";
    step.status = trace::StepStatus::kOk;
    step.failure_class = "none";
    step.duration_ms = load_ms_;
    json sources = json::array();
    std::string text;
    for (const auto& s : engine_.sources()) {
      sources.push_back({{"path", s.path},
                         {"size_bytes", s.size_bytes},
                         {"cache", engine::CacheUseName(s.cache)}});
      if (s.cache == engine::CacheUse::kHit) text += s.path + ": read from the parse cache\n";
    }
    for (const auto& card : engine_.describe()) {
      for (const auto& n : card.notes) text += card.name + ": " + n + "\n";
      for (const auto& c : card.columns) {
        for (const auto& n : c.notes) text += card.name + "." + c.name + ": " + n + "\n";
      }
    }
    step.observation = text;
    step.detail = {{"sources", sources}};
    Emit(std::move(step));
  }

  void Emit(trace::Step step) {
    step.index = static_cast<int>(trace_.steps.size()) + 1;
    if (observer_) observer_->OnStep(step);
    if (writer_) {
      json event = trace::ToJson(step);
      event["event"] = "step";
      AppendEvent(event);
    }
    trace_.steps.push_back(std::move(step));
  }

  // events.jsonl is the record a killed run leaves: when it cannot be written the run goes on
  // (trace.json is written at the end) and says so once.
  void AppendEvent(const json& event) {
    if (auto r = writer_->AppendEvent(event); !r && !events_failed_) {
      events_failed_ = true;
      trace_.notes.push_back(r.error().message);
    }
  }

  engine::Engine& engine_;
  llm::Client& client_;
  const Config config_;  // the caller's, with the stop in its limits and sandbox options
  const StopToken stop_;
  Observer* observer_;
  trace::Writer* writer_;
  const AskUserFn ask_user_;  // unset: ask_user ends the run
  std::vector<Tool> tools_;
  std::vector<llm::ToolSchema> schemas_;
  Evidence evidence_;
  std::optional<sandbox::LastResult> last_;
  ToolContext context_;
  std::unique_ptr<sandbox::Kernel> kernel_;
  std::filesystem::path tables_dir_;
  std::vector<llm::Message> messages_;
  trace::Trace trace_;
  internal::Budget budget_;
  internal::RepairLedger repairs_;  // keeps trace_.totals' repair counts
  int64_t load_ms_ = -1;
  std::optional<trace::StopReason> stop_reason_;  // nullopt while the run goes on
  trace::AnswerQuery last_query_;                 // the latest successful run_sql
  std::vector<trace::AnswerQuery> charts_;        // every make_chart call that drew a chart
  std::string text_reply_;  // the model's latest reply without a tool call, since its last call
  std::string replies_;     // what the user typed in reply to ask_user (TypedPart), one per line
  RepeatLog repeats_;
  bool sent_back_ = false;
  bool nudged_ = false;
  bool cost_unknown_noted_ = false;
  bool cut_off_ = false;            // the latest model turn ended at the output limit
  bool events_failed_ = false;      // events.jsonl could not be written (noted once)
  int64_t last_prompt_tokens_ = 0;  // the provider's count of the latest prompt
  int64_t last_output_tokens_ = 0;
  size_t last_prompt_messages_ = 0;  // messages_ up to the latest model turn's, included
};

}  // namespace

Config ConfigForRun(Config base, const std::filesystem::path& run_dir) {
  base.sandbox.workdir = run_dir / "workdir";
  base.artifacts_dir = run_dir;
  return base;
}

trace::Trace Run(const RunInput& input, engine::Engine& engine, llm::Client& client,
                 const Config& config, Observer* observer, trace::Writer* writer) {
  Session session(input, engine, client, config, observer, writer);
  return session.Run();
}

}  // namespace quarry::agent
