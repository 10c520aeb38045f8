// `quarry ask --thread` and `quarry threads`, end to end: the real binary against the stand-in
// provider, follow-ups that see earlier turns in the request the provider received, the verify
// gate refusing a number that only an earlier turn showed, data changes noted, and the store's
// errors as exit codes.
#include <gtest/gtest.h>

#include <map>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::ToolCallReply;

constexpr const char* kMost =
    R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC LIMIT 1"})";
constexpr const char* kMostAnswer =
    R"({"answer": "North sells most: 141794.14.", "supporting_values": ["North", "141794.14"]})";
constexpr const char* kLeast =
    R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total ASC LIMIT 1"})";
constexpr const char* kLeastAnswer =
    R"({"answer": "Central sells least: 58576.15.", "supporting_values": ["Central", "58576.15"]})";

void EnqueueTurn(ProviderServer& server, const char* sql, const char* answer) {
  server.Enqueue({200, {}, ToolCallReply({{"call_sql", "run_sql", sql}})});
  server.Enqueue({200, {}, ToolCallReply({{"call_answer", "final_answer", answer}})});
}

class ThreadsCliTest : public ::testing::Test {
 protected:
  quarry::testing::ProcessResult Quarry(std::vector<std::string> args,
                                        const fs::path& data = fs::path()) {
    std::vector<std::string> argv = {quarry::testing::QuarryBinary().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    if (!data.empty()) {
      argv.push_back("--data");
      argv.push_back(data.string());
    }
    return quarry::testing::RunProcess(
        argv, cwd_.path(),
        {"QUARRY_BASE_URL=" + server_.base_url(), "QUARRY_MODEL=stand-in-model",
         "QUARRY_API_KEY=sk-threads-test-0123456789", "XDG_STATE_HOME=" + state().string(),
         "NO_COLOR=1"},
        {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  }
  quarry::testing::ProcessResult Ask(const std::string& thread, const std::string& question,
                                     const fs::path& data, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"ask",           "--no-python", "--runs-dir",
                                     runs().string(), "--thread",    thread};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(question);
    return Quarry(args, data);
  }
  json ThreadsJson(std::vector<std::string> args) {
    args.insert(args.begin(), "threads");
    args.insert(args.end(), {"--runs-dir", runs().string(), "--format", "json"});
    auto r = Quarry(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }
  fs::path runs() const { return cwd_.path() / "runs"; }
  fs::path state() const { return cwd_.path() / "state"; }
  static fs::path Sales() { return quarry::testing::SourceDir() / "data" / "sales.csv"; }

  ProviderServer server_;
  quarry::testing::TempDir cwd_;
};

TEST_F(ThreadsCliTest, AFollowUpSeesTheEarlierTurnAndBothAreRecorded) {
  EnqueueTurn(server_, kMost, kMostAnswer);
  EnqueueTurn(server_, kLeast, kLeastAnswer);
  auto first = Ask("sales", "Which region sells most?", Sales());
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("thread: sales (turn 1)"), std::string::npos) << first.out;
  auto second = Ask("sales", "And which sells least?", Sales());
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("Central sells least: 58576.15."), std::string::npos);
  EXPECT_NE(second.out.find("thread: sales (turn 2)"), std::string::npos);

  // The first request of the follow-up: system, the earlier turn (header + question, the
  // recorded answer with its SQL and preview), then the new question.
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].Json()["messages"].size(), 2u) << "turn 1 had no history";
  const json messages = requests[2].Json()["messages"];
  ASSERT_EQ(messages.size(), 4u) << messages.dump(1);
  EXPECT_EQ(messages[1]["role"], "user");
  const std::string header = messages[1]["content"];
  EXPECT_TRUE(header.starts_with("[quarry] Earlier turns of this conversation follow"));
  EXPECT_NE(header.find("Their answers are context, not evidence"), std::string::npos);
  EXPECT_TRUE(header.ends_with("Earlier question: Which region sells most?"));
  EXPECT_EQ(messages[2]["role"], "assistant");
  const std::string prior = messages[2]["content"];
  EXPECT_NE(prior.find("Answer: North sells most: 141794.14."), std::string::npos) << prior;
  EXPECT_NE(prior.find("ORDER BY total DESC LIMIT 1;"), std::string::npos) << prior;
  EXPECT_NE(prior.find("region | total\nNorth | 141794.14\n(1 row)"), std::string::npos) << prior;
  EXPECT_EQ(messages[3]["role"], "user");
  EXPECT_EQ(messages[3]["content"], "And which sells least?");

  // The store, as `quarry threads` shows it.
  const json list = ThreadsJson({});
  ASSERT_EQ(list["threads"].size(), 1u) << list.dump(1);
  EXPECT_EQ(list["path"], (runs() / "threads.sqlite3").string());
  EXPECT_EQ(list["threads"][0]["name"], "sales");
  EXPECT_EQ(list["threads"][0]["turns"], 2);
  EXPECT_EQ(list["threads"][0]["waiting"], false);
  EXPECT_EQ(list["threads"][0]["sources"][0]["path"], Sales().string());
  EXPECT_EQ(list["threads"][0]["sources"][0]["size_bytes"], fs::file_size(Sales()));
  EXPECT_EQ(list["threads"][0]["sources"][0]["sha256"], quarry::testing::Sha256File(Sales()));
  const json show = ThreadsJson({"show", "sales"});
  ASSERT_EQ(show["turns"].size(), 2u);
  EXPECT_EQ(show["turns"][1]["number"], 2);
  EXPECT_EQ(show["turns"][1]["question"], "And which sells least?");
  EXPECT_EQ(show["turns"][1]["status"], "answered");
  EXPECT_EQ(show["turns"][1]["grounded"], true);
  EXPECT_EQ(show["turns"][1]["answer"], "Central sells least: 58576.15.");
  EXPECT_EQ(show["turns"][1]["preview"], "region | total\nCentral | 58576.15\n(1 row)");
  // The turn names its run, whose trace names the thread.
  const std::string run_id = show["turns"][1]["run_id"];
  const json trace =
      json::parse(quarry::testing::ReadFile(runs() / run_id / "trace.json"), nullptr, false);
  EXPECT_EQ(trace["thread"]["name"], "sales");
  EXPECT_EQ(trace["thread"]["turn"], 2);
  EXPECT_EQ(trace["question"], "And which sells least?");
  // The text forms.
  auto text_list = Quarry({"threads", "--runs-dir", runs().string()});
  EXPECT_EQ(text_list.exit_code, 0);
  EXPECT_NE(text_list.out.find("sales    2 turns  updated "), std::string::npos) << text_list.out;
  EXPECT_NE(text_list.out.find("sales.csv"), std::string::npos);
  auto text_show = Quarry({"threads", "show", "sales", "--runs-dir", runs().string()});
  EXPECT_EQ(text_show.exit_code, 0);
  EXPECT_NE(text_show.out.find("turn 2 · answered · run " + run_id), std::string::npos)
      << text_show.out;
  EXPECT_NE(text_show.out.find("  question: And which sells least?"), std::string::npos);
  EXPECT_NE(text_show.out.find("  answer: Central sells least: 58576.15."), std::string::npos);
  EXPECT_NE(text_show.out.find("  SQL:\n    SELECT region"), std::string::npos);
  // Deleted, it is gone.
  auto del = Quarry({"threads", "delete", "sales", "--runs-dir", runs().string()});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(del.out, "deleted thread sales\n");
  auto missing = Quarry({"threads", "show", "sales", "--runs-dir", runs().string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no thread named \"sales\""), std::string::npos) << missing.err;
}

