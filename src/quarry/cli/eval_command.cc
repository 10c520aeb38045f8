// `quarry eval spider|bird`: execution accuracy on a text-to-SQL benchmark in its official
// layout (bench/eval.h does the work): flags, the model client per question (live, recorded
// turns, or none with --gold), progress on stderr, the summary on stdout.
#include <CLI/CLI.hpp>

#include "quarry/cli/cli_options.h"
#include "quarry/common/text.h"
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>

#include "quarry/bench/eval.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/cli/run_question.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string Stamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

void AddBenchmarkFlags(CLI::App* cmd, EvalCommandOptions& o) {
  cmd->add_option("--dir", o.dir, "The benchmark's folder, in its official layout")->required();
  cmd->add_option("--split", o.split, "Which questions: <split>.json (default dev)")
      ->default_val("dev");
  cmd->add_option("--n", o.n, "Evaluate this many questions, sampled by --seed (default: all)")
      ->check(CLI::Range(size_t{0}, size_t{1000000}));
  cmd->add_option("--seed", o.seed, "The sample's seed (default 0)");
  cmd->add_option("--tag", o.tag, "Names the results folder (default: the UTC time)");
  cmd->add_flag("--gold", o.gold,
                "Take the gold SQL as the prediction, with no model: the harness's own test "
                "(it must score 100%)");
  cmd->add_option("--out", o.out,
                  "The results folder (default results/eval/<benchmark>-<split>-<tag>)");
  cmd->add_option("--rules", o.rules,
                  "test-suite (multisets, ORDER BY, column permutations) or bird (set "
                  "equality); default: spider test-suite, bird bird")
      ->check(CLI::IsMember({"test-suite", "bird"}));
  cmd->add_flag("--keep-distinct", o.keep_distinct,
                "test-suite rules: keep DISTINCT (by default it is removed from both queries, "
                "as the test-suite evaluation does)");
  cmd->add_option("--query-timeout-ms", o.query_timeout_ms,
                  "Limit for each gold or predicted query when comparing (default 60000)")
      ->default_val(60000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  cmd->add_option("--max-rows", o.max_rows,
                  "Rows compared at most; a larger result cannot be compared (default 100000)")
      ->default_val(100000)
      ->check(CLI::Range(1, 10000000));
  cmd->add_option("--format", o.format_name, "The summary on stdout: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  cmd->add_option("--knowledge", o.ask.knowledge,
                  "Give each question's run knowledge files: DIR/<db_id>/ when it exists, else "
                  "DIR (default: none)");
  AskOptions& a = o.ask;
  cmd->add_flag("--offline", a.offline,
                "Replay recorded model turns (matched by question and database file name)");
  cmd->add_option("--fixtures", a.fixtures, "Where --offline looks for recorded turns");
  cmd->add_option("--model", a.model, "Model id (else QUARRY_MODEL)");
  cmd->add_option("--base-url", a.base_url, "OpenAI-compatible endpoint (else QUARRY_BASE_URL)");
  cmd->add_option("--provider", a.provider,
                  "openai-compatible, openrouter or anthropic (else QUARRY_PROVIDER)")
      ->check(ProviderFlag());
  cmd->add_option("--profile", a.profile, "The config file's profile (else QUARRY_PROFILE)");
  cmd->add_option("--request-timeout", a.request_timeout, "Seconds to wait for one model reply");
  cmd->add_option("--max-tokens", a.max_tokens, "Output token limit of each model turn");
  cmd->add_flag("--no-stream", a.no_stream,
                "Ask for whole model replies instead of streamed ones (else QUARRY_STREAM)");
  cmd->add_option("--temperature", a.temperature, "Sampling temperature, or \"default\"");
  cmd->add_option("--max-tokens-param", a.max_tokens_param,
                  "auto, max_tokens or max_completion_tokens");
  cmd->add_option("--runs-dir", a.runs_dir,
                  "Where each question's runs/<id>/trace.json goes "
                  "(default: <out>/runs)");
  cmd->add_flag("--no-self-correction", a.no_self_correction,
                "End each run at its first failed tool call (the ablation arm)");
  cmd->add_option("--max-steps", a.config.max_steps, "Model turns per question at most")
      ->default_val(12)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-repairs", a.config.max_repairs, "Repair attempts per question at most")
      ->default_val(6)
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--max-tool-calls", a.config.max_tool_calls, "Tool calls per question at most")
      ->default_val(16)
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--max-cost", a.config.max_cost_usd, "Cost budget per question in USD")
      ->default_val(1.0)
      ->check(UsdAmount());
  cmd->add_option("--timeout-ms", a.config.limits.timeout_ms, "The agent's per-query timeout")
      ->default_val(10000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  cmd->add_option("--schema-budget", a.schema_budget,
                  "Tokens the schema cards may take in the prompt (default 2000)")
      ->check(CLI::Range(int64_t{100}, int64_t{1000000}));
  cmd->add_flag("--no-samples", a.no_samples, "Send no sample values to the model");
}

std::string Percent(const json& v) {
  if (!v.is_number()) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v.get<double>() * 100.0);
  return buf;
}

std::string Number(const json& v, const char* format) {
  if (!v.is_number()) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v.get<double>());
  return buf;
}

