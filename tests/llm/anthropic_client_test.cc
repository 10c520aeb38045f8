// The Anthropic Messages API client against the real stand-in on 127.0.0.1: the request it
// sends (headers, system blocks, tools, history, cache breakpoints), the replies it parses,
// usage and cost with cache prices, and which errors it retries. Sleeps are injected and
// recorded, never slept. Streaming: anthropic_stream_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "quarry/llm/llm.h"
#include "support/anthropic_replies.h"
#include "support/provider_server.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::MessagesBody;
using quarry::testing::MessagesErrorBody;
using quarry::testing::MessagesText;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedMessage;
using quarry::testing::TextBlock;
using quarry::testing::ToolUseBlock;

constexpr const char* kKey = "sk-ant-test-0123456789abcdefSECRET";

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// Every cache_control marker in `value`, wherever it sits.
int CountCacheControl(const json& value) {
  int count = 0;
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() == "cache_control") {
        EXPECT_EQ(it.value(), (json{{"type", "ephemeral"}}));
        ++count;
      } else {
        count += CountCacheControl(it.value());
      }
    }
  } else if (value.is_array()) {
    for (const json& item : value) count += CountCacheControl(item);
  }
  return count;
}

std::vector<ToolSchema> Tools() {
  return {{"run_sql", "Run one read-only SQL query.",
           json{{"type", "object"},
                {"properties", {{"sql", {{"type", "string"}}}}},
                {"required", {"sql"}}}},
          {"describe_table", "Describe a table.",
           json{{"type", "object"}, {"properties", {{"table", {{"type", "string"}}}}}}}};
}

class AnthropicClientTest : public ::testing::Test {
 protected:
  ClientConfig Config() {
    ClientConfig config;
    config.provider = Provider::kAnthropic;
    config.base_url = server_.base_url();
    config.model = "claude-sonnet-4-5";
    config.api_key = kKey;
    config.request_timeout_ms = 10000;
    config.connect_timeout_ms = 5000;
    config.max_output_tokens = 512;
    config.retry = RetryPolicy{4, 500, 30000};
    config.sleep = [this](std::chrono::milliseconds d) { sleeps_ms_.push_back(d.count()); };
    config.jitter_seed = 7;
    config.stream = false;
    return config;
  }

  // The body of the only request the stand-in received.
  json OnlyBody() {
    const auto requests = server_.requests();
    EXPECT_EQ(requests.size(), 1u);
    return requests.empty() ? json() : requests[0].Json();
  }

  ProviderServer server_;
  std::vector<int64_t> sleeps_ms_;
};

Request Question() {
  Request request;
  request.messages = {{Role::kSystem, "You are a data analyst.", {}, ""},
                      {Role::kUser, "How many rows are in sales?", {}, ""}};
  return request;
}

