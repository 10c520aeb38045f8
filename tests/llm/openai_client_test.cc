// The OpenAI-compatible client against a real HTTP stand-in on 127.0.0.1: what it sends, what
// it parses, and how it retries. Sleeps are injected and recorded, never slept.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "quarry/llm/llm.h"
#include "support/provider_server.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ClosedPort;
using quarry::testing::CompletionBody;
using quarry::testing::ErrorBody;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedCompletion;
using quarry::testing::TextReply;
using quarry::testing::ToolCallReply;

constexpr const char* kKey = "sk-test-0123456789abcdefSECRET";

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

class OpenAiClientTest : public ::testing::Test {
 protected:
  ClientConfig Config() {
    ClientConfig config;
    config.base_url = server_.base_url();
    config.model = "openai/gpt-4o-mini";
    config.api_key = kKey;
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

TEST_F(OpenAiClientTest, ParsesToolCallsWithIdsAndRawArguments) {
  server_.Enqueue({200,
                   {},
                   ToolCallReply({{"call_a", "run_sql", R"({"sql": "SELECT count(*) FROM sales"})"},
                                  {"call_b", "describe_table", R"({"table":"sales"})"}})});
  auto client = MakeOpenAiClient(Config());
  Result<Turn> turn = client->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  ASSERT_EQ(turn->tool_calls.size(), 2u);
  EXPECT_EQ(turn->tool_calls[0].id, "call_a");
  EXPECT_EQ(turn->tool_calls[0].name, "run_sql");
  EXPECT_EQ(turn->tool_calls[0].arguments_json, R"({"sql": "SELECT count(*) FROM sales"})");
  EXPECT_EQ(turn->tool_calls[1].name, "describe_table");
  EXPECT_EQ(FinishReasonName(turn->finish_reason), "tool_calls");
  EXPECT_EQ(turn->content, "");
  EXPECT_EQ(turn->attempts, 1);
  EXPECT_EQ(ProviderName(client->provider()), "openai-compatible");
  EXPECT_EQ(client->model(), "openai/gpt-4o-mini");
}

TEST_F(OpenAiClientTest, SendsConversationToolsAndBearerKey) {
  server_.Enqueue({200, {}, TextReply("There are 42 rows.")});
  Request request = Question();
  request.messages.push_back(
      {Role::kAssistant, "", {{"call_1", "run_sql", R"({"sql":"SELECT 42"})"}}, ""});
  request.messages.push_back({Role::kTool, R"({"rows":[[42]]})", {}, "call_1"});
  request.tools.push_back({"run_sql", "Run one read-only SQL query.",
                           json{{"type", "object"},
                                {"properties", {{"sql", {{"type", "string"}}}}},
                                {"required", {"sql"}}}});
  request.temperature = 0.25;
  request.max_output_tokens = 512;

  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(request);
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, "There are 42 rows.");
  EXPECT_EQ(FinishReasonName(turn->finish_reason), "stop");

  std::vector<quarry::testing::RecordedRequest> sent = server_.requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].path, "/v1/chat/completions");
  EXPECT_EQ(sent[0].Header("Authorization"), std::string("Bearer ") + kKey);
  EXPECT_TRUE(Contains(sent[0].Header("Content-Type"), "application/json"));
  json body = sent[0].Json();
  ASSERT_TRUE(body.is_object()) << sent[0].body;
  EXPECT_EQ(body["model"], "openai/gpt-4o-mini");
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0],
            json({{"role", "system"}, {"content", "You are a data analyst."}}));
  const json& assistant = body["messages"][2];
  EXPECT_EQ(assistant["role"], "assistant");
  EXPECT_TRUE(assistant["content"].is_null());
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(assistant["tool_calls"][0]["type"], "function");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "run_sql");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"], R"({"sql":"SELECT 42"})");
  EXPECT_EQ(
      body["messages"][3],
      json({{"role", "tool"}, {"content", R"({"rows":[[42]]})"}, {"tool_call_id", "call_1"}}));
  ASSERT_EQ(body["tools"].size(), 1u);
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "run_sql");
  EXPECT_EQ(body["tools"][0]["function"]["description"], "Run one read-only SQL query.");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["required"], json({"sql"}));
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_EQ(body["temperature"], 0.25);
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_FALSE(body.contains("usage")) << "only OpenRouter understands usage.include";
}

