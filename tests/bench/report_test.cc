// `quarry report` over real traces: runs made by the real agent on data/sales.csv with
// scripted model turns (labelled "source": "scripted"; they exercise the report, they measure
// no model), then read back as a runs folder, a bench results file and an eval output folder.
#include <fstream>

#include <gtest/gtest.h>

#include "quarry/bench/report.h"
#include "support/test_support.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json Turn(const std::string& tool, json args, int64_t in, int64_t out, double cost) {
  return {{"content", ""},
          {"tool_calls", json::array({{{"name", tool}, {"arguments", std::move(args)}}})},
          {"usage", {{"input_tokens", in}, {"output_tokens", out}}},
          {"cost_usd", cost}};
}

json Sql(const std::string& sql, int64_t in, int64_t out, double cost) {
  return Turn("run_sql", {{"sql", sql}}, in, out, cost);
}

json Answer(const std::string& text, const std::string& value, int64_t in, int64_t out,
            double cost) {
  return Turn("final_answer", {{"answer", text}, {"supporting_values", json::array({value})}}, in,
              out, cost);
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = engine::Open({testing::SourceDir() / "data" / "sales.csv"});
    ASSERT_TRUE(e) << e.error().message;
    engine_ = std::move(*e);
    config_.python = false;
  }

  // One question through the real agent; its trace lands in runs_dir/<id>/trace.json.
  RunRecord Run(const std::string& question, const json& turns, const fs::path& runs_dir) {
    const json fixture = {{"source", "scripted"}, {"turns", turns}};
    auto client = llm::MakeReplayClientFromJson(fixture, "report-test");
    EXPECT_TRUE(client) << client.error().message;
    agent::RunInput input;
    input.question = question;
    auto run = RunAgent(input, *engine_, **client, config_, runs_dir);
    EXPECT_TRUE(run) << run.error().message;
    return std::move(*run);
  }

  // Three answered runs: 2, 3 and 4 model calls; prompt tokens 2100, 3300, 2000.
  std::vector<RunRecord> ThreeRuns(const fs::path& runs_dir) {
    std::vector<RunRecord> runs;
    runs.push_back(Run("How many orders are there?",
                       {Sql("SELECT count(*) AS orders FROM sales", 1000, 20, 0.001),
                        Answer("There are 2065 orders.", "2065", 1100, 15, 0.002)},
                       runs_dir));
    runs.push_back(Run("How many orders are there, counted again?",
                       {Sql("SELECT count(*) AS orders FROM salez", 1000, 20, 0.001),
                        Sql("SELECT count(*) AS orders FROM sales", 1100, 20, 0.001),
                        Answer("There are 2065 orders.", "2065", 1200, 15, 0.001)},
                       runs_dir));
    runs.push_back(Run("How many regions are there?",
                       {Sql("SELECT count(*) FROM sales", 500, 10, 0.0005),
                        Sql("SELECT DISTINCT region FROM sales", 500, 10, 0.0005),
                        Sql("SELECT count(DISTINCT region) AS regions FROM sales", 500, 10, 0.0005),
                        Answer("There are 5 regions.", "5", 500, 30, 0.0005)},
                       runs_dir));
    for (const RunRecord& r : runs)
      EXPECT_EQ(r.trace.stop_reason, trace::StopReason::kAnswered) << r.trace.id;
    return runs;
  }

  static std::vector<double> WallSeconds(const std::vector<RunRecord>& runs) {
    std::vector<double> out;
    for (const RunRecord& r : runs) {
      auto t = trace::ReadTrace(r.trace_path);
      EXPECT_TRUE(t);
      out.push_back(static_cast<double>(t->totals.wall_ms) / 1000.0);
    }
    return out;
  }

  std::unique_ptr<engine::Engine> engine_;
  agent::Config config_;
  testing::TempDir dir_;
};

