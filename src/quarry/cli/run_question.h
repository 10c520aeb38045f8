// One question through the agent as `quarry ask` and `quarry chat` run it: the model client,
// the run's configuration, live progress on stderr, the thread's history in and the turn
// recorded after, and the answer (or clarification) printed.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "quarry/agent/agent.h"
#include "quarry/agent/threads.h"
#include "quarry/cli/commands.h"

namespace quarry::cli {

// The model client for `o`: --replay, --offline (recorded turns matching o.question and the
// data), or the live one. Errors: kUsage (both recorded modes, no recording), kData (a bad
// replay file), and LiveClient's. `live_text`: as LiveClient's (ask and chat).
Result<std::unique_ptr<llm::Client>> MakeClient(const AskOptions& o, bool live_text = false);
// The live model's flags of `o` (--model, --base-url, --request-timeout, --max-tokens,
// --temperature, --max-tokens-param) for llm::ResolveConfig; `model`, when not empty, instead
// of --model (a judge's).
llm::Settings ModelSettings(const AskOptions& o, const std::string& model = "");

// Prints each step on stderr as it happens.
class Progress final : public agent::Observer {
 public:
  void OnStep(const trace::Step& step) override;
};

// The exit code of a finished run: kExitOk (answered and grounded), kExitClarification,
// kExitInterrupted, kExitModel, else kExitNoAnswer.
int ExitFor(const trace::Trace& trace);

// The configuration every run of these options shares (the schema options resolved once);
// each run adds its own directories. Errors: ResolveSchemaOptions'.
Result<agent::Config> BaseConfig(const AskOptions& o);

// The thread store, opened the first time it is needed, so a command that never uses a
// thread never touches it.
class Threads {
 public:
  explicit Threads(std::filesystem::path path) : path_(std::move(path)) {}
  // Errors: ThreadStore::Open's.
  Result<agent::ThreadStore*> Get();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::optional<agent::ThreadStore> store_;
};
// --runs-dir when it was given (runs_dir/threads.sqlite3), else the XDG state directory.
std::filesystem::path ThreadsPathFor(const AskOptions& o);

struct QuestionInput {
  std::string text;    // the question, or the reply to the clarification the thread waits on
  std::string thread;  // "" : none
  // Without a thread, a run that ends on a clarification is saved as turn 1 of a new thread
  // named after the run, so `quarry ask --thread <run id> "reply"` continues it.
  bool thread_on_clarification = true;
  int64_t load_ms = -1;
  StopToken stop;
  agent::AskUserFn ask_user;  // chat: replies read while the run waits
};

struct QuestionRun {
  trace::Trace trace;
  std::filesystem::path trace_path;
  std::string thread;  // where the turn was recorded ("" : nowhere)
  int turn = 0;
  bool resumed = false;  // the text was the reply to a waiting clarification
  // The turn could not be recorded (a warning; the run itself is in its trace).
  std::string record_error;
};

// Runs one question. With a thread: its earlier turns as history (data changes said on
// stderr), a waiting clarification continued by the text, the turn recorded however the run
// ends. Errors (before the run): the thread name (kUsage), the store (kData), the run folder.
Result<QuestionRun> RunQuestion(const AskOptions& o, const agent::Config& base,
                                engine::Engine& engine, llm::Client& client, Threads& threads,
                                const QuestionInput& input);

// --record: a usage error with --offline or --replay, for a folder, or in a folder that does
// not exist (checked before anything runs, so a paid run is not lost). OK without --record.
Result<void> CheckRecord(const AskOptions& o);
// Where `chat` saves its `index`-th recorded question (from 1): `file` itself for the first,
// then "<stem>-2<ext>", "<stem>-3<ext>" ... beside it (".json" when `file` has no extension).
std::filesystem::path RecordPath(const std::string& file, int index);
// Writes the run's recorded turns to `path` as a replay fixture (llm::RecordedFixture, labelled
// with the model, provider, UTC time and quarry's version; a continued clarification with its
// "reply"), atomically, and says so on stderr; with no completed turn writes nothing and says
// that. Errors: llm::WriteFixture's (kUsage).
Result<void> SaveRecording(const std::filesystem::path& path, const llm::RecordingClient& recorder,
                           const QuestionRun& run, const std::vector<std::string>& data);

// What the user types to continue a thread from the shell.
std::string ContinueCommand(const AskOptions& o, const std::string& thread);

// The result on stdout as text: the answer with its assumptions, SQL and figures, or why there
// is none, or the clarification asked with its numbered choices and how to reply (`in_chat`:
// type the reply; else the command that continues). Then the totals and the trace's path.
// `said`: notes already printed in this chat session, skipped and added to (a note such as "no
// cost for model" is said once per session, not after every turn); nullptr prints them all.
// `asked_already`: the chat showed the clarification while the run waited and told how the turn
// goes on, so a run that ended on it prints no second copy.
void PrintRun(const QuestionRun& run, const AskOptions& o, bool in_chat,
              std::set<std::string>* said = nullptr, bool asked_already = false);
// The same as one JSON object (ask --format json).
void PrintRunJson(const QuestionRun& run);

}  // namespace quarry::cli
