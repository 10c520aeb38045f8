// The thread store (threads.h) on SQLite: opening and checking the file, the schema and its
// version, and the transactions that start and finish a turn. What a turn's record holds is
// derived from a finished trace in thread_records.cc.
#include "quarry/common/sha256.h"
#include "quarry/agent/threads.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <set>
#include <thread>

#include "quarry/agent/agent_internal.h"
#include "quarry/agent/threads_internal.h"

namespace quarry::agent {
namespace {

namespace fs = std::filesystem;

constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kSchema = R"sql(
CREATE TABLE threads (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE thread_sources (
  thread_id INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  path TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  PRIMARY KEY (thread_id, position)
);
CREATE TABLE turns (
  thread_id INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  number INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  question TEXT NOT NULL,
  status TEXT NOT NULL,
  answer TEXT NOT NULL DEFAULT '',
  grounded INTEGER NOT NULL DEFAULT 0,
  sql TEXT NOT NULL DEFAULT '',
  preview TEXT NOT NULL DEFAULT '',
  clarifications TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (thread_id, number)
);
)sql";

// Ends a transaction: COMMIT by Commit(), ROLLBACK when it goes out of scope before that.
class Transaction {
 public:
  explicit Transaction(internal::Db& db) : db_(db) {}
  ~Transaction() {
    if (open_) sqlite3_exec(db_.handle, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Result<void> Begin(bool write) {
    // IMMEDIATE takes the write lock at once, so the busy timeout applies; a deferred
    // transaction upgraded later would fail with SQLITE_BUSY at once instead.
    auto r = db_.Exec(write ? "BEGIN IMMEDIATE" : "BEGIN", "begin a transaction");
    open_ = r.has_value();
    return r;
  }
  Result<void> Commit() {
    auto r = db_.Exec("COMMIT", "commit");
    if (r) open_ = false;
    return r;
  }

 private:
  internal::Db& db_;
  bool open_ = false;
};

Result<int64_t> PragmaInt(internal::Db& db, const char* pragma) {
  auto st = db.Prepare(std::string("PRAGMA ") + pragma);
  if (!st) return std::unexpected(st.error());
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  return *row ? st->Int(0) : 0;
}

// A new file gets the schema; a file of ours is checked for its version; anything else is
// refused before a byte is written to it.
Result<void> CheckOrCreateSchema(internal::Db& db) {
  Transaction tx(db);
  if (auto b = tx.Begin(true); !b) return b;
  auto app = PragmaInt(db, "application_id");
  if (!app) return std::unexpected(app.error());
  auto version = PragmaInt(db, "user_version");
  if (!version) return std::unexpected(version.error());
  if (*app == 0) {
    auto tables = db.Prepare("SELECT count(*) FROM sqlite_master");
    if (!tables) return std::unexpected(tables.error());
    if (auto r = tables->Step(); !r) return std::unexpected(r.error());
    if (tables->Int(0) != 0 || *version != 0) {
      return db.Refuse(
          "is another program's SQLite database (it has tables but no quarry "
          "application id); pass another --runs-dir or move the file away");
    }
    if (auto r = db.Exec(kSchema, "create the schema"); !r) return r;
    const std::string pragmas = "PRAGMA application_id = " + std::to_string(kThreadsApplicationId) +
                                "; PRAGMA user_version = " + std::to_string(kThreadsSchemaVersion);
    if (auto r = db.Exec(pragmas, "set the schema version"); !r) return r;
    return tx.Commit();
  }
  if (*app != kThreadsApplicationId) {
    return db.Refuse("is another program's SQLite database (application id " +
                     std::to_string(*app) + "); pass another --runs-dir or move the file away");
  }
  if (*version > kThreadsSchemaVersion) {
    return db.Refuse("was written by a newer quarry (schema " + std::to_string(*version) +
                     ", this one reads up to " + std::to_string(kThreadsSchemaVersion) +
                     "); use that quarry, or move the file away");
  }
  // Migrations from older versions go here, each raising user_version by one.
  return tx.Commit();
}

// Switching a file into WAL needs an exclusive lock that SQLite does not wait for through the
// busy handler, so two processes opening a new file at once would see "database is locked":
// retry for as long as the busy timeout. The mode is kept in the file, so this is once per file.
Result<void> UseWal(internal::Db& db) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  while (true) {
    auto mode = db.Prepare("PRAGMA journal_mode = WAL");
    if (!mode) return std::unexpected(mode.error());
    auto row = mode->Step();
    if (row && *row && mode->Text(0) == "wal") return {};
    const bool busy = !row && (sqlite3_extended_errcode(db.handle) & 0xFF) == SQLITE_BUSY;
    if (!row && !busy) return std::unexpected(row.error());
    if (std::chrono::steady_clock::now() > deadline) {
      return row ? db.Refuse("could not be switched to WAL mode: another process holds it")
                 : std::unexpected(row.error());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// How a thread remembers a source (see ThreadSource): a file by its absolute path, size and
// sha256; a server by its redacted spec and its set of tables.
ThreadSource Bound(const engine::Source& s) {
  if (!engine::IsServerSpec(s.path)) return {Absolute(s.path), s.size_bytes, s.sha256};
  const std::set<std::string> tables(s.tables.begin(), s.tables.end());
  std::string names;
  for (const std::string& t : tables) names += t + "\n";
  // OpenSSL failing (never seen) leaves the digest empty, which no server's tables produce.
  return {s.path, static_cast<int64_t>(tables.size()), Sha256Hex(names).value_or("")};
}

// A file as the notes name it: by its base name, or by its whole path when another file of the
// thread has the same base name ("sub/s2.csv" and "s2.csv" are two files); escaped to one line,
// since a file name is data and these notes reach the model and the terminal.
std::string NoteName(const std::string& path, const std::vector<ThreadSource>& before,
                     const std::vector<ThreadSource>& now) {
  if (engine::IsServerSpec(path)) return engine::PromptText(path, 200);
  const fs::path base = fs::path(path).filename();
  bool shared = false;
  for (const auto* list : {&before, &now}) {
    for (const ThreadSource& s : *list) {
      shared = shared || (s.path != path && fs::path(s.path).filename() == base);
    }
  }
  return engine::PromptText(shared ? path : base.string(), 200);
}

// One sentence per file that differs from what the earlier turns used.
std::vector<std::string> DataNotes(const std::vector<ThreadSource>& before,
                                   const std::vector<ThreadSource>& now, int last_turn) {
  std::vector<std::string> notes;
  const auto Name = [&](const std::string& path) { return NoteName(path, before, now); };
  const std::string since = "since turn " + std::to_string(last_turn);
  for (const ThreadSource& n : now) {
    const auto b = std::find_if(before.begin(), before.end(),
                                [&](const ThreadSource& s) { return s.path == n.path; });
    if (b == before.end()) {
      notes.push_back(Name(n.path) + " is new to this thread " + since +
                      ": earlier answers did not use it");
      continue;
    }
    const bool hashed = !b->sha256.empty() && !n.sha256.empty();
    if (engine::IsServerSpec(n.path)) {
      if (b->size_bytes == n.size_bytes && b->sha256 == n.sha256) continue;
      notes.push_back(Name(n.path) + " changed " + since + " (its tables: " +
                      std::to_string(b->size_bytes) + " -> " + std::to_string(n.size_bytes) +
                      (b->size_bytes == n.size_bytes ? ", other names" : "") +
                      "): answers about it before may no longer hold");
      continue;
    }
    if (b->size_bytes != n.size_bytes || (hashed && b->sha256 != n.sha256)) {
      std::string how = b->size_bytes != n.size_bytes ? std::to_string(b->size_bytes) + " -> " +
                                                            std::to_string(n.size_bytes) + " bytes"
                                                      : "same size, different sha256";
      notes.push_back(Name(n.path) + " changed " + since + " (" + how +
                      "): answers about it before may no longer hold");
    }
  }
  for (const ThreadSource& b : before) {
    if (std::none_of(now.begin(), now.end(),
                     [&](const ThreadSource& s) { return s.path == b.path; })) {
      notes.push_back(Name(b.path) + ", used up to turn " + std::to_string(last_turn) +
                      ", is not part of this question's data");
    }
  }
  return notes;
}

}  // namespace

fs::path StateDirectory() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg == '/') {
    return fs::path(xdg) / "quarry";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return fs::path(home) / ".local" / "state" / "quarry";
  }
  return {};
}

fs::path ThreadsPath(const fs::path& runs_dir) {
  if (!runs_dir.empty()) return runs_dir / "threads.sqlite3";
  const fs::path state = StateDirectory();
  return state.empty() ? fs::path() : state / "threads.sqlite3";
}

Result<ThreadStore> ThreadStore::Open(const fs::path& path) {
  if (path.empty()) {
    return Fail(Error::Code::kUsage,
                "no place for threads: set XDG_STATE_HOME or HOME, or pass --runs-dir");
  }
  std::error_code ec;
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) {
      return Fail(Error::Code::kData,
                  "cannot create " + dir.string() + " for threads: " + ec.message());
    }
    // Questions and answers about the user's data: private to them.
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  // SQLite creates a file with the umask's mode; create it private first (its -wal and -shm
  // files take the database file's mode).
  if (!fs::exists(path, ec)) {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  ThreadStore store(raw, path);
  if (rc != SQLITE_OK) {
    return Fail(Error::Code::kData, "threads database " + path.string() + ": cannot open it: " +
                                        (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  sqlite3_extended_result_codes(raw, 1);
  internal::Db db{raw, path};
  if (auto r = CheckOrCreateSchema(db); !r) return std::unexpected(r.error());
  // WAL: readers never wait for a writer, and writers of different processes take turns.
  if (auto r = UseWal(db); !r) return std::unexpected(r.error());
  if (auto r = db.Exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL", "set pragmas");
      !r) {
    return std::unexpected(r.error());
  }
  return store;
}

ThreadStore::ThreadStore(ThreadStore&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

ThreadStore& ThreadStore::operator=(ThreadStore&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

ThreadStore::~ThreadStore() {
  if (db_) sqlite3_close_v2(db_);
}

Result<std::vector<Thread>> ThreadStore::List() {
  internal::Db db{db_, path_};
  Transaction tx(db);
  if (auto b = tx.Begin(false); !b) return std::unexpected(b.error());
  auto st = db.Prepare(
      "SELECT t.id, t.name, t.created_at, t.updated_at, "
      "(SELECT count(*) FROM turns WHERE thread_id = t.id), "
      "(SELECT status FROM turns WHERE thread_id = t.id ORDER BY number DESC LIMIT 1), "
      "(SELECT question FROM turns WHERE thread_id = t.id ORDER BY number LIMIT 1) "
      "FROM threads t ORDER BY t.updated_at DESC, t.id DESC");
  if (!st) return std::unexpected(st.error());
  std::vector<Thread> out;
  std::vector<int64_t> ids;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    Thread t;
    ids.push_back(st->Int(0));
    t.name = st->Text(1);
    t.created_at = st->Text(2);
    t.updated_at = st->Text(3);
    t.turn_count = static_cast<int>(st->Int(4));
    t.last_status = st->Text(5);
    t.waiting = trace::ParseStopReason(t.last_status) == trace::StopReason::kClarification;
    t.first_question = st->Text(6);
    out.push_back(std::move(t));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    auto sources = internal::LoadSources(db, ids[i]);
    if (!sources) return std::unexpected(sources.error());
    out[i].sources = std::move(*sources);
  }
  if (auto c = tx.Commit(); !c) return std::unexpected(c.error());
  return out;
}

Result<std::optional<Thread>> ThreadStore::Find(std::string_view name) {
  if (auto v = ValidateThreadName(name); !v) return std::unexpected(v.error());
  internal::Db db{db_, path_};
  Transaction tx(db);
  if (auto b = tx.Begin(false); !b) return std::unexpected(b.error());
  auto st = db.Prepare("SELECT id, created_at, updated_at FROM threads WHERE name = ?");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, name);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<Thread>();
  Thread t;
  const int64_t id = st->Int(0);
  t.name = std::string(name);
  t.created_at = st->Text(1);
  t.updated_at = st->Text(2);
  auto sources = internal::LoadSources(db, id);
  if (!sources) return std::unexpected(sources.error());
  t.sources = std::move(*sources);
  auto turns = internal::LoadTurns(db, id);
  if (!turns) return std::unexpected(turns.error());
  t.turns = std::move(*turns);
  t.turn_count = static_cast<int>(t.turns.size());
  t.waiting = !t.turns.empty() && t.turns.back().waiting();
  if (auto c = tx.Commit(); !c) return std::unexpected(c.error());
  return std::optional<Thread>(std::move(t));
}

Result<void> ThreadStore::Rename(std::string_view name, std::string_view new_name) {
  if (auto v = ValidateThreadName(name); !v) return v;
  if (auto v = ValidateThreadName(new_name); !v) return v;
  if (name == new_name) return {};
  internal::Db db{db_, path_};
  // One statement: the UNIQUE name refuses a taken name, and no thread is renamed halfway.
  auto st = db.Prepare(
      "UPDATE threads SET name = ?2, updated_at = ?3 WHERE name = ?1 AND NOT EXISTS "
      "(SELECT 1 FROM threads WHERE name = ?2)");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, name);
  st->Bind(2, new_name);
  st->Bind(3, trace::UtcTimestamp());
  if (auto r = st->Step(); !r) return std::unexpected(r.error());
  if (sqlite3_changes(db_) == 0) {
    auto found = Find(new_name);
    if (found && *found) {
      return Fail(Error::Code::kUsage, "a thread named \"" + std::string(new_name) +
                                           "\" already exists: choose another name");
    }
    return Fail(Error::Code::kUsage, "no thread named \"" + std::string(name) + "\" in " +
                                         path_.string() + " (quarry threads lists them)");
  }
  return {};
}

Result<void> ThreadStore::Delete(std::string_view name) {
  if (auto v = ValidateThreadName(name); !v) return v;
  internal::Db db{db_, path_};
  auto st = db.Prepare("DELETE FROM threads WHERE name = ?");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, name);
  if (auto r = st->Step(); !r) return std::unexpected(r.error());
  if (sqlite3_changes(db_) == 0) {
    return Fail(Error::Code::kUsage, "no thread named \"" + std::string(name) + "\" in " +
                                         path_.string() + " (quarry threads lists them)");
  }
  return {};
}

Result<TurnStart> ThreadStore::StartTurn(std::string_view name, const std::string& text,
                                         const std::string& run_id,
                                         const std::vector<engine::Source>& sources) {
  if (auto v = ValidateThreadName(name); !v) return std::unexpected(v.error());
  internal::Db db{db_, path_};
  Transaction tx(db);
  if (auto b = tx.Begin(true); !b) return std::unexpected(b.error());
  const std::string now = UtcNow();
  TurnStart start;
  auto id = internal::ThreadId(db, name);
  if (!id) return std::unexpected(id.error());
  if (*id == 0) {
    auto ins = db.Prepare("INSERT INTO threads (name, created_at, updated_at) VALUES (?, ?, ?)");
    if (!ins) return std::unexpected(ins.error());
    ins->Bind(1, name);
    ins->Bind(2, now);
    ins->Bind(3, now);
    if (auto r = ins->Step(); !r) return std::unexpected(r.error());
    *id = sqlite3_last_insert_rowid(db_);
    start.created = true;
  }
  auto before = internal::LoadSources(db, *id);
  if (!before) return std::unexpected(before.error());
  auto turns = internal::LoadTurns(db, *id);
  if (!turns) return std::unexpected(turns.error());

  ThreadTurn* waiting = nullptr;
  if (!turns->empty() && turns->back().waiting() && !turns->back().clarifications.empty() &&
      turns->back().clarifications.back().reply.empty()) {
    waiting = &turns->back();
  }
  if (waiting) {
    ThreadClarification& c = waiting->clarifications.back();
    const Clarification asked{c.question, c.choices, c.term};
    auto reply = ReplyText(asked, text);
    if (!reply) return std::unexpected(reply.error());
    c.reply = std::move(*reply);
    start.resume = PendingClarification{asked, c.reply};
    start.number = waiting->number;
    start.question = waiting->question;
    auto up = db.Prepare(
        "UPDATE turns SET status = ?, run_id = ?, clarifications = ?, updated_at = ? "
        "WHERE thread_id = ? AND number = ?");
    if (!up) return std::unexpected(up.error());
    up->Bind(1, kTurnRunning);
    up->Bind(2, run_id);
    up->Bind(3, internal::ClarificationsJson(waiting->clarifications));
    up->Bind(4, now);
    up->Bind(5, *id);
    up->Bind(6, waiting->number);
    if (auto r = up->Step(); !r) return std::unexpected(r.error());
  } else {
    start.number = turns->empty() ? 1 : turns->back().number + 1;
    start.question = text;
    auto ins = db.Prepare(
        "INSERT INTO turns (thread_id, number, run_id, question, status, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    if (!ins) return std::unexpected(ins.error());
    ins->Bind(1, *id);
    ins->Bind(2, start.number);
    ins->Bind(3, run_id);
    ins->Bind(4, text);
    ins->Bind(5, kTurnRunning);
    ins->Bind(6, now);
    ins->Bind(7, now);
    if (auto r = ins->Step(); !r) return std::unexpected(r.error());
  }
  for (const ThreadTurn& t : *turns) {
    if (t.number >= start.number) break;
    if (t.status == kTurnRunning) continue;
    start.history.push_back(internal::ToPriorTurn(t));
  }

  std::vector<ThreadSource> now_sources;
  for (const engine::Source& s : sources) {
    now_sources.push_back(Bound(s));
  }
  if (!start.created && !turns->empty()) {
    start.data_notes = DataNotes(*before, now_sources, turns->back().number);
  }
  if (!start.data_notes.empty() && !start.history.empty()) {
    std::string joined;
    for (const auto& n : start.data_notes) joined += (joined.empty() ? "" : "; ") + n;
    start.history.back().data_note = joined;
  }
  if (auto r = internal::ReplaceSources(db, *id, now_sources); !r)
    return std::unexpected(r.error());
  if (auto r = internal::Touch(db, *id, now); !r) return std::unexpected(r.error());
  if (auto c = tx.Commit(); !c) return std::unexpected(c.error());
  return start;
}

Result<void> ThreadStore::KeepClarification(std::string_view name, const std::string& question,
                                            const std::vector<engine::Source>& sources,
                                            trace::Trace& trace) {
  auto start = StartTurn(name, question, trace.id, sources);
  if (!start) return std::unexpected(start.error());
  trace.thread = std::string(name);
  trace.thread_turn = start->number;
  return FinishTurn(name, start->number, trace);
}

Result<void> ThreadStore::FinishTurn(std::string_view name, int number, const trace::Trace& trace) {
  if (auto v = ValidateThreadName(name); !v) return v;
  internal::Db db{db_, path_};
  Transaction tx(db);
  if (auto b = tx.Begin(true); !b) return b;
  auto id = internal::ThreadId(db, name);
  if (!id) return std::unexpected(id.error());
  auto turns = *id == 0 ? Result<std::vector<ThreadTurn>>() : internal::LoadTurns(db, *id);
  if (!turns) return std::unexpected(turns.error());
  const auto turn = std::find_if(turns->begin(), turns->end(),
                                 [&](const ThreadTurn& t) { return t.number == number; });
  if (turn == turns->end()) {
    return Fail(Error::Code::kUsage, "thread \"" + std::string(name) + "\" has no turn " +
                                         std::to_string(number) +
                                         " any more (deleted while the run went?); not recorded");
  }
  internal::MergeClarifications(trace, turn->clarifications);
  const std::string now = UtcNow();
  auto up = db.Prepare(
      "UPDATE turns SET run_id = ?, status = ?, answer = ?, grounded = ?, sql = ?, preview = ?, "
      "clarifications = ?, updated_at = ? WHERE thread_id = ? AND number = ?");
  if (!up) return std::unexpected(up.error());
  const bool answered = trace.stop_reason == trace::StopReason::kAnswered;
  up->Bind(1, trace.id);
  up->Bind(2, std::string(trace::StopReasonName(trace.stop_reason)));
  // A decline is kept as what it is (the status says so), for the next turn to read.
  up->Bind(3, answered ? trace.answer : trace.declined);
  up->Bind(4, answered && trace.grounded ? 1 : 0);
  up->Bind(5, trace.answer_sql);
  up->Bind(6, ResultPreview(trace));
  up->Bind(7, internal::ClarificationsJson(turn->clarifications));
  up->Bind(8, now);
  up->Bind(9, *id);
  up->Bind(10, number);
  if (auto r = up->Step(); !r) return std::unexpected(r.error());
  if (auto r = internal::Touch(db, *id, now); !r) return r;
  return tx.Commit();
}

}  // namespace quarry::agent
