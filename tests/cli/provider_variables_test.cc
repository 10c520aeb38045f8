// The providers' own SDK variables end to end (issue 24): OPENAI_API_KEY with OPENAI_BASE_URL,
// and ANTHROPIC_API_KEY with ANTHROPIC_BASE_URL, each against a stand-in provider on
// 127.0.0.1; and a key set for one provider reaches no other endpoint.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/anthropic_replies.h"
#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;

constexpr const char* kOpenAiKey = "sk-proj-canary-openai-0123456789XYZ";
constexpr const char* kAnthropicKey = "sk-ant-canary-anthropic-0123456789XYZ";
const std::vector<std::string> kUnset = {
    "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "QUARRY_API_KEY", "QUARRY_BASE_URL",
    "QUARRY_PROVIDER",    "QUARRY_MODEL",      "QUARRY_PRICES",  "QUARRY_STREAM"};

void EnqueueOpenAiRun(ProviderServer& server) {
  quarry::testing::ScriptedCompletion sql;
  sql.tool_calls = {{"call_1", "run_sql",
                     R"({"sql": "SELECT count(*) AS n FROM sales WHERE region = 'North'"})"}};
  quarry::testing::ScriptedCompletion answer;
  answer.tool_calls = {{"call_2", "final_answer",
                        R"({"answer": "North has 565 sales.", "supporting_values": ["565"]})"}};
  for (const auto& c : {sql, answer}) {
    server.Enqueue({200, {}, quarry::testing::CompletionBody(c)});
  }
}

quarry::testing::ProcessResult Ask(const std::vector<std::string>& env) {
  quarry::testing::TempDir cwd;
  return quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "ask", "--format", "json", "--no-stream",
       "--model", "stand-in-model", "--data",
       (quarry::testing::SourceDir() / "data" / "sales.csv").string(),
       "How many sales does North have?"},
      cwd.path(), env, kUnset);
}

TEST(ProviderVariablesTest, OpenAiKeyGoesToTheServerOpenAiBaseUrlNames) {
  ProviderServer server;
  EnqueueOpenAiRun(server);
  auto r =
      Ask({std::string("OPENAI_API_KEY=") + kOpenAiKey, "OPENAI_BASE_URL=" + server.base_url()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["stop_reason"], "answered");
  EXPECT_EQ(out["grounded"], true);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests) {
    EXPECT_EQ(request.path, "/v1/chat/completions");
    EXPECT_EQ(request.Header("Authorization"), std::string("Bearer ") + kOpenAiKey);
  }
  EXPECT_EQ(r.out.find(kOpenAiKey), std::string::npos);
  EXPECT_EQ(r.err.find(kOpenAiKey), std::string::npos);
}

TEST(ProviderVariablesTest, OpenAiKeyReachesNoEndpointOpenAiBaseUrlDoesNotName) {
  ProviderServer server;
  EnqueueOpenAiRun(server);
  // QUARRY_BASE_URL is another endpoint (a local server): OpenAI's key is not for it.
  auto r =
      Ask({std::string("OPENAI_API_KEY=") + kOpenAiKey, "QUARRY_BASE_URL=" + server.base_url()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests) EXPECT_EQ(request.Header("Authorization"), "");
  // Nor does an Anthropic base URL get it.
  auto refused = Ask({std::string("OPENAI_API_KEY=") + kOpenAiKey,
                      "ANTHROPIC_BASE_URL=http://192.0.2.1:9", "QUARRY_PROVIDER=anthropic"});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("no API key for http://192.0.2.1:9/v1: set ANTHROPIC_API_KEY"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(refused.err.find(kOpenAiKey), std::string::npos);
}

TEST(ProviderVariablesTest, AnthropicKeyGoesToTheServerAnthropicBaseUrlNames) {
  ProviderServer server;
  quarry::testing::ScriptedMessage sql;
  sql.content = {quarry::testing::ToolUseBlock(
      "toolu_01", "run_sql",
      R"({"sql": "SELECT count(*) AS n FROM sales WHERE region = 'North'"})")};
  quarry::testing::ScriptedMessage answer;
  answer.content = {quarry::testing::ToolUseBlock(
      "toolu_02", "final_answer",
      R"({"answer": "North has 565 sales.", "supporting_values": ["565"]})")};
  for (const auto& m : {sql, answer}) {
    server.Enqueue({200, {}, quarry::testing::MessagesBody(m)});
  }
  // As Anthropic's SDKs take it: the server's root, without /v1.
  std::string root = server.base_url();
  root.resize(root.size() - 3);
  auto r = Ask({std::string("ANTHROPIC_API_KEY=") + kAnthropicKey, "ANTHROPIC_BASE_URL=" + root,
                std::string("OPENAI_API_KEY=") + kOpenAiKey});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["stop_reason"], "answered");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests) {
    EXPECT_EQ(request.path, "/v1/messages");
    EXPECT_EQ(request.Header("x-api-key"), kAnthropicKey);
    EXPECT_EQ(request.Header("Authorization"), "");
  }
}

}  // namespace
}  // namespace quarry
