// Model queries run in a child process that the engine can kill. DuckDB checks for an interrupt
// only between chunks of rows and SQLite only between virtual-machine steps, so one scalar call
// (levenshtein of two 30,000-character strings, instr() of a 30,000-byte needle in 16 MB) ran
// 17 to 57 s past a 10 s timeout and ignored every stop request. In a child, the timeout and
// the stop token end it with SIGKILL, whatever it is doing; the parent's engine, untouched by
// queries, forks the next child. PostgreSQL does not need this: its server cancels.
//
// The child is forked once and serves query after query: a fresh child per query paid its
// first-touch page faults every time (2.4x slower on a 2-million-row CSV, bench/
// query_isolation_bench).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <shared_mutex>
#include <string>

#include "quarry/engine/engine.h"

namespace quarry::engine::internal {

// How long past Limits::timeout_ms the child may take to stop on its own (its engine's own
// interrupt gives the usual timeout message) before it is killed.
inline constexpr int64_t kIsolatedGraceMs = 1000;

// Held shared by every thread that works in DuckDB outside an engine's own queries (the copy for
// Python, on the sandbox's copier thread), and exclusively across fork(): a child forked while
// another thread holds one of DuckDB's process-wide locks would wait on it forever. SQLite's
// own process-wide locks are taken directly (isolated_query.cc).
std::shared_mutex& ForkGate();

// One query as the child receives it.
struct IsolatedQuery {
  std::string sql;
  int64_t timeout_ms = 0;
  int max_rows = 0;
};

// The child that runs an engine's queries. `setup` runs once in each new child (settings only
// the child may take); `serve` runs each query there, with a progress function that reports
// through Run's `progress`. Run forks a child when there is none (the first query, or after one
// was killed or died), sends the query and waits: Limits::stop and the deadline (timeout_ms +
// kIsolatedGraceMs; none when timeout_ms <= 0) kill the child, giving CancelledFailure() or a
// kTimeout failure. A child that dies without an outcome (a crash, the out-of-memory killer)
// gives a kRuntimeError failure naming the signal; a fork that fails, one naming errno. The
// child holds no pipe or socket of the parent's (an MCP client still sees EOF) and dies with
// the thread that forked it (PR_SET_PDEATHSIG; the next query forks again). Reset() ends the
// child, for when the parent's engine changed (a card rebuilt). A new child that does not say it
// started in time (a lock held at fork() that it then waits on forever) is forked again. One Run
// at a time.
class QueryProcess {
 public:
  using Serve = std::function<QueryOutcome(const IsolatedQuery&, const ProgressFn&)>;
  QueryProcess(std::function<void()> setup, Serve serve);
  ~QueryProcess();
  QueryProcess(const QueryProcess&) = delete;
  QueryProcess& operator=(const QueryProcess&) = delete;

  QueryOutcome Run(std::string_view sql, const Limits& limits, const ProgressFn& progress);
  void Reset();
  pid_t pid() const { return pid_; }  // 0 when there is no child

 private:
  // Forks a child and waits until it has started (its setup done), replacing one that does not
  // start in time (isolated_query.cc, kStartBoundsMs); a stop request ends the wait.
  std::optional<QueryFailure> Spawn(const StopToken& stop);
  std::optional<QueryFailure> Fork();
  std::function<void()> setup_;
  Serve serve_;
  pid_t pid_ = 0;
  int fd_ = -1;  // the parent's end of the socket pair
};

}  // namespace quarry::engine::internal
