// The web app's routes (serve_internal.h, Route): the checks in front of every request, the
// embedded page, the JSON API over the runs, threads, schema cards and guarded queries, each
// run's events as Server-Sent Events, the trace page, and /mcp.
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <iostream>
#include <map>
#include <regex>

#include "quarry/common/random.h"
#include "quarry/common/read_file.h"
#include "quarry/common/text.h"
#include "quarry/mcp/mcp.h"
#include "quarry/serve/serve_internal.h"

namespace quarry::serve {
// The page's files, embedded at build time (cmake/Embed.cmake) from serve/web/.
const std::map<std::string, std::string>& EmbeddedWeb();
}  // namespace quarry::serve

namespace quarry::serve::internal {

namespace {

namespace fs = std::filesystem;
using httplib::Request;
using httplib::Response;
using Handled = httplib::Server::HandlerResponse;

// A run id as trace::NewRunId makes it: the only shape a path may name a run by.
constexpr const char* kRunId = "([0-9]{8}-[0-9]{6}-[0-9a-f]{6})";

void Send(Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json; charset=utf-8");
}

void Refuse(Response& res, int status, const std::string& message) {
  Send(res, status, {{"error", message}});
}

// The request's JSON object body, or nullopt after answering 400/415 with what is wrong.
std::optional<json> Body(const Request& req, Response& res) {
  const std::string type = Lower(req.get_header_value("Content-Type"));
  if (!type.starts_with("application/json")) {
    Refuse(res, 415, "send the body as JSON with Content-Type: application/json");
    return std::nullopt;
  }
  if (Trim(req.body).empty()) {
    Refuse(res, 400, "the body is empty: send a JSON object");
    return std::nullopt;
  }
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 3: syntax error while
    // parsing value - invalid string: ill-formed UTF-8 byte; last read: ..." keeps the reason.
    std::string what = e.what();
    const size_t dash = what.find(" - ");
    what = dash == std::string::npos ? "it does not parse" : what.substr(dash + 3);
    what = what.substr(0, what.find("; last read"));
    Refuse(res, 400, "the body is not valid JSON at byte " + std::to_string(e.byte) + ": " + what);
    return std::nullopt;
  }
  if (!body.is_object()) {
    Refuse(res, 400, "the body is JSON but not an object: send {\"name\": value, ...}");
    return std::nullopt;
  }
  return body;
}

// A string field of `body`: "" when absent; nullopt (after 400) when not a string or too long.
std::optional<std::string> Field(const json& body, const char* name, Response& res,
                                 size_t max_bytes = kMaxQuestionBytes) {
  if (!body.contains(name)) return std::string();
  if (!body[name].is_string()) {
    Refuse(res, 400, std::string("\"") + name + "\" must be a string");
    return std::nullopt;
  }
  std::string value = body[name].get<std::string>();
  if (value.size() > max_bytes) {
    Refuse(res, 400,
           std::string("\"") + name + "\" is longer than " + std::to_string(max_bytes) + " bytes");
    return std::nullopt;
  }
  return value;
}

// A name for a new thread: the question's start (agent::ThreadNameFromText), and the run's
// random part, so two threads never share one.
std::string ThreadNameFor(const std::string& question, const std::string& run_id) {
  const std::string start = agent::ThreadNameFromText(question, 48);
  const std::string tail = run_id.substr(run_id.size() - 6);
  return (start.empty() ? std::string("question") : start) + " \u00b7 " + tail;
}

// The trace of a run: from memory while this server ran it, else its trace.json.
Result<trace::Trace> ReadRun(App& app, const std::string& id) {
  auto path = trace::FindTrace(app.options.runs_dir, id);
  if (!path) return std::unexpected(path.error());
  return trace::ReadTrace(*path);
}

// The base64 SHA-256 of an inline block, as a CSP source ('sha256-...').
std::string CspHash(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char out[64] = {};
  EVP_EncodeBlock(out, digest, SHA256_DIGEST_LENGTH);
  return "'sha256-" + std::string(reinterpret_cast<char*>(out)) + "'";
}

// The trace page (trace::RenderHtml) served: its one inline <style> allowed by hash, its
// figures as data: images, and still no script at all.
void ServeTracePage(App& app, const std::string& id, Response& res) {
  auto path = trace::FindTrace(app.options.runs_dir, id);
  if (!path) return Refuse(res, 404, "no run " + id);
  auto t = trace::ReadTrace(*path);
  if (!t) return Refuse(res, 404, t.error().message);
  const std::string html = trace::RenderHtml(*t, path->parent_path());
  std::string styles;
  for (size_t at = html.find("<style>"); at != std::string::npos;
       at = html.find("<style>", at + 1)) {
    const size_t end = html.find("</style>", at);
    if (end == std::string::npos) break;
    styles += " " + CspHash(std::string_view(html).substr(at + 7, end - at - 7));
  }
  // Replaces the page's policy: two policies would both apply, and the page's blocks the style.
  res.headers.erase("Content-Security-Policy");
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; style-src" + styles +
                     "; img-src data:; base-uri 'none'; form-action 'none'; "
                     "frame-ancestors 'none'");
  res.set_content(html, "text/html; charset=utf-8");
}

