// JSON-RPC 2.0 for MCP: validates each message, keeps the lifecycle (initialize before anything
// but ping), answers requests at once except tools/call (queued on the scheduler), routes
// notifications/cancelled to it, and is the one place where exceptions become protocol errors
// (-32603). Tool failures never get here: they are isError results.
#include <iostream>
#include <mutex>

#include "quarry/mcp/mcp_internal.h"
#include "quarry/common/text.h"
#include "quarry/common/json.h"
#include "quarry/engine/engine.h"

namespace quarry::mcp {

void Log(std::string_view message) {
  // One write per line, under a lock: workers log concurrently.
  static std::mutex mu;
  // Method names, a client's name and errors are the client's or the data's text: escaped onto
  // one line, so they cannot drive the terminal the server's stderr may be (issue 22).
  const std::string line = "quarry mcp: " + engine::PromptText(message, 8000) + "\n";
  std::lock_guard lock(mu);
  std::cerr << line << std::flush;
}

std::string DumpLine(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

json ErrorResponse(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

std::optional<std::string> Elicit(ClientRequests& requests, const agent::Clarification& asked,
                                  const StopToken& stop) {
  // A flat schema of one string (MCP allows only primitive properties); the model's choices
  // become its enum, so a client can offer them as a pick list.
  json reply = {{"type", "string"}, {"title", "Your answer"}};
  if (!asked.choices.empty()) reply["enum"] = asked.choices;
  const json params = {
      {"message", "quarry's analyst asks: " + asked.question},
      {"requestedSchema",
       {{"type", "object"}, {"properties", {{"reply", reply}}}, {"required", {"reply"}}}}};
  const std::optional<json> result =
      requests.Send("elicitation/create", params, stop, kElicitationWait);
  if (!result || !result->is_object()) return std::nullopt;
  const json action = result->value("action", json());
  if (action != "accept") {
    Log("elicitation " + (action.is_string() ? action.get<std::string>() : std::string("?")) +
        ": the run ends waiting on the clarification");
    return std::nullopt;
  }
  const json content = result->value("content", json());
  if (!content.is_object() || !content.contains("reply") || !content["reply"].is_string()) {
    Log("elicitation accepted without a string \"reply\"; treated as declined");
    return std::nullopt;
  }
  std::string text = content["reply"].get<std::string>();
  if (text.find_first_not_of(" \t\n") == std::string::npos) return std::nullopt;
  return text.substr(0, Utf8Prefix(text, 2000));
}

Dispatcher::Dispatcher(ToolBox& tools, std::string instructions)
    : tools_(tools), instructions_(std::move(instructions)) {}

std::optional<json> Dispatcher::Handle(std::string_view line, bool complete, StopToken stop) {
  std::string problem;
  const json message = ParseJson(line, &problem);
  if (message.is_discarded() && problem != "not valid JSON") {
    return ErrorResponse(nullptr, kParseError, "Parse error: " + problem);
  }
  if (message.is_discarded()) {
    if (!complete) {
      Log("ignoring an incomplete last line that is not JSON");
      return std::nullopt;
    }
    return ErrorResponse(nullptr, kParseError, "Parse error: the message is not valid JSON");
  }
  if (message.is_array()) {
    return ErrorResponse(nullptr, kInvalidRequest,
                         "Invalid Request: batches are not supported (MCP removed them in "
                         "2025-06-18); send one message at a time");
  }
  if (!message.is_object()) {
    return ErrorResponse(nullptr, kInvalidRequest,
                         "Invalid Request: a message must be a JSON object");
  }
  const bool has_id = message.contains("id");
  json id = nullptr;
  if (has_id) {
    // MCP ids are strings or numbers, never null (a request's id must be answerable).
    if (!message["id"].is_string() && !message["id"].is_number()) {
      return ErrorResponse(nullptr, kInvalidRequest,
                           "Invalid Request: \"id\" must be a string or a number");
    }
    id = message["id"];
  }
  if (!message.contains("jsonrpc") || message["jsonrpc"] != "2.0") {
    return ErrorResponse(id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  }
  if (!message.contains("method") && (message.contains("result") || message.contains("error"))) {
    // A response to one of this server's requests (elicitation/create); never answered.
    if (!requests_ || !requests_->Deliver(message))
      Log("ignoring a response to no request of ours");
    return std::nullopt;
  }
  if (!message.contains("method") || !message["method"].is_string()) {
    return ErrorResponse(id, kInvalidRequest, "Invalid Request: \"method\" must be a string");
  }
  const std::string method = message["method"].get<std::string>();
  json params = message.value("params", json::object());
  if (params.is_null()) params = json::object();
  if (!params.is_object() && !params.is_array()) {
    return ErrorResponse(id, kInvalidRequest,
                         "Invalid Request: \"params\" must be an object or an array");
  }
  if (!has_id) {
    Notification(method, params);
    return std::nullopt;
  }
  if (!params.is_object()) {
    return ErrorResponse(id, kInvalidParams, "Invalid params: MCP takes \"params\" as an object");
  }
  if (method == "tools/call" && initialized_) return SubmitCall(id, params, stop);
  MethodResult result;
  try {
    result = Request(method, params);
  } catch (const std::exception& e) {
    Log(method + " failed: " + e.what());
    result = std::unexpected(RpcError{kInternalError, std::string("Internal error: ") + e.what()});
  } catch (...) {
    result = std::unexpected(RpcError{kInternalError, "Internal error"});
  }
  if (!result) return ErrorResponse(id, result.error().code, result.error().message);
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(*result)}};
}

void Dispatcher::Notification(const std::string& method, const json& params) {
  // notifications/initialized needs no action: requests are served once initialize has been
  // answered.
  if (method == "notifications/cancelled") {
    // MCP "Cancellation": a malformed one, or one for an unknown or finished request, is
    // ignored. Only tools/call runs long enough to be cancelled; everything else is answered
    // before the next line is read.
    if (!params.is_object() || !params.contains("requestId") ||
        !(params["requestId"].is_string() || params["requestId"].is_number())) {
      Log("ignoring notifications/cancelled without a string or number requestId");
      return;
    }
    const json reason = params.value("reason", json());
    if (calls_)
      calls_->Cancel(params["requestId"], reason.is_string() ? reason.get<std::string>() : "");
    return;
  }
  if (method != "notifications/initialized") Log("ignoring notification " + method);
}

Dispatcher::MethodResult Dispatcher::Request(const std::string& method, const json& params) {
  if (method == "ping") return json::object();
  if (method == "initialize") {
    // One session, one lifecycle: a second initialize would switch the protocol mid-session.
    if (initialized_) {
      return std::unexpected(RpcError{kInvalidRequest, "Invalid Request: already initialized"});
    }
    return Initialize(params);
  }
  if (!initialized_) {
    // MCP "Lifecycle": the client sends nothing but pings before the initialize response.
    return std::unexpected(RpcError{
        kInvalidRequest, "Invalid Request: the server is not initialized; send initialize first"});
  }
  if (method == "tools/list") {
    return json{{"tools", tools_.List(protocol_version_ != "2025-03-26")}};
  }
  return std::unexpected(RpcError{kMethodNotFound, "Method not found: " + method});
}

Dispatcher::MethodResult Dispatcher::Initialize(const json& params) {
  const json requested = params.value("protocolVersion", json());
  protocol_version_ = kProtocolVersions[0];
  for (const char* v : kProtocolVersions) {
    if (requested == v) protocol_version_ = v;
  }
  initialized_ = true;
  std::string client = "an unnamed client";
  if (params.contains("clientInfo") && params["clientInfo"].is_object()) {
    const json& info = params["clientInfo"];
    if (info.contains("name") && info["name"].is_string()) client = info["name"].get<std::string>();
  }
  // MCP "Elicitation": only a client that declares the capability is sent elicitation/create.
  client_elicits_ = params.contains("capabilities") && params["capabilities"].is_object() &&
                    params["capabilities"].contains("elicitation") &&
                    params["capabilities"]["elicitation"].is_object();
  Log("initialized by " + client + ", protocol " + protocol_version_ +
      (client_elicits_ ? ", with elicitation" : ""));
  return json{{"protocolVersion", protocol_version_},
              {"capabilities", {{"tools", {{"listChanged", false}}}}},
              {"serverInfo", {{"name", kServerName}, {"version", kServerVersion}}},
              {"instructions", instructions_}};
}

std::expected<PendingCall, Dispatcher::RpcError> Dispatcher::CheckCall(const json& id,
                                                                       const json& params) {
  if (!params.contains("name") || !params["name"].is_string()) {
    return std::unexpected(RpcError{kInvalidParams, "Invalid params: \"name\" must be a string"});
  }
  const std::string name = params["name"].get<std::string>();
  const McpTool* tool = tools_.Find(name);
  if (!tool) {
    return std::unexpected(RpcError{kInvalidParams, "Invalid params: unknown tool '" + name +
                                                        "'; the tools are: " + tools_.Names()});
  }
  PendingCall call;
  call.id = id;
  call.tool = tool;
  // Arguments that are not an object reach the tool's validation and come back as isError,
  // which the client's model can correct.
  call.arguments = params.value("arguments", json::object());
  if (call.arguments.is_null()) call.arguments = json::object();
  call.structured = protocol_version_ != "2025-03-26";
  // MCP "Progress": a token is a string or an integer; anything else asks for nothing.
  if (params.contains("_meta") && params["_meta"].is_object()) {
    const json token = params["_meta"].value("progressToken", json());
    if (token.is_string() || token.is_number_integer()) call.progress_token = token;
  }
  // Follow-ups of one ask_database thread run in the order they came, each seeing the last.
  if (tool->name == "ask_database" && call.arguments.is_object() &&
      call.arguments.contains("thread") && call.arguments["thread"].is_string()) {
    call.serial_key = "thread:" + call.arguments["thread"].get<std::string>();
  }
  // run_python's `last` is the result of the run_sql sent before it, as in a notebook; their
  // queries would take turns on the engine anyway.
  if (tool->name == "run_sql" || tool->name == "run_python") call.serial_key = "last";
  return call;
}

std::optional<json> Dispatcher::SubmitCall(const json& id, const json& params, StopToken stop) {
  auto call = CheckCall(id, params);
  if (!call) return ErrorResponse(id, call.error().code, call.error().message);
  if (calls_) return calls_->Submit(std::move(*call));
  CallContext context;
  context.stop = std::move(stop);
  return RunCall(*call, context);
}

json Dispatcher::RunCall(const PendingCall& call, const CallContext& given) {
  CallContext context = given;
  if (client_elicits_ && requests_) {
    context.ask_user = [requests = requests_, stop = given.stop](
                           const agent::Clarification& c) -> std::optional<std::string> {
      return Elicit(*requests, c, stop);
    };
  }
  try {
    json result = tools_.Call(*call.tool, call.arguments, call.structured, context);
    return json{{"jsonrpc", "2.0"}, {"id", call.id}, {"result", std::move(result)}};
  } catch (const std::exception& e) {
    Log("tools/call " + call.tool->name + " failed: " + e.what());
    return ErrorResponse(call.id, kInternalError, std::string("Internal error: ") + e.what());
  } catch (...) {
    return ErrorResponse(call.id, kInternalError, "Internal error");
  }
}

}  // namespace quarry::mcp
