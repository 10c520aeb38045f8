// The OpenAI-compatible Chat Completions client (OpenRouter, OpenAI, llama.cpp, Ollama, vLLM):
// Request -> provider JSON, POST with retries over http_internal.h (the loop's pieces shared
// with the Anthropic client in client_internal.h), provider JSON -> Turn. On OpenRouter with an
// anthropic/* model the request carries cache_control breakpoints.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <utility>

#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/llm/client_internal.h"
#include "quarry/llm/http_internal.h"
#include "quarry/llm/llm.h"
#include "quarry/llm/openai_stream_internal.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using internal::CountField;
using internal::Dump;
using internal::HttpPost;
using internal::HttpReply;
using internal::IntField;
using internal::ObjectField;
using internal::SaysTooLarge;
using internal::Snippet;

const char* RoleName(Role role) {
  switch (role) {
    case Role::kSystem:
      return "system";
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kTool:
      return "tool";
  }
  return "user";
}

std::string ArgumentsForHistory(const std::string& raw) {
  if (raw.find_first_not_of(" \t\r\n") == std::string::npos) return "{}";
  if (!ParseJson(raw).is_discarded()) return raw;
  return Dump(json{{"invalid_json", raw}});
}

// What the client sends besides the conversation; the endpoint's rejections change it.
struct Sampling {
  std::optional<double> temperature;
  std::optional<int> max_output_tokens;  // nullopt: no limit sent
  std::string max_tokens_param;
  bool stream = false;          // "stream": true (ClientConfig::stream)
  bool stream_options = false;  // "stream_options": {"include_usage": true}, with stream
};

// OpenRouter passes Anthropic's prompt caching through only when the request marks the
// breakpoints itself (openrouter.ai/docs, prompt caching: "cache_control" on content parts);
// other models there cache on their own.
bool WantsCacheHints(const ClientConfig& config) {
  return config.provider == Provider::kOpenRouter && config.model.starts_with("anthropic/");
}

json TextBlock(std::string text) {
  return json{
      {"type", "text"}, {"text", std::move(text)}, {"cache_control", {{"type", "ephemeral"}}}};
}

// At most three breakpoints (Anthropic allows four): the question-independent part of the
// system prompt, the rest of it, and the newest message, so each call reads the whole earlier
// conversation from the cache and the next call reads this one's.
void AddCacheHints(const Request& request, json& messages) {
  for (size_t i = 0; i < request.messages.size() && i < messages.size(); ++i) {
    const Message& m = request.messages[i];
    if (m.role != Role::kSystem || m.content.empty()) continue;
    json blocks = json::array();
    if (m.cache_split > 0 && m.cache_split < m.content.size()) {
      blocks.push_back(TextBlock(m.content.substr(0, m.cache_split)));
      blocks.push_back(TextBlock(m.content.substr(m.cache_split)));
    } else {
      blocks.push_back(TextBlock(m.content));
    }
    messages[i]["content"] = std::move(blocks);
    break;
  }
  if (messages.empty() || request.messages.empty()) return;
  json& last = messages.back();
  if (request.messages.back().role == Role::kSystem) return;  // marked above
  // An assistant turn of tool calls with no text has content null: nothing to mark.
  if (!last["content"].is_string() || last["content"].get<std::string>().empty()) return;
  last["content"] = json::array({TextBlock(last["content"].get<std::string>())});
}