TEST_F(OpenAiClientTest, OpenRouterReportedCostIsUsed) {
  ScriptedCompletion reply;
  reply.content = "done";
  reply.prompt_tokens = 1000;
  reply.completion_tokens = 200;
  reply.cached_tokens = 400;
  reply.cost_usd = 0.00123;
  server_.Enqueue({200, {}, CompletionBody(reply)});
  ClientConfig config = Config();
  config.provider = Provider::kOpenRouter;
  auto client = MakeOpenAiClient(config);
  Result<Turn> turn = client->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_TRUE(turn->cost_reported);
  EXPECT_DOUBLE_EQ(turn->cost_usd, 0.00123);
  EXPECT_EQ(turn->usage.input_tokens, 1000);
  EXPECT_EQ(turn->usage.output_tokens, 200);
  EXPECT_EQ(turn->usage.cached_tokens, 400);
  EXPECT_EQ(ProviderName(client->provider()), "openrouter");
  json body = server_.requests().at(0).Json();
  EXPECT_EQ(body["usage"], json({{"include", true}}));
}

TEST_F(OpenAiClientTest, PriceTableCostWhenProviderReportsNone) {
  ScriptedCompletion reply;
  reply.content = "done";
  reply.prompt_tokens = 1000;
  reply.completion_tokens = 200;
  reply.cached_tokens = 400;
  server_.Enqueue({200, {}, CompletionBody(reply)});
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_FALSE(turn->cost_reported);
  // gpt-4o-mini: 600 uncached * 0.15 + 400 cached * 0.075 + 200 out * 0.60, per million.
  EXPECT_NEAR(turn->cost_usd, (600 * 0.15 + 400 * 0.075 + 200 * 0.60) / 1e6, 1e-15);
  EXPECT_NEAR(turn->cost_usd, 0.00024, 1e-12);

  server_.Enqueue({200, {}, TextReply("done", 1000)});
  ClientConfig unknown = Config();
  unknown.model = "someone/unpriced-model";
  Result<Turn> unpriced = MakeOpenAiClient(unknown)->Complete(Question());
  ASSERT_TRUE(unpriced) << unpriced.error().message;
  EXPECT_EQ(unpriced->cost_usd, 0.0);
}

TEST_F(OpenAiClientTest, RateLimitWaitsForRetryAfter) {
  server_.Enqueue({429, {{"Retry-After", "2"}}, ErrorBody("Rate limit exceeded", 429)});
  server_.Enqueue({200, {}, TextReply("ok")});
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, "ok");
  EXPECT_EQ(turn->attempts, 2);
  EXPECT_EQ(sleeps_ms_, std::vector<int64_t>{2000});
  EXPECT_EQ(server_.requests().size(), 2u);
  ASSERT_EQ(turn->retried_errors.size(), 1u);
  EXPECT_TRUE(Contains(turn->retried_errors[0], "HTTP 429"));
  EXPECT_TRUE(Contains(turn->retried_errors[0], "Rate limit exceeded"));
}

TEST_F(OpenAiClientTest, RetryAfterIsCappedAtMaxDelay) {
  server_.Enqueue({503, {{"Retry-After", "3600"}}, ErrorBody("overloaded")});
  server_.Enqueue({200, {}, TextReply("ok")});
  ClientConfig config = Config();
  config.retry.max_delay_ms = 5000;
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(sleeps_ms_, std::vector<int64_t>{5000});
}

TEST_F(OpenAiClientTest, ServerErrorIsRetriedWithJitteredBackoff) {
  server_.Enqueue({500, {}, ErrorBody("internal error")});
  server_.Enqueue({200, {}, TextReply("ok")});
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->attempts, 2);
  ASSERT_EQ(sleeps_ms_.size(), 1u);
  EXPECT_GE(sleeps_ms_[0], 0);
  EXPECT_LE(sleeps_ms_[0], 500);  // first retry: full jitter under base_delay_ms
}

