// Streamed chat completions for the stand-in (stream_replies.h), shaped like OpenAI's and
// OpenRouter's chat.completion.chunk events.
#include "support/stream_replies.h"

#include <algorithm>

namespace quarry::testing {
namespace {

using json = nlohmann::ordered_json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Cuts `text` into pieces of about `bytes`, never inside a UTF-8 character (a JSON string
// holding half a character would be invalid).
std::vector<std::string> Pieces(const std::string& text, size_t bytes) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = std::min(text.size(), at + std::max<size_t>(bytes, 1));
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    out.push_back(text.substr(at, end - at));
    at = end;
  }
  return out;
}

json Chunk(const ScriptedCompletion& completion, json choices) {
  json chunk = json::object();
  chunk["id"] = "chatcmpl-stand-in";
  chunk["object"] = "chat.completion.chunk";
  chunk["created"] = 1700000000;
  chunk["model"] = completion.model;
  chunk["choices"] = std::move(choices);
  return chunk;
}

json DeltaChoice(json delta, json finish = nullptr) {
  return json::array(
      {json{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}});
}

std::string Event(const json& chunk) { return "data: " + Dump(chunk) + "\n\n"; }

}  // namespace

std::vector<std::string> StreamChunks(const ScriptedCompletion& completion,
                                      const StreamShape& shape) {
  std::vector<std::string> events;
  auto add = [&](std::string event) {
    if (shape.keep_alive) events.push_back(": OPENROUTER PROCESSING\n\n");
    events.push_back(std::move(event));
  };
  add(Event(Chunk(completion, DeltaChoice({{"role", "assistant"}, {"content", ""}}))));
  for (const std::string& piece : Pieces(completion.content, shape.piece_bytes)) {
    add(Event(Chunk(completion, DeltaChoice({{"content", piece}}))));
  }
  // Each call's first delta: index, id, type, name and empty arguments (as OpenAI sends it).
  std::vector<std::vector<std::string>> arguments;
  for (const ScriptedToolCall& call : completion.tool_calls) {
    arguments.push_back(Pieces(call.arguments, shape.piece_bytes));
  }
  auto call_delta = [&](size_t i, const json& fields) {
    json entry = json::object();
    entry["index"] = i;
    for (const auto& [key, value] : fields.items()) entry[key] = value;
    return Event(Chunk(completion, DeltaChoice({{"tool_calls", json::array({entry})}})));
  };
  auto first_delta = [&](size_t i) {
    const ScriptedToolCall& call = completion.tool_calls[i];
    return call_delta(i, {{"id", call.id},
                          {"type", "function"},
                          {"function", {{"name", call.name}, {"arguments", ""}}}});
  };
  auto argument_delta = [&](size_t i, const std::string& piece) {
    return call_delta(i, {{"function", {{"arguments", piece}}}});
  };
  if (shape.interleave) {
    for (size_t i = 0; i < completion.tool_calls.size(); ++i) add(first_delta(i));
    size_t longest = 0;
    for (const auto& pieces : arguments) longest = std::max(longest, pieces.size());
    for (size_t p = 0; p < longest; ++p) {
      for (size_t i = 0; i < arguments.size(); ++i) {
        if (p < arguments[i].size()) add(argument_delta(i, arguments[i][p]));
      }
    }
  } else {
    for (size_t i = 0; i < completion.tool_calls.size(); ++i) {
      add(first_delta(i));
      for (const std::string& piece : arguments[i]) add(argument_delta(i, piece));
    }
  }
  if (shape.finish) {
    std::string finish = completion.finish_reason;
    if (finish.empty()) finish = completion.tool_calls.empty() ? "stop" : "tool_calls";
    add(Event(Chunk(completion, DeltaChoice(json::object(), finish))));
  }
  if (shape.usage) {
    json usage = json::object();
    usage["prompt_tokens"] = completion.prompt_tokens;
    usage["completion_tokens"] = completion.completion_tokens;
    usage["total_tokens"] = completion.prompt_tokens + completion.completion_tokens;
    usage["prompt_tokens_details"] = json{{"cached_tokens", completion.cached_tokens}};
    if (completion.cost_usd) usage["cost"] = *completion.cost_usd;
    json chunk = Chunk(completion, json::array());
    chunk["usage"] = std::move(usage);
    add(Event(chunk));
  }
  if (shape.done) add("data: [DONE]\n\n");
  return events;
}

std::string StreamBody(const ScriptedCompletion& completion, const StreamShape& shape) {
  std::string body;
  for (const std::string& event : StreamChunks(completion, shape)) body += event;
  return body;
}

ScriptedResponse StreamedResponse(const ScriptedCompletion& completion, const StreamShape& shape) {
  ScriptedResponse response;
  response.chunks = StreamChunks(completion, shape);
  return response;
}

std::string ErrorChunk(const std::string& message, int code) {
  json chunk = json::object();
  chunk["id"] = "chatcmpl-stand-in";
  chunk["object"] = "chat.completion.chunk";
  chunk["created"] = 1700000000;
  chunk["error"] = json{{"code", code}, {"message", message}};
  chunk["choices"] = DeltaChoice({{"content", ""}}, "error");
  return Event(chunk);
}

}  // namespace quarry::testing