TEST_F(ThreadsCliTest, AFollowUpMayStateAKeptResultButNotAnEarlierAnswersWords) {
  // Turn 1 counts the orders, then answers from its top-region query: the thread keeps that
  // query's result (North | 141794.14) as the preview, and 565 only in the answer's words.
  server_.Enqueue(
      {200,
       {},
       ToolCallReply({{"call_c", "run_sql",
                       R"({"sql": "SELECT count(*) AS n FROM sales WHERE region = 'North'"})"}})});
  server_.Enqueue({200, {}, ToolCallReply({{"call_1", "run_sql", kMost}})});
  server_.Enqueue(
      {200,
       {},
       ToolCallReply(
           {{"call_f", "final_answer",
             R"({"answer": "North sells most: 141794.14, from 565 orders.", "supporting_values": ["141794.14", "565"]})"}})});
  // The follow-up restates both without querying them: the kept result grounds 141794.14
  // (cited as turn 1), the earlier answer's 565 is sent back, then refused.
  constexpr const char* kRestated =
      R"({"answer": "North's 141794.14 from 565 orders leads the 5 regions.", "supporting_values": []})";
  server_.Enqueue(
      {200,
       {},
       ToolCallReply({{"call_n", "run_sql",
                       R"({"sql": "SELECT count(DISTINCT region) AS regions FROM sales"})"}})});
  server_.Enqueue({200, {}, ToolCallReply({{"call_a1", "final_answer", kRestated}})});
  server_.Enqueue({200, {}, ToolCallReply({{"call_a2", "final_answer", kRestated}})});
  ASSERT_EQ(Ask("gate", "Which region sells most?", Sales()).exit_code, 0);
  const json first = ThreadsJson({"show", "gate"});
  ASSERT_EQ(first["turns"][0]["status"], "answered");
  auto r = Ask("gate", "How does that compare?", Sales(), {"--format", "json"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  EXPECT_EQ(out["stop_reason"], "final_answer_ungrounded");
  EXPECT_EQ(out["turn"], 2);
  std::map<std::string, bool> grounded;
  for (const json& c : out["verify"]) grounded[c["value"].get<std::string>()] = c["grounded"];
  EXPECT_TRUE(grounded.at("141794.14"))
      << "turn 1's kept result is evidence: " << out["verify"].dump(1);
  EXPECT_FALSE(grounded.at("565")) << "an earlier answer's words are not";
  EXPECT_TRUE(grounded.at("5")) << "the follow-up's own result is";
  // The model was told so, with the kept result under its turn.
  const std::string prior = server_.requests()[4].Json()["messages"][2]["content"];
  EXPECT_NE(prior.find("a real result quarry kept: its values may be stated, as turn 1's"),
            std::string::npos)
      << prior;
  EXPECT_NE(prior.find("North | 141794.14"), std::string::npos);
  const json show = ThreadsJson({"show", "gate"});
  EXPECT_EQ(show["turns"][1]["status"], "final_answer_ungrounded");
  EXPECT_EQ(show["turns"][1]["answer"], "");
}

TEST_F(ThreadsCliTest, ChangedDataIsSaidToTheUserAndToTheModel) {
  const fs::path copy = cwd_.path() / "sales.csv";
  fs::copy_file(Sales(), copy);
  EnqueueTurn(server_, kMost, kMostAnswer);
  EnqueueTurn(server_, kMost, kMostAnswer);
  ASSERT_EQ(Ask("changing", "Which region sells most?", copy).exit_code, 0);
  const auto before = fs::file_size(copy);
  {
    std::ofstream out(copy, std::ios::app);
    out << "9999,2024-12-31,Central,Desk Lamp,Furniture,Retail,1,39.95,0,39.95,C0001\n";
  }
  const auto after = fs::file_size(copy);
  auto r = Ask("changing", "Which region sells most now?", copy);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string note = "sales.csv changed since turn 1 (" + std::to_string(before) + " -> " +
                           std::to_string(after) +
                           " bytes): answers about it before may no "
                           "longer hold";
  EXPECT_NE(r.err.find("quarry: note: thread changing: " + note), std::string::npos) << r.err;
  const std::string header = server_.requests()[2].Json()["messages"][1]["content"];
  EXPECT_NE(header.find("The data changed: " + note), std::string::npos) << header;
  // A different file under the thread is said too.
  EnqueueTurn(server_, kMost, kMostAnswer);
  auto other = Ask("changing", "Which region sells most?", Sales());
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.err.find("sales.csv is new to this thread since turn 2"), std::string::npos)
      << other.err;
  EXPECT_NE(other.err.find("sales.csv, used up to turn 2, is not part of this question's data"),
            std::string::npos);
}

TEST_F(ThreadsCliTest, ABadThreadNameIsAUsageErrorBeforeAnythingRuns) {
  for (const std::string& bad : {std::string(""), std::string(65, 'x'), std::string("tab\there")}) {
    auto r = Ask(bad, "Which region sells most?", Sales());
    EXPECT_EQ(r.exit_code, 2) << bad << r.err;
    EXPECT_NE(r.err.find("1 to 64 bytes of printable text"), std::string::npos) << r.err;
  }
  auto show = Quarry({"threads", "show", std::string(70, 'y'), "--runs-dir", runs().string()});
  EXPECT_EQ(show.exit_code, 2);
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_FALSE(fs::exists(runs() / "threads.sqlite3"));
}

TEST_F(ThreadsCliTest, ABrokenThreadsFileIsADataError) {
  fs::create_directories(runs());
  std::ofstream(runs() / "threads.sqlite3") << std::string(3000, '#');
  auto r = Ask("t", "Which region sells most?", Sales());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("threads database " + (runs() / "threads.sqlite3").string()),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("file is not a database"), std::string::npos) << r.err;
  EXPECT_TRUE(server_.requests().empty()) << "no model call when the turn cannot be kept";
  auto list = Quarry({"threads", "--runs-dir", runs().string()});
  EXPECT_EQ(list.exit_code, 3) << list.err;
  EXPECT_NE(list.err.find("move it away"), std::string::npos);
}

