// The replay client: fixtures and trace.json documents played back turn by turn.
#include <gtest/gtest.h>

#include "quarry/llm/llm.h"
#include "quarry/trace/trace.h"
#include "support/test_support.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;

json Fixture() {
  return json::parse(R"({
    "source": "scripted",
    "question": "How many sales?",
    "turns": [
      {"content": "",
       "tool_calls": [{"name": "run_sql", "arguments": {"sql": "SELECT count(*) FROM sales"}},
                      {"id": "mine", "name": "run_sql", "arguments": "{\"sql\": \"SELECT"}],
       "usage": {"input_tokens": 900, "output_tokens": 40, "cached_tokens": 512},
       "cost_usd": 0.0021},
      {"content": "There are 42 sales."}
    ]})");
}

TEST(ReplayClientTest, PlaysTurnsInOrderThenIsExhausted) {
  Result<std::unique_ptr<Client>> client = MakeReplayClientFromJson(Fixture(), "fixture.json");
  ASSERT_TRUE(client) << client.error().message;
  EXPECT_EQ(ProviderName((*client)->provider()), "replay");
  EXPECT_EQ((*client)->model(), "replay");

  Result<Turn> first = (*client)->Complete(Request{});
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_EQ(first->tool_calls.size(), 2u);
  EXPECT_EQ(first->tool_calls[0].id, "call_0_0");
  EXPECT_EQ(first->tool_calls[0].name, "run_sql");
  EXPECT_EQ(first->tool_calls[0].arguments_json, R"({"sql":"SELECT count(*) FROM sales"})");
  EXPECT_EQ(first->tool_calls[1].id, "mine");
  EXPECT_EQ(first->tool_calls[1].arguments_json, R"({"sql": "SELECT)");  // raw, malformed
  EXPECT_EQ(FinishReasonName(first->finish_reason), "tool_calls");
  EXPECT_EQ(first->usage.input_tokens, 900);
  EXPECT_EQ(first->usage.output_tokens, 40);
  EXPECT_EQ(first->usage.cached_tokens, 512);
  EXPECT_TRUE(first->cost_reported);
  EXPECT_DOUBLE_EQ(first->cost_usd, 0.0021);
  EXPECT_EQ(first->latency_ms, 0);

  Result<Turn> second = (*client)->Complete(Request{});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->content, "There are 42 sales.");
  EXPECT_TRUE(second->tool_calls.empty());
  EXPECT_EQ(FinishReasonName(second->finish_reason), "stop");
  EXPECT_FALSE(second->cost_reported);

  Result<Turn> third = (*client)->Complete(Request{});
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, Error::Code::kModel);
  EXPECT_NE(third.error().message.find("replay exhausted"), std::string::npos);
}

TEST(ReplayClientTest, ReadsTheModelStepsOfATrace) {
  // The model as trace.json writes it: the provider it came through and its name.
  json trace = json::parse(R"({
    "model": {"provider": "openrouter", "model": "openai/gpt-4o-mini"},
    "steps": [
      {"kind": "model", "content": "",
       "tool_calls": [{"id": "call_9", "name": "run_sql", "arguments": "{\"sql\":\"SELECT 1\"}"}],
       "usage": {"input_tokens": 10, "output_tokens": 2, "cached_tokens": 0}},
      {"kind": "tool", "tool_call_id": "call_9", "observation": {"rows": [[1]]}},
      {"kind": "model", "content": "One.", "tool_calls": [],
       "usage": {"input_tokens": 20, "output_tokens": 3, "cached_tokens": 8}}
    ]})");
  // llm reads fixtures only: the trace module owns what a step's kind means.
  EXPECT_FALSE(MakeReplayClientFromJson(trace, "trace.json"));
  Result<json> fixture = trace::ReplayFixtureOf(trace);
  ASSERT_TRUE(fixture) << fixture.error().message;
  EXPECT_EQ((*fixture)["turns"].size(), 2u) << "the tool step is not a turn";
  Result<std::unique_ptr<Client>> client = MakeReplayClientFromJson(*fixture, "trace.json");
  ASSERT_TRUE(client) << client.error().message;
  EXPECT_EQ((*client)->model(), "openai/gpt-4o-mini");
  Result<Turn> first = (*client)->Complete(Request{});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->tool_calls.at(0).id, "call_9");
  EXPECT_EQ(first->tool_calls.at(0).arguments_json, R"({"sql":"SELECT 1"})");
  Result<Turn> second = (*client)->Complete(Request{});
  ASSERT_TRUE(second);
  EXPECT_EQ(second->content, "One.");
  EXPECT_EQ(second->usage.cached_tokens, 8);
  EXPECT_FALSE((*client)->Complete(Request{}));
}

