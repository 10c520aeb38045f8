// `quarry mcp` as a live server: a real child process on pipes, driven on a timed script while
// a tool call runs. Pings are answered at once during a runaway query; a cancel stops the query
// within about a second and its id is never answered; the server serves on afterwards; progress
// notifications come with ask_database; results stay within the response budget.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"
#include "live_server.h"

extern char** environ;

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using quarry::testing::Call;
using quarry::testing::Cancel;
using quarry::testing::LiveServer;
using quarry::testing::Ping;
using quarry::testing::ProviderServer;
using quarry::testing::Request;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;
using quarry::testing::ToolCallReply;
using std::chrono::milliseconds;

constexpr const char* kRunaway =
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r";

int64_t Ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

class McpLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    csv_ = tmp_.Write("sales.csv", "region,revenue\nNorth,10.5\nSouth,20\n");
  }
  // Starts the server on `data` and completes initialize.
  std::unique_ptr<LiveServer> Start(const std::vector<std::string>& data,
                                    const std::vector<std::string>& env = {}) {
    std::vector<std::string> args = {"--runs-dir", (tmp_.path() / "runs").string()};
    args.insert(args.end(), data.begin(), data.end());
    auto server = std::make_unique<LiveServer>(args, tmp_.path(), env);
    server->Send(Request(0, "initialize",
                         {{"protocolVersion", "2025-11-25"},
                          {"capabilities", json::object()},
                          {"clientInfo", {{"name", "mcp_live_test"}, {"version", "1"}}}}));
    const auto init = server->Response(0, milliseconds(30000));
    EXPECT_TRUE(init.has_value()) << server->Err();
    server->Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return server;
  }
  static std::string Text(const json& result) {
    std::string text;
    for (const auto& block : result["content"]) {
      if (block["type"] == "text") text += block["text"].get<std::string>();
    }
    return text;
  }
  TempDir tmp_;
  fs::path csv_;
};

TEST_F(McpLiveTest, PingsAreAnsweredDuringARunawayQueryAndACancelStopsIt) {
  auto server = Start({csv_.string()});
  // The timed script: a runaway query, a ping at 0.5 s, a cancel at 1.0 s, a ping at 1.2 s.
  const auto t0 = Clock::now();
  server->Send(Call(1, "run_sql", {{"sql", kRunaway}}));
  std::this_thread::sleep_until(t0 + milliseconds(500));
  const auto ping1_sent = Clock::now();
  server->Send(Ping(2));
  std::this_thread::sleep_until(t0 + milliseconds(1000));
  const auto cancel_sent = Clock::now();
  server->Send(Cancel(1));
  // Queries take turns on the one engine: this one is answered only once the runaway query has
  // stopped, so its answer time bounds the cancel's.
  server->Send(Call(4, "run_sql", {{"sql", "SELECT 6 * 7 AS answer"}}));
  std::this_thread::sleep_until(t0 + milliseconds(1200));
  const auto ping2_sent = Clock::now();
  server->Send(Ping(3));

  const auto ping1 = server->Response(2, milliseconds(5000));
  const auto ping2 = server->Response(3, milliseconds(5000));
  ASSERT_TRUE(ping1 && ping2) << server->Err();
  EXPECT_EQ(ping1->message["result"], json::object());
  const int64_t ping1_ms = Ms(ping1->at - ping1_sent), ping2_ms = Ms(ping2->at - ping2_sent);
  EXPECT_LT(ping1_ms, 200) << "the ping waited for the running query";
  EXPECT_LT(ping2_ms, 200) << "the ping after the cancel waited";

  const auto next = server->Response(4, milliseconds(15000));
  ASSERT_TRUE(next.has_value()) << server->Err();
  EXPECT_EQ(next->message["result"]["structuredContent"]["rows"], json::parse("[[42]]"));
  const int64_t stopped_ms = Ms(next->at - cancel_sent);
  EXPECT_LT(stopped_ms, 1000) << "the cancelled query ran on after the cancel";
  std::cerr << "ping during the runaway query: " << ping1_ms
            << " ms, after the cancel: " << ping2_ms
            << " ms; cancel to the next query's answer: " << stopped_ms << " ms\n";

  // At EOF the server answers every call still in flight before it exits: a quick exit with no
  // line for id 1 means the cancelled call is over and was never answered.
  server->CloseInput();
  const auto closed = Clock::now();
  const auto code = server->Wait(milliseconds(5000));
  ASSERT_TRUE(code.has_value()) << "the server did not exit after EOF";
  EXPECT_EQ(*code, 0) << server->Err();
  EXPECT_LT(Ms(Clock::now() - closed), 3000);
  for (const auto& line : server->Lines()) {
    EXPECT_NE(line.message.value("id", json()), json(1))
        << "the cancelled call was answered: " << line.message.dump().substr(0, 300);
  }
  EXPECT_NE(server->Err().find("cancelled"), std::string::npos) << server->Err();
}

