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
  };

  ToolBox tools;
  std::string instructions;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Session>> sessions;
  uint64_t clock = 0;
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
  }
  // The dispatcher answers tools/call inline here (no Calls wired): the POST waits for it.
  std::lock_guard turn(session->mu);
  std::optional<json> response = session->dispatcher->Handle(body, true);
  if (!response) return Reply{202, "", new_id};
  return Reply{200, DumpLine(*response), new_id};
}

HttpEndpoint::Reply HttpEndpoint::Delete(const std::string& session_id) {
  std::lock_guard lock(impl_->mu);
  if (impl_->sessions.erase(session_id) == 0) return Reply{404, "", ""};
  return Reply{200, "", ""};
}

}  // namespace quarry::mcp
