// Chat Completions chunks assembled into one completion (openai_stream_internal.h). Provider
// JSON is read without throwing: a wrong type in a chunk is skipped or reported, never fatal.
#include <algorithm>
#include <cstdio>

#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/llm/client_internal.h"
#include "quarry/llm/openai_stream_internal.h"

namespace quarry::llm::internal {
namespace {

using json = nlohmann::ordered_json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A string field's text; other JSON is dumped (a server that sends arguments as an object).
std::string TextOf(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return Dump(value);
}

// Text pieces as [{"type": "text", "text": ...}] from some servers, as in whole replies.
std::string ContentText(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const json& part : content) text += JsonString(part, "text");
  }
  return text;
}

size_t CodePoints(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

bool CompletionStream::Feed(std::string_view bytes) {
  if (!error_.empty()) return false;
  if (done_) return true;
  bytes_ += bytes.size();
  const bool ok = parser_.Feed(bytes, [this](const SseEvent& event) {
    if (error_.empty() && !done_) Event(event);
  });
  if (!ok) Fail("a streamed event is larger than the parser's limit");
  return error_.empty();
}

void CompletionStream::Event(const SseEvent& event) {
  ++events_;
  std::string_view data = event.data;
  while (!data.empty() && (data.back() == ' ' || data.back() == '\t')) data.remove_suffix(1);
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  if (internal::BlankEventData(data)) return;  // `data:` alone carries no chunk
  std::string problem;
  const json chunk = internal::ParseProviderJson(data, &problem);
  if (!chunk.is_object()) {
    Fail("a streamed chunk is not a JSON object (" +
         (chunk.is_discarded() ? problem : JsonKind(chunk)) + "): " + Snippet(data));
    return;
  }
  // OpenRouter: {"error": {"code": 502, "message": ...}, "choices": [{"delta": {},
  // "finish_reason": "error"}]}; a few servers send the error as the event type instead.
  auto error = chunk.find("error");
  if ((error != chunk.end() && !error->is_null()) || event.type == "error") {
    error_event_ = std::string(data);
    if (error != chunk.end() && error->is_object()) {
      auto code = error->find("code");
      if (code != error->end() && code->is_number_integer()) {
        error_code_ = static_cast<long>(code->get<int64_t>());
      }
    }
    Fail("error event");
    return;
  }
  Chunk(chunk);
}

void CompletionStream::Chunk(const json& chunk) {
  auto usage = chunk.find("usage");
  if (usage != chunk.end() && usage->is_object()) usage_ = *usage;
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) return;
  for (const json& choice : *choices) {
    if (!choice.is_object()) continue;
    // One completion is asked for (n = 1); a server that numbers its choice says 0.
    auto number = choice.find("index");
    if (number != choice.end() && number->is_number_integer() && number->get<int64_t>() != 0) {
      continue;
    }
    auto delta = choice.find("delta");
    if (delta != choice.end() && delta->is_object()) {
      auto content = delta->find("content");
      if (content != delta->end()) {
        std::string text = ContentText(*content);
        if (!text.empty()) {
          content_ += text;
          Emit(StreamDelta::Kind::kText, std::move(text), 0);
        }
      }
      auto calls = delta->find("tool_calls");
      if (calls != delta->end() && calls->is_array()) {
        for (const json& call : *calls) {
          if (call.is_object()) ToolCallDelta(call);
        }
      }
    }
    auto finish = choice.find("finish_reason");
    if (finish != choice.end() && finish->is_string() && !finish->get<std::string>().empty()) {
      finish_reason_ = finish->get<std::string>();
    }
  }
}

void CompletionStream::ToolCallDelta(const json& delta) {
  int index = -1;
  auto number = delta.find("index");
  if (number != delta.end() && number->is_number_integer()) {
    const int64_t value = number->get<int64_t>();
    if (value >= 0 && value < 1024) index = static_cast<int>(value);
  }
  if (index < 0) {
    // No index (a few servers): a delta with an id starts a call, one without continues the
    // newest.
    const bool starts = !JsonString(delta, "id").empty() || last_index_ < 0;
    index = starts ? last_index_ + 1 : last_index_;
  }
  last_index_ = std::max(last_index_, index);
  const std::string id = JsonString(delta, "id");
  auto slot = slot_of_.find(index);
  if (slot == slot_of_.end() ||
      (!id.empty() && !calls_[slot->second].id.empty() && calls_[slot->second].id != id)) {
    if (next_slot_ >= 1024) return;  // as many calls as an index can name; the rest dropped
    slot = slot_of_.insert_or_assign(index, next_slot_++).first;
  }
  index = slot->second;
  Call& call = calls_[index];
  if (call.id.empty()) call.id = id;
  if (call.type.empty()) call.type = JsonString(delta, "type");
  auto function = delta.find("function");
  if (function == delta.end() || !function->is_object()) return;
  if (call.name.empty()) call.name = JsonString(*function, "name");
  auto arguments = function->find("arguments");
  if (arguments != function->end()) call.arguments += TextOf(*arguments);
  if (!call.named && !call.name.empty()) {
    call.named = true;
    Emit(StreamDelta::Kind::kToolCall, call.name, index);
  }
  // Arguments that came before the name are handed out after it, so a display reads in order.
  if (call.named && call.announced < call.arguments.size()) {
    std::string piece = call.arguments.substr(call.announced);
    call.announced = call.arguments.size();
    Emit(StreamDelta::Kind::kToolArguments, std::move(piece), index);
  }
}