void Info(App& app, Response& res) {
  json sources = json::array();
  int n = 0;
  for (const auto& s : app.engine.sources()) {
    sources.push_back({{"id", "s" + std::to_string(++n)},
                       {"name", fs::path(s.path).filename().string().empty()
                                    ? s.path
                                    : fs::path(s.path).filename().string()},
                       {"kind", engine::SourceFormatName(s.format)},
                       {"tables", s.tables}});
  }
  Send(res, 200,
       {{"version", app.options.version},
        {"dialect", engine::DialectName(app.engine.dialect())},
        {"model", app.options.model_label.empty() ? json(nullptr) : json(app.options.model_label)},
        {"python", app.options.allow_python},
        {"sources", sources}});
}

void Schema(App& app, Response& res) {
  json tables = json::array();
  for (const auto& card : app.engine.describe()) {
    tables.push_back({{"table", card.name},
                      {"source", fs::path(card.source).filename().string()},
                      {"rows", card.profiled ? json(card.row_count) : json(nullptr)},
                      {"text", engine::RenderCards({card})}});
  }
  Send(res, 200, {{"tables", tables}});
}

Result<agent::ThreadStore> Store(App& app) {
  if (app.options.threads_path.empty()) {
    return Fail(Error::Code::kUsage,
                "threads need a state directory: set HOME or XDG_STATE_HOME, or give --runs-dir");
  }
  return agent::ThreadStore::Open(app.options.threads_path);
}

// A thread store's error answered (HideThreadsPath); the server's log has the whole message.
void StoreFailed(App& app, Response& res, const quarry::Error& e) {
  const std::string message = HideThreadsPath(e.message, app.options.threads_path);
  if (e.code != Error::Code::kUsage) std::cerr << "quarry serve: " << e.message << "\n";
  Refuse(res, e.code == Error::Code::kUsage ? 400 : 500, message);
}

// What the page reads of a stored turn's status, typed here so it compares no names: the
// status in words (trace::StopHeading), and whether the turn answered, runs, or waits on a reply.
void DescribeTurn(json& item, const std::string& status) {
  const bool running = status == agent::kTurnRunning;
  const auto reason = trace::ParseStopReason(status);
  item["heading"] = running  ? std::string("Still running")
                    : reason ? std::string(trace::StopHeading(*reason))
                             : "No answer: " + status;
  item["answered"] = reason == trace::StopReason::kAnswered;
  item["running"] = running;
  item["waiting"] = reason == trace::StopReason::kClarification;
}

void Threads(App& app, Response& res) {
  auto store = Store(app);
  if (!store) return StoreFailed(app, res, store.error());
  auto list = store->List();
  if (!list) return StoreFailed(app, res, list.error());
  json out = json::array();
  for (const auto& t : *list) {
    json item = agent::ThreadJson(t);
    item.erase("sources");  // paths of the user's files: the page names sources by id
    if (t.turn_count > 0) {
      item["question"] = t.first_question;
      item["status"] = t.last_status;
      DescribeTurn(item, t.last_status);
    }
    out.push_back(item);
  }
  Send(res, 200, {{"threads", out}});
}

