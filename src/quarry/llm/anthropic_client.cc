// Anthropic's Messages API client: Request -> Messages JSON with cache breakpoints
// (anthropic_messages.cc), POST with the retry loop shared with the OpenAI-compatible client
// (client_internal.h), whole or streamed reply (anthropic_stream.cc) -> Turn.
#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/llm/anthropic_internal.h"
#include "quarry/llm/client_internal.h"
#include "quarry/llm/http_internal.h"
#include "quarry/llm/llm.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using internal::HttpPost;
using internal::HttpReply;
using internal::MessageStream;

class AnthropicClient final : public Client {
 public:
  explicit AnthropicClient(ClientConfig config) : config_(std::move(config)) {
    std::string base = config_.base_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    url_ = base + "/messages";
    headers_ = {"content-type: application/json",
                std::string("anthropic-version: ") + internal::kAnthropicVersion,
                config_.stream ? "accept: text/event-stream" : "accept: application/json",
                // curl's "Expect: 100-continue" on large bodies costs a round trip.
                "Expect:"};
    if (!config_.api_key.empty()) headers_.push_back("x-api-key: " + config_.api_key);
    rng_.seed(internal::JitterSeed(config_));
  }

  Result<Turn> Complete(const Request& request) override;
  Provider provider() const override { return config_.provider; }
  std::string model() const override { return config_.model; }
  std::optional<double> MaxCostUsd(int64_t prompt_tokens) const override {
    return internal::MaxCallCostUsd(config_, prompt_tokens, config_.max_output_tokens);
  }

 private:
  std::string Scrub(std::string text) const {
    return internal::ScrubSecret(std::move(text), config_.api_key);
  }

  ClientConfig config_;
  std::string url_;
  std::vector<std::string> headers_;
  internal::HttpSession session_;
  std::mt19937_64 rng_;
};

// What one attempt came to: a turn, or a failure line and whether a resend may cure it.
struct Outcome {
  std::optional<Turn> turn;
  std::string failure;
  bool retryable = false;
};

// A 2xx reply read whole (also the answer of a server that ignores "stream": true).
Outcome ReadWhole(const HttpReply& reply, const ClientConfig& config) {
  std::string problem;
  const json doc = internal::ParseProviderJson(reply.body, &problem);
  if (!doc.is_object()) {
    return {std::nullopt,
            "reply " +
                (doc.is_discarded() ? "refused, " + problem : std::string("is not a JSON object")) +
                ": " + internal::Snippet(reply.body),
            false};
  }
  if (JsonString(doc, "type") == "error") {  // a proxy can answer 200 with an error inside
    const std::string type = internal::AnthropicErrorType(doc);
    return {std::nullopt,
            "HTTP " + std::to_string(reply.status) + " with error " +
                internal::AnthropicErrorText(reply.body),
            internal::IsRetryableErrorType(type)};
  }
  Result<Turn> turn = internal::ParseMessagesReply(doc, config);
  if (!turn) return {std::nullopt, turn.error().message, false};
  return {std::move(*turn), "", false};
}

// A reply that came as server-sent events (`stream` has read all of it that arrived).
// Retries: an error event is resent when its type is transient and no piece of the reply has
// been passed on yet (after that, a resend would show the user a second, different start);
// a connection dropped before any byte arrived is resent, after that it is not (the partial
// reply cannot be continued and was already shown).
Outcome ReadStream(const HttpReply& reply, const MessageStream& stream,
                   const ClientConfig& config) {
  const std::string received = " (received: " + stream.Received() + ")";
  if (!stream.error_type().empty()) {
    std::string failure = "error event mid-stream: " + stream.error_type() +
                          (stream.error_message().empty() ? "" : ": " + stream.error_message()) +
                          received;
    const bool transient = internal::IsRetryableErrorType(stream.error_type());
    if (transient && stream.deltas() > 0) {
      failure += "; not resent: " + std::to_string(stream.deltas()) +
                 " pieces of the reply had already arrived";
    }
    return {std::nullopt, failure, transient && stream.deltas() == 0};
  }
  if (!stream.problem().empty()) {
    return {std::nullopt, "unreadable stream: " + stream.problem() + received, false};
  }
  if (reply.status == 0) {
    if (reply.streamed_bytes == 0) {
      return {std::nullopt, "network error: " + reply.network_error, true};
    }
    return {std::nullopt,
            "the stream was cut off after " + std::to_string(reply.streamed_bytes) + " bytes" +
                received +
                "; not resent (a partial reply cannot be continued): " + reply.network_error,
            false};
  }
  if (!stream.complete()) {
    return {std::nullopt,
            "the stream ended without message_stop after " + std::to_string(reply.streamed_bytes) +
                " bytes" + received,
            reply.streamed_bytes == 0};
  }
  Result<Turn> turn = internal::ParseMessagesReply(stream.Message(), config);
  if (!turn) return {std::nullopt, turn.error().message, false};
  turn->streamed = true;
  return {std::move(*turn), "", false};
}