TEST_F(ReportTest, FiguresOverAKnownSetOfRunsAreExact) {
  const fs::path runs_dir = dir_.path() / "runs";
  const std::vector<RunRecord> runs = ThreeRuns(runs_dir);
  auto report = BuildReport(runs_dir);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->source, ReportSource::kRunsFolder);
  ASSERT_EQ(report->runs.size(), 3u);
  EXPECT_TRUE(report->skipped.empty());
  ASSERT_EQ(report->groups.size(), 1u);
  const GroupFigures& g = report->groups[0];
  EXPECT_EQ(g.group, "");
  EXPECT_EQ(g.runs, 3);
  EXPECT_EQ(g.answered, 3);
  EXPECT_EQ(g.grounded, 3);
  EXPECT_EQ(g.incomplete, 0);
  EXPECT_EQ(g.stop_reasons, (std::map<std::string, int>{{"answered", 3}}));

  EXPECT_DOUBLE_EQ(g.model_calls.mean, 3.0);
  EXPECT_DOUBLE_EQ(g.model_calls.median, 3.0);
  EXPECT_DOUBLE_EQ(g.model_calls.max, 4.0);
  EXPECT_DOUBLE_EQ(g.tool_calls.mean, 3.0);
  EXPECT_DOUBLE_EQ(g.tool_calls.max, 4.0);
  EXPECT_DOUBLE_EQ(g.prompt_tokens.mean, (2100.0 + 3300.0 + 2000.0) / 3.0);
  EXPECT_DOUBLE_EQ(g.prompt_tokens.median, 2100.0);
  EXPECT_DOUBLE_EQ(g.prompt_tokens.max, 3300.0);
  EXPECT_DOUBLE_EQ(g.completion_tokens.mean, (35.0 + 55.0 + 60.0) / 3.0);
  EXPECT_DOUBLE_EQ(g.completion_tokens.median, 55.0);
  EXPECT_DOUBLE_EQ(g.completion_tokens.max, 60.0);
  EXPECT_NEAR(g.cost_usd.mean, (0.003 + 0.003 + 0.002) / 3.0, 1e-12);
  EXPECT_NEAR(g.cost_usd.median, 0.003, 1e-12);
  EXPECT_NEAR(g.cost_usd.max, 0.003, 1e-12);
  // Wall time is measured, not scripted: the figures are those of the traces' totals.
  const std::vector<double> wall = WallSeconds(runs);
  EXPECT_DOUBLE_EQ(g.wall_seconds.mean, Mean(wall));
  EXPECT_DOUBLE_EQ(g.wall_seconds.median, Median(wall));
  EXPECT_DOUBLE_EQ(g.wall_seconds.max, *std::max_element(wall.begin(), wall.end()));

  const std::string text = ReportText(*report);
  EXPECT_NE(text.find("runs folder " + runs_dir.string() + ": 3 runs\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("model calls                 3.00        3.00           4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("answered 3 of 3, grounded 3 of 3"), std::string::npos) << text;
  EXPECT_EQ(report->replayed, 3);
  EXPECT_NE(text.find("note: 3 of 3 runs replayed recorded model turns (provider replay): "
                      "harness figures, not a measure of any model"),
            std::string::npos)
      << text;
}