TEST_F(McpLiveTest, ACallWaitingForTheEngineIsCancelledAtOnceAndOthersRunOn) {
  auto server = Start({csv_.string()});
  server->Send(Call("slow", "run_sql", {{"sql", kRunaway}}));
  std::this_thread::sleep_for(milliseconds(300));
  // make_chart runs on a second worker; its query waits for the engine behind the runaway one.
  json spec = json::parse(R"({"mark": "bar",
      "encoding": {"x": {"field": "region", "type": "nominal"},
                   "y": {"field": "revenue", "type": "quantitative"}}})");
  spec["data"]["sql"] = "SELECT region, revenue FROM sales";
  server->Send(Call("waiting", "make_chart", {{"spec", spec}}));
  std::this_thread::sleep_for(milliseconds(300));
  const auto cancel_sent = Clock::now();
  server->Send(Cancel("waiting"));
  // Its worker ends it without waiting for the runaway query, which still runs.
  bool ended = false;
  while (!ended && Clock::now() - cancel_sent < milliseconds(1000)) {
    ended = server->Err().find("request \"waiting\" stopped after its cancel") != std::string::npos;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(ended) << server->Err();
  // tools/list is answered while the runaway query runs.
  const auto list_sent = Clock::now();
  server->Send(Request("list", "tools/list"));
  const auto list = server->Response("list", milliseconds(5000));
  ASSERT_TRUE(list.has_value()) << server->Err();
  EXPECT_LT(Ms(list->at - list_sent), 200);
  EXPECT_GE(list->message["result"]["tools"].size(), 4u);
  server->Send(Cancel("slow"));
  server->Send(Call("after", "describe_schema", json::object()));
  const auto after = server->Response("after", milliseconds(10000));
  ASSERT_TRUE(after.has_value()) << server->Err();
  EXPECT_NE(Text(after->message["result"]).find("sales"), std::string::npos);
  server->CloseInput();
  ASSERT_TRUE(server->Wait(milliseconds(5000)).has_value());
  for (const auto& line : server->Lines()) {
    const json id = line.message.value("id", json());
    EXPECT_TRUE(id != "slow" && id != "waiting") << line.message.dump().substr(0, 300);
  }
}

