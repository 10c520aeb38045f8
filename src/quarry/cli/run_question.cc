// One question as `quarry ask` and `quarry chat` run it (run_question.h): the run's folder and
// configuration, progress on stderr, the thread's turn started before and recorded after, and
// the result printed.
#include "quarry/cli/remember.h"
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
  auto knowledge = LoadKnowledge(o.knowledge, o.no_knowledge, o.data);
  if (!knowledge) return std::unexpected(knowledge.error());
  config.knowledge = std::move(*knowledge);
  if (!o.no_knowledge) {
    config.glossary_dir =
        config.knowledge ? config.knowledge->dir : GlossaryDir(o.knowledge, o.data);
  }
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
  agent::TurnInput turn{
      in.text,    in.thread, "",         in.thread_on_clarification ? "{run}" : "",
      in.load_ms, in.stop,   in.ask_user};
  Progress progress;
  agent::TurnHooks hooks;
  hooks.observer = &progress;
  hooks.begun = [&](const agent::TurnBegun& b) {
    for (const auto& n : b.data_notes) {
      std::cerr << Paint("quarry: note: thread " + TerminalText(b.thread) + ": " + TerminalText(n),
                         "33")
                << "\n";
    }
    if (b.resume) {
      std::cerr << Paint("quarry: continuing turn " + std::to_string(b.turn) + " (\"" +
                             TerminalText(b.question) + "\") with the reply \"" +
                             TerminalText(b.resume->reply) + "\"",
                         "2")
                << "\n";
    }
    std::string where = "run " + b.run_id;
    if (!b.thread.empty()) {
      where += ", thread " + TerminalText(b.thread) + " turn " + std::to_string(b.turn);
    }
    std::cerr << Paint("quarry: " +
                           TerminalText(client.model() + " via " +
                                        std::string(llm::ProviderName(client.provider()))) +
                           ", " + std::string(engine::DialectName(engine.dialect())) + ", " + where,
                       "2")
              << "\n";
  };
  auto end = agent::RunTurn(turn, base, o.runs_dir, threads.path(), engine, client, hooks);
  if (!end) return std::unexpected(end.error());
  QuestionRun run{std::move(end->trace),  std::move(end->trace_path),
                  std::move(end->thread), end->turn,
                  end->resumed,           std::move(end->record_error)};
  if (!run.record_error.empty()) {
    std::cerr << Paint("quarry: warning: the turn was not recorded: " +
                           TerminalText(run.record_error),
                       "33")
              << "\n";
  }
  return run;
}

std::string ContinueCommand(const AskOptions& o, const std::string& thread) {
  std::string cmd = "quarry ask --thread " + ShellQuote(thread);
  if (o.runs_dir_given) cmd += " --runs-dir " + ShellQuote(o.runs_dir);
  if (o.offline) cmd += " --offline";
  if (o.offline && !o.fixtures.empty()) cmd += " --fixtures " + ShellQuote(o.fixtures);
  // The same knowledge as the question had, or the reply runs with other definitions.
  if (o.no_knowledge) cmd += " --no-knowledge";
  if (!o.no_knowledge && !o.knowledge.empty()) cmd += " --knowledge " + ShellQuote(o.knowledge);
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
