// The OpenAI-compatible client against faults of a real stand-in on 127.0.0.1: prompts too
// large for the model, timeouts, cancellation, parameters the endpoint rejects, dropped and
// truncated replies, oversized and deeply nested ones. Backoff sleeps are injected and
// recorded, except where the test is about the real wait.
#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "quarry/common/json.h"
#include "quarry/llm/llm.h"
#include "support/provider_server.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::CompletionBody;
using quarry::testing::ErrorBody;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedCompletion;
using quarry::testing::TextReply;
using quarry::testing::ToolCallReply;
using Clock = std::chrono::steady_clock;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

Request Question() {
  Request request;
  request.messages = {{Role::kSystem, "You are a data analyst.", {}, ""},
                      {Role::kUser, "How many rows are in sales?", {}, ""}};
  return request;
}

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A reply whose one tool call carries `arguments` as a JSON value, not as a string.
std::string ObjectArgumentsReply(const std::string& arguments) {
  return R"({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": )"
         R"("assistant", "content": null, "tool_calls": [{"id": "call_deep", "type": )"
         R"("function", "function": {"name": "run_sql", "arguments": )" +
         arguments + "}}]}}], \"usage\": {\"prompt_tokens\": 10, \"completion_tokens\": 5}}";
}

class ProviderFaultsTest : public ::testing::Test {
 protected:
  ClientConfig Config() {
    ClientConfig config;
    config.base_url = server_.base_url();
    config.model = "openai/gpt-4o-mini";
    config.api_key = "sk-test-0123456789abcdefSECRET";
    config.request_timeout_ms = 10000;
    config.connect_timeout_ms = 5000;
    config.retry = RetryPolicy{4, 500, 30000};
    config.sleep = [this](std::chrono::milliseconds d) { sleeps_ms_.push_back(d.count()); };
    config.jitter_seed = 7;
    return config;
  }

  ProviderServer server_;
  std::vector<int64_t> sleeps_ms_;
};

TEST_F(ProviderFaultsTest, ContextLengthRateLimitFailsAtOnceWithThePromptSize) {
  server_.Enqueue({429,
                   {},
                   ErrorBody("This model's maximum context length is 8192 tokens. "
                             "However, your messages resulted in 9500 tokens.",
                             429)});
  Request request = Question();
  request.prompt_tokens_estimate = 9321;
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(request);
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "the request is too large for the model"));
  EXPECT_TRUE(Contains(turn.error().message, "~9321 tokens estimated"));
  EXPECT_TRUE(Contains(turn.error().message, "bytes of JSON in 2 messages"));
  EXPECT_TRUE(Contains(turn.error().message, "maximum context length is 8192"));
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_TRUE(sleeps_ms_.empty());

  // OpenAI's "Request too large ... tokens per min" cannot succeed either; its ordinary
  // "Rate limit reached ... tokens per min" is transient and is retried.
  server_.Enqueue({429,
                   {},
                   ErrorBody("Request too large for gpt-4o in organization org-x on "
                             "tokens per min (TPM): Limit 30000, Requested 45000.")});
  EXPECT_FALSE(MakeOpenAiClient(Config())->Complete(Question()));
  EXPECT_EQ(server_.requests().size(), 2u);
  server_.Enqueue({429,
                   {},
                   ErrorBody("Rate limit reached for gpt-4o in organization org-x on "
                             "tokens per min (TPM): Limit 30000, Used 29000.")});
  server_.Enqueue({200, {}, TextReply("ok")});
  Result<Turn> transient = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(transient) << transient.error().message;
  EXPECT_EQ(transient->attempts, 2);
  EXPECT_EQ(server_.requests().size(), 4u);
}

TEST_F(ProviderFaultsTest, TimedOutRequestIsNotResent) {
  server_.Enqueue({200, {}, TextReply("late"), std::chrono::milliseconds(5000)});
  ClientConfig config = Config();
  config.request_timeout_ms = 300;
  std::vector<std::string> retry_lines;
  config.on_retry = [&](const std::string& line) { retry_lines.push_back(line); };
  const auto start = Clock::now();
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "no reply within the request timeout of 0.3 s"));
  EXPECT_TRUE(Contains(turn.error().message, "not resent"));
  EXPECT_TRUE(Contains(turn.error().message, "QUARRY_REQUEST_TIMEOUT"));
  EXPECT_LT(MsSince(start), 2000);
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_TRUE(retry_lines.empty());
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(ProviderFaultsTest, WaitingIsReportedAboutOnceASecondThenEnded) {
  server_.Enqueue({200, {}, TextReply("slow but fine"), std::chrono::milliseconds(2300)});
  ClientConfig config = Config();
  std::vector<int64_t> waits;
  config.on_wait = [&](int64_t ms) { waits.push_back(ms); };
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  ASSERT_EQ(waits.size(), 3u) << "1 s, 2 s, then the end";
  EXPECT_GE(waits[0], 1000);
  EXPECT_LT(waits[0], 2000);
  EXPECT_GE(waits[1], 2000);
  EXPECT_EQ(waits[2], -1);

  // A quick reply shows nothing.
  waits.clear();
  server_.Enqueue({200, {}, TextReply("quick")});
  ASSERT_TRUE(MakeOpenAiClient(config)->Complete(Question()));
  EXPECT_TRUE(waits.empty());
}

