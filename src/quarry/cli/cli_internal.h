// Shared by the CLI's subcommand files.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/common/common.h"
#include "quarry/engine/engine.h"
#include "quarry/knowledge/knowledge.h"
#include "quarry/mcp/mcp.h"

namespace quarry::cli {

enum class Format { kText, kJson };

// Whether stderr gets colour: --color always; never with --color never; else a terminal, and
// NO_COLOR unset (https://no-color.org).
bool UseColor();
std::string Paint(const std::string& text, const char* ansi);
// Text from data or a model, made safe for a terminal: C0 controls (but newline and tab), DEL
// and C1 controls are shown as \xNN / \u00NN, so a cell cannot clear the screen, set the
// title or move the cursor.
std::string TerminalText(std::string_view text);
// What goes to `fd` of data a consumer may want byte for byte (CSV cells, a script's output):
// TerminalText when `fd` is a terminal, the text unchanged for a pipe or a file.
std::string TerminalTextIfTty(int fd, std::string_view text);
// JSON for stdout (--format json): invalid UTF-8 replaced, and the characters the encoder
// leaves raw that a terminal acts on (DEL, C1 controls, bidirectional controls) written as
// \u escapes, which any JSON reader decodes to the same string. C0 controls the encoder escapes.
std::string JsonText(const nlohmann::ordered_json& j, int indent = 2);

// Prints "quarry: <message>" on stderr and returns the exit code for the error's kind.
int Report(const Error& error);

// How a subcommand opens its data (see engine::OpenOptions).
struct LoadFlags {
  bool no_cache = false;
  std::string cache_dir;  // --cache-dir; empty: XDG
  int64_t timeout_ms = 0;
  bool profile = true;
  bool fingerprint = true;
  bool show_notes = false;  // the loader's notes on stderr (commands without cards on stdout)
  StopToken stop;           // Ctrl-C while opening (InterruptScope::token)
};
engine::OpenOptions ToOpenOptions(const LoadFlags& flags);
// engine::Open over the user's specs (paths, maybe with ?options).
Result<std::unique_ptr<engine::Engine>> OpenData(const std::vector<std::string>& specs,
                                                 const LoadFlags& flags);
// The knowledge for a run (knowledge::Discover, then knowledge::Load): `given` (--knowledge), else
// .quarry/ beside the data or in the working directory; null when there is none or `none`
// (--no-knowledge). Which folder is used, and what it holds, is said on stderr. Errors: a bad
// file (kUsage, naming the file and line), or a --knowledge folder that does not exist.
Result<std::shared_ptr<const knowledge::Knowledge>> LoadKnowledge(
    const std::string& given, bool none, const std::vector<std::string>& data);

// The loader's notes on stderr, one line each ("quarry: note: table.column: ...").
void PrintNotes(const engine::Engine& engine);
// Source::notes on stderr (OpenData does it; `quarry mcp` opens the data itself).
void PrintSourceNotes(const engine::Engine& engine);

// After a command: starts a detached `quarry cache build` for every large CSV/TSV/JSON file
// that had no parse-cache entry. `specs` are in the order the engine's sources are.
void FillCache(const engine::Engine& engine, const std::vector<std::string>& specs,
               const LoadFlags& flags);

// FillCache when the command is done, however it returns: the first question on a new file
// costs one scan, and the entry is built after it.
class FillCacheAtExit {
 public:
  FillCacheAtExit(const engine::Engine& engine, const std::vector<std::string>& specs,
                  const LoadFlags& flags)
      : engine_(engine), specs_(specs), flags_(flags) {}
  ~FillCacheAtExit() { FillCache(engine_, specs_, flags_); }
  FillCacheAtExit(const FillCacheAtExit&) = delete;
  FillCacheAtExit& operator=(const FillCacheAtExit&) = delete;

 private:
  const engine::Engine& engine_;
  const std::vector<std::string>& specs_;
  const LoadFlags& flags_;
};

// What `quarry mcp` and `quarry serve` run with, from their flags: the data, runs and threads,
// the schema options, the load flags, and a model client made per question (a missing key is
// that question's error, not a failed start). Errors: ResolveSchemaOptions', a config file that
// does not parse or a profile that does not exist.
struct McpOptions;
Result<mcp::ServerOptions> ToolServerOptions(const McpOptions& o);

}  // namespace quarry::cli
