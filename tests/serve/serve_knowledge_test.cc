// The web app and the knowledge files, through the real binary and a real HTTP client: a reply
// to a clarification is offered in the outcome (glossary_offers), kept only by the page's
// POST /api/runs/<id>/remember, never named by path, and used by the next question, which is
// not asked again. Model turns are scripted, from the stand-in provider.
#include "serve/served.h"

namespace quarry::testing {
namespace {

using json = nlohmann::ordered_json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

std::string AskChannel() {
  return ToolCallReply({{"call_q", "ask_user",
                         json({{"question", "Top channel by revenue or by number of orders?"},
                               {"choices", {"by revenue", "by orders"}},
                               {"term", "top channel"}})
                             .dump()}});
}

TEST(ServeKnowledgeTest, AReplyKeptFromThePageAnswersTheNextQuestion) {
  ProviderServer provider;
  TempDir k;
  const fs::path glossary = k.path() / "glossary.yaml";
  provider.Enqueue({200, {}, AskChannel()});
  Served s(provider, {"--knowledge", k.path().string()});
  ASSERT_GT(s.port(), 0);
  int status = 0;
  json asked = s.Post("/api/ask", {{"question", "Which is the top channel?"}}, &status);
  ASSERT_EQ(status, 202) << asked.dump();
  json waiting = s.Outcome(asked["run_id"]);
  ASSERT_EQ(waiting["waiting"], true) << waiting.dump();
  EXPECT_TRUE(waiting["glossary_offers"].empty()) << "no reply yet, nothing to keep";

  provider.Enqueue({200,
                    {},
                    Sql("SELECT channel, count(*) AS orders FROM sales GROUP BY channel "
                        "ORDER BY orders DESC LIMIT 1")});
  provider.Enqueue({200, {}, Answer("Online has the most orders: 1022.", {"1022"})});
  json replied =
      s.Post("/api/ask", {{"question", "by orders"}, {"thread", asked["thread"]}}, &status);
  ASSERT_EQ(status, 202) << replied.dump();
  const std::string id = replied["run_id"];
  json answered = s.Outcome(id);
  ASSERT_EQ(answered["answered"], true) << answered.dump();
  ASSERT_EQ(answered["glossary_offers"].size(), 1u) << answered.dump();
  EXPECT_EQ(answered["glossary_offers"][0]["term"], "top channel");
  EXPECT_EQ(answered["glossary_offers"][0]["means"], "by orders");
  EXPECT_FALSE(fs::exists(glossary)) << "offered, not written";

  // A term the run did not ask about, a body that is not JSON: refused, nothing written.
  s.Post("/api/runs/" + id + "/remember", {{"term", "best region"}}, &status);
  EXPECT_EQ(status, 409);
  auto raw = s.Send("POST", "/api/runs/" + id + "/remember", "not json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  EXPECT_FALSE(fs::exists(glossary));

  json kept = s.Post("/api/runs/" + id + "/remember", {{"term", "top channel"}}, &status);
  ASSERT_EQ(status, 200) << kept.dump();
  EXPECT_EQ(kept["kept"], "glossary.yaml:3");
  const std::string text = ReadFile(glossary);
  EXPECT_NE(text.find("  \"top channel\":\n    means: \"by orders\"\n"), std::string::npos) << text;
  // Twice is refused, and the page is not told where the folder is.
  json again = s.Post("/api/runs/" + id + "/remember", {{"term", "top channel"}}, &status);
  EXPECT_EQ(status, 409);
  EXPECT_EQ(again.dump().find(k.path().string()), std::string::npos) << again.dump();
  // A run that does not exist: refused, with no folder of the machine named.
  json unknown = s.Post("/api/runs/20261204-000000-000000/remember", json::object(), &status);
  EXPECT_EQ(status, 409);
  EXPECT_EQ(unknown.dump().find(s.dir().string()), std::string::npos) << unknown.dump();
  EXPECT_NE(unknown.dump().find("the runs folder"), std::string::npos) << unknown.dump();
  // The outcome no longer offers what is kept.
  EXPECT_TRUE(s.Get("/api/runs/" + id)["outcome"]["glossary_offers"].empty());

  // A new question: the model asks again and is answered from the glossary, not the user.
  provider.Enqueue({200, {}, AskChannel()});
  provider.Enqueue({200,
                    {},
                    Sql("SELECT channel, count(*) AS orders FROM sales GROUP BY channel "
                        "ORDER BY orders DESC LIMIT 1")});
  provider.Enqueue({200, {}, Answer("Online, with 1022 orders.", {"1022"})});
  const size_t sent = provider.requests().size();
  json later = s.Post("/api/ask", {{"question", "And which channel is on top now?"}}, &status);
  ASSERT_EQ(status, 202) << later.dump();
  json done = s.Outcome(later["run_id"]);
  EXPECT_EQ(done["answered"], true) << done.dump();
  ASSERT_EQ(provider.requests().size(), sent + 3);
  const json messages = provider.requests()[sent + 1].Json()["messages"];
  EXPECT_TRUE(messages.back()["content"].get<std::string>().starts_with(
      "not asked: the user's knowledge files define it: top channel: by orders"))
      << messages.back().dump();
}

}  // namespace
}  // namespace quarry::testing
