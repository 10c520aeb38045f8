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
  for (const Bundled& b : std::vector<Bundled>{{"sales.csv", "sales", 11},
                                               {"chinook.sqlite", "chinook", 18},
                                               {"passengers.csv", "passengers", 7},
                                               {"sensors.csv", "sensors", 4}}) {
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
  // The answer cites the metric its SQL rests on, found in the SQL.
  EXPECT_EQ(out["rests_on"], json::array({"metric revenue (metrics.yaml:4)"})) << r.out;
  EXPECT_EQ(trace["answer"]["rests_on"], out["rests_on"]);
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

// The scripted offline fixtures (fixtures/offline/) with the bundled knowledge: "turnover" is
// asked about and answered from the metric revenue instead of the user (with --no-knowledge
// the same turns end waiting on the user); Chinook's money rule is given, and the answer's SQL
// follows it. Tools execute for real; the turns are scripted.
TEST(KnowledgeCliTest, ScriptedFixturesAnswerFromAMetricAndApplyARule) {
  TempDir cwd;
  const auto ask = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {QuarryBinary().string(), "ask", "--offline", "--format",
                                     "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    return quarry::testing::RunProcess(
        argv, SourceDir(), {"QUARRY_FIXTURES=" + (SourceDir() / "fixtures" / "offline").string()},
        {"QUARRY_BASE_URL", "QUARRY_MODEL", "QUARRY_API_KEY", "OPENROUTER_API_KEY"});
  };
  const std::string runs = (cwd.path() / "runs").string();
  auto metric = ask({"--runs-dir", runs, "--knowledge", "data/knowledge/sales", "--data",
                     "data/sales.csv", "What was the turnover in 2025?"});
  ASSERT_EQ(metric.exit_code, 0) << metric.out << metric.err;
  const json m = json::parse(metric.out);
  EXPECT_EQ(m["answer"], "Turnover in 2025 was $271,830.53.");
  EXPECT_EQ(m["rests_on"], json::array({"metric revenue (metrics.yaml:4)"}));
  const json mt = json::parse(quarry::testing::ReadFile(m["trace"].get<std::string>()));
  EXPECT_FALSE(mt.contains("clarifications")) << "the user was not asked";
  EXPECT_NE(mt["notes"].dump().find("answered from the knowledge files (metric revenue "
                                    "(metrics.yaml:4)) instead of asking the user"),
            std::string::npos)
      << mt["notes"].dump();
  auto unknown = ask({"--runs-dir", runs, "--no-knowledge", "--data", "data/sales.csv",
                      "What was the turnover in 2025?"});
  EXPECT_EQ(unknown.exit_code, 7) << unknown.out << unknown.err;  // waits on the user

  auto rule = ask({"--runs-dir", runs, "--knowledge", "data/knowledge/chinook", "--data",
                   "data/chinook.sqlite", "What were the sales of the Rock genre?"});
  ASSERT_EQ(rule.exit_code, 0) << rule.out << rule.err;
  const json r = json::parse(rule.out);
  EXPECT_EQ(r["answer"], "Rock sales came to $826.65.");
  EXPECT_EQ(r["grounded"], true);
  const json rt = json::parse(quarry::testing::ReadFile(r["trace"].get<std::string>()));
  const json items = rt["config"]["knowledge"]["items"];
  ASSERT_FALSE(items.empty());
  EXPECT_EQ(items[0], "rule money (rules/money.md)");
  EXPECT_NE(r["sql"].get<std::string>().find("sum(il.UnitPrice * il.Quantity)"), std::string::npos);
}

