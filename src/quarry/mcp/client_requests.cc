// Server-to-client requests (MCP "Elicitation"): a worker sends the request and waits; the
// reader thread hands the response back by id. The user's thinking time counts against no
// budget of the run; a stop request or the end of input ends the wait.
#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {

std::optional<json> ClientRequests::Send(const std::string& method, const json& params,
                                         const StopToken& stop, std::chrono::milliseconds wait) {
  Waiting waiting;
  std::string id;
  {
    std::lock_guard lock(mu_);
    if (closed_) return std::nullopt;
    // Prefixed ids never collide with a client's own request ids in our logs.
    id = "quarry-" + std::to_string(next_id_++);
    waiting_[id] = &waiting;
  }
  if (!write_({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}})) {
    std::lock_guard lock(mu_);
    waiting_.erase(id);
    return std::nullopt;
  }
  // Before the lock: a callback that runs at once (stop already requested) takes mu_ itself,
  // and the callback is destroyed only after the lock is released.
  std::stop_callback wake(stop, [this] {
    std::lock_guard inner(mu_);
    changed_.notify_all();
  });
  std::unique_lock lock(mu_);
  changed_.wait_for(
      lock, wait, [&] { return waiting.response.has_value() || closed_ || stop.stop_requested(); });
  waiting_.erase(id);
  if (!waiting.response) {
    lock.unlock();
    if (stop.stop_requested() && !closed_) {
      write_({{"jsonrpc", "2.0"},
              {"method", "notifications/cancelled"},
              {"params", {{"requestId", id}, {"reason", "the tool call was stopped"}}}});
    }
    Log(method + " " + id + ": no reply (" +
        (stop.stop_requested() ? "stopped"
         : closed_             ? "input ended"
                               : "timed out") +
        ")");
    return std::nullopt;
  }
  const json& response = *waiting.response;
  if (response.contains("error")) {
    Log(method + " " + id + " failed: " + DumpLine(response["error"]).substr(0, 200));
    return std::nullopt;
  }
  return response.value("result", json());
}

bool ClientRequests::Deliver(const json& message) {
  if (!message.contains("id") || !message["id"].is_string()) return false;
  std::lock_guard lock(mu_);
  const auto it = waiting_.find(message["id"].get<std::string>());
  if (it == waiting_.end()) return false;
  it->second->response = message;
  changed_.notify_all();
  return true;
}

void ClientRequests::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  changed_.notify_all();
}

}  // namespace quarry::mcp
