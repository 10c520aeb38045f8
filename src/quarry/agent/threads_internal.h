// Inside the thread store: a thin owner of SQLite statements whose errors name the database
// file, and the row-level helpers threads.cc's transactions are made of (thread_records.cc).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quarry/agent/threads.h"

namespace quarry::agent::internal {

struct Db;

// A prepared statement, finalized when it goes out of scope. Bind indexes start at 1.
class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3_stmt* stmt, const Db* db);
  Stmt(Stmt&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)), db_(other.db_) {}
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  void Bind(int index, std::string_view text);
  void Bind(int index, const char* text) { Bind(index, std::string_view(text)); }
  void Bind(int index, const std::string& text) { Bind(index, std::string_view(text)); }
  void Bind(int index, int64_t value);
  void Bind(int index, int value) { Bind(index, static_cast<int64_t>(value)); }
  // true: a row is ready; false: done. Errors: kData naming the file.
  Result<bool> Step();
  int64_t Int(int column) const;
  std::string Text(int column) const;  // "" for NULL

 private:
  sqlite3_stmt* stmt_ = nullptr;
  const Db* db_ = nullptr;
};

// The connection with the file it is on, for error messages.
struct Db {
  sqlite3* handle = nullptr;
  std::filesystem::path path;

  Result<Stmt> Prepare(const std::string& sql) const;
  Result<void> Exec(const std::string& sql, const char* what) const;
  // kData "threads database <path>: <what>: <sqlite's message>", with what to do about it.
  Error Failure(const char* what) const;
  // kData "threads database <path> <why>".
  std::unexpected<Error> Refuse(const std::string& why) const;
};

// The thread's row id; 0 when there is none of that name.
Result<int64_t> ThreadId(const Db& db, std::string_view name);
Result<std::vector<ThreadSource>> LoadSources(const Db& db, int64_t thread_id);
Result<void> ReplaceSources(const Db& db, int64_t thread_id,
                            const std::vector<ThreadSource>& sources);
// Oldest first.
Result<std::vector<ThreadTurn>> LoadTurns(const Db& db, int64_t thread_id);
Result<void> Touch(const Db& db, int64_t thread_id, const std::string& now);

std::string ClarificationsJson(const std::vector<ThreadClarification>& clarifications);
// A stored clarifications column; a value that is not the expected JSON reads as none.
std::vector<ThreadClarification> ClarificationsFromJson(const std::string& text);
// Appends the run's ask_user questions that the turn does not hold yet (a resumed run records
// the clarification it continues again).
void MergeClarifications(const trace::Trace& trace, std::vector<ThreadClarification>& into);

PriorTurn ToPriorTurn(const ThreadTurn& turn);

}  // namespace quarry::agent::internal