// A clarification remembered: the user's reply to "top channel: by revenue or by orders?" is
// offered for the glossary (never written unasked), kept by `quarry remember`, appended to the
// existing glossary.yaml with its comments intact, and a new question in a new thread is given
// the term and, when the model asks about it again, answered from the glossary without asking.
TEST(KnowledgeCliTest, AClarificationReplyKeptInTheGlossaryIsUsedByALaterQuestion) {
  ProviderServer server;
  TempDir cwd;
  const auto k = cwd.path() / "k";
  std::filesystem::copy(Knowledge(), k, std::filesystem::copy_options::recursive);
  const std::string before = quarry::testing::ReadFile(k / "glossary.yaml");
  const std::vector<std::string> env = {"QUARRY_BASE_URL=" + server.base_url(),
                                        "QUARRY_MODEL=stand-in", "QUARRY_API_KEY=not-a-real-key"};
  const json asked = {{"question", "Top channel by revenue or by number of orders?"},
                      {"choices", {"by revenue", "by orders"}},
                      {"term", "top channel"}};
  server.Enqueue({200, {}, Turn("ask_user", asked)});
  auto first = quarry::testing::RunProcess(
      {QuarryBinary().string(), "ask", "--format", "json", "--knowledge", k.string(), "--data",
       Sales(), "Which is the top channel?"},
      cwd.path(), env, {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  ASSERT_EQ(first.exit_code, 7) << first.out << first.err;  // waiting on the reply
  const std::string thread = json::parse(first.out)["thread"];
  ASSERT_FALSE(thread.empty()) << first.out;
  // The reply continues the thread; the run that answers offers to keep it.
  server.Enqueue({200,
                  {},
                  Turn("run_sql", {{"sql",
                                    "SELECT channel, round(sum(revenue), 2) AS revenue FROM sales "
                                    "GROUP BY channel ORDER BY revenue DESC LIMIT 1"}})});
  server.Enqueue({200,
                  {},
                  Turn("final_answer", {{"answer", "Online is the top channel by revenue."},
                                        {"supporting_values", {"Online"}},
                                        {"assumptions", {"top channel = by revenue"}}})});
  auto reply =
      quarry::testing::RunProcess({QuarryBinary().string(), "ask", "--knowledge", k.string(),
                                   "--data", Sales(), "--thread", thread, "by revenue"},
                                  cwd.path(), env, {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  ASSERT_EQ(reply.exit_code, 0) << reply.out << reply.err;
  EXPECT_NE(reply.err.find("quarry: to keep \"top channel = by revenue (metric revenue)\" for "
                           "later questions: quarry remember "),
            std::string::npos)
      << reply.err;
  EXPECT_EQ(quarry::testing::ReadFile(k / "glossary.yaml"), before) << "nothing written unasked";
  // Not on a terminal and without --yes: shown, not kept.
  auto unasked = quarry::testing::RunProcess(
      {QuarryBinary().string(), "remember", "latest", "--knowledge", k.string()}, cwd.path(), env);
  EXPECT_EQ(unasked.exit_code, 2) << unasked.err;
  EXPECT_EQ(unasked.out, "top channel = by revenue (metric revenue)\n");
  EXPECT_EQ(quarry::testing::ReadFile(k / "glossary.yaml"), before);
  auto kept = quarry::testing::RunProcess(
      {QuarryBinary().string(), "remember", "latest", "--knowledge", k.string(), "--yes"},
      cwd.path(), env);
  ASSERT_EQ(kept.exit_code, 0) << kept.out << kept.err;
  const std::string after = quarry::testing::ReadFile(k / "glossary.yaml");
  ASSERT_TRUE(after.starts_with(before)) << "the file's own text and comments stay:\n" << after;
  const std::string added = after.substr(before.size());
  EXPECT_TRUE(
      added.starts_with("  # the reply to \"Top channel by revenue or by number of "
                        "orders?\" (run "))
      << added;
  EXPECT_NE(added.find("\n  \"top channel\":\n    means: \"by revenue\"\n    metric: "
                       "\"revenue\"\n"),
            std::string::npos)
      << added;
  EXPECT_NE(kept.err.find("glossary.yaml:14"), std::string::npos) << kept.err;
  // Kept once: a second time it is defined already.
  auto twice = quarry::testing::RunProcess(
      {QuarryBinary().string(), "remember", "latest", "--knowledge", k.string(), "--yes"},
      cwd.path(), env);
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_EQ(quarry::testing::ReadFile(k / "glossary.yaml"), after);

  // A new question, no thread: the term is in the prompt, and asking about it again is
  // answered from the glossary.
  server.Enqueue({200, {}, Turn("ask_user", asked)});
  server.Enqueue({200,
                  {},
                  Turn("run_sql", {{"sql",
                                    "SELECT channel, round(sum(revenue), 2) AS revenue FROM sales "
                                    "WHERE order_date >= '2025-01-01' GROUP BY channel ORDER BY "
                                    "revenue DESC LIMIT 1"}})});
  server.Enqueue(
      {200,
       {},
       Turn("final_answer", {{"answer", "Online was the top channel in 2025."},
                             {"supporting_values", {"Online"}},
                             {"assumptions", {"top channel = by revenue (glossary)"}}})});
  const size_t sent = server.requests().size();
  auto later = quarry::testing::RunProcess(
      {QuarryBinary().string(), "ask", "--format", "json", "--knowledge", k.string(), "--data",
       Sales(), "What was the top channel in 2025?"},
      cwd.path(), env, {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  ASSERT_EQ(later.exit_code, 0) << later.out << later.err;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), sent + 3);
  const std::string system = requests[sent].Json()["messages"][0]["content"];
  EXPECT_NE(system.find("- top channel: by revenue → metric revenue [glossary.yaml:14]"),
            std::string::npos)
      << system;
  const json messages = requests[sent + 1].Json()["messages"];
  const std::string observation = messages.back()["content"];
  EXPECT_TRUE(
      observation.starts_with("not asked: the user's knowledge files define it: top "
                              "channel: by revenue → metric revenue [glossary.yaml:14]; "
                              "revenue: sum(revenue) over sales"))
      << observation;
  const json out = json::parse(later.out);
  EXPECT_EQ(out["stop_reason"], "answered") << later.out;
  const json trace =
      json::parse(quarry::testing::ReadFile(cwd.path() / out["trace"].get<std::string>()));
  EXPECT_FALSE(trace.contains("clarifications")) << "the user was not asked";
  bool noted = false;
  for (const auto& n : trace["notes"]) {
    noted = noted || n.get<std::string>().starts_with(
                         "a clarification was answered from the knowledge files (term top "
                         "channel (glossary.yaml:14))");
  }
  EXPECT_TRUE(noted) << trace["notes"].dump();
  // No offer for a term the glossary now holds.
  EXPECT_EQ(later.err.find("quarry: to keep"), std::string::npos) << later.err;
  // The command that continues a waiting thread keeps the knowledge the question had.
  server.Enqueue({200, {}, Turn("ask_user", {{"question", "Which year?"}, {"term", "last year"}})});
  auto waiting =
      quarry::testing::RunProcess({QuarryBinary().string(), "ask", "--knowledge", k.string(),
                                   "--data", Sales(), "What was revenue last year?"},
                                  cwd.path(), env, {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  EXPECT_EQ(waiting.exit_code, 7) << waiting.err;
  EXPECT_NE(waiting.out.find(" --knowledge " + k.string() + " --data "), std::string::npos)
      << waiting.out;
}

}  // namespace
}  // namespace quarry
