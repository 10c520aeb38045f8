// Threads: conversations that outlive a run. One SQLite database (threads.sqlite3) holds each
// thread's name, the data sources it is bound to (path, size, sha256) and its turns: question,
// outcome, answer, the SQL it rested on, a small result preview, and the clarifications asked
// and answered. `quarry ask --thread`, `quarry chat` and MCP ask_database share it; it belongs
// to the agent module and is safe to delete (DESIGN.md, "State that outlives a run").
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/agent/agent.h"
#include "quarry/common/common.h"
#include "quarry/engine/engine.h"
#include "quarry/trace/trace.h"

struct sqlite3;

namespace quarry::agent {

// The schema's PRAGMA user_version; a database with a larger one was written by a newer quarry.
inline constexpr int kThreadsSchemaVersion = 1;
// PRAGMA application_id of a threads database ("QRRY"): any other non-zero id is another
// program's database and is never written.
inline constexpr int32_t kThreadsApplicationId = 0x51525259;
// A turn whose run has started and not yet been recorded (or whose process was killed).
inline constexpr const char* kTurnRunning = "running";
// A result preview keeps at most this many rows and bytes of the query an answer rested on.
inline constexpr size_t kPreviewRows = 5;
inline constexpr size_t kPreviewBytes = 1024;

// $XDG_STATE_HOME/quarry (an absolute XDG_STATE_HOME only), else ~/.local/state/quarry; empty
// when neither XDG_STATE_HOME nor HOME is set.
std::filesystem::path StateDirectory();
// runs_dir/threads.sqlite3 when `runs_dir` is not empty (--runs-dir), else
// StateDirectory()/threads.sqlite3 (empty when there is no state directory).
std::filesystem::path ThreadsPath(const std::filesystem::path& runs_dir);

// Errors: kUsage unless the name is 1 to 64 bytes of valid UTF-8 with no control characters
// (C0, DEL, C1), no invisible formatting characters (zero-width, bidirectional controls, BOM),
// not only dots, and no leading or trailing space; the message says what is allowed.
Result<void> ValidateThreadName(std::string_view name);
// A start for a thread name made from free text (a question): the characters
// ValidateThreadName refuses dropped (invalid UTF-8 too), each run of spaces and controls made
// one space, trimmed, and cut to at most `max_bytes` on a character boundary. "" when nothing
// is left. Never longer than `max_bytes`.
std::string ThreadNameFromText(std::string_view text, size_t max_bytes);

// A data file a thread is bound to. `path` is absolute. A database server (engine::IsServerSpec)
// is bound by its redacted spec as given, and by the set of tables the role could read: then
// `size_bytes` is the number of tables and `sha256` the hash of their sorted names, one per line,
// so a table added, dropped or renamed between turns is "changed" and new rows are not (a
// server's data moves all the time; its shape is what earlier answers relied on).
struct ThreadSource {
  std::string path;
  int64_t size_bytes = 0;
  std::string sha256;  // hex; "" when the source was not fingerprinted (compared by size only)
};

// One ask_user of a turn, and the user's reply ("" while the turn waits on it).
struct ThreadClarification {
  std::string question;
  std::vector<std::string> choices;
  std::string reply;
  std::string run_id;  // the run that asked
  std::string term;    // ClarificationRecord::term
};

struct ThreadTurn {
  int number = 0;      // from 1, in the order the turns started
  std::string run_id;  // the turn's latest run (a reply to a clarification continues the turn)
  std::string question;
  // The latest run's stop reason (trace::StopReason::kAnswered, trace::StopReason::kClarification:
  // waiting on the last clarification's reply, ...), or kTurnRunning.
  std::string status;
  std::string answer;
  bool grounded = false;
  std::string sql;      // trace::Trace::answer_sql
  std::string preview;  // ResultPreview of that run
  std::vector<ThreadClarification> clarifications;
  std::string created_at;  // UTC, ISO 8601
  std::string updated_at;
  bool waiting() const {
    return trace::ParseStopReason(status) == trace::StopReason::kClarification;
  }
};

struct Thread {
  std::string name;
  std::string created_at;
  std::string updated_at;
  std::vector<ThreadSource> sources;  // of its latest turn
  int turn_count = 0;
  bool waiting = false;           // its last turn waits on a clarification
  std::string first_question;     // its first turn's question
  std::string last_status;        // its last turn's status (ThreadTurn::status)
  std::vector<ThreadTurn> turns;  // oldest first; empty in ThreadStore::List
};

// What a run needs to continue a thread (ThreadStore::StartTurn).
struct TurnStart {
  int number = 0;        // RunInput::thread_turn
  bool created = false;  // the thread did not exist before
  // RunInput::question: the text given, or, when the thread's last turn waited on a
  // clarification, that turn's question (the text is then the reply, in `resume`).
  std::string question;
  std::vector<PriorTurn> history;  // RunInput::history: the earlier turns, oldest first
  std::optional<PendingClarification> resume;
  // How the data differs from what the earlier turns used, one sentence each ("" none); also
  // in the newest prior turn's data_note, so the model is told.
  std::vector<std::string> data_notes;
};

// The first kPreviewRows rows of the run_sql result the answer rested on (the last of
// trace.answer_queries that ran SQL), as "col | col" lines with the true row count, at most
// kPreviewBytes (cut on a UTF-8 boundary); "" when there is none.
std::string ResultPreview(const trace::Trace& trace);

// A reply typed to a clarification, trimmed: a choice's text (any case) is that choice; else a
// number from 1 to choices.size() picks that choice; anything else is the reply as typed.
// Errors (kUsage, saying what to type): an empty reply, one over kMaxReplyBytes, and a bare
// number outside 1..choices.size() when there are choices (a slip, not a reply).
inline constexpr size_t kMaxReplyBytes = 2000;
Result<std::string> ReplyText(const Clarification& asked, std::string_view typed);

// The threads database. Each method is one transaction; separate ThreadStores (in threads or
// processes) may use one file at once: WAL mode, and a writer waits up to 10 s for another's
// lock (then kData "database is locked"). One ThreadStore is not thread safe.
// Every error names the file. kData: not a SQLite database, another program's database, a
// newer schema, corrupt, locked too long, unwritable. kUsage: a bad thread name, no such thread.
class ThreadStore {
 public:
  // Opens `path`, creating it (and its directory, mode 0700; the file 0600) when missing.
  static Result<ThreadStore> Open(const std::filesystem::path& path);
  ThreadStore(ThreadStore&& other) noexcept;
  ThreadStore& operator=(ThreadStore&& other) noexcept;
  ThreadStore(const ThreadStore&) = delete;
  ThreadStore& operator=(const ThreadStore&) = delete;
  ~ThreadStore();

