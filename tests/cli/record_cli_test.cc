// --record end to end: the real quarry binary asks the stand-in provider on 127.0.0.1 with
// --record, then replays the fixture with no server at all (--replay, --offline): the same
// answer, SQL, model steps and tokens. Also a clarification's continuation, `chat`, and the
// refusals.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedCompletion;

constexpr const char* kKey = "sk-canary-record-0123456789abcdefXYZ";
constexpr const char* kQuestion = "Which region sells most?";
constexpr const char* kMost =
    R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC LIMIT 1"})";
constexpr const char* kMostAnswer =
    R"({"answer": "North sells most: 141794.14.", "supporting_values": ["North", "141794.14"]})";

std::string Sales() { return (quarry::testing::SourceDir() / "data" / "sales.csv").string(); }

std::string Completion(const std::string& id, const std::string& name, const std::string& args,
                       const std::string& content, int64_t cached) {
  ScriptedCompletion c;
  c.content = content;
  c.tool_calls = {{id, name, args}};
  c.prompt_tokens = 5045;
  c.completion_tokens = 91;
  c.cached_tokens = cached;
  c.cost_usd = 0.0042;
  return quarry::testing::CompletionBody(c);
}

std::vector<std::string> LiveEnv(const ProviderServer& server) {
  return {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
          std::string("QUARRY_API_KEY=") + kKey, "NO_COLOR=1"};
}
// Recorded runs need no model settings at all.
const std::vector<std::string> kNoModel = {
    "QUARRY_BASE_URL", "QUARRY_MODEL",      "QUARRY_API_KEY", "OPENROUTER_API_KEY",
    "QUARRY_PRICES",   "ANTHROPIC_API_KEY", "QUARRY_FIXTURES"};

quarry::testing::ProcessResult Quarry(const fs::path& cwd, std::vector<std::string> args,
                                      const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), quarry::testing::QuarryBinary().string());
  return quarry::testing::RunProcess(args, cwd, env, kNoModel);
}

json ReadJson(const fs::path& path) { return json::parse(quarry::testing::ReadFile(path)); }

// The model steps of a trace as the comparison sees them: text, calls and tokens.
json ModelSteps(const json& trace) {
  json out = json::array();
  for (const json& s : trace["steps"]) {
    if (s["kind"] != "model") continue;
    out.push_back({{"content", s["content"]},
                   {"tool_calls", s["tool_calls"]},
                   {"usage", s["usage"]},
                   {"cost_usd", s["cost_usd"]}});
  }
  return out;
}

