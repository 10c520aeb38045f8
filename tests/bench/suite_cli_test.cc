// `quarry bench` end to end as a child process on real data (data/sales.csv copied into a
// temporary suite): scripted fixtures with a repair, both arms, both result files checked
// value by value; --jobs, --max-cost, a malformed suite, a live run against the stand-in
// provider, and --render-site.
#include <gtest/gtest.h>

#include <set>

#include "quarry/common/json.h"
#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// No model reaches a test: the live settings are cleared unless a test sets them.
const std::vector<std::string> kUnsetModel = {
    "QUARRY_MODEL",          "QUARRY_API_KEY",    "OPENROUTER_API_KEY", "QUARRY_BASE_URL",
    "QUARRY_EMBEDDINGS_URL", "ANTHROPIC_API_KEY", "QUARRY_PROVIDER"};

json Call(const std::string& name, json arguments) {
  return {{"name", name}, {"arguments", std::move(arguments)}};
}

json Turn(json call, double cost = 0.001) {
  return {{"content", ""},
          {"tool_calls", json::array({std::move(call)})},
          {"usage", {{"input_tokens", 1000}, {"output_tokens", 50}}},
          {"cost_usd", cost}};
}

json Sql(const std::string& sql) { return Turn(Call("run_sql", {{"sql", sql}})); }

json Answer(const std::string& answer, std::vector<std::string> values) {
  return Turn(Call("final_answer", {{"answer", answer}, {"supporting_values", values}}));
}

json Fixture(const std::string& question, json turns) {
  return {{"source", "scripted"},
          {"question", question},
          {"data", {"data/sales.csv"}},
          {"turns", std::move(turns)}};
}

json JudgeReply(const std::string& verdict) {
  return {
      {"content", "{\"verdict\": \"" + verdict + "\", \"reason\": \"scripted " + verdict + "\"}"},
      {"usage", {{"input_tokens", 400}, {"output_tokens", 20}}},
      {"cost_usd", 0.0005}};
}

json Task(const std::string& id, const std::string& question, const std::string& grader) {
  json t = {{"id", id},
            {"question", question},
            {"data", {"data/sales.csv"}},
            {"difficulty", "easy"},
            {"tags", {"aggregation"}},
            {"grader", grader}};
  if (grader == "numeric") t["tolerance"] = {{"abs", 0.01}};
  if (grader == "judge") t["rubric"] = "Names North as the largest and Central as the smallest.";
  return t;
}