void Thread(App& app, const Request& req, Response& res, const std::string& name) {
  auto store = Store(app);
  if (!store) return StoreFailed(app, res, store.error());
  if (auto v = agent::ValidateThreadName(name); !v) return Refuse(res, 400, v.error().message);
  auto found = store->Find(name);
  if (!found) return StoreFailed(app, res, found.error());
  if (!*found) return Refuse(res, 404, "no thread named \"" + name + "\"");
  if (req.method == "GET") {
    json turns = json::array();
    for (const auto& turn : (*found)->turns) {
      json item = agent::TurnJson(turn);
      DescribeTurn(item, turn.status);
      turns.push_back(std::move(item));
    }
    return Send(res, 200, {{"name", name}, {"turns", turns}});
  }
  if (req.method == "DELETE") {
    if (auto d = store->Delete(name); !d) return StoreFailed(app, res, d.error());
    return Send(res, 200, {{"deleted", true}});
  }
  auto body = Body(req, res);
  if (!body) return;
  auto new_name = Field(*body, "name", res, 256);
  if (!new_name) return;
  if (auto r = store->Rename(name, *new_name); !r) return StoreFailed(app, res, r.error());
  Send(res, 200, {{"name", *new_name}});
}

// Keeps a run's clarification reply in the glossary, on the user's click: the only write the
// page can cause, to the knowledge files, never the data.
void Remember(App& app, const Request& req, Response& res) {
  const std::string id = req.matches[1].str();
  auto body = Body(req, res);
  if (!body) return;
  if (body->contains("term") && !(*body)["term"].is_string()) {
    return Refuse(res, 400, "term must be a string: the phrase to keep");
  }
  const std::string term = body->value("term", std::string());
  auto kept = app.runs.knowledge().Keep(app.options.runs_dir, id, term);
  if (!kept) {  // the page is told what went wrong, not where the folders are
    std::string message = kept.error().message;
    std::error_code ec;
    const std::pair<std::string, const char*> folders[] = {
        {app.options.config.glossary_dir.string(), "the knowledge folder"},
        {std::filesystem::absolute(app.options.runs_dir, ec).string(), "the runs folder"},
        {app.options.runs_dir.string(), "the runs folder"}};
    for (const auto& [dir, name] : folders) {
      for (size_t at; !dir.empty() && (at = message.find(dir)) != std::string::npos;) {
        message.replace(at, dir.size(), name);
      }
    }
    return Refuse(res, 409, message);
  }
  // The run's outcome, kept in memory, no longer offers what the glossary now holds.
  if (auto state = app.runs.Find(id)) {
    std::lock_guard lock(state->mu);
    json left = json::array();
    const json offers = state->outcome.value("glossary_offers", json::array());
    for (const json& o : offers) {
      if (!term.empty() && o.value("term", "") != term) left.push_back(o);
    }
    state->outcome["glossary_offers"] = std::move(left);
  }
  Send(res, 200, {{"kept", kept->file + ":" + std::to_string(kept->line)}});
}

void Ask(App& app, const Request& req, Response& res) {
  auto body = Body(req, res);
  if (!body) return;
  auto question = Field(*body, "question", res);
  auto thread = question ? Field(*body, "thread", res, 256) : std::nullopt;
  if (!question || !thread) return;
  if (Trim(*question).empty()) return Refuse(res, 400, "the question is empty: ask something");
  if (!thread->empty()) {
    if (auto v = agent::ValidateThreadName(*thread); !v) return Refuse(res, 400, v.error().message);
  }
  if (!app.rate.Take(req.remote_addr)) {
    res.set_header("Retry-After", "60");
    return Refuse(res, 429,
                  "too many questions: at most " +
                      std::to_string(app.options.questions_per_minute) +
                      " a minute; wait and ask again");
  }
  const std::string id = trace::NewRunId();
  auto state =
      app.runs.Submit(id, *question, thread->empty() ? ThreadNameFor(*question, id) : *thread);
  if (!state) {
    res.set_header("Retry-After", "5");
    return Refuse(res, 503,
                  "busy: " + std::to_string(app.options.max_running) +
                      " questions are running and " + std::to_string(app.options.max_queued) +
                      " waiting; ask again when one has finished");
  }
  Send(res, 202, {{"run_id", state->id}, {"thread", state->thread}});
}

