// A streamed Messages reply assembled into the reply object a whole reply would have been, so
// the streamed and the whole reply give the same Turn (see anthropic_internal.h).
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/llm/anthropic_internal.h"
#include "quarry/llm/client_internal.h"

namespace quarry::llm::internal {

using json = nlohmann::ordered_json;

bool MessageStream::Feed(std::string_view bytes) {
  if (!problem_.empty() || !error_type_.empty()) return false;
  const bool fits = parser_.Feed(bytes, [this](const SseEvent& event) {
    // The parser hands out every event in `bytes`; after a failure the rest are not read.
    if (problem_.empty() && error_type_.empty()) Event(event);
  });
  if (!fits && problem_.empty()) problem_ = "an event is larger than the 8 MiB limit";
  return problem_.empty() && error_type_.empty();
}

void MessageStream::Deliver(StreamDelta::Kind kind, std::string text, int index) {
  ++deltas_;
  if (on_delta_) on_delta_(StreamDelta{kind, std::move(text), index});
}

void MessageStream::Event(const SseEvent& event) {
  if (BlankEventData(event.data)) return;  // `data:` alone carries no event
  const json data = ParseProviderJson(event.data);
  std::string type = JsonString(data, "type");
  if (type.empty()) type = event.type;
  if (received_.empty() || received_.back().first != type) {
    received_.emplace_back(type, 1);
  } else {
    ++received_.back().second;
  }
  if (complete_) return;  // nothing follows message_stop
  if (!data.is_object()) {
    problem_ = "event \"" + event.type + "\" is not a JSON object: " + Snippet(event.data);
    return;
  }
  if (type == "message_start") {
    const json* message = ObjectField(data, "message");
    message_ = message ? *message : json::object();
    message_["content"] = json::array();  // filled from the blocks
  } else if (type == "content_block_start") {
    const int64_t index = IntField(data, "index");
    const json* start = ObjectField(data, "content_block");
    if (start == nullptr) {
      problem_ = "content_block_start without a content_block: " + Snippet(event.data);
      return;
    }
    if (blocks_.contains(index)) {
      problem_ = "content block " + std::to_string(index) + " started twice";
      return;
    }
    Block& block = blocks_[index];
    block.start = *start;
    const std::string kind = JsonString(*start, "type");
    if (kind == "tool_use") {
      block.tool_index = tools_++;
      Deliver(StreamDelta::Kind::kToolCall, JsonString(*start, "name"), block.tool_index);
    } else if (kind == "text") {
      block.text = JsonString(*start, "text");  // "" in practice; kept if not
      if (!block.text.empty()) Deliver(StreamDelta::Kind::kText, block.text, 0);
    }
  } else if (type == "content_block_delta") {
    const int64_t index = IntField(data, "index");
    auto it = blocks_.find(index);
    if (it == blocks_.end()) {
      problem_ = "content_block_delta for block " + std::to_string(index) + ", which never started";
      return;
    }
    const json* delta = ObjectField(data, "delta");
    const std::string kind = delta ? JsonString(*delta, "type") : std::string();
    if (kind == "text_delta") {
      std::string text = JsonString(*delta, "text");
      it->second.text += text;
      if (!text.empty()) Deliver(StreamDelta::Kind::kText, std::move(text), 0);
    } else if (kind == "input_json_delta") {
      std::string piece = JsonString(*delta, "partial_json");
      it->second.partial_json += piece;
      if (!piece.empty()) {
        Deliver(StreamDelta::Kind::kToolArguments, std::move(piece), it->second.tool_index);
      }
    }
    // thinking, signature and citation deltas belong to features not requested.
  } else if (type == "message_delta") {
    if (const json* delta = ObjectField(data, "delta")) {
      for (auto it = delta->begin(); it != delta->end(); ++it) message_[it.key()] = it.value();
    }
    // Counts here are cumulative: they replace those of message_start.
    if (const json* usage = ObjectField(data, "usage")) {
      if (!message_["usage"].is_object()) message_["usage"] = json::object();
      for (auto it = usage->begin(); it != usage->end(); ++it) {
        if (!it.value().is_null()) message_["usage"][it.key()] = it.value();
      }
    }
  } else if (type == "message_stop") {
    complete_ = true;
  } else if (type == "error") {
    const json* error = ObjectField(data, "error");
    error_type_ = error ? JsonString(*error, "type") : std::string();
    if (error_type_.empty()) error_type_ = "error";
    error_message_ = error ? JsonString(*error, "message") : std::string();
  }
  // ping, content_block_stop and event types added later need nothing.
}

json MessageStream::Message() const {
  json out = message_;
  json content = json::array();
  for (const auto& [index, block] : blocks_) {
    json entry = block.start;
    const std::string kind = JsonString(entry, "type");
    if (kind == "text") entry["text"] = block.text;
    if (kind == "tool_use" &&
        block.partial_json.find_first_not_of(" \t\r\n") != std::string::npos) {
      // The pieces join into the input object a whole reply carries; text that does not parse
      // is passed on verbatim, as the agent reports it to the model.
      json input = ParseJson(block.partial_json);
      entry["input"] = input.is_discarded() ? json(block.partial_json) : std::move(input);
    }
    content.push_back(std::move(entry));
  }
  out["content"] = std::move(content);
  return out;
}

std::string MessageStream::Received() const {
  std::string out;
  for (const auto& [type, count] : received_) {
    if (!out.empty()) out += ", ";
    out += type;
    if (count > 1) out += " x" + std::to_string(count);
  }
  if (parser_.pending()) out += std::string(out.empty() ? "" : ", ") + "an unfinished event";
  return out.empty() ? "nothing" : out;
}

}  // namespace quarry::llm::internal
