// `quarry mcp PATH...`: the MCP server on stdio, with ask_database's model from the
// environment (resolved per call, so a missing key is a tool error, not a failed start). `quarry
// serve` sets its runs up the same way (ToolServerOptions).
#include <cstring>
#include <iostream>

#include "quarry/cli/remember.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/agent/threads.h"
#include "quarry/llm/config_file.h"
#include "quarry/mcp/mcp.h"

namespace quarry::cli {

Result<mcp::ServerOptions> ToolServerOptions(const McpOptions& o) {
  mcp::ServerOptions options;
  // A folder stands for the data files in it (said on stderr, which MCP leaves to logs).
  std::vector<std::string> notes;
  auto data = engine::ExpandFolders({o.paths.begin(), o.paths.end()}, &notes);
  if (!data) return std::unexpected(data.error());
  for (const auto& n : notes) std::cerr << "quarry: " << TerminalText(n) << "\n";
  options.data = std::move(*data);
  // Threads go where ask's go: beside the runs when --runs-dir is given, else the state dir.
  options.runs_dir = o.runs_dir.empty() ? "runs" : o.runs_dir;
  options.threads_path = agent::ThreadsPath(o.runs_dir);
  options.allow_python = o.allow_python;
  options.config.python = o.allow_python;
  auto schema = ResolveSchemaOptions(o.schema_budget, o.no_samples);
  if (!schema) return std::unexpected(schema.error());
  options.config.schema = std::move(*schema);
  auto knowledge = LoadKnowledge(o.knowledge, o.no_knowledge, o.paths);
  if (!knowledge) return std::unexpected(knowledge.error());
  options.config.knowledge = std::move(*knowledge);
  if (!o.no_knowledge) {
    options.config.glossary_dir = options.config.knowledge ? options.config.knowledge->dir
                                                           : GlossaryDir(o.knowledge, o.paths);
  }
  // Opening evaluates SQL the data chose (a SQLite view over an endless recursive CTE): each
  // table is bounded by the per-query timeout, as in ask, or initialize was never answered.
  LoadFlags load = o.load;
  if (load.timeout_ms <= 0) load.timeout_ms = options.config.limits.timeout_ms;
  options.open = ToOpenOptions(load);
  std::vector<std::string> paths;
  for (const auto& p : options.data) paths.push_back(p.string());
  options.on_open = [paths, load = o.load](const engine::Engine& e) {
    PrintSourceNotes(e);
    FillCache(e, paths, load);
  };
  llm::Settings flags;
  if (!o.model.empty()) flags.model = o.model;
  if (!o.base_url.empty()) flags.base_url = o.base_url;
  if (!o.provider.empty()) flags.provider = o.provider;
  if (!o.profile.empty()) flags.profile = o.profile;
  flags.stream = !o.no_stream;
  // A missing key waits for ask_database, but a profile that does not exist or a config file
  // that does not parse is the user's own error: said now, not at the first call.
  if (auto files = llm::ReadSettingFiles(llm::ProcessEnv, flags.profile); !files) {
    return std::unexpected(files.error());
  }
  options.make_client = [flags]() -> Result<std::unique_ptr<llm::Client>> {
    auto client = LiveClient(flags);
    if (!client) {
      // `quarry ask --offline` has no MCP counterpart: drop that part of the advice.
      std::string message = client.error().message;
      if (const size_t at = message.find(", or use --offline"); at != std::string::npos) {
        message.erase(at, std::strlen(", or use --offline"));
      }
      return Fail(client.error().code, message);
    }
    return client;
  };
  return options;
}

int RunMcp(const McpOptions& o) {
  auto built = ToolServerOptions(o);
  if (!built) return Report(built.error());
  mcp::ServerOptions options = std::move(*built);
  const InterruptScope interrupt;
  options.stop = interrupt.token();
  options.open.stop = interrupt.token();
  return mcp::Serve(options, std::cin, std::cout);
}

}  // namespace quarry::cli