void PrintSummary(const json& s) {
  const json& out = s["outcomes"];
  std::cout << s["benchmark"].get<std::string>() << " " << s["split"].get<std::string>() << ", "
            << s["rules"].get<std::string>() << " rules: " << s["note"].get<std::string>() << "\n";
  std::cout << "execution accuracy: " << s["matched"].get<int>() << "/" << s["scored"].get<int>()
            << " = " << Percent(s["accuracy"]) << " (95% Wilson interval "
            << Percent(s["wilson_95"][0]) << " to " << Percent(s["wilson_95"][1]) << ")\n";
  std::cout << "outcomes: " << out["match"] << " match, " << out["mismatch"] << " mismatch, "
            << out["prediction_error"] << " prediction error, " << out["no_prediction"]
            << " no prediction, " << out["harness_error"] << " harness error, " << out["skipped"]
            << " skipped (of " << s["questions"] << " questions";
  if (s["skipped_missing_db"].get<int>() > 0) {
    std::cout << "; " << s["skipped_missing_db"] << " skipped for a missing database";
  }
  std::cout << ")\n";
  if (s.contains("by_difficulty")) {
    for (const auto& [level, f] : s["by_difficulty"].items()) {
      std::cout << "  " << level << ": " << f["matched"] << "/" << f["scored"] << " = "
                << Percent(f["accuracy"]) << "\n";
    }
  }
  if (s["runs"].get<size_t>() > 0) {
    std::cout << "per question: " << Number(s["mean_model_calls"], "%.2f") << " model calls, "
              << Number(s["prompt_tokens_per_question"], "%.0f") << " prompt tokens, "
              << Number(s["completion_tokens_per_question"], "%.0f")
              << " completion tokens (means); latency p50 "
              << Number(s["latency_ms"]["p50"], "%.0f") << " ms, p95 "
              << Number(s["latency_ms"]["p95"], "%.0f") << " ms; total cost $"
              << Number(s["cost_usd_total"], "%.4f") << "\n";
    std::cout << "repairs " << s["repair_successes"] << "/" << s["repair_attempts"]
              << " (succeeded/attempted), send-backs " << s["send_backs"] << " (in "
              << s["runs_with_send_backs"] << " of " << s["runs"] << " runs)\n";
    std::cout << "model: " << TerminalText(s["model"].get<std::string>()) << " via "
              << TerminalText(s["provider"].get<std::string>()) << "\n";
  }
  std::cout << "results: " << TerminalText(s["questions_file"].get<std::string>()) << "\n";
  if (s["runs_dir"].is_string()) {
    std::cout << "traces: " << TerminalText(s["runs_dir"].get<std::string>()) << "\n";
  }
}

void PrintProgress(const json& line, size_t done, size_t total) {
  const std::string outcome = line["outcome"].get<std::string>();
  std::string text = "[" + std::to_string(done) + "/" + std::to_string(total) + "] " +
                     line["db_id"].get<std::string>() + " #" +
                     line["question_id"].get<std::string>() + " " + outcome;
  std::string why = line["error"].get<std::string>();
  if (why.empty()) why = line["reason"].get<std::string>();
  why = why.substr(0, why.find('\n'));
  if (why.size() > 160) why = why.substr(0, Utf8Prefix(why, 157)) + "...";
  if (!why.empty()) text += ": " + why;
  const char* color = outcome == "match" ? "32" : outcome == "harness_error" ? "33" : "31";
  std::cerr << Paint(TerminalText(text), color) << "\n";
}

// `quarry eval compare A B`: the questions scored in both runs, each run's accuracy over
// them, and McNemar's exact test on the pairs where one matched and the other did not.
int RunEvalCompare(const EvalCommandOptions& o) {
  auto c = bench::CompareEvalRuns(o.compare[0], o.compare[1]);
  if (!c) return Report(c.error());
  if (o.format_name == "json") {
    std::cout << bench::ComparisonJson(*c).dump(2) << "\n";
    return kExitOk;
  }
  std::cout << bench::ComparisonText(*c);
  return kExitOk;
}

}  // namespace

