// `quarry chat`: questions one after another over data opened once, each run as `ask` runs it
// (run_question.h) with its steps shown live, every turn recorded in one thread, so a follow-up
// sees the earlier turns and `quarry ask --thread` or a later chat can continue. Slash commands
// show the last run's SQL, trace and page. It sits on agent and threads, never the other way.
#include <clocale>
#include <iostream>
#include <optional>

#include "quarry/common/text.h"
#include "quarry/cli/remember.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/cli/line_reader.h"
#include "quarry/cli/run_question.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHelp =
    "Type a question about the data and press Enter. Commands:\n"
    "  /sql    the SQL the last answer rested on\n"
    "  /trace  a summary of the last run (steps, tokens, cost, verify report)\n"
    "  /view   write the last run's HTML page and print its path\n"
    "  /new    start a new thread (earlier questions are no longer context)\n"
    "  /help   this list\n"
    "  /quit   leave (so does Ctrl-D)\n"
    "Ctrl-C stops a running question; at the prompt it clears the line.\n";

std::string NewThreadName() { return "chat-" + trace::NewRunId(); }

fs::path HistoryFile() {
  const fs::path dir = agent::StateDirectory();
  if (dir.empty()) return {};
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return {};
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  return dir / "chat_history";
}

void PrintClarification(const agent::Clarification& c) {
  std::cout << "\nquarry needs a clarification: " << TerminalText(c.question) << "\n";
  for (size_t i = 0; i < c.choices.size(); ++i) {
    std::cout << "  " << i + 1 << ". " << TerminalText(c.choices[i]) << "\n";
  }
  std::cout << (c.choices.empty() ? "type your reply\n"
                                  : "type your reply (a number picks a choice)\n")
            << std::flush;
}

class Chat {
 public:
  Chat(const AskOptions& o, engine::Engine& engine, llm::Client* live, const agent::Config& config)
      : o_(o),
        engine_(engine),
        live_(live),
        config_(config),
        threads_(ThreadsPathFor(o)),
        reader_(HistoryFile()) {}

  int Run() {
    if (int intro = Intro(); intro != kExitOk) return intro;
    while (true) {
      const LineReader::Input in = reader_.Read("quarry> ");
      if (in.status == LineReader::Status::kEnd) return kExitOk;
      if (in.status == LineReader::Status::kInterrupted) {
        // On a terminal Ctrl-C drops the line; a script that is interrupted ends.
        if (!reader_.interactive()) return kExitInterrupted;
        continue;
      }
      const std::string text(Trim(in.text));
      if (text.empty()) continue;
      if (!reader_.interactive()) std::cout << "\n> " << TerminalText(text) << "\n" << std::flush;
      if (text[0] == '/') {
        if (!Command(text)) return kExitOk;
      } else {
        Ask(text);
        if (quit_) return kExitOk;
      }
    }
  }

 private:
  int Intro() {
    // Opened before the first question, so a broken store ends the chat (exit 3) instead of
    // failing every question after it.
    if (auto store = threads_.Get(); !store) return Report(store.error());
    if (o_.thread.empty()) {
      thread_ = NewThreadName();
      std::cout << "thread: " << TerminalText(thread_)
                << " (new; continue it later with quarry chat --thread " << TerminalText(thread_)
                << ")\n";
    } else {
      thread_ = o_.thread;
      auto store = threads_.Get();
      if (!store) return Report(store.error());
      auto found = (*store)->Find(thread_);
      if (!found) return Report(found.error());
      if (!*found) {
        std::cout << "thread: " << TerminalText(thread_) << " (new)\n";
      } else {
        const agent::Thread& t = **found;
        std::cout << "thread: " << TerminalText(thread_) << " (" << t.turn_count
                  << (t.turn_count == 1 ? " earlier turn" : " earlier turns") << ")\n";
        if (t.waiting && !t.turns.back().clarifications.empty()) {
          const auto& c = t.turns.back().clarifications.back();
          std::cout << "turn " << t.turns.back().number << " (\""
                    << TerminalText(t.turns.back().question) << "\") waits on a reply:";
          PrintClarification({c.question, c.choices, c.term});
        }
      }
    }
    if (reader_.interactive()) {
      std::cout << "Ask about the data; /help lists the commands, Ctrl-D leaves.\n";
    }
    std::cout << std::flush;
    return kExitOk;
  }

  // false: leave the chat.
  bool Command(const std::string& text) {
    const std::string name = text.substr(0, text.find_first_of(" \t"));
    if (name == "/quit" || name == "/exit") return false;
    if (name == "/help") {
      std::cout << kHelp;
    } else if (name == "/new") {
      thread_ = NewThreadName();
      std::cout << "thread: " << TerminalText(thread_) << " (new)\n";
    } else if (name == "/sql" || name == "/trace" || name == "/view") {
      if (!last_) {
        std::cout << "nothing asked yet in this chat\n";
      } else if (name == "/sql") {
        std::cout << (last_->trace.answer_sql.empty() ? std::string("the last run has no SQL")
                                                      : TerminalText(last_->trace.answer_sql))
                  << "\n";
      } else if (name == "/trace") {
        std::cout << std::flush;
        RunTrace({.which = last_->trace_path.string(), .runs_dir = o_.runs_dir});
      } else {
        std::cout << std::flush;
        RunView({.which = last_->trace_path.string(), .out = "", .runs_dir = o_.runs_dir});
      }
    } else {
      std::cout << "unknown command " << TerminalText(name) << ": /help lists them\n";
    }
    std::cout << std::flush;
    return true;
  }