TEST(RecordCliTest, ALiveRunRecordedReplaysToTheSameAnswerSqlAndSteps) {
  quarry::testing::TempDir cwd;
  fs::create_directories(cwd.path() / "rec");
  json live;
  {
    ProviderServer server;
    server.Enqueue({200, {}, Completion("call_sql", "run_sql", kMost, "Totals by region.", 0)});
    server.Enqueue({200, {}, Completion("call_answer", "final_answer", kMostAnswer, "", 4100)});
    const auto r = Quarry(cwd.path(),
                          {"ask", "--format", "json", "--no-python", "--data", Sales(), "--record",
                           "rec/run.json", kQuestion},
                          LiveEnv(server));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("quarry: recorded 2 model turns to rec/run.json"), std::string::npos)
        << r.err;
    live = json::parse(r.out);
    EXPECT_EQ(server.requests().size(), 2u);
  }  // the stand-in is gone: everything below runs without a model

  const std::string text = quarry::testing::ReadFile(cwd.path() / "rec" / "run.json");
  const json fixture = json::parse(text);
  EXPECT_EQ(fixture["source"], "recorded");
  EXPECT_EQ(fixture["question"], kQuestion);
  EXPECT_EQ(fixture["data"], json::array({"sales.csv"}));
  EXPECT_EQ(fixture["model"], "stand-in-model");
  EXPECT_EQ(fixture["provider"], "openai-compatible");
  EXPECT_TRUE(std::regex_match(fixture["recorded_at"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_EQ(fixture["quarry_version"], "0.1.0");
  EXPECT_EQ(fixture["stop_reason"], "answered");
  ASSERT_EQ(fixture["turns"].size(), 2u);
  EXPECT_EQ(fixture["turns"][0]["tool_calls"][0],
            json({{"id", "call_sql"}, {"name", "run_sql"}, {"arguments", kMost}}));
  EXPECT_EQ(fixture["turns"][1]["usage"]["cached_tokens"], 4100);
  // Never the key, the endpoint or a header.
  EXPECT_EQ(text.find("canary-record"), std::string::npos);
  EXPECT_EQ(text.find("127.0.0.1"), std::string::npos);
  EXPECT_EQ(text.find("Authorization"), std::string::npos);

  const auto replayed = Quarry(cwd.path(), {"ask", "--format", "json", "--no-python", "--data",
                                            Sales(), "--replay", "rec/run.json", kQuestion});
  ASSERT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
  const json again = json::parse(replayed.out);
  EXPECT_EQ(again["answer"], live["answer"]);
  EXPECT_EQ(again["sql"], live["sql"]);
  EXPECT_EQ(again["supporting_values"], live["supporting_values"]);
  EXPECT_EQ(again["grounded"], true);
  for (const char* key : {"model_turns", "tool_calls", "input_tokens", "output_tokens",
                          "cached_tokens", "cache_write_tokens", "cost_usd"}) {
    EXPECT_EQ(again["totals"][key], live["totals"][key]) << key;
  }
  const json live_trace = ReadJson(cwd.path() / live["trace"].get<std::string>());
  const json replay_trace = ReadJson(cwd.path() / again["trace"].get<std::string>());
  EXPECT_EQ(ModelSteps(replay_trace), ModelSteps(live_trace));
  EXPECT_EQ(replay_trace["model"],
            json({{"provider", "replay"}, {"model", "stand-in-model"}, {"source", "recorded"}}));
  EXPECT_FALSE(live_trace["model"].contains("source"));
  // The totals line says what was cached: 4,100 of the 10,090 prompt tokens.
  const auto shown = Quarry(
      cwd.path(), {"ask", "--no-python", "--data", Sales(), "--replay", "rec/run.json", kQuestion});
  EXPECT_NE(shown.out.find("cached 4,100 of 10,090 prompt tokens"), std::string::npos) << shown.out;

  // The live run's own trace.json replays the same: its model steps are the turns.
  const auto from_trace =
      Quarry(cwd.path(), {"ask", "--format", "json", "--no-python", "--data", Sales(), "--replay",
                          live["trace"].get<std::string>(), kQuestion});
  ASSERT_EQ(from_trace.exit_code, 0) << from_trace.out << from_trace.err;
  const json traced = json::parse(from_trace.out);
  EXPECT_EQ(traced["answer"], live["answer"]);
  const json trace_replay = ReadJson(cwd.path() / traced["trace"].get<std::string>());
  EXPECT_EQ(ModelSteps(trace_replay), ModelSteps(live_trace));
  EXPECT_EQ(trace_replay["model"]["source"], "trace");

  // In a fixtures folder, --offline finds it by question and data file name.
  const auto offline = Quarry(cwd.path(), {"ask", "--format", "json", "--no-python", "--data",
                                           Sales(), "--offline", "--fixtures", "rec", kQuestion});
  ASSERT_EQ(offline.exit_code, 0) << offline.out << offline.err;
  EXPECT_EQ(json::parse(offline.out)["answer"], live["answer"]);
}

TEST(RecordCliTest, AClarificationAndItsContinuationAreRecordedAndReplayOffline) {
  quarry::testing::TempDir cwd;
  fs::create_directories(cwd.path() / "rec");
  const std::string ask = R"({"question": "Top by revenue or by number of sales?",
                              "choices": ["by revenue", "by number of sales"]})";
  std::string thread;
  {
    ProviderServer server;
    server.Enqueue({200, {}, Completion("call_ask", "ask_user", ask, "", 0)});
    const auto first = Quarry(cwd.path(),
                              {"ask", "--format", "json", "--no-python", "--runs-dir", "runs",
                               "--data", Sales(), "--record", "rec/ask.json", kQuestion},
                              LiveEnv(server));
    ASSERT_EQ(first.exit_code, 7) << first.out << first.err;
    thread = json::parse(first.out)["thread"];
    server.Enqueue({200, {}, Completion("call_sql", "run_sql", kMost, "", 0)});
    server.Enqueue({200, {}, Completion("call_answer", "final_answer", kMostAnswer, "", 0)});
    const auto second =
        Quarry(cwd.path(),
               {"ask", "--format", "json", "--no-python", "--runs-dir", "runs", "--thread", thread,
                "--data", Sales(), "--record", "rec/continued.json", "1"},
               LiveEnv(server));
    ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  }
  const json asked = ReadJson(cwd.path() / "rec" / "ask.json");
  EXPECT_EQ(asked["question"], kQuestion);
  EXPECT_FALSE(asked.contains("reply"));
  EXPECT_EQ(asked["stop_reason"], "clarification_needed");
  const json continued = ReadJson(cwd.path() / "rec" / "continued.json");
  // Keyed as --offline looks a continuation up: the turn's question and the reply ("1" picked
  // the first choice).
  EXPECT_EQ(continued["question"], kQuestion);
  EXPECT_EQ(continued["reply"], "by revenue");
  EXPECT_EQ(continued["turns"].size(), 2u);

  // Offline, in another runs folder: the question waits on the same clarification, and the
  // reply continues it to the same answer.
  const auto first =
      Quarry(cwd.path(), {"ask", "--format", "json", "--no-python", "--runs-dir", "again", "--data",
                          Sales(), "--offline", "--fixtures", "rec", kQuestion});
  ASSERT_EQ(first.exit_code, 7) << first.out << first.err;
  const std::string again_thread = json::parse(first.out)["thread"];
  const auto second = Quarry(
      cwd.path(), {"ask", "--format", "json", "--no-python", "--runs-dir", "again", "--thread",
                   again_thread, "--data", Sales(), "--offline", "--fixtures", "rec", "1"});
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_EQ(json::parse(second.out)["answer"], "North sells most: 141794.14.");

  // --replay FILE plays the continuation too.
  const auto third =
      Quarry(cwd.path(), {"ask", "--format", "json", "--no-python", "--runs-dir", "third", "--data",
                          Sales(), "--replay", "rec/ask.json", kQuestion});
  ASSERT_EQ(third.exit_code, 7) << third.out << third.err;
  const auto fourth =
      Quarry(cwd.path(), {"ask", "--format", "json", "--no-python", "--runs-dir", "third",
                          "--thread", json::parse(third.out)["thread"].get<std::string>(), "--data",
                          Sales(), "--replay", "rec/continued.json", "by revenue"});
  ASSERT_EQ(fourth.exit_code, 0) << fourth.out << fourth.err;
  EXPECT_EQ(json::parse(fourth.out)["answer"], "North sells most: 141794.14.");
}

