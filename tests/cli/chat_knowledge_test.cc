// `quarry chat` and the knowledge glossary, under a real pseudo-terminal: the reply typed at a
// clarification about a term is offered for glossary.yaml, kept only on "y", and the chat's
// next question, which the model asks about again, is answered from it without a reply prompt.
// The stand-in provider scripts the model.
#include <gtest/gtest.h>

#include "cli/chat_support.h"

namespace quarry {
namespace {

using namespace quarry::chat_test;

std::string AskRegion() {
  return ToolCallReply({{"call_ask", "ask_user",
                         R"({"question": "Top region by revenue or by orders?",
                             "choices": ["by revenue", "by orders"], "term": "top region"})"}});
}
constexpr const char* kOrders =
    R"({"sql": "SELECT region, count(*) AS orders FROM sales GROUP BY region ORDER BY orders DESC LIMIT 1"})";

TEST(ChatKnowledgeTest, AReplyKeptAtTheTerminalAnswersTheNextQuestion) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path glossary = cwd.path() / ".quarry" / "glossary.yaml";
  PtyQuarry chat({"chat", "--no-python", "--runs-dir", (cwd.path() / "runs").string(), "--data",
                  Sales().string()},
                 cwd.path(), ChildEnv(server, cwd.path() / "state"));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.output();
  server.Enqueue({200, {}, AskRegion()});
  EnqueueTurn(
      server, kOrders,
      R"({"answer": "North has the most orders: 565.", "supporting_values": ["North", "565"]})");
  chat.Type("Which is the top region?\r");
  ASSERT_TRUE(chat.WaitFor("reply> ")) << chat.rest();
  chat.Type("2\r");
  ASSERT_TRUE(chat.WaitFor("North has the most orders: 565.")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("Keep \"top region = by orders\" in " + glossary.string() +
                           " for later questions? [y/N] "))
      << chat.rest();
  EXPECT_FALSE(fs::exists(glossary)) << "asked, not yet written";
  chat.Type("y\r");
  ASSERT_TRUE(chat.WaitFor("quarry: kept in " + glossary.string() + ":3")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.rest();
  EXPECT_NE(
      quarry::testing::ReadFile(glossary).find("  \"top region\":\n    means: \"by orders\"\n"),
      std::string::npos);

  // The next question: the model asks again and is answered from the glossary, no prompt.
  server.Enqueue({200, {}, AskRegion()});
  EnqueueTurn(
      server, kOrders,
      R"({"answer": "North still has the most orders: 565.", "supporting_values": ["North", "565"]})");
  chat.Type("And the top region now?\r");
  ASSERT_TRUE(chat.WaitFor("North still has the most orders: 565.")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.rest();
  ASSERT_TRUE(WaitForRequests(server, 6, 10s));
  const json messages = server.requests()[4].Json()["messages"];
  EXPECT_TRUE(messages.back()["content"].get<std::string>().starts_with(
      "not asked: the user's knowledge files define it: top region: by orders"))
      << messages.back().dump();
  EXPECT_EQ(chat.output().find("reply> ", chat.output().rfind("And the top region now?")),
            std::string::npos)
      << "the user was not asked again";
  chat.Type("\x04");
  EXPECT_EQ(chat.Wait(10s), 0);
}

// "n", or anything but yes, keeps nothing.
TEST(ChatKnowledgeTest, AnythingButYesKeepsNothing) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  PtyQuarry chat({"chat", "--no-python", "--runs-dir", (cwd.path() / "runs").string(), "--data",
                  Sales().string()},
                 cwd.path(), ChildEnv(server, cwd.path() / "state"));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.output();
  server.Enqueue({200, {}, AskRegion()});
  EnqueueTurn(
      server, kOrders,
      R"({"answer": "North has the most orders: 565.", "supporting_values": ["North", "565"]})");
  chat.Type("Which is the top region?\r");
  ASSERT_TRUE(chat.WaitFor("reply> ")) << chat.rest();
  chat.Type("by orders\r");
  ASSERT_TRUE(chat.WaitFor("for later questions? [y/N] ")) << chat.rest();
  chat.Type("yes please\r");
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.rest();
  EXPECT_FALSE(fs::exists(cwd.path() / ".quarry")) << "nothing written";
  chat.Type("\x04");
  EXPECT_EQ(chat.Wait(10s), 0);
}

// `quarry ask` on a terminal asks too: the reply that continues a thread is offered, and kept
// on "y"; off a terminal the same offer is the command that keeps it.
TEST(ChatKnowledgeTest, AskAtATerminalOffersTheReplyItContinuedWith) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path glossary = cwd.path() / ".quarry" / "glossary.yaml";
  const std::vector<std::string> env = ChildEnv(server, cwd.path() / "state");
  const std::string runs = (cwd.path() / "runs").string();
  server.Enqueue({200, {}, AskRegion()});
  auto first = quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "ask", "--no-python", "--runs-dir", runs,
       "--thread", "regions", "--data", Sales().string(), "Which is the top region?"},
      cwd.path(), env);
  ASSERT_EQ(first.exit_code, 7) << first.out << first.err;
  EnqueueTurn(
      server, kOrders,
      R"({"answer": "North has the most orders: 565.", "supporting_values": ["North", "565"]})");
  PtyQuarry ask({"ask", "--no-python", "--runs-dir", runs, "--thread", "regions", "--data",
                 Sales().string(), "by orders"},
                cwd.path(), env);
  ASSERT_TRUE(ask.started());
  ASSERT_TRUE(ask.WaitFor("North has the most orders: 565.")) << ask.output();
  ASSERT_TRUE(ask.WaitFor("Keep \"top region = by orders\" in " + glossary.string() +
                          " for later questions? [y/N] "))
      << ask.rest();
  EXPECT_FALSE(fs::exists(glossary));
  ask.Type("y\r");
  ASSERT_TRUE(ask.WaitFor("quarry: kept in " + glossary.string() + ":3")) << ask.rest();
  EXPECT_EQ(ask.Wait(10s), 0);
  EXPECT_TRUE(fs::exists(glossary));
}

}  // namespace
}  // namespace quarry
