// A streamed Chat Completions reply ("stream": true) put back together: the server-sent
// chat.completion.chunk events become the whole completion the non-streamed reply would have
// been, so one parser reads both. Included only by llm/ and its tests.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "quarry/llm/http_internal.h"
#include "quarry/llm/llm.h"
#include "quarry/llm/sse.h"

namespace quarry::llm::internal {

// Feeds the bytes of a text/event-stream body in any slices. Each "data:" event is one chunk
// (https://platform.openai.com/docs/api-reference/chat-streaming): choices[0].delta.content is
// appended; delta.tool_calls are gathered by their `index` (id, type and function.name come
// in the first delta of an index, function.arguments is concatenated); a non-null
// finish_reason and a usage object (the final chunk, whose choices are empty, when
// stream_options.include_usage was sent) are kept. `data: [DONE]` ends the stream; comments
// (OpenRouter's ": OPENROUTER PROCESSING") are skipped by the SSE parser. A chunk carrying
// "error" (OpenRouter reports upstream failures mid-stream that way) ends it with that error.
// Not thread safe; one per reply.
class CompletionStream {
 public:
  using OnDelta = std::function<void(const StreamDelta& delta)>;
  // `on_delta` (may be empty) gets each non-empty text piece, each tool call as soon as its
  // name is known (kToolCall, the name), and each non-empty argument fragment of a named call,
  // in arrival order.
  explicit CompletionStream(OnDelta on_delta) : on_delta_(std::move(on_delta)) {}

  // False once the stream cannot go on: an error chunk, a chunk that is not a JSON object, or
  // an event over the parser's size limit (see error()). Bytes after [DONE] are ignored.
  bool Feed(std::string_view bytes);

  bool done() const { return done_; }  // [DONE] arrived
  // [DONE] arrived, or a finish_reason did (some servers close without [DONE]).
  bool complete() const { return done_ || !finish_reason_.empty(); }
  // Why the stream failed ("" while it has not): a malformed chunk or an error chunk.
  const std::string& error() const { return error_; }
  // The raw data of the error chunk ({"error": {...}, ...}); "" when the failure was another.
  const std::string& error_event() const { return error_event_; }
  // The numeric "code" of the error chunk's error (OpenRouter puts the HTTP status there);
  // 0 when absent or not a number.
  long error_code() const { return error_code_; }
  size_t bytes() const { return bytes_; }
  size_t deltas() const { return deltas_; }  // pieces handed to on_delta
  // What arrived, for an error message: "812 bytes (5 events: 120 characters of text, 1 tool
  // call)".
  std::string Received() const;

  // The whole completion the chunks add up to, in the non-streamed shape: {"choices":
  // [{"index": 0, "message": {"role": "assistant", "content", "tool_calls"?},
  // "finish_reason"}], "usage"?}. Tool calls are in index order; a call that never got an id
  // has none (the parser names it).
  nlohmann::ordered_json Completion() const;

 private:
  struct Call {
    std::string id;
    std::string type;
    std::string name;
    std::string arguments;
    size_t announced = 0;  // bytes of `arguments` already handed to on_delta (after the name)
    bool named = false;    // kToolCall was handed out
  };

  void Event(const SseEvent& event);
  void Chunk(const nlohmann::ordered_json& chunk);
  void ToolCallDelta(const nlohmann::ordered_json& delta);
  void Emit(StreamDelta::Kind kind, std::string text, int index);
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  OnDelta on_delta_;
  SseParser parser_;
  bool done_ = false;
  std::string error_;
  std::string error_event_;
  long error_code_ = 0;
  size_t bytes_ = 0;
  size_t events_ = 0;
  size_t deltas_ = 0;
  std::string content_;
  std::map<int, Call> calls_;
  int last_index_ = -1;  // the index of the newest call, for servers that omit `index`
  // The server's `index` -> the key in calls_: a new id at an index already used by another
  // call starts a call of its own instead of running its arguments into the earlier one's.
  std::map<int, int> slot_of_;
  int next_slot_ = 0;
  std::string finish_reason_;
  std::optional<nlohmann::ordered_json> usage_;
};

// What a streamed exchange came to once HttpSession::Post returned.
struct StreamOutcome {
  // The whole completion (CompletionStream::Completion) when the stream is complete.
  std::optional<nlohmann::ordered_json> completion;
  std::string failure;     // otherwise what went wrong, naming how much had arrived
  bool retryable = false;  // resending is safe: nothing of the reply had reached on_delta
};

// Judges a finished exchange of an event-stream reply (`reply` as Post returned it, the
// stream fed its body). `provider_message` is the error chunk's message in the client's
// words (used when stream.error_event() is set); `timeout_ms` the request's limit, for the
// message. [DONE] makes a turn even when the connection broke after it. An error chunk is
// retried only while nothing was handed out and its code (when numeric) is 429 or 5xx; a
// dropped connection or a stream that ended early only while nothing was handed out; a
// malformed chunk or a timeout never.
StreamOutcome FinishStream(const CompletionStream& stream, const HttpReply& reply,
                           const std::string& provider_message, int64_t timeout_ms);

}  // namespace quarry::llm::internal