TEST_F(ProviderFaultsTest, StopAbortsTheExchangeWithinASecond) {
  server_.Enqueue({200, {}, TextReply("never seen"), std::chrono::milliseconds(8000)});
  server_.Enqueue({200, {}, TextReply("not asked for")});
  std::stop_source source;
  Request request = Question();
  request.stop = source.get_token();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    source.request_stop();
  });
  const auto start = Clock::now();
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(request);
  const int64_t elapsed = MsSince(start);
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kCancelled);
  EXPECT_TRUE(Contains(turn.error().message, "cancelled"));
  EXPECT_GE(elapsed, 250);
  EXPECT_LT(elapsed, 2000);  // libcurl calls the progress callback once a second when idle
  EXPECT_EQ(server_.requests().size(), 1u) << "no retry after a cancel";
  EXPECT_EQ(server_.pending(), 1u);

  // Already stopped: nothing is sent.
  Result<Turn> again = MakeOpenAiClient(Config())->Complete(request);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Error::Code::kCancelled);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(ProviderFaultsTest, StopEndsTheWaitBeforeAResend) {
  server_.Enqueue({503, {{"Retry-After", "20"}}, ErrorBody("overloaded", 503)});
  server_.Enqueue({200, {}, TextReply("not asked for")});
  ClientConfig config = Config();
  config.sleep = nullptr;  // the real, interruptible wait
  std::stop_source source;
  Request request = Question();
  request.stop = source.get_token();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    source.request_stop();
  });
  const auto start = Clock::now();
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(request);
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kCancelled);
  EXPECT_LT(MsSince(start), 1600);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(ProviderFaultsTest, RejectedTemperatureIsDroppedForTheRestOfTheRun) {
  json rejection = {{"error",
                     {{"message",
                       "Unsupported value: 'temperature' does not support 0 with this "
                       "model. Only the default (1) value is supported."},
                      {"type", "invalid_request_error"},
                      {"param", "temperature"},
                      {"code", "unsupported_value"}}}};
  server_.Enqueue({400, {}, rejection.dump()});
  server_.Enqueue({200, {}, TextReply("first")});
  server_.Enqueue({200, {}, TextReply("second")});
  ClientConfig config = Config();
  std::vector<std::string> retry_lines;
  config.on_retry = [&](const std::string& line) { retry_lines.push_back(line); };
  auto client = MakeOpenAiClient(config);
  Result<Turn> first = client->Complete(Question());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->content, "first");
  EXPECT_EQ(first->attempts, 1) << "an adaptation is not a transient retry";
  ASSERT_EQ(first->retried_errors.size(), 1u);
  EXPECT_TRUE(Contains(first->retried_errors[0], "HTTP 400"));
  EXPECT_TRUE(Contains(first->retried_errors[0], "resent without temperature"));
  EXPECT_TRUE(Contains(first->retried_errors[0], "kept for the rest of this run"));
  EXPECT_EQ(retry_lines, first->retried_errors);
  Result<Turn> second = client->Complete(Question());
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->retried_errors.empty());

  const auto sent = server_.requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].Json()["temperature"], 0.0);
  EXPECT_FALSE(sent[1].Json().contains("temperature"));
  EXPECT_FALSE(sent[2].Json().contains("temperature"));
  EXPECT_EQ(sent[2].Json()["max_tokens"], 2048);
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(ProviderFaultsTest, RejectedMaxTokensIsSentAsMaxCompletionTokens) {
  server_.Enqueue({400,
                   {},
                   ErrorBody("Unsupported parameter: 'max_tokens' is not supported with this "
                             "model. Use 'max_completion_tokens' instead.")});
  server_.Enqueue({200, {}, TextReply("ok")});
  ClientConfig config = Config();
  config.max_output_tokens = 777;
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_TRUE(Contains(turn->retried_errors.at(0),
                       "resent with max_completion_tokens instead of max_tokens"));
  const auto sent = server_.requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].Json()["max_tokens"], 777);
  EXPECT_FALSE(sent[1].Json().contains("max_tokens"));
  EXPECT_EQ(sent[1].Json()["max_completion_tokens"], 777);

  // Another 400 is not an unsupported parameter: no resend.
  server_.Enqueue({400, {}, ErrorBody("messages: field required")});
  EXPECT_FALSE(MakeOpenAiClient(config)->Complete(Question()));
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(ProviderFaultsTest, ReasoningModelsGetMaxCompletionTokensAndNoTemperature) {
  Settings flags;
  flags.base_url = server_.base_url();
  flags.model = "openai/o3-mini";
  Result<ClientConfig> config =
      ResolveConfig(flags, [](const char*) { return std::optional<std::string>(); }, {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->max_tokens_param, "max_completion_tokens");
  EXPECT_FALSE(config->temperature.has_value());
  server_.Enqueue({200, {}, TextReply("ok")});
  ASSERT_TRUE(MakeOpenAiClient(*config)->Complete(Question()));
  const json body = server_.requests().at(0).Json();
  EXPECT_EQ(body["max_completion_tokens"], 2048);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_TRUE(IsOpenAiReasoningModel("gpt-5-mini"));
  EXPECT_TRUE(IsOpenAiReasoningModel("o1"));
  EXPECT_FALSE(IsOpenAiReasoningModel("openai/gpt-4o-mini"));
  EXPECT_FALSE(IsOpenAiReasoningModel("ollama/olmo-2"));
}

TEST_F(ProviderFaultsTest, CutOffReplyKeepsItsFinishReason) {
  ScriptedCompletion cut;
  cut.tool_calls = {{"call_cut", "run_sql", R"({"sql": "SELECT reg)"}};
  cut.finish_reason = "length";
  server_.Enqueue({200, {}, CompletionBody(cut)});
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(FinishReasonName(turn->finish_reason), "length");
  EXPECT_EQ(turn->tool_calls.at(0).arguments_json, R"({"sql": "SELECT reg)");
}

TEST_F(ProviderFaultsTest, DroppedConnectionMidBodyIsRetried) {
  const std::string whole = TextReply("complete");
  server_.Enqueue({200, {}, whole, {}, whole.size() / 2});
  server_.Enqueue({200, {}, whole});
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, "complete");
  EXPECT_EQ(turn->attempts, 2);
  EXPECT_TRUE(Contains(turn->retried_errors.at(0), "network error"));
  EXPECT_EQ(server_.requests().size(), 2u);
  EXPECT_EQ(sleeps_ms_.size(), 1u);
}

TEST_F(ProviderFaultsTest, TruncatedOrInvalidBodyIsAModelError) {
  const std::string whole = TextReply("complete");
  server_.Enqueue({200, {}, whole.substr(0, whole.size() / 2)});
  auto client = MakeOpenAiClient(Config());
  Result<Turn> truncated = client->Complete(Question());
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(truncated.error().message, "reply refused, not valid JSON"));
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(ProviderFaultsTest, ReplyOverEightMebibytesIsNotRead) {
  server_.Enqueue({200, {}, TextReply(std::string(10u << 20, 'x'))});
  const auto start = Clock::now();
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "larger than 8 MiB"));
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_TRUE(sleeps_ms_.empty());
  EXPECT_LT(MsSince(start), 5000);
}

