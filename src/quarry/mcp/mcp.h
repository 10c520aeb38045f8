// The MCP server: quarry's tools for Claude Code and other MCP clients, as JSON-RPC 2.0 over
// stdio (one compact message per line; nothing but protocol on stdout; logs on stderr).
// Protocol 2025-11-25, with 2025-06-18 and 2025-03-26 accepted. Sits on the agent, like cli.
#pragma once

#include <filesystem>
#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "quarry/agent/agent.h"

namespace quarry::mcp {

struct ServerOptions {
  std::vector<std::filesystem::path> data;  // the sources every tool works on
  std::string runs_dir = "runs";            // where ask_database and make_chart keep runs
  // The thread store ask_database's `thread` uses (agent::ThreadsPath), shared with
  // `quarry ask --thread` and `quarry chat`; empty: threads are refused with a tool error.
  std::filesystem::path threads_path;
  bool allow_python = false;  // offer run_python (explicit opt-in)
  agent::Config config;       // budgets and limits for ask_database
  engine::OpenOptions open;   // how the data is opened (cache, timeouts)
  // Called once the data is open, before serving (the CLI starts parse-cache builds here).
  std::function<void(const engine::Engine&)> on_open;
  // Builds the model client for ask_database; an error (no model configured) becomes a tool
  // error result, not a protocol error.
  std::function<Result<std::unique_ptr<llm::Client>>()> make_client;
  // A stop request (the CLI's SIGINT/SIGTERM) ends serving: queued calls are dropped, running
  // ones stopped (an ask_database run ends "interrupted" with its trace written), and the
  // process exits with kExitInterrupted's 6 at once, as the reader may be blocked on input.
  StopToken stop;
};

// Opens the data, then serves requests from `in` until EOF. Returns the process exit code:
// 0 on a clean EOF (or when the client closes its end); data errors are reported on stderr
// before serving (exit 3; 2 for a usage error, such as a password in a server URL). When `out` is
// std::cout, fd 1 points at stderr while serving and the protocol goes to a close-on-exec duplicate
// of the original stdout, so no other code in the process and no child can write into the protocol
// stream; SIGPIPE is ignored meanwhile. A reader thread answers ping, initialize and tools/list at
// once, and queues tools/call for up to 4 worker threads (16 more may wait; past that, -32000);
// queries share the one engine and take turns. notifications/cancelled stops a queued or running
// call (its query interrupted, its Python killed, its agent run ended as "interrupted") and its id
// is never answered. ask_database sends one notifications/progress per agent step when the request
// carries _meta.progressToken. At EOF the calls in flight are finished and answered before
// Serve returns; on `options.stop` they are stopped and the process exits 6. Not reentrant:
// one Serve per process.
int Serve(const ServerOptions& options, std::istream& in, std::ostream& out);

// MCP's Streamable HTTP transport (2025-11-25, "Transports"), as `quarry serve` offers it at
// /mcp: the same tools as Serve, over an engine the caller opened and shares. Each POST carries
// one JSON-RPC message. initialize starts a session, answered with its id for the
// Mcp-Session-Id header; every later message must carry it (400 without, 404 for an unknown or
// ended one). A request is answered with one application/json response (tools/call runs while the
// POST waits; no server-to-client stream, so clarifications come back as the tool's result); a
// notification or a response is accepted with 202 and no body. notifications/cancelled naming the
// session's running request stops it (its POST is then answered with the stopped tool's result,
// which the client ignores). A session's messages are handled one at a time (a client that wants
// calls in parallel opens more sessions). The caller checks the token, the Host and the Origin
// before handing a request here. Thread-safe.
class HttpEndpoint {
 public:
  // `options.data` is not opened again: `engine` serves every call. Both must outlive this.
  HttpEndpoint(const ServerOptions& options, engine::Engine& engine);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  struct Reply {
    int status = 200;
    std::string body;        // a JSON-RPC message, or "" (202, and errors of the transport)
    std::string session_id;  // set on initialize's reply: the Mcp-Session-Id header
  };
  // One POST: `body` the message, `session_id` its Mcp-Session-Id header ("" when absent),
  // `protocol_version` its MCP-Protocol-Version header ("" when absent: 2025-03-26 is assumed, as
  // the spec says). An unsupported version is 400.
  Reply Post(std::string_view body, const std::string& session_id,
             const std::string& protocol_version);
  // DELETE: ends the session (200); 400 without a session id, 404 when there is none of that id.
  Reply Delete(const std::string& session_id);
  // Stops every running call (a stopped query, a killed Python child, an interrupted run with
  // its trace written), and every later call at once. For the server's shutdown.
  void StopAll();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace quarry::mcp
