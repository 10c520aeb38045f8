// `quarry serve`: the local web app. One HTTP server (cpp-httplib) on 127.0.0.1 serves an
// embedded page (serve/web/: HTML, CSS and JavaScript, nothing loaded from the network), a JSON
// API over the same run and thread machinery as `ask`, `chat` and MCP (agent::RunTurn), each
// run's events live as Server-Sent Events, and quarry's MCP tools at /mcp (Streamable HTTP).
//
// Secure by default (docs/serve.md): a random token per start, swapped on the first visit for an
// HttpOnly SameSite=Strict cookie (API clients send Authorization: Bearer); the Host header must
// name this server (DNS rebinding); every state-changing request is POST, PATCH or DELETE and must
// come from the page's own origin (CSRF); no CORS headers; a strict Content-Security-Policy; only
// the sources given at start can be queried, through the same guard as `quarry sql`.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quarry/agent/agent.h"

namespace quarry::serve {

struct ServeOptions {
  std::vector<std::filesystem::path> data;  // the sources; nothing else can be queried
  std::filesystem::path runs_dir = "runs";  // runs/<id>/ of every question asked
  // The thread store (agent::ThreadsPath), shared with `ask --thread`, `chat` and MCP.
  std::filesystem::path threads_path;
  agent::Config config;      // budgets and limits of each run, and of /api/sql's queries
  engine::OpenOptions open;  // how the data is opened
  // Called once the data is open, before serving (the CLI prints source notes here).
  std::function<void(const engine::Engine&)> on_open;
  // A model client for one run; an error (no model configured) ends that run with the message.
  std::function<Result<std::unique_ptr<llm::Client>>()> make_client;
  std::string version;      // quarry's, for the page
  std::string model_label;  // what the page says the model is ("" : not configured)
  bool allow_python = false;

  // Where to listen. A host other than 127.0.0.1, ::1 or localhost needs allow_remote.
  std::string host = "127.0.0.1";
  int port = 8765;  // 0: a free port chosen by the kernel
  bool allow_remote = false;
  // More names the Host header may carry (a name in /etc/hosts, a reverse proxy's), besides
  // 127.0.0.1, localhost and [::1] with the port.
  std::vector<std::string> allow_hosts;
  // Runs at once, and questions that may wait for one; past that, POST /api/ask answers 503.
  size_t max_running = 2;
  size_t max_queued = 8;
  // Questions one client may ask per minute (429 past it).
  int questions_per_minute = 30;
  // Told the URL to open (with its one-time token) once the server listens; the CLI prints it
  // and, with --open, starts the browser.
  std::function<void(const std::string& url)> on_listening;
  // A stop request (SIGINT, SIGTERM) ends serving: running questions stop (their traces end
  // "interrupted") and Serve returns kExitInterrupted.
  StopToken stop;
};

// Opens the data and serves until `options.stop`. Returns the exit code: kExitInterrupted after a
// stop, 2 for a usage error (a remote host without allow_remote, a port in use), 3 when the data
// cannot be opened, 1 when the server cannot start. Errors go to stderr, one line each.
int Serve(const ServeOptions& options);

}  // namespace quarry::serve