TEST_F(McpLiveTest, RunSqlCallsRunInTheOrderSentAndAQueuedOneIsDroppedOnCancel) {
  auto server = Start({csv_.string()}, {});
  // Sent together, they run one at a time in order (run_python's `last` depends on it); a call
  // queued behind a running one is dropped at once when cancelled.
  server->Send(Call(1, "run_sql", {{"sql", "SELECT 1 AS a"}}));
  server->Send(Call(2, "run_sql", {{"sql", kRunaway}}));
  server->Send(Call(3, "run_sql", {{"sql", "SELECT 2 AS b"}}));
  std::this_thread::sleep_for(milliseconds(300));
  server->Send(Cancel(3));
  server->Send(Cancel(2));
  server->Send(Call(4, "run_sql", {{"sql", "SELECT 3 AS c"}}));
  const auto r4 = server->Response(4, milliseconds(10000));
  ASSERT_TRUE(r4.has_value()) << server->Err();
  EXPECT_EQ(r4->message["result"]["structuredContent"]["rows"], json::parse("[[3]]"));
  const auto r1 = server->Response(1, milliseconds(1000));
  ASSERT_TRUE(r1.has_value());
  EXPECT_LT(r1->at, r4->at);  // answered in the order sent
  server->CloseInput();
  ASSERT_TRUE(server->Wait(milliseconds(5000)).has_value());
  for (const auto& line : server->Lines()) {
    const json id = line.message.value("id", json());
    EXPECT_TRUE(id != 2 && id != 3) << line.message.dump().substr(0, 300);
  }
  EXPECT_NE(server->Err().find("request 3 (run_sql) cancelled"), std::string::npos);
}

TEST_F(McpLiveTest, AskDatabaseSendsOneProgressNotificationPerStepBeforeItsAnswer) {
  ProviderServer provider;
  provider.Enqueue({200,
                    {},
                    ToolCallReply({{"c1", "run_sql",
                                    json{{"sql", "SELECT count(*) AS n FROM sales"}}.dump()}})});
  provider.Enqueue(
      {200,
       {},
       ToolCallReply(
           {{"c2", "final_answer",
             json{{"answer", "There are 2 sales."}, {"supporting_values", {"2"}}}.dump()}})});
  auto server = Start({csv_.string()}, {"QUARRY_BASE_URL=" + provider.base_url(),
                                        "QUARRY_MODEL=stand-in", "QUARRY_API_KEY=sk-test"});
  server->Send(Call(7, "ask_database", {{"question", "How many sales are there?"}},
                    {{"progressToken", "ask-1"}}));
  const auto answer = server->Response(7, milliseconds(60000));
  ASSERT_TRUE(answer.has_value()) << server->Err();
  EXPECT_EQ(answer->message["result"]["isError"], false) << answer->message.dump();
  EXPECT_TRUE(Text(answer->message["result"]).starts_with("There are 2 sales."));

  std::vector<json> progress;
  for (const auto& line : server->Lines()) {
    if (line.message.value("method", "") != "notifications/progress") continue;
    EXPECT_LE(line.at, answer->at) << "progress after the response";
    progress.push_back(line.message["params"]);
  }
  // Steps: model turn, run_sql, model turn, final_answer.
  ASSERT_EQ(progress.size(), 4u);
  for (size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i]["progressToken"], "ask-1");
    EXPECT_EQ(progress[i]["progress"], static_cast<int>(i + 1));  // grows with each one
  }
  EXPECT_EQ(progress[0]["message"], "step 1: model turn (1 tool call)");
  EXPECT_EQ(progress[1]["message"], "step 2: run_sql ok");
  EXPECT_EQ(progress[3]["message"], "step 4: final_answer ok");

  // Without a progressToken there are none.
  provider.Enqueue(
      {200,
       {},
       ToolCallReply(
           {{"c3", "final_answer",
             json{{"answer", "There are 2 sales."}, {"supporting_values", {"2"}}}.dump()}})});
  server->Send(Call(8, "ask_database", {{"question", "How many sales, with 2 in the question?"}}));
  ASSERT_TRUE(server->Response(8, milliseconds(60000)).has_value()) << server->Err();
  size_t after = 0;
  for (const auto& line : server->Lines()) {
    after += line.message.value("method", "") == "notifications/progress";
  }
  EXPECT_EQ(after, 4u);
}