// Issue 23: repairs and send-backs are counted apart, and both show in text, JSON and HTML.
// The second of ThreeRuns repairs a failed query (1 attempt, 1 success); a fourth run's first
// answer states a count its query did not show, the gate sends it back, and the second passes.
TEST_F(ReportTest, RepairsAndSendBacksAreCountedApart) {
  const fs::path runs_dir = dir_.path() / "runs";
  ThreeRuns(runs_dir);
  const RunRecord sent = Run("How many orders are there, once more?",
                             {Sql("SELECT count(*) AS orders FROM sales", 1000, 20, 0.001),
                              Answer("There are 2000 orders.", "2000", 900, 10, 0.001),
                              Answer("There are 2065 orders.", "2065", 1100, 15, 0.001)},
                             runs_dir);
  ASSERT_EQ(sent.trace.stop_reason, trace::StopReason::kAnswered);
  ASSERT_EQ(sent.trace.totals.send_backs, 1);
  auto report = BuildReport(runs_dir);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->groups.size(), 1u);
  const GroupFigures& g = report->groups[0];
  EXPECT_EQ(g.runs, 4);
  EXPECT_EQ(g.repair_attempts, 1);
  EXPECT_EQ(g.repair_successes, 1);
  EXPECT_EQ(g.send_backs, 1);
  EXPECT_EQ(g.runs_with_send_backs, 1);
  const std::string text = ReportText(*report);
  EXPECT_NE(text.find("repairs 1/1 (succeeded/attempted), send-backs 1 (in 1 of 4 runs)\n"),
            std::string::npos)
      << text;
  const json j = ReportJson(*report);
  EXPECT_EQ(j["groups"][0]["send_backs"], 1);
  EXPECT_EQ(j["groups"][0]["repair_attempts"], 1);
  int listed = 0;
  for (const json& run : j["run_list"]) {
    if (run["run_id"] == sent.trace.id) {
      EXPECT_EQ(run["send_backs"], 1);
      EXPECT_EQ(run["repair_attempts"], 0);
      ++listed;
    }
  }
  EXPECT_EQ(listed, 1);
  auto html = ReportHtml(*report);
  ASSERT_TRUE(html) << html.error().message;
  EXPECT_NE(html->find("<th>send-backs (answers the verify gate returned)</th><td>1</td>"),
            std::string::npos);
}

TEST_F(ReportTest, AKilledRunIsCountedFromItsEventsAndMarkedIncomplete) {
  const fs::path runs_dir = dir_.path() / "runs";
  const std::vector<RunRecord> runs = ThreeRuns(runs_dir);
  // As a kill leaves it: no trace.json, the end event and the last step never written, and
  // the line being written cut short.
  const fs::path killed = runs[1].trace_path.parent_path();
  fs::remove(killed / "trace.json");
  std::vector<std::string> lines;
  {
    std::ifstream in(killed / "events.jsonl");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ASSERT_GE(lines.size(), 3u);
  lines.resize(lines.size() - 2);  // the final_answer step and the end event
  {
    std::ofstream out(killed / "events.jsonl", std::ios::trunc);
    for (const std::string& line : lines) out << line << "\n";
    out << "{\"event\": \"step\", \"ind";
  }

  auto report = BuildReport(runs_dir);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->runs.size(), 3u);
  EXPECT_TRUE(report->skipped.empty());
  const auto it = std::find_if(report->runs.begin(), report->runs.end(),
                               [](const ReportRun& r) { return r.incomplete; });
  ASSERT_NE(it, report->runs.end());
  EXPECT_EQ(it->run_id, runs[1].trace.id);
  EXPECT_EQ(it->trace_path, killed / "events.jsonl");
  EXPECT_EQ(it->stop_reason, "incomplete");
  EXPECT_EQ(it->metrics.model_calls, 3);  // every model turn was recorded
  EXPECT_EQ(it->metrics.tool_calls, 2);   // the final answer's execution was not
  EXPECT_EQ(it->metrics.prompt_tokens, 3300);
  EXPECT_FALSE(it->metrics.answered);

  const GroupFigures& g = report->groups[0];
  EXPECT_EQ(g.runs, 3);
  EXPECT_EQ(g.incomplete, 1);
  EXPECT_EQ(g.answered, 2);
  EXPECT_EQ(g.stop_reasons, (std::map<std::string, int>{{"answered", 2}, {"incomplete", 1}}));
  EXPECT_DOUBLE_EQ(g.tool_calls.mean, (2.0 + 2.0 + 4.0) / 3.0);
  EXPECT_DOUBLE_EQ(g.tool_calls.median, 2.0);
  const std::string text = ReportText(*report);
  EXPECT_NE(text.find("3 runs (1 incomplete)"), std::string::npos) << text;
  EXPECT_NE(text.find(runs[1].trace.id + "  " + (killed / "events.jsonl").string()),
            std::string::npos)
      << text;
}