  const std::filesystem::path& path() const { return path_; }

  // Every thread, most recently updated first, without their turns.
  Result<std::vector<Thread>> List();
  // The thread with all its turns; nullopt when there is none of that name.
  Result<std::optional<Thread>> Find(std::string_view name);
  // Errors: kUsage when there is no such thread.
  Result<void> Delete(std::string_view name);
  // Gives the thread `name` the name `new_name` (both checked by ValidateThreadName); its turns
  // go with it. Errors: kUsage when there is no such thread or `new_name` is taken.
  Result<void> Rename(std::string_view name, std::string_view new_name);

  // Starts a turn of `name` (creating the thread), atomically numbered, recorded as
  // kTurnRunning under `run_id`. When the last turn waits on a clarification, `text` is its
  // reply (ReplyText) and that turn continues; otherwise `text` is a new question. The
  // thread's sources become `sources`; how they differ from the earlier ones is in
  // data_notes. The history holds the turns before this one that are not running.
  Result<TurnStart> StartTurn(std::string_view name, const std::string& text,
                              const std::string& run_id,
                              const std::vector<engine::Source>& sources);
  // Records how the turn's run ended: status, answer, SQL, preview, new clarifications.
  // Errors: kUsage when the thread or turn is gone (deleted meanwhile).
  Result<void> FinishTurn(std::string_view name, int number, const trace::Trace& trace);
  // A run asked outside any thread that ended on a clarification still needs somewhere to
  // wait for its reply: it becomes a turn of a new thread `name` (StartTurn, then FinishTurn),
  // and `trace` records the thread and turn. Errors: as StartTurn and FinishTurn.
  Result<void> KeepClarification(std::string_view name, const std::string& question,
                                 const std::vector<engine::Source>& sources, trace::Trace& trace);

