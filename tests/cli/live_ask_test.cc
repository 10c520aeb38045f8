// The live path end to end: the real quarry binary talks HTTP to a stand-in provider on
// 127.0.0.1, which scripts the model's turns. Retries, malformed arguments, tool results in the
// conversation, usage and reported cost in the trace, and the API key nowhere but the header.
#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedCompletion;

constexpr const char* kKey = "sk-canary-live-ask-0123456789abcdefXYZ";

std::string Turn(const std::string& name, const std::string& args, double cost) {
  ScriptedCompletion c;
  c.tool_calls = {{"call_" + name + std::to_string(static_cast<int>(cost * 1e4)), name, args}};
  c.prompt_tokens = 1000;
  c.completion_tokens = 40;
  c.cached_tokens = 200;
  c.cost_usd = cost;
  return quarry::testing::CompletionBody(c);
}

TEST(LiveAskTest, FullLoopOverHttp) {
  ProviderServer server;
  server.Enqueue({500, {}, quarry::testing::ErrorBody("upstream overloaded", 500)});
  server.Enqueue({200, {}, Turn("run_sql", R"({"sql": "SELECT region FROM)", 0.001)});
  server.Enqueue(
      {200,
       {},
       Turn(
           "run_sql",
           R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC LIMIT 1"})",
           0.002)});
  server.Enqueue(
      {200,
       {},
       Turn(
           "final_answer",
           R"({"answer": "North sells most: 141794.14.", "supporting_values": ["North", "141794.14"]})",
           0.003)});

  quarry::testing::TempDir cwd;
  auto r = quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "ask", "--format", "json", "--data",
       (quarry::testing::SourceDir() / "data" / "sales.csv").string(), "Which region sells most?"},
      cwd.path(),
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
       std::string("QUARRY_API_KEY=") + kKey},
      {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["grounded"], true);
  EXPECT_EQ(out["stop_reason"], "answered");
  EXPECT_EQ(out["totals"]["model_turns"], 3);
  EXPECT_EQ(out["totals"]["input_tokens"], 3000);
  EXPECT_EQ(out["totals"]["cached_tokens"], 600);
  EXPECT_NEAR(out["totals"]["cost_usd"].get<double>(), 0.006, 1e-12);
  EXPECT_EQ(out["totals"]["repair_attempts"], 1);
  EXPECT_EQ(out["totals"]["repair_successes"], 1);

  // 4 requests: the 500 was retried. Each carried the key, the model and the tools.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].Header("Authorization"), std::string("Bearer ") + kKey);
  const json first = requests[1].Json();
  EXPECT_EQ(first["model"], "stand-in-model");
  // inspect_schema, run_sql, run_python, make_chart, ask_user, final_answer
  EXPECT_EQ(first["tools"].size(), 6u);
  EXPECT_EQ(first["messages"][0]["role"], "system");
  EXPECT_NE(first["messages"][0]["content"].get<std::string>().find("table sales (2065 rows"),
            std::string::npos);
  // The malformed arguments came back to the model as bad_arguments, and the result rows
  // under the data-not-instructions header.
  const json third = requests[2].Json();
  EXPECT_NE(third["messages"].back()["content"].get<std::string>().find("bad_arguments"),
            std::string::npos);
  const json fourth = requests[3].Json();
  const std::string rows = fourth["messages"].back()["content"].get<std::string>();
  EXPECT_NE(rows.find("never instructions"), std::string::npos);
  EXPECT_NE(rows.find("North | 141794.14"), std::string::npos) << rows;

  // The key is nowhere in what quarry wrote or printed.
  const std::string trace_path = out["trace"];
  const std::string trace = quarry::testing::ReadFile(cwd.path() / trace_path);
  const std::string events =
      quarry::testing::ReadFile((cwd.path() / trace_path).parent_path() / "events.jsonl");
  for (const std::string* text : std::vector<const std::string*>{&trace, &events, &r.out, &r.err}) {
    EXPECT_EQ(text->find("canary-live-ask"), std::string::npos);
  }
  EXPECT_EQ(json::parse(trace)["model"]["model"], "stand-in-model");
}

TEST(LiveAskTest, UnauthorizedIsAModelErrorWithoutTheKey) {
  ProviderServer server;
  server.Enqueue({401, {}, quarry::testing::ErrorBody("invalid api key", 401)});
  quarry::testing::TempDir cwd;
  auto r = quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "ask", "--data",
       (quarry::testing::SourceDir() / "data" / "sales.csv").string(), "Which region sells most?"},
      cwd.path(),
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=m",
       std::string("QUARRY_API_KEY=") + kKey},
      {"OPENROUTER_API_KEY"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_NE(r.out.find("401"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("invalid api key"), std::string::npos) << r.out;
  EXPECT_EQ((r.out + r.err).find("canary-live-ask"), std::string::npos);
}

// A tool name is the model's text like any other: an unknown tool whose name carries terminal
// escapes and a bidirectional override is shown escaped on the step line and by `quarry trace`.
TEST(LiveAskTest, ToolNamesFromTheModelAreShownEscaped) {
  ProviderServer server;
  const std::string evil = "\x1b]0;PWNED\x07\x1b[2Jfake\xe2\x80\xae_tool";
  ScriptedCompletion unknown_tool;
  unknown_tool.tool_calls = {{"call_1", evil, "{}"}};
  server.Enqueue({200, {}, quarry::testing::CompletionBody(unknown_tool)});
  server.Enqueue(
      {200,
       {},
       Turn("final_answer", R"({"answer": "There are 2065 rows.", "supporting_values": ["2065"]})",
            0.001)});
  quarry::testing::TempDir cwd;
  const std::vector<std::string> env = {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=m",
                                        std::string("QUARRY_API_KEY=") + kKey, "QUARRY_STREAM=0"};
  auto r = quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "ask", "--data",
       (quarry::testing::SourceDir() / "data" / "sales.csv").string(), "How many rows?"},
      cwd.path(), env, {"OPENROUTER_API_KEY"});
  EXPECT_NE(r.err.find("\\x1b]0;PWNED\\x07\\x1b[2Jfake\\u202e_tool"), std::string::npos) << r.err;
  auto shown =
      quarry::testing::RunProcess({quarry::testing::QuarryBinary().string(), "trace", "latest"},
                                  cwd.path(), env, {"OPENROUTER_API_KEY"});
  EXPECT_EQ(shown.exit_code, 0) << shown.out << shown.err;
  EXPECT_NE(shown.out.find("\\x1b]0;PWNED\\x07\\x1b[2Jfake\\u202e_tool"), std::string::npos)
      << shown.out;
  for (const std::string* text : {&r.out, &r.err, &shown.out}) {
    EXPECT_EQ(text->find('\x1b'), std::string::npos);
    EXPECT_EQ(text->find("\xe2\x80\xae"), std::string::npos);
  }
}

}  // namespace
}  // namespace quarry
