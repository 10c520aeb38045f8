// The sandbox: runs model-written Python (pandas, numpy, matplotlib) in an isolated child.
// Two layers. The Python guard (runner.py, inside the child) checks the code's AST first and
// turns a confused model's mistake into a specific, repairable message. The operating system
// is the boundary: bubblewrap namespaces (user, network, PID, IPC, UTS, mount), every
// capability dropped, a read-only system, the data files read-only, one writable work
// directory, a hand-built environment, rlimits, a seccomp filter, and a wall-clock timeout
// that kills the process group. Nothing here knows about the agent.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "quarry/common/common.h"

namespace quarry::sandbox {

// A registered table as the child loads it into a pandas DataFrame.
struct TableFile {
  std::string name;                 // the DataFrame's key in `tables`
  std::filesystem::path host_path;  // mounted read-only inside
  // "export" (a typed CSV that engine::ExportTables wrote), or the source itself: "csv", "tsv",
  // "json", "parquet", "sqlite" (which pandas may not be able to read: see notes)
  std::string format;
  std::string delimiter = ",";  // as the engine's sniffer detected it
  bool header = true;
  std::vector<std::pair<std::string, std::string>> columns;  // name, engine type
  // "export" only: the NULL marker, the table's true row count, the rows in the file, the cap.
  std::string null_marker;
  int64_t row_count = 0;
  int64_t rows_written = 0;
  int64_t max_rows = 0;
  std::vector<std::string> notes;  // what the copy wants the model told (shown with the result)
};

// The latest successful SQL result, available inside as the DataFrame `last`.
struct LastResult {
  std::vector<std::string> columns;
  std::vector<std::string> types;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

struct Options {
  std::filesystem::path workdir;  // created if missing; the only writable place
  std::vector<TableFile> tables;
  // Mounted read-only at /tables when set: tables whose file lies directly in it need no mount
  // of their own, and may be written after the child started (the kernel's background copy).
  std::filesystem::path tables_dir;
  std::optional<LastResult> last;
  int64_t timeout_ms = 30000;       // wall clock; then the process group is killed
  int64_t address_space_mb = 4096;  // RLIMIT_AS
  int64_t cpu_seconds = 60;         // RLIMIT_CPU
  int64_t file_size_mb = 64;        // RLIMIT_FSIZE (per file)
  // The work directory's whole (every file, every call of a kernel): checked about every 100 ms
  // while code runs; past it the code is killed and the files it wrote in that call removed.
  int64_t disk_quota_mb = 512;
  int64_t max_processes = 256;          // RLIMIT_NPROC (threads count too)
  int64_t max_open_files = 256;         // RLIMIT_NOFILE
  size_t output_cap_bytes = 64 * 1024;  // per stream kept; a flood past 64x this is killed
  // Without bubblewrap (no user namespaces), run with rlimits, seccomp and the guard only.
  // Off by default: then run_python refuses instead of pretending to be isolated.
  bool allow_unisolated = false;
  // The Python guard. Only the isolation tests turn it off, to prove the OS layer holds alone.
  bool python_guard = true;
  // false: behave as if bubblewrap could not start (tests of the refusal and the fallback).
  bool use_namespaces = true;
  // A stop request kills the running child's process group within about 100 ms; the call then
  // fails with Error::Code::kCancelled (a kernel's next call starts a fresh Python).
  StopToken stop;
};

enum class Isolation { kNamespaces, kRlimitsOnly };

struct PythonResult {
  FailureClass failure = FailureClass::kNone;
  std::string rule;         // the guard rule, for kGuardViolation
  std::string message;      // the error as the model should read it (traceback, trimmed)
  std::string stdout_text;  // capped at output_cap_bytes, with a note when cut
  std::string stderr_text;  // capped; tracebacks are cut from the front
  bool stdout_truncated = false;
  int exit_code = 0;  // the child's, or 128+signal
  Isolation isolation = Isolation::kNamespaces;
  std::vector<std::filesystem::path> artifacts;  // figures written to the work directory
  std::vector<std::string> tables_loaded;
  std::vector<std::string> notes;  // e.g. a table the child could not load into pandas
  int64_t duration_ms = 0;
  // Kernel only: this call ran in a fresh Python because the previous one died or was killed;
  // earlier variables are gone (the reason is in notes).
  bool state_lost = false;
};

// Whether bubblewrap can start here (it needs user namespaces). Cached after the first call.
// Returns the reason when it cannot.
std::optional<std::string> NamespaceUnavailableReason();

// Runs `code`. Errors (quarry's, not the code's): kUsage when isolation is unavailable and
// allow_unisolated is off (the message says why and names the flag); kInternal when the
// child cannot be started; kCancelled when options.stop was requested. The code's own failures are
// in PythonResult::failure.
Result<PythonResult> RunPython(const std::string& code, const Options& options);

// Only the guard, in the same sandbox: a guard_violation or syntax_error, or kNone.
Result<PythonResult> CheckPython(const std::string& code, const Options& options);

// The modules `import` may name (the guard's allowlist).
const std::vector<std::string>& AllowedModules();

// Model-facing text for a result: what it printed, the figures it saved, or the error; a lost
// kernel state and the notes come first, whatever the outcome.
std::string RenderObservation(const PythonResult& result);

}  // namespace quarry::sandbox
