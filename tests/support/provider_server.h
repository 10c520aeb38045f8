// A real HTTP stand-in for a model provider, for tests of anything that talks to one (the llm
// clients, the agent CLI, MCP): it listens on 127.0.0.1 at an ephemeral port, answers
// POST /v1/chat/completions (OpenAI-compatible) and POST /v1/messages (Anthropic) from one
// queue of scripted responses, whole or streamed piece by piece; when told how, POST
// /v1/embeddings with scripted vectors and GET /v1/models with a scripted list; and records
// every request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace quarry::testing {

// One scripted reply. Aggregate, so `server.Enqueue({429, {{"Retry-After", "2"}}, body})`.
struct ScriptedResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Wait this long before answering (to trigger client timeouts). The wait ends early when
  // the server is destroyed, so a test never blocks on it.
  std::chrono::milliseconds delay{0};
  // When set, the reply announces the whole body (Content-Length) but only this many bytes of
  // it are sent before the connection closes: a connection dropped mid-body.
  std::optional<size_t> drop_after_bytes{};
  // A streamed reply: when not empty, these pieces are sent in order with chunked transfer
  // encoding (`body` is ignored), `chunk_delay` apart, as Content-Type `content_type`.
  std::vector<std::string> chunks{};
  std::chrono::milliseconds chunk_delay{0};
  // With `chunks`: after this many pieces the connection closes without ending the body (a
  // stream dropped mid-way).
  std::optional<size_t> drop_after_chunks{};
  // "" : application/json, or text/event-stream when `chunks` is set.
  std::string content_type{};
};

// A request as the server received it.
struct RecordedRequest {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // Value of the first header named `name` (case-insensitive); "" when absent.
  std::string Header(std::string_view name) const;
  // The body parsed as JSON; a discarded value when it is not JSON.
  nlohmann::ordered_json Json() const;
};

// Starts listening in the constructor and stops (joining its threads) in the destructor.
// Requests to POST /v1/chat/completions take the next scripted response; when the queue is
// empty the reply is 400 {"error": {"message": "provider stand-in: no scripted response
// left"}}, which clients do not retry. Any other path gets 404. Every request is recorded.
// Each connection carries one request ("Connection: close"), so destruction never waits on
// an idle client. Thread safe: tests enqueue and inspect while the server runs.
class ProviderServer {
 public:
  ProviderServer();
  ~ProviderServer();
  ProviderServer(const ProviderServer&) = delete;
  ProviderServer& operator=(const ProviderServer&) = delete;

  void Enqueue(ScriptedResponse response);
  // Serves POST /v1/embeddings: each input text (a string or an array of them) gets
  // `vector_of(text)`, in the OpenAI reply shape {"object": "list", "data": [{"object":
  // "embedding", "index", "embedding"}], "model", "usage"}. A `status` other than 200 answers
  // every embeddings request with that status and an error body instead. Until this is called,
  // /v1/embeddings gets 404 like any other path.
  using VectorOf = std::function<std::vector<double>(const std::string& text)>;
  void ServeEmbeddings(VectorOf vector_of, int status = 200);
  // Serves GET /v1/models with `body` and `status` (e.g. {"object": "list", "data": [{"id":
  // "qwen2.5-7b-instruct", "object": "model"}]}). Until this is called, it gets 404.
  void ServeModels(std::string body, int status = 200);
  int port() const { return port_; }
  std::string base_url() const;  // "http://127.0.0.1:PORT/v1"
  std::vector<RecordedRequest> requests() const;
  size_t pending() const;  // scripted responses not yet served

 private:
  // The reply to a POST: status, headers and body, or the scripted response to stream.
  ScriptedResponse Serve(RecordedRequest request);
  // Waits `delay` or until the server is being destroyed; false when it is.
  bool Pause(std::chrono::milliseconds delay);

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable stopping_cv_;
  bool stopping_ = false;
  std::deque<ScriptedResponse> queue_;
  VectorOf vector_of_;
  int embeddings_status_ = 200;
  std::optional<std::string> models_body_;
  int models_status_ = 200;
  std::vector<RecordedRequest> requests_;
};

// A port on 127.0.0.1 that is bound but not listening, held for this object's lifetime:
// connecting to it is refused at once, and no other process can take it meanwhile.
class ClosedPort {
 public:
  ClosedPort();
  ~ClosedPort();
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;
  int port() const { return port_; }
  std::string base_url() const;  // "http://127.0.0.1:PORT/v1"

 private:
  int fd_ = -1;
  int port_ = 0;
};

struct ScriptedToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // raw text, sent as the "arguments" string as is
};

// The parts of an OpenAI-style chat completion that tests vary.
struct ScriptedCompletion {
  std::string content;
  std::vector<ScriptedToolCall> tool_calls;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  std::optional<double> cost_usd;  // OpenRouter's usage.cost when set
  std::string finish_reason;       // "" -> "tool_calls" when there are calls, else "stop"
  std::string model = "stand-in-model";
};

// {"id", "object": "chat.completion", "model", "choices": [{"index": 0, "message": {"role":
// "assistant", "content", "tool_calls"?}, "finish_reason"}], "usage": {...}} as text.
std::string CompletionBody(const ScriptedCompletion& completion);
// Shorthands for the common replies: a final text answer, or a turn of tool calls.
std::string TextReply(const std::string& content, int64_t prompt_tokens = 100,
                      int64_t completion_tokens = 10);
std::string ToolCallReply(std::vector<ScriptedToolCall> tool_calls, int64_t prompt_tokens = 100,
                          int64_t completion_tokens = 10);
// {"error": {"message": ..., "type": ..., "code": status}} as text.
std::string ErrorBody(const std::string& message, int code = 0);

}  // namespace quarry::testing
