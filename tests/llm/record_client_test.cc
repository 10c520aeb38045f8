// --record at the model layer: the recording decorator, the fixture it becomes, and that the
// replay client plays that fixture back as the very turns that were recorded.
#include <gtest/gtest.h>

#include "quarry/llm/llm.h"
#include "quarry/trace/trace.h"
#include "support/test_support.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::TempDir;

// Hands out the given turns (or an error when the entry is nullopt) and counts calls.
class ScriptClient final : public Client {
 public:
  explicit ScriptClient(std::vector<std::optional<Turn>> turns) : turns_(std::move(turns)) {}
  Result<Turn> Complete(const Request&) override {
    const std::optional<Turn> next = turns_.at(calls_++);
    if (!next) return Fail(Error::Code::kModel, "HTTP 500: scripted failure");
    return *next;
  }
  Provider provider() const override { return Provider::kOpenRouter; }
  std::string model() const override { return "anthropic/claude-sonnet-4.5"; }
  std::optional<double> MaxCostUsd(int64_t prompt_tokens) const override {
    return static_cast<double>(prompt_tokens) / 1e6;
  }

 private:
  std::vector<std::optional<Turn>> turns_;
  size_t calls_ = 0;
};

Turn ToolTurn() {
  Turn t;
  t.content = "Let me total it.";
  t.tool_calls = {{"toolu_01", "run_sql", R"({"sql": "SELECT sum(x) FROM t"})"},
                  {"toolu_02", "run_sql", R"({"sql": "SELECT)"}};  // malformed, kept raw
  t.finish_reason = FinishReason::kToolCalls;
  t.usage = {5045, 91, 4100, 900};
  t.cost_usd = 0.0123;
  t.cost_reported = true;
  t.cache_saved_usd = 0.011;
  t.streamed = true;
  t.latency_ms = 812;
  t.attempts = 2;
  return t;
}

Turn UnpricedTurn() {
  Turn t;
  t.content = "";
  t.tool_calls = {{"toolu_03", "final_answer", R"({"answer":"42","supporting_values":["42"]})"}};
  t.finish_reason = FinishReason::kToolCalls;
  t.usage = {5200, 40, 0, 0};
  t.cost_known = false;
  return t;
}

TEST(RecordClientTest, KeepsEachReturnedTurnAndForwardsTheRest) {
  ScriptClient inner({ToolTurn(), std::nullopt, UnpricedTurn()});
  RecordingClient recorder(inner);
  EXPECT_EQ(ProviderName(recorder.provider()), "openrouter");
  EXPECT_EQ(recorder.model(), "anthropic/claude-sonnet-4.5");
  EXPECT_EQ(recorder.MaxCostUsd(2000000), 2.0);
  ASSERT_TRUE(recorder.Complete(Request{}));
  const Result<Turn> failed = recorder.Complete(Request{});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "HTTP 500: scripted failure");
  ASSERT_TRUE(recorder.Complete(Request{}));
  // The failed call is not a turn: a replay would otherwise hand the agent a turn the live
  // run never saw.
  ASSERT_EQ(recorder.turns().size(), 2u);
  EXPECT_EQ(recorder.turns()[0].tool_calls[1].arguments_json, R"({"sql": "SELECT)");
  EXPECT_EQ(recorder.turns()[1].tool_calls[0].name, "final_answer");
}

FixtureLabel Label() {
  FixtureLabel label;
  label.question = "Which region sells most?";
  label.data = {"/home/someone/private/sales.csv", "data/extra/regions.csv"};
  label.model = "anthropic/claude-sonnet-4.5";
  label.provider = Provider::kOpenRouter;
  label.recorded_at = "2026-12-01T10:38:26Z";
  label.quarry_version = "0.1.0";
  label.stop_reason = "answered";
  return label;
}

TEST(RecordClientTest, FixtureIsLabelledRecordedWithBaseNamesOnly) {
  const json doc = RecordedFixture(Label(), {ToolTurn(), UnpricedTurn()});
  EXPECT_EQ(doc["source"], "recorded");
  EXPECT_EQ(doc["question"], "Which region sells most?");
  EXPECT_FALSE(doc.contains("reply"));
  EXPECT_EQ(doc["data"], json::parse(R"(["regions.csv", "sales.csv"])"));
  EXPECT_EQ(doc["model"], "anthropic/claude-sonnet-4.5");
  EXPECT_EQ(doc["provider"], "openrouter");
  EXPECT_EQ(doc["recorded_at"], "2026-12-01T10:38:26Z");
  EXPECT_EQ(doc["quarry_version"], "0.1.0");
  EXPECT_EQ(doc["stop_reason"], "answered");
  EXPECT_NE(doc["note"].get<std::string>().find("scripted"), std::string::npos);
  // No folder of the user's leaks into the fixture.
  EXPECT_EQ(doc.dump().find("someone"), std::string::npos);
  const json& first = doc["turns"][0];
  EXPECT_EQ(first, json::parse(R"({
    "content": "Let me total it.",
    "tool_calls": [{"id": "toolu_01", "name": "run_sql", "arguments": "{\"sql\": \"SELECT sum(x) FROM t\"}"},
                   {"id": "toolu_02", "name": "run_sql", "arguments": "{\"sql\": \"SELECT"}],
    "usage": {"input_tokens": 5045, "output_tokens": 91, "cached_tokens": 4100,
              "cache_write_tokens": 900},
    "cost_usd": 0.0123, "cache_saved_usd": 0.011, "finish_reason": "tool_calls",
    "streamed": true})"));
  // An unknown cost stays unknown: no cost_usd, so the replay does not call the turn free.
  EXPECT_FALSE(doc["turns"][1].contains("cost_usd"));
  EXPECT_FALSE(doc["turns"][1].contains("streamed"));

  FixtureLabel continued = Label();
  continued.reply = "by revenue";
  EXPECT_EQ(RecordedFixture(continued, {ToolTurn()})["reply"], "by revenue");
}

