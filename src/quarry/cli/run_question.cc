// One question as `quarry ask` and `quarry chat` run it (run_question.h): the run's folder and
// configuration, progress on stderr, the thread's turn started before and recorded after, and
// the result printed.
#include "quarry/cli/run_question.h"
#include "quarry/common/text.h"

#include <cstdio>
#include <iostream>

#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Safe to paste into a POSIX shell: bare when it is plain, else in single quotes.
std::string ShellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./:=@+,") == std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Without a thread: a run that ended on a clarification becomes turn 1 of a thread named
// after the run, so the reply can continue it.
void SaveAsNewThread(Threads& threads, const engine::Engine& engine, const std::string& text,
                     QuestionRun& run) {
  auto store = threads.Get();
  if (!store) {
    run.record_error = store.error().message;
    return;
  }
  const std::string name = run.trace.id;
  if (auto kept = (*store)->KeepClarification(name, text, engine.sources(), run.trace); !kept) {
    run.record_error = kept.error().message;
    return;
  }
  run.thread = name;
  run.turn = run.trace.thread_turn;
}

}  // namespace

void Progress::OnStep(const trace::Step& s) {
  char line[512];
  if (s.kind == trace::StepKind::kModel) {
    std::snprintf(line, sizeof line, "  [%2d] %-14s %lld+%lld tokens  $%.4f  %lld ms", s.index,
                  "model", static_cast<long long>(s.input_tokens),
                  static_cast<long long>(s.output_tokens), s.cost_usd,
                  static_cast<long long>(s.duration_ms));
    std::cerr << Paint(line, "2") << "\n";
    return;
  }
  const bool ok = s.status == trace::StepStatus::kOk;
  // The tool's name is the model's text: a call to an unknown tool keeps what was sent.
  std::snprintf(line, sizeof line, "  [%2d] %-14s ", s.index, TerminalText(s.tool).c_str());
  std::string out = line;
  char status[16];
  std::snprintf(status, sizeof status, "%-8s",
                std::string(trace::StepStatusName(s.status)).c_str());
  out += Paint(status, ok ? "32" : "31");
  const bool classed = !ok && s.failure_class != "none";
  std::snprintf(line, sizeof line, " %-16s %6lld ms%s", classed ? s.failure_class.c_str() : "",
                static_cast<long long>(s.duration_ms),
                s.repair               ? "  repair"
                : trace::IsSendBack(s) ? "  send-back"
                                       : "");
  out += line;
  std::cerr << out << "\n";
  if (s.status == trace::StepStatus::kRejected) {
    std::string values;
    for (const auto& v : s.detail.value("unsupported", json::array())) {
      values += (values.empty() ? "" : ", ") + v.get<std::string>();
    }
    std::cerr << Paint("       not grounded: " + TerminalText(values), "2") << "\n";
  } else if (!ok) {
    // The error, not a note quarry put before it (a removed code fence).
    size_t from = 0;
    while (s.observation.compare(from, 6, "note: ") == 0 &&
           s.observation.find('\n', from) != std::string::npos) {
      from = s.observation.find('\n', from) + 1;
    }
    std::string first = s.observation.substr(from, s.observation.find('\n', from) - from);
    if (first.size() > 160) first = first.substr(0, Utf8Prefix(first, 157)) + "...";
    std::cerr << Paint("       " + TerminalText(first), "2") << "\n";
  }
}

int ExitFor(const trace::Trace& t) {
  if (t.stop_reason == trace::StopReason::kAnswered && t.grounded) return kExitOk;
  if (t.stop_reason == trace::StopReason::kClarification) return kExitClarification;
  if (t.stop_reason == trace::StopReason::kDeclined) return kExitDeclined;
  if (t.stop_reason == trace::StopReason::kInterrupted) return kExitInterrupted;
  if (t.stop_reason == trace::StopReason::kModelError) return kExitModel;
  return kExitNoAnswer;
}

Result<agent::Config> BaseConfig(const AskOptions& o) {
  agent::Config config = o.config;
  // Recorded turns need no embeddings: an offline run makes no network call.
  auto schema = ResolveSchemaOptions(o.schema_budget, o.no_samples, !o.offline && o.replay.empty());
  if (!schema) return std::unexpected(schema.error());
  config.schema = std::move(*schema);
  config.self_correction = !o.no_self_correction;
  config.python = !o.no_python;
  config.sandbox.allow_unisolated = o.allow_unisolated;
  if (config.python && o.allow_unisolated) {
    if (auto why = sandbox::NamespaceUnavailableReason()) {
      std::cerr << Paint("quarry: warning: run_python is NOT isolated here (" + *why +
                             "): rlimits, seccomp and the Python guard only",
                         "33")
                << "\n";
    }
  }
  return config;
}

Result<agent::ThreadStore*> Threads::Get() {
  if (!store_) {
    auto opened = agent::ThreadStore::Open(path_);
    if (!opened) return std::unexpected(opened.error());
    store_.emplace(std::move(*opened));
  }
  return &*store_;
}

fs::path ThreadsPathFor(const AskOptions& o) {
  return agent::ThreadsPath(o.runs_dir_given ? fs::path(o.runs_dir) : fs::path());
}

