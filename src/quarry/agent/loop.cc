// The agent loop: model turn, tool calls, observations, repair accounting, budgets and the
// verify gate, every step recorded in the trace as it happens.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>

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
  // `config` carries the run's stop token (WithStop); `opening` is OpenRun's for this run.
  Session(const RunInput& input, engine::Engine& engine, llm::Client& client, const Config& config,
          Opening opening, Observer* observer, trace::Writer* writer)
      : engine_(engine),
        client_(client),
        config_(config),
        stop_(input.stop),
        observer_(observer),
        writer_(writer),
        ask_user_(input.ask_user),
        tools_(DefaultTools(config.python, !config.artifacts_dir.empty())),
        evidence_(std::move(opening.evidence)),
        context_{engine, config_, evidence_, last_, nullptr},
        messages_(std::move(opening.messages)),
        trace_(std::move(opening.trace)),
        budget_(config_),
        repairs_(trace_.totals),
        load_ms_(input.load_ms),
        replies_(std::move(opening.replies)) {
    for (const Tool& t : tools_) schemas_.push_back(t.schema);
    RecordSchema(opening.schema);
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
    if (load_ms_ >= 0) Emit(LoadStep(engine_, load_ms_));
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
    if (!turn->cost_known && client_.provider() != llm::Provider::kReplay &&
        FirstTime(Once::kCostUnknown)) {
      trace_.notes.push_back("no cost for model '" + trace_.model +
                             "': the provider reported none and the price table has no entry, "
                             "so costs show as $0 and --max-cost cannot apply; add the model to "
                             "a QUARRY_PRICES file");
    }
    step.duration_ms = turn->latency_ms > 0 ? turn->latency_ms : MsSince(started);
    Emit(Count(std::move(step)));
    messages_.push_back({llm::Role::kAssistant, turn->content, turn->tool_calls, {}});
    last_turn_ = {turn->usage.input_tokens, turn->usage.output_tokens, messages_.size(),
                  turn->finish_reason == llm::FinishReason::kLength};
    if (last_turn_.cut_off) {
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
    } else if (plan.args.is_discarded() && last_turn_.cut_off) {
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
      trace_.answer_queries = AnswerQueries(report, sources, last_query_, charts_);
      trace_.answer_sql = AnswerSql(trace_.answer_queries);
      // The definitions the SQL rests on are cited from the SQL itself, not the model's word.
      if (config_.knowledge)
        trace_.rests_on = knowledge::RestsOn(*config_.knowledge, trace_.answer_sql);
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
    obs.detail["sent_back"] = !repairs_.sent_back();  // the mark trace::IsSendBack reads
    if (repairs_.sent_back()) {
      obs.text = "verify: not grounded again:\n" + list;
      stop_reason_ = trace::StopReason::kUngrounded;
      return true;
    }
    repairs_.SentBack();
    obs.text = Prompt("verify_sendback", {{"unsupported", list}});
    return false;
  }

  // ask_user: the reply while the run waits (its wait counts against no budget), or the end of
  // the run, waiting on the question (clarification_needed).
  void AskUser(const Clarification& asked, Observation& obs, trace::Step& step) {
    // What the user's knowledge files already define is not asked again: a remembered
    // clarification, or a term that maps to one defined metric.
    if (config_.knowledge) {
      if (auto known = knowledge::Define(*config_.knowledge, asked.term, asked.question)) {
        obs.text = "not asked: the user's knowledge files define it: " + known->text +
                   ". Use this definition, and name it in final_answer's assumptions.";
        obs.detail = {{"answered_from", known->item}};
        trace_.notes.push_back("a clarification was answered from the knowledge files (" +
                               known->item + ") instead of asking the user: " + asked.question);
        return;
      }
    }
    const auto started = Clock::now();
    const std::optional<std::string> reply = AskTheUser(ask_user_, asked, trace_.notes);
    obs.detail = {{"wait_ms", MsSince(started)}};
    if (reply) obs.detail["reply"] = *reply;  // so a killed run's events still hold it
    trace_.clarifications.push_back({static_cast<int>(trace_.steps.size()) + 1, asked.question,
                                     asked.choices, reply.value_or(""), asked.term});
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
    if (last_turn_.prompt_tokens <= 0) return whole;
    int64_t counted = last_turn_.prompt_tokens + last_turn_.output_tokens;
    for (size_t i = last_turn_.messages; i < messages_.size(); ++i) {
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
    if (auto r = writer_->AppendEvent(event); !r && FirstTime(Once::kEventsUnwritten)) {
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
  bool nudged_ = false;  // the model was told once to call a tool after a reply without one
  // The latest model turn, which the next prompt's estimate and a cut-off call's error read.
  struct LastTurn {
    int64_t prompt_tokens = 0;  // the provider's count of its prompt
    int64_t output_tokens = 0;
    size_t messages = 0;   // messages_ up to its own, included
    bool cut_off = false;  // it ended at the output limit (finish_reason length)
  } last_turn_;
  // Notes a run makes once, however often their cause recurs.
  enum class Once { kCostUnknown, kEventsUnwritten };
  std::set<Once> noted_;
  bool FirstTime(Once what) { return noted_.insert(what).second; }
};

}  // namespace

Config ConfigForRun(Config base, const std::filesystem::path& run_dir) {
  base.sandbox.workdir = run_dir / "workdir";
  base.artifacts_dir = run_dir;
  return base;
}

trace::Trace Run(const RunInput& input, engine::Engine& engine, llm::Client& client,
                 const Config& config, Observer* observer, trace::Writer* writer) {
  // The opening is built first, under the run's stop token: a stop during the embeddings call
  // that ranks the schema ends it, and the run records the interrupt.
  const Config with_stop = WithStop(config, input.stop);
  // Columns the knowledge marks personal show the model no values in any card of this run.
  std::optional<knowledge::PersonalRedaction> redacted;
  if (config.knowledge && knowledge::HasPersonalColumns(*config.knowledge)) {
    redacted.emplace(engine, *config.knowledge);
  }
  engine::Engine& seen = redacted ? static_cast<engine::Engine&>(*redacted) : engine;
  Session session(input, seen, client, with_stop, OpenRun(input, seen, client, with_stop), observer,
                  writer);
  return session.Run();
}

}  // namespace quarry::agent