// Each trace event as "event: trace", then "event: outcome" and the end of the stream. A page
// that reconnects (Last-Event-ID) gets the events after the last one it saw.
void Events(App& app, const Request& req, Response& res, const std::string& id) {
  auto state = app.runs.Find(id);
  if (!state) {
    // A run this server did not start, or finished long ago: its outcome from the trace.
    auto t = ReadRun(app, id);
    if (!t) return Refuse(res, 404, "no run " + id);
    const json outcome = OutcomeFor(*t, t->thread, t->thread_turn, app.runs.knowledge());
    res.set_header("Cache-Control", "no-store");
    res.set_content("event: outcome\ndata: " +
                        outcome.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n",
                    "text/event-stream");
    return;
  }
  if (++app.streams > kMaxStreams) {
    --app.streams;
    return Refuse(res, 503, "busy: too many pages follow runs; close one and reload");
  }
  size_t next = 0;
  if (req.has_header("Last-Event-ID")) {
    next = static_cast<size_t>(
        std::strtoull(req.get_header_value("Last-Event-ID").c_str(), nullptr, 10));
  }
  auto sent = std::make_shared<size_t>(next);
  res.set_chunked_content_provider(
      "text/event-stream",
      [state, sent](size_t, httplib::DataSink& sink) {
        std::string chunk;
        bool finished = false;
        {
          std::unique_lock lock(state->mu);
          state->changed.wait_for(lock, std::chrono::seconds(15),
                                  [&] { return state->finished || state->events.size() > *sent; });
          for (; *sent < state->events.size(); ++*sent) {
            chunk += "id: " + std::to_string(*sent + 1) +
                     "\nevent: trace\ndata: " + state->events[*sent] + "\n\n";
          }
          if (state->finished) {
            finished = true;
            chunk += "event: outcome\ndata: " +
                     state->outcome.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
          }
        }
        if (chunk.empty()) chunk = ": waiting\n\n";  // keeps proxies and the page's timer alive
        if (!sink.is_writable() || !sink.write(chunk.data(), chunk.size())) return false;
        if (finished) sink.done();
        return true;
      },
      [&app](bool) { --app.streams; });
}

void Sql(App& app, const Request& req, Response& res) {
  auto body = Body(req, res);
  if (!body) return;
  auto sql = Field(*body, "sql", res, kMaxBodyBytes);
  if (!sql) return;
  if (Trim(*sql).empty()) return Refuse(res, 400, "the SQL is empty");
  int max_rows = 1000;
  if (body->contains("max_rows") && !(*body)["max_rows"].is_null()) {
    const json& given = (*body)["max_rows"];
    if (!given.is_number_integer() || given.get<int64_t>() < 1 ||
        given.get<int64_t>() > kMaxSqlRows) {
      return Refuse(res, 400,
                    "\"max_rows\" must be a whole number from 1 to " + std::to_string(kMaxSqlRows));
    }
    max_rows = given.get<int>();
  }
  engine::Limits limits = app.options.config.limits;
  limits.max_rows = max_rows;
  const auto started = std::chrono::steady_clock::now();
  // Through the engine's own guard, as `quarry sql` and the model's run_sql are.
  auto outcome = app.engine.Query(*sql, limits);
  if (!outcome) {
    return Send(res, 400,
                {{"error", outcome.error().message},
                 {"failure_class", FailureClassName(outcome.error().failure_class)}});
  }
  json columns = json::array();
  for (size_t i = 0; i < outcome->columns.size(); ++i) {
    columns.push_back({{"name", outcome->columns[i]},
                       {"type", i < outcome->types.size() ? outcome->types[i] : ""}});
  }
  // Rows past kMaxSqlResultBytes are left out, and the answer says so: a few wide rows must not
  // make a response of hundreds of megabytes.
  json rows = agent::RowsJson(*outcome, outcome->rows.size());
  size_t bytes = 0, kept = 0;
  for (; kept < rows.size(); ++kept) {
    bytes += rows[kept].dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
    if (bytes > kMaxSqlResultBytes) break;
  }
  const bool cut = kept < rows.size();
  if (cut) rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(kept), rows.end());
  Send(res, 200,
       {{"columns", columns},
        {"rows", std::move(rows)},
        {"row_count", outcome->row_count},
        {"truncated", outcome->truncated() || cut},
        {"cut_at_bytes", cut ? json(kMaxSqlResultBytes) : json(nullptr)},
        {"elapsed_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - started)
                           .count()}});
}

