// Internals of the MCP server, shared by its files: the tool box (what tools/list shows and
// what tools/call runs, on top of the agent's tools), the engine shared by concurrent calls, the
// call scheduler (workers, cancellation, progress) and the JSON-RPC dispatcher that turns one
// line of input into at most one line of output. Not part of the module's public surface.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <expected>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/agent/agent.h"
#include "quarry/agent/remember.h"
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
// Implementation-defined server error (JSON-RPC reserves -32000 to -32099): too many calls.
inline constexpr int kServerBusy = -32000;
// How many tools/call requests run at once, and how many more may wait for a worker; past
// that a call is refused with kServerBusy. Other requests (ping, tools/list, ...) never wait.
inline constexpr size_t kMaxRunningCalls = 4;
inline constexpr size_t kMaxQueuedCalls = 16;

// What one tools/call result may hold. Every cell (run_sql's text and structuredContent
// alike) is cut at engine::kResultCellBytes; the text blocks and structuredContent together
// stay within kResponseBytes (run_sql drops whole rows from the end of both forms; other
// text is cut). `truncated` (run_sql) is true whenever a row or a cell was cut. Images have
// their own cap (8 MiB a figure) and are not counted.
inline constexpr size_t kResponseBytes = 256 * 1024;
// The longest input line (one JSON-RPC message) read: a longer one is skipped to its newline,
// holding at most this much, and answered with kInvalidRequest (id null); serving goes on.
// Issue 22: an 800 MB line took the server to 3.2 GB.
inline constexpr size_t kMaxMessageBytes = 4 * 1024 * 1024;

// What a tool handler gets besides its arguments: the call's stop request, and a progress
// reporter that sends notifications/progress when the client gave a progressToken (a no-op
// otherwise). The reporter may be called from the handler's thread only.
struct CallContext {
  StopToken stop;
  std::function<void(const std::string& message)> progress = [](const std::string&) {};
  // Set when the client declared the elicitation capability: asks the user through
  // elicitation/create and returns the reply, or nullopt (declined, cancelled, stopped, or
  // the client went away). Unset: clarifications come back as the tool's result.
  agent::AskUserFn ask_user;
};

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
  json (*handler)(ToolBox& box, const json& arguments, const CallContext& call) = nullptr;
  bool read_only = true;  // false: it writes (remember_clarification: the user's glossary)
};

// quarry's MCP tools over one opened engine: describe_schema, run_sql, ask_database,
// make_chart, run_python when options.allow_python, and remember_clarification when
// config.glossary_dir is set (it writes the glossary, nothing else). Every tool is read-only with
// respect to the user's data. Bad arguments, guard rejections and failed executions come back as
// results with isError true; exceptions (bugs) propagate to the dispatcher.
// Thread-safe: calls run concurrently on the scheduler's workers, over a SharedEngine; the last
// run_sql result is guarded here; threads live in the agent's thread store.
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
  // A CallToolResult {content, structuredContent?, isError}, within the response budget.
  // `tool` comes from Find().
  json Call(const McpTool& tool, const json& arguments, bool structured, const CallContext& call);

  // The handlers (McpTool::handler) and what they share.
  const ServerOptions& options() const { return options_; }
  engine::Engine& engine() { return engine_; }
  const agent::Tool* AgentTool(std::string_view name) const;
  // Runs an agent tool with `config` (its limits and sandbox options carrying `stop`), keeping
  // the latest successful run_sql result across calls (run_python sees it as `last`).
  agent::Observation RunAgentTool(const agent::Tool& tool, const json& arguments,
                                  agent::Config config, const StopToken& stop);
  // The knowledge each ask_database run is given, read again after remember_clarification.
  agent::LiveKnowledge& knowledge() { return knowledge_; }

 private:
  const ServerOptions& options_;
  engine::SharedEngine engine_;
  std::vector<agent::Tool> agent_tools_;
  std::vector<McpTool> tools_;
  std::mutex mu_;  // guards last_
  std::optional<sandbox::LastResult> last_;
  agent::LiveKnowledge knowledge_;
};

