// MCP over Streamable HTTP (mcp.h, HttpEndpoint): one Dispatcher per session over one tool box,
// so a session's lifecycle (initialize first, its negotiated revision) is its own while the
// engine and the tools are shared.
#include <algorithm>
#include <map>
#include <mutex>

#include "quarry/common/random.h"
#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {

namespace {

// Sessions kept at once; a new one past this ends the least recently used.
constexpr size_t kMaxSessions = 64;

bool KnownRevision(const std::string& v) {
  return std::ranges::any_of(kProtocolVersions, [&](const char* k) { return v == k; });
}

}  // namespace

struct HttpEndpoint::Impl {
  Impl(const ServerOptions& options, engine::Engine& engine)
      : tools(options, engine), instructions(Instructions(engine, options)) {}

  struct Session {
    std::unique_ptr<Dispatcher> dispatcher;
    std::mutex mu;      // a session's messages are handled one at a time, in arrival order
    uint64_t used = 0;  // last use, by a counter
    // The request running now (its id compactly dumped) and its stop, guarded by Impl::mu: a
    // notifications/cancelled for it is handled without waiting for the session's turn.
    std::string running_id;
    std::stop_source running_stop;
  };

  ToolBox tools;
  std::string instructions;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Session>> sessions;
  uint64_t clock = 0;
  std::stop_source stopping;  // StopAll: every running call stops, and new ones stop at once
};

HttpEndpoint::HttpEndpoint(const ServerOptions& options, engine::Engine& engine)
    : impl_(std::make_unique<Impl>(options, engine)) {}
HttpEndpoint::~HttpEndpoint() = default;

HttpEndpoint::Reply HttpEndpoint::Post(std::string_view body, const std::string& session_id,
                                       const std::string& protocol_version) {
  auto error = [](int status, const json& id, int code, const std::string& message) {
    return Reply{status, DumpLine(ErrorResponse(id, code, message)), ""};
  };
  if (!protocol_version.empty() && !KnownRevision(protocol_version)) {
    return error(400, nullptr, kInvalidRequest,
                 "Bad Request: MCP-Protocol-Version " + protocol_version +
                     " is not supported (supported: 2025-11-25, 2025-06-18, 2025-03-26)");
  }
  const json message = json::parse(body, nullptr, false);
  const bool initialize = message.is_object() && message.value("method", "") == "initialize";

  std::shared_ptr<Impl::Session> session;
  std::string new_id;
  {
    std::lock_guard lock(impl_->mu);
    if (initialize) {
      auto id = RandomHex(16);
      if (!id) return error(500, nullptr, kInternalError, id.error().message);
      new_id = *id;
      if (impl_->sessions.size() >= kMaxSessions) {
        auto oldest = std::ranges::min_element(
            impl_->sessions, {}, [](const auto& entry) { return entry.second->used; });
        impl_->sessions.erase(oldest);
      }
      session = std::make_shared<Impl::Session>();
      session->dispatcher = std::make_unique<Dispatcher>(impl_->tools, impl_->instructions);
      impl_->sessions[new_id] = session;
    } else if (session_id.empty()) {
      return error(400, nullptr, kInvalidRequest,
                   "Bad Request: no Mcp-Session-Id header; send initialize first and then the "
                   "session id it returned with every message");
    } else if (auto it = impl_->sessions.find(session_id); it != impl_->sessions.end()) {
      session = it->second;
    } else {
      return error(404, nullptr, kInvalidRequest,
                   "Not Found: no session " + session_id + " (it ended); initialize again");
    }
    session->used = ++impl_->clock;
    // A cancellation names a request of this session that is running (its POST waits for it).
    if (message.is_object() && message.value("method", "") == "notifications/cancelled" &&
        !message.contains("id")) {
      const json params = message.value("params", json::object());
      if (params.is_object() && params.contains("requestId") && !session->running_id.empty() &&
          params["requestId"].dump() == session->running_id) {
        session->running_stop.request_stop();
      }
      return Reply{202, "", ""};
    }
  }
  // The dispatcher answers tools/call inline here (no Calls wired): the POST waits for it.
  std::lock_guard turn(session->mu);
  std::stop_source stop;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopping.stop_requested()) stop.request_stop();
    const bool request =
        message.is_object() && message.contains("id") && message.contains("method");
    session->running_id = request ? message["id"].dump() : "";
    session->running_stop = stop;
  }
  std::optional<json> response = session->dispatcher->Handle(body, true, stop.get_token());
  {
    std::lock_guard lock(impl_->mu);
    session->running_id.clear();
    session->running_stop = std::stop_source(std::nostopstate);
  }
  if (!response) return Reply{202, "", new_id};
  return Reply{200, DumpLine(*response), new_id};
}

void HttpEndpoint::StopAll() {
  std::lock_guard lock(impl_->mu);
  impl_->stopping.request_stop();
  for (auto& [id, session] : impl_->sessions) {
    if (session->running_stop.stop_possible()) session->running_stop.request_stop();
  }
}

HttpEndpoint::Reply HttpEndpoint::Delete(const std::string& session_id) {
  if (session_id.empty()) {
    return Reply{400,
                 DumpLine(ErrorResponse(nullptr, kInvalidRequest,
                                        "Bad Request: no Mcp-Session-Id header: name the "
                                        "session to end")),
                 ""};
  }
  std::lock_guard lock(impl_->mu);
  if (impl_->sessions.erase(session_id) == 0) {
    return Reply{404,
                 DumpLine(ErrorResponse(nullptr, kInvalidRequest,
                                        "Not Found: no session " + session_id + " (it ended)")),
                 ""};
  }
  return Reply{200, "", ""};
}

}  // namespace quarry::mcp