// Eight tasks on data/sales.csv. With fixtures: a plain numeric pass, a repair (passes only
// with self-correction), a predicate pass, a grounded but wrong answer, a judge task whose
// scripted judges split 2-1 for pass, a judge task whose judges reach no majority (1 pass,
// 1 fail, 1 unreadable: not graded). Skipped offline: a judge task without judge replies, a
// task without a fixture.
class BenchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root() / "data");
    fs::create_directories(root() / "tasks" / "fixtures");
    fs::copy_file(SourceDir() / "data" / "sales.csv", root() / "data" / "sales.csv");
    json tasks = json::array(
        {Task("revenue_total", "What is the total revenue?", "numeric"),
         Task("revenue_2025", "What was the total revenue in 2025?", "numeric"),
         Task("top_region", "Which region has the highest total revenue?", "predicate"),
         Task("orders_2025", "How many orders were placed in 2025?", "numeric"),
         Task("region_story", "How did the regions compare on revenue?", "judge"),
         Task("region_gap", "How far behind the leader is the smallest region?", "judge"),
         Task("avg_discount", "What is the average discount?", "numeric"),
         Task("region_split", "Which regions are above the average region?", "judge")});
    tasks[1]["tags"] = {"filters", "time-series"};
    tasks[7]["tags"] = {"group-by"};
    dir_.Write("suite/tasks/suite.json", json({{"version", 1}, {"tasks", tasks}}).dump(2));
    dir_.Write(
        "suite/tasks/truth.json",
        json({{"generated_by", "test"},
              {"tasks",
               {{"revenue_total", {{"values", {504488.21}}}},
                {"revenue_2025", {{"values", {271830.53}}}},
                {"top_region", {{"must_contain", {"North"}}, {"must_not_contain", {"Central"}}}},
                {"orders_2025", {{"values", {1134}}}},
                {"region_story", {{"facts", {"North 141794.14", "Central 58576.15"}}}},
                {"region_gap", {{"facts", {"gap 83217.99"}}}},
                {"avg_discount", {{"values", {0.05}}}},
                {"region_split", {{"facts", {"North, East above 100897.64"}}}}}}})
            .dump(2));
    auto fixture = [&](const std::string& id, const json& doc) {
      dir_.Write("suite/tasks/fixtures/" + id + ".json", doc.dump(2));
    };
    fixture("revenue_total",
            Fixture("What is the total revenue?",
                    {Sql("SELECT round(sum(revenue), 2) AS total_revenue FROM sales"),
                     Answer("Total revenue is $504,488.21.", {"504488.21"})}));
    fixture("revenue_2025", Fixture("What was the total revenue in 2025?",
                                    {Sql("SELECT round(sum(amount), 2) AS revenue_2025 FROM sales "
                                         "WHERE year(order_date) = 2025"),
                                     Sql("SELECT round(sum(revenue), 2) AS revenue_2025 FROM sales "
                                         "WHERE year(order_date) = 2025"),
                                     Answer("Revenue in 2025 was $271,830.53.", {"271830.53"})}));
    // A figure no result showed: the gate sends the first answer back (no repair: nothing
    // failed), and the second passes in both arms.
    fixture("top_region",
            Fixture("Which region has the highest total revenue?",
                    {Sql("SELECT region, round(sum(revenue), 2) AS revenue FROM sales "
                         "GROUP BY region ORDER BY revenue DESC LIMIT 1"),
                     Answer("North has the highest total revenue ($150,000).", {"North", "150000"}),
                     Answer("North has the highest total revenue ($141,794.14).",
                            {"North", "141794.14"})}));
    fixture("orders_2025", Fixture("How many orders were placed in 2025?",
                                   {Sql("SELECT count(*) AS orders FROM sales"),
                                    Answer("2065 orders were placed.", {"2065"})}));
    json story =
        Fixture("How did the regions compare on revenue?",
                {Sql("SELECT region, round(sum(revenue), 2) AS revenue FROM sales GROUP BY region "
                     "ORDER BY revenue DESC"),
                 Answer("North led with $141,794.14; Central was smallest at $58,576.15.",
                        {"North", "141794.14", "Central", "58576.15"})});
    story["judge_turns"] = {JudgeReply("pass"), JudgeReply("fail"), JudgeReply("pass")};
    fixture("region_story", story);
    json split =
        Fixture("Which regions are above the average region?",
                {Sql("SELECT region, round(sum(revenue), 2) AS revenue FROM sales GROUP BY region "
                     "ORDER BY revenue DESC LIMIT 2"),
                 Answer("North and East.", {"North", "East"})});
    split["judge_turns"] = {R"({"verdict": "pass"})", R"({"verdict": "fail"})", "Looks fine."};
    fixture("region_split", split);
    fixture("region_gap", Fixture("How far behind the leader is the smallest region?",
                                  {Sql("SELECT 1 AS x"), Answer("1", {"1"})}));
  }

  fs::path root() const { return dir_.path() / "suite"; }

  ProcessResult Bench(std::vector<std::string> args, const std::vector<std::string>& env = {},
                      const std::vector<std::string>& unset = kUnsetModel) {
    std::vector<std::string> argv = {QuarryBinary().string(), "bench", "--no-python", "--no-cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, dir_.path(), env, unset);
  }

  static json ReadJson(const fs::path& path) { return ParseJson(ReadFile(path)); }

  static const json& Run(const json& results, const std::string& task, const std::string& arm) {
    for (const json& r : results["runs"]) {
      if (r["task"] == task && r["arm"] == arm) return r;
    }
    static const json none;
    ADD_FAILURE() << "no run of " << task << " in arm " << arm;
    return none;
  }

  static std::map<std::string, std::string> Grades(const json& results) {
    std::map<std::string, std::string> out;
    for (const json& r : results["runs"]) {
      out[r["task"].get<std::string>() + "/" + r["arm"].get<std::string>()] =
          r["status"].get<std::string>();
    }
    return out;
  }

  TempDir dir_;
};

