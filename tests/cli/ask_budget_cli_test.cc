// `quarry ask --max-tool-calls` as a user meets it: the run stops at the budget, the model's
// explanation is printed marked as not an answer (text and JSON), and `trace` and `view` show
// it the same way. Model turns are scripted (--replay); the data is data/sales.csv.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

const std::vector<std::string> kModelEnv = {"QUARRY_BASE_URL", "QUARRY_MODEL",
                                            "QUARRY_API_KEY",  "OPENROUTER_API_KEY",
                                            "QUARRY_FIXTURES", "QUARRY_PRICES"};
constexpr const char* kQuestion = "How does revenue split by region and by channel?";
constexpr const char* kWhy =
    "I queried region and channel in parallel and the budget allowed one call. Ask again with "
    "--max-tool-calls 2, or ask for one split at a time.";

class AskBudgetCliTest : public ::testing::Test {
 protected:
  testing::ProcessResult Quarry(std::vector<std::string> args) {
    args.insert(args.begin(), quarry::testing::QuarryBinary().string());
    return quarry::testing::RunProcess(args, cwd_.path(), {}, kModelEnv);
  }
  std::string Fixture() {
    auto sql = [](const char* column) {
      return json{{"name", "run_sql"},
                  {"arguments",
                   {{"sql", std::string("SELECT ") + column +
                                ", round(sum(revenue), 2) AS total FROM sales "
                                "GROUP BY 1 ORDER BY total DESC"}}}};
    };
    const json usage = {{"input_tokens", 900}, {"output_tokens", 30}};
    const json turns = {
        {{"content", ""}, {"tool_calls", {sql("region"), sql("channel")}}, {"usage", usage}},
        {{"content", kWhy}, {"tool_calls", json::array()}, {"usage", usage}}};
    const json doc = {{"source", "scripted"}, {"question", kQuestion}, {"turns", turns}};
    return cwd_.Write("fixture.json", doc.dump()).string();
  }
  std::string Sales() { return (SourceDir() / "data" / "sales.csv").string(); }
  TempDir cwd_;
};

TEST_F(AskBudgetCliTest, TheBudgetStopIsExplainedAndMarkedAsNotAnAnswer) {
  const std::string fixture = Fixture();
  auto r =
      Quarry({"ask", "--replay", fixture, "--max-tool-calls", "1", "--data", Sales(), kQuestion});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("no answer: tool_call_budget_exhausted\nnot an answer: " +
                       std::string(kWhy) + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("tool calls 1 "), std::string::npos) << r.out;

  auto j = Quarry({"ask", "--replay", fixture, "--max-tool-calls", "1", "--format", "json",
                   "--data", Sales(), kQuestion});
  EXPECT_EQ(j.exit_code, 5) << j.err;
  const json out = json::parse(j.out);
  EXPECT_EQ(out["answer"], "");
  EXPECT_EQ(out["stop_reason"], "tool_call_budget_exhausted");
  EXPECT_EQ(out["explanation"], json({{"text", kWhy}, {"answer", false}}));
  const json t =
      json::parse(quarry::testing::ReadFile(cwd_.path() / out["trace"].get<std::string>()));
  EXPECT_EQ(t["config"]["max_tool_calls"], 1);
  EXPECT_EQ(t["explanation"]["text"], kWhy);
  EXPECT_EQ(t["steps"].back()["detail"]["purpose"], "explanation");

  auto summary = Quarry({"trace", "latest"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("not an answer (the model's explanation of the stop, not "
                             "verified): " +
                             std::string(kWhy)),
            std::string::npos)
      << summary.out;
  auto view = Quarry({"view", "latest"});
  ASSERT_EQ(view.exit_code, 0) << view.err;
  const std::string html =
      quarry::testing::ReadFile(cwd_.path() / view.out.substr(0, view.out.size() - 1));
  EXPECT_NE(html.find("<b>Not an answer:</b>"), std::string::npos);
}

TEST_F(AskBudgetCliTest, ABudgetBelowOneIsRefused) {
  auto r =
      Quarry({"ask", "--replay", Fixture(), "--max-tool-calls", "0", "--data", Sales(), kQuestion});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--max-tool-calls"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace quarry
