// Scripted Messages API replies (see anthropic_replies.h).
#include "support/anthropic_replies.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace quarry::testing {
namespace {

using json = nlohmann::ordered_json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json ParsedInput(const ScriptedBlock& block) {
  json input = json::parse(block.tool_input, nullptr, false);
  if (input.is_discarded()) {
    throw std::invalid_argument("tool_input is not JSON: " + block.tool_input);
  }
  return input;
}

std::string StopReason(const ScriptedMessage& message) {
  if (!message.stop_reason.empty()) return message.stop_reason;
  for (const ScriptedBlock& block : message.content) {
    if (!block.tool_name.empty()) return "tool_use";
  }
  return "end_turn";
}

std::string Event(const json& data) {
  return "event: " + data["type"].get<std::string>() + "\ndata: " + Dump(data) + "\n\n";
}

// `text` in pieces of at most `size` bytes, never cutting a UTF-8 sequence (a cut one would
// not survive JSON encoding).
std::vector<std::string> Pieces(const std::string& text, size_t size) {
  std::vector<std::string> out;
  const auto continuation = [&](size_t i) {
    return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  size_t at = 0;
  while (at < text.size()) {
    size_t end = std::min(text.size(), at + std::max<size_t>(size, 1));
    while (end > at && continuation(end)) --end;
    if (end == at) {  // one character longer than `size`: sent whole
      end = at + 1;
      while (continuation(end)) ++end;
    }
    out.push_back(text.substr(at, end - at));
    at = end;
  }
  return out;
}

json Usage(const ScriptedMessage& message, int64_t output_tokens) {
  return json{{"input_tokens", message.input_tokens},
              {"cache_creation_input_tokens", message.cache_creation_input_tokens},
              {"cache_read_input_tokens", message.cache_read_input_tokens},
              {"output_tokens", output_tokens}};
}

}  // namespace

std::string MessagesBody(const ScriptedMessage& message) {
  json content = json::array();
  for (const ScriptedBlock& block : message.content) {
    if (block.tool_name.empty()) {
      content.push_back(json{{"type", "text"}, {"text", block.text}});
    } else {
      content.push_back(json{{"type", "tool_use"},
                             {"id", block.tool_id},
                             {"name", block.tool_name},
                             {"input", ParsedInput(block)}});
    }
  }
  json doc = json::object();
  doc["id"] = "msg_stand_in";
  doc["type"] = "message";
  doc["role"] = "assistant";
  doc["model"] = message.model;
  doc["content"] = std::move(content);
  doc["stop_reason"] = StopReason(message);
  doc["stop_sequence"] = nullptr;
  doc["usage"] = Usage(message, message.output_tokens);
  return Dump(doc);
}

std::string MessagesText(const std::string& text, int64_t input_tokens, int64_t output_tokens) {
  ScriptedMessage message;
  message.content = {TextBlock(text)};
  message.input_tokens = input_tokens;
  message.output_tokens = output_tokens;
  return MessagesBody(message);
}

std::string MessagesErrorBody(const std::string& type, const std::string& message) {
  return Dump(json{{"type", "error"},
                   {"error", {{"type", type}, {"message", message}}},
                   {"request_id", "req_stand_in"}});
}

std::vector<std::string> MessagesEvents(const ScriptedMessage& message, size_t piece_bytes) {
  std::vector<std::string> events;
  json start = json::object();
  start["id"] = "msg_stand_in";
  start["type"] = "message";
  start["role"] = "assistant";
  start["model"] = message.model;
  start["content"] = json::array();
  start["stop_reason"] = nullptr;
  start["stop_sequence"] = nullptr;
  start["usage"] = Usage(message, 1);
  events.push_back(Event(json{{"type", "message_start"}, {"message", std::move(start)}}));
  events.push_back(Event(json{{"type", "ping"}}));
  for (size_t i = 0; i < message.content.size(); ++i) {
    const ScriptedBlock& block = message.content[i];
    const bool tool = !block.tool_name.empty();
    if (tool) ParsedInput(block);  // the same check as MessagesBody
    const json content_block = tool ? json{{"type", "tool_use"},
                                           {"id", block.tool_id},
                                           {"name", block.tool_name},
                                           {"input", json::object()}}
                                    : json{{"type", "text"}, {"text", ""}};
    events.push_back(Event(
        json{{"type", "content_block_start"}, {"index", i}, {"content_block", content_block}}));
    for (const std::string& piece : Pieces(tool ? block.tool_input : block.text, piece_bytes)) {
      const json delta = tool ? json{{"type", "input_json_delta"}, {"partial_json", piece}}
                              : json{{"type", "text_delta"}, {"text", piece}};
      events.push_back(
          Event(json{{"type", "content_block_delta"}, {"index", i}, {"delta", delta}}));
    }
    events.push_back(Event(json{{"type", "content_block_stop"}, {"index", i}}));
  }
  events.push_back(
      Event(json{{"type", "message_delta"},
                 {"delta", {{"stop_reason", StopReason(message)}, {"stop_sequence", nullptr}}},
                 {"usage", {{"output_tokens", message.output_tokens}}}}));
  events.push_back(Event(json{{"type", "message_stop"}}));
  return events;
}

std::string MessagesErrorEvent(const std::string& type, const std::string& message) {
  return Event(json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}});
}

std::string Joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& piece : pieces) out += piece;
  return out;
}

}  // namespace quarry::testing