void Mcp(App& app, const Request& req, Response& res) {
  if (req.method != "POST" && req.method != "DELETE") {
    // No server-to-client stream is offered (the spec allows 405 here).
    res.status = 405;
    res.set_header("Allow", "POST, DELETE");
    return;
  }
  const std::string session = req.get_header_value("Mcp-Session-Id");
  mcp::HttpEndpoint::Reply reply;
  if (req.method == "DELETE") {
    reply = app.mcp.Delete(session);
  } else {
    if (!Lower(req.get_header_value("Content-Type")).starts_with("application/json")) {
      return Refuse(res, 415, "send the message as Content-Type: application/json");
    }
    reply = app.mcp.Post(req.body, session, req.get_header_value("MCP-Protocol-Version"));
  }
  res.status = reply.status;
  if (!reply.session_id.empty()) res.set_header("Mcp-Session-Id", reply.session_id);
  if (!reply.body.empty()) res.set_content(reply.body, "application/json");
}

// The page's own files, by name; anything else is 404.
void Page(const std::string& name, Response& res) {
  const auto& files = EmbeddedWeb();
  auto it = files.find(name);
  if (it == files.end()) return Refuse(res, 404, "not found");
  const std::string type = name.ends_with(".js")    ? "text/javascript; charset=utf-8"
                           : name.ends_with(".css") ? "text/css; charset=utf-8"
                                                    : "text/html; charset=utf-8";
  res.set_content(it->second, type);
}

// Runs before every route: the Host, the token (swapped for a cookie on the first visit), and
// the origin of anything that changes state. Refusals are answered here.
Handled Check(App& app, const Request& req, Response& res) {
  SecurityHeaders(res);
  // Two of a header the checks read would leave which one counts to each reader (RFC 9110
  // 5.3: these are never lists).
  for (const char* name : {"Host", "Origin", "Authorization", "Cookie", "Sec-Fetch-Site",
                           "Content-Type", "Content-Length", "Mcp-Session-Id"}) {
    if (req.get_header_value_count(name) > 1) {
      Refuse(res, 400, std::string("the request has more than one ") + name + " header");
      return Handled::Handled;
    }
  }
  if (!app.gate.HostAllowed(req.get_header_value("Host"))) {
    Refuse(res, 403,
           "this server answers only to 127.0.0.1, localhost and the names given with "
           "--allow-host (a page under another name is refused: DNS rebinding)");
    return Handled::Handled;
  }
  if (req.method == "GET" && req.path == "/" && req.has_param("token")) {
    if (!ConstantTimeEqual(req.get_param_value("token"), app.gate.token())) {
      Refuse(res, 401, "this link's token is not this server's: use the URL quarry serve printed");
      return Handled::Handled;
    }
    // The token leaves the address bar (and the history) at once.
    res.set_header("Set-Cookie", app.gate.Cookie());
    res.set_redirect("/", 303);
    return Handled::Handled;
  }
  if (app.gate.Authenticate(req) == Gate::Auth::kNone) {
    Refuse(res, 401,
           "not signed in: open the URL quarry serve printed (it carries a one-time token), or "
           "send Authorization: Bearer TOKEN");
    return Handled::Handled;
  }
  const bool changes = req.method != "GET" && req.method != "HEAD";
  if (changes && !app.gate.SameOrigin(req)) {
    Refuse(res, 403, "refused: a request that changes something must come from quarry's own page");
    return Handled::Handled;
  }
  // The library reads a POST, PUT or PATCH body without a length until the client closes (a 5 s
  // wait, then an empty 400): such a request is answered at once instead. (A DELETE without one
  // is read as empty.)
  const bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
  if (has_body && !req.has_header("Content-Length") &&
      Lower(req.get_header_value("Transfer-Encoding")).find("chunked") == std::string::npos) {
    Refuse(res, 411,
           "the request has no Content-Length: send one, 0 for no body (curl: -d '' or "
           "--json '{}')");
    return Handled::Handled;
  }
  return Handled::Unhandled;
}

}  // namespace