void CompletionStream::Emit(StreamDelta::Kind kind, std::string text, int index) {
  ++deltas_;
  if (on_delta_) on_delta_(StreamDelta{kind, std::move(text), index});
}

std::string CompletionStream::Received() const {
  std::string what = std::to_string(bytes_) + " bytes (" + std::to_string(events_) +
                     (events_ == 1 ? " event" : " events");
  std::string parts;
  if (!content_.empty()) parts += std::to_string(CodePoints(content_)) + " characters of text";
  if (!calls_.empty()) {
    parts += (parts.empty() ? "" : ", ") + std::to_string(calls_.size()) +
             (calls_.size() == 1 ? " tool call" : " tool calls");
  }
  if (!parts.empty()) what += ": " + parts;
  return what + ")";
}

json CompletionStream::Completion() const {
  json message = json::object();
  message["role"] = "assistant";
  message["content"] = content_;
  if (!calls_.empty()) {
    json calls = json::array();
    for (const auto& [index, call] : calls_) {
      json function = json::object();
      function["name"] = call.name;
      function["arguments"] = call.arguments;
      json entry = json::object();
      if (!call.id.empty()) entry["id"] = call.id;
      entry["type"] = call.type.empty() ? "function" : call.type;
      entry["function"] = std::move(function);
      calls.push_back(std::move(entry));
    }
    message["tool_calls"] = std::move(calls);
  }
  json choice = json::object();
  choice["index"] = 0;
  choice["message"] = std::move(message);
  choice["finish_reason"] = finish_reason_.empty() ? json(nullptr) : json(finish_reason_);
  json doc = json::object();
  doc["object"] = "chat.completion";
  doc["choices"] = json::array({std::move(choice)});
  if (usage_) doc["usage"] = *usage_;
  return doc;
}

StreamOutcome FinishStream(const CompletionStream& stream, const HttpReply& reply,
                           const std::string& provider_message, int64_t timeout_ms) {
  StreamOutcome out;
  // Nothing of the model's reply was shown or kept: a resend cannot duplicate anything.
  const bool untouched = stream.deltas() == 0;
  const std::string after = " after " + stream.Received() + " of the streamed reply";
  const std::string kept =
      "; not resent: part of the reply had already arrived (--no-stream waits for whole "
      "replies instead)";
  if (!stream.error_event().empty()) {
    const long code = stream.error_code();
    out.failure = "error event" + (code != 0 ? " " + std::to_string(code) : std::string()) + after +
                  ": " + provider_message;
    out.retryable = untouched && (code == 0 || IsRetryableStatus(code));
    if (!untouched) out.failure += kept;
    return out;
  }
  if (!stream.error().empty()) {
    out.failure = "the streamed reply is malformed" + after + ": " + stream.error();
    return out;
  }
  // [DONE] is the end whatever the transport says after it (a proxy that cuts the connection
  // instead of ending the chunked body).
  if (stream.done()) {
    out.completion = stream.Completion();
    return out;
  }
  if (reply.status == 0 && reply.timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout_ms) / 1000.0);
    out.failure = std::string("the reply did not finish within the request timeout of ") + seconds +
                  " s" + after + " (--request-timeout or QUARRY_REQUEST_TIMEOUT); not resent";
    return out;
  }
  if (reply.status == 0) {
    out.failure = "the connection broke" + after + " (" + reply.network_error + ")";
    out.retryable = untouched;
    if (!untouched) out.failure += kept;
    return out;
  }
  if (!stream.complete()) {
    out.failure =
        "the streamed reply ended without [DONE] or a finish reason" + after + ": it is incomplete";
    out.retryable = untouched;
    if (!untouched) out.failure += kept;
    return out;
  }
  out.completion = stream.Completion();
  return out;
}

}  // namespace quarry::llm::internal
