// Agent scenarios as data: each folder under tests/agent/scenarios holds the data it uses, the
// scripted model turns and the trace facts expected (stop reason, groundedness, repair counts,
// every tool step's tool/status/failure class). The loop runs them with real engines. A data
// entry ending in .sql is a SQLite database built from that script for the test; an entry
// {"copy": "data/x.sqlite", "sql": "..."} is a copy of that database with the script applied
// (the original is never touched). Every scenario also states its clarifications, injection
// warnings and budget explanation; a scenario that names none asserts there are none.
#include <gtest/gtest.h>

#include <atomic>

#include <chrono>
#include <fstream>
#include <stop_token>
#include <thread>

#include "quarry/agent/agent.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

fs::path ScenarioDir() { return quarry::testing::SourceDir() / "tests" / "agent" / "scenarios"; }

std::vector<std::string> ScenarioNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(ScenarioDir())) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

class Collector final : public Observer {
 public:
  void OnStep(const trace::Step& step) override {
    steps.push_back(step);
    if (step.kind == trace::StepKind::kModel) ++model_turns;
  }
  std::vector<trace::Step> steps;
  std::atomic<int> model_turns{0};  // read by the stopper thread
};

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, TraceFactsMatch) {
  const json doc =
      json::parse(quarry::testing::ReadFile(ScenarioDir() / GetParam() / "scenario.json"));
  ASSERT_EQ(doc["source"], "scripted");
  quarry::testing::TempDir built;
  std::vector<fs::path> data;
  for (const auto& d : doc["data"]) {
    if (d.is_object()) {
      const fs::path from = quarry::testing::SourceDir() / d["copy"].get<std::string>();
      data.push_back(built.path() / from.filename());
      fs::copy_file(from, data.back());
      fs::permissions(data.back(), fs::perms::owner_write, fs::perm_options::add);
      ASSERT_NO_FATAL_FAILURE(
          quarry::testing::MakeSqlite(data.back(), d["sql"].get<std::string>()));
      continue;
    }
    const fs::path path = quarry::testing::SourceDir() / d.get<std::string>();
    if (path.extension() != ".sql") {
      data.push_back(path);
      continue;
    }
    data.push_back(built.path() / path.filename().replace_extension(".sqlite"));
    ASSERT_NO_FATAL_FAILURE(
        quarry::testing::MakeSqlite(data.back(), quarry::testing::ReadFile(path)));
  }
  auto engine = engine::Open(data);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  auto client = llm::MakeReplayClientFromJson(doc, GetParam());
  ASSERT_TRUE(client.has_value()) << client.error().message;

  Config config;
  const json& c = doc["config"];
  config.self_correction = c.value("self_correction", true);
  config.max_steps = c.value("max_steps", config.max_steps);
  config.max_repairs = c.value("max_repairs", config.max_repairs);
  config.max_tool_calls = c.value("max_tool_calls", config.max_tool_calls);
  config.max_cost_usd = c.value("max_cost_usd", config.max_cost_usd);
  config.limits.timeout_ms = c.value("timeout_ms", config.limits.timeout_ms);

  quarry::testing::TempDir runs;
  config.sandbox.workdir = runs.path() / "run1" / "workdir";
  config.artifacts_dir = runs.path() / "run1";
  if (doc["expect"].value("needs_namespaces", false)) {
    QUARRY_SKIP_WITHOUT_SANDBOX(sandbox::NamespaceUnavailableReason());
  }
  auto writer = trace::Writer::Create(runs.path(), "run1");
  ASSERT_TRUE(writer.has_value());
  Collector collector;
  // "stop_after_ms": a stop is requested that long after the first model turn, while the tool
  // call it asked for runs (Ctrl-C, an MCP cancel). Counted from the turn, not the run's start:
  // opening the data (its scan, under a sanitizer) may itself take longer than the delay.
  std::stop_source stop;
  std::jthread stopper;
  std::atomic<int64_t> stopped_at{0};  // steady_clock ticks when the stop was requested
  if (c.contains("stop_after_ms")) {
    const auto delay = std::chrono::milliseconds(c["stop_after_ms"].get<int>());
    stopper = std::jthread([&stop, &collector, &stopped_at, delay](std::stop_token done) {
      while (!done.stop_requested() && collector.model_turns.load() == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      const auto at = std::chrono::steady_clock::now() + delay;
      while (!done.stop_requested() && std::chrono::steady_clock::now() < at) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (!done.stop_requested()) {
        stopped_at = std::chrono::steady_clock::now().time_since_epoch().count();
        stop.request_stop();
      }
    });
  }
  agent::RunInput input;
  input.question = doc["question"];
  input.run_id = "run1";
  input.stop = stop.get_token();
  const trace::Trace t = agent::Run(input, **engine, **client, config, &collector, &*writer);
  const auto ended = std::chrono::steady_clock::now();

  const json& expect = doc["expect"];
  EXPECT_EQ(trace::StopReasonName(t.stop_reason), expect["stop_reason"].get<std::string>());
  // "max_ms_after_stop": the run ends that soon after the stop was requested.
  if (expect.contains("max_ms_after_stop")) {
    ASSERT_NE(stopped_at.load(), 0) << "the stop was never requested";
    const auto after = ended - std::chrono::steady_clock::time_point(
                                   std::chrono::steady_clock::duration(stopped_at.load()));
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(after).count(),
              expect["max_ms_after_stop"].get<int64_t>());
  }
  // The writer's trace.json says what the returned trace says, however the run ended.
  const json written = json::parse(quarry::testing::ReadFile(runs.path() / "run1" / "trace.json"));
  EXPECT_EQ(written["stop_reason"], t.stop_reason);
  EXPECT_EQ(t.grounded, expect["grounded"].get<bool>());
  if (expect.contains("repair_attempts")) {
    EXPECT_EQ(t.totals.repair_attempts, expect["repair_attempts"].get<int>());
  }
  if (expect.contains("repair_successes")) {
    EXPECT_EQ(t.totals.repair_successes, expect["repair_successes"].get<int>());
  }
  // A send-back is no repair, and a scenario that does not say has none.
  EXPECT_EQ(t.totals.send_backs, expect.value("send_backs", 0)) << "totals.send_backs";
  if (expect.contains("model_turns")) {
    EXPECT_EQ(t.totals.model_turns, expect["model_turns"].get<int>());
  }
  if (expect.contains("cost_usd")) {
    EXPECT_NEAR(t.totals.cost_usd, expect["cost_usd"].get<double>(), 1e-9);
  }

  std::vector<json> tools;
  std::vector<std::string> observations;
  for (const auto& s : t.steps) {
    if (s.kind != trace::StepKind::kTool && s.kind != trace::StepKind::kClarification) continue;
    EXPECT_EQ(s.kind == trace::StepKind::kClarification, s.tool == "ask_user")
        << "step " << s.index;
    tools.push_back(json::array({s.tool, s.status, s.failure_class}));
    observations.push_back(s.observation);
  }
  EXPECT_EQ(json(tools), expect["tools"]);
  EXPECT_EQ(t.totals.tool_calls, static_cast<int>(tools.size()));
  for (const auto& fragment : expect.value("observation_contains", json::array())) {
    bool found = false;
    for (const auto& o : observations)
      found = found || o.find(fragment.get<std::string>()) != std::string::npos;
    EXPECT_TRUE(found) << "no observation contains: " << fragment;
  }
  // Every final_answer step keeps its checks, so a value sent back earlier is found too.
  auto step_checks = [&t] {
    std::vector<json> out;
    for (const auto& s : t.steps) {
      if (s.tool != "final_answer" || !s.detail.is_object()) continue;
      for (const auto& check : s.detail.value("checks", json::array())) out.push_back(check);
    }
    return out;
  };
  for (const auto& v : expect.value("unsupported", json::array())) {
    bool found = false;
    for (const auto& check : t.verify)
      found = found || (!check.grounded && check.value == v.get<std::string>());
    for (const auto& check : step_checks()) {
      found = found || (check["rule"] == "none" && check["value"] == v);
    }
    EXPECT_TRUE(found) << "not reported as unsupported: " << v;
  }

  // What the verify gate recorded: rules and provenance per value, the reasons it gave, the
  // queries the answer rests on, and the assumptions it carries.
  for (const auto& want : expect.value("verify", json::array())) {
    const trace::VerifyCheck* found = nullptr;
    for (const auto& check : t.verify) {
      if (check.value == want["value"].get<std::string>()) found = &check;
    }
    ASSERT_NE(found, nullptr) << "no verify check for " << want["value"];
    EXPECT_EQ(found->rule, want["rule"].get<std::string>()) << want["value"];
    if (want.contains("column")) {
      EXPECT_EQ(found->column, want["column"].get<std::string>());
    }
    if (want.contains("step")) {
      EXPECT_EQ(found->step, want["step"].get<int>()) << want["value"];
    }
  }
  for (const auto& fragment : expect.value("reason_contains", json::array())) {
    bool found = false;
    for (const auto& check : step_checks()) {
      found =
          found || check.value("reason", "").find(fragment.get<std::string>()) != std::string::npos;
    }
    EXPECT_TRUE(found) << "no verify reason contains: " << fragment;
  }
  if (expect.contains("answer_steps")) {
    std::vector<int> steps;
    for (const auto& q : t.answer_queries) steps.push_back(q.step);
    EXPECT_EQ(json(steps), expect["answer_steps"]);
  }
  if (expect.contains("answer_sql")) {
    EXPECT_EQ(t.answer_sql, expect["answer_sql"].get<std::string>());
  }
  if (expect.contains("assumptions")) {
    EXPECT_EQ(json(t.assumptions), expect["assumptions"]);
  }
  // A decline is kept as what it is, never as the answer.
  EXPECT_EQ(t.declined, expect.value("declined", std::string()));
  if (!t.declined.empty()) {
    EXPECT_EQ(t.answer, "");
  }

  // The observer saw every step as it happened, and the trace on disk says the same.
  EXPECT_EQ(collector.steps.size(), t.steps.size());
  auto on_disk = trace::ReadTrace(runs.path() / "run1" / "trace.json");
  ASSERT_TRUE(on_disk.has_value()) << on_disk.error().message;
  EXPECT_EQ(on_disk->stop_reason, t.stop_reason);
  EXPECT_EQ(on_disk->declined, t.declined);
  EXPECT_EQ(on_disk->steps.size(), t.steps.size());
  EXPECT_EQ(on_disk->totals.repair_attempts, t.totals.repair_attempts);
  EXPECT_EQ(on_disk->totals.send_backs, t.totals.send_backs);
  // A killed run's record counts its send-backs from the steps as the loop did.
  auto rebuilt = trace::RebuildFromEvents(runs.path() / "run1" / "events.jsonl");
  ASSERT_TRUE(rebuilt.has_value()) << rebuilt.error().message;
  EXPECT_EQ(rebuilt->totals.send_backs, t.totals.send_backs);
  std::ifstream events(runs.path() / "run1" / "events.jsonl");
  size_t lines = 0;
  for (std::string line; std::getline(events, line);) {
    ASSERT_FALSE(json::parse(line, nullptr, false).is_discarded()) << line;
    ++lines;
  }
  EXPECT_EQ(lines, t.steps.size() + 2);  // start, every step, end
  EXPECT_EQ(t.artifacts.size(), expect.value("artifacts", size_t{0}));
  for (const auto& a : t.artifacts) EXPECT_TRUE(fs::exists(a)) << a;

  // Tool hygiene: text that must not be shown, per-step observation openings and details,
  // the model's unverified plain-text reply, and the run's notes.
  for (const auto& fragment : expect.value("observation_not_contains", json::array())) {
    for (const auto& o : observations) {
      EXPECT_EQ(o.find(fragment.get<std::string>()), std::string::npos) << o;
    }
  }
  std::vector<const trace::Step*> tool_steps;
  for (const auto& s : t.steps) {
    if (s.kind == trace::StepKind::kTool || s.kind == trace::StepKind::kClarification)
      tool_steps.push_back(&s);
  }
  const json step_facts = expect.value("steps", json::object());
  for (const auto& [n, want] : step_facts.items()) {
    const size_t i = std::stoul(n) - 1;  // 1-based among tool steps
    ASSERT_LT(i, tool_steps.size()) << "no tool step " << n;
    const trace::Step& s = *tool_steps[i];
    if (want.contains("observation_starts_with")) {
      EXPECT_TRUE(s.observation.starts_with(want["observation_starts_with"].get<std::string>()))
          << "step " << n << ": " << s.observation;
    }
    for (const auto& fragment : want.value("observation_contains", json::array())) {
      EXPECT_NE(s.observation.find(fragment.get<std::string>()), std::string::npos)
          << "step " << n << ": " << s.observation;
    }
    for (const auto& fragment : want.value("observation_not_contains", json::array())) {
      EXPECT_EQ(s.observation.find(fragment.get<std::string>()), std::string::npos)
          << "step " << n << ": " << s.observation;
    }
    const json detail = want.value("detail", json::object());
    for (const auto& [key, value] : detail.items()) {
      EXPECT_EQ(s.detail.value(key, json()), value) << "step " << n << " detail." << key;
    }
  }
  EXPECT_EQ(t.reply, expect.value("reply", std::string())) << "trace.reply";
  EXPECT_EQ(on_disk->reply, t.reply);
  // ask_user's questions and replies, text that read like instructions, and the explanation of
  // a budget stop, as returned and as read back from trace.json.
  json clarifications = json::array();
  for (const auto& q : t.clarifications) {
    clarifications.push_back(
        {{"step", q.step}, {"question", q.question}, {"choices", q.choices}, {"reply", q.reply}});
  }
  EXPECT_EQ(clarifications, expect.value("clarifications", json::array()));
  EXPECT_EQ(on_disk->clarifications.size(), t.clarifications.size());
  const json injections = expect.value("injection", json::array());
  std::string found;
  for (const auto& r : t.injection_suspected) {
    found +=
        std::to_string(r.step) + " | " + r.where + " | " + r.pattern + " | " + r.excerpt + "\n";
  }
  ASSERT_EQ(t.injection_suspected.size(), injections.size()) << found;
  for (size_t i = 0; i < injections.size(); ++i) {
    const trace::InjectionRecord& r = t.injection_suspected[i];
    EXPECT_EQ(r.step, injections[i]["step"].get<int>()) << i;
    EXPECT_EQ(r.where, injections[i]["where"].get<std::string>()) << i;
    EXPECT_EQ(r.pattern, injections[i]["pattern"].get<std::string>()) << i;
    const std::string want = injections[i]["excerpt_contains"].get<std::string>();
    EXPECT_NE(r.excerpt.find(want), std::string::npos) << r.excerpt;
    EXPECT_LE(r.excerpt.size(), 120u);
  }
  EXPECT_EQ(on_disk->injection_suspected.size(), t.injection_suspected.size());
  EXPECT_EQ(t.explanation, expect.value("explanation", std::string()));
  EXPECT_EQ(on_disk->explanation, t.explanation);
  if (!t.explanation.empty()) {  // the last step is the call that wrote it, counted as a turn
    EXPECT_EQ(t.steps.back().kind, trace::StepKind::kModel);
    EXPECT_EQ(t.steps.back().detail.value("purpose", ""), "explanation");
    EXPECT_EQ(on_disk->steps.back().detail.value("purpose", ""), "explanation");
  }
  for (const auto& fragment : expect.value("notes_contain", json::array())) {
    bool noted = false;
    for (const auto& n : t.notes) {
      noted = noted || n.find(fragment.get<std::string>()) != std::string::npos;
    }
    EXPECT_TRUE(noted) << "no note contains: " << fragment;
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioTest, ::testing::ValuesIn(ScenarioNames()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace quarry::agent
