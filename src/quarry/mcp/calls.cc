// The tools/call scheduler: a fixed pool of workers runs calls while the reader goes on reading,
// so pings are answered at once and notifications/cancelled can reach a running call (MCP
// "Cancellation": stop the work, free its resources, send no response for it).
#include <algorithm>

#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {

Calls::Calls(RunFn run, WriteFn write) : run_(std::move(run)), write_(std::move(write)) {
  for (size_t i = 0; i < kMaxRunningCalls; ++i) workers_.emplace_back([this] { Work(); });
}

Calls::~Calls() {
  Drain();
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
  }
  changed_.notify_all();
  for (std::thread& w : workers_) w.join();
}

std::optional<json> Calls::Submit(PendingCall call) {
  std::lock_guard lock(mu_);
  size_t queued = 0;
  for (const Entry& e : entries_) {
    // An id names one request while it is in flight, or a cancel could not tell two apart.
    if (e.call.id == call.id && !e.cancelled) {
      return ErrorResponse(call.id, kInvalidRequest,
                           "Invalid Request: id " + call.id.dump() +
                               " belongs to a call still running; give each request its own id");
    }
    if (!e.running) ++queued;
  }
  if (queued >= kMaxQueuedCalls) {
    return ErrorResponse(call.id, kServerBusy,
                         "Server busy: " + std::to_string(kMaxRunningCalls) +
                             " tool calls are running and " + std::to_string(queued) +
                             " are waiting; retry when one has answered");
  }
  entries_.push_back(Entry{std::move(call), {}, false, false});
  changed_.notify_all();
  return std::nullopt;
}

void Calls::Cancel(const json& id, const std::string& reason) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->call.id != id || it->cancelled) continue;
    Log("request " + id.dump() + " (" + it->call.tool->name + ") cancelled" +
        (reason.empty() ? "" : ": " + reason) + "; no response will be sent");
    if (!it->running) {
      entries_.erase(it);  // never started: nothing to stop
      changed_.notify_all();
      return;
    }
    it->cancelled = true;
    it->stop.request_stop();
    return;
  }
  // Finished (answered already) or never seen: MCP says to ignore it.
}

void Calls::Drain(bool stop_all) {
  std::unique_lock lock(mu_);
  if (stop_all) client_gone_ = true;
  if (client_gone_) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->running) {
        it->stop.request_stop();
        ++it;
      } else {
        it = entries_.erase(it);
      }
    }
  }
  changed_.wait(lock, [this] { return entries_.empty(); });
}

std::list<Calls::Entry>::iterator Calls::NextRunnable() {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->running) continue;
    const std::string& key = it->call.serial_key;
    const bool key_busy = !key.empty() && std::any_of(entries_.begin(), it, [&](const Entry& e) {
      return e.running && e.call.serial_key == key;
    });
    // An earlier queued call of the same key goes first: keep looking past this one.
    const bool earlier_waiting =
        !key.empty() && std::any_of(entries_.begin(), it, [&](const Entry& e) {
          return !e.running && e.call.serial_key == key;
        });
    if (!key_busy && !earlier_waiting) return it;
  }
  return entries_.end();
}

void Calls::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    auto it = entries_.end();
    changed_.wait(lock, [&] {
      it = NextRunnable();
      return shutting_down_ || it != entries_.end();
    });
    if (it == entries_.end()) return;  // shutting down with nothing left to run
    it->running = true;
    // std::list iterators stay valid while other entries come and go; only this worker erases it.
    const PendingCall& call = it->call;
    CallContext context;
    context.stop = it->stop.get_token();
    if (!call.progress_token.is_null()) {
      // MCP "Progress": the count grows with every notification; none after the response, and
      // none once the call is cancelled (the lock orders them against Cancel).
      context.progress = [this, it, token = call.progress_token,
                          count = int64_t{0}](const std::string& message) mutable {
        std::lock_guard progress_lock(mu_);
        if (it->cancelled || client_gone_) return;
        const json note = {
            {"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params", {{"progressToken", token}, {"progress", ++count}, {"message", message}}}};
        if (!write_(note)) client_gone_ = true;
      };
    }
    lock.unlock();
    json response = run_(call, context);
    lock.lock();
    if (it->cancelled) {
      Log("request " + call.id.dump() + " stopped after its cancel; no response sent");
    } else if (!client_gone_ && !write_(response)) {
      Log("the client closed the connection");
      client_gone_ = true;
      for (Entry& e : entries_) e.stop.request_stop();
    }
    entries_.erase(it);
    changed_.notify_all();
  }
}

}  // namespace quarry::mcp
