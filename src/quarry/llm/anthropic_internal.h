// Internals of the Anthropic Messages API client (anthropic_client.cc): the request body
// (anthropic_messages.cc), the reply and error shapes, and the assembly of a streamed reply
// (anthropic_stream.cc). Shapes follow Anthropic's API reference: "Messages", "Streaming
// Messages", "Prompt caching", "Errors" (anthropic-version 2023-06-01). Included only by llm/
// and its tests.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/llm/llm.h"
#include "quarry/llm/sse.h"

namespace quarry::llm::internal {

inline constexpr const char* kAnthropicVersion = "2023-06-01";

// The POST /v1/messages body for `request`: model, max_tokens (request override, else
// config.max_output_tokens; the API requires it), temperature when set (clamped to the API's
// 0..1), system text blocks, tools, the user/assistant messages, "stream": true when `stream`,
// and at most 4 cache_control breakpoints (placement: see the .cc). The "messages" array is
// empty when the conversation holds nothing to send.
nlohmann::ordered_json BuildMessagesBody(const ClientConfig& config, const Request& request,
                                         bool stream);

// The Turn of a Messages reply object {"content": [...], "stop_reason", "usage"}: text blocks
// joined, tool_use blocks as tool calls (input serialised; a string input is kept as is),
// stop_reason mapped (end_turn/stop_sequence -> "stop", tool_use -> "tool_calls", max_tokens
// -> "length", others verbatim), usage with cache reads and writes added into input_tokens,
// cost from config.prices. Errors: kModel when "content" is not an array.
Result<Turn> ParseMessagesReply(const nlohmann::ordered_json& doc, const ClientConfig& config);

// {"type": "error", "error": {"type", "message"}}: the error's type ("" when the body has
// another shape).
std::string AnthropicErrorType(const nlohmann::ordered_json& doc);
// "<type>: <message>" from an error body, or a snippet of the body when it is not one.
std::string AnthropicErrorText(const std::string& body);
// The error types a resend can cure: overloaded_error (529), api_error (500),
// rate_limit_error (429).
bool IsRetryableErrorType(const std::string& type);

// Assembles a streamed reply (server-sent events) into the reply object a non-streamed request
// returns, so both go through ParseMessagesReply and give equal Turns. Passes each text and
// tool-call piece to `on_delta` as it arrives. Events: message_start, content_block_start /
// _delta (text_delta, input_json_delta) / _stop, message_delta, message_stop, error; ping and
// unknown ones are ignored.
class MessageStream {
 public:
  explicit MessageStream(std::function<void(const StreamDelta&)> on_delta)
      : on_delta_(std::move(on_delta)) {}

  // Feeds the next bytes. False: stop reading (an error event arrived, or the stream is
  // malformed: see problem()).
  bool Feed(std::string_view bytes);

  bool complete() const { return complete_; }  // message_stop arrived
  // The reply object (valid when complete()).
  nlohmann::ordered_json Message() const;
  // An error event's type and message ("" when none arrived).
  const std::string& error_type() const { return error_type_; }
  const std::string& error_message() const { return error_message_; }
  // Why the stream cannot be read ("" when it can): an event that is not JSON, a delta for a
  // block that never started, an event over the size limit.
  const std::string& problem() const { return problem_; }
  // Text and tool-call pieces received so far (each passed to on_delta).
  size_t deltas() const { return deltas_; }
  // What arrived, for error messages: the event types in order, repeats collapsed
  // ("message_start, content_block_start, content_block_delta x3"), "nothing" when no event
  // did; ", an unfinished event" when the bytes ended mid-event.
  std::string Received() const;

 private:
  struct Block {
    nlohmann::ordered_json start;  // content_block_start's content_block
    std::string text;              // text_delta pieces
    std::string partial_json;      // input_json_delta pieces
    int tool_index = -1;           // position among the tool_use blocks
  };
  void Event(const SseEvent& event);
  void Deliver(StreamDelta::Kind kind, std::string text, int index);

  std::function<void(const StreamDelta&)> on_delta_;
  SseParser parser_;
  nlohmann::ordered_json message_ = nlohmann::ordered_json::object();
  std::map<int64_t, Block> blocks_;
  int tools_ = 0;
  bool complete_ = false;
  std::string error_type_;
  std::string error_message_;
  std::string problem_;
  size_t deltas_ = 0;
  std::vector<std::pair<std::string, int>> received_;
};

}  // namespace quarry::llm::internal