TEST_F(McpLiveTest, ACancelledAskDatabaseEndsItsRunInterruptedWithATraceAndNoAnswer) {
  ProviderServer provider;
  provider.Enqueue({200, {}, ToolCallReply({{"c1", "run_sql", json{{"sql", kRunaway}}.dump()}})});
  auto server = Start({csv_.string()}, {"QUARRY_BASE_URL=" + provider.base_url(),
                                        "QUARRY_MODEL=stand-in", "QUARRY_API_KEY=sk-test"});
  server->Send(
      Call(9, "ask_database", {{"question", "How deep does it go?"}}, {{"progressToken", 99}}));
  // Cancel once the runaway query is running (its step has not been reported yet).
  ASSERT_TRUE(server->WaitFor(
      [](const json& m) { return m.value("method", "") == "notifications/progress"; },
      milliseconds(30000)))
      << server->Err();
  std::this_thread::sleep_for(milliseconds(300));
  const auto cancel_sent = Clock::now();
  server->Send(Cancel(9));
  server->Send(Call(10, "run_sql", {{"sql", "SELECT 1 AS one"}}));
  const auto next = server->Response(10, milliseconds(15000));
  ASSERT_TRUE(next.has_value()) << server->Err();
  EXPECT_LT(Ms(next->at - cancel_sent), 1500) << server->Err();
  server->CloseInput();
  ASSERT_TRUE(server->Wait(milliseconds(5000)).has_value());
  size_t progress = 0;
  for (const auto& line : server->Lines()) {
    EXPECT_NE(line.message.value("id", json()), json(9)) << line.message.dump().substr(0, 300);
    progress += line.message.value("method", "") == "notifications/progress";
  }
  // The model turn's; the interrupted run_sql step came after the cancel and was not sent.
  EXPECT_EQ(progress, 1u);
  // The run's trace was written, ending "interrupted".
  size_t traces = 0;
  for (const auto& run : fs::directory_iterator(tmp_.path() / "runs")) {
    if (!fs::exists(run.path() / "trace.json")) continue;
    ++traces;
    const json trace = json::parse(testing::ReadFile(run.path() / "trace.json"));
    EXPECT_EQ(trace["stop_reason"], "interrupted");
    EXPECT_EQ(trace["steps"].back()["status"], "interrupted") << trace["steps"].dump();
  }
  EXPECT_EQ(traces, 1u);
}

TEST_F(McpLiveTest, AHugeResultStaysWithinTheResponseBudgetInBothForms) {
  auto server = Start({csv_.string()});
  // Issue 10's case: 200 cells of 100 kB made a 20 MB line. Every cell is cut, in both forms.
  server->Send(
      Call(5, "run_sql", {{"sql", "SELECT i, repeat('y', 100000) AS big FROM range(200) t(i)"}}));
  const auto r = server->Response(5, milliseconds(30000));
  ASSERT_TRUE(r.has_value()) << server->Err();
  const json& result = r->message["result"];
  ASSERT_EQ(result["isError"], false) << Text(result).substr(0, 500);
  const json& s = result["structuredContent"];
  EXPECT_EQ(s["truncated"], true);
  EXPECT_EQ(s["row_count"], 200);
  ASSERT_EQ(s["rows"].size(), 200u);
  const std::string cut = std::string(200, 'y') + "…";  // the cell budget, marked
  EXPECT_EQ(s["rows"][199][1], cut);
  EXPECT_NE(Text(result).find("199 | " + cut + "\n"), std::string::npos);
  EXPECT_LE(server->LongestLineBytes(), 256u * 1024) << "a response line passed the budget";

  // Wide rows: whole rows are dropped from the end of both forms until the line fits.
  std::string wide = "SELECT i";
  for (char c = 'a'; c <= 'l'; ++c) wide += std::string(", repeat('") + c + "', 1000) AS " + c;
  server->Send(Call(6, "run_sql", {{"sql", wide + " FROM range(200) t(i)"}}));
  const auto w = server->Response(6, milliseconds(30000));
  ASSERT_TRUE(w.has_value()) << server->Err();
  const json& ws = w->message["result"]["structuredContent"];
  EXPECT_EQ(ws["truncated"], true);
  EXPECT_EQ(ws["row_count"], 200);
  const size_t kept = ws["rows"].size();
  EXPECT_GT(kept, 10u);
  EXPECT_LT(kept, 200u);
  EXPECT_EQ(ws["rows"][kept - 1][0], static_cast<int>(kept - 1));  // the first rows, in order
  // The text shows the same rows as structuredContent and says why the rest is missing.
  const std::string text = Text(w->message["result"]);
  EXPECT_NE(text.find("\n" + std::to_string(kept - 1) + " | "), std::string::npos);
  EXPECT_EQ(text.find("\n" + std::to_string(kept) + " | "), std::string::npos);
  EXPECT_NE(text.find("(200 rows, first " + std::to_string(kept) +
                      " shown: the rest passed the "
                      "262144-byte response budget"),
            std::string::npos)
      << text.substr(text.size() - 300);
  EXPECT_LE(server->LongestLineBytes(), 256u * 1024) << "a response line passed the budget";
  std::cerr << "wide rows: " << kept << " of 200 kept; longest line " << server->LongestLineBytes()
            << " bytes\n";

  // A small result is not marked.
  server->Send(Call(7, "run_sql", {{"sql", "SELECT region FROM sales ORDER BY region"}}));
  const auto small = server->Response(7, milliseconds(30000));
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->message["result"]["structuredContent"]["truncated"], false);
  EXPECT_EQ(small->message["result"]["structuredContent"]["rows"],
            json::parse(R"([["North"],["South"]])"));
}

