// `quarry ask`: opens the data, picks the model client (live, --offline, --replay), runs one
// question (run_question.h) with progress on stderr, in a thread when --thread names one, and
// prints the answer, its SQL and the totals, or the clarification the model asks for.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <optional>

#include "quarry/cli/remember.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/cli/run_question.h"

namespace quarry::cli {

int RunAsk(const AskOptions& o) {
  if (o.question.find_first_not_of(" \t\n") == std::string::npos) {
    return Report({Error::Code::kUsage, "the question is empty: ask something about the data"});
  }
  if (!o.thread.empty()) {
    if (auto v = agent::ValidateThreadName(o.thread); !v) return Report(v.error());
  }
  if (auto r = CheckRecord(o); !r) return Report(r.error());
  const InterruptScope interrupt;
  LoadFlags load = o.load;
  load.timeout_ms = o.config.limits.timeout_ms;
  load.stop = interrupt.token();
  const auto load_start = std::chrono::steady_clock::now();
  auto engine = OpenData(o.data, load);
  const int64_t load_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - load_start)
                              .count();
  // Whatever the loader made of the interruption, it was one.
  if (interrupt.token().stop_requested()) {
    return Report(
        {Error::Code::kCancelled, "interrupted while opening the data; nothing was asked"});
  }
  if (!engine) return Report(engine.error());
  const FillCacheAtExit fill(**engine, o.data, load);
  Threads threads(ThreadsPathFor(o));
  // Offline (or --replay), a reply to a waiting clarification replays the recording of that
  // continuation: found by the turn's question and the reply, not by the reply alone.
  AskOptions recorded = o;
  if ((o.offline || !o.replay.empty()) && !o.thread.empty()) {
    auto store = threads.Get();
    if (!store) return Report(store.error());
    auto found = (*store)->Find(o.thread);
    if (!found) return Report(found.error());
    if (*found && (*found)->waiting && !(*found)->turns.empty() &&
        !(*found)->turns.back().clarifications.empty()) {
      const agent::ThreadTurn& turn = (*found)->turns.back();
      const auto& c = turn.clarifications.back();
      auto reply = agent::ReplyText({c.question, c.choices, c.term}, o.question);
      if (!reply && o.offline) return Report(reply.error());
      if (reply) {  // --replay with text that is no reply plays the file as typed (below)
        recorded.question = turn.question;
        recorded.offline_reply = *reply;
      }
    }
  }
  auto client = MakeClient(recorded, /*live_text=*/true);
  // A --replay file that is not that continuation's recording (a trace, say) is played as it
  // was before continuations were recorded: against the text as typed.
  if (!client && client.error().code == Error::Code::kUsage && !o.replay.empty() &&
      recorded.offline_reply) {
    client = MakeClient(o, /*live_text=*/true);
  }
  if (!client) return Report(client.error());
  // --record: every turn of the live client is kept, and saved once the run has ended.
  std::optional<llm::RecordingClient> recorder;
  if (!o.record.empty()) recorder.emplace(**client);
  llm::Client& model = recorder ? static_cast<llm::Client&>(*recorder) : **client;
  auto config = BaseConfig(o);
  if (!config) return Report(config.error());

  QuestionInput input;
  input.text = o.question;
  input.thread = o.thread;
  input.load_ms = load_ms;
  input.stop = interrupt.token();
  auto run = RunQuestion(o, *config, **engine, model, threads, input);
  if (!run) return Report(run.error());
  if (o.format_name == "json") {
    PrintRunJson(*run);
  } else {
    PrintRun(*run, o, /*in_chat=*/false);
  }
  if (recorder) {
    if (auto saved = SaveRecording(o.record, *recorder, *run, o.data); !saved) {
      return Report(saved.error());
    }
  }
  // A reply the user gave to a clarification can be kept for later questions: asked on a
  // terminal, else the command that keeps it is said (never written unasked).
  if (!config->glossary_dir.empty()) {
    const auto offers = agent::GlossaryOffers(run->trace, config->knowledge.get());
    AskLine line;
    if (isatty(STDIN_FILENO) && isatty(STDERR_FILENO) && o.format_name != "json") {
      line = [](const std::string& prompt) -> std::optional<std::string> {
        std::cerr << prompt << std::flush;
        std::string reply;
        if (!std::getline(std::cin, reply)) return std::nullopt;
        return reply;
      };
    }
    if (!offers.empty()) OfferGlossary(offers, config->glossary_dir, line);
  }
  return ExitFor(run->trace);
}

}  // namespace quarry::cli
