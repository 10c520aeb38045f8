// The warm Python kernel: one sandboxed Python process serves every run_python call of a run,
// as a notebook does. Same isolation as RunPython (bubblewrap namespaces, seccomp, rlimits, a
// hand-built environment, read-only data, one writable work directory); pandas, numpy, pyplot
// and the tables are loaded once; variables persist between calls. Each call keeps its own
// guard check, wall-clock timeout, CPU limit and output cap. A call that times out, floods, or
// kills the process ends the kernel; the next call starts a fresh one and says the state was lost.
//
// Protocol (runner.py, kernel()): frames "<decimal length>\n<json>" on dedicated descriptors,
// requests on a socket (the child's fd 0, moved away before user code runs), results on a pipe
// (the child's fd 3, moved likewise); the user's stdout and stderr are pipes of their own. The
// parent bounds every read (frame size, output caps) and every wait (deadlines), so nothing the
// child writes can crash or hang it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quarry/sandbox/sandbox.h"

namespace quarry::sandbox {

class Kernel {
 public:
  // The tables to load, computed once on a background thread (the agent copies them out with
  // engine::ExportTables); files must lie in options.tables_dir or exist before Start(). Its
  // error becomes a note and the kernel starts without tables.
  using TablesFn = std::function<Result<std::vector<TableFile>>()>;

  // `options` as for RunPython: workdir, tables_dir, limits, guard; options.tables is used
  // when `tables` is empty; options.last is ignored (Run takes it). Starts nothing.
  explicit Kernel(Options options, TablesFn tables = {});
  ~Kernel();  // Shutdown()
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // Starts the process and the table copy in the background and returns at once; the first
  // Run waits for them. Errors: as RunPython's (isolation unavailable, child cannot start);
  // the same error is returned again by Run.
  Result<void> Start();

  // Runs one call. `last` is the latest SQL result, bound to `last` when it changed. Errors:
  // quarry's own, as RunPython's; the code's failures are in PythonResult::failure.
  // Not thread-safe: one call at a time.
  Result<PythonResult> Run(const std::string& code, const std::optional<LastResult>& last);

  // Ends the process group and reaps it; joins the background thread. Idempotent.
  void Shutdown();

  // The live kernel's process id (bubblewrap's, the group leader), for tests of cleanup.
  std::optional<pid_t> pid() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace quarry::sandbox