// run_sql's result within the budgets (kResponseBytes, engine::kResultCellBytes): `text` is the
// agent's rendering of every fetched row (one line each), `detail` its typed rows. String cells
// longer than the cell budget end in "…"; a BLOB's base64 keeps whole 4-character groups within
// it. Rows are dropped from the end of both forms alike until both fit, and the text's count
// line says how many are shown and why.
struct BudgetedRows {
  std::string text;
  json rows = json::array();
  int64_t row_count = 0;   // all rows the query produced
  bool truncated = false;  // a row or a cell was cut, or the row cap left rows out
};
BudgetedRows FitRows(const std::string& text, const json& detail);
// Cuts a CallToolResult's text blocks to what kResponseBytes leaves after structuredContent,
// with a closing line that says so; sets structuredContent.truncated when it cut. Returns
// whether it cut.
bool FitText(json& result);

// Writes one message as one line, whole; thread-safe. False once the client is gone.
using WriteFn = std::function<bool(const json& message)>;

// Requests this server sends to the client (elicitation/create), each waiting on a worker
// thread for the response line that the reader routes back by id. Thread-safe.
class ClientRequests {
 public:
  explicit ClientRequests(WriteFn write) : write_(std::move(write)) {}
  // Sends a request and waits for its response: the response's "result", or nullopt when the
  // client answered with an error, `stop` was requested (then notifications/cancelled is sent
  // for it), `wait` passed, or Close() was called. Time spent here is the user's, not the run's.
  std::optional<json> Send(const std::string& method, const json& params, const StopToken& stop,
                           std::chrono::milliseconds wait);
  // A response from the client. False when its id is not one this server waits on.
  bool Deliver(const json& message);
  // End of input: every wait ends, and later sends return nullopt at once.
  void Close();

 private:
  struct Waiting {
    std::optional<json> response;
  };
  WriteFn write_;
  std::mutex mu_;
  std::condition_variable_any changed_;
  std::map<std::string, Waiting*> waiting_;  // by id
  int64_t next_id_ = 1;
  bool closed_ = false;
};

// How long ask_database waits on an elicitation before it ends the run as waiting.
inline constexpr std::chrono::minutes kElicitationWait{30};

// Puts a clarification to the user through elicitation/create: the accepted reply (at most
// 2000 bytes), or nullopt when declined, cancelled, empty, stopped or unanswered.
std::optional<std::string> Elicit(ClientRequests& requests, const agent::Clarification& asked,
                                  const StopToken& stop);

// A tools/call request read and checked, waiting for a worker.
struct PendingCall {
  json id;
  const McpTool* tool = nullptr;
  json arguments;
  bool structured = true;
  json progress_token;     // null: the client asked for no progress
  std::string serial_key;  // calls with the same non-empty key run one at a time, in order
};

// Runs tools/call requests on kMaxRunningCalls worker threads while the reader goes on reading.
// notifications/cancelled for a queued or running call requests its stop (the query is
// interrupted, the Python child killed, the agent run ended) and no response is ever written
// for its id. Responses and progress notifications are written through `write`, one line each.
// The workers live as long as this object: a sandbox child dies with the thread that forked it
// (PR_SET_PDEATHSIG), so no worker exits while serving.
class Calls {
 public:
  // Runs one call and returns its JSON-RPC response; never throws.
  using RunFn = std::function<json(const PendingCall& call, const CallContext& context)>;
  Calls(RunFn run, WriteFn write);
  ~Calls();  // Drain(), then the workers end
  Calls(const Calls&) = delete;
  Calls& operator=(const Calls&) = delete;