TEST_F(AnthropicClientTest, SendsHeadersSystemToolsAndMergedHistory) {
  server_.Enqueue({200, {}, MessagesText("There are 42 rows.")});
  Request request = Question();
  request.tools = Tools();
  request.messages.push_back({Role::kAssistant,
                              "Let me look.",
                              {{"toolu_1", "run_sql", R"({"sql": "SELECT count(*) FROM sales"})"},
                               {"toolu_2", "describe_table", "{not json"},
                               {"toolu_3", "describe_table", "[1, 2]"},
                               {"toolu_4", "describe_table", ""}},
                              ""});
  request.messages.push_back({Role::kTool, "42", {}, "toolu_1"});
  request.messages.push_back({Role::kTool, "", {}, "toolu_2"});
  request.messages.push_back({Role::kTool, "error: bad arguments", {}, "toolu_3"});
  request.messages.push_back({Role::kTool, "ok", {}, "toolu_4"});
  request.messages.push_back({Role::kUser, "And per region?", {}, ""});
  request.messages.push_back({Role::kSystem, "Two steps left.", {}, ""});
  request.messages.push_back({Role::kAssistant, "", {}, ""});  // nothing to send
  request.messages.push_back({Role::kUser, "", {}, ""});       // nothing to send

  auto client = MakeAnthropicClient(Config());
  Result<Turn> turn = client->Complete(request);
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, "There are 42 rows.");
  EXPECT_EQ(ProviderName(client->provider()), "anthropic");
  EXPECT_EQ(client->model(), "claude-sonnet-4-5");

  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/messages");
  EXPECT_EQ(requests[0].Header("x-api-key"), kKey);
  EXPECT_EQ(requests[0].Header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(requests[0].Header("content-type"), "application/json");
  EXPECT_EQ(requests[0].Header("authorization"), "");

  const json body = requests[0].Json();
  EXPECT_EQ(body["model"], "claude-sonnet-4-5");
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_FALSE(body.contains("stream"));
  EXPECT_EQ(body["system"], json::parse(R"([{"type": "text", "text": "You are a data analyst.",
                                            "cache_control": {"type": "ephemeral"}}])"));
  ASSERT_EQ(body["tools"].size(), 2u);
  EXPECT_EQ(body["tools"][0]["name"], "run_sql");
  EXPECT_EQ(body["tools"][0]["description"], "Run one read-only SQL query.");
  EXPECT_EQ(body["tools"][0]["input_schema"], Tools()[0].parameters);
  EXPECT_FALSE(body["tools"][0].contains("cache_control"));

  const json expected_messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "How many rows are in sales?"}]},
    {"role": "assistant", "content": [
      {"type": "text", "text": "Let me look."},
      {"type": "tool_use", "id": "toolu_1", "name": "run_sql",
       "input": {"sql": "SELECT count(*) FROM sales"}},
      {"type": "tool_use", "id": "toolu_2", "name": "describe_table",
       "input": {"invalid_json": "{not json"}},
      {"type": "tool_use", "id": "toolu_3", "name": "describe_table",
       "input": {"invalid_json": "[1, 2]"}},
      {"type": "tool_use", "id": "toolu_4", "name": "describe_table", "input": {}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"},
      {"type": "tool_result", "tool_use_id": "toolu_2"},
      {"type": "tool_result", "tool_use_id": "toolu_3", "content": "error: bad arguments"},
      {"type": "tool_result", "tool_use_id": "toolu_4", "content": "ok"},
      {"type": "text", "text": "And per region?"},
      {"type": "text", "text": "Two steps left.", "cache_control": {"type": "ephemeral"}}]}
  ])");
  EXPECT_EQ(body["messages"], expected_messages) << body["messages"].dump(2);
  EXPECT_EQ(CountCacheControl(body), 3);  // last tool, system, newest message
  EXPECT_EQ(body["tools"][1]["cache_control"], (json{{"type", "ephemeral"}}));
}

TEST_F(AnthropicClientTest, NoKeyNoKeyHeaderAndRequestOverridesSampling) {
  server_.Enqueue({200, {}, MessagesText("ok")});
  ClientConfig config = Config();
  config.api_key.clear();
  config.temperature.reset();
  Request request = Question();
  request.max_output_tokens = 64;
  ASSERT_TRUE(MakeAnthropicClient(config)->Complete(request));
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].Header("x-api-key"), "");
  const json body = requests[0].Json();
  EXPECT_EQ(body["max_tokens"], 64);
  EXPECT_FALSE(body.contains("temperature"));

  // A request's temperature wins; over the API's maximum of 1 it is sent as 1.
  server_.Enqueue({200, {}, MessagesText("ok")});
  request.temperature = 1.5;
  ASSERT_TRUE(MakeAnthropicClient(Config())->Complete(request));
  EXPECT_EQ(server_.requests().back().Json()["temperature"], 1.0);
}