// SIGTERM or SIGINT (a client stopping its server, or Ctrl-C in a terminal) while calls run:
// the calls are stopped, an ask_database run writes its trace ending "interrupted", and the
// server exits 6 within about a second, though its input never closed.
TEST_F(McpLiveTest, ASignalStopsTheRunningCallsWritesTheirTracesAndExitsSix) {
  for (const int signal_number : {SIGTERM, SIGINT}) {
    ProviderServer provider;
    provider.Enqueue({200, {}, ToolCallReply({{"c1", "run_sql", json{{"sql", kRunaway}}.dump()}})});
    auto server = Start({csv_.string()}, {"QUARRY_BASE_URL=" + provider.base_url(),
                                          "QUARRY_MODEL=stand-in", "QUARRY_API_KEY=sk-test"});
    server->Send(
        Call(1, "ask_database", {{"question", "How deep does it go?"}}, {{"progressToken", 7}}));
    server->Send(Call(2, "run_sql", {{"sql", kRunaway}}));
    ASSERT_TRUE(server->WaitFor(
        [](const json& m) { return m.value("method", "") == "notifications/progress"; },
        milliseconds(30000)))
        << server->Err();
    std::this_thread::sleep_for(milliseconds(300));
    const auto sent = Clock::now();
    server->Signal(signal_number);
    const auto code = server->Wait(milliseconds(10000));
    ASSERT_TRUE(code.has_value()) << "the server must exit although its input is open";
    EXPECT_EQ(*code, 6) << server->Err();
    EXPECT_LT(Ms(Clock::now() - sent), 2500);
    EXPECT_NE(server->Err().find("interrupted: stopping the calls in flight"), std::string::npos)
        << server->Err();
    bool found = false;
    for (const auto& run : fs::directory_iterator(tmp_.path() / "runs")) {
      if (!fs::exists(run.path() / "trace.json")) continue;
      const json trace = json::parse(testing::ReadFile(run.path() / "trace.json"));
      if (trace["question"] != "How deep does it go?") continue;
      found = true;
      EXPECT_EQ(trace["stop_reason"], "interrupted");
      fs::remove_all(run.path());
    }
    EXPECT_TRUE(found) << "the ask_database run's trace.json";
  }
}

}  // namespace
}  // namespace quarry