json BuildBody(const ClientConfig& config, const Request& request, const Sampling& sampling) {
  json messages = json::array();
  for (const Message& m : request.messages) {
    json msg = json::object();
    msg["role"] = RoleName(m.role);
    if (m.role == Role::kAssistant && !m.tool_calls.empty()) {
      msg["content"] = m.content.empty() ? json(nullptr) : json(m.content);
      json calls = json::array();
      for (const ToolCall& call : m.tool_calls) {
        json function = json::object();
        function["name"] = call.name;
        function["arguments"] = ArgumentsForHistory(call.arguments_json);
        json entry = json::object();
        entry["id"] = call.id;
        entry["type"] = "function";
        entry["function"] = std::move(function);
        calls.push_back(std::move(entry));
      }
      msg["tool_calls"] = std::move(calls);
    } else {
      msg["content"] = m.content;
    }
    if (m.role == Role::kTool) msg["tool_call_id"] = m.tool_call_id;
    messages.push_back(std::move(msg));
  }

  if (WantsCacheHints(config)) AddCacheHints(request, messages);

  json body = json::object();
  body["model"] = config.model;
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ToolSchema& tool : request.tools) {
      json function = json::object();
      function["name"] = tool.name;
      function["description"] = tool.description;
      function["parameters"] = tool.parameters.is_object()
                                   ? tool.parameters
                                   : json{{"type", "object"}, {"properties", json::object()}};
      tools.push_back(json{{"type", "function"}, {"function", std::move(function)}});
    }
    body["tools"] = std::move(tools);
    // OpenAI rejects tool_choice without tools, so it is only sent alongside them.
    body["tool_choice"] = "auto";
  }
  if (sampling.temperature) body["temperature"] = *sampling.temperature;
  if (sampling.max_output_tokens) body[sampling.max_tokens_param] = *sampling.max_output_tokens;
  // OpenRouter reports the real cost (after its routing and caching) only when asked.
  if (config.provider == Provider::kOpenRouter) body["usage"] = json{{"include", true}};
  if (sampling.stream) {
    body["stream"] = true;
    // Usage otherwise never arrives in a stream (OpenAI sends it in one last chunk).
    if (sampling.stream_options) body["stream_options"] = json{{"include_usage", true}};
  }
  return body;
}

// {"error": {"message": ..., "metadata": {"raw": ...}}} (OpenAI, OpenRouter), {"error": "..."}
// (some local servers), or the raw body when it is not JSON.
std::string ProviderMessage(const std::string& body) {
  if (body.empty()) return "(empty body)";
  json doc = ParseJson(body);
  if (doc.is_object()) {
    auto error = doc.find("error");
    if (error != doc.end() && error->is_string()) return Snippet(error->get<std::string>());
    if (error != doc.end() && error->is_object()) {
      std::string message = JsonString(*error, "message");
      // OpenRouter puts the upstream provider's own explanation here.
      const json* metadata = ObjectField(*error, "metadata");
      std::string raw = metadata ? JsonString(*metadata, "raw") : std::string();
      if (!raw.empty()) message += " (" + raw + ")";
      if (!message.empty()) return Snippet(message);
    }
    auto message = doc.find("message");
    if (message != doc.end() && message->is_string()) return Snippet(message->get<std::string>());
  }
  return Snippet(body);
}

// Which of the parameters in `sent` a 400 rejects as unsupported: the error's "param" when it
// is one of them, else the one the message names first. "" when the reply is another error.
std::string RejectedParameter(long status, const std::string& body,
                              const std::vector<std::string>& sent) {
  if (status != 400 && status != 422) return "";
  const json doc = ParseJson(body);
  const json* error = ObjectField(doc, "error");
  const std::string code = error ? JsonString(*error, "code") : std::string();
  const std::string message = Lower(error ? JsonString(*error, "message") : body);
  // Servers older than stream_options refuse it in their own words (vLLM's "Extra inputs are
  // not permitted", llama.cpp's own); a 400 that names it is about it.
  if (std::find(sent.begin(), sent.end(), "stream_options") != sent.end() &&
      (message.find("stream_options") != std::string::npos ||
       (error && JsonString(*error, "param") == "stream_options"))) {
    return "stream_options";
  }
  const bool unsupported = code == "unsupported_parameter" || code == "unsupported_value" ||
                           message.find("unsupported parameter") != std::string::npos ||
                           message.find("unsupported value") != std::string::npos ||
                           message.find("not supported") != std::string::npos ||
                           message.find("unrecognized request argument") != std::string::npos ||
                           message.find("extra inputs are not permitted") != std::string::npos;
  if (!unsupported) return "";
  const std::string param = error ? JsonString(*error, "param") : std::string();
  if (std::find(sent.begin(), sent.end(), param) != sent.end()) return param;
  std::string first;
  size_t first_at = std::string::npos;
  for (const std::string& name : sent) {
    const size_t at = message.find(name);
    if (at < first_at) first_at = at, first = name;
  }
  return first;
}

std::string ContentText(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {  // [{"type": "text", "text": ...}] from some servers
    for (const json& part : content) text += JsonString(part, "text");
  }
  return text;
}

