// Prompt caching through the OpenAI-compatible client, against the stand-in on 127.0.0.1: the
// cache_control breakpoints sent to OpenRouter for anthropic/* models (and to nothing else),
// and the cache usage and savings read from a reply.
#include <gtest/gtest.h>

#include "quarry/llm/llm.h"
#include "support/provider_server.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::TextReply;

constexpr const char* kStable = "You are quarry.\n--- schema cards (data) ---\n";
constexpr const char* kCards = "table sales (3 rows)\n--- end of schema cards ---\n";

// A conversation as the agent sends it after one tool call: system (with its split), the
// question, the assistant's tool call without text, and the tool's result last.
Request Conversation() {
  Request request;
  const std::string system = std::string(kStable) + kCards;
  request.messages = {{Role::kSystem, system, {}, "", std::string(kStable).size()},
                      {Role::kUser, "Which region sells most?", {}, ""},
                      {Role::kAssistant, "", {{"call_1", "run_sql", R"({"sql":"SELECT 1"})"}}, ""},
                      {Role::kTool, "rows: North | 3", {}, "call_1"}};
  return request;
}

class CacheHintsTest : public ::testing::Test {
 protected:
  ClientConfig Config(const std::string& provider, const std::string& model) {
    ClientConfig config;
    config.base_url = server_.base_url();
    config.provider = *ParseProvider(provider);
    config.model = model;
    config.api_key = "sk-or-test-0123456789abcdef";
    config.retry = RetryPolicy{1, 1, 1};
    config.stream = false;
    return config;
  }
  json Sent(const std::string& provider, const std::string& model, const Request& request) {
    server_.Enqueue({200, {}, TextReply("ok")});
    auto client = MakeOpenAiClient(Config(provider, model));
    Result<Turn> turn = client->Complete(request);
    EXPECT_TRUE(turn) << turn.error().message;
    const auto requests = server_.requests();
    return requests.empty() ? json() : requests.back().Json();
  }

  ProviderServer server_;
};

TEST_F(CacheHintsTest, OpenRouterAnthropicModelMarksSystemSplitAndLastMessage) {
  const json body = Sent("openrouter", "anthropic/claude-sonnet-4.5", Conversation());
  const json want = json::parse(R"([
    {"role": "system", "content": [
      {"type": "text", "text": "You are quarry.\n--- schema cards (data) ---\n",
       "cache_control": {"type": "ephemeral"}},
      {"type": "text", "text": "table sales (3 rows)\n--- end of schema cards ---\n",
       "cache_control": {"type": "ephemeral"}}]},
    {"role": "user", "content": "Which region sells most?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function",
       "function": {"name": "run_sql", "arguments": "{\"sql\":\"SELECT 1\"}"}}]},
    {"role": "tool", "content": [
      {"type": "text", "text": "rows: North | 3", "cache_control": {"type": "ephemeral"}}],
     "tool_call_id": "call_1"}])");
  EXPECT_EQ(body["messages"], want) << body["messages"].dump(2);
  // Three breakpoints, within Anthropic's four.
  EXPECT_EQ(body.dump().find("cache_control") != std::string::npos, true);
  size_t marks = 0;
  const std::string text = body.dump();
  for (size_t at = text.find("cache_control"); at != std::string::npos;
       at = text.find("cache_control", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, 3u);
}

TEST_F(CacheHintsTest, SystemWithoutSplitIsOneMarkedBlock) {
  Request request;
  request.messages = {{Role::kSystem, "Be brief.", {}, ""}, {Role::kUser, "Hi?", {}, ""}};
  const json body = Sent("openrouter", "anthropic/claude-haiku-4.5", request);
  EXPECT_EQ(body["messages"], json::parse(R"([
    {"role": "system", "content": [
      {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]},
    {"role": "user", "content": [
      {"type": "text", "text": "Hi?", "cache_control": {"type": "ephemeral"}}]}])"));
}

TEST_F(CacheHintsTest, OtherModelsAndProvidersGetPlainStrings) {
  const std::string system = std::string(kStable) + kCards;
  const json plain = json::parse(R"([
    {"role": "system", "content": ""},
    {"role": "user", "content": "Which region sells most?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function",
       "function": {"name": "run_sql", "arguments": "{\"sql\":\"SELECT 1\"}"}}]},
    {"role": "tool", "content": "rows: North | 3", "tool_call_id": "call_1"}])");
  json want = plain;
  want[0]["content"] = system;
  // OpenAI models behind OpenRouter cache on their own; a local server reached as
  // openai-compatible gets no OpenRouter extension, whatever the model is called.
  for (const auto& [provider, model] : std::vector<std::pair<std::string, std::string>>{
           {"openrouter", "openai/gpt-4o-mini"},
           {"openai-compatible", "anthropic/claude-sonnet-4.5"}}) {
    const json body = Sent(provider, model, Conversation());
    EXPECT_EQ(body["messages"], want) << provider << " " << model;
    EXPECT_EQ(body.dump().find("cache_control"), std::string::npos) << provider << " " << model;
  }
}

TEST_F(CacheHintsTest, ReadsCacheWritesAndPricesWhatCachingSaved) {
  // OpenRouter's usage accounting: cached_tokens read, cache_write_tokens written.
  server_.Enqueue({200, {}, R"({"choices": [{"message": {"role": "assistant", "content": "ok"},
    "finish_reason": "stop"}], "usage": {"prompt_tokens": 5045, "completion_tokens": 91,
    "prompt_tokens_details": {"cached_tokens": 4100, "cache_write_tokens": 900}}})"});
  ClientConfig config = Config("openrouter", "anthropic/test-model");
  config.prices.Set("anthropic/test-model", Price{3.0, 15.0, 0.3, 3.75});
  auto client = MakeOpenAiClient(config);
  Result<Turn> turn = client->Complete(Conversation());
  ASSERT_TRUE(turn) << turn.error().message;
  EXPECT_EQ(turn->usage.input_tokens, 5045);
  EXPECT_EQ(turn->usage.cached_tokens, 4100);
  EXPECT_EQ(turn->usage.cache_write_tokens, 900);
  // Without caching: 5045 x $3/M. As charged: 45 x $3 + 4100 x $0.30 + 900 x $3.75 per M.
  ASSERT_TRUE(turn->cache_saved_usd.has_value());
  EXPECT_NEAR(*turn->cache_saved_usd, (5045 * 3.0 - (45 * 3.0 + 4100 * 0.3 + 900 * 3.75)) / 1e6,
              1e-12);
  EXPECT_NEAR(turn->cost_usd, (45 * 3.0 + 4100 * 0.3 + 900 * 3.75 + 91 * 15.0) / 1e6, 1e-12);

  // A model without a price: no saving is claimed.
  server_.Enqueue({200, {}, TextReply("ok")});
  auto unpriced = MakeOpenAiClient(Config("openrouter", "someone/unpriced-model"));
  Result<Turn> other = unpriced->Complete(Conversation());
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_FALSE(other->cache_saved_usd.has_value());
}

}  // namespace
}  // namespace quarry::llm