TEST_F(ReportTest, CorruptTracesAreSkippedAndCountedWithTheirReason) {
  const fs::path runs_dir = dir_.path() / "runs";
  const std::vector<RunRecord> runs = ThreeRuns(runs_dir);
  {
    std::ofstream out(runs[0].trace_path, std::ios::trunc);
    out << "{\"format_version\": 1, \"steps\": [";  // cut short
  }
  json doc = json::parse(testing::ReadFile(runs[2].trace_path));
  doc["steps"] = "not a list";
  {
    std::ofstream out(runs[2].trace_path, std::ios::trunc);
    out << doc.dump();
  }
  auto report = BuildReport(runs_dir);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->runs.size(), 1u);
  EXPECT_EQ(report->runs[0].run_id, runs[1].trace.id);
  ASSERT_EQ(report->skipped.size(), 2u);
  std::map<fs::path, std::string> reasons;
  for (const SkippedTrace& s : report->skipped) reasons[s.path] = s.reason;
  ASSERT_TRUE(reasons.contains(runs[0].trace_path));
  EXPECT_NE(reasons[runs[0].trace_path].find(runs[0].trace_path.string()), std::string::npos);
  ASSERT_TRUE(reasons.contains(runs[2].trace_path));
  EXPECT_NE(reasons[runs[2].trace_path].find("steps"), std::string::npos)
      << reasons[runs[2].trace_path];
  EXPECT_DOUBLE_EQ(report->groups[0].model_calls.mean, 3.0);
  const std::string text = ReportText(*report);
  EXPECT_NE(text.find("1 run, 2 traces skipped"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped (could not be read):\n  " + runs[0].trace_path.string()),
            std::string::npos)
      << text;
}

TEST_F(ReportTest, BenchResultsAreReadByTraceOrRunIdAndGroupedByArm) {
  const fs::path runs_dir = dir_.path() / "runs" / "bench-1";
  const std::vector<RunRecord> runs = ThreeRuns(runs_dir);
  // Shaped as `quarry bench` writes it: a trace path, or a run id in runs_dir; a skipped task
  // has neither; a missing trace is said, not fatal. Paths relative to the file's parent.
  const json results = {
      {"format", "quarry-bench-results"},
      {"runs_dir", "runs/bench-1"},
      {"runs", json::array({
                   {{"task", "t1"},
                    {"arm", "on"},
                    {"sample", 1},
                    {"run_id", runs[0].trace.id},
                    {"trace", "runs/bench-1/" + runs[0].trace.id + "/trace.json"}},
                   {{"task", "t2"}, {"arm", "on"}, {"sample", 1}, {"run_id", runs[1].trace.id}},
                   {{"task", "t1"},
                    {"arm", "off"},
                    {"sample", 1},
                    {"run_id", runs[2].trace.id},
                    {"trace", nullptr}},
                   {{"task", "t2"},
                    {"arm", "off"},
                    {"sample", 1},
                    {"run_id", nullptr},
                    {"trace", nullptr},
                    {"status", "skipped"}},
                   {{"task", "t3"},
                    {"arm", "off"},
                    {"run_id", "20250101-000000-abcdef"},
                    {"trace", "runs/bench-1/20250101-000000-abcdef/trace.json"}},
                   "not an entry",
               })}};
  fs::create_directories(dir_.path() / "results");
  dir_.Write("results/bench_results.json", results.dump(2));

  for (const fs::path& given :
       {dir_.path() / "results" / "bench_results.json", dir_.path() / "results"}) {
    auto report = BuildReport(given);
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->source, ReportSource::kBenchResults);
    ASSERT_EQ(report->runs.size(), 3u);
    EXPECT_EQ(report->runs[0].label, "t1");
    EXPECT_EQ(report->runs[1].run_id, runs[1].trace.id);
    EXPECT_EQ(report->not_run, 1);
    ASSERT_EQ(report->skipped.size(), 1u);
    EXPECT_NE(report->skipped[0].reason.find("(t3), but no trace.json or events.jsonl"),
              std::string::npos)
        << report->skipped[0].reason;
    ASSERT_EQ(report->groups.size(), 2u);
    EXPECT_EQ(report->groups[0].group, "on");
    EXPECT_EQ(report->groups[0].runs, 2);
    EXPECT_DOUBLE_EQ(report->groups[0].model_calls.mean, 2.5);
    EXPECT_DOUBLE_EQ(report->groups[0].prompt_tokens.max, 3300.0);
    EXPECT_EQ(report->groups[1].group, "off");
    EXPECT_EQ(report->groups[1].runs, 1);
    EXPECT_DOUBLE_EQ(report->groups[1].model_calls.median, 4.0);
  }
  // The page has a table per arm and a histogram with one colour (a legend entry) per arm.
  auto report = BuildReport(dir_.path() / "results");
  ASSERT_TRUE(report) << report.error().message;
  auto html = ReportHtml(*report);
  ASSERT_TRUE(html) << html.error().message;
  EXPECT_NE(html->find("<h2>arm on</h2>"), std::string::npos);
  EXPECT_NE(html->find("<h2>arm off</h2>"), std::string::npos);
  EXPECT_NE(html->find("class=\"legend\""), std::string::npos);
  EXPECT_NE(html->find(">off</text>"), std::string::npos);
}

