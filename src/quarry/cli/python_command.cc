// `quarry python PATH... SCRIPT.py`: a script run in the same sandbox the model's code gets,
// with the same tables, for users and for tests.
#include <fstream>
#include <iostream>
#include <sstream>

#include "quarry/common/read_file.h"
#include "quarry/common/scratch.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"

namespace quarry::cli {

int RunPythonScript(const PythonOptions& o) {
  const std::filesystem::path script = o.args.back();
  const Result<std::string> code = ReadFileText(script, "the script");
  if (!code) return Report({Error::Code::kUsage, code.error().message});
  const std::vector<std::string> specs(o.args.begin(), o.args.end() - 1);
  const InterruptScope interrupt;
  LoadFlags load = o.load;
  load.show_notes = true;
  load.stop = interrupt.token();
  auto engine = OpenData(specs, load);
  if (interrupt.token().stop_requested()) {
    return Report({Error::Code::kCancelled, "interrupted while opening the data"});
  }
  if (!engine) return Report(engine.error());

  const std::string id = trace::NewRunId();
  sandbox::Options options;
  // The run's directory is made like every run's (exclusively, 0700, in a private runs/).
  auto writer = trace::Writer::Create(o.runs_dir, id);
  if (!writer) return Report(writer.error());
  options.workdir = writer->dir() / "workdir";
  options.allow_unisolated = o.allow_unisolated;
  options.timeout_ms = o.timeout_ms;
  options.stop = interrupt.token();
  options.tables_dir = agent::TablesDirFor(options);
  ScratchDirs::Add(options.tables_dir);
  // The script runs once: the cold path (a kernel pays off from the second call on).
  auto tables = agent::SandboxTables(**engine, options.tables_dir, agent::Config{}.python_max_rows);
  if (!tables) {
    std::error_code ec;
    std::filesystem::remove_all(options.tables_dir, ec);
    ScratchDirs::Forget(options.tables_dir);
    return Report(tables.error());
  }
  options.tables = std::move(*tables);
  auto result = sandbox::RunPython(*code, options);
  std::error_code ec;
  std::filesystem::remove_all(options.tables_dir, ec);  // copies of the user's data: not kept
  ScratchDirs::Forget(options.tables_dir);
  if (!result) return Report(result.error());
  for (const auto& n : result->notes) {
    std::cerr << Paint("quarry: note: " + TerminalText(n), "33") << "\n";  // a table's name
  }
  if (result->isolation == sandbox::Isolation::kRlimitsOnly) {
    std::cerr << Paint(
                     "quarry: warning: not isolated (no user namespaces): rlimits, seccomp and "
                     "the Python guard only",
                     "33")
              << "\n";
  }
  // What the script printed is the user's output, byte for byte into a pipe or a file; on a
  // terminal, printed data (a cell with escapes) must not drive it.
  std::cout << TerminalTextIfTty(1, result->stdout_text);
  // On a runtime error the message carries the traceback already.
  if (result->failure != FailureClass::kRuntimeError) {
    std::cerr << TerminalTextIfTty(2, result->stderr_text);
  }
  // A figure's name is the script's: '\x1b]0;...\x07.png' would set the terminal's title.
  for (const auto& a : result->artifacts)
    std::cerr << "figure: " << TerminalText(a.string()) << "\n";
  if (result->failure != FailureClass::kNone && result->failure != FailureClass::kEmptyResult) {
    // The message already starts with its class (and rule), as the model reads it.
    std::cerr << "quarry: " << TerminalText(result->message) << "\n";
    return kExitData;
  }
  return kExitOk;
}

}  // namespace quarry::cli
