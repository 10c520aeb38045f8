// `quarry ask` end to end against the stand-in speaking Anthropic's Messages API, streamed:
// the run answers, each request keeps every earlier request's blocks as its prefix (what makes
// the cache breakpoints hit), and the trace prices cache reads and writes apart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/anthropic_replies.h"
#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ScriptedMessage;

constexpr const char* kKey = "sk-ant-canary-0123456789abcdefXYZ";

// Every content block of the request in order, as "role|block" with its cache marker removed,
// tools and system first: the sequence Anthropic's cache matches prefixes of.
std::vector<std::string> Blocks(const json& request, int* markers) {
  std::vector<std::string> out;
  auto add = [&](const std::string& where, json block) {
    if (block.is_object() && block.contains("cache_control")) {
      ++*markers;
      block.erase("cache_control");
    }
    out.push_back(where + "|" + block.dump());
  };
  for (const json& tool : request["tools"]) add("tool", tool);
  for (const json& block : request["system"]) add("system", block);
  for (const json& message : request["messages"]) {
    const std::string role = message["role"].get<std::string>();
    if (message["content"].is_string()) {
      add(role, message["content"]);
    } else {
      for (const json& block : message["content"]) add(role, block);
    }
  }
  return out;
}

TEST(AnthropicAskTest, AStreamedRunAnswersAndEachRequestExtendsTheLastOnesPrefix) {
  quarry::testing::ProviderServer server;
  ScriptedMessage first;
  first.content = {
      quarry::testing::TextBlock("Summing revenue by region."),
      quarry::testing::ToolUseBlock(
          "toolu_01", "run_sql",
          R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC LIMIT 1"})")};
  first.input_tokens = 50;
  first.cache_creation_input_tokens = 3000;
  first.output_tokens = 40;
  ScriptedMessage second;
  second.content = {quarry::testing::ToolUseBlock(
      "toolu_02", "final_answer",
      R"({"answer": "North sells most: 141794.14.", "supporting_values": ["North", "141794.14"]})")};
  second.input_tokens = 80;
  second.cache_creation_input_tokens = 200;
  second.cache_read_input_tokens = 3000;
  second.output_tokens = 40;
  for (const ScriptedMessage& m : {first, second}) {
    quarry::testing::ScriptedResponse streamed;
    streamed.chunks = quarry::testing::MessagesEvents(m, 5);
    server.Enqueue(std::move(streamed));
  }

  quarry::testing::TempDir cwd;
  auto r = quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "ask", "--format", "json", "--provider",
       "anthropic", "--data", (quarry::testing::SourceDir() / "data" / "sales.csv").string(),
       "Which region sells most?"},
      cwd.path(),
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=claude-sonnet-4-5",
       std::string("QUARRY_API_KEY=") + kKey},
      {"OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "QUARRY_PROVIDER", "QUARRY_PRICES",
       "QUARRY_STREAM"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["stop_reason"], "answered");
  EXPECT_EQ(out["grounded"], true);
  EXPECT_NE(out["answer"].get<std::string>().find("141794.14"), std::string::npos);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  std::vector<std::vector<std::string>> blocks;
  for (const auto& request : requests) {
    EXPECT_EQ(request.path, "/v1/messages");
    EXPECT_EQ(request.Header("x-api-key"), kKey);
    EXPECT_EQ(request.Header("anthropic-version"), "2023-06-01");
    EXPECT_EQ(request.Header("Authorization"), "");
    const json body = request.Json();
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["model"], "claude-sonnet-4-5");
    int markers = 0;
    blocks.push_back(Blocks(body, &markers));
    EXPECT_GE(markers, 3);  // the tools, the system prompt (split), the newest message
    EXPECT_LE(markers, 4);
  }
  // The second request starts with every block of the first, in order and byte for byte: the
  // breakpoint on the first request's newest block is a cache hit for the second.
  ASSERT_GT(blocks[1].size(), blocks[0].size());
  for (size_t i = 0; i < blocks[0].size(); ++i) EXPECT_EQ(blocks[1][i], blocks[0][i]) << i;
  EXPECT_NE(blocks[1].back().find("tool_result"), std::string::npos);
  EXPECT_NE(blocks[1].back().find("toolu_01"), std::string::npos);

  // claude-sonnet-4-5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million.
  // Turn 1: 50 x 3 + 3000 x 3.75 + 40 x 15 = 12000; turn 2: 80 x 3 + 3000 x 0.30 + 200 x 3.75
  // + 40 x 15 = 2490. Uncached: 3050 x 3 + 600 = 9750 and 3280 x 3 + 600 = 10440.
  const json& totals = out["totals"];
  EXPECT_EQ(totals["input_tokens"], 3050 + 3280);
  EXPECT_EQ(totals["cached_tokens"], 3000);
  EXPECT_EQ(totals["cache_write_tokens"], 3200);
  EXPECT_NEAR(totals["cost_usd"].get<double>(), 0.01449, 1e-12);
  EXPECT_NEAR(totals["cache_saved_usd"].get<double>(), (9750 + 10440 - 12000 - 2490) / 1e6, 1e-12);
  EXPECT_EQ(r.out.find(kKey), std::string::npos);
  EXPECT_EQ(r.err.find(kKey), std::string::npos);
}

}  // namespace
}  // namespace quarry
