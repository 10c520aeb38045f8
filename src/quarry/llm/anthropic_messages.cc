// The Messages API's JSON at the edge: Request -> request body with cache breakpoints, reply
// object -> Turn, error bodies -> text (see anthropic_internal.h).
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/common/names.h"
#include "quarry/llm/anthropic_internal.h"
#include "quarry/llm/client_internal.h"

namespace quarry::llm::internal {

using json = nlohmann::ordered_json;

namespace {

json TextBlock(std::string text) { return json{{"type", "text"}, {"text", std::move(text)}}; }

// The API accepts tool_use ids matching ^[a-zA-Z0-9_-]+$; ids from another provider or a
// fixture may hold other characters. The same mapping is applied to a tool_use and to the
// tool_result that answers it, so they still pair up.
std::string ToolUseId(const std::string& id) {
  if (id.empty()) return "toolu_unnamed";
  std::string out = id;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

// tool_use.input must be a JSON object: the API rejects the conversation otherwise. Arguments
// the model produced that are not one go back wrapped, so the model sees what it wrote.
json ToolInput(const std::string& raw) {
  if (raw.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  json parsed = ParseJson(raw);
  if (parsed.is_object()) return parsed;
  return json{{"invalid_json", raw}};
}

struct Outgoing {
  const char* role;
  json content = json::array();
};

// Appends `block` to the conversation, merging it into the last message when that has the
// same role (the API requires user and assistant to alternate). In a user message tool_result
// blocks must come before any text, so a result goes in front of the text already there.
void Append(std::vector<Outgoing>& turns, const char* role, json block) {
  if (turns.empty() || std::string_view(turns.back().role) != role) turns.push_back({role});
  json& content = turns.back().content;
  if (JsonString(block, "type") == "tool_result") {
    auto at = std::find_if(content.begin(), content.end(),
                           [](const json& b) { return JsonString(b, "type") != "tool_result"; });
    content.insert(at, std::move(block));
    return;
  }
  content.push_back(std::move(block));
}

json Ephemeral() { return json{{"type", "ephemeral"}}; }

// Anthropic's stop_reason in OpenAI's words (docs.anthropic.com, "Handling stop reasons").
constexpr NamePair<FinishReason> kAnthropicStopReasons[] = {
    {FinishReason::kNone, ""},
    {FinishReason::kStop, "end_turn"},
    {FinishReason::kStop, "stop_sequence"},
    {FinishReason::kToolCalls, "tool_use"},
    {FinishReason::kLength, "max_tokens"},
    {FinishReason::kContentFilter, "refusal"},
};
FinishReason FinishReasonOf(const std::string& stop_reason) {
  return ValueOf(kAnthropicStopReasons, stop_reason).value_or(FinishReason::kOther);
}

}  // namespace

// Cache breakpoints (Anthropic "Prompt caching": a request renders as tools, system, messages;
// a cache_control marker caches the prefix up to and including its block; at most 4 per
// request; a breakpoint looks back up to 20 blocks for an earlier cache entry):
//   1. the last tool: the tool schemas, the same for every call of every run;
//   2. the system prompt's block; when Message::cache_split falls inside it, the text is sent
//      as two blocks, the question-independent part first, and both are marked, so a new
//      question on the same data still reads tools + instructions from the cache (2 markers);
//   3. the last content block of the newest message: each call writes the conversation so
//      far, and the next call of the run (the same prefix plus one assistant turn and its tool
//      results, far fewer than 20 blocks) reads it back.
// That is 4 markers at most. Prefixes shorter than the model's minimum (1024 tokens for most
// models) are not cached and cost nothing extra.
json BuildMessagesBody(const ClientConfig& config, const Request& request, bool stream) {
  std::vector<Outgoing> turns;
  bool have_system = false;
  std::string system_text;
  size_t cache_split = 0;
  for (const Message& m : request.messages) {
    switch (m.role) {
      case Role::kSystem:
        if (!have_system) {
          have_system = true;
          system_text = m.content;
          cache_split = m.cache_split;
        } else if (!m.content.empty()) {
          // The API has one top-level system prompt. Folding a later system message into it
          // would change the cached prefix on every call and lose its place in the
          // conversation, so it goes where it was said, as user text.
          Append(turns, "user", TextBlock(m.content));
        }
        break;
      case Role::kUser:
        if (!m.content.empty()) Append(turns, "user", TextBlock(m.content));
        break;
      case Role::kAssistant:
        // Empty text blocks are rejected by the API.
        if (!m.content.empty()) Append(turns, "assistant", TextBlock(m.content));
        for (const ToolCall& call : m.tool_calls) {
          Append(turns, "assistant",
                 json{{"type", "tool_use"},
                      {"id", ToolUseId(call.id)},
                      {"name", call.name},
                      {"input", ToolInput(call.arguments_json)}});
        }
        break;
      case Role::kTool: {
        json result = {{"type", "tool_result"}, {"tool_use_id", ToolUseId(m.tool_call_id)}};
        if (!m.content.empty()) result["content"] = m.content;  // optional; "" is rejected
        Append(turns, "user", std::move(result));
        break;
      }
    }
  }

  json body = json::object();
  body["model"] = config.model;
  body["max_tokens"] = request.max_output_tokens.value_or(config.max_output_tokens);
  const std::optional<double> temperature =
      request.temperature ? request.temperature : config.temperature;
  if (temperature) body["temperature"] = std::clamp(*temperature, 0.0, 1.0);
  if (!system_text.empty()) {
    json system = json::array();
    if (cache_split > 0 && cache_split < system_text.size()) {
      system.push_back(TextBlock(system_text.substr(0, cache_split)));
      system.push_back(TextBlock(system_text.substr(cache_split)));
    } else {
      system.push_back(TextBlock(system_text));
    }
    for (json& block : system) block["cache_control"] = Ephemeral();
    body["system"] = std::move(system);
  }
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ToolSchema& tool : request.tools) {
      json entry = json::object();
      entry["name"] = tool.name;
      if (!tool.description.empty()) entry["description"] = tool.description;
      entry["input_schema"] = tool.parameters.is_object()
                                  ? tool.parameters
                                  : json{{"type", "object"}, {"properties", json::object()}};
      tools.push_back(std::move(entry));
    }
    tools.back()["cache_control"] = Ephemeral();
    body["tools"] = std::move(tools);
  }
  json messages = json::array();
  for (Outgoing& turn : turns) {
    messages.push_back(json{{"role", turn.role}, {"content", std::move(turn.content)}});
  }
  if (!messages.empty()) messages.back()["content"].back()["cache_control"] = Ephemeral();
  body["messages"] = std::move(messages);
  if (stream) body["stream"] = true;
  return body;
}

Result<Turn> ParseMessagesReply(const json& doc, const ClientConfig& config) {
  auto content = doc.is_object() ? doc.find("content") : doc.end();
  if (!doc.is_object() || content == doc.end() || !content->is_array()) {
    return Fail(Error::Code::kModel, "reply has no content array: " + Snippet(Dump(doc)));
  }
  Turn turn;
  for (const json& block : *content) {
    const std::string type = JsonString(block, "type");
    if (type == "text") {
      turn.content += JsonString(block, "text");
    } else if (type == "tool_use") {
      ToolCall call;
      call.id = JsonString(block, "id");
      if (call.id.empty()) call.id = "call_" + std::to_string(turn.tool_calls.size());
      call.name = JsonString(block, "name");
      auto input = block.find("input");
      // A string is an input a stream left unparseable: kept verbatim for the agent to judge.
      if (input != block.end() && input->is_string()) {
        call.arguments_json = input->get<std::string>();
      } else if (input != block.end() && !input->is_null()) {
        call.arguments_json = Dump(*input);
      }
      turn.tool_calls.push_back(std::move(call));
    }
    // thinking and server-tool blocks are not requested; anything else is skipped.
  }
  turn.finish_reason = FinishReasonOf(JsonString(doc, "stop_reason"));

  static const json kNoUsage = json::object();
  const json* usage_ptr = ObjectField(doc, "usage");
  const json& usage = usage_ptr ? *usage_ptr : kNoUsage;
  turn.usage.cached_tokens = CountField(usage, "cache_read_input_tokens");
  turn.usage.cache_write_tokens = CountField(usage, "cache_creation_input_tokens");
  // Anthropic's input_tokens counts only the tokens after the last cache breakpoint.
  turn.usage.input_tokens =
      CountField(usage, "input_tokens") + turn.usage.cached_tokens + turn.usage.cache_write_tokens;
  turn.usage.output_tokens = CountField(usage, "output_tokens");
  const auto priced = config.prices.Cost(config.model, turn.usage);
  turn.cost_usd = priced.value_or(0.0);
  turn.cost_known = priced.has_value();
  turn.cache_saved_usd = config.prices.CacheSavings(config.model, turn.usage);
  return turn;
}

std::string AnthropicErrorType(const json& doc) {
  const json* error = ObjectField(doc, "error");
  return error ? JsonString(*error, "type") : std::string();
}

std::string AnthropicErrorText(const std::string& body) {
  if (body.empty()) return "(empty body)";
  const json doc = ParseJson(body);
  if (const json* error = ObjectField(doc, "error")) {
    const std::string type = JsonString(*error, "type");
    const std::string message = JsonString(*error, "message");
    if (!type.empty() || !message.empty()) {
      return Snippet(type.empty() ? message : message.empty() ? type : type + ": " + message);
    }
  }
  if (doc.is_object()) {
    const std::string message = JsonString(doc, "message");
    if (!message.empty()) return Snippet(message);
  }
  return Snippet(body);
}

bool IsRetryableErrorType(const std::string& type) {
  return type == "overloaded_error" || type == "api_error" || type == "rate_limit_error";
}

}  // namespace quarry::llm::internal