TEST_F(ProviderFaultsTest, DeeplyNestedArgumentsObjectIsRefusedOrKeptBounded) {
  server_.Enqueue({200, {}, ObjectArgumentsReply(Nested(100000))});
  Result<Turn> deep = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(deep.error().message, "nested more than 256 levels"));

  // Within the bound the arguments come back as text that parses again.
  server_.Enqueue({200, {}, ObjectArgumentsReply(R"({"sql": )" + Nested(200) + "}")});
  Result<Turn> shallow = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(shallow) << shallow.error().message;
  const json args = ParseJson(shallow->tool_calls.at(0).arguments_json);
  ASSERT_TRUE(args.is_object());
  EXPECT_TRUE(args["sql"].is_array());
}

TEST_F(ProviderFaultsTest, MaxCostIsThePromptAndTheWholeOutputLimitAtListPrice) {
  ClientConfig config = Config();
  config.max_output_tokens = 1000;
  auto client = MakeOpenAiClient(config);
  // gpt-4o-mini: $0.15 in, $0.60 out per million tokens.
  ASSERT_TRUE(client->MaxCostUsd(2000).has_value());
  EXPECT_NEAR(*client->MaxCostUsd(2000), (2000 * 0.15 + 1000 * 0.60) / 1e6, 1e-12);
  // anthropic/* through OpenRouter: any prompt token may be a cache write at $3.75, not $3.
  config.model = "anthropic/claude-sonnet-4.5";
  EXPECT_NEAR(*MakeOpenAiClient(config)->MaxCostUsd(2000), (2000 * 3.75 + 1000 * 15.0) / 1e6,
              1e-12);
  config.model = "no-such-model";
  EXPECT_FALSE(MakeOpenAiClient(config)->MaxCostUsd(2000).has_value());
}

}  // namespace
}  // namespace quarry::llm