 private:
  ThreadStore(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

// A thread as `quarry threads --format json`, MCP and the web app show it: {"name", "turns" (the
// count), "waiting", "created_at", "updated_at", "sources": [{"path", "size_bytes", "sha256"}]}.
nlohmann::ordered_json ThreadJson(const Thread& t);
// One turn: {"number", "run_id", "question", "status", "answer", "grounded", "sql", "preview",
// "clarifications": [{"question", "choices", "reply", "run_id"}], "created_at", "updated_at"}.
nlohmann::ordered_json TurnJson(const ThreadTurn& turn);

// One question as every front end runs it (`ask`, `chat`, MCP's ask_database, the web app):
// the run's folder, a thread's turn started before the run and recorded after, and a
// clarification outside a thread kept as a new thread so its reply can continue it.
struct TurnInput {
  std::string text;    // the question, or the reply to the clarification the thread waits on
  std::string thread;  // "" : none
  std::string run_id;  // "" : a new one (trace::NewRunId); the web app names it before the run
  // Without a thread, a run that ends on a clarification becomes turn 1 of a new thread of this
  // name ("" : not kept). "{run}" in it is replaced by the run's id.
  std::string clarification_thread = "{run}";
  int64_t load_ms = -1;
  StopToken stop;
  AskUserFn ask_user;
};

// What happened to the thread before the run began: for the front end to tell the user.
struct TurnBegun {
  std::string run_id;
  std::filesystem::path run_dir;
  std::string thread;  // "" : none
  int turn = 0;
  std::optional<PendingClarification> resume;  // the text continued a waiting clarification
  std::string question;                        // what is asked: the turn's question
  std::vector<std::string> data_notes;         // how the data changed since earlier turns
};

struct TurnEnd {
  trace::Trace trace;
  std::filesystem::path trace_path;
  std::string thread;  // where the turn was recorded ("" : nowhere)
  int turn = 0;
  bool resumed = false;
  std::string record_error;  // the turn could not be recorded (the run is in its trace)
};

// Callbacks a front end may set; each runs on the turn's thread.
struct TurnHooks {
  Observer* observer = nullptr;                 // each step as it happens
  std::function<void(const TurnBegun&)> begun;  // once, before the run
  // Each event as it is appended to the run's events.jsonl (trace::Writer::SetListener).
  std::function<void(const nlohmann::ordered_json& event)> event;
};

// Runs `in` over `engine` with `client`, keeping the run under `runs_dir` (trace::Writer) and
// the thread in the store at `threads_path` (opened only when a thread is used). Errors (before
// the run, nothing written): a bad thread name (kUsage), no thread store (`threads_path` empty,
// kUsage), the store's errors, the run folder's. A failure to record the turn after the run is
// not an error: it is in TurnEnd::record_error.
Result<TurnEnd> RunTurn(const TurnInput& in, const Config& base,
                        const std::filesystem::path& runs_dir,
                        const std::filesystem::path& threads_path, engine::Engine& engine,
                        llm::Client& client, const TurnHooks& hooks = {});

}  // namespace quarry::agent