TEST_F(AnthropicClientTest, ToolResultsGoBeforeTextInAMergedUserMessage) {
  server_.Enqueue({200, {}, MessagesText("ok")});
  Request request = Question();
  request.messages.push_back({Role::kAssistant, "", {{"toolu_9", "run_sql", "{}"}}, ""});
  request.messages.push_back({Role::kSystem, "Note: one step left.", {}, ""});
  request.messages.push_back({Role::kTool, "7", {}, "toolu_9"});
  ASSERT_TRUE(MakeAnthropicClient(Config())->Complete(request));
  const json messages = OnlyBody()["messages"];
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1]["content"],
            json::parse(R"([{"type": "tool_use", "id": "toolu_9", "name": "run_sql",
                             "input": {}}])"));
  ASSERT_EQ(messages[2]["content"].size(), 2u);
  EXPECT_EQ(messages[2]["content"][0]["type"], "tool_result");
  EXPECT_EQ(messages[2]["content"][1]["text"], "Note: one step left.");
}

TEST_F(AnthropicClientTest, CacheSplitSendsTwoMarkedSystemBlocksAndAtMostFourMarkers) {
  server_.Enqueue({200, {}, MessagesText("ok")});
  Request request = Question();
  request.tools = Tools();
  const std::string stable = "Instructions and dialect.\n";
  const std::string cards = "Table sales(id, region, amount).";
  request.messages[0].content = stable + cards;
  request.messages[0].cache_split = stable.size();
  request.messages.push_back({Role::kAssistant, "", {{"toolu_1", "run_sql", "{}"}}, ""});
  request.messages.push_back({Role::kTool, "42", {}, "toolu_1"});
  ASSERT_TRUE(MakeAnthropicClient(Config())->Complete(request));
  const json body = OnlyBody();
  EXPECT_EQ(
      body["system"],
      (json::array(
          {{{"type", "text"}, {"text", stable}, {"cache_control", {{"type", "ephemeral"}}}},
           {{"type", "text"}, {"text", cards}, {"cache_control", {{"type", "ephemeral"}}}}})));
  EXPECT_EQ(CountCacheControl(body), 4);
  EXPECT_TRUE(body["tools"].back().contains("cache_control"));
  EXPECT_TRUE(body["messages"].back()["content"].back().contains("cache_control"));
  EXPECT_EQ(body["messages"].back()["content"].back()["type"], "tool_result");

  // A split at the end (or 0) leaves one block: an empty text block would be rejected.
  server_.Enqueue({200, {}, MessagesText("ok")});
  request.messages[0].cache_split = request.messages[0].content.size();
  ASSERT_TRUE(MakeAnthropicClient(Config())->Complete(request));
  EXPECT_EQ(server_.requests().back().Json()["system"].size(), 1u);
}

TEST_F(AnthropicClientTest, ParsesTextAndParallelToolUse) {
  ScriptedMessage reply;
  reply.content = {TextBlock("I will check both tables."),
                   ToolUseBlock("toolu_01A", "run_sql", R"({"sql": "SELECT 1", "limit": 5})"),
                   ToolUseBlock("toolu_01B", "describe_table", R"({"table": "sales"})")};
  server_.Enqueue({200, {}, MessagesBody(reply)});
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, "I will check both tables.");
  ASSERT_EQ(turn->tool_calls.size(), 2u);
  EXPECT_EQ(turn->tool_calls[0].id, "toolu_01A");
  EXPECT_EQ(turn->tool_calls[0].name, "run_sql");
  EXPECT_EQ(turn->tool_calls[0].arguments_json, R"({"sql":"SELECT 1","limit":5})");
  EXPECT_EQ(turn->tool_calls[1].id, "toolu_01B");
  EXPECT_EQ(turn->tool_calls[1].arguments_json, R"({"table":"sales"})");
  EXPECT_EQ(FinishReasonName(turn->finish_reason), "tool_calls");
  EXPECT_FALSE(turn->streamed);
  EXPECT_EQ(turn->attempts, 1);
}