Result<QuestionRun> RunQuestion(const AskOptions& o, const agent::Config& base,
                                engine::Engine& engine, llm::Client& client, Threads& threads,
                                const QuestionInput& in) {
  QuestionRun run;
  agent::ThreadStore* store = nullptr;
  if (!in.thread.empty()) {
    if (auto v = agent::ValidateThreadName(in.thread); !v) return std::unexpected(v.error());
    auto s = threads.Get();
    if (!s) return std::unexpected(s.error());
    store = *s;
  }
  const std::string id = trace::NewRunId();
  auto writer = trace::Writer::Create(o.runs_dir, id);
  if (!writer) return std::unexpected(writer.error());
  agent::RunInput input;
  input.question = in.text;
  if (store) {
    auto start = store->StartTurn(in.thread, in.text, id, engine.sources());
    if (!start) {
      // Nothing ran: leave no empty run folder for `quarry trace latest` to find.
      std::error_code ec;
      fs::remove_all(writer->dir(), ec);
      return std::unexpected(start.error());
    }
    run.thread = in.thread;
    run.turn = start->number;
    run.resumed = start->resume.has_value();
    for (const auto& n : start->data_notes) {
      std::cerr << Paint("quarry: note: thread " + TerminalText(in.thread) + ": " + TerminalText(n),
                         "33")
                << "\n";
    }
    if (run.resumed) {
      std::cerr << Paint("quarry: continuing turn " + std::to_string(run.turn) + " (\"" +
                             TerminalText(start->question) + "\") with the reply \"" +
                             TerminalText(start->resume->reply) + "\"",
                         "2")
                << "\n";
    }
    input.question = start->question;
    input.history = std::move(start->history);
    input.resume = std::move(start->resume);
    input.thread = in.thread;
    input.thread_turn = start->number;
  }
  const agent::Config config = agent::ConfigForRun(base, writer->dir());
  std::string where = "run " + id;
  if (store) where += ", thread " + TerminalText(in.thread) + " turn " + std::to_string(run.turn);
  std::cerr << Paint("quarry: " +
                         TerminalText(client.model() + " via " +
                                      std::string(llm::ProviderName(client.provider()))) +
                         ", " + std::string(engine::DialectName(engine.dialect())) + ", " + where,
                     "2")
            << "\n";
  input.run_id = id;
  input.load_ms = in.load_ms;
  input.stop = in.stop;
  input.ask_user = in.ask_user;
  Progress progress;
  run.trace = agent::Run(input, engine, client, config, &progress, &*writer);
  run.trace_path = writer->dir() / "trace.json";
  if (store) {
    if (auto f = store->FinishTurn(in.thread, run.turn, run.trace); !f) {
      run.record_error = f.error().message;
    }
  } else if (in.thread_on_clarification &&
             run.trace.stop_reason == trace::StopReason::kClarification) {
    SaveAsNewThread(threads, engine, in.text, run);
  }
  if (!run.record_error.empty()) {
    std::cerr << Paint("quarry: warning: the turn was not recorded: " +
                           TerminalText(run.record_error),
                       "33")
              << "\n";
    run.thread.clear();  // nothing to continue: the output names no thread
  }
  return run;
}

std::string ContinueCommand(const AskOptions& o, const std::string& thread) {
  std::string cmd = "quarry ask --thread " + ShellQuote(thread);
  if (o.runs_dir_given) cmd += " --runs-dir " + ShellQuote(o.runs_dir);
  if (o.offline) cmd += " --offline";
  if (o.offline && !o.fixtures.empty()) cmd += " --fixtures " + ShellQuote(o.fixtures);
  for (const auto& d : o.data) cmd += " --data " + ShellQuote(d);
  return cmd + " \"<your reply>\"";
}

void PrintRun(const QuestionRun& run, const AskOptions& o, bool in_chat,
              std::set<std::string>* said, bool asked_already) {
  // The run's notes less those this session already printed.
  std::vector<std::string> notes;
  for (const auto& n : run.trace.notes) {
    if (!said || said->insert(n).second) notes.push_back(n);
  }
  const trace::Trace& t = run.trace;
  // An answer's notes go to stderr below; a clarification's wait for the reply.
  const bool notes_below = t.stop_reason == trace::StopReason::kAnswered ||
                           t.stop_reason == trace::StopReason::kClarification;
  const bool shown = asked_already && t.stop_reason == trace::StopReason::kClarification;
  if (!shown) {
    std::cout << "\n"
              << TerminalText(
                     trace::OutcomeText(t, notes_below ? std::vector<std::string>{} : notes));
  }
  if (t.stop_reason == trace::StopReason::kClarification && !shown) {
    const trace::ClarificationRecord* waiting = trace::WaitingClarification(t);
    const std::string pick =
        waiting && !waiting->choices.empty() ? " (a number picks a choice)" : "";
    if (run.thread.empty()) {
      std::cout << "the question cannot be continued: it was not saved in a thread\n";
    } else if (in_chat) {
      std::cout << "type your reply" << pick << "\n";
    } else {
      std::cout << "continue with: " << TerminalText(ContinueCommand(o, run.thread)) << pick
                << "\n";
    }
  }
  std::cout << "\n"
            << TerminalText(trace::TotalsLine(t))
            << "\ntrace: " << TerminalText(run.trace_path.string()) << "\n";
  if (!run.thread.empty() && !in_chat) {
    std::cout << "thread: " << TerminalText(run.thread) << " (turn " << run.turn << ")\n";
  }
  if (t.stop_reason == trace::StopReason::kAnswered) {
    for (const auto& n : notes) std::cerr << Paint("note: " + TerminalText(n), "2") << "\n";
  }
}

void PrintRunJson(const QuestionRun& run) {
  const trace::Trace& t = run.trace;
  json out = trace::OutcomeJson(t);
  out["trace"] = run.trace_path.string();
  if (!run.thread.empty()) {
    out["thread"] = run.thread;
    out["turn"] = run.turn;
  }
  if (!run.record_error.empty()) out["thread_error"] = run.record_error;
  std::cout << JsonText(out) << "\n";
}

}  // namespace quarry::cli