CLI::App* AddEvalCommand(CLI::App& app, EvalCommandOptions& o) {
  CLI::App* eval = app.add_subcommand(
      "eval", "Execution accuracy on a text-to-SQL benchmark: quarry eval spider|bird --dir DIR");
  eval->require_subcommand(1);
  CLI::App* spider = eval->add_subcommand(
      "spider", "Spider: DIR holds dev.json, dev_gold.sql, tables.json, database/<db>/<db>.sqlite");
  CLI::App* bird = eval->add_subcommand(
      "bird", "BIRD: DIR holds dev.json (with evidence), dev_databases/<db>/<db>.sqlite");
  o.ask.runs_dir.clear();  // "": <out>/runs, so a run's traces stay with its results
  spider->preparse_callback([&o](size_t) { o.benchmark = "spider"; });
  bird->preparse_callback([&o](size_t) { o.benchmark = "bird"; });
  AddBenchmarkFlags(spider, o);
  AddBenchmarkFlags(bird, o);
  bird->add_option("--evidence", o.evidence,
                   "How each question's evidence reaches the model: hint (after the question, "
                   "as BIRD gives it), knowledge (as a rule of the knowledge section) or none")
      ->check(CLI::IsMember({"hint", "knowledge", "none"}))
      ->default_val("hint");
  CLI::App* compare = eval->add_subcommand(
      "compare",
      "Two eval results folders side by side, paired by question, with McNemar's exact test: "
      "quarry eval compare A B");
  compare->preparse_callback([&o](size_t) { o.benchmark = "compare"; });
  compare->add_option("folders", o.compare, "The two results folders (each holds questions.jsonl)")
      ->required()
      ->expected(2);
  compare->add_option("--format", o.format_name, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  return eval;
}

int RunEvalCommand(const EvalCommandOptions& o) {
  if (o.benchmark == "compare") return RunEvalCompare(o);
  const bool bird = o.benchmark == "bird";
  // Both name a folder under results/eval: no path of their own.
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string&>{"--tag", o.tag}, {"--split", o.split}}) {
    if (value.find('/') != std::string::npos || value.find("..") != std::string::npos ||
        value.find('\0') != std::string::npos) {
      return Report({Error::Code::kUsage,
                     std::string(flag) + " " + value + " must be a plain name (no '/' or '..')"});
    }
  }
  if (o.gold && o.ask.offline) {
    return Report({Error::Code::kUsage, "--gold asks no model: drop --offline"});
  }
  auto dataset = bird ? bench::LoadBird(o.dir, o.split) : bench::LoadSpider(o.dir, o.split);
  if (!dataset) return Report(dataset.error());
  if (dataset->questions.empty()) {
    return Report({Error::Code::kData, o.dir + "/" + o.split + ".json holds no questions"});
  }

  bench::EvalOptions options;
  options.gold_as_prediction = o.gold;
  const std::string tag = o.tag.empty() ? Stamp() : o.tag;
  options.tag = o.tag;
  options.out_dir = !o.out.empty()
                        ? fs::path(o.out)
                        : fs::path("results") / "eval" / (o.benchmark + "-" + o.split + "-" + tag);
  options.runs_dir = o.ask.runs_dir.empty() ? options.out_dir / "runs" : fs::path(o.ask.runs_dir);
  const std::string rules = !o.rules.empty() ? o.rules : bird ? "bird" : "test-suite";
  options.rule = rules == "bird" ? bench::MatchRule::kBirdSet : bench::MatchRule::kTestSuite;
  options.keep_distinct = o.keep_distinct;
  options.exec.timeout_ms = o.query_timeout_ms;
  options.exec.max_rows = o.max_rows;
  options.turns = o.gold ? "none" : o.ask.offline ? "recorded" : "live";
  options.command =
      "quarry eval " + o.benchmark + " --dir " + o.dir + " --split " + o.split +
      (o.n > 0 ? " --n " + std::to_string(o.n) + " --seed " + std::to_string(o.seed) : "") +
      (o.gold ? " --gold" : "") + (o.ask.offline ? " --offline" : "") + " --rules " + rules;
  options.open.fingerprint = false;  // a multi-gigabyte BIRD database would be hashed per open
  options.evidence = o.evidence == "knowledge" ? bench::Evidence::kKnowledge
                     : o.evidence == "none"    ? bench::Evidence::kNone
                                               : bench::Evidence::kHint;
  options.knowledge = o.ask.knowledge;
  if (bird) options.command += " --evidence " + o.evidence;
  if (!o.ask.knowledge.empty()) options.command += " --knowledge " + o.ask.knowledge;

  AskOptions ask = o.ask;
  ask.no_python = true;  // the prediction is SQL: run_python is not offered
  // Only what --knowledge and --evidence give: never the working directory's .quarry/.
  ask.no_knowledge = true;
  if (!o.gold) {
    auto config = BaseConfig(ask);
    if (!config) return Report(config.error());
    options.config = std::move(*config);
    if (!ask.offline) {
      // Fail before the first question when no model is configured.
      AskOptions probe = ask;
      probe.question = "probe";
      auto client = MakeClient(probe);
      if (!client) return Report(client.error());
      options.model = (*client)->model();
    }
  }
  bench::ClientFactory clients =
      [&ask](const std::string& question,
             const std::vector<std::string>& data) -> Result<std::unique_ptr<llm::Client>> {
    AskOptions one = ask;
    one.question = question;
    one.data = data;
    auto client = MakeClient(one);
    if (!client) {
      Error e = client.error();
      e.message = e.message.substr(0, e.message.find('\n'));
      return std::unexpected(e);
    }
    return client;
  };

  const std::vector<size_t> picked = bench::SampleIndices(dataset->questions.size(), o.n, o.seed);
  // A sampled question whose database file is absent is skipped and counted; when every one
  // is, the folder is not the benchmark's and nothing runs.
  std::map<std::string, std::pair<std::string, int>> missing;  // db_id -> expected file, questions
  for (size_t i : picked) {
    const bench::EvalQuestion& q = dataset->questions[i];
    if (!q.db_missing) continue;
    auto& m = missing[q.db_id];
    m.first = q.db_path.string();
    ++m.second;
  }
  int skipped = 0;
  for (const auto& [db, m] : missing) skipped += m.second;
  if (!picked.empty() && skipped == static_cast<int>(picked.size())) {
    return Report({Error::Code::kData, "none of the " + std::to_string(picked.size()) +
                                           " sampled questions has its database (" +
                                           missing.begin()->first + ": expected " +
                                           missing.begin()->second.first +
                                           "): --dir must hold the benchmark's databases"});
  }
  for (const auto& [db, m] : missing) {
    std::cerr << Paint("quarry: eval: database " + TerminalText(db) + " is missing (expected " +
                           TerminalText(m.first) + "): its " + std::to_string(m.second) +
                           " sampled question(s) are skipped and counted (skipped_missing_db)",
                       "33")
              << "\n";
  }
  InterruptScope interrupt;
  options.stop = interrupt.token();
  size_t done = 0;
  options.on_question = [&](const json& line) { PrintProgress(line, ++done, picked.size()); };
  std::cerr << Paint("quarry: eval " + TerminalText(o.benchmark + " " + o.split) + ": " +
                         std::to_string(picked.size()) + " of " +
                         std::to_string(dataset->questions.size()) + " questions, " + rules +
                         " rules" + (o.gold ? ", gold SQL as the prediction" : ""),
                     "2")
            << "\n";
  auto summary = bench::RunEval(*dataset, picked, options, clients);
  if (!summary) return Report(summary.error());
  if (o.format_name == "json") {
    std::cout << JsonText(summary->json) << "\n";
  } else {
    PrintSummary(summary->json);
  }
  if (summary->interrupted) return kExitInterrupted;
  // The self-test passes only when every gold query ran and matched itself; a gold query the
  // harness could not run is its failure, not a smaller denominator.
  // A question skipped for a missing database is one the self-test did not check: a model run
  // skips and counts it; the self-test fails on it, as the README says.
  if (o.gold && summary->skipped_missing_db > 0) {
    return Report({Error::Code::kData,
                   "--gold: " + std::to_string(summary->skipped_missing_db) +
                       " questions were skipped for a missing database file (see stderr): the "
                       "self-test needs every gold query to run and match"});
  }
  if (o.gold && (summary->harness_errors > 0 || summary->matched != summary->scored)) {
    return Report(
        {Error::Code::kData, "--gold: " + std::to_string(summary->harness_errors) + " of " +
                                 std::to_string(summary->questions) +
                                 " gold queries could not be run here (see questions.jsonl): the "
                                 "self-test needs every one to run and match"});
  }
  return kExitOk;
}

}  // namespace quarry::cli
