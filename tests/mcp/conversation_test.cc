// Conversations over MCP, end to end: the real `quarry mcp` child, the stand-in provider on
// 127.0.0.1 and scripted model turns. A thread outlives the server (it is in the thread store,
// threads.sqlite3 beside the runs), and a clarification reaches the user through
// elicitation/create when the client offers it, or comes back as the call's result.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "live_server.h"
#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::Call;
using quarry::testing::LiveServer;
using quarry::testing::ProviderServer;
using quarry::testing::Request;
using quarry::testing::TempDir;
using quarry::testing::ToolCallReply;
using std::chrono::milliseconds;

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
  std::unique_ptr<LiveServer> Start(const ProviderServer& provider,
                                    json capabilities = json::object(),
                                    std::vector<std::string> flags = {}) {
    flags.insert(flags.end(), {"--runs-dir", (tmp_.path() / "runs").string(), csv_.string()});
    auto server = std::make_unique<LiveServer>(
        flags, tmp_.path(),
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

TEST_F(McpConversationTest, NoStreamAsksForWholeReplies) {
  for (const bool no_stream : {false, true}) {
    ProviderServer provider;
    provider.Enqueue({200, {}, SqlTurn("c1", "SELECT count(*) AS n FROM sales")});
    provider.Enqueue({200, {}, AnswerTurn("c2", "There are 3 sales.", "3")});
    auto server =
        Start(provider, json::object(),
              no_stream ? std::vector<std::string>{"--no-stream"} : std::vector<std::string>{});
    server->Send(Call(1, "ask_database", {{"question", "How many sales are there?"}}));
    const auto r = server->Response(1, milliseconds(60000));
    ASSERT_TRUE(r.has_value()) << server->Err();
    EXPECT_EQ(r->message["result"]["isError"], false) << r->message.dump();
    server->CloseInput();
    EXPECT_EQ(server->Wait(milliseconds(20000)), 0) << server->Err();
    const auto requests = provider.requests();
    ASSERT_EQ(requests.size(), 2u);
    for (const auto& request : requests) {
      EXPECT_EQ(request.Json().contains("stream"), !no_stream) << request.body;
    }
  }
}

TEST_F(McpConversationTest, AThreadSurvivesAServerRestart) {
  ProviderServer provider;
  provider.Enqueue({200, {}, SqlTurn("c1", "SELECT count(*) AS n FROM sales")});
  provider.Enqueue({200, {}, AnswerTurn("c2", "There are 3 sales.", "3")});
  {
    auto server = Start(provider);
    server->Send(
        Call(1, "ask_database", {{"question", "How many sales are there?"}, {"thread", "q4"}}));
    const auto r = server->Response(1, milliseconds(60000));
    ASSERT_TRUE(r.has_value()) << server->Err();
    EXPECT_EQ(r->message["result"]["isError"], false) << r->message.dump();
    server->CloseInput();
    EXPECT_EQ(server->Wait(milliseconds(20000)), 0) << server->Err();
  }
  EXPECT_TRUE(fs::exists(tmp_.path() / "runs" / "threads.sqlite3"));

  // A new server process: the follow-up still sees the first turn.
  provider.Enqueue(
      {200, {}, SqlTurn("c3", "SELECT sum(revenue) AS total FROM sales WHERE region = 'North'")});
  provider.Enqueue({200, {}, AnswerTurn("c4", "North's revenue is 14.5.", "14.5")});
  auto server = Start(provider);
  server->Send(Call(2, "ask_database", {{"question", "And North's revenue?"}, {"thread", "q4"}}));
  const auto r = server->Response(2, milliseconds(60000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  EXPECT_EQ(r->message["result"]["isError"], false) << r->message.dump();
  EXPECT_TRUE(Text(r->message["result"]).starts_with("North's revenue is 14.5."))
      << r->message.dump();

  const auto requests = provider.requests();
  ASSERT_EQ(requests.size(), 4u);
  // The prior turn, as the harness wrote it: its question, answer and SQL before the new question.
  const json messages = requests[2].Json()["messages"];
  std::string prior;
  for (size_t i = 1; i + 1 < messages.size(); ++i)
    prior += messages[i]["content"].get<std::string>() + "\n";
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
  server->Send(
      Call(1, "ask_database", {{"question", "How many?"}, {"thread", std::string(65, 'x')}}));
  const auto r = server->Response(1, milliseconds(30000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  EXPECT_EQ(r->message["result"]["isError"], true);
  EXPECT_NE(Text(r->message["result"]).find("64"), std::string::npos) << r->message.dump();
  EXPECT_TRUE(provider.requests().empty());
}

std::string AskUserTurn(const std::string& id) {
  return ToolCallReply({{id, "ask_user",
                         json{{"question", "Top region by revenue or by number of sales?"},
                              {"choices", {"by revenue", "by number of sales"}}}
                             .dump()}});
}

TEST_F(McpConversationTest, WithoutElicitationTheQuestionIsTheResultAndTheThreadContinuesIt) {
  ProviderServer provider;
  provider.Enqueue({200, {}, AskUserTurn("c1")});
  auto server = Start(provider);
  server->Send(
      Call(1, "ask_database", {{"question", "Which is the top region?"}, {"thread", "top"}}));
  const auto asked = server->Response(1, milliseconds(60000));
  ASSERT_TRUE(asked.has_value()) << server->Err();
  const json& result = asked->message["result"];
  EXPECT_EQ(result["isError"], false) << result.dump();
  EXPECT_EQ(result["structuredContent"]["status"], "clarification_needed");
  EXPECT_EQ(result["structuredContent"]["clarification"]["question"],
            "Top region by revenue or by number of sales?");
  EXPECT_EQ(result["structuredContent"]["clarification"]["choices"],
            json::parse(R"(["by revenue", "by number of sales"])"));
  EXPECT_EQ(result["structuredContent"]["thread"], "top");
  EXPECT_NE(Text(result).find("  2. by number of sales"), std::string::npos) << Text(result);
  for (const auto& line : server->Lines()) {
    EXPECT_NE(line.message.value("method", ""), "elicitation/create") << "the client offered none";
  }

  // The reply, as the next call of the thread, continues the run where the model asked.
  provider.Enqueue({200,
                    {},
                    SqlTurn("c2",
                            "SELECT region, sum(revenue) AS total FROM sales "
                            "GROUP BY region ORDER BY total DESC LIMIT 1")});
  provider.Enqueue({200, {}, AnswerTurn("c3", "South leads with revenue 20.", "20")});
  server->Send(Call(2, "ask_database", {{"question", "1"}, {"thread", "top"}}));
  const auto answered = server->Response(2, milliseconds(60000));
  ASSERT_TRUE(answered.has_value()) << server->Err();
  EXPECT_EQ(answered->message["result"]["isError"], false) << answered->message.dump();
  EXPECT_TRUE(Text(answered->message["result"]).starts_with("South leads with revenue 20."));
  const json messages = provider.requests()[1].Json()["messages"];
  ASSERT_GE(messages.size(), 4u);
  EXPECT_EQ(messages[messages.size() - 3]["content"], "Which is the top region?");
  EXPECT_EQ(messages.back()["content"], "the user replied: by revenue");
}

TEST_F(McpConversationTest, AClientWithElicitationIsAskedAndTheRunGoesOnWithTheReply) {
  ProviderServer provider;
  provider.Enqueue({200, {}, AskUserTurn("c1")});
  provider.Enqueue({200,
                    {},
                    SqlTurn("c2",
                            "SELECT region, count(*) AS n FROM sales "
                            "GROUP BY region ORDER BY n DESC LIMIT 1")});
  provider.Enqueue({200, {}, AnswerTurn("c3", "North has the most sales: 2.", "2")});
  auto server = Start(provider, {{"elicitation", json::object()}});
  server->Send(Call(1, "ask_database", {{"question", "Which is the top region?"}}));
  const auto elicit =
      server->WaitFor([](const json& m) { return m.value("method", "") == "elicitation/create"; },
                      milliseconds(60000));
  ASSERT_TRUE(elicit.has_value()) << server->Err();
  const json& params = elicit->message["params"];
  EXPECT_EQ(params["message"],
            "quarry's analyst asks: Top region by revenue or by number of sales?");
  EXPECT_EQ(params["requestedSchema"]["properties"]["reply"]["enum"],
            json::parse(R"(["by revenue", "by number of sales"])"));
  // The user takes their time: no budget is charged for it.
  std::this_thread::sleep_for(milliseconds(300));
  server->Send(
      {{"jsonrpc", "2.0"},
       {"id", elicit->message["id"]},
       {"result", {{"action", "accept"}, {"content", {{"reply", "by number of sales"}}}}}});
  const auto r = server->Response(1, milliseconds(60000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  EXPECT_EQ(r->message["result"]["isError"], false) << r->message.dump();
  EXPECT_TRUE(Text(r->message["result"]).starts_with("North has the most sales: 2."));
  const json messages = provider.requests()[1].Json()["messages"];
  EXPECT_EQ(messages.back()["content"], "the user replied: by number of sales");
  const std::string text = Text(r->message["result"]);
  const json trace = json::parse(testing::ReadFile(text.substr(text.rfind("trace: ") + 7)));
  ASSERT_EQ(trace["clarifications"].size(), 1u);
  EXPECT_EQ(trace["clarifications"][0]["reply"], "by number of sales");
  EXPECT_EQ(trace["stop_reason"], "answered");
}

// A reply given through elicitation is offered for the glossary in the result, kept only by
// remember_clarification (the one tool that writes, and only the glossary), and a later
// question that asks about the same term is answered from it without asking the user again.
TEST_F(McpConversationTest, AReplyKeptWithRememberClarificationAnswersTheNextQuestion) {
  ProviderServer provider;
  const std::string ask =
      ToolCallReply({{"c1", "ask_user",
                      json{{"question", "Top region by revenue or by number of sales?"},
                           {"choices", {"by revenue", "by number of sales"}},
                           {"term", "top region"}}
                          .dump()}});
  provider.Enqueue({200, {}, ask});
  provider.Enqueue({200,
                    {},
                    SqlTurn("c2",
                            "SELECT region, count(*) AS n FROM sales "
                            "GROUP BY region ORDER BY n DESC LIMIT 1")});
  provider.Enqueue({200, {}, AnswerTurn("c3", "North has the most sales: 2.", "2")});
  auto server = Start(provider, {{"elicitation", json::object()}});
  server->Send(Request(9, "tools/list", json::object()));
  const auto list = server->Response(9, milliseconds(30000));
  ASSERT_TRUE(list.has_value()) << server->Err();
  bool listed = false;
  for (const json& tool : list->message["result"]["tools"]) {
    if (tool["name"] != "remember_clarification") continue;
    listed = true;
    EXPECT_EQ(tool["annotations"]["readOnlyHint"], false);
    EXPECT_NE(tool["description"].get<std::string>().find("only when the user has agreed"),
              std::string::npos);
  }
  EXPECT_TRUE(listed) << list->message.dump();
  server->Send(Call(1, "ask_database", {{"question", "Which is the top region?"}}));
  const auto elicit =
      server->WaitFor([](const json& m) { return m.value("method", "") == "elicitation/create"; },
                      milliseconds(60000));
  ASSERT_TRUE(elicit.has_value()) << server->Err();
  server->Send(
      {{"jsonrpc", "2.0"},
       {"id", elicit->message["id"]},
       {"result", {{"action", "accept"}, {"content", {{"reply", "by number of sales"}}}}}});
  const auto r = server->Response(1, milliseconds(60000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  const std::string text = Text(r->message["result"]);
  const size_t offer =
      text.find("The user's reply \"top region = by number of sales\" can be kept");
  ASSERT_NE(offer, std::string::npos) << text;
  const fs::path glossary = tmp_.path() / ".quarry" / "glossary.yaml";
  EXPECT_FALSE(fs::exists(glossary)) << "offered, not written";
  const std::string trace_path = text.substr(text.rfind("trace: ") + 7);
  const json trace = json::parse(testing::ReadFile(trace_path));
  const std::string run_id = trace["id"];
  ASSERT_NE(text.find("run_id '" + run_id + "' and term 'top region'"), std::string::npos);

  // A path is no run id; then the real one is kept.
  server->Send(Call(2, "remember_clarification", {{"run_id", "../../etc"}}));
  const auto bad = server->Response(2, milliseconds(30000));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->message["result"]["isError"], true);
  server->Send(Call(3, "remember_clarification", {{"run_id", run_id}, {"term", "top region"}}));
  const auto kept = server->Response(3, milliseconds(30000));
  ASSERT_TRUE(kept.has_value()) << server->Err();
  EXPECT_EQ(kept->message["result"]["isError"], false) << kept->message.dump();
  EXPECT_NE(Text(kept->message["result"]).find("glossary.yaml:3"), std::string::npos);
  const std::string written = testing::ReadFile(glossary);
  EXPECT_NE(written.find("  \"top region\":\n    means: \"by number of sales\"\n"),
            std::string::npos)
      << written;
  // Kept once only.
  server->Send(Call(4, "remember_clarification", {{"run_id", run_id}}));
  const auto twice = server->Response(4, milliseconds(30000));
  ASSERT_TRUE(twice.has_value());
  EXPECT_EQ(twice->message["result"]["isError"], true);

  // The next question: the model asks again, and is answered from the glossary.
  provider.Enqueue({200, {}, ask});
  provider.Enqueue({200,
                    {},
                    SqlTurn("c5",
                            "SELECT region, count(*) AS n FROM sales "
                            "GROUP BY region ORDER BY n DESC LIMIT 1")});
  provider.Enqueue({200, {}, AnswerTurn("c6", "North, with 2 sales.", "2")});
  const size_t sent = provider.requests().size();
  server->Send(Call(5, "ask_database", {{"question", "And the top region now?"}}));
  const auto again = server->Response(5, milliseconds(60000));
  ASSERT_TRUE(again.has_value()) << server->Err();
  EXPECT_EQ(again->message["result"]["isError"], false) << again->message.dump();
  const json messages = provider.requests()[sent + 1].Json()["messages"];
  EXPECT_TRUE(messages.back()["content"].get<std::string>().starts_with(
      "not asked: the user's knowledge files define it: top region: by number of sales"))
      << messages.back().dump();
  EXPECT_EQ(Text(again->message["result"]).find("can be kept"), std::string::npos);
}

TEST_F(McpConversationTest, ADeclinedElicitationEndsTheRunWaitingOnItsQuestion) {
  ProviderServer provider;
  provider.Enqueue({200, {}, AskUserTurn("c1")});
  auto server = Start(provider, {{"elicitation", json::object()}});
  server->Send(Call(1, "ask_database", {{"question", "Which is the top region?"}}));
  const auto elicit =
      server->WaitFor([](const json& m) { return m.value("method", "") == "elicitation/create"; },
                      milliseconds(60000));
  ASSERT_TRUE(elicit.has_value()) << server->Err();
  server->Send(
      {{"jsonrpc", "2.0"}, {"id", elicit->message["id"]}, {"result", {{"action", "decline"}}}});
  const auto r = server->Response(1, milliseconds(60000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  const json& sc = r->message["result"]["structuredContent"];
  EXPECT_EQ(sc["status"], "clarification_needed") << r->message.dump();
  // Asked outside a thread, the question waits on one named after the run.
  EXPECT_TRUE(sc["thread"].get<std::string>().starts_with("ask-")) << sc;
  EXPECT_EQ(provider.requests().size(), 1u);
}

}  // namespace
}  // namespace quarry