Result<Turn> ParseCompletion(const json& doc, const ClientConfig& config) {
  auto choices = doc.find("choices");
  if (choices != doc.end() && choices->is_array() && choices->empty()) {
    // A server's answer with nothing in it (vs. a body that is no chat completion at all).
    return Fail(Error::Code::kModel,
                "reply has no choices (an empty \"choices\" list): " + Snippet(Dump(doc)));
  }
  if (choices == doc.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object()) {
    return Fail(Error::Code::kModel, "reply has no choices: " + Snippet(Dump(doc)));
  }
  const json& choice = (*choices)[0];
  const json* message_ptr = ObjectField(choice, "message");
  if (message_ptr == nullptr) {
    return Fail(Error::Code::kModel, "reply choice has no message: " + Snippet(Dump(choice)));
  }
  const json& message = *message_ptr;

  Turn turn;
  if (auto content = message.find("content"); content != message.end()) {
    turn.content = ContentText(*content);
  }
  auto calls = message.find("tool_calls");
  if (calls != message.end() && calls->is_array()) {
    for (size_t i = 0; i < calls->size(); ++i) {
      const json& call = (*calls)[i];
      if (!call.is_object()) continue;
      ToolCall out;
      auto id = call.find("id");
      out.id = id != call.end() && id->is_string() && !id->get<std::string>().empty()
                   ? id->get<std::string>()
                   : "call_" + std::to_string(i);
      if (const json* function = ObjectField(call, "function")) {
        out.name = JsonString(*function, "name");
        auto args = function->find("arguments");
        // Kept verbatim: the agent, not the client, judges whether the arguments parse.
        if (args != function->end() && args->is_string()) {
          out.arguments_json = args->get<std::string>();
        } else if (args != function->end() && !args->is_null()) {
          out.arguments_json = Dump(*args);
        }
      }
      turn.tool_calls.push_back(std::move(out));
    }
  }
  turn.finish_reason = ParseFinishReason(JsonString(choice, "finish_reason"));

  static const json kNoUsage = json::object();
  const json* usage_ptr = ObjectField(doc, "usage");
  const json& usage = usage_ptr ? *usage_ptr : kNoUsage;
  turn.usage.input_tokens = CountField(usage, "prompt_tokens");
  turn.usage.output_tokens = CountField(usage, "completion_tokens");
  if (const json* details = ObjectField(usage, "prompt_tokens_details")) {
    turn.usage.cached_tokens = CountField(*details, "cached_tokens");
    // OpenRouter's usage accounting (Anthropic models behind cache_control breakpoints).
    turn.usage.cache_write_tokens = CountField(*details, "cache_write_tokens");
  }
  auto cost = usage.find("cost");
  if (cost != usage.end() && cost->is_number()) {
    turn.cost_usd = cost->get<double>();
    turn.cost_reported = true;
  } else {
    const auto priced = config.prices.Cost(config.model, turn.usage);
    turn.cost_usd = priced.value_or(0.0);
    turn.cost_known = priced.has_value();
  }
  turn.cache_saved_usd = config.prices.CacheSavings(config.model, turn.usage);
  return turn;
}

class OpenAiClient final : public Client {
 public:
  explicit OpenAiClient(ClientConfig config) : config_(std::move(config)) {
    std::string base = config_.base_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    url_ = base + "/chat/completions";
    headers_ = {"Content-Type: application/json", "Accept: application/json",
                // curl's "Expect: 100-continue" on large bodies costs a round trip or a
                // 1 s stall with servers that ignore it.
                "Expect:"};
    if (!config_.api_key.empty()) headers_.push_back("Authorization: Bearer " + config_.api_key);
    if (config_.provider == Provider::kOpenRouter) headers_.push_back("X-Title: quarry");

    sampling_ = {config_.temperature, config_.max_output_tokens, config_.max_tokens_param,
                 config_.stream, config_.stream};
    rng_.seed(internal::JitterSeed(config_));
  }

  Result<Turn> Complete(const Request& request) override;
  Provider provider() const override { return config_.provider; }
  std::string model() const override { return config_.model; }
  std::optional<double> MaxCostUsd(int64_t prompt_tokens) const override {
    if (!sampling_.max_output_tokens) return std::nullopt;
    return internal::MaxCallCostUsd(config_, prompt_tokens, *sampling_.max_output_tokens);
  }