  void Ask(const std::string& text) {
    const InterruptScope interrupt;
    std::unique_ptr<llm::Client> recorded;
    llm::Client* client = live_;
    if (!client) {
      // Recorded turns are matched by question, so each question gets its own.
      AskOptions q = o_;
      q.question = text;
      auto made = MakeClient(q);
      if (!made) {
        Report(made.error());
        return;
      }
      recorded = std::move(*made);
      client = recorded.get();
    }
    QuestionInput input;
    input.text = text;
    input.thread = thread_;
    input.thread_on_clarification = false;
    input.stop = interrupt.token();
    bool asked = false;  // the clarification was shown and how the turn goes on was said
    auto waits = [this, &asked] {
      asked = true;
      std::cout << "the turn waits on a reply: continue it with quarry chat --thread "
                << TerminalText(thread_) << "\n"
                << std::flush;
    };
    input.ask_user = [&](const agent::Clarification& c) -> std::optional<std::string> {
      PrintClarification(c);
      while (true) {
        const LineReader::Input reply = reader_.Read("reply> ", interrupt.token());
        if (reply.status == LineReader::Status::kEnd) waits();
        if (reply.status != LineReader::Status::kLine) return std::nullopt;
        if (!reader_.interactive()) {
          std::cout << "> " << TerminalText(reply.text) << "\n" << std::flush;
        }
        const std::string typed(Trim(reply.text));
        if (typed.empty()) continue;
        if (typed[0] == '/') {
          const std::string name = typed.substr(0, typed.find_first_of(" \t"));
          if (name == "/quit" || name == "/exit") {
            quit_ = true;
            waits();
            return std::nullopt;
          }
          std::cout << "a reply is not a command: type the reply" +
                           std::string(c.choices.empty() ? "" : " (a number picks a choice)") +
                           ", or /quit to leave with the turn waiting\n"
                    << std::flush;
          continue;
        }
        auto picked = agent::ReplyText(c, typed);
        if (picked) return *picked;
        std::cout << TerminalText(picked.error().message) << "\n" << std::flush;
      }
    };
    // --record: one fixture per question (RecordPath), each replayable on its own; a reply
    // typed at a clarification inside the run is not saved, so a replay asks for it again.
    std::optional<llm::RecordingClient> recorder;
    if (!o_.record.empty()) recorder.emplace(*client);
    llm::Client& model = recorder ? static_cast<llm::Client&>(*recorder) : *client;
    auto run = RunQuestion(o_, config_, engine_, model, threads_, input);
    if (!run) {
      Report(run.error());
      return;
    }
    PrintRun(*run, o_, /*in_chat=*/true, &said_, asked);
    std::cout << std::flush;
    Remember(run->trace);
    if (recorder && !recorder->turns().empty()) {
      ++recorded_;
      auto saved = SaveRecording(RecordPath(o_.record, recorded_), *recorder, *run, o_.data);
      if (!saved) Report(saved.error());
    }
    last_ = std::move(*run);
  }

  // Offers each clarification reply of the run for the glossary; one kept is read back, so
  // the next question of this chat already uses it.
  void Remember(const trace::Trace& t) {
    if (config_.glossary_dir.empty()) return;
    const auto offers = agent::GlossaryOffers(t, config_.knowledge.get());
    if (offers.empty()) return;
    const std::filesystem::path dir = config_.glossary_dir;
    AskLine line = [this](const std::string& prompt) -> std::optional<std::string> {
      const LineReader::Input in = reader_.Read(prompt);
      if (in.status != LineReader::Status::kLine) return std::nullopt;
      if (!reader_.interactive()) std::cout << "> " << TerminalText(in.text) << "\n" << std::flush;
      return in.text;
    };
    if (OfferGlossary(offers, dir, line) == 0) return;
    auto reloaded = knowledge::Load(dir);
    if (!reloaded) {
      Report(reloaded.error());
      return;
    }
    config_.knowledge = std::make_shared<const knowledge::Knowledge>(std::move(*reloaded));
  }

  const AskOptions& o_;
  engine::Engine& engine_;
  llm::Client* live_;
  agent::Config config_;  // a copy: a kept glossary term reloads its knowledge
  Threads threads_;
  LineReader reader_;
  std::string thread_;
  std::optional<QuestionRun> last_;
  std::set<std::string> said_;  // notes printed this session (PrintRun)
  bool quit_ = false;           // /quit at a reply prompt: leave once the run has ended
  int recorded_ = 0;            // questions saved by --record so far
};

}  // namespace

int RunChat(const AskOptions& o) {
  // libedit decodes what is typed by the locale's character set.
  std::setlocale(LC_CTYPE, "");
  if (auto r = CheckRecord(o); !r) return Report(r.error());
  LoadFlags load = o.load;
  load.timeout_ms = o.config.limits.timeout_ms;
  std::unique_ptr<engine::Engine> engine;
  {
    const InterruptScope interrupt;
    load.stop = interrupt.token();
    auto opened = OpenData(o.data, load);
    if (interrupt.token().stop_requested()) {
      return Report({Error::Code::kCancelled, "interrupted while opening the data"});
    }
    if (!opened) return Report(opened.error());
    engine = std::move(*opened);
  }
  load.stop = {};
  const FillCacheAtExit fill(*engine, o.data, load);
  std::unique_ptr<llm::Client> live;
  if (!o.offline) {
    auto client = MakeClient(o, /*live_text=*/true);
    if (!client) return Report(client.error());
    live = std::move(*client);
  }
  auto config = BaseConfig(o);
  if (!config) return Report(config.error());
  Chat chat(o, *engine, live.get(), *config);
  return chat.Run();
}

}  // namespace quarry::cli