TEST(RecordClientTest, FixtureReplaysAsTheRecordedTurns) {
  const std::vector<Turn> recorded = {ToolTurn(), UnpricedTurn()};
  TempDir dir;
  const auto path = dir.path() / "run.json";
  ASSERT_TRUE(WriteFixture(path, RecordedFixture(Label(), recorded)));
  auto client = MakeReplayClient(path);
  ASSERT_TRUE(client) << client.error().message;
  EXPECT_EQ((*client)->model(), "anthropic/claude-sonnet-4.5");
  EXPECT_EQ(ProviderName((*client)->provider()), "replay");
  EXPECT_EQ((*client)->turns_source(), "recorded");
  for (const Turn& want : recorded) {
    Result<Turn> got = (*client)->Complete(Request{});
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->content, want.content);
    ASSERT_EQ(got->tool_calls.size(), want.tool_calls.size());
    for (size_t i = 0; i < want.tool_calls.size(); ++i) {
      EXPECT_EQ(got->tool_calls[i].id, want.tool_calls[i].id);
      EXPECT_EQ(got->tool_calls[i].name, want.tool_calls[i].name);
      EXPECT_EQ(got->tool_calls[i].arguments_json, want.tool_calls[i].arguments_json);
    }
    EXPECT_EQ(got->finish_reason, want.finish_reason);
    EXPECT_EQ(got->usage.input_tokens, want.usage.input_tokens);
    EXPECT_EQ(got->usage.output_tokens, want.usage.output_tokens);
    EXPECT_EQ(got->usage.cached_tokens, want.usage.cached_tokens);
    EXPECT_EQ(got->usage.cache_write_tokens, want.usage.cache_write_tokens);
    EXPECT_EQ(got->cost_usd, want.cost_usd);
    EXPECT_EQ(got->cost_known, want.cost_known);
    EXPECT_EQ(got->cache_saved_usd, want.cache_saved_usd);
  }
  EXPECT_FALSE((*client)->Complete(Request{}));
}

TEST(RecordClientTest, WriteFixtureReplacesAtomicallyAndNamesAMissingFolder) {
  TempDir dir;
  const auto path = dir.path() / "run.json";
  ASSERT_TRUE(WriteFixture(path, json{{"turns", json::array()}}));
  ASSERT_TRUE(WriteFixture(path, RecordedFixture(Label(), {ToolTurn()})));
  EXPECT_EQ(json::parse(quarry::testing::ReadFile(path))["source"], "recorded");
  // Only the fixture is left: no temporary file beside it.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "run.json");
  }
  EXPECT_EQ(files, 1u);

  const Result<void> missing = WriteFixture(dir.path() / "no" / "such" / "run.json", json{});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::kUsage);
  EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos)
      << missing.error().message;
}

TEST(RecordClientTest, ReplayReadsCacheWritesAndOldFixturesWithout) {
  const json doc = json::parse(R"({"source": "scripted", "turns": [
    {"content": "a", "usage": {"input_tokens": 10, "output_tokens": 1, "cached_tokens": 4,
                               "cache_write_tokens": 6}, "cost_usd": 0.5,
     "cache_saved_usd": -0.25},
    {"content": "b", "usage": {"input_tokens": 10, "output_tokens": 1, "cached_tokens": 4}}]})");
  auto client = MakeReplayClientFromJson(doc, "inline");
  ASSERT_TRUE(client) << client.error().message;
  EXPECT_EQ((*client)->turns_source(), "scripted");
  Result<Turn> first = (*client)->Complete(Request{});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->usage.cache_write_tokens, 6);
  EXPECT_EQ(first->cache_saved_usd, -0.25);
  Result<Turn> second = (*client)->Complete(Request{});
  ASSERT_TRUE(second);
  EXPECT_EQ(second->usage.cached_tokens, 4);
  EXPECT_EQ(second->usage.cache_write_tokens, 0);
  EXPECT_FALSE(second->cache_saved_usd.has_value());

  const json bad =
      json::parse(R"({"turns": [{"usage": {"input_tokens": 1, "cache_write_tokens": "many"}}]})");
  auto refused = MakeReplayClientFromJson(bad, "bad.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("turns[0].usage.cache_write_tokens"), std::string::npos)
      << refused.error().message;

  const json trace = json::parse(R"({"steps": [{"kind": "model", "content": "x"}]})");
  auto from_trace = MakeReplayClientFromJson(*trace::ReplayFixtureOf(trace), "trace.json");
  ASSERT_TRUE(from_trace);
  EXPECT_EQ((*from_trace)->turns_source(), "trace");

  // An error in a trace's model step names the step, as the file the user gave holds it.
  const json broken =
      json::parse(R"({"steps": [{"kind": "load"}, {"kind": "model", "tool_calls": "junk"}]})");
  auto named = MakeReplayClientFromJson(*trace::ReplayFixtureOf(broken), "trace.json");
  ASSERT_FALSE(named);
  EXPECT_NE(named.error().message.find("trace.json: steps[1].tool_calls"), std::string::npos)
      << named.error().message;
}

}  // namespace
}  // namespace quarry::llm