TEST_F(ReportTest, EvalOutputFolderIsReadThroughItsQuestionsFile) {
  const fs::path runs_dir = dir_.path() / "eval-runs";
  const std::vector<RunRecord> runs = ThreeRuns(runs_dir);
  const fs::path out = dir_.path() / "eval-out";
  fs::create_directories(out);
  dir_.Write("eval-out/summary.json", json({{"benchmark", "spider"},
                                            {"questions_file", (out / "questions.jsonl").string()},
                                            {"runs_dir", runs_dir.string()}})
                                          .dump());
  std::string lines;
  lines += json({{"index", 0},
                 {"question_id", 7},
                 {"run_id", runs[0].trace.id},
                 {"trace", runs[0].trace_path.string()}})
               .dump() +
           "\n";
  lines += json({{"index", 1}, {"question_id", "q8"}, {"run_id", runs[2].trace.id}}).dump() + "\n";
  lines += json({{"index", 2}, {"question_id", "q9"}, {"run_id", nullptr}}).dump() + "\n";
  lines += "{\"index\": 3, \"quest\n";  // cut short
  dir_.Write("eval-out/questions.jsonl", lines);

  auto report = BuildReport(out);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->source, ReportSource::kEvalOutput);
  ASSERT_EQ(report->runs.size(), 2u);
  EXPECT_EQ(report->runs[0].label, "7");
  EXPECT_EQ(report->runs[1].label, "q8");
  EXPECT_EQ(report->not_run, 1);
  ASSERT_EQ(report->skipped.size(), 1u);
  EXPECT_EQ(report->skipped[0].reason, "line 4 is not a JSON object");
  ASSERT_EQ(report->groups.size(), 1u);
  EXPECT_DOUBLE_EQ(report->groups[0].model_calls.mean, 3.0);
  EXPECT_DOUBLE_EQ(report->groups[0].completion_tokens.max, 60.0);

  // Paths written from another working directory are found by their last components.
  dir_.Write("eval-out/summary.json", json({{"questions_file", "else/eval-out/questions.jsonl"},
                                            {"runs_dir", "else/where/eval-runs"}})
                                          .dump());
  dir_.Write("eval-out/questions.jsonl",
             json({{"question_id", 1}, {"run_id", runs[1].trace.id}}).dump() + "\n" +
                 json({{"question_id", 2},
                       {"trace", "else/where/eval-runs/" + runs[2].trace.id + "/trace.json"}})
                     .dump() +
                 "\n");
  auto moved = BuildReport(out / "summary.json");
  ASSERT_TRUE(moved) << moved.error().message;
  ASSERT_EQ(moved->runs.size(), 2u);
  EXPECT_EQ(moved->runs[0].trace_path, runs_dir / runs[1].trace.id / "trace.json");
  EXPECT_EQ(moved->runs[1].trace_path, runs[2].trace_path);
  EXPECT_TRUE(moved->skipped.empty());

  // The folder of runs an eval wrote is a report of its own.
  auto folder = BuildReport(runs_dir);
  ASSERT_TRUE(folder) << folder.error().message;
  EXPECT_EQ(folder->runs.size(), 3u);
}

