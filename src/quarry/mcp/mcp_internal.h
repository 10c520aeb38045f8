// Internals of the MCP server, shared by its files: the tool box (what tools/list shows and
// what tools/call runs, on top of the agent's tools) and the JSON-RPC dispatcher that turns one
// line of input into at most one line of output. Not part of the module's public surface.
#pragma once

#include <deque>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/agent/agent.h"
#include "quarry/mcp/mcp.h"

namespace quarry::mcp {

using json = nlohmann::ordered_json;

// Protocol revisions, newest first. initialize is answered with the client's revision when it
// is one of these, else with the newest (MCP "Lifecycle", version negotiation).
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
inline constexpr const char* kServerName = "quarry";
inline constexpr const char* kServerVersion = "0.1.0";

// JSON-RPC 2.0 error codes (spec section 5.1).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

class ToolBox;

// One tool as MCP clients see it; the handler turns arguments (already checked against
// input_schema) into a CallToolResult.
struct McpTool {
  std::string name;
  std::string title;
  std::string description;
  json input_schema;
  std::optional<json> output_schema;  // then every successful result has structuredContent
  bool idempotent = true;
  bool open_world = false;  // talks to something outside the data (ask_database: the model)
  json (*handler)(ToolBox& box, const json& arguments) = nullptr;
};

// quarry's MCP tools over one opened engine: describe_schema, run_sql, ask_database,
// make_chart, and run_python when options.allow_python. Every tool is read-only with respect
// to the user's data. Bad arguments, guard rejections and failed executions come back as
// results with isError true; exceptions (bugs) propagate to the dispatcher.
// Not thread-safe: one call at a time, as the dispatcher makes them.
class ToolBox {
 public:
  ToolBox(const ServerOptions& options, engine::Engine& engine);
  ToolBox(const ToolBox&) = delete;
  ToolBox& operator=(const ToolBox&) = delete;

  // tools/list's "tools". `structured` (protocol 2025-06-18 and later): with each tool's
  // title and run_sql's outputSchema; 2025-03-26 has neither, only annotations.title.
  json List(bool structured) const;
  const McpTool* Find(std::string_view name) const;
  std::string Names() const;  // "a, b, c", for error messages
  // A CallToolResult {content, structuredContent?, isError}. `tool` comes from Find().
  json Call(const McpTool& tool, const json& arguments, bool structured);

  // The handlers (McpTool::handler) and what they share.
  const ServerOptions& options() const { return options_; }
  engine::Engine& engine() { return engine_; }
  const agent::Tool* AgentTool(std::string_view name) const;
  // Runs an agent tool with `config`, keeping the latest successful run_sql result across
  // calls (run_python sees it as `last`).
  agent::Observation RunAgentTool(const agent::Tool& tool, const json& arguments,
                                  const agent::Config& config);

  // ask_database's per-thread memory: the last few answered questions of each thread.
  struct ThreadTurn {
    std::string question;
    std::string answer;
    std::string sql;
  };
  std::deque<ThreadTurn>& Thread(const std::string& name) { return threads_[name]; }

 private:
  const ServerOptions& options_;
  engine::Engine& engine_;
  std::vector<agent::Tool> agent_tools_;
  std::vector<McpTool> tools_;
  std::optional<sandbox::LastResult> last_;
  std::map<std::string, std::deque<ThreadTurn>> threads_;
};

// JSON-RPC 2.0 over MCP's stdio transport, one message at a time. Knows the lifecycle
// (initialize, ping, notifications) and routes tools/* to the tool box.
class Dispatcher {
 public:
  Dispatcher(ToolBox& tools, std::string instructions);
  // Handles one line of input. Returns the response to write, or nullopt: notifications and
  // client responses are never answered, and a final line cut off by EOF (`complete` false)
  // that does not parse is dropped rather than answered with a parse error.
  // Never throws: an exception inside a method becomes -32603.
  std::optional<json> Handle(std::string_view line, bool complete);

 private:
  struct RpcError {
    int code = kInternalError;
    std::string message;
  };
  using MethodResult = std::expected<json, RpcError>;
  MethodResult Request(const std::string& method, const json& params);
  void Notification(const std::string& method);
  MethodResult Initialize(const json& params);
  MethodResult CallTool(const json& params);

  ToolBox& tools_;
  std::string instructions_;
  bool initialized_ = false;  // initialize has been answered
  std::string protocol_version_ = kProtocolVersions[0];
};

// A JSON-RPC error response; id is null when the request's id could not be read.
json ErrorResponse(const json& id, int code, const std::string& message);
// The one compact line a message is written as (invalid UTF-8 replaced), without the newline.
std::string DumpLine(const json& message);
// One line on stderr, prefixed "quarry mcp: " (stdout belongs to the protocol).
void Log(std::string_view message);

}  // namespace quarry::mcp