TEST_F(BenchCliTest, OfflineRunGradesBothArmsAndWritesBothResultFiles) {
  const ProcessResult p = Bench({"--offline", "--tasks", (root() / "tasks").string(), "--out",
                                 "out", "--runs-dir", "bench-runs", "-v"});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  // -v: one line per task run on stderr.
  EXPECT_NE(p.err.find("[on ] revenue_2025 #1 pass"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("[off] revenue_2025 #1 fail"), std::string::npos) << p.err;

  const json r = ReadJson(dir_.path() / "out" / "bench_results.json");
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["mode"], "offline");
  EXPECT_EQ(r["source"], "scripted");
  EXPECT_EQ(r["label"], "harness run on scripted turns: not a measure of any model's quality");
  EXPECT_EQ(r["provider"], "replay");
  EXPECT_EQ(r["tasks_selected"], 8);
  ASSERT_EQ(r["runs"].size(), 16u);

  // The repair task: passes with self-correction, fails without, each with its trace.
  const json& on = Run(r, "revenue_2025", "on");
  EXPECT_EQ(on["status"], "pass") << on.dump(2);
  EXPECT_EQ(on["metrics"]["repair_attempts"], 1);
  EXPECT_EQ(on["metrics"]["repair_successes"], 1);
  EXPECT_TRUE(fs::exists(dir_.path() / on["trace"].get<std::string>()));
  EXPECT_EQ(on["trace"], "bench-runs/" + on["run_id"].get<std::string>() + "/trace.json");
  const json& off = Run(r, "revenue_2025", "off");
  EXPECT_EQ(off["status"], "fail");
  EXPECT_EQ(off["stop_reason"], "execution_failed");
  EXPECT_EQ(off["reason"], "no answer: the run ended execution_failed");

  EXPECT_EQ(Run(r, "revenue_total", "off")["status"], "pass");
  const json& sent_back = Run(r, "top_region", "on");
  EXPECT_EQ(sent_back["status"], "pass");
  EXPECT_EQ(sent_back["metrics"]["send_backs"], 1);
  EXPECT_EQ(sent_back["metrics"]["repair_attempts"], 0);
  EXPECT_EQ(Run(r, "top_region", "off")["metrics"]["send_backs"], 1);
  EXPECT_EQ(on["metrics"]["send_backs"], 0);
  const json& wrong = Run(r, "orders_2025", "on");
  EXPECT_EQ(wrong["status"], "fail");
  EXPECT_TRUE(wrong["metrics"]["grounded"].get<bool>());
  EXPECT_NE(wrong["reason"].get<std::string>().find("expected 1134"), std::string::npos);

  const json& judged = Run(r, "region_story", "on");
  EXPECT_EQ(judged["status"], "pass");
  EXPECT_EQ(judged["judge"]["pass_votes"], 2);
  EXPECT_EQ(judged["judge"]["fail_votes"], 1);
  EXPECT_EQ(judged["judge"]["majority"], "pass");
  EXPECT_FALSE(judged["judge"]["agreed"].get<bool>());
  EXPECT_NEAR(judged["cost_usd"].get<double>(), 0.0035, 1e-9);

  EXPECT_EQ(Run(r, "region_gap", "on")["status"], "skipped");
  EXPECT_EQ(Run(r, "region_gap", "on")["reason"], "needs a live judge");
  EXPECT_EQ(Run(r, "avg_discount", "off")["reason"], "no fixture for --offline");
  const json& split = Run(r, "region_split", "off");
  EXPECT_EQ(split["status"], "error");
  EXPECT_EQ(split["reason"], "judge: no majority (1 pass, 1 fail, 1 no vote)");
  EXPECT_TRUE(split["judge"]["majority"].is_null());
  EXPECT_EQ(split["judge"]["votes"][2]["reply"], "Looks fine.");
  EXPECT_NE(split["judge"]["votes"][2]["reason"].get<std::string>().find("unparseable"),
            std::string::npos);
  EXPECT_TRUE(Run(r, "avg_discount", "off")["run_id"].is_null());

  ASSERT_EQ(r["arms"].size(), 2u);
  const json& a_on = r["arms"][0];
  const json& a_off = r["arms"][1];
  EXPECT_EQ(a_on["arm"], "on");
  EXPECT_EQ(a_on["graded"], 5);
  EXPECT_EQ(a_on["passed"], 4);
  EXPECT_EQ(a_on["skipped"], 2);
  EXPECT_EQ(a_on["errors"], 1);
  EXPECT_EQ(a_on["runs"], 6);
  EXPECT_EQ(a_on["tasks_skipped"], 2);
  EXPECT_EQ(a_on["skipped_by_reason"]["needs a live judge"], 1);
  EXPECT_DOUBLE_EQ(a_on["success_rate"].get<double>(), 0.8);
  EXPECT_NEAR(a_on["success_ci95"][0].get<double>(), 0.3755, 1e-4);
  EXPECT_NEAR(a_on["success_ci95"][1].get<double>(), 0.9638, 1e-4);
  EXPECT_DOUBLE_EQ(a_on["repair_rate"].get<double>(), 1.0 / 6);
  EXPECT_DOUBLE_EQ(a_on["repair_success_rate"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(a_on["grounded_rate"].get<double>(), 1.0);
  EXPECT_EQ(a_on["send_backs"], 1);
  EXPECT_EQ(a_on["runs_with_send_backs"], 1);
  EXPECT_EQ(a_off["send_backs"], 1);
  EXPECT_NEAR(a_on["total_cost_usd"].get<double>(), 0.0155, 1e-9);
  EXPECT_NEAR(a_on["mean_cost_usd"].get<double>(), 0.0155 / 6, 1e-9);
  EXPECT_EQ(a_on["guard_violations"], 0);
  EXPECT_EQ(a_on["judge"]["answers_judged"], 2);
  EXPECT_EQ(a_on["judge"]["calls"], 6);
  EXPECT_EQ(a_on["judge"]["no_votes"], 1);
  EXPECT_DOUBLE_EQ(a_on["judge"]["agreement_rate"].get<double>(), 0.0);
  EXPECT_EQ(a_off["passed"], 3);
  EXPECT_EQ(a_off["failed"], 2);
  EXPECT_DOUBLE_EQ(a_off["repair_rate"].get<double>(), 0.0);
  EXPECT_TRUE(a_off["repair_success_rate"].is_null());  // no repair was attempted
  EXPECT_DOUBLE_EQ(a_off["grounded_rate"].get<double>(), 5.0 / 6);
  EXPECT_NEAR(r["total_cost_usd"].get<double>(), 0.029, 1e-9);

  EXPECT_EQ(r["mcnemar"]["pairs"], 5);
  EXPECT_EQ(r["mcnemar"]["b_on_only"], 1);
  EXPECT_EQ(r["mcnemar"]["c_off_only"], 0);
  EXPECT_EQ(r["mcnemar"]["both_pass"], 3);
  EXPECT_EQ(r["mcnemar"]["both_fail"], 1);
  EXPECT_DOUBLE_EQ(r["mcnemar"]["p_value"].get<double>(), 1.0);

  // The offline copy is the same file; no live one was made.
  EXPECT_EQ(ReadFile(dir_.path() / "out" / "offline" / "bench_results.json"),
            ReadFile(dir_.path() / "out" / "bench_results.json"));
  EXPECT_FALSE(fs::exists(dir_.path() / "out" / "live"));

  const std::string md = ReadFile(dir_.path() / "out" / "RESULTS.md");
  EXPECT_NE(md.find("> harness run on scripted turns: not a measure of any model's quality."),
            std::string::npos);
  EXPECT_NE(md.find("| task success (95% Wilson CI) | 4/5 = 80.0% (37.6% to 96.4%) | "
                    "3/5 = 60.0% (23.1% to 88.2%) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| task success (95% Wilson CI) | pending | pending |"), std::string::npos);
  EXPECT_NE(md.find("b = 1, only with it off c = 0"), std::string::npos);
  EXPECT_NE(md.find("total cost: $0.0290"), std::string::npos);
  EXPECT_NE(md.find("| send-backs (answers the verify gate returned) | 1 (in 1 of 6 runs) | "
                    "1 (in 1 of 6 runs) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| task runs not graded (error) | 1 | 1 |"), std::string::npos);
  EXPECT_NE(md.find("needs a live judge: 1"), std::string::npos);
  EXPECT_NE(md.find("| revenue_2025 | numeric | off | 1 | fail |"), std::string::npos);

  // Summary on stdout.
  EXPECT_NE(p.out.find("self-correction on   success 4/5"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("repairs 1/1  send-backs 1  median steps"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("[on ] top_region #1 pass    steps 6  repairs 0/0  send-backs 1"),
            std::string::npos)
      << p.err;

  // The site page gets the tables between its markers.
  dir_.Write("index.html", "<main>\n<!-- bench:begin -->\n<!-- bench:end -->\n</main>\n");
  const ProcessResult site =
      Bench({"--render-site", "--results", "out/bench_results.json", "--site", "index.html"});
  ASSERT_EQ(site.exit_code, 0) << site.err;
  const std::string page = ReadFile(dir_.path() / "index.html");
  EXPECT_NE(page.find("<td>task success (95% Wilson CI)</td><td>4/5 = 80.0% (37.6% to 96.4%)"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("not a measure of any model&#39;s quality"), std::string::npos);
  EXPECT_NE(page.find("</div>\n<!-- bench:end -->\n</main>"), std::string::npos);

  dir_.Write("plain.html", "<main></main>");
  const ProcessResult no_markers =
      Bench({"--render-site", "--results", "out/bench_results.json", "--site", "plain.html"});
  EXPECT_EQ(no_markers.exit_code, 3);
  EXPECT_NE(no_markers.err.find("bench:begin"), std::string::npos);
}

TEST_F(BenchCliTest, TwoJobsGiveTheSameGradesInSeparateRunFolders) {
  const std::string tasks = (root() / "tasks").string();
  const ProcessResult one =
      Bench({"--offline", "--tasks", tasks, "--out", "one", "--runs-dir", "runs1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const ProcessResult two =
      Bench({"--offline", "--tasks", tasks, "--out", "two", "--runs-dir", "runs2", "--jobs", "2"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const json a = ReadJson(dir_.path() / "one" / "bench_results.json");
  const json b = ReadJson(dir_.path() / "two" / "bench_results.json");
  EXPECT_EQ(Grades(a), Grades(b));
  EXPECT_EQ(b["jobs"], 2);
  std::set<std::string> ids;
  for (const json& r : b["runs"]) {
    if (r["run_id"].is_null()) continue;
    ids.insert(r["run_id"].get<std::string>());
    EXPECT_TRUE(fs::exists(dir_.path() / r["trace"].get<std::string>())) << r.dump();
  }
  EXPECT_EQ(ids.size(), 12u);
  size_t folders = 0;
  for (const auto& e : fs::directory_iterator(dir_.path() / "runs2")) folders += e.is_directory();
  EXPECT_EQ(folders, 12u);
}

TEST_F(BenchCliTest, MaxCostStopsStartingRuns) {
  // Bound per run $0.003, bench $0.01: revenue_total on+off ($0.004), revenue_2025 on+off
  // ($0.008 spent); then 0.008 + 0.003 would pass 0.01.
  const ProcessResult p = Bench({"--offline", "--tasks", (root() / "tasks").string(), "--out",
                                 "out", "--max-cost-per-run", "0.003", "--max-cost", "0.01"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json r = ReadJson(dir_.path() / "out" / "bench_results.json");
  EXPECT_TRUE(r["budget_stopped"].get<bool>());
  int ran = 0, budget = 0;
  for (const json& run : r["runs"]) {
    ran += run["run_id"].is_string();
    budget += run["reason"] == "budget: --max-cost 0.01 USD reached";
  }
  EXPECT_EQ(ran, 4);
  EXPECT_EQ(budget, 8);  // top_region, orders_2025, region_story, region_split in both arms
  EXPECT_NEAR(r["total_cost_usd"].get<double>(), 0.008, 1e-9);
  EXPECT_EQ(r["arms"][0]["skipped_by_reason"]["budget: --max-cost 0.01 USD reached"], 4);
  EXPECT_NE(p.out.find("stopped at --max-cost"), std::string::npos);
}

TEST_F(BenchCliTest, SelectionFlagsAndArms) {
  const std::string tasks = (root() / "tasks").string();
  const ProcessResult p = Bench({"--offline", "--tasks", tasks, "--out", "out", "--tags",
                                 "time-series", "--arms", "on", "--samples", "2"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json r = ReadJson(dir_.path() / "out" / "bench_results.json");
  ASSERT_EQ(r["runs"].size(), 2u);
  EXPECT_EQ(r["runs"][0]["task"], "revenue_2025");
  EXPECT_EQ(r["runs"][1]["sample"], 2);
  EXPECT_EQ(r["arms"].size(), 1u);
  EXPECT_TRUE(r["mcnemar"].is_null());
  EXPECT_EQ(r["arms"][0]["passed"], 2);

  const ProcessResult limited = Bench(
      {"--offline", "--tasks", tasks, "--out", "out2", "--limit", "2", "--no-self-correction"});
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  const json l = ReadJson(dir_.path() / "out2" / "bench_results.json");
  EXPECT_EQ(l["tasks_selected"], 2);
  ASSERT_EQ(l["arms"].size(), 1u);
  EXPECT_EQ(l["arms"][0]["arm"], "off");

  EXPECT_EQ(Bench({"--offline", "--tasks", tasks, "--arms", "sideways"}).exit_code, 2);
  EXPECT_EQ(
      Bench({"--offline", "--tasks", tasks, "--arms", "on", "--no-self-correction"}).exit_code, 2);
  const ProcessResult none = Bench({"--offline", "--tasks", tasks, "--tags", "joins"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--tags joins selects no task"), std::string::npos) << none.err;
}

TEST_F(BenchCliTest, MalformedSuiteIsAClearDataError) {
  dir_.Write("suite/tasks/suite.json", "{\"tasks\": [{\"id\": \"x\",");
  ProcessResult p = Bench({"--offline", "--tasks", (root() / "tasks").string()});
  EXPECT_EQ(p.exit_code, 3);
  EXPECT_NE(p.err.find("suite.json: not valid JSON"), std::string::npos) << p.err;
  EXPECT_FALSE(fs::exists(dir_.path() / "results"));

  json bad = Task("x", "What?", "numeric");
  bad["grader"] = "fuzzy";
  dir_.Write("suite/tasks/suite.json", json({{"tasks", {bad}}}).dump());
  p = Bench({"--offline", "--tasks", (root() / "tasks").string()});
  EXPECT_EQ(p.exit_code, 3);
  EXPECT_NE(p.err.find("task x: unknown grader \"fuzzy\""), std::string::npos) << p.err;

  p = Bench({"--offline", "--tasks", (dir_.path() / "nowhere").string()});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("no task suite at"), std::string::npos) << p.err;
}

TEST_F(BenchCliTest, LiveWithoutAModelSaysWhatToSet) {
  const ProcessResult p = Bench({"--tasks", (root() / "tasks").string()});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("QUARRY_MODEL"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("--offline"), std::string::npos) << p.err;
}

// The model's two turns for revenue_total: the query, then the grounded answer.
void EnqueueRevenueTotal(ProviderServer& server) {
  server.Enqueue(
      {200,
       {},
       ToolCallReply(
           {{"c1", "run_sql",
             R"({"sql": "SELECT round(sum(revenue), 2) AS total_revenue FROM sales"})"}})});
  server.Enqueue(
      {200,
       {},
       ToolCallReply(
           {{"c2", "final_answer",
             R"({"answer": "Total revenue is $504,488.21.", "supporting_values": ["504488.21"]})"}})});
}

TEST_F(BenchCliTest, NoStreamAsksForWholeReplies) {
  for (const bool no_stream : {false, true}) {
    ProviderServer server;
    EnqueueRevenueTotal(server);
    json suite = ReadJson(root() / "tasks" / "suite.json");
    dir_.Write("suite/tasks/suite.json",
               json({{"tasks", json::array({suite["tasks"][0]})}}).dump());
    std::vector<std::string> args = {
        "--tasks", (root() / "tasks").string(), "--arms", "on", "--out", "out"};
    if (no_stream) args.push_back("--no-stream");
    const ProcessResult p = Bench(args,
                                  {"QUARRY_BASE_URL=" + server.base_url(),
                                   "QUARRY_MODEL=stand-in-model", "QUARRY_API_KEY=test-key"},
                                  {"OPENROUTER_API_KEY", "QUARRY_EMBEDDINGS_URL", "QUARRY_STREAM"});
    ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 2u);
    for (const auto& request : requests) {
      EXPECT_EQ(request.Json().contains("stream"), !no_stream) << request.body;
    }
  }
}

TEST_F(BenchCliTest, LiveRunAgainstTheStandInProvider) {
  ProviderServer server;
  // revenue_total, then region_story (its answer, then three judge calls: 2-1 for pass).
  EnqueueRevenueTotal(server);
  server.Enqueue(
      {200,
       {},
       ToolCallReply(
           {{"c3", "run_sql",
             R"({"sql": "SELECT region, round(sum(revenue), 2) AS revenue FROM sales GROUP BY region ORDER BY revenue DESC"})"}})});
  server.Enqueue(
      {200,
       {},
       ToolCallReply(
           {{"c4", "final_answer",
             R"({"answer": "North led with $141,794.14; Central was smallest at $58,576.15.", "supporting_values": ["141794.14", "58576.15"]})"}})});
  server.Enqueue({200, {}, TextReply(R"({"verdict": "pass", "reason": "both named"})")});
  server.Enqueue({200, {}, TextReply(R"({"verdict": "fail", "reason": "too short"})")});
  server.Enqueue({200, {}, TextReply(R"({"verdict": "pass", "reason": "correct"})")});

  // Only the two tasks, in the on arm.
  json suite = ReadJson(root() / "tasks" / "suite.json");
  json two = json::array({suite["tasks"][0], suite["tasks"][4]});
  dir_.Write("suite/tasks/suite.json", json({{"tasks", two}}).dump());
  const ProcessResult p =
      Bench({"--tasks", (root() / "tasks").string(), "--arms", "on", "--out", "out"},
            {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
             "QUARRY_API_KEY=test-key"},
            {"OPENROUTER_API_KEY", "QUARRY_EMBEDDINGS_URL"});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  EXPECT_EQ(server.pending(), 0u);
  const json r = ReadJson(dir_.path() / "out" / "bench_results.json");
  EXPECT_EQ(r["mode"], "live");
  EXPECT_EQ(r["source"], "live");
  EXPECT_TRUE(r["label"].is_null());
  EXPECT_EQ(r["model"], "stand-in-model");
  EXPECT_EQ(r["provider"], "openai-compatible");
  EXPECT_EQ(r["judge_model"], "stand-in-model");
  EXPECT_EQ(Run(r, "revenue_total", "on")["status"], "pass");
  const json& judged = Run(r, "region_story", "on");
  EXPECT_EQ(judged["status"], "pass") << judged.dump(2);
  EXPECT_EQ(judged["judge"]["pass_votes"], 2);
  EXPECT_EQ(judged["judge"]["votes"][1]["reason"], "too short");
  EXPECT_EQ(r["arms"][0]["judge"]["answers_judged"], 1);
  // The live results are kept apart, and RESULTS.md's live rows are no longer pending.
  EXPECT_TRUE(fs::exists(dir_.path() / "out" / "live" / "bench_results.json"));
  EXPECT_FALSE(fs::exists(dir_.path() / "out" / "offline"));
  const std::string md = ReadFile(dir_.path() / "out" / "RESULTS.md");
  EXPECT_EQ(md.find("| pending | pending |"), std::string::npos) << md;
  EXPECT_NE(md.find("Model: stand-in-model (openai-compatible)"), std::string::npos) << md;
  EXPECT_NE(md.find("| task success (95% Wilson CI) | 2/2 = 100.0%"), std::string::npos) << md;
  // The judge's requests carried the rubric and no tools; the key went as a bearer token.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 7u);
  const json judge_body = requests[4].Json();
  EXPECT_NE(
      judge_body["messages"][0]["content"].get<std::string>().find("Names North as the largest"),
      std::string::npos);
  EXPECT_TRUE(!judge_body.contains("tools") || judge_body["tools"].empty());
  EXPECT_EQ(requests[0].Header("Authorization"), "Bearer test-key");
}

// The acceptance run: the repo's own tasks/ as a fresh clone has them, with no key, graded for
// real on the bundled data, both result files written.
TEST_F(BenchCliTest, TheRepoSuiteRunsOfflineWithNoKeyAndGradesForReal) {
  const ProcessResult p =
      RunProcess({QuarryBinary().string(), "bench", "--offline", "--no-cache", "--tasks",
                  (SourceDir() / "tasks").string(), "--out", "out", "--runs-dir", "runs"},
                 dir_.path(), {}, kUnsetModel);
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  const json r = ReadJson(dir_.path() / "out" / "bench_results.json");
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["source"], "scripted");
  EXPECT_EQ(r["tasks_selected"], 43);
  ASSERT_EQ(r["arms"].size(), 2u);
  const json& on = r["arms"][0];
  const json& off = r["arms"][1];
  EXPECT_EQ(on["arm"], "on");
  EXPECT_EQ(on["graded"], 9);
  EXPECT_EQ(on["passed"], 8);
  EXPECT_EQ(on["skipped"], 34);
  EXPECT_EQ(on["repair_attempts"], 4);
  EXPECT_EQ(on["repair_successes"], 4);
  EXPECT_EQ(off["graded"], 9);
  EXPECT_EQ(off["passed"], 4);
  EXPECT_EQ(r["mcnemar"]["b_on_only"], 4);
  EXPECT_EQ(r["mcnemar"]["c_off_only"], 0);
  EXPECT_DOUBLE_EQ(r["mcnemar"]["p_value"].get<double>(), 0.125);
  // The deliberately wrong answer passes the verify gate and fails its grader in both arms.
  for (const char* arm : {"on", "off"}) {
    const json& weekend = Run(r, "sales_weekend_orders", arm);
    EXPECT_EQ(weekend["status"], "fail") << arm;
    EXPECT_EQ(weekend["stop_reason"], "answered") << arm;
  }
  EXPECT_EQ(Run(r, "sensors_fault_readings", "on")["status"], "pass");
  EXPECT_EQ(Run(r, "sensors_fault_readings", "off")["status"], "fail");
  EXPECT_EQ(Run(r, "passengers_survival_story", "on")["status"], "pass");  // judges 2 of 3
  const std::string md = ReadFile(dir_.path() / "out" / "RESULTS.md");
  EXPECT_NE(md.find("8/9 = 88.9% (56.5% to 98.0%)"), std::string::npos) << md;
  EXPECT_NE(md.find("| task success (95% Wilson CI) | pending | pending |"), std::string::npos);
  EXPECT_NE(md.find("harness run on scripted turns: not a measure of any model's quality"),
            std::string::npos);
}

// The knowledge arm: every task run with the knowledge files of its data
// (data/knowledge/<stem>/) and without, self-correction on in both, kept in results/knowledge/
// and paired by McNemar. Scripted turns are the same in both arms, so the grades are too: what
// this shows is that each arm's runs were given what they should have been.
TEST_F(BenchCliTest, TheKnowledgeArmGivesEachTaskItsDataKnowledgeAndPairsTheArms) {
  const ProcessResult p = Bench({"--offline", "--tasks", (SourceDir() / "tasks").string(),
                                 "--knowledge", (SourceDir() / "data" / "knowledge").string(),
                                 "--tags", "group-by", "--out", "out", "--runs-dir", "runs"});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  const json r = ReadJson(dir_.path() / "out" / "knowledge" / "offline" / "bench_results.json");
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["ablation"], "knowledge");
  ASSERT_EQ(r["arms"].size(), 2u);
  EXPECT_EQ(r["arms"][0]["arm"], "knowledge");
  EXPECT_EQ(r["arms"][0]["knowledge"], true);
  EXPECT_EQ(r["arms"][0]["self_correction"], true);
  EXPECT_EQ(r["arms"][1]["arm"], "none");
  EXPECT_EQ(r["arms"][1]["knowledge"], false);
  EXPECT_EQ(r["arms"][1]["self_correction"], true);
  EXPECT_EQ(r["arms"][0]["graded"], r["arms"][1]["graded"]);
  EXPECT_GE(r["arms"][0]["graded"].get<int>(), 1);
  EXPECT_EQ(r["mcnemar"]["b_on_only"], 0);
  EXPECT_EQ(r["mcnemar"]["c_off_only"], 0);
  // The sales task's knowledge run was given data/knowledge/sales; its other run none.
  const json& with = Run(r, "sales_top_region", "knowledge");
  const json& without = Run(r, "sales_top_region", "none");
  ASSERT_TRUE(with["trace"].is_string()) << with.dump();
  const json t = ReadJson(dir_.path() / with["trace"].get<std::string>());
  EXPECT_EQ(t["config"]["knowledge"]["dir"],
            (SourceDir() / "data" / "knowledge" / "sales").string());
  EXPECT_GE(t["config"]["knowledge"]["items"].size(), 1u);
  const json u = ReadJson(dir_.path() / without["trace"].get<std::string>());
  EXPECT_FALSE(u["config"].contains("knowledge")) << u["config"].dump();
  EXPECT_EQ(with["status"], without["status"]);
  // RESULTS.md sets the knowledge arm apart; the self-correction files are not replaced.
  const std::string md = ReadFile(dir_.path() / "out" / "RESULTS.md");
  EXPECT_NE(md.find("## With and without knowledge files"), std::string::npos);
  EXPECT_NE(md.find("| figure | with knowledge files | without knowledge files |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("passed only with knowledge files b = 0, only without them c = 0"),
            std::string::npos)
      << md;
  EXPECT_FALSE(fs::exists(dir_.path() / "out" / "offline"));
  // --arms is the other comparison; a folder that does not load stops the bench before a run.
  const ProcessResult both =
      Bench({"--offline", "--tasks", (SourceDir() / "tasks").string(), "--knowledge",
             (SourceDir() / "data" / "knowledge").string(), "--arms", "on", "--out", "o2"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("give one of them"), std::string::npos) << both.err;
  dir_.Write("bad/metrics.yaml", "metrics:\n  revenue: [\n");
  const ProcessResult bad =
      Bench({"--offline", "--tasks", (SourceDir() / "tasks").string(), "--knowledge",
             (dir_.path() / "bad").string(), "--out", "o3", "--runs-dir", "r3"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--knowledge: "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("metrics.yaml:"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir_.path() / "r3")) << "no run started";
}

}  // namespace
}  // namespace quarry::testing
