// Placeholder until the MCP server lands: refuses to serve.
#include <iostream>

#include "quarry/mcp/mcp.h"

namespace quarry::mcp {

int Serve(const ServerOptions&, std::istream&, std::ostream&) {
  std::cerr << "quarry: mcp is not built yet\n";
  return 1;
}

}  // namespace quarry::mcp