TEST(RecordCliTest, ChatRecordsOneFixturePerQuestion) {
  quarry::testing::TempDir cwd;
  fs::create_directories(cwd.path() / "rec");
  const std::string count = R"({"sql": "SELECT count(*) AS n FROM sales"})";
  const std::string count_answer =
      R"({"answer": "There are 2065 sales rows.", "supporting_values": ["2065"]})";
  const std::string input = std::string(kQuestion) + "\nHow many sales rows are there?\n";
  {
    std::FILE* f = std::fopen((cwd.path() / "in.txt").c_str(), "w");
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
  }
  const std::vector<std::string> chat = {"/bin/sh",
                                         "-c",
                                         "exec \"$@\" < in.txt",
                                         "sh",
                                         quarry::testing::QuarryBinary().string(),
                                         "chat",
                                         "--no-python",
                                         "--runs-dir",
                                         "runs",
                                         "--data",
                                         Sales()};
  {
    ProviderServer server;
    server.Enqueue({200, {}, Completion("c1", "run_sql", kMost, "", 0)});
    server.Enqueue({200, {}, Completion("c2", "final_answer", kMostAnswer, "", 0)});
    server.Enqueue({200, {}, Completion("c3", "run_sql", count, "", 0)});
    server.Enqueue({200, {}, Completion("c4", "final_answer", count_answer, "", 0)});
    std::vector<std::string> args = chat;
    args.insert(args.end(), {"--record", "rec/chat.json"});
    auto env = LiveEnv(server);
    env.push_back("XDG_STATE_HOME=" + (cwd.path() / "state").string());
    const auto r = quarry::testing::RunProcess(args, cwd.path(), env, kNoModel);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  const json first = ReadJson(cwd.path() / "rec" / "chat.json");
  const json second = ReadJson(cwd.path() / "rec" / "chat-2.json");
  EXPECT_EQ(first["question"], kQuestion);
  EXPECT_EQ(second["question"], "How many sales rows are there?");
  EXPECT_EQ(second["turns"][0]["tool_calls"][0]["id"], "c3");
  EXPECT_EQ(first["source"], "recorded");

  // The same chat offline from those fixtures: both answers again, with no model.
  std::vector<std::string> args = chat;
  args.insert(args.end(), {"--offline", "--fixtures", "rec"});
  const auto r = quarry::testing::RunProcess(
      args, cwd.path(), {"XDG_STATE_HOME=" + (cwd.path() / "state").string(), "NO_COLOR=1"},
      kNoModel);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("North sells most: 141794.14."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("There are 2065 sales rows."), std::string::npos) << r.out;
}

TEST(RecordCliTest, RecordIsRefusedWithRecordedTurnsOrNowhereToWrite) {
  quarry::testing::TempDir cwd;
  ProviderServer server;
  const auto offline =
      Quarry(cwd.path(), {"ask", "--data", Sales(), "--offline", "--record", "x.json", kQuestion});
  EXPECT_EQ(offline.exit_code, 2) << offline.out << offline.err;
  EXPECT_NE((offline.out + offline.err).find("--record saves a live model's turns; --offline"),
            std::string::npos)
      << offline.out << offline.err;
  const auto replay = Quarry(cwd.path(), {"ask", "--data", Sales(), "--replay", "r.json",
                                          "--record", "x.json", kQuestion});
  EXPECT_EQ(replay.exit_code, 2) << replay.out << replay.err;
  EXPECT_NE((replay.out + replay.err).find("--replay plays recorded ones back"), std::string::npos);
  const auto chat =
      Quarry(cwd.path(), {"chat", "--data", Sales(), "--offline", "--record", "x.json"});
  EXPECT_EQ(chat.exit_code, 2) << chat.out << chat.err;
  EXPECT_NE((chat.out + chat.err).find("--record saves a live model's turns; --offline"),
            std::string::npos);
  // A folder that does not exist is refused before the model is asked (and paid).
  const auto missing =
      Quarry(cwd.path(), {"ask", "--data", Sales(), "--record", "no/such/x.json", kQuestion},
             LiveEnv(server));
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_NE((missing.out + missing.err).find("does not exist"), std::string::npos);
  EXPECT_TRUE(server.requests().empty());
  EXPECT_FALSE(fs::exists(cwd.path() / "x.json"));
}

TEST(RecordCliTest, OnlyARegularFileIsReplacedAndAnEmptyNameIsRefused) {
  quarry::testing::TempDir cwd;
  ProviderServer server;
  ASSERT_EQ(mkfifo((cwd.path() / "fifo").c_str(), 0600), 0);
  {
    std::ofstream target(cwd.path() / "target.json");
    target << "kept";
  }
  fs::create_symlink("target.json", cwd.path() / "link.json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fifo", "not a regular file"},
      {"/dev/null", "not a regular file"},
      {"link.json", "a symbolic link"},
      {"", "name the file to record to"}};
  for (const auto& [file, says] : cases) {
    const auto r = Quarry(cwd.path(), {"ask", "--data", Sales(), "--record", file, kQuestion},
                          LiveEnv(server));
    EXPECT_EQ(r.exit_code, 2) << file << r.out << r.err;
    EXPECT_NE((r.out + r.err).find(says), std::string::npos) << file << r.out << r.err;
  }
  EXPECT_TRUE(server.requests().empty());  // refused before the model was asked
  EXPECT_EQ(fs::symlink_status(cwd.path() / "fifo").type(), fs::file_type::fifo);
  EXPECT_EQ(fs::symlink_status(cwd.path() / "link.json").type(), fs::file_type::symlink);
  std::ifstream target(cwd.path() / "target.json");
  std::string kept;
  std::getline(target, kept);
  EXPECT_EQ(kept, "kept");
}

}  // namespace
}  // namespace quarry