TEST_F(ReportTest, HtmlPageHasTheTablesAnInlineHistogramAndNoScript) {
  const fs::path runs_dir = dir_.path() / "runs";
  std::vector<RunRecord> runs = ThreeRuns(runs_dir);
  runs.push_back(Run("<script>alert('x')</script> How many orders?",
                     {Sql("SELECT count(*) AS orders FROM sales", 1000, 20, 0.001),
                      Answer("There are 2065 orders.", "2065", 1100, 15, 0.002)},
                     runs_dir));
  auto report = BuildReport(runs_dir);
  ASSERT_TRUE(report) << report.error().message;
  auto html = ReportHtml(*report);
  ASSERT_TRUE(html) << html.error().message;
  EXPECT_EQ(html->find("<script"), std::string::npos);
  // No network: the only URLs are the SVG's namespace names, which are never fetched.
  for (size_t at = html->find("http"); at != std::string::npos; at = html->find("http", at + 1)) {
    EXPECT_EQ(html->compare(at, 18, "http://www.w3.org/"), 0) << html->substr(at, 40);
  }
  EXPECT_NE(html->find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; How many orders?"),
            std::string::npos);
  EXPECT_EQ(html->find("<?xml"), std::string::npos);
  const size_t svg = html->find("<figure class=\"histogram\"><svg");
  ASSERT_NE(svg, std::string::npos);
  EXPECT_NE(html->find("Latency per run (4 runs)", svg), std::string::npos);
  EXPECT_NE(html->find("</svg>", svg), std::string::npos);
  // The figures table: model calls 2, 3, 4, 2 -> mean 2.75, median 2.5, max 4.
  EXPECT_NE(html->find("<tr><th>model calls</th><td>2.75</td><td>2.50</td><td>4</td></tr>"),
            std::string::npos);
  EXPECT_NE(html->find("<tr><th>answered</th><td>4</td></tr>"), std::string::npos);
  EXPECT_NE(html->find("<p class=\"note\">4 of 4 runs replayed recorded model turns"),
            std::string::npos);
  for (const RunRecord& r : runs) EXPECT_NE(html->find(">" + r.trace.id + "<"), std::string::npos);
}