TEST_F(AnthropicClientTest, MapsStopReasons) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"end_turn", "stop"},     {"stop_sequence", "stop"},     {"tool_use", "tool_calls"},
      {"max_tokens", "length"}, {"refusal", "content_filter"}, {"pause_turn", "other"}};
  auto client = MakeAnthropicClient(Config());
  for (const auto& [stop_reason, finish] : cases) {
    ScriptedMessage reply;
    reply.content = {TextBlock("text")};
    reply.stop_reason = stop_reason;
    server_.Enqueue({200, {}, MessagesBody(reply)});
    Result<Turn> turn = client->Complete(Question());
    ASSERT_TRUE(turn) << turn.error().message;
    EXPECT_EQ(FinishReasonName(turn->finish_reason), finish) << stop_reason;
  }
}

TEST_F(AnthropicClientTest, UsageAddsCacheTokensAndCostUsesCachePrices) {
  ScriptedMessage reply;
  reply.content = {TextBlock("ok")};
  reply.input_tokens = 200;
  reply.cache_creation_input_tokens = 1000;
  reply.cache_read_input_tokens = 4000;
  reply.output_tokens = 50;
  server_.Enqueue({200, {}, MessagesBody(reply)});
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->usage.input_tokens, 5200);
  EXPECT_EQ(turn->usage.cached_tokens, 4000);
  EXPECT_EQ(turn->usage.cache_write_tokens, 1000);
  EXPECT_EQ(turn->usage.output_tokens, 50);
  // claude-sonnet-4-5: $3 input, $0.30 cache read, $3.75 cache write, $15 output per MTok:
  // 200 x 3 + 4000 x 0.30 + 1000 x 3.75 + 50 x 15 = 6300 per million = $0.0063.
  EXPECT_FALSE(turn->cost_reported);
  EXPECT_TRUE(turn->cost_known);
  EXPECT_DOUBLE_EQ(turn->cost_usd, 0.0063);
  // Every prompt token at $3: 5200 x 3 + 50 x 15 = 16350 per million; caching saved $0.01005.
  ASSERT_TRUE(turn->cache_saved_usd.has_value());
  EXPECT_NEAR(*turn->cache_saved_usd, 0.01005, 1e-12);

  ClientConfig unpriced = Config();
  unpriced.model = "claude-unknown";
  server_.Enqueue({200, {}, MessagesBody(reply)});
  turn = MakeAnthropicClient(unpriced)->Complete(Question());
  ASSERT_TRUE(turn);
  EXPECT_FALSE(turn->cost_known);
  EXPECT_EQ(turn->cost_usd, 0.0);
}

TEST_F(AnthropicClientTest, MaxCostPricesThePromptAsCacheWrites) {
  auto client = MakeAnthropicClient(Config());
  // 10000 x $3.75 + 512 x $15 per million.
  EXPECT_DOUBLE_EQ(*client->MaxCostUsd(10000), (10000 * 3.75 + 512 * 15.0) / 1e6);
  ClientConfig unpriced = Config();
  unpriced.model = "claude-unknown";
  EXPECT_FALSE(MakeAnthropicClient(unpriced)->MaxCostUsd(10000).has_value());
}

TEST_F(AnthropicClientTest, Overloaded529IsRetriedHonouringRetryAfter) {
  server_.Enqueue(
      {529, {{"retry-after", "2"}}, MessagesErrorBody("overloaded_error", "Overloaded")});
  server_.Enqueue({200, {}, MessagesText("fine now")});
  std::vector<std::string> lines;
  ClientConfig config = Config();
  config.on_retry = [&](const std::string& line) { lines.push_back(line); };
  Result<Turn> turn = MakeAnthropicClient(config)->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, "fine now");
  EXPECT_EQ(turn->attempts, 2);
  EXPECT_EQ(sleeps_ms_, (std::vector<int64_t>{2000}));
  ASSERT_EQ(turn->retried_errors.size(), 1u);
  EXPECT_EQ(turn->retried_errors[0], "HTTP 529 overloaded_error: Overloaded; waited 2000 ms");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Contains(lines[0], "resending in 2000 ms (attempt 2 of 4)"));
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(AnthropicClientTest, ServerErrorsAreRetriedWithBackoffUpToTheLimit) {
  for (int i = 0; i < 4; ++i) {
    server_.Enqueue({500, {}, MessagesErrorBody("api_error", "Internal server error")});
  }
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "failed (after 4 attempts): HTTP 500 api_error"));
  ASSERT_EQ(sleeps_ms_.size(), 3u);
  const int64_t ceilings[] = {500, 1000, 2000};  // full jitter under a doubling ceiling
  for (size_t i = 0; i < sleeps_ms_.size(); ++i) {
    EXPECT_GE(sleeps_ms_[i], 0);
    EXPECT_LE(sleeps_ms_[i], ceilings[i]);
  }
}