void Route(httplib::Server& server, App& app) {
  server.set_pre_routing_handler(
      [&app](const Request& req, Response& res) { return Check(app, req, res); });
  server.Get("/", [](const Request&, Response& res) { Page("index.html", res); });
  server.Get("/page.js", [](const Request&, Response& res) { Page("page.js", res); });
  server.Get("/outcome.js", [](const Request&, Response& res) { Page("outcome.js", res); });
  server.Get("/app.js", [](const Request&, Response& res) { Page("app.js", res); });
  server.Get("/app.css", [](const Request&, Response& res) { Page("app.css", res); });
  server.Get("/favicon.ico", [](const Request&, Response& res) { res.status = 204; });
  server.Get("/api/info", [&app](const Request&, Response& res) { Info(app, res); });
  server.Get("/api/schema", [&app](const Request&, Response& res) { Schema(app, res); });
  server.Get("/api/threads", [&app](const Request&, Response& res) { Threads(app, res); });
  auto thread = [&app](const Request& req, Response& res) {
    Thread(app, req, res, req.matches[1].str());
  };
  server.Get("/api/threads/(.+)", thread);
  server.Patch("/api/threads/(.+)", thread);
  server.Delete("/api/threads/(.+)", thread);
  server.Post("/api/ask", [&app](const Request& req, Response& res) { Ask(app, req, res); });
  server.Post("/api/sql", [&app](const Request& req, Response& res) { Sql(app, req, res); });
  server.Get(
      std::string("/api/runs/") + kRunId + "/events",
      [&app](const Request& req, Response& res) { Events(app, req, res, req.matches[1].str()); });
  server.Get(std::string("/api/runs/") + kRunId, [&app](const Request& req, Response& res) {
    const std::string id = req.matches[1].str();
    if (auto state = app.runs.Find(id)) {
      std::lock_guard lock(state->mu);
      json out = {{"run_id", id}, {"running", !state->finished}};
      if (state->finished) out["outcome"] = state->outcome;
      return Send(res, 200, out);
    }
    auto t = ReadRun(app, id);
    if (!t) return Refuse(res, 404, "no run " + id);
    Send(res, 200,
         {{"run_id", id},
          {"running", false},
          {"outcome", OutcomeFor(*t, t->thread, t->thread_turn, app.runs.knowledge())}});
  });
  server.Post(std::string("/api/runs/") + kRunId + "/stop",
              [&app](const Request& req, Response& res) {
                const std::string id = req.matches[1].str();
                switch (app.runs.Stop(id)) {
                  case Runs::Stopped::kStopping:
                    return Send(res, 202, {{"stopping", true}});
                  case Runs::Stopped::kDropped:
                    return Send(res, 200, {{"stopped", true}});
                  case Runs::Stopped::kFinished:
                    break;
                  case Runs::Stopped::kUnknown:
                    if (!ReadRun(app, id)) return Refuse(res, 404, "no run " + id);
                    break;
                }
                Refuse(res, 409, "run " + id + " has already finished: nothing to stop");
              });
  server.Post(std::string("/api/runs/") + kRunId + "/remember",
              [&app](const Request& req, Response& res) { Remember(app, req, res); });
  server.Get(std::string("/api/runs/") + kRunId + "/figures/(chart-[0-9]+\\.(svg|png))",
             [&app](const Request& req, Response& res) {
               const std::string id = req.matches[1].str(), name = req.matches[2].str();
               auto t = ReadRun(app, id);
               if (!t) return Refuse(res, 404, "no run " + id);
               // Only a figure the run made, from the run's own folder.
               const bool made = std::ranges::any_of(t->artifacts, [&](const std::string& a) {
                 return fs::path(a).filename() == name;
               });
               auto bytes = made
                                ? ReadFileText(fs::path(app.options.runs_dir) / id / name, "figure")
                                : Result<std::string>(Fail(Error::Code::kUsage, "no figure"));
               if (!bytes) return Refuse(res, 404, "no figure " + name + " in run " + id);
               res.set_content(*bytes, name.ends_with(".svg") ? "image/svg+xml" : "image/png");
             });
  server.Get(std::string("/runs/") + kRunId + "/view", [&app](const Request& req, Response& res) {
    ServeTracePage(app, req.matches[1].str(), res);
  });
  auto mcp = [&app](const Request& req, Response& res) { Mcp(app, req, res); };
  server.Post("/mcp", mcp);
  server.Get("/mcp", mcp);
  server.Delete("/mcp", mcp);
}

}  // namespace quarry::serve::internal
