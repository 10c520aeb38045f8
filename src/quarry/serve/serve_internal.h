// Internals of the web app, shared by its files: the request checks (token, Host, Origin), the
// questions' queue and their live events, and the API's handlers. Not part of the module's
// public surface (serve.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/agent/remember.h"
#include "quarry/agent/threads.h"
#include "quarry/serve/serve.h"

namespace httplib {
struct Request;
struct Response;
class Server;
}  // namespace httplib

namespace quarry::mcp {
class HttpEndpoint;
}  // namespace quarry::mcp

namespace quarry::serve::internal {

using json = nlohmann::ordered_json;

// The cookie the token is swapped for on the first visit, named with the port after this prefix
// ("quarry_token_8765"): a browser keeps one cookie jar for every port of a host, so two servers
// on one machine would otherwise sign each other out.
inline constexpr const char* kCookiePrefix = "quarry_token_";
// The largest request body read (a question, an SQL text, an MCP message); past it, 413.
inline constexpr size_t kMaxBodyBytes = 4 * 1024 * 1024;
// The longest question or SQL text accepted from the page.
inline constexpr size_t kMaxQuestionBytes = 8 * 1024;
// Event streams open at once; past it, 503 (each holds one of the server's threads).
inline constexpr int kMaxStreams = 24;
// Rows /api/sql returns at most.
inline constexpr int kMaxSqlRows = 10000;
// Bytes of rows /api/sql returns at most (as JSON); past it, rows are left out and it says so.
inline constexpr size_t kMaxSqlResultBytes = 8 * 1024 * 1024;

// Who may talk to the server, and how a request proves it (security.cc).
class Gate {
 public:
  Gate(std::string token, int port, std::vector<std::string> allow_hosts);
  const std::string& token() const { return token_; }
  // The Host header names this server: 127.0.0.1, localhost or [::1] with the port (or without
  // it for port 80), or one of allow_hosts (with or without the port). Case-insensitive.
  bool HostAllowed(std::string_view host) const;
  // A state-changing request comes from the page's own origin: http:// or https:// (a TLS
  // proxy in front, named with --allow-host) and a host HostAllowed. Sent with the cookie (a
  // browser): Sec-Fetch-Site must be same-origin, or, from a browser that does not send it,
  // Origin must be this server's; a request with neither is refused. Sent with Authorization:
  // Bearer (a program): a browser cannot add that header cross-site without a CORS preflight,
  // which this server never grants, so it needs neither header, but an Origin it does send
  // must be this server's (the MCP transport's rule).
  bool SameOrigin(const httplib::Request& request) const;
  // How the request carries the token, compared in constant time.
  enum class Auth { kNone, kCookie, kBearer };
  Auth Authenticate(const httplib::Request& request) const;
  // The Set-Cookie value that swaps the token for a cookie.
  std::string Cookie() const;

 private:
  std::string token_;
  int port_;
  std::vector<std::string> hosts_;  // lowercased, each with and without the port
  std::string cookie_name_;
};

// The headers every response carries: CSP, nosniff, no referrer, no caching of API answers.
void SecurityHeaders(httplib::Response& response);

// Questions per client per minute (a sliding window of start times). Thread-safe.
class RateLimit {
 public:
  explicit RateLimit(int per_minute) : per_minute_(per_minute) {}
  // Counts one question from `client`; false when it is over the limit (not counted).
  bool Take(const std::string& client);

 private:
  int per_minute_;
  std::mutex mu_;
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> seen_;
};

// One question's run as the page follows it: its events as they happen, then its outcome.
struct RunState {
  std::string id;
  std::string thread;
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::string> events;  // compact JSON, one per trace event, in order
  bool finished = false;
  json outcome;  // once finished: trace::OutcomeJson with run_id, thread, turn and text
  std::stop_source stop;
};

// The queue of questions and the runs in flight or recently finished (runs.cc).
class Runs {
 public:
  Runs(const ServeOptions& options, engine::Engine& engine);
  ~Runs();  // stops every run and waits for the workers
  Runs(const Runs&) = delete;
  Runs& operator=(const Runs&) = delete;

  // Queues a question for `thread` as run `id` (trace::NewRunId). nullptr when max_queued
  // questions wait already, or the server is stopping.
  std::shared_ptr<RunState> Submit(const std::string& id, const std::string& question,
                                   const std::string& thread);
  // A run this server started (running, queued or among the last finished); nullptr otherwise.
  std::shared_ptr<RunState> Find(const std::string& id);
  // Stops run `id`: a queued one is dropped at once (it finishes "interrupted" without having
  // run: no trace, no turn), a running one is asked to stop through its token.
  enum class Stopped { kStopping, kDropped, kFinished, kUnknown };
  Stopped Stop(const std::string& id);
  // Every run stops, and no more start.
  void StopAll();
  // Waits until no question runs or waits, for at most `timeout`; true when none does.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // The knowledge each run is given, read again once a clarification reply is kept.
  agent::LiveKnowledge& knowledge() { return knowledge_; }

 private:
  struct Job {
    std::shared_ptr<RunState> state;
    std::string question;
  };
  void Work(const std::stop_token& stop);
  void RunOne(Job& job);
  void Retire(const std::string& id);  // with mu_ held: kept among the last finished

  const ServeOptions& options_;
  engine::Engine& engine_;
  agent::LiveKnowledge knowledge_;
  std::mutex mu_;
  std::condition_variable_any ready_;
  std::condition_variable idle_;  // a question finished or was dropped
  std::deque<Job> queue_;
  std::map<std::string, std::shared_ptr<RunState>> runs_;  // by id
  std::deque<std::string> finished_;                       // oldest first, for eviction
  bool stopping_ = false;
  size_t running_ = 0;  // workers running a question
  std::vector<std::jthread> workers_;
};

// What every handler shares: the options, the engine (queries take turns), the runs, the gate.
struct App {
  const ServeOptions& options;
  engine::Engine& engine;  // an engine::SharedEngine
  Gate& gate;
  Runs& runs;
  RateLimit& rate;
  mcp::HttpEndpoint& mcp;
  std::atomic<int> streams = 0;  // event streams open
};

// `message` with the threads database named, not placed: a page (maybe on another machine) is
// told what went wrong, not where the user's files are.
std::string HideThreadsPath(std::string message, const std::filesystem::path& threads_path);

// Registers every route of the page, the API and /mcp, and the checks in front of them (api.cc).
void Route(httplib::Server& server, App& app);

// The JSON every outcome is shown with: trace::OutcomeJson plus run_id, thread, turn, the
// figures by file name only, "text", the outcome as the CLI prints it, and "glossary_offers":
// the clarification replies that `knowledge` could keep, as [{"term", "means", "text"}].
json OutcomeFor(const trace::Trace& trace, const std::string& thread, int turn,
                const agent::LiveKnowledge& knowledge);

}  // namespace quarry::serve::internal