TEST_F(ReportTest, JsonCarriesTheFiguresAndNullForNoValue) {
  const fs::path runs_dir = dir_.path() / "runs";
  const std::vector<RunRecord> runs = ThreeRuns(runs_dir);
  dir_.Write("runs/broken/trace.json", "[]");
  auto report = BuildReport(runs_dir);
  ASSERT_TRUE(report) << report.error().message;
  const json j = ReportJson(*report);
  EXPECT_EQ(j["kind"], "runs folder");
  EXPECT_EQ(j["runs"], 3);
  EXPECT_EQ(j["incomplete"], 0);
  EXPECT_EQ(j["replayed"], 3);
  EXPECT_EQ(j["run_list"][0]["provider"], "replay");
  EXPECT_EQ(j["not_run"], 0);
  ASSERT_EQ(j["skipped"].size(), 1u);
  EXPECT_EQ(j["skipped"][0]["path"], (runs_dir / "broken" / "trace.json").string());
  ASSERT_EQ(j["groups"].size(), 1u);
  const json& f = j["groups"][0]["figures"];
  EXPECT_EQ(j["groups"][0]["group"], nullptr);
  EXPECT_EQ(j["groups"][0]["stop_reasons"], json({{"answered", 3}}));
  EXPECT_DOUBLE_EQ(f["model_calls"]["mean"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(f["prompt_tokens"]["median"].get<double>(), 2100.0);
  EXPECT_DOUBLE_EQ(f["completion_tokens"]["max"].get<double>(), 60.0);
  EXPECT_NEAR(f["cost_usd"]["mean"].get<double>(), 0.008 / 3.0, 1e-12);
  ASSERT_EQ(j["run_list"].size(), 3u);
  EXPECT_EQ(j["run_list"][2]["model_calls"], 4);
  EXPECT_EQ(j["run_list"][2]["prompt_tokens"], 2000);

  // A group without runs has no figures: null, never 0.
  Report none;
  none.groups = {FiguresOf({}, "on")};
  const json empty = ReportJson(none);
  EXPECT_EQ(empty["groups"][0]["figures"]["wall_seconds"]["mean"], nullptr);
}

TEST_F(ReportTest, ClearErrorsForAMissingPathAFileOfNoKindAndAnEmptyFolder) {
  auto missing = BuildReport(dir_.path() / "nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::kUsage);
  EXPECT_NE(
      missing.error().message.find("no such file or folder: " + (dir_.path() / "nope").string()),
      std::string::npos);

  auto neither = BuildReport(dir_.Write("other.json", R"({"rows": [1, 2]})"));
  ASSERT_FALSE(neither);
  EXPECT_EQ(neither.error().code, Error::Code::kUsage);
  EXPECT_NE(neither.error().message.find("is neither a trace, a bench results file"),
            std::string::npos);

  auto csv = BuildReport(testing::SourceDir() / "data" / "sales.csv");
  ASSERT_FALSE(csv);
  EXPECT_EQ(csv.error().code, Error::Code::kData);
  EXPECT_NE(csv.error().message.find("sales.csv is not valid JSON"), std::string::npos);

  fs::create_directories(dir_.path() / "empty" / "sub");
  auto empty = BuildReport(dir_.path() / "empty");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, Error::Code::kUsage);
  EXPECT_NE(empty.error().message.find("no runs found under " + (dir_.path() / "empty").string()),
            std::string::npos);
}

// The command itself, as a child process: exit codes, stdout, and the page it writes.
TEST_F(ReportTest, CommandPrintsJsonWritesThePageAndFailsClearly) {
  const fs::path runs_dir = dir_.path() / "runs";
  ThreeRuns(runs_dir);
  const std::string bin = testing::QuarryBinary().string();
  auto r = testing::RunProcess({bin, "report", "runs", "--format", "json", "--html", "r.html"},
                               dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["runs"], 3);
  EXPECT_DOUBLE_EQ(j["groups"][0]["figures"]["model_calls"]["max"].get<double>(), 4.0);
  const std::string page = testing::ReadFile(dir_.path() / "r.html");
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_NE(r.err.find("wrote r.html"), std::string::npos);

  auto text = testing::RunProcess({bin, "report"}, dir_.path());  // runs/ by default
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("runs folder runs: 3 runs"), std::string::npos) << text.out;

  auto missing = testing::RunProcess({bin, "report", "nowhere"}, dir_.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("quarry: no such file or folder: nowhere"), std::string::npos)
      << missing.err;
  fs::create_directories(dir_.path() / "empty");
  auto empty = testing::RunProcess({bin, "report", "empty"}, dir_.path());
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("no runs found under empty"), std::string::npos) << empty.err;

  // Every trace unreadable: the reasons are printed, and the exit code says nothing was read.
  dir_.Write("bad/r1/trace.json", "{");
  auto bad = testing::RunProcess({bin, "report", "bad"}, dir_.path());
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.out.find("skipped (could not be read):\n  bad/r1/trace.json"), std::string::npos)
      << bad.out;
  EXPECT_NE(bad.err.find("no trace under bad could be read"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace quarry::bench