TEST_F(AnthropicClientTest, UnauthorizedIsNotRetriedAndTheKeyIsMasked) {
  server_.Enqueue(
      {401,
       {},
       MessagesErrorBody("authentication_error", std::string("invalid x-api-key ") + kKey)});
  server_.Enqueue({200, {}, MessagesText("never read")});
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kModel);
  EXPECT_TRUE(Contains(turn.error().message, "HTTP 401 authentication_error: invalid x-api-key"));
  EXPECT_FALSE(Contains(turn.error().message, kKey));
  EXPECT_TRUE(Contains(turn.error().message, MaskSecret(kKey)));
  EXPECT_EQ(server_.pending(), 1u);
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(AnthropicClientTest, PromptTooLongIsNotRetried) {
  server_.Enqueue({400,
                   {},
                   MessagesErrorBody("invalid_request_error",
                                     "prompt is too long: 215000 tokens > 200000 "
                                     "maximum")});
  server_.Enqueue({200, {}, MessagesText("never read")});
  Request request = Question();
  request.prompt_tokens_estimate = 214000;
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(request);
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message,
                       "the request is too large for the model (prompt: "
                       "~214000 tokens estimated"));
  EXPECT_TRUE(Contains(turn.error().message, "prompt is too long: 215000 tokens"));
  EXPECT_EQ(server_.pending(), 1u);
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(AnthropicClientTest, RequestTooLarge413IsNotRetried) {
  // 413 request_too_large comes from the proxy in front of the API (over 32 MB).
  server_.Enqueue({413, {}, MessagesErrorBody("request_too_large", "Request exceeds 32 MB")});
  server_.Enqueue({200, {}, MessagesText("never read")});
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message, "too large for the model"));
  EXPECT_TRUE(Contains(turn.error().message, "HTTP 413 request_too_large"));
  EXPECT_EQ(server_.pending(), 1u);
  EXPECT_TRUE(sleeps_ms_.empty());
}

TEST_F(AnthropicClientTest, ErrorInsideA200IsReadByType) {
  server_.Enqueue({200, {}, MessagesErrorBody("overloaded_error", "Overloaded")});
  server_.Enqueue({200, {}, MessagesErrorBody("invalid_request_error", "messages: bad")});
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(Question());
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message,
                       "failed (after 2 attempts): HTTP 200 with error invalid_request_error"));
  EXPECT_EQ(sleeps_ms_.size(), 1u);
}

TEST_F(AnthropicClientTest, StopRequestedCancelsWithoutSending) {
  std::stop_source source;
  source.request_stop();
  Request request = Question();
  request.stop = source.get_token();
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(request);
  ASSERT_FALSE(turn);
  EXPECT_EQ(turn.error().code, Error::Code::kCancelled);
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(AnthropicClientTest, EmptyConversationIsRefusedBeforeSending) {
  Request request;
  request.messages = {{Role::kSystem, "Only a system prompt.", {}, ""}};
  Result<Turn> turn = MakeAnthropicClient(Config())->Complete(request);
  ASSERT_FALSE(turn);
  EXPECT_TRUE(Contains(turn.error().message, "nothing to send"));
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(AnthropicClientTest, LiveClientDispatchesOnProvider) {
  server_.Enqueue({200, {}, MessagesText("from messages")});
  Result<Turn> turn = MakeLiveClient(Config())->Complete(Question());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->content, "from messages");
  EXPECT_EQ(server_.requests()[0].path, "/v1/messages");
}

}  // namespace
}  // namespace quarry::llm
