// The figures of a bench (suite.h): each arm's summary over its task runs, McNemar's exact
// test over the pairs graded in both arms, and bench_results.json.
#include <cmath>
#include <limits>
#include <set>

#include "quarry/bench/suite.h"

namespace quarry::bench {
namespace {

using json = nlohmann::ordered_json;

double Ratio(int64_t num, int64_t den) {
  return den > 0 ? static_cast<double>(num) / static_cast<double>(den)
                 : std::numeric_limits<double>::quiet_NaN();
}

// JSON has no NaN: a figure with nothing to measure is null.
json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json ToJson(const RunMetrics& m) {
  return {{"model_calls", m.model_calls},
          {"tool_calls", m.tool_calls},
          {"steps", m.steps},
          {"repair_attempts", m.repair_attempts},
          {"repair_successes", m.repair_successes},
          {"send_backs", m.send_backs},
          {"prompt_tokens", m.prompt_tokens},
          {"completion_tokens", m.completion_tokens},
          {"cached_tokens", m.cached_tokens},
          {"cache_write_tokens", m.cache_write_tokens},
          {"cost_usd", m.cost_usd},
          {"wall_ms", m.wall_ms},
          {"guard_violations", m.guard_violations},
          {"answered", m.answered},
          {"grounded", m.grounded}};
}

json ToJson(const JudgeResult& j) {
  json votes = json::array();
  for (const JudgeVote& v : j.votes) {
    votes.push_back({{"verdict", v.verdict.empty() ? json(nullptr) : json(v.verdict)},
                     {"reason", v.reason},
                     {"reply", v.reply},
                     {"cost_usd", v.cost_usd},
                     {"latency_ms", v.latency_ms}});
  }
  return {{"calls", static_cast<int>(j.votes.size())},
          {"pass_votes", j.pass_votes},
          {"fail_votes", j.fail_votes},
          {"no_votes", j.no_votes},
          {"decided", j.decided},
          {"majority", j.decided ? json(j.pass ? "pass" : "fail") : json(nullptr)},
          {"agreed", j.agreed},
          {"cost_usd", j.cost_usd},
          {"votes", votes}};
}

json ToJson(const TaskRun& r, Ablation ablation) {
  json out = {{"task", r.task},
              {"grader", GraderName(r.grader)},
              {"arm", ArmName(ablation, r.arm)},
              {"self_correction", r.self_correction},
              {"knowledge", r.knowledge},
              {"sample", r.sample},
              {"status", RunStatusName(r.status)},
              {"reason", r.reason},
              {"engine", r.engine.empty() ? json(nullptr) : json(r.engine)},
              {"data", r.data.empty() ? json(nullptr) : json(r.data)},
              {"run_id", r.run_id.empty() ? json(nullptr) : json(r.run_id)},
              {"trace", r.ran ? json(r.trace_path.string()) : json(nullptr)},
              {"stop_reason", r.ran ? json(r.stop_reason) : json(nullptr)},
              {"answer", r.ran ? json(r.answer) : json(nullptr)},
              {"cost_usd", r.cost_usd},
              {"metrics", r.ran ? ToJson(r.metrics) : json(nullptr)}};
  if (r.judge) out["judge"] = ToJson(*r.judge);
  return out;
}

json ToJson(const ArmSummary& s) {
  json skipped = json::object();
  for (const auto& [reason, n] : s.skipped_by_reason) skipped[reason] = n;
  return {{"arm", ArmName(s.ablation, s.on)},
          {"self_correction", s.self_correction},
          {"knowledge", s.knowledge},
          {"runs", s.runs},
          {"graded", s.graded},
          {"passed", s.passed},
          {"failed", s.failed},
          {"errors", s.errors},
          {"skipped", s.skipped},
          {"tasks_graded", s.tasks_graded},
          {"tasks_skipped", s.tasks_skipped},
          {"skipped_by_reason", skipped},
          {"success_rate", Num(s.success_rate)},
          {"success_ci95", {Num(s.success_ci.low), Num(s.success_ci.high)}},
          {"median_steps", Num(s.median_steps)},
          {"repair_rate", Num(s.repair_rate)},
          {"repair_attempts", s.repair_attempts},
          {"repair_successes", s.repair_successes},
          {"repair_success_rate", Num(s.repair_success_rate)},
          {"send_backs", s.send_backs},
          {"runs_with_send_backs", s.runs_with_send_backs},
          {"grounded_rate", Num(s.grounded_rate)},
          {"mean_cost_usd", Num(s.mean_cost_usd)},
          {"total_cost_usd", s.total_cost_usd},
          {"p50_latency_ms", Num(s.p50_latency_ms)},
          {"p95_latency_ms", Num(s.p95_latency_ms)},
          {"guard_violations", s.guard_violations},
          {"runs_with_guard_violations", s.runs_with_guard_violations},
          {"judge",
           {{"answers_judged", s.judged},
            {"calls", s.judge_calls},
            {"no_votes", s.judge_no_votes},
            {"all_three_agreed", s.judge_agreed},
            {"agreement_rate", Num(s.judge_agreement_rate)}}}};
}

}  // namespace

std::string ArmName(Ablation ablation, bool on) {
  if (ablation == Ablation::kKnowledge) return on ? "knowledge" : "none";
  return on ? "on" : "off";
}

ArmSummary Summarise(const std::vector<TaskRun>& runs, bool on, Ablation ablation) {
  ArmSummary s;
  s.ablation = ablation;
  s.on = on;
  s.knowledge = ablation == Ablation::kKnowledge && on;
  s.self_correction = ablation == Ablation::kKnowledge ? true : on;
  std::vector<double> steps, latency;
  int64_t repaired_runs = 0, grounded = 0;
  std::set<std::string> graded_tasks, seen_tasks, unskipped_tasks;
  for (const TaskRun& r : runs) {
    if (r.arm != on) continue;
    if (ablation == Ablation::kKnowledge) s.self_correction = r.self_correction;
    seen_tasks.insert(r.task);
    switch (r.status) {
      case RunStatus::kPass:
        ++s.passed;
        break;
      case RunStatus::kFail:
        ++s.failed;
        break;
      case RunStatus::kError:
        ++s.errors;
        break;
      case RunStatus::kSkipped:
        ++s.skipped;
        ++s.skipped_by_reason[r.reason];
        break;
    }
    if (r.status != RunStatus::kSkipped) unskipped_tasks.insert(r.task);
    if (r.status == RunStatus::kPass || r.status == RunStatus::kFail) graded_tasks.insert(r.task);
    s.total_cost_usd += r.cost_usd;
    if (r.judge) {
      ++s.judged;
      s.judge_calls += static_cast<int64_t>(r.judge->votes.size());
      s.judge_no_votes += r.judge->no_votes;
      s.judge_agreed += r.judge->agreed ? 1 : 0;
    }
    if (!r.ran) continue;
    ++s.runs;
    steps.push_back(r.metrics.steps);
    latency.push_back(static_cast<double>(r.metrics.wall_ms));
    repaired_runs += r.metrics.repair_attempts > 0 ? 1 : 0;
    s.repair_attempts += r.metrics.repair_attempts;
    s.repair_successes += r.metrics.repair_successes;
    s.send_backs += r.metrics.send_backs;
    s.runs_with_send_backs += r.metrics.send_backs > 0 ? 1 : 0;
    grounded += r.metrics.grounded ? 1 : 0;
    s.guard_violations += r.metrics.guard_violations;
    s.runs_with_guard_violations += r.metrics.guard_violations > 0 ? 1 : 0;
  }
  s.graded = s.passed + s.failed;
  s.tasks_graded = static_cast<int64_t>(graded_tasks.size());
  s.tasks_skipped = static_cast<int64_t>(seen_tasks.size() - unskipped_tasks.size());
  s.success_rate = Ratio(s.passed, s.graded);
  s.success_ci = WilsonInterval(s.passed, s.graded);
  s.median_steps = Median(steps);
  s.repair_rate = Ratio(repaired_runs, s.runs);
  s.repair_success_rate = Ratio(s.repair_successes, s.repair_attempts);
  s.grounded_rate = Ratio(grounded, s.runs);
  // Per task run that cost anything to make: skipped runs cost nothing and are not counted.
  const int64_t costed = s.runs;
  s.mean_cost_usd = costed > 0 ? s.total_cost_usd / static_cast<double>(costed)
                               : std::numeric_limits<double>::quiet_NaN();
  s.p50_latency_ms = Percentile(latency, 50);
  s.p95_latency_ms = Percentile(latency, 95);
  s.judge_agreement_rate = Ratio(s.judge_agreed, s.judged);
  return s;
}

Paired ComparePaired(const std::vector<TaskRun>& runs) {
  Paired p;
  auto graded = [](const TaskRun& r) {
    return r.status == RunStatus::kPass || r.status == RunStatus::kFail;
  };
  for (const TaskRun& on : runs) {
    if (!on.arm || !graded(on)) continue;
    for (const TaskRun& off : runs) {
      if (off.arm || off.task != on.task || off.sample != on.sample) continue;
      if (!graded(off)) break;
      ++p.pairs;
      const bool a = on.status == RunStatus::kPass, b = off.status == RunStatus::kPass;
      if (a && b) ++p.both_pass;
      if (!a && !b) ++p.both_fail;
      if (a && !b) ++p.b;
      if (!a && b) ++p.c;
      break;
    }
  }
  p.p_value = McNemarExactP(p.b, p.c);
  return p;
}

json ResultsJson(const BenchResult& r) {
  json runs = json::array();
  std::set<std::string> engines;
  for (const TaskRun& run : r.runs) {
    runs.push_back(ToJson(run, r.ablation));
    if (!run.engine.empty()) engines.insert(run.engine);
  }
  // Which engines served the runs, so a PostgreSQL figure is never read as a SQLite one.
  json server = nullptr;
  if (r.on_server) {
    server = {{"engine", r.server_engine},
              {"replaces", kServerStandIn},
              {"server", r.server.empty() ? json(nullptr) : json(r.server)}};
  }
  json arms = json::array();
  for (const ArmSummary& s : r.arms) arms.push_back(ToJson(s));
  json out = {{"format", "quarry-bench-results"},
              {"version", 1},
              {"suite", "tasks"},
              {"date", r.date},
              {"mode", r.mode},
              {"source", r.source},
              {"label", r.source == "scripted" ? json(kScriptedLabel) : json(nullptr)},
              {"model", r.model},
              {"provider", r.provider},
              {"judge_model", r.judge_model},
              {"runs_dir", r.runs_dir.string()},
              {"samples", r.samples},
              {"jobs", r.jobs},
              {"max_cost_usd", r.max_cost_usd ? json(*r.max_cost_usd) : json(nullptr)},
              {"tags", r.tags},
              {"limit", r.limit},
              {"tasks_selected", r.tasks_selected},
              {"engines", engines},
              {"postgres", r.server_engine == "postgresql" ? server : json(nullptr)},
              {"mysql", r.server_engine == "mysql" ? server : json(nullptr)},
              {"budget_stopped", r.budget_stopped},
              {"interrupted", r.interrupted},
              {"total_cost_usd", r.total_cost_usd},
              {"ablation", r.ablation == Ablation::kKnowledge ? "knowledge" : "self_correction"},
              {"knowledge",
               r.ablation == Ablation::kKnowledge ? json(r.knowledge.string()) : json(nullptr)},
              {"arms", arms},
              {"mcnemar", nullptr},
              {"runs", runs}};
  if (r.paired) {
    out["mcnemar"] = {{"pairs", r.paired->pairs},         {"both_pass", r.paired->both_pass},
                      {"both_fail", r.paired->both_fail}, {"b_on_only", r.paired->b},
                      {"c_off_only", r.paired->c},        {"p_value", r.paired->p_value}};
  }
  return out;
}

}  // namespace quarry::bench
