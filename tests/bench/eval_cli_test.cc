// `quarry eval` end to end: the real binary on the small Spider and BIRD fixture
// (tests/bench/eval_fixture/), with the gold SQL as the prediction (the harness's own test),
// with a stand-in provider on 127.0.0.1 whose scripted turns answer some questions with wrong
// SQL, with recorded turns (--offline), and on broken layouts.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "bench/eval_fixture.h"
#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::RunProcess;
using quarry::testing::TempDir;

std::vector<json> ReadLines(const fs::path& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

json ReadJson(const fs::path& path) { return json::parse(quarry::testing::ReadFile(path)); }

quarry::testing::ProcessResult Eval(const TempDir& cwd, std::vector<std::string> args,
                                    const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), {quarry::testing::QuarryBinary().string(), "eval"});
  return RunProcess(args, cwd.path(), env,
                    {"OPENROUTER_API_KEY", "QUARRY_API_KEY", "QUARRY_BASE_URL", "QUARRY_MODEL",
                     "QUARRY_PRICES", "QUARRY_FIXTURES", "ANTHROPIC_API_KEY", "QUARRY_PROVIDER"});
}

TEST(EvalCliTest, SpiderGoldScoresEveryQuestionAndLeavesTheDataUnchanged) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  const auto before = quarry::testing::DirectoryFingerprint(tmp.path() / "spider");
  auto r =
      Eval(tmp, {"spider", "--dir", (tmp.path() / "spider").string(), "--gold", "--tag", "self"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path out = tmp.path() / "results" / "eval" / "spider-dev-self";
  const json s = ReadJson(out / "summary.json");
  EXPECT_EQ(s["questions"], 13);
  EXPECT_EQ(s["scored"], 13);
  EXPECT_EQ(s["matched"], 13);
  EXPECT_EQ(s["accuracy"], 1.0);
  EXPECT_EQ(s["outcomes"]["harness_error"], 0);
  EXPECT_EQ(s["prediction"], "gold");
  EXPECT_EQ(s["rules"], "test-suite");
  EXPECT_NEAR(s["wilson_95"][0].get<double>(), 0.7719, 1e-4);  // Wilson, 13 of 13
  const auto lines = ReadLines(out / "questions.jsonl");
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_EQ(lines[1]["order_matters"], true);
  EXPECT_EQ(lines[2]["order_matters"], false);
  EXPECT_EQ(lines[7]["gold_rows"], 0);  // the empty result
  EXPECT_EQ(lines[5]["gold_rows"], 4);  // the join's repeated row kept
  EXPECT_EQ(lines[0]["run_id"], nullptr);
  EXPECT_NE(r.out.find("13/13 = 100.0%"), std::string::npos) << r.out;
  EXPECT_EQ(quarry::testing::DirectoryFingerprint(tmp.path() / "spider"), before);

  // The same tag again would overwrite the results: refused.
  auto again =
      Eval(tmp, {"spider", "--dir", (tmp.path() / "spider").string(), "--gold", "--tag", "self"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already holds results"), std::string::npos) << again.err;
}

TEST(EvalCliTest, BirdGoldScoresEveryQuestionWithBirdsRule) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("bird", tmp.path() / "bird"));
  auto r = Eval(tmp, {"bird", "--dir", (tmp.path() / "bird").string(), "--gold", "--out",
                      (tmp.path() / "out").string(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["benchmark"], "bird");
  EXPECT_EQ(s["rules"], "bird");
  EXPECT_EQ(s["matched"], 5);
  EXPECT_EQ(s["scored"], 5);
  EXPECT_EQ(s["by_difficulty"]["simple"]["matched"], 2);
  EXPECT_EQ(s["by_difficulty"]["challenging"]["scored"], 1);
  EXPECT_EQ(ReadJson(tmp.path() / "out" / "summary.json")["accuracy"], 1.0);
}

TEST(EvalCliTest, SampleOfNQuestionsBySeedIsTheSameTwice) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  std::vector<std::vector<int>> picked;
  for (const char* tag : {"a", "b"}) {
    auto r = Eval(tmp, {"spider", "--dir", (tmp.path() / "spider").string(), "--gold", "--n", "4",
                        "--seed", "7", "--tag", tag});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<int> idx;
    for (const json& l : ReadLines(tmp.path() / "results" / "eval" /
                                   (std::string("spider-dev-") + tag) / "questions.jsonl")) {
      idx.push_back(l["index"].get<int>());
    }
    picked.push_back(idx);
  }
  EXPECT_EQ(picked[0].size(), 4u);
  EXPECT_EQ(picked[0], picked[1]);
}

std::string Sql(const std::string& sql, int prompt_tokens = 1000) {
  return quarry::testing::ToolCallReply({{"c1", "run_sql", json({{"sql", sql}}).dump()}},
                                        prompt_tokens, 30);
}
std::string Answer(int prompt_tokens = 1100) {
  return quarry::testing::ToolCallReply(
      {{"c2", "final_answer",
        json({{"answer", "The query's result answers it."}, {"supporting_values", json::array()}})
            .dump()}},
      prompt_tokens, 20);
}

// Question by question (the fixture's order): the SQL the stand-in model runs, or "" for a
// clarification instead of an answer, and whether it matches the gold.
struct Scripted {
  std::string sql;
  const char* outcome;
};
const Scripted kSpiderScript[] = {
    {"SELECT count(*) FROM singer", "match"},
    {"SELECT name FROM singer ORDER BY age ASC", "mismatch"},  // order, and the gold orders
    {"SELECT country FROM singer WHERE country IS NOT NULL", "mismatch"},  // the NULL row lost
    {"SELECT count(*), country FROM singer GROUP BY country", "match"},    // columns permuted
    {"SELECT sum(net_worth) / count(net_worth) FROM singer", "match"},     // a float, computed anew
    {"SELECT s.name FROM singer s JOIN singer_in_concert sc ON sc.singer_id = s.singer_id "
     "WHERE sc.concert_id IN (SELECT concert_id FROM concert WHERE year = 2014)",
     "match"},  // the repeated row kept
    {"SELECT age, name FROM singer WHERE age = (SELECT max(age) FROM singer)", "match"},
    {"SELECT name FROM singer WHERE country = 'atlantis'", "match"},  // both empty
    {"SELECT DISTINCT country FROM singer WHERE NOT country IS NULL", "match"},
    {"SELECT category, count(*) FROM products GROUP BY category", "mismatch"},  // wrong values
    {"", "no_prediction"},  // a clarification: no SQL answer
    {"SELECT order_id FROM orders WHERE discount IS NULL", "match"},
    {"SELECT p.name, avg(o.quantity * 1.0) FROM orders o JOIN products p USING (product_id) "
     "GROUP BY p.name",
     "match"},
};

TEST(EvalCliTest, StandInModelWithWrongSqlScoresExactlyWhatItShould) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  ProviderServer server;
  for (const Scripted& s : kSpiderScript) {
    if (s.sql.empty()) {
      server.Enqueue({200,
                      {},
                      quarry::testing::ToolCallReply(
                          {{"c3", "ask_user", R"({"question": "Which quantity do you mean?"})"}})});
      continue;
    }
    server.Enqueue({200, {}, Sql(s.sql)});
    server.Enqueue({200, {}, Answer()});
  }
  auto r = Eval(tmp, {"spider", "--dir", (tmp.path() / "spider").string(), "--tag", "standin"},
                {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
                 "QUARRY_API_KEY=sk-test-eval"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(server.pending(), 0u);
  const fs::path out = tmp.path() / "results" / "eval" / "spider-dev-standin";
  const json s = ReadJson(out / "summary.json");
  EXPECT_EQ(s["matched"], 9);
  EXPECT_EQ(s["scored"], 13);
  EXPECT_EQ(s["outcomes"]["mismatch"], 3);
  EXPECT_EQ(s["outcomes"]["no_prediction"], 1);
  EXPECT_EQ(s["outcomes"]["harness_error"], 0);
  EXPECT_NEAR(s["accuracy"].get<double>(), 9.0 / 13.0, 1e-12);
  EXPECT_EQ(s["turns"], "live");
  EXPECT_EQ(s["model"], "stand-in-model");
  EXPECT_EQ(s["runs"], 13);
  // 12 questions of 2 model calls and one of 1; prompt tokens 1000 + 1100 per answered one.
  EXPECT_NEAR(s["mean_model_calls"].get<double>(), 25.0 / 13.0, 1e-12);
  EXPECT_NEAR(s["prompt_tokens_per_question"].get<double>(), (12 * 2100.0 + 100.0) / 13.0, 1e-9);
  const auto lines = ReadLines(out / "questions.jsonl");
  ASSERT_EQ(lines.size(), 13u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["outcome"], kSpiderScript[i].outcome) << i << ": " << lines[i].dump();
    if (!kSpiderScript[i].sql.empty()) {
      EXPECT_EQ(lines[i]["predicted_sql"], kSpiderScript[i].sql) << i;
    }
    // Every run's trace is under the one runs folder.
    ASSERT_TRUE(lines[i]["run_id"].is_string()) << i;
    EXPECT_TRUE(fs::exists(out / "runs" / lines[i]["run_id"].get<std::string>() / "trace.json"));
  }
  EXPECT_NE(lines[1]["reason"].get<std::string>().find("row order differs"), std::string::npos);
  EXPECT_EQ(lines[10]["stop_reason"], "clarification_needed");
  EXPECT_EQ(lines[10]["predicted_sql"], "");
  EXPECT_NE(r.out.find("9/13 = 69.2%"), std::string::npos) << r.out;
}

TEST(EvalCliTest, NoStreamAsksForWholeReplies) {
  for (const bool no_stream : {false, true}) {
    TempDir tmp;
    ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
    ProviderServer server;
    server.Enqueue({200, {}, Sql("SELECT COUNT(*) FROM singer")});
    server.Enqueue({200, {}, Answer()});
    std::vector<std::string> args = {
        "spider", "--dir", (tmp.path() / "spider").string(), "--n", "1", "--tag", "stream"};
    if (no_stream) args.push_back("--no-stream");
    auto r = Eval(tmp, args,
                  {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
                   "QUARRY_API_KEY=sk-test-eval", "QUARRY_STREAM=1"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 2u) << r.err;
    for (const auto& request : requests) {
      EXPECT_EQ(request.Json().contains("stream"), !no_stream) << request.body;
    }
  }
}

TEST(EvalCliTest, BirdEvidenceReachesTheModelAsAHint) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("bird", tmp.path() / "bird"));
  ProviderServer server;
  const std::string wrong_revenue =
      "SELECT SUM(p.price) FROM products p JOIN orders o USING (product_id) WHERE p.name = "
      "'Widget'";
  const std::string sqls[] = {
      wrong_revenue,
      "SELECT COUNT(*) FROM singer WHERE age > 40",
      "SELECT DISTINCT country FROM singer WHERE country IS NOT NULL",  // BIRD: sets, so a match
      "SELECT name FROM products ORDER BY price ASC",                   // BIRD: order ignored
      "SELECT 100.0 * COUNT(discount) / COUNT(*) FROM orders",
  };
  for (const std::string& sql : sqls) {
    server.Enqueue({200, {}, Sql(sql)});
    server.Enqueue({200, {}, Answer()});
  }
  auto r = Eval(tmp, {"bird", "--dir", (tmp.path() / "bird").string(), "--tag", "hint"},
                {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
                 "QUARRY_API_KEY=sk-test-eval"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = ReadJson(tmp.path() / "results" / "eval" / "bird-dev-hint" / "summary.json");
  EXPECT_EQ(s["matched"], 4);
  EXPECT_EQ(s["outcomes"]["mismatch"], 1);
  EXPECT_EQ(s["by_difficulty"]["simple"]["matched"], 1);
  // The first request of question 1 (requests 0 and 1 were question 0's) carries the hint.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 10u);
  auto user_text = [](const json& body) {
    std::string text;
    for (const json& m : body["messages"]) {
      if (m["role"] == "user" && m["content"].is_string()) text += m["content"].get<std::string>();
    }
    return text;
  };
  const std::string q1 = user_text(requests[2].Json());
  EXPECT_NE(
      q1.find("How many singers are older than 40?\n\nHint: older than 40 refers to age > 40"),
      std::string::npos)
      << q1;
  // The question without evidence gets no hint.
  EXPECT_EQ(user_text(requests[4].Json()).find("Hint:"), std::string::npos);
}

// BIRD with and without its evidence: given as knowledge it is a rule of the system prompt's
// knowledge section and no hint follows the question; given as none it is nowhere. `eval
// compare` then pairs the two runs by question (McNemar). Scripted turns: the none run answers
// the question that needs the evidence wrongly.
TEST(EvalCliTest, BirdEvidenceAsKnowledgeOrNoneAndTheTwoRunsCompared) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("bird", tmp.path() / "bird"));
  const std::string wrong_revenue =
      "SELECT SUM(p.price) FROM products p JOIN orders o USING (product_id) WHERE p.name = "
      "'Widget'";
  const std::vector<std::string> sqls = {
      wrong_revenue,
      "SELECT COUNT(*) FROM singer WHERE age > 40",
      "SELECT DISTINCT country FROM singer WHERE country IS NOT NULL",
      "SELECT name FROM products ORDER BY price ASC",
      "SELECT 100.0 * COUNT(discount) / COUNT(*) FROM orders",
  };
  const std::vector<std::string> env_model = {"QUARRY_MODEL=stand-in-model",
                                              "QUARRY_API_KEY=sk-test-eval"};
  auto run = [&](const std::string& evidence, std::vector<std::string> answers,
                 ProviderServer& server) {
    for (const std::string& sql : answers) {
      server.Enqueue({200, {}, Sql(sql)});
      server.Enqueue({200, {}, Answer()});
    }
    std::vector<std::string> env = env_model;
    env.push_back("QUARRY_BASE_URL=" + server.base_url());
    return Eval(tmp,
                {"bird", "--dir", (tmp.path() / "bird").string(), "--tag", evidence, "--evidence",
                 evidence},
                env);
  };
  ProviderServer with_server;
  auto with = run("knowledge", sqls, with_server);
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err;
  const auto requests = with_server.requests();
  ASSERT_EQ(requests.size(), 10u);
  const json q1 = requests[2].Json();
  const std::string system = q1["messages"][0]["content"];
  EXPECT_NE(system.find("- Evidence for this question: older than 40 refers to age > 40 [BIRD "
                        "evidence]"),
            std::string::npos)
      << system;
  EXPECT_EQ(q1.dump().find("Hint:"), std::string::npos);
  const json s = ReadJson(tmp.path() / "results" / "eval" / "bird-dev-knowledge" / "summary.json");
  EXPECT_EQ(s["evidence"], "knowledge");
  EXPECT_EQ(s["matched"], 4);

  std::vector<std::string> blind = sqls;
  blind[1] = "SELECT COUNT(*) FROM singer WHERE age > 50";  // without the evidence: wrong
  ProviderServer none_server;
  auto none = run("none", blind, none_server);
  ASSERT_EQ(none.exit_code, 0) << none.out << none.err;
  const json n1 = none_server.requests()[2].Json();
  EXPECT_EQ(n1.dump().find("older than 40 refers to"), std::string::npos) << "no evidence at all";

  auto compared = Eval(tmp, {"compare", "results/eval/bird-dev-knowledge",
                             "results/eval/bird-dev-none", "--format", "json"});
  ASSERT_EQ(compared.exit_code, 0) << compared.out << compared.err;
  const json c = json::parse(compared.out);
  EXPECT_EQ(c["pairs"], 5);
  EXPECT_EQ(c["a"]["matched"], 4);
  EXPECT_EQ(c["b"]["matched"], 3);
  EXPECT_EQ(c["matched_only_in_a"], 1);
  EXPECT_EQ(c["matched_only_in_b"], 0);
  EXPECT_DOUBLE_EQ(c["p_value"].get<double>(), 1.0);
  EXPECT_EQ(c["a"]["summary"]["evidence"], "knowledge");
  auto text =
      Eval(tmp, {"compare", "results/eval/bird-dev-knowledge", "results/eval/bird-dev-none"});
  EXPECT_NE(text.out.find("execution accuracy over them: A 4/5 = 80.0%, B 3/5 = 60.0%"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("matched only in A 1, only in B 0, two-sided p = 1"), std::string::npos);
  // A folder no eval wrote, a corrupt line, a question twice, an outcome no eval writes: errors.
  tmp.Write("twice/questions.jsonl",
            "{\"question_id\": \"1\", \"outcome\": \"match\"}\n"
            "{\"question_id\": \"1\", \"outcome\": \"mismatch\"}\n");
  auto twice = Eval(tmp, {"compare", "twice", "results/eval/bird-dev-none"});
  EXPECT_EQ(twice.exit_code, 3);
  EXPECT_NE(twice.err.find("twice/questions.jsonl:2: question 1 is there twice"), std::string::npos)
      << twice.err;
  tmp.Write("odd/questions.jsonl", "{\"question_id\": \"1\", \"outcome\": \"MATCH\"}\n");
  auto odd = Eval(tmp, {"compare", "odd", "results/eval/bird-dev-none"});
  EXPECT_EQ(odd.exit_code, 3);
  EXPECT_NE(odd.err.find("outcome 'MATCH' is none of match"), std::string::npos) << odd.err;
  auto missing = Eval(tmp, {"compare", "results/eval/bird-dev-knowledge", "nowhere"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nowhere/questions.jsonl does not exist"), std::string::npos)
      << missing.err;
  tmp.Write("broken/questions.jsonl", "{\"question_id\": \"1\", \"outcome\": \"match\"}\n[1, 2]\n");
  auto broken = Eval(tmp, {"compare", "broken", "results/eval/bird-dev-none"});
  EXPECT_EQ(broken.exit_code, 3);
  EXPECT_NE(broken.err.find("broken/questions.jsonl:2: not a question's result"), std::string::npos)
      << broken.err;
}

TEST(EvalCliTest, OfflineRecordedTurnsScoreAndQuestionsWithoutOneAreSkipped) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  fs::create_directories(tmp.path() / "fixtures");
  auto answer = [](const std::string& text, const json& values) {
    return json{{"content", ""},
                {"tool_calls",
                 {{{"name", "final_answer"},
                   {"arguments", {{"answer", text}, {"supporting_values", values}}}}}}};
  };
  auto fixture = [&](const std::string& name, const std::string& question, const std::string& sql,
                     bool sent_back) {
    json turns = {
        {{"content", ""}, {"tool_calls", {{{"name", "run_sql"}, {"arguments", {{"sql", sql}}}}}}}};
    // A count no result showed: the gate sends the answer back once.
    if (sent_back) turns.push_back(answer("We have 9 singers.", {"9"}));
    turns.push_back(answer("From the query.", json::array()));
    const json doc = {{"source", "scripted"},
                      {"note", "written by hand for the eval test; not a measure of any model"},
                      {"question", question},
                      {"data", {"singers.sqlite"}},
                      {"turns", turns}};
    tmp.Write("fixtures/" + name + ".json", doc.dump(1));
  };
  fixture("count", "How many singers do we have?", "SELECT count(*) FROM singer", true);
  fixture("ages", "List the names of singers from the oldest to the youngest.",
          "SELECT name FROM singer ORDER BY name", false);
  auto r = Eval(tmp, {"spider", "--dir", (tmp.path() / "spider").string(), "--offline",
                      "--fixtures", (tmp.path() / "fixtures").string(), "--tag", "rec"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = ReadJson(tmp.path() / "results" / "eval" / "spider-dev-rec" / "summary.json");
  EXPECT_EQ(s["turns"], "recorded");
  EXPECT_EQ(s["scored"], 2);
  EXPECT_EQ(s["matched"], 1);
  EXPECT_EQ(s["outcomes"]["skipped"], 11);
  EXPECT_EQ(s["send_backs"], 1);
  EXPECT_EQ(s["runs_with_send_backs"], 1);
  EXPECT_NE(r.out.find("repairs 0/0 (succeeded/attempted), send-backs 1 (in 1 of 2 runs)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(s["note"].get<std::string>().find("not a measure of any model"), std::string::npos);
}

TEST(EvalCliTest, BadLayoutsGiveClearErrorsAndNoCrash) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  const std::string dir = (tmp.path() / "spider").string();
  auto run = [&](std::vector<std::string> args) {
    auto r = Eval(tmp, std::move(args));
    EXPECT_LT(r.exit_code, 128) << r.err;  // never a signal
    return r;
  };
  // One missing database skips its questions (AMissingDatabaseSkipsItsQuestions...); with
  // every one missing the folder is not the benchmark's.
  fs::remove_all(tmp.path() / "spider" / "database" / "singers");
  fs::remove_all(tmp.path() / "spider" / "database" / "shop");
  auto missing_db = run({"spider", "--dir", dir, "--gold"});
  EXPECT_EQ(missing_db.exit_code, 3);
  EXPECT_NE(missing_db.err.find("none of the 13 sampled questions has its database"),
            std::string::npos)
      << missing_db.err;
  EXPECT_FALSE(fs::exists(tmp.path() / "results"));
  tmp.Write("spider/dev.json", "[{\"db_id\": ");
  auto malformed = run({"spider", "--dir", dir, "--gold"});
  EXPECT_EQ(malformed.exit_code, 3);
  EXPECT_NE(malformed.err.find("dev.json is not valid JSON"), std::string::npos) << malformed.err;
  fs::remove(tmp.path() / "spider" / "dev.json");
  auto missing = run({"spider", "--dir", dir, "--gold"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("dev.json is missing: --dir must be Spider's folder"),
            std::string::npos)
      << missing.err;
  auto bird_here = run({"bird", "--dir", dir, "--gold"});
  EXPECT_EQ(bird_here.exit_code, 3);
  auto no_dir = run({"spider", "--dir", (tmp.path() / "nowhere").string(), "--gold"});
  EXPECT_EQ(no_dir.exit_code, 2);
  EXPECT_NE(no_dir.err.find("is not a directory"), std::string::npos);
  // No model configured and not --gold: said before any question runs.
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "s2"));
  auto no_model = run({"spider", "--dir", (tmp.path() / "s2").string()});
  EXPECT_EQ(no_model.exit_code, 2) << no_model.err;
  EXPECT_FALSE(fs::exists(tmp.path() / "results"));
}

// Issue 23: a sampled question whose database file is missing is skipped and counted, with a
// note on stderr and in the summary, instead of refusing the whole eval. The shop database
// (questions 9 to 12) is removed; the singers questions run, with --gold and with a model.
TEST(EvalCliTest, AMissingDatabaseSkipsItsQuestionsAndCountsThem) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  const fs::path shop = tmp.path() / "spider" / "database" / "shop" / "shop.sqlite";
  fs::remove(shop);
  const std::string dir = (tmp.path() / "spider").string();
  auto gold = Eval(tmp, {"spider", "--dir", dir, "--gold", "--tag", "gold"});
  // The self-test reports what it could check and fails on what it could not.
  ASSERT_EQ(gold.exit_code, 3) << gold.out << gold.err;
  EXPECT_NE(gold.err.find("--gold: 4 questions were skipped for a missing database file"),
            std::string::npos)
      << gold.err;
  EXPECT_NE(gold.err.find("database shop is missing (expected " + shop.string() +
                          "): its 4 sampled question(s) are skipped"),
            std::string::npos)
      << gold.err;
  EXPECT_NE(gold.out.find("9/9 = 100.0%"), std::string::npos) << gold.out;
  EXPECT_NE(gold.out.find("4 skipped (of 13 questions; 4 skipped for a missing database)"),
            std::string::npos)
      << gold.out;
  const fs::path out = tmp.path() / "results" / "eval" / "spider-dev-gold";
  const json s = ReadJson(out / "summary.json");
  EXPECT_EQ(s["questions"], 13);
  EXPECT_EQ(s["scored"], 9);
  EXPECT_EQ(s["matched"], 9);
  EXPECT_EQ(s["outcomes"]["skipped"], 4);
  EXPECT_EQ(s["skipped_missing_db"], 4);
  EXPECT_EQ(s["missing_databases"], json::array({"shop"}));
  const auto lines = ReadLines(out / "questions.jsonl");
  ASSERT_EQ(lines.size(), 13u);
  for (size_t i = 9; i < 13; ++i) {
    EXPECT_EQ(lines[i]["outcome"], "skipped") << i;
    EXPECT_EQ(lines[i]["error"], "database shop is missing: expected " + shop.string()) << i;
  }
  EXPECT_EQ(lines[8]["outcome"], "match");

  // With a model: only the singers questions ask it anything.
  ProviderServer server;
  for (size_t i = 0; i < 9; ++i) {
    server.Enqueue({200, {}, Sql(kSpiderScript[i].sql)});
    server.Enqueue({200, {}, Answer()});
  }
  auto live = Eval(tmp, {"spider", "--dir", dir, "--tag", "live", "--format", "json"},
                   {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
                    "QUARRY_API_KEY=sk-test-eval"});
  ASSERT_EQ(live.exit_code, 0) << live.out << live.err;
  EXPECT_EQ(server.requests().size(), 18u);
  EXPECT_EQ(server.pending(), 0u);
  const json l = json::parse(live.out);
  EXPECT_EQ(l["skipped_missing_db"], 4);
  EXPECT_EQ(l["scored"], 9);
  EXPECT_EQ(l["matched"], 7);  // kSpiderScript's first nine: two mismatches
  EXPECT_EQ(l["runs"], 9);
}

// Issue 23: eval's system prompt has one more line than ask's, prompts/eval.md (the last query
// is compared with a reference), and nothing else differs; ask's never has it.
TEST(EvalCliTest, OnlyEvalsPromptSaysTheLastQueryIsComparedWithAReference) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  const std::string line =
      quarry::testing::ReadFile(quarry::testing::SourceDir() / "prompts" / "eval.md");
  ASSERT_NE(line.find("compared with a reference"), std::string::npos) << line;
  ASSERT_EQ(line.find('\n'), std::string::npos) << "one line";
  const std::vector<std::string> env = {"QUARRY_BASE_URL=", "QUARRY_MODEL=stand-in-model",
                                        "QUARRY_API_KEY=sk-test-eval"};
  auto system_of = [](const quarry::testing::RecordedRequest& r) {
    const json body = r.Json();
    return body["messages"][0]["role"] == "system"
               ? body["messages"][0]["content"].get<std::string>()
               : std::string();
  };

  ProviderServer eval_server;
  eval_server.Enqueue({200, {}, Sql("SELECT count(*) FROM singer")});
  eval_server.Enqueue({200, {}, Answer()});
  auto e = Eval(
      tmp, {"spider", "--dir", (tmp.path() / "spider").string(), "--n", "1", "--tag", "prompt"},
      {"QUARRY_BASE_URL=" + eval_server.base_url(), env[1], env[2]});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  const auto eval_requests = eval_server.requests();
  ASSERT_EQ(eval_requests.size(), 2u);
  const std::string eval_system = system_of(eval_requests[0]);
  ASSERT_NE(eval_system.find("\n- " + line + "\n"), std::string::npos) << eval_system;
  EXPECT_NE(system_of(eval_requests[1]).find(line), std::string::npos);

  // The same question on the same database through `quarry ask`.
  ProviderServer ask_server;
  ask_server.Enqueue({200, {}, Sql("SELECT count(*) FROM singer")});
  ask_server.Enqueue({200, {}, Answer()});
  const fs::path db = tmp.path() / "spider" / "database" / "singers" / "singers.sqlite";
  auto a = RunProcess({quarry::testing::QuarryBinary().string(), "ask", "--no-python", "--data",
                       db.string(), "How many singers do we have?"},
                      tmp.path(), {"QUARRY_BASE_URL=" + ask_server.base_url(), env[1], env[2]},
                      {"OPENROUTER_API_KEY", "QUARRY_PRICES", "QUARRY_FIXTURES",
                       "ANTHROPIC_API_KEY", "QUARRY_PROVIDER"});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  const auto ask_requests = ask_server.requests();
  ASSERT_EQ(ask_requests.size(), 2u);
  const std::string ask_system = system_of(ask_requests[0]);
  EXPECT_EQ(ask_system.find(line), std::string::npos) << ask_system;
  EXPECT_EQ(ask_system.find("compared with a reference"), std::string::npos);
  std::string without = eval_system;
  without.erase(without.find("\n- " + line), line.size() + 3);
  EXPECT_EQ(without, ask_system);
}

TEST(EvalCliTest, TagAndSplitAreNamesNotPaths) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--tag", "../../escape"}, {"--split", "../spider/dev"}}) {
    std::vector<std::string> args = {"spider", "--dir", (tmp.path() / "spider").string(), "--gold"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = Eval(tmp, args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("must be a plain name"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "results"));
}

TEST(EvalCliTest, AGoldQueryThatFailsIsAHarnessErrorNotAMiss) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path() / "spider"));
  json dev = ReadJson(tmp.path() / "spider" / "dev.json");
  dev[0]["query"] = "SELECT count(*) FROM no_such_table";
  tmp.Write("spider/dev.json", dev.dump());
  fs::remove(tmp.path() / "spider" / "dev_gold.sql");  // the gold comes from dev.json then
  auto r =
      Eval(tmp, {"spider", "--dir", (tmp.path() / "spider").string(), "--gold", "--tag", "broken"});
  // The results are written, and the self-test says it did not pass.
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--gold: 1 of 13 gold queries could not be run here"), std::string::npos)
      << r.err;
  const fs::path out = tmp.path() / "results" / "eval" / "spider-dev-broken";
  const json s = ReadJson(out / "summary.json");
  EXPECT_EQ(s["outcomes"]["harness_error"], 1);
  EXPECT_EQ(s["scored"], 12);
  EXPECT_EQ(s["matched"], 12);
  const auto lines = ReadLines(out / "questions.jsonl");
  EXPECT_EQ(lines[0]["outcome"], "harness_error");
  EXPECT_NE(lines[0]["error"].get<std::string>().find("no_such_table"), std::string::npos);
}

}  // namespace
}  // namespace quarry::bench