  // Queues a call. Returns an error response to write at once when its id is already in flight
  // or kMaxQueuedCalls are waiting; nullopt when queued.
  std::optional<json> Submit(PendingCall call);
  // Cancels the call with this id, queued or running; unknown or finished ids are ignored
  // (the call may have finished while the notification travelled).
  void Cancel(const json& id, const std::string& reason);
  // Waits until no call is queued or running (end of input). With `stop_all`, or when a write
  // found the client gone, queued calls are dropped and running ones stopped first.
  void Drain(bool stop_all = false);

 private:
  struct Entry {
    PendingCall call;
    std::stop_source stop;
    bool running = false;
    bool cancelled = false;
  };
  void Work();
  std::list<Entry>::iterator NextRunnable();  // under mu_; end() when none

  RunFn run_;
  WriteFn write_;
  std::mutex mu_;  // guards everything below; held while a worker writes, so a cancel that
                   // returned can no longer be followed by that call's response or progress
  std::condition_variable changed_;
  std::list<Entry> entries_;  // queued and running, in arrival order
  bool shutting_down_ = false;
  bool client_gone_ = false;
  std::vector<std::thread> workers_;
};

// JSON-RPC 2.0 over MCP's stdio transport, one message at a time. Knows the lifecycle
// (initialize, ping, notifications) and routes tools/* to the tool box.
class Dispatcher {
 public:
  // tools/call requests go to `calls` (answered later, on a worker); `calls` may be null only
  // before Serve wires it (then tools/call is answered inline).
  Dispatcher(ToolBox& tools, std::string instructions);
  void SetCalls(Calls* calls) { calls_ = calls; }
  // Where client responses go; null: they are logged and dropped.
  void SetClientRequests(ClientRequests* requests) { requests_ = requests; }
  // The client declared `capabilities.elicitation` in initialize.
  bool client_elicits() const { return client_elicits_; }
  // Runs one queued tools/call: its response, with exceptions turned into -32603.
  json RunCall(const PendingCall& call, const CallContext& context);
  // Handles one line of input. Returns the response to write, or nullopt: notifications and
  // client responses are never answered, and a final line cut off by EOF (`complete` false)
  // that does not parse is dropped rather than answered with a parse error.
  // Never throws: an exception inside a method becomes -32603. `stop` stops a tools/call
  // answered inline (no Calls wired: MCP over HTTP, where the POST waits for the result).
  std::optional<json> Handle(std::string_view line, bool complete, StopToken stop = {});

 private:
  struct RpcError {
    int code = kInternalError;
    std::string message;
  };
  using MethodResult = std::expected<json, RpcError>;
  MethodResult Request(const std::string& method, const json& params);
  void Notification(const std::string& method, const json& params);
  MethodResult Initialize(const json& params);
  // Checks a tools/call and queues it (nullopt: answered later), or its error response.
  std::optional<json> SubmitCall(const json& id, const json& params, StopToken stop);
  std::expected<PendingCall, RpcError> CheckCall(const json& id, const json& params);

  ToolBox& tools_;
  Calls* calls_ = nullptr;
  ClientRequests* requests_ = nullptr;
  std::atomic<bool> client_elicits_ = false;
  std::string instructions_;
  bool initialized_ = false;  // initialize has been answered
  std::string protocol_version_ = kProtocolVersions[0];
};

// The server's instructions for initialize: the tables, the dialect, what each tool is for.
std::string Instructions(const engine::Engine& engine, const ServerOptions& options);
// A JSON-RPC error response; id is null when the request's id could not be read.
json ErrorResponse(const json& id, int code, const std::string& message);
// The one compact line a message is written as (invalid UTF-8 replaced), without the newline.
std::string DumpLine(const json& message);
// The dialect as tool descriptions and instructions name it: "DuckDB", "SQLite", "PostgreSQL".
std::string DialectTitle(engine::Dialect dialect);
// One line on stderr, prefixed "quarry mcp: " (stdout belongs to the protocol).
void Log(std::string_view message);

}  // namespace quarry::mcp
