// Scripted Anthropic Messages API replies for the provider stand-in: a whole reply body, an
// error body, and the same reply as the server-sent events a streamed request gets (one
// event per piece, for ScriptedResponse::chunks). Shapes follow Anthropic's API reference
// ("Messages", "Streaming Messages", "Errors").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace quarry::testing {

// One content block of the assistant's reply: text, or a tool_use when `tool_name` is set.
struct ScriptedBlock {
  std::string text;
  std::string tool_id;
  std::string tool_name;
  std::string tool_input = "{}";  // JSON object text; streamed as partial_json pieces as is
};

inline ScriptedBlock TextBlock(std::string text) { return {std::move(text), "", "", "{}"}; }
inline ScriptedBlock ToolUseBlock(std::string id, std::string name, std::string input) {
  return {"", std::move(id), std::move(name), std::move(input)};
}

struct ScriptedMessage {
  std::vector<ScriptedBlock> content;
  std::string stop_reason;     // "" -> "tool_use" when a block is a tool_use, else "end_turn"
  int64_t input_tokens = 100;  // tokens after the last cache breakpoint
  int64_t output_tokens = 10;
  int64_t cache_creation_input_tokens = 0;
  int64_t cache_read_input_tokens = 0;
  std::string model = "claude-sonnet-4-5";
};

// {"id", "type": "message", "role": "assistant", "model", "content": [...], "stop_reason",
// "stop_sequence": null, "usage": {...}} as text. A tool_input that is not JSON is an error
// of the test (std::invalid_argument).
std::string MessagesBody(const ScriptedMessage& message);
std::string MessagesText(const std::string& text, int64_t input_tokens = 100,
                         int64_t output_tokens = 10);
// {"type": "error", "error": {"type", "message"}, "request_id"} as text.
std::string MessagesErrorBody(const std::string& type, const std::string& message);

// The reply as event-stream text, one "event: <type>\ndata: <json>\n\n" per element:
// message_start (input and cache usage, output_tokens 1), ping, per block a
// content_block_start, the text or tool input in pieces of at most `piece_bytes` bytes
// (cut only between UTF-8 characters) as text_delta / input_json_delta, content_block_stop;
// message_delta (stop_reason, output_tokens), message_stop.
std::vector<std::string> MessagesEvents(const ScriptedMessage& message, size_t piece_bytes = 7);
// An error event, as a server sends one mid-stream.
std::string MessagesErrorEvent(const std::string& type, const std::string& message);

// All of `pieces` joined.
std::string Joined(const std::vector<std::string>& pieces);

}  // namespace quarry::testing