Result<Turn> AnthropicClient::Complete(const Request& request) {
  const auto start = std::chrono::steady_clock::now();
  const int max_attempts = std::max(1, config_.retry.max_attempts);
  const std::string where =
      std::string(ProviderName(config_.provider)) + " POST " + RedactUrl(url_);
  const std::string cancelled = where + ": cancelled (the model request was aborted)";
  const json body = internal::BuildMessagesBody(config_, request, config_.stream);
  if (body["messages"].empty()) {
    return Fail(Error::Code::kModel,
                where + ": nothing to send: the conversation has no user or assistant message");
  }
  const std::string body_text = internal::Dump(body);
  std::vector<std::string> retried;

  for (int attempt = 1;; ++attempt) {
    if (request.stop.stop_requested()) return Fail(Error::Code::kCancelled, cancelled);
    HttpPost post{
        url_,         headers_, body_text, config_.request_timeout_ms, config_.connect_timeout_ms,
        request.stop, {}};
    bool waited = false;
    if (config_.on_wait) {
      post.on_wait = [&](int64_t ms) {
        waited = true;
        config_.on_wait(ms);
      };
    }
    // A retried attempt starts over (ClientConfig::on_stream).
    std::optional<MessageStream> stream;
    if (config_.stream) {
      stream.emplace(config_.on_stream);
      post.on_body = [&stream](std::string_view piece) { return stream->Feed(piece); };
    }
    HttpReply reply = session_.Post(post);
    if (waited) config_.on_wait(-1);
    if (reply.cancelled) return Fail(Error::Code::kCancelled, cancelled);
    if (reply.too_large) {
      return Fail(Error::Code::kModel,
                  where + ": the reply is larger than " +
                      std::to_string(post.max_reply_bytes >> 20) +
                      " MiB and was not read (a model's turn is far smaller: is the base URL "
                      "the Messages API's, e.g. https://api.anthropic.com/v1?)");
    }

    Outcome outcome;
    const bool event_stream =
        stream && (reply.streamed_bytes > 0 ||
                   ((reply.status == 0 || (reply.status >= 200 && reply.status < 300)) &&
                    reply.content_type.starts_with("text/event-stream")));
    if (event_stream) {
      outcome = ReadStream(reply, *stream, config_);
      if (reply.status == 0 && reply.timed_out && outcome.failure.starts_with("network")) {
        outcome = {std::nullopt, internal::TimeoutFailure(post.timeout_ms, reply.network_error),
                   false};
      }
    } else if (reply.status == 0 && reply.timed_out) {
      // Resending would wait as long again for the same reply; the user sets the bound.
      outcome = {std::nullopt, internal::TimeoutFailure(post.timeout_ms, reply.network_error),
                 false};
    } else if (reply.status == 0) {
      outcome = {std::nullopt, "network error: " + reply.network_error, true};
    } else if (reply.status >= 200 && reply.status < 300) {
      outcome = ReadWhole(reply, config_);
    } else {
      outcome = {
          std::nullopt,
          "HTTP " + std::to_string(reply.status) + " " + internal::AnthropicErrorText(reply.body),
          internal::IsRetryableStatus(reply.status)};
      // 413 request_too_large (over 32 MB) and 400 "prompt is too long: N tokens > M
      // maximum": no resend can succeed.
      if (reply.status == 413 || internal::SaysTooLarge(reply.body)) {
        return Fail(Error::Code::kModel, Scrub(internal::TooLargeMessage(
                                             where, request, body_text.size(), outcome.failure)));
      }
    }

    if (outcome.turn) {
      Turn turn = std::move(*outcome.turn);
      internal::ScrubTurn(turn, config_.api_key);
      turn.attempts = attempt;
      turn.retried_errors = std::move(retried);
      turn.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      return turn;
    }
    if (!outcome.retryable || attempt >= max_attempts) {
      std::string tries =
          attempt > 1 ? " (after " + std::to_string(attempt) + " attempts)" : std::string();
      return Fail(Error::Code::kModel, Scrub(where + " failed" + tries + ": " + outcome.failure));
    }
    const int64_t delay_ms = internal::RetryDelayMs(config_, reply, attempt, rng_);
    internal::NoteRetry(config_, outcome.failure, delay_ms, attempt, max_attempts, retried);
    internal::WaitBetweenAttempts(config_, std::chrono::milliseconds(delay_ms), request.stop);
  }
}

}  // namespace

std::unique_ptr<Client> MakeAnthropicClient(ClientConfig config) {
  return std::make_unique<AnthropicClient>(std::move(config));
}

}  // namespace quarry::llm
