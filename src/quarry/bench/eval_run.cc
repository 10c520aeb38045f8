// One `quarry eval` run (eval.h, RunEval): for each picked question, the gold SQL executed
// first (a failure there is the harness's, and no model is asked), then the prediction (the
// gold itself with --gold, else the SQL of the agent's answer), both compared on the
// question's database(s); one JSON line per question as it ends, then the summary.
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <set>

#include "quarry/bench/eval.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The last run_sql that executed (with `empty_counts`, an empty result too); "" for none.
std::string LastExecutedSql(const trace::Trace& t, bool empty_counts) {
  for (auto s = t.steps.rbegin(); s != t.steps.rend(); ++s) {
    if (s->kind != trace::StepKind::kTool || s->tool != "run_sql" || !s->detail.is_object())
      continue;
    if (s->status != trace::StepStatus::kOk &&
        !(empty_counts && s->failure_class == "empty_result"))
      continue;
    const auto it = s->detail.find("sql");
    if (it != s->detail.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// The prediction of a run: the model's final answering query, the last run_sql that executed
// (an empty result included) before its last final_answer call, whether the gate accepted the
// answer or not. Not the last query whose result grounds a cited value: models explore first,
// and live Spider runs were scored on an exploratory query that way (2 of 30). A run with no
// final_answer (a clarification, a budget stop) has none.
std::string PredictionOf(const trace::Trace& t) {
  auto last_answer = t.steps.rend();
  for (auto s = t.steps.rbegin(); s != t.steps.rend(); ++s) {
    if (s->kind == trace::StepKind::kTool && s->tool == "final_answer") {
      last_answer = s;
      break;
    }
  }
  if (last_answer == t.steps.rend()) return "";
  for (auto s = last_answer; s != t.steps.rend(); ++s) {
    if (s->kind != trace::StepKind::kTool || s->tool != "run_sql" || !s->detail.is_object())
      continue;
    if (s->status != trace::StepStatus::kOk && s->failure_class != "empty_result") continue;
    const auto it = s->detail.find("sql");
    if (it != s->detail.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// Engines by database path: the agent's (profiled, for its schema cards) also serves the
// comparison; the extra test-suite databases are opened without profiling.
class Engines {
 public:
  explicit Engines(engine::OpenOptions options) : options_(std::move(options)) {}
  Result<engine::Engine*> Get(const fs::path& path, bool for_agent) {
    auto it = engines_.find(path);
    if (it == engines_.end()) {
      engine::OpenOptions o = options_;
      if (!for_agent) o.profile = false, o.fingerprint = false;
      auto opened = engine::Open({path}, o);
      if (!opened) return std::unexpected(opened.error());
      it = engines_.emplace(path, std::move(*opened)).first;
    }
    return it->second.get();
  }

 private:
  engine::OpenOptions options_;
  std::map<fs::path, std::unique_ptr<engine::Engine>> engines_;
};

std::string PreparedSql(const std::string& sql, const EvalOptions& o) {
  if (o.rule != MatchRule::kTestSuite) return sql;
  std::string out = JoinSpacedOperators(sql);
  return o.keep_distinct ? out : RemoveDistinct(out);
}

struct Tally {
  std::map<std::string, int> outcomes;
  std::vector<double> model_calls, prompt_tokens, completion_tokens, latency_ms;
  double cost_usd = 0.0;
  int repair_attempts = 0, repair_successes = 0, send_backs = 0, runs_with_send_backs = 0;
  std::map<std::string, std::pair<int, int>> by_difficulty;  // scored, matched
  std::string model, provider;
  // Scored questions whose answer the gate accepted, and those it refused.
  int grounded_scored = 0, grounded_matched = 0, refused_scored = 0, refused_matched = 0;
};

json Fraction(int matched, int scored) {
  const Interval ci = WilsonInterval(matched, scored);
  return {{"scored", scored},
          {"matched", matched},
          {"accuracy", scored > 0 ? json(static_cast<double>(matched) / scored) : json(nullptr)},
          {"wilson_95", {ci.low, ci.high}}};
}

json MeanOrNull(const std::vector<double>& v) {
  const double m = Mean(v);
  return std::isnan(m) ? json(nullptr) : json(m);
}

// The prediction on every database of the comparison: "" when all match, else why not.
// `error` is set when the prediction could not be executed.
Comparison ComparePrediction(const std::vector<Denotation>& gold, const std::string& pred_sql,
                             const std::vector<engine::Engine*>& engines,
                             const std::vector<fs::path>& paths, const CompareOptions& co,
                             const ExecLimits& limits, std::string& error, int64_t& pred_rows) {
  for (size_t d = 0; d < engines.size(); ++d) {
    auto pred = Execute(*engines[d], pred_sql, limits);
    if (!pred) {
      error = pred.error().message;
      return {false, "the predicted SQL failed"};
    }
    if (d == 0) pred_rows = static_cast<int64_t>(pred->rows.size());
    Comparison c = CompareDenotations(gold[d], *pred, co);
    if (!c.match) {
      if (engines.size() > 1) c.reason += " (on " + paths[d].filename().string() + ")";
      return c;
    }
  }
  return {true, ""};
}

}  // namespace

Result<EvalSummary> RunEval(const EvalDataset& dataset, const std::vector<size_t>& picked,
                            const EvalOptions& o, const ClientFactory& clients) {
  std::error_code ec;
  const fs::path lines_path = o.out_dir / "questions.jsonl";
  const fs::path summary_path = o.out_dir / "summary.json";
  if (fs::exists(lines_path, ec) || fs::exists(summary_path, ec)) {
    return Fail(Error::Code::kUsage, o.out_dir.string() +
                                         " already holds results: pass another --tag or --out, "
                                         "or remove it");
  }
  // Knowledge that does not load stops the run before any question, not in the middle.
  std::set<std::string> checked;
  for (size_t pick : picked) {
    if (o.knowledge.empty() || pick >= dataset.questions.size()) continue;
    const EvalQuestion& q = dataset.questions[pick];
    if (!checked.insert(q.db_id).second) continue;
    if (auto k = QuestionKnowledge(o.knowledge, q, Evidence::kNone); !k) {
      return Fail(Error::Code::kUsage, "--knowledge: " + k.error().message);
    }
  }
  fs::create_directories(o.out_dir, ec);
  if (ec) {
    return Fail(Error::Code::kInternal,
                "cannot create " + o.out_dir.string() + ": " + ec.message());
  }
  std::ofstream lines(lines_path, std::ios::binary | std::ios::trunc);
  if (!lines) return Fail(Error::Code::kInternal, "cannot write " + lines_path.string());

  Engines engines(o.open);
  // Every eval run is told its last query is compared with a reference (prompts/eval.md).
  agent::Config config = o.config;
  config.prompt = agent::PromptMode::kEval;
  Tally tally;
  EvalSummary summary;
  std::set<std::string> missing_dbs;
  for (size_t pick : picked) {
    if (pick >= dataset.questions.size()) continue;
    if (o.stop.stop_requested()) {
      summary.interrupted = true;
      break;
    }
    const EvalQuestion& q = dataset.questions[pick];
    ++summary.questions;
    json line = {{"index", q.index},
                 {"question_id", q.question_id},
                 {"db_id", q.db_id},
                 {"question", q.question}};
    if (dataset.benchmark == Benchmark::kBird) {
      line["evidence"] = q.evidence;
      line["difficulty"] = q.difficulty;
    }
    line["gold_sql"] = q.gold_sql;
    std::string outcome, error, reason;
    std::string pred_sql;
    const std::string gold_sql = PreparedSql(q.gold_sql, o);
    CompareOptions co;
    co.rule = o.rule;
    co.order_matters = o.rule == MatchRule::kTestSuite && HasTopLevelOrderBy(gold_sql);
    co.tolerance = o.tolerance;
    line["order_matters"] = co.order_matters;
    if (q.db_missing) {
      outcome = "skipped";
      error = "database " + q.db_id + " is missing: expected " + q.db_path.string();
      ++summary.skipped_missing_db;
      missing_dbs.insert(q.db_id);
    }

    // The databases compared on: every test-suite file with the test-suite rule, else the one.
    std::vector<fs::path> paths =
        o.rule == MatchRule::kTestSuite ? q.suite_paths : std::vector<fs::path>{q.db_path};
    if (paths.empty()) paths = {q.db_path};
    std::vector<engine::Engine*> dbs;
    std::vector<Denotation> gold;
    for (size_t d = 0; d < paths.size() && outcome.empty() && error.empty(); ++d) {
      auto e = engines.Get(paths[d], d == 0);
      if (!e) {
        error = "cannot open " + paths[d].string() + ": " + e.error().message;
        break;
      }
      dbs.push_back(*e);
      auto g = Execute(**e, gold_sql, o.exec);
      if (!g) {
        error = "the gold SQL failed on " + paths[d].filename().string() + ": " + g.error().message;
        break;
      }
      if (d == 0) line["gold_rows"] = g->rows.size();
      gold.push_back(std::move(*g));
    }
    if (!error.empty() && outcome.empty()) outcome = "harness_error";

    std::optional<RunRecord> run;
    if (outcome.empty() && o.gold_as_prediction) {
      pred_sql = q.gold_sql;
      line["prediction_source"] = "gold";
    } else if (outcome.empty()) {
      const std::string asked = o.evidence == Evidence::kHint ? PromptQuestion(q) : q.question;
      auto client = clients(asked, {q.db_path.string()});
      auto known = QuestionKnowledge(o.knowledge, q, o.evidence);
      if (!known) return std::unexpected(known.error());
      if (!client) {
        outcome = "skipped";
        error = client.error().message;
      } else {
        agent::RunInput input;
        input.question = asked;
        input.stop = o.stop;
        agent::Config with = config;
        with.knowledge = *known;
        auto r = RunAgent(std::move(input), *dbs[0], **client, with, o.runs_dir);
        if (!r) return std::unexpected(r.error());
        run = std::move(*r);
        pred_sql = PredictionOf(run->trace);
        line["prediction_source"] = pred_sql.empty() ? "none" : "answer";
        line["grounded"] =
            run->trace.stop_reason == trace::StopReason::kAnswered && run->trace.grounded;
        if (run->trace.stop_reason == trace::StopReason::kInterrupted) {
          outcome = "skipped";
          error = "interrupted";
          summary.interrupted = true;
        } else if (pred_sql.empty()) {
          outcome = "no_prediction";
          error = "the run gave no SQL answer (stop reason " +
                  std::string(trace::StopReasonName(run->trace.stop_reason)) + ")";
        }
      }
    }
    if (outcome.empty()) {
      int64_t pred_rows = -1;
      const Comparison c = ComparePrediction(gold, PreparedSql(pred_sql, o), dbs, paths, co, o.exec,
                                             error, pred_rows);
      if (pred_rows >= 0) line["predicted_rows"] = pred_rows;
      outcome = c.match ? "match" : error.empty() ? "mismatch" : "prediction_error";
      reason = c.reason;
    }

    line["predicted_sql"] = pred_sql;
    line["match"] = outcome == "match";
    line["outcome"] = outcome;
    line["reason"] = reason;
    line["error"] = error;
    if (run) {
      const trace::Trace& t = run->trace;
      const RunMetrics m = MetricsOf(t);
      line["run_id"] = t.id;
      line["trace"] = run->trace_path.string();
      line["stop_reason"] = t.stop_reason;
      if (pred_sql.empty()) line["last_sql"] = LastExecutedSql(t, true);
      line["model_calls"] = m.model_calls;
      line["tool_calls"] = m.tool_calls;
      line["repair_attempts"] = m.repair_attempts;
      line["repair_successes"] = m.repair_successes;
      line["send_backs"] = m.send_backs;
      line["prompt_tokens"] = m.prompt_tokens;
      line["completion_tokens"] = m.completion_tokens;
      line["cost_usd"] = m.cost_usd;
      line["latency_ms"] = m.wall_ms;
      tally.model_calls.push_back(m.model_calls);
      tally.prompt_tokens.push_back(static_cast<double>(m.prompt_tokens));
      tally.completion_tokens.push_back(static_cast<double>(m.completion_tokens));
      tally.latency_ms.push_back(static_cast<double>(m.wall_ms));
      tally.cost_usd += m.cost_usd;
      tally.repair_attempts += m.repair_attempts;
      tally.repair_successes += m.repair_successes;
      tally.send_backs += m.send_backs;
      tally.runs_with_send_backs += m.send_backs > 0 ? 1 : 0;
      if (tally.model.empty()) tally.model = t.model, tally.provider = t.provider;
    } else {
      line["run_id"] = nullptr;
    }
    ++tally.outcomes[outcome];
    // Execution accuracy over the gate's accepted answers apart, and the matches it refused.
    if (line.contains("grounded") &&
        (outcome == "match" || outcome == "mismatch" || outcome == "prediction_error")) {
      const bool grounded = line["grounded"].get<bool>();
      ++(grounded ? tally.grounded_scored : tally.refused_scored);
      if (outcome == "match") ++(grounded ? tally.grounded_matched : tally.refused_matched);
    }
    if (outcome != "harness_error" && outcome != "skipped" && !q.difficulty.empty()) {
      auto& d = tally.by_difficulty[q.difficulty];
      ++d.first;
      if (outcome == "match") ++d.second;
    }
    lines << Dump(line) << "\n";
    lines.flush();
    if (o.on_question) o.on_question(line);
    if (summary.interrupted) break;
  }
  if (!lines) return Fail(Error::Code::kInternal, "cannot write " + lines_path.string());
  lines.close();

  auto count = [&](const char* k) { return tally.outcomes.count(k) ? tally.outcomes[k] : 0; };
  summary.matched = count("match");
  summary.mismatched = count("mismatch");
  summary.prediction_errors = count("prediction_error");
  summary.no_prediction = count("no_prediction");
  summary.harness_errors = count("harness_error");
  summary.skipped = count("skipped");
  summary.scored = summary.questions - summary.harness_errors - summary.skipped;

  json s = {{"benchmark", BenchmarkName(dataset.benchmark)},
            {"split", dataset.split},
            {"dir", dataset.dir.string()},
            {"tag", o.tag},
            {"created_at", trace::UtcTimestamp()},
            {"command", o.command},
            {"prediction", o.gold_as_prediction ? "gold" : "agent"},
            {"turns", o.turns},
            {"model", o.model.empty() ? tally.model : o.model},
            {"provider", tally.provider},
            {"rules", MatchRuleName(o.rule)},
            {"evidence", dataset.benchmark == Benchmark::kBird ? json(EvidenceName(o.evidence))
                                                               : json(nullptr)},
            {"knowledge", o.knowledge.empty() ? json(nullptr) : json(o.knowledge.string())},
            {"keep_distinct", o.rule == MatchRule::kTestSuite ? json(o.keep_distinct) : json(true)},
            {"tolerance", {{"relative", o.tolerance.relative}, {"absolute", o.tolerance.absolute}}},
            {"exec", {{"timeout_ms", o.exec.timeout_ms}, {"max_rows", o.exec.max_rows}}},
            {"questions", summary.questions}};
  const json overall = Fraction(summary.matched, summary.scored);
  for (const auto& [k, v] : overall.items()) s[k] = v;
  s["outcomes"] = {{"match", summary.matched},
                   {"mismatch", summary.mismatched},
                   {"prediction_error", summary.prediction_errors},
                   {"no_prediction", summary.no_prediction},
                   {"harness_error", summary.harness_errors},
                   {"skipped", summary.skipped}};
  s["skipped_missing_db"] = summary.skipped_missing_db;
  s["missing_databases"] = missing_dbs;
  if (!o.gold_as_prediction) {
    s["grounded_answers"] = Fraction(tally.grounded_matched, tally.grounded_scored);
    s["matched_but_refused"] = tally.refused_matched;
    s["refused_with_prediction"] = tally.refused_scored;
  }
  s["runs"] = tally.model_calls.size();
  s["mean_model_calls"] = MeanOrNull(tally.model_calls);
  s["prompt_tokens_per_question"] = MeanOrNull(tally.prompt_tokens);
  s["completion_tokens_per_question"] = MeanOrNull(tally.completion_tokens);
  s["cost_usd_total"] = tally.cost_usd;
  s["repair_attempts"] = tally.repair_attempts;
  s["repair_successes"] = tally.repair_successes;
  s["send_backs"] = tally.send_backs;
  s["runs_with_send_backs"] = tally.runs_with_send_backs;
  const double p50 = Percentile(tally.latency_ms, 50), p95 = Percentile(tally.latency_ms, 95);
  s["latency_ms"] = {{"p50", std::isnan(p50) ? json(nullptr) : json(p50)},
                     {"p95", std::isnan(p95) ? json(nullptr) : json(p95)}};
  if (!tally.by_difficulty.empty()) {
    json by = json::object();
    for (const auto& [level, sm] : tally.by_difficulty) by[level] = Fraction(sm.second, sm.first);
    s["by_difficulty"] = by;
  }
  s["interrupted"] = summary.interrupted;
  s["note"] = o.gold_as_prediction
                  ? "--gold: the gold SQL as the prediction, no model; the harness's own test"
              : o.turns == "recorded"
                  ? "recorded model turns (fixtures): a harness run, not a measure of any model"
                  : "live model turns";
  s["questions_file"] = lines_path.string();
  s["runs_dir"] = o.gold_as_prediction ? json(nullptr) : json(o.runs_dir.string());
  summary.json = s;

  const fs::path tmp = o.out_dir / "summary.json.tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << s.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    if (!out) return Fail(Error::Code::kInternal, "cannot write " + tmp.string());
  }
  fs::rename(tmp, summary_path, ec);
  if (ec) return Fail(Error::Code::kInternal, "cannot write " + summary_path.string());
  return summary;
}

}  // namespace quarry::bench
