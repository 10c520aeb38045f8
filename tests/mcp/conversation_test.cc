// Conversations over MCP, end to end: the real `quarry mcp` child, the stand-in provider on
// 127.0.0.1 and scripted model turns. A thread outlives the server (it is in the thread store,
// threads.sqlite3 beside the runs), and a clarification reaches the user through
// elicitation/create when the client offers it, or comes back as the call's result.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "live_server.h"
#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using std::chrono::milliseconds;
using quarry::testing::Call;
using quarry::testing::LiveServer;
using quarry::testing::ProviderServer;
using quarry::testing::Request;
using quarry::testing::TempDir;
using quarry::testing::ToolCallReply;

std::string SqlTurn(const std::string& id, const std::string& sql) {
  return ToolCallReply({{id, "run_sql", json{{"sql", sql}}.dump()}});
}
std::string AnswerTurn(const std::string& id, const std::string& text, const std::string& value) {
  return ToolCallReply(
      {{id, "final_answer", json{{"answer", text}, {"supporting_values", {value}}}.dump()}});
}

std::string Text(const json& result) {
  std::string text;
  for (const auto& block : result["content"]) {
    if (block["type"] == "text") text += block["text"].get<std::string>();
  }
  return text;
}

class McpConversationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    csv_ = tmp_.Write("sales.csv", "region,revenue\nNorth,10.5\nSouth,20\nNorth,4\n");
  }
  std::unique_ptr<LiveServer> Start(const ProviderServer& provider, json capabilities = json::object()) {
    auto server = std::make_unique<LiveServer>(
        std::vector<std::string>{"--runs-dir", (tmp_.path() / "runs").string(), csv_.string()},
        tmp_.path(),
        std::vector<std::string>{"QUARRY_BASE_URL=" + provider.base_url(), "QUARRY_MODEL=stand-in",
                                 "QUARRY_API_KEY=sk-test"});
    server->Send(Request(0, "initialize",
                         {{"protocolVersion", "2025-11-25"},
                          {"capabilities", capabilities},
                          {"clientInfo", {{"name", "conversation_test"}, {"version", "1"}}}}));
    EXPECT_TRUE(server->Response(0, milliseconds(30000)).has_value()) << server->Err();
    server->Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return server;
  }
  TempDir tmp_;
  fs::path csv_;
};

TEST_F(McpConversationTest, AThreadSurvivesAServerRestart) {
  ProviderServer provider;
  provider.Enqueue({200, {}, SqlTurn("c1", "SELECT count(*) AS n FROM sales")});
  provider.Enqueue({200, {}, AnswerTurn("c2", "There are 3 sales.", "3")});
  {
    auto server = Start(provider);
    server->Send(Call(1, "ask_database", {{"question", "How many sales are there?"}, {"thread", "q4"}}));
    const auto r = server->Response(1, milliseconds(60000));
    ASSERT_TRUE(r.has_value()) << server->Err();
    EXPECT_EQ(r->message["result"]["isError"], false) << r->message.dump();
    server->CloseInput();
    EXPECT_EQ(server->Wait(milliseconds(20000)), 0) << server->Err();
  }
  EXPECT_TRUE(fs::exists(tmp_.path() / "runs" / "threads.sqlite3"));

  // A new server process: the follow-up still sees the first turn.
  provider.Enqueue({200, {}, SqlTurn("c3", "SELECT sum(revenue) AS total FROM sales WHERE region = 'North'")});
  provider.Enqueue({200, {}, AnswerTurn("c4", "North's revenue is 14.5.", "14.5")});
  auto server = Start(provider);
  server->Send(Call(2, "ask_database", {{"question", "And North's revenue?"}, {"thread", "q4"}}));
  const auto r = server->Response(2, milliseconds(60000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  EXPECT_EQ(r->message["result"]["isError"], false) << r->message.dump();
  EXPECT_TRUE(Text(r->message["result"]).starts_with("North's revenue is 14.5.")) << r->message.dump();

  const auto requests = provider.requests();
  ASSERT_EQ(requests.size(), 4u);
  // The prior turn, as the harness wrote it: its question, answer and SQL before the new question.
  const json messages = requests[2].Json()["messages"];
  std::string prior;
  for (size_t i = 1; i + 1 < messages.size(); ++i) prior += messages[i]["content"].get<std::string>() + "\n";
  EXPECT_EQ(messages.back()["content"], "And North's revenue?");
  EXPECT_NE(prior.find("How many sales are there?"), std::string::npos) << prior;
  EXPECT_NE(prior.find("There are 3 sales."), std::string::npos) << prior;
  EXPECT_NE(prior.find("SELECT count(*) AS n FROM sales"), std::string::npos) << prior;

  const std::string text = Text(r->message["result"]);
  const fs::path trace_path = text.substr(text.rfind("trace: ") + 7);
  const json trace = json::parse(testing::ReadFile(trace_path));
  EXPECT_EQ(trace["thread"], json::parse(R"({"name": "q4", "turn": 2})"));
}

TEST_F(McpConversationTest, ABadThreadNameIsAToolErrorThatSaysWhatIsAllowed) {
  ProviderServer provider;
  auto server = Start(provider);
  server->Send(Call(1, "ask_database", {{"question", "How many?"}, {"thread", std::string(65, 'x')}}));
  const auto r = server->Response(1, milliseconds(30000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  EXPECT_EQ(r->message["result"]["isError"], true);
  EXPECT_NE(Text(r->message["result"]).find("64"), std::string::npos) << r->message.dump();
  EXPECT_TRUE(provider.requests().empty());
}

}  // namespace
}  // namespace quarry