TEST_F(ThreadsCliTest, WithoutRunsDirThreadsLiveInXdgStateHome) {
  EnqueueTurn(server_, kMost, kMostAnswer);
  auto r = Quarry({"ask", "--no-python", "--thread", "xdg", "Which region sells most?"}, Sales());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(state() / "quarry" / "threads.sqlite3"));
  EXPECT_TRUE(fs::exists(cwd_.path() / "runs")) << "runs go to ./runs as always";
  EXPECT_FALSE(fs::exists(cwd_.path() / "runs" / "threads.sqlite3"));
  auto list = Quarry({"threads", "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json out = json::parse(list.out, nullptr, false);
  EXPECT_EQ(out["path"], (state() / "quarry" / "threads.sqlite3").string());
  ASSERT_EQ(out["threads"].size(), 1u);
  EXPECT_EQ(out["threads"][0]["name"], "xdg");
  // No store yet elsewhere: listing creates none.
  auto empty = Quarry({"threads", "--runs-dir", (cwd_.path() / "elsewhere").string()});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_NE(empty.out.find("no threads yet"), std::string::npos);
  EXPECT_FALSE(fs::exists(cwd_.path() / "elsewhere" / "threads.sqlite3"));
}

bool OffersAskUser(const json& request) {
  for (const json& tool : request.value("tools", json::array())) {
    if (tool["function"]["name"] == "ask_user") return true;
  }
  return false;
}

constexpr const char* kAskRegion =
    R"({"question": "Top region by revenue or by orders?", "choices": ["by revenue", "by orders"]})";
constexpr const char* kByOrders =
    R"({"sql": "SELECT region, count(*) AS orders FROM sales GROUP BY region ORDER BY orders DESC LIMIT 1"})";
constexpr const char* kByOrdersAnswer =
    R"({"answer": "North has the most orders: 565.", "supporting_values": ["North", "565"]})";

TEST_F(ThreadsCliTest, AClarificationExitsSevenAndTheReplyContinuesTheRun) {
  server_.Enqueue({200, {}, ToolCallReply({{"call_ask", "ask_user", kAskRegion}})});
  auto r = Quarry({"ask", "--no-python", "--runs-dir", runs().string(), "Which is the top region?"},
                  Sales());
  ASSERT_FALSE(server_.requests().empty()) << r.err;
  ASSERT_TRUE(OffersAskUser(server_.requests()[0].Json())) << "the agent loop offers ask_user";
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  const std::regex continue_line(
      "continue with: quarry ask --thread ([0-9]{8}-[0-9]{6}-[0-9a-f]{6}) --runs-dir (\\S+) "
      "--data (\\S+) \"<your reply>\" \\(a number picks a choice\\)\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, continue_line)) << r.out;
  const std::string thread = m[1];
  EXPECT_EQ(m[2].str(), runs().string());
  EXPECT_EQ(m[3].str(), Sales().string());
  EXPECT_NE(r.out.find("quarry needs a clarification: Top region by revenue or by orders?\n"
                       "  1. by revenue\n  2. by orders\n"),
            std::string::npos)
      << r.out;
  const json waiting = ThreadsJson({"show", thread});
  EXPECT_EQ(waiting["waiting"], true);
  ASSERT_EQ(waiting["turns"].size(), 1u);
  EXPECT_EQ(waiting["turns"][0]["status"], "clarification_needed");
  EXPECT_EQ(waiting["turns"][0]["clarifications"][0]["reply"], "");

  // The reply, by number, continues the run where the model asked.
  EnqueueTurn(server_, kByOrders, kByOrdersAnswer);
  auto reply = Ask(thread, "2", Sales(), {"--format", "json"});
  ASSERT_EQ(reply.exit_code, 0) << reply.out << reply.err;
  const json out = json::parse(reply.out, nullptr, false);
  EXPECT_EQ(out["answer"], "North has the most orders: 565.");
  EXPECT_EQ(out["thread"], thread);
  EXPECT_EQ(out["turn"], 1);
  const json messages = server_.requests()[1].Json()["messages"];
  EXPECT_EQ(messages[1]["content"], "Which is the top region?");
  EXPECT_EQ(messages.back()["content"], "the user replied: by orders");
  const json done = ThreadsJson({"show", thread});
  EXPECT_EQ(done["waiting"], false);
  ASSERT_EQ(done["turns"].size(), 1u);
  EXPECT_EQ(done["turns"][0]["status"], "answered");
  EXPECT_EQ(done["turns"][0]["answer"], "North has the most orders: 565.");
  ASSERT_EQ(done["turns"][0]["clarifications"].size(), 1u);
  EXPECT_EQ(done["turns"][0]["clarifications"][0]["reply"], "by orders");
}

TEST_F(ThreadsCliTest, AClarificationInJsonNamesTheQuestionChoicesAndThread) {
  server_.Enqueue({200, {}, ToolCallReply({{"call_ask", "ask_user", kAskRegion}})});
  auto r = Ask("asks", "Which is the top region?", Sales(), {"--format", "json"});
  ASSERT_FALSE(server_.requests().empty()) << r.err;
  ASSERT_TRUE(OffersAskUser(server_.requests()[0].Json())) << "the agent loop offers ask_user";
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  EXPECT_EQ(out["stop_reason"], "clarification_needed");
  EXPECT_EQ(out["clarification"], json::parse(R"({"question": "Top region by revenue or by orders?",
                            "choices": ["by revenue", "by orders"]})"));
  EXPECT_EQ(out["thread"], "asks");
  EXPECT_EQ(out["turn"], 1);
}

// Marks turn 1 of `thread` as waiting on a clarification, as a run that ended with
// clarification_needed leaves it.
void MakeTurnWait(const fs::path& db_path, const std::string& question) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  const std::string sql =
      "UPDATE turns SET status = 'clarification_needed', answer = '', question = '" + question +
      "', clarifications = '[{\"question\": \"Top by revenue or by orders?\", \"choices\": "
      "[\"by revenue\", \"by orders\"], \"reply\": \"\", \"run_id\": \"r0\"}]' "
      "WHERE number = 1";
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST_F(ThreadsCliTest, TheNextAskOnAWaitingThreadIsTheReplyAndContinuesTheTurn) {
  EnqueueTurn(server_, kMost, kMostAnswer);
  ASSERT_EQ(Ask("waits", "Which region sells most?", Sales()).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(MakeTurnWait(runs() / "threads.sqlite3", "Who is the top region?"));
  auto list = ThreadsJson({});
  EXPECT_EQ(list["threads"][0]["waiting"], true);
  auto waiting = Quarry({"threads", "--runs-dir", runs().string()});
  EXPECT_NE(waiting.out.find("waiting for a reply"), std::string::npos) << waiting.out;

  EnqueueTurn(server_, kMost, kMostAnswer);
  auto r = Ask("waits", "2", Sales(), {"--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(
      r.err.find("continuing turn 1 (\"Who is the top region?\") with the reply \"by orders\""),
      std::string::npos)
      << r.err;
  const json out = json::parse(r.out, nullptr, false);
  EXPECT_EQ(out["turn"], 1);
  // The run re-enters the conversation where the model asked: the original question, the
  // ask_user call, and the reply as its result (no earlier turn before the waiting one).
  const json messages = server_.requests()[2].Json()["messages"];
  ASSERT_EQ(messages.size(), 4u) << messages.dump();
  EXPECT_EQ(messages[1]["content"], "Who is the top region?");
  EXPECT_EQ(messages[2]["tool_calls"][0]["function"]["name"], "ask_user") << messages[2];
  EXPECT_EQ(messages[3]["role"], "tool");
  EXPECT_EQ(messages[3]["content"], "the user replied: by orders");
  const json show = ThreadsJson({"show", "waits"});
  ASSERT_EQ(show["turns"].size(), 1u) << "the reply continued turn 1";
  EXPECT_EQ(show["turns"][0]["status"], "answered");
  EXPECT_EQ(show["turns"][0]["clarifications"][0]["reply"], "by orders");
  EXPECT_EQ(show["turns"][0]["run_id"],
            out["trace"].get<std::string>().substr(runs().string().size() + 1, 22));
}

TEST_F(ThreadsCliTest, AnAskWithoutThreadTouchesNoStore) {
  EnqueueTurn(server_, kMost, kMostAnswer);
  auto r = Quarry({"ask", "--no-python", "--runs-dir", runs().string(), "Which region sells most?"},
                  Sales());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("thread:"), std::string::npos);
  EXPECT_FALSE(fs::exists(runs() / "threads.sqlite3"));
  EXPECT_FALSE(fs::exists(state()));
}

}  // namespace
}  // namespace quarry
