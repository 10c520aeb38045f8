// Knowledge files through the quarry binary: the bundled sales knowledge checks clean against
// data/sales.csv; a question naming a defined metric gets it in the system prompt (with the rules
// and the nearest verified query) from a stand-in provider on 127.0.0.1, the trace records which
// items were given, and the user is told which folder was used. Model turns are scripted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::QuarryBinary;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

const std::vector<std::string> kModelEnv = {"QUARRY_BASE_URL", "QUARRY_MODEL", "QUARRY_API_KEY",
                                            "OPENROUTER_API_KEY", "QUARRY_PRICES"};

std::string Sales() { return (SourceDir() / "data" / "sales.csv").string(); }
std::string Knowledge() { return (SourceDir() / "data" / "knowledge" / "sales").string(); }

std::string Turn(const std::string& name, const json& args) {
  quarry::testing::ScriptedCompletion c;
  c.tool_calls = {{"call_" + name, name, args.dump()}};
  c.prompt_tokens = 1000;
  c.completion_tokens = 40;
  return quarry::testing::CompletionBody(c);
}

// The knowledge of every bundled dataset, written from its documentation, checks clean.
TEST(KnowledgeCliTest, TheBundledKnowledgeChecksCleanAgainstItsData) {
  struct Bundled {
    std::string data, knowledge;
    size_t findings;
  };
  const auto root = SourceDir() / "data";
  for (const Bundled& b : std::vector<Bundled>{{"sales.csv", "sales", 10},
                                               {"chinook.sqlite", "chinook", 17},
                                               {"passengers.csv", "passengers", 7},
                                               {"sensors.csv", "sensors", 3}}) {
    TempDir cwd;
    auto r = quarry::testing::RunProcess(
        {QuarryBinary().string(), "knowledge", "check", (root / b.data).string(), "--knowledge",
         (root / "knowledge" / b.knowledge).string(), "--format", "json"},
        cwd.path());
    ASSERT_EQ(r.exit_code, 0) << b.knowledge << "\n" << r.out << r.err;
    const json findings = json::parse(r.out);
    EXPECT_EQ(findings.size(), b.findings) << b.knowledge;
    for (const auto& f : findings) EXPECT_EQ(f["ok"], true) << f.dump();
  }
  TempDir cwd;
  auto r = quarry::testing::RunProcess(
      {QuarryBinary().string(), "knowledge", "check", Sales(), "--knowledge", Knowledge()},
      cwd.path());
  EXPECT_NE(r.err.find("quarry: knowledge: " + Knowledge() +
                       " (4 metrics, 3 glossary terms, 1 table, 1 rule, 2 verified queries)"),
            std::string::npos)
      << r.err;
}

TEST(KnowledgeCliTest, AStaleVerifiedQueryAndAMissingColumnFailTheCheck) {
  TempDir cwd;
  const auto dir = cwd.path() / "k";
  std::filesystem::create_directories(dir / "queries");
  std::filesystem::create_directories(dir / "tables");
  cwd.Write("k/queries/regions.md",
            "---\nquestion: Which regions are there?\nresult_rows: 4\n---\n```sql\nSELECT "
            "DISTINCT region FROM sales\n```\n");
  cwd.Write("k/tables/sales.yaml", "columns:\n  margin: profit share\n");
  auto r = quarry::testing::RunProcess(
      {QuarryBinary().string(), "knowledge", "check", Sales(), "--knowledge", dir.string()},
      cwd.path());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL   table sales (tables/sales.yaml:1): column 'margin' of sales does "
                       "not exist"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stale  verified query regions (queries/regions.md:1): it returned 4 "
                       "row(s) when saved, 5 now"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("2 checked, 1 failed, 1 stale"), std::string::npos) << r.err;
  // A bad file is a usage error naming the file and the line, before any data is opened.
  cwd.Write("k/metrics.yaml", "metrics:\n  revenue:\n    sql: sum(revenue)\n");
  auto bad = quarry::testing::RunProcess(
      {QuarryBinary().string(), "knowledge", "check", Sales(), "--knowledge", dir.string()},
      cwd.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("knowledge: metrics.yaml:2: metric 'revenue' has no table"),
            std::string::npos)
      << bad.err;
}