TEST(ReplayClientTest, ReadsAFileAndRejectsBadOnes) {
  quarry::testing::TempDir dir;
  Result<std::unique_ptr<Client>> ok =
      MakeReplayClient(dir.Write("fixture.json", Fixture().dump()));
  ASSERT_TRUE(ok) << ok.error().message;

  Result<std::unique_ptr<Client>> missing = MakeReplayClient(dir.path() / "nope.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::kData);
  EXPECT_NE(missing.error().message.find("nope.json"), std::string::npos);

  Result<std::unique_ptr<Client>> broken =
      MakeReplayClient(dir.Write("broken.json", "{\"turns\": ["));
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, Error::Code::kData);
  EXPECT_NE(broken.error().message.find("not valid JSON"), std::string::npos);

  json nameless =
      json::parse(R"({"turns": [{"content": "a"}, {"tool_calls": [{"arguments": {}}]}]})");
  Result<std::unique_ptr<Client>> bad = MakeReplayClientFromJson(nameless, "f.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Error::Code::kData);
  EXPECT_NE(bad.error().message.find("turns[1].tool_calls[0]: missing \"name\""), std::string::npos)
      << bad.error().message;

  Result<std::unique_ptr<Client>> empty =
      MakeReplayClientFromJson(json::parse(R"({"turns": []})"), "e.json");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("no model turns"), std::string::npos);
}

// A recording names a server by its database or service, so one fixture fits every host, port
// and socket directory that serves it; files stay named by their base names.
TEST(ReplayClientTest, DataNamesAServerByItsDatabase) {
  EXPECT_EQ(DataFileNames({"postgresql://reader@/chinook?host=%2Ftmp%2Fpg-1&port=5432"}),
            std::vector<std::string>{"postgresql:chinook"});
  EXPECT_EQ(DataFileNames({"postgres://u@db.example:6432/chinook"}),
            std::vector<std::string>{"postgresql:chinook"});
  EXPECT_EQ(DataFileNames({"postgresql://u@db.example"}), std::vector<std::string>{"postgresql:"});
  EXPECT_EQ(DataFileNames({"service=warehouse"}), std::vector<std::string>{"service=warehouse"});
  EXPECT_EQ(DataFileNames({"/d/b.csv", "data/a.sqlite"}),
            (std::vector<std::string>{"a.sqlite", "b.csv"}));
  // Reading options choose how a file is read, not which file (a recording replays with them).
  EXPECT_EQ(DataFileNames({"data/sensors.csv?types=humidity:VARCHAR"}),
            std::vector<std::string>{"sensors.csv"});
  EXPECT_EQ(DataFileNames({"data/what?.csv"}), std::vector<std::string>{"what?.csv"});
}

}  // namespace
}  // namespace quarry::llm

namespace quarry::llm {
namespace {

// The names fixtures, traces and --provider hold: each value keeps its name both ways, and a
// name no provider documents is not silently one of ours.
TEST(LlmNamesTest, EveryProviderAndFinishReasonKeepsItsName) {
  for (Provider p : {Provider::kOpenAiCompatible, Provider::kOpenRouter, Provider::kAnthropic,
                     Provider::kReplay}) {
    EXPECT_EQ(ParseProvider(ProviderName(p)), p) << ProviderName(p);
  }
  EXPECT_EQ(ProviderName(Provider::kOpenAiCompatible), "openai-compatible");
  EXPECT_FALSE(ParseProvider("claude"));
  EXPECT_FALSE(ParseProvider("Anthropic")) << "names are case-sensitive, as --provider documents";
  for (FinishReason r :
       {FinishReason::kNone, FinishReason::kStop, FinishReason::kToolCalls, FinishReason::kLength,
        FinishReason::kContentFilter, FinishReason::kError, FinishReason::kOther}) {
    EXPECT_EQ(ParseFinishReason(FinishReasonName(r)), r) << FinishReasonName(r);
  }
  EXPECT_EQ(FinishReasonName(FinishReason::kLength), "length");
  EXPECT_EQ(ParseFinishReason("function_call"), FinishReason::kOther);
  EXPECT_EQ(ParseFinishReason(""), FinishReason::kNone);
}

}  // namespace
}  // namespace quarry::llm