 private:
  // Changes sampling_ so the endpoint accepts it; returns what changed, for the trace.
  std::string Adapt(const std::string& param) {
    if (param == "stream_options") {
      sampling_.stream_options = false;
      return "resent without stream_options (usage is read only if the server sends it)";
    }
    if (param == "temperature") {
      sampling_.temperature.reset();
      temperature_rejected_ = true;
      return "resent without temperature";
    }
    const std::string other = param == "max_tokens" ? "max_completion_tokens" : "max_tokens";
    if (!limit_renamed_) {
      limit_renamed_ = true;
      sampling_.max_tokens_param = other;
      return "resent with " + other + " instead of " + param;
    }
    sampling_.max_output_tokens.reset();
    return "resent without an output token limit";
  }

  // Error text can echo what was sent (some servers quote the Authorization header).
  std::string Scrub(std::string text) const {
    return internal::ScrubSecret(std::move(text), config_.api_key);
  }

  ClientConfig config_;
  std::string url_;
  std::vector<std::string> headers_;
  internal::HttpSession session_;
  std::mt19937_64 rng_;
  Sampling sampling_;  // kept across requests: what the endpoint rejected stays off
  bool limit_renamed_ = false;
  bool temperature_rejected_ = false;
};

Result<Turn> OpenAiClient::Complete(const Request& request) {
  const auto start = std::chrono::steady_clock::now();
  const int max_attempts = std::max(1, config_.retry.max_attempts);
  const std::string where =
      std::string(ProviderName(config_.provider)) + " POST " + RedactUrl(url_);
  const std::string cancelled = where + ": cancelled (the model request was aborted)";
  std::vector<std::string> retried;
  int adaptations = 0;  // resends without a rejected parameter, apart from max_attempts
  int attempt = 1;
  // A parsed turn, with what this call took to get it.
  auto finish = [&](Turn turn) -> Result<Turn> {
    internal::ScrubTurn(turn, config_.api_key);
    turn.attempts = attempt;
    turn.retried_errors = std::move(retried);
    turn.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    return turn;
  };

  for (;; ++attempt) {
    if (request.stop.stop_requested()) return Fail(Error::Code::kCancelled, cancelled);
    Sampling sampling = sampling_;
    if (request.temperature && !temperature_rejected_) sampling.temperature = request.temperature;
    if (request.max_output_tokens && sampling.max_output_tokens) {
      sampling.max_output_tokens = request.max_output_tokens;
    }
    HttpPost post{url_,
                  headers_,
                  Dump(BuildBody(config_, request, sampling)),
                  config_.request_timeout_ms,
                  config_.connect_timeout_ms,
                  request.stop,
                  {}};
    bool waited = false;
    bool arriving = false;  // the first streamed bytes came: the live display takes over
    if (config_.on_wait) {
      post.on_wait = [&](int64_t ms) {
        if (arriving) return;
        waited = true;
        config_.on_wait(ms);
      };
    }
    std::optional<internal::CompletionStream> stream;
    if (sampling.stream) {
      stream.emplace(config_.on_stream);
      post.on_body = [&](std::string_view piece) {
        if (!arriving) {
          arriving = true;
          if (waited) config_.on_wait(-1);
          waited = false;
        }
        return stream->Feed(piece);
      };
    }
    HttpReply reply = session_.Post(post);
    if (waited) config_.on_wait(-1);
    if (reply.cancelled) return Fail(Error::Code::kCancelled, cancelled);

    std::string failure;
    bool retryable = false;
    if (reply.too_large) {
      return Fail(Error::Code::kModel,
                  where + ": the reply is larger than " +
                      std::to_string(post.max_reply_bytes >> 20) +
                      " MiB and was not read (a model's turn is far smaller: is the base URL a "
                      "chat completions endpoint?)");
    }
    // An event stream: a 2xx text/event-stream reply, also one whose connection broke (status 0)
    // after its headers and some of its body.
    const bool event_stream =
        stream && reply.content_type.starts_with("text/event-stream") &&
        (reply.status == 0 ? reply.streamed_bytes > 0 : reply.status >= 200 && reply.status < 300);
    if (event_stream) {
      const std::string message =
          stream->error_event().empty() ? "" : ProviderMessage(stream->error_event());
      internal::StreamOutcome outcome =
          internal::FinishStream(*stream, reply, message, post.timeout_ms);
      if (outcome.completion) {
        Result<Turn> turn = ParseCompletion(*outcome.completion, config_);
        if (!turn) return Fail(Error::Code::kModel, Scrub(where + ": " + turn.error().message));
        turn->streamed = true;
        return finish(std::move(*turn));
      }
      failure = std::move(outcome.failure);
      retryable = outcome.retryable;
    } else if (reply.status >= 200 && reply.status < 300) {
      std::string problem;
      json doc = internal::ParseProviderJson(reply.body, &problem);
      if (!doc.is_object()) {
        return Fail(Error::Code::kModel,
                    Scrub(where + ": reply " +
                          (doc.is_discarded() ? "refused, " + problem
                                              : std::string("is not a JSON object")) +
                          ": " + Snippet(reply.body)));
      }
      // OpenRouter can answer 200 with an upstream error inside; its code says what it was.
      if (doc.contains("error") && !doc.contains("choices")) {
        long code = static_cast<long>(IntField(doc["error"], "code"));
        failure = "HTTP " + std::to_string(reply.status) + " with error" +
                  (code != 0 ? " " + std::to_string(code) : std::string()) + ": " +
                  ProviderMessage(reply.body);
        retryable = internal::IsRetryableStatus(code);
      } else {
        Result<Turn> turn = ParseCompletion(doc, config_);
        if (!turn) return Fail(Error::Code::kModel, Scrub(where + ": " + turn.error().message));
        return finish(std::move(*turn));
      }
    } else if (reply.status == 0 && reply.timed_out) {
      // Resending would wait as long again for the same reply; the user sets the bound.
      failure = internal::TimeoutFailure(post.timeout_ms, reply.network_error);
    } else if (reply.status == 0) {
      failure = "network error: " + reply.network_error;
      retryable = true;
    } else {
      failure = "HTTP " + std::to_string(reply.status) + ": " + ProviderMessage(reply.body);
      retryable = internal::IsRetryableStatus(reply.status);
      std::vector<std::string> sent;
      if (sampling.temperature) sent.push_back("temperature");
      if (sampling.max_output_tokens) sent.push_back(sampling.max_tokens_param);
      if (sampling.stream && sampling.stream_options) sent.push_back("stream_options");
      const std::string rejected = RejectedParameter(reply.status, reply.body, sent);
      if (!rejected.empty() && adaptations < 4) {
        ++adaptations;
        --attempt;  // not a transient failure: does not use up an attempt
        std::string line =
            Scrub(failure + "; " + Adapt(rejected) + " (kept for the rest of this run)");
        if (config_.on_retry) config_.on_retry(line);
        retried.push_back(std::move(line));
        continue;
      }
    }
    if (reply.status != 0 && SaysTooLarge(reply.body)) {
      return Fail(Error::Code::kModel,
                  Scrub(internal::TooLargeMessage(where, request, post.body.size(), failure)));
    }

    if (!retryable || attempt >= max_attempts) {
      std::string tries =
          attempt > 1 ? " (after " + std::to_string(attempt) + " attempts)" : std::string();
      return Fail(Error::Code::kModel, Scrub(where + " failed" + tries + ": " + failure));
    }
    const int64_t delay_ms = internal::RetryDelayMs(config_, reply, attempt, rng_);
    internal::NoteRetry(config_, failure, delay_ms, attempt, max_attempts, retried);
    internal::WaitBetweenAttempts(config_, std::chrono::milliseconds(delay_ms), request.stop);
  }
}

}  // namespace

std::unique_ptr<Client> MakeOpenAiClient(ClientConfig config) {
  return std::make_unique<OpenAiClient>(std::move(config));
}

std::unique_ptr<Client> MakeLiveClient(ClientConfig config) {
  if (config.provider == Provider::kAnthropic) return MakeAnthropicClient(std::move(config));
  return MakeOpenAiClient(std::move(config));
}

}  // namespace quarry::llm