// "Turnover" could be gross or net: the knowledge defines it (a synonym of the metric revenue),
// so the model is given the definition, the rule on discounts and the nearest verified query,
// and answers without asking (scripted turns).
TEST(KnowledgeCliTest, AQuestionNamingAMetricGetsItsDefinitionAndTheTraceSaysSo) {
  ProviderServer server;
  server.Enqueue({200,
                  {},
                  Turn("run_sql", {{"sql",
                                    "SELECT round(sum(revenue), 2) AS turnover "
                                    "FROM sales"}})});
  server.Enqueue(
      {200,
       {},
       Turn("final_answer", {{"answer", "Turnover was $504,488.21."},
                             {"supporting_values", {"504488.21"}},
                             {"assumptions", {"turnover is the metric revenue (metrics.yaml)"}}})});
  TempDir cwd;
  auto r = quarry::testing::RunProcess(
      {QuarryBinary().string(), "ask", "--format", "json", "--knowledge", Knowledge(), "--data",
       Sales(), "What was the turnover by region?"},
      cwd.path(),
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in",
       "QUARRY_API_KEY=not-a-real-key"},
      {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("quarry: knowledge: " + Knowledge()), std::string::npos) << r.err;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  const std::string system = requests[0].Json()["messages"][0]["content"];
  const size_t knowledge = system.find("## Knowledge");
  ASSERT_NE(knowledge, std::string::npos) << system;
  EXPECT_GT(knowledge, system.find("table sales (2065 rows")) << "the knowledge follows the schema";
  EXPECT_NE(system.find("- revenue: sum(revenue) over sales; dates from order_date."),
            std::string::npos);
  EXPECT_NE(system.find("- Revenue is after discounts: "), std::string::npos);
  EXPECT_NE(system.find("\"What is the total revenue by region?\", verified by quarry "
                        "maintainers on 2026-12-04"),
            std::string::npos);
  const json out = json::parse(r.out);
  const json trace =
      json::parse(quarry::testing::ReadFile(cwd.path() / out["trace"].get<std::string>()));
  const json items = trace["config"]["knowledge"]["items"];
  ASSERT_GE(items.size(), 3u) << trace["config"].dump();
  EXPECT_EQ(items[0], "rule discounts (rules/discounts.md)");
  EXPECT_EQ(items[1], "metric revenue (metrics.yaml:4)");
  EXPECT_EQ(trace["config"]["knowledge"]["dir"], Knowledge());
  // --no-knowledge: none of it.
  server.Enqueue({200, {}, Turn("run_sql", {{"sql", "SELECT 1 AS one"}})});
  server.Enqueue(
      {200, {}, Turn("final_answer", {{"answer", "One."}, {"supporting_values", {"1"}}})});
  auto none = quarry::testing::RunProcess(
      {QuarryBinary().string(), "ask", "--no-knowledge", "--data", Sales(), "What is one?"},
      cwd.path(),
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in",
       "QUARRY_API_KEY=not-a-real-key"},
      {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  const std::string plain = server.requests()[2].Json()["messages"][0]["content"];
  EXPECT_EQ(plain.find("## Knowledge"), std::string::npos);
}

// quarry learn: an answered, grounded run becomes queries/<name>.md with its question, SQL and
// result fingerprint, which knowledge check then passes and Load reads back; a second save
// never replaces it, and a run without a grounded answer is not learned.
TEST(KnowledgeCliTest, ALearnedRunIsAVerifiedQueryThatChecksClean) {
  ProviderServer server;
  server.Enqueue({200,
                  {},
                  Turn("run_sql", {{"sql",
                                    "SELECT channel, count(*) AS orders FROM "
                                    "sales GROUP BY channel ORDER BY channel"}})});
  server.Enqueue({200,
                  {},
                  Turn("final_answer",
                       {{"answer", "Online has 1022 orders."}, {"supporting_values", {"1022"}}})});
  TempDir cwd;
  const std::vector<std::string> env = {"QUARRY_BASE_URL=" + server.base_url(),
                                        "QUARRY_MODEL=stand-in", "QUARRY_API_KEY=not-a-real-key",
                                        "USER=ana"};
  auto asked =
      quarry::testing::RunProcess({QuarryBinary().string(), "ask", "--no-knowledge", "--data",
                                   Sales(), "How many orders came through each channel?"},
                                  cwd.path(), env, {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  ASSERT_EQ(asked.exit_code, 0) << asked.out << asked.err;
  const std::string k = (cwd.path() / "k").string();
  auto learned = quarry::testing::RunProcess(
      {QuarryBinary().string(), "learn", "latest", "--knowledge", k, "--yes"}, cwd.path(), env);
  ASSERT_EQ(learned.exit_code, 0) << learned.out << learned.err;
  const auto file = cwd.path() / "k" / "queries" / "how-many-orders-came-through-each-channel.md";
  ASSERT_TRUE(std::filesystem::exists(file)) << learned.err;
  const std::string text = quarry::testing::ReadFile(file);
  EXPECT_TRUE(
      text.starts_with("---\nquestion: \"How many orders came through each "
                       "channel?\"\nverified_by: \"ana\"\nverified_at: \""))
      << text;
  EXPECT_NE(text.find("result_rows: 3\nresult_sha256: "), std::string::npos) << text;
  EXPECT_TRUE(
      text.ends_with("```sql\nSELECT channel, count(*) AS orders FROM sales GROUP BY "
                     "channel ORDER BY channel;\n```\n"))
      << text;
  EXPECT_NE(learned.out.find(text), std::string::npos) << "it was shown before it was saved";
  auto check = quarry::testing::RunProcess(
      {QuarryBinary().string(), "knowledge", "check", Sales(), "--knowledge", k}, cwd.path());
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("ok     verified query how-many-orders-came-through-each-channel"),
            std::string::npos)
      << check.out;
  // Never over an existing file; never without being asked (no terminal, no --yes).
  auto again = quarry::testing::RunProcess(
      {QuarryBinary().string(), "learn", "latest", "--knowledge", k, "--yes"}, cwd.path(), env);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("exists already: give another name with --name"), std::string::npos)
      << again.err;
  auto unasked = quarry::testing::RunProcess(
      {QuarryBinary().string(), "learn", "latest", "--knowledge", k, "--name", "other"}, cwd.path(),
      env);
  EXPECT_EQ(unasked.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(cwd.path() / "k" / "queries" / "other.md"));
  // A run that did not end in a grounded answer is not learned.
  server.Enqueue({200,
                  {},
                  Turn("final_answer", {{"answer", "There are 999999 orders."},
                                        {"supporting_values", {"999999"}}})});
  server.Enqueue({200,
                  {},
                  Turn("final_answer", {{"answer", "There are 999999 orders."},
                                        {"supporting_values", {"999999"}}})});
  auto refused = quarry::testing::RunProcess(
      {QuarryBinary().string(), "ask", "--no-knowledge", "--data", Sales(), "How many orders?"},
      cwd.path(), env, {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  EXPECT_EQ(refused.exit_code, 5) << refused.out << refused.err;
  auto not_learned = quarry::testing::RunProcess(
      {QuarryBinary().string(), "learn", "latest", "--knowledge", k, "--yes"}, cwd.path(), env);
  EXPECT_EQ(not_learned.exit_code, 2);
  EXPECT_NE(not_learned.err.find("ended final_answer_ungrounded: only an answered, grounded run "
                                 "is saved as a verified query"),
            std::string::npos)
      << not_learned.err;
}

}  // namespace
}  // namespace quarry