TEST_F(OpenAiClientTest, UnauthorizedIsNotRetriedAndKeyIsMasked) {
  // Some providers echo the presented key back in the error text.
  server_.Enqueue({401, {}, ErrorBody(std::string("Invalid API key: ") + kKey, 401)});
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "HTTP 401"));
  EXPECT_TRUE(Contains(turn.error().message, "Invalid API key"));
  EXPECT_FALSE(Contains(turn.error().message, kKey));
  EXPECT_FALSE(Contains(turn.error().message, "SECRET"));
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(OpenAiClientTest, OtherClientErrorsAreNotRetried) {
  auto client = MakeOpenAiClient(Config());
  size_t before = 0;
  for (int status : {400, 402, 403, 404, 422}) {
    server_.Enqueue({status, {}, ErrorBody("refused " + std::to_string(status))});
    Result<Turn> turn = client->Complete(Question());
    ASSERT_FALSE(turn) << status;
    EXPECT_TRUE(Contains(turn.error().message, "HTTP " + std::to_string(status)));
    EXPECT_TRUE(Contains(turn.error().message, "refused " + std::to_string(status)));
    EXPECT_EQ(server_.requests().size(), before + 1) << status;
    before = server_.requests().size();
  }
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(OpenAiClientTest, NetworkErrorRetriedUntilAttemptsRunOut) {
  ClosedPort closed;
  ClientConfig config = Config();
  config.base_url = closed.base_url();
  config.retry.max_attempts = 3;
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "network error"));
  EXPECT_TRUE(Contains(turn.error().message, "after 3 attempts"));
  EXPECT_EQ(sleeps_ms_.size(), 2u);
}

TEST_F(OpenAiClientTest, MalformedArgumentsComeBackRawAndGoOutWrapped) {
  const std::string raw = R"({"sql": "SELECT)";
  server_.Enqueue({200, {}, ToolCallReply({{"call_x", "run_sql", raw}})});
  server_.Enqueue({200, {}, TextReply("fixed")});
  auto client = MakeOpenAiClient(Config());
  Request request = Question();
  Result<Turn> turn = client->Complete(request);
  ASSERT_TRUE(turn) << turn.error().message;
  ASSERT_EQ(turn->tool_calls.size(), 1u);
  EXPECT_EQ(turn->tool_calls[0].arguments_json, raw);

  request.messages.push_back({Role::kAssistant, "", turn->tool_calls, ""});
  request.messages.push_back({Role::kTool, "bad_arguments: not valid JSON", {}, "call_x"});
  ASSERT_TRUE(client->Complete(request));
  json sent = server_.requests().at(1).Json();
  auto history_args =
      sent["messages"][2]["tool_calls"][0]["function"]["arguments"].get<std::string>();
  EXPECT_EQ(json::parse(history_args, nullptr, false), json({{"invalid_json", raw}}));
}

TEST_F(OpenAiClientTest, SlowReplyTimesOut) {
  server_.Enqueue({200, {}, TextReply("late"), std::chrono::milliseconds(3000)});
  ClientConfig config = Config();
  config.request_timeout_ms = 300;
  config.retry.max_attempts = 1;
  auto start = std::chrono::steady_clock::now();
  Result<Turn> turn = MakeOpenAiClient(config)->Complete(Question());
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message, "timed out"));
  EXPECT_TRUE(Contains(turn.error().message, "request timeout of 0.3 s"));
  EXPECT_LT(elapsed, std::chrono::milliseconds(2000));
}

TEST_F(OpenAiClientTest, UpstreamErrorInsideOkReplyIsRetriedByItsCode) {
  server_.Enqueue({200, {}, ErrorBody("upstream provider unavailable", 502)});
  server_.Enqueue({200, {}, TextReply("ok")});
  Result<Turn> turn = MakeOpenAiClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->attempts, 2);
  EXPECT_TRUE(Contains(turn->retried_errors.at(0), "upstream provider unavailable"));
}

TEST_F(OpenAiClientTest, UnparseableReplyIsAModelError) {
  server_.Enqueue({200, {}, "<html>gateway</html>"});
  server_.Enqueue({200, {}, R"({"choices": []})"});
  auto client = MakeOpenAiClient(Config());
  Result<Turn> html = client->Complete(Question());
  ASSERT_FALSE(html);
  EXPECT_EQ(html.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(html.error().message, "not valid JSON"));
  Result<Turn> empty = client->Complete(Question());
  ASSERT_FALSE(empty);
  EXPECT_TRUE(Contains(empty.error().message, "no choices"));
}

}  // namespace
}  // namespace quarry::llm
