// `quarry mcp PATH...`: the MCP server on stdio, with ask_database's model from the
// environment (resolved per call, so a missing key is a tool error, not a failed start).
#include <iostream>

#include "quarry/cli/commands.h"
#include "quarry/mcp/mcp.h"

namespace quarry::cli {

int RunMcp(const McpOptions& o) {
  mcp::ServerOptions options;
  options.data.assign(o.paths.begin(), o.paths.end());
  options.runs_dir = o.runs_dir;
  options.allow_python = o.allow_python;
  options.config.python = o.allow_python;
  options.make_client = [model = o.model, base_url = o.base_url] {
    return LiveClient(model, base_url);
  };
  return mcp::Serve(options, std::cin, std::cout);
}

}  // namespace quarry::cli
