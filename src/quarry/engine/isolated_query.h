// One model query run in a forked child process that the caller can kill. DuckDB checks for an
// interrupt only between chunks of rows and SQLite only between virtual-machine steps, so one
// scalar call (levenshtein of two 30,000-character strings, replace() over an 8 MB blob) ran
// 17 to 57 s past a 10 s timeout and ignored every stop request. In a child, the timeout and
// the stop token end it with SIGKILL, whatever it is doing; the parent's engine, untouched by
// the query, serves the next one. PostgreSQL does not need this: its server cancels.
#pragma once

#include <functional>
#include <shared_mutex>
#include <string>

#include "quarry/engine/engine.h"

namespace quarry::engine::internal {

// How long past Limits::timeout_ms the child may take to stop on its own (its engine's own
// interrupt gives the usual timeout message) before it is killed.
inline constexpr int64_t kIsolatedGraceMs = 1000;

// Runs `body` in a child forked from the calling thread and returns its outcome. The child
// first runs `setup` (engine settings only the child may take); `body` gets a progress
// function that reports through the parent's `progress` (may be empty). Limits::stop and the
// deadline (timeout_ms + kIsolatedGraceMs; none when timeout_ms <= 0) kill the child: the
// outcome is CancelledFailure() or a kTimeout failure. A child that dies without an outcome (a
// crash, the out-of-memory killer) gives a kRuntimeError failure naming the signal; a fork
// that fails gives one naming errno. The child holds no pipe or socket of the parent's (an
// MCP client still sees EOF) and dies with the forking thread (PR_SET_PDEATHSIG). Blocking;
// not to be called from two threads on the same engine at once.
// Held shared by every thread that works in DuckDB outside an engine's own query (the copy for
// Python, on the sandbox's copier thread), and exclusively by RunIsolated across fork(): a
// child forked while another thread holds one of DuckDB's process-wide locks would wait on it
// forever. SQLite's are taken directly (isolated_query.cc).
std::shared_mutex& ForkGate();

QueryOutcome RunIsolated(const Limits& limits, const ProgressFn& progress,
                         const std::function<void()>& setup,
                         const std::function<QueryOutcome(const ProgressFn&)>& body);

}  // namespace quarry::engine::internal
