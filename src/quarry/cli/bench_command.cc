// `quarry bench`: the task suite (bench/suite.h) run in the self-correction arms, live or on
// the fixtures' scripted turns, its results written to results/ (bench_results.json for the
// latest run, offline/ and live/ for the latest of each, RESULTS.md from both); and
// `quarry bench --render-site`, which puts a results file's tables into site/index.html.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>

#include <CLI/CLI.hpp>

#include "quarry/bench/suite.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/cli_options.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/installation.h"
#include "quarry/cli/interrupt.h"
#include "quarry/cli/run_question.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/common/read_file.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// The suite: --tasks, else tasks/ in the working directory, else the installed or source tree's
// (ShareDir).
fs::path TasksDir(const BenchCmdOptions& o) {
  if (!o.tasks.empty()) return o.tasks;
  std::error_code ec;
  if (fs::is_regular_file(fs::path("tasks") / "suite.json", ec)) return "tasks";
  return ShareDir() / "tasks";
}

Result<std::vector<bool>> Arms(const BenchCmdOptions& o) {
  std::vector<bool> arms;
  std::string rest = o.arms;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string arm = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    if (arm != "on" && arm != "off") {
      return Fail(
          Error::Code::kUsage,
          "--arms takes on, off or on,off (self-correction on / off); found \"" + arm + "\"");
    }
    const bool on = arm == "on";
    if (std::find(arms.begin(), arms.end(), on) == arms.end()) arms.push_back(on);
  }
  if (arms.empty()) return Fail(Error::Code::kUsage, "--arms names no arm: pass on, off or on,off");
  if (o.no_self_correction) {
    if (o.arms_option && o.arms_option->count() > 0 && arms != std::vector<bool>{false}) {
      return Fail(Error::Code::kUsage,
                  "--no-self-correction runs the off arm only; it contradicts --arms " + o.arms);
    }
    return std::vector<bool>{false};
  }
  return arms;
}

std::vector<std::string> SplitTags(const std::string& tags) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= tags.size()) {
    const size_t comma = tags.find(',', from);
    std::string tag =
        tags.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (!tag.empty()) out.push_back(tag);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

// A live client per run: no "waiting" line (parallel runs would fight over it), resends said
// on stderr.
Result<std::unique_ptr<llm::Client>> BenchClient(const llm::Settings& flags) {
  auto config = LiveConfig(flags);
  if (!config) return std::unexpected(config.error());
  config->on_retry = [](const std::string& line) {
    std::cerr << Paint("quarry: model: " + TerminalText(line), "33") << "\n";
  };
  return llm::MakeLiveClient(std::move(*config));
}

std::optional<std::string> ReadText(const fs::path& path) {
  Result<std::string> text = ReadFileText(path, "");
  if (!text) return std::nullopt;
  return std::move(*text);
}

// A results file kept from an earlier run, when it is one; else nothing (said on stderr).
std::optional<json> ReadResults(const fs::path& path) {
  auto text = ReadText(path);
  if (!text) return std::nullopt;
  json doc = ParseJson(*text);
  if (doc.is_discarded() || !doc.is_object() ||
      JsonString(doc, "format") != "quarry-bench-results") {
    std::cerr << "quarry: warning: " << TerminalText(path.string())
              << " is not a bench results file; RESULTS.md leaves it out\n";
    return std::nullopt;
  }
  return doc;
}

std::string Fixed(const char* format, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void PrintSummary(const bench::BenchResult& r, const fs::path& out) {
  std::cout << "quarry bench (" << r.mode << ", model " << TerminalText(r.model);
  if (r.on_server) {
    const bool pg = r.server_engine == "postgresql";
    std::cout << (pg ? ", on PostgreSQL: " : ", on MySQL: ") << bench::kServerStandIn
              << " served by "
              << TerminalText(r.server.empty()
                                  ? (pg ? "the --postgres server" : "the --mysql server")
                                  : r.server);
  }
  std::cout << ")";
  if (r.source == "scripted") std::cout << ": " << bench::kScriptedLabel;
  std::cout << "\n";
  for (const bench::ArmSummary& a : r.arms) {
    const std::string arm =
        r.ablation == bench::Ablation::kKnowledge
            ? (a.knowledge ? "knowledge files" : "no knowledge   ")
            : (a.self_correction ? "self-correction on " : "self-correction off");
    std::cout << "  " << arm << "  success " << a.passed << "/" << a.graded << " ("
              << Fixed("%.1f%%", a.success_rate * 100) << ", 95% CI "
              << Fixed("%.1f", a.success_ci.low * 100) << "-"
              << Fixed("%.1f%%", a.success_ci.high * 100) << ")  skipped " << a.skipped
              << "  errors " << a.errors << "  repairs " << a.repair_successes << "/"
              << a.repair_attempts << "  send-backs " << a.send_backs << "  median steps "
              << Fixed("%.1f", a.median_steps) << "  cost $" << Fixed("%.4f", a.total_cost_usd)
              << "\n";
  }
  if (r.paired) {
    const bool k = r.ablation == bench::Ablation::kKnowledge;
    std::cout << "  McNemar: b (" << (k ? "knowledge" : "on") << " only) " << r.paired->b << ", c ("
              << (k ? "none" : "off") << " only) " << r.paired->c
              << ", p = " << Fixed("%.4g", r.paired->p_value) << " over " << r.paired->pairs
              << " pairs\n";
  }
  if (r.budget_stopped) std::cout << "  stopped at --max-cost; the rest were skipped\n";
  std::cout << "  total cost $" << Fixed("%.4f", r.total_cost_usd) << "; results in "
            << TerminalText((out / "bench_results.json").string()) << " and "
            << TerminalText((out / "RESULTS.md").string()) << "; traces under "
            << TerminalText(r.runs_dir.string()) << "\n";
}

int RenderSite(const BenchCmdOptions& o) {
  const fs::path results_path =
      o.results.empty() ? fs::path(o.out) / "bench_results.json" : fs::path(o.results);
  auto text = ReadText(results_path);
  if (!text) {
    return Report({Error::Code::kUsage, "no results file at " + results_path.string() +
                                            "; run quarry bench first or pass --results FILE"});
  }
  std::string problem = "not valid JSON";
  const json results = ParseJson(*text, &problem);
  if (results.is_discarded() || !results.is_object() ||
      JsonString(results, "format") != "quarry-bench-results") {
    return Report({Error::Code::kData, results_path.string() + " is not a bench results file (" +
                                           (results.is_discarded() ? problem : "wrong format") +
                                           ")"});
  }
  const fs::path site = o.site;
  auto page = ReadText(site);
  if (!page) {
    return Report({Error::Code::kUsage, "cannot read " + site.string() + "; pass --site FILE"});
  }
  auto replaced = bench::ReplaceMarkedBlock(*page, bench::RenderSiteBlock(results));
  if (!replaced) {
    return Report({replaced.error().code, site.string() + ": " + replaced.error().message});
  }
  if (auto w = bench::WriteFileAtomically(site, *replaced); !w) return Report(w.error());
  std::cout << "quarry: wrote the bench tables of " << TerminalText(results_path.string())
            << " into " << TerminalText(site.string()) << "\n";
  return kExitOk;
}

}  // namespace

CLI::App* AddBenchCommand(CLI::App& app, BenchCmdOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Run the task suite in the self-correction arms (or, with --knowledge, with and without "
      "knowledge files) and write results/: quarry bench [--offline] [--arms on,off] "
      "[--samples K]");
  cmd->add_option("--postgres", o.postgres,
                  "Run the tasks whose data is data/chinook.sqlite on this PostgreSQL server "
                  "instead (postgresql://USER@HOST:PORT/DB or service=NAME, Chinook loaded from "
                  "data/chinook_postgresql.sql), graded with the same truth; --offline replays "
                  "tasks/fixtures/postgres/. Results go to <--out>/postgresql/");
  cmd->add_option("--mysql", o.mysql,
                  "Run the tasks whose data is data/chinook.sqlite on this MariaDB or MySQL "
                  "server instead (mysql://USER@HOST:PORT/DB, Chinook loaded from "
                  "data/chinook_mysql.sql), graded with the same truth; --offline replays "
                  "tasks/fixtures/mysql/. Results go to <--out>/mysql/");
  cmd->add_option("--tasks", o.tasks,
                  "The suite's folder (suite.json, truth.json, fixtures/); default tasks/ here, "
                  "else the bundled one. Task data paths are relative to its parent folder");
  cmd->add_flag("--offline", o.ask.offline,
                "Replay each task's fixture (scripted turns; tools still execute); tasks "
                "without one are skipped and counted");
  o.arms_option = cmd->add_option("--arms", o.arms, "on, off or on,off (self-correction)")
                      ->default_val("on,off");
  cmd->add_flag("--no-self-correction", o.no_self_correction, "Run the off arm only");
  cmd->add_option("--knowledge", o.ask.knowledge,
                  "Compare knowledge files instead of self-correction: each task run with "
                  "DIR/<its data file's stem>/ (or DIR) and without; results go to "
                  "<--out>/knowledge/");
  cmd->add_option("--samples", o.samples, "Runs of each task per arm")
      ->default_val(1)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--limit", o.limit, "The first N selected tasks")->check(CLI::Range(1, 1000000));
  cmd->add_option("--tags", o.tags, "Tasks with any of these tags (comma-separated)");
  cmd->add_flag("-v,--verbose", o.verbose, "One line per task run on stderr");
  cmd->add_option("--max-cost", o.max_cost_usd,
                  "USD for the whole bench, judge calls included: no run starts once the spent "
                  "cost plus its bound (--max-cost-per-run) would pass it")
      ->check(UsdAmount());
  cmd->add_option("--max-cost-per-run", o.ask.config.max_cost_usd, "Cost budget of one run, USD")
      ->default_val(1.0)
      ->check(UsdAmount());
  // Past a few per core, runs only wait on each other, and data loads hit their timeouts.
  cmd->add_option("--jobs", o.jobs,
                  "Task runs at once (1 to 16), each with its own engine and client")
      ->default_val(1)
      ->check(CLI::Range(1, 16));
  cmd->add_option("--out", o.out, "Where the results files go")->default_val("results");
  cmd->add_option("--runs-dir", o.runs_dir,
                  "The bench's runs folder: each run's trace in <dir>/<run id>/ (default "
                  "runs/bench-<id>)");
  cmd->add_option("--model", o.ask.model, "Model id (else QUARRY_MODEL)");
  cmd->add_option("--judge-model", o.judge_model, "The judge's model id (default: --model's)");
  cmd->add_option("--base-url", o.ask.base_url,
                  "OpenAI-compatible endpoint (else QUARRY_BASE_URL; from OPENROUTER_API_KEY, "
                  "ANTHROPIC_API_KEY or OPENAI_API_KEY when set)");
  cmd->add_option("--provider", o.ask.provider,
                  "openai-compatible, openrouter or anthropic (else QUARRY_PROVIDER; chosen "
                  "from the base URL and which key is set)")
      ->check(ProviderFlag());
  cmd->add_option("--profile", o.ask.profile, "The config file's profile (else QUARRY_PROFILE)");
  cmd->add_option("--request-timeout", o.ask.request_timeout,
                  "Seconds to wait for one model reply (else QUARRY_REQUEST_TIMEOUT)");
  cmd->add_option("--max-tokens", o.ask.max_tokens, "Output token limit of each model turn");
  cmd->add_flag("--no-stream", o.ask.no_stream,
                "Ask for whole model replies instead of streamed ones (else QUARRY_STREAM)");
  cmd->add_option("--temperature", o.ask.temperature, "Sampling temperature, or \"default\"");
  cmd->add_option("--max-tokens-param", o.ask.max_tokens_param,
                  "auto, max_tokens or max_completion_tokens");
  cmd->add_option("--max-steps", o.ask.config.max_steps, "Model turns at most per run")
      ->default_val(12)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-repairs", o.ask.config.max_repairs, "Repair attempts at most per run")
      ->default_val(6)
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--max-tool-calls", o.ask.config.max_tool_calls, "Tool calls per run at most")
      ->default_val(16)
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--timeout-ms", o.ask.config.limits.timeout_ms, "Per-query timeout")
      ->default_val(10000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  cmd->add_flag("--no-python", o.ask.no_python, "Do not offer run_python to the model");
  cmd->add_flag("--allow-unisolated", o.ask.allow_unisolated,
                "Where bubblewrap cannot isolate Python, run it with rlimits, seccomp and the "
                "guard only");
  cmd->add_flag("--no-cache", o.ask.load.no_cache, "Neither read nor fill the parse cache");
  cmd->add_option("--schema-budget", o.ask.schema_budget, "Schema tokens in the prompt")
      ->check(CLI::Range(int64_t{100}, int64_t{1000000}));
  cmd->add_flag("--no-samples", o.ask.no_samples, "Send types and statistics only");
  cmd->add_flag("--render-site", o.render_site,
                "Write a results file's tables into the <!-- bench:begin/end --> block of the "
                "site page, and run nothing");
  cmd->add_option("--results", o.results,
                  "--render-site: the results file (default <--out>/bench_results.json)");
  cmd->add_option("--site", o.site, "--render-site: the page")->default_val("site/index.html");
  cmd->add_option("--suite", o.suite,
                  "tasks (the task suite) or behaviour (fixed checks on a planted copy of "
                  "Chinook: behaviour_results.json and BEHAVIOUR.md in --out)")
      ->check(CLI::IsMember({"tasks", "behaviour"}))
      ->default_val("tasks");
  cmd->add_option("--case", o.cases, "--suite behaviour: run only this case (repeatable)");
  cmd->add_option("--source", o.source,
                  "--suite behaviour: the Chinook database copied (default data/chinook.sqlite)");
  cmd->add_option("--work-dir", o.work_dir,
                  "--suite behaviour: where the copies go and stay (default: a temporary folder, "
                  "removed after)");
  cmd->add_option("--fixtures", o.ask.fixtures,
                  "--suite behaviour --offline: the recorded turns (default fixtures/behaviour)");
  return cmd;
}

int RunBenchCommand(const BenchCmdOptions& o) {
  if (o.render_site) return RenderSite(o);
  if (o.suite == "behaviour") {
    if (!o.ask.knowledge.empty()) {
      return Report({Error::Code::kUsage,
                     "--knowledge is for the task suite; the behaviour suite's checks are "
                     "measured without knowledge files"});
    }
    BehaviourCommandOptions b;
    b.run = o.ask;
    if (!o.runs_dir.empty()) b.run.runs_dir = o.runs_dir;
    b.out_dir = o.out;
    b.source = o.source;
    b.work_dir = o.work_dir;
    b.only = o.cases;
    return RunBehaviourCommand(b);
  }
  if ((!o.postgres.empty() || !o.mysql.empty()) && o.suite == "behaviour") {
    return Report({Error::Code::kUsage,
                   "--postgres and --mysql are for the task suite; the behaviour suite plants "
                   "its checks in a copy of a SQLite file"});
  }
  if (!o.postgres.empty() && !o.mysql.empty()) {
    return Report({Error::Code::kUsage, "--postgres and --mysql are measured separately"});
  }
  if (!o.cases.empty() || !o.source.empty() || !o.work_dir.empty() || !o.ask.fixtures.empty()) {
    return Report({Error::Code::kUsage,
                   "--case, --source, --work-dir and --fixtures are for --suite behaviour; the "
                   "task suite's fixtures are in --tasks DIR/fixtures"});
  }
  const bool knowledge_arm = !o.ask.knowledge.empty();
  if (knowledge_arm && o.arms_option && o.arms_option->count() > 0) {
    return Report({Error::Code::kUsage,
                   "--arms sets the self-correction arms; --knowledge compares knowledge files "
                   "with none: give one of them"});
  }
  if (knowledge_arm && (!o.postgres.empty() || !o.mysql.empty())) {
    return Report({Error::Code::kUsage, "--knowledge and a server are measured separately"});
  }
  auto arms = knowledge_arm ? Result<std::vector<bool>>(std::vector<bool>{true, false}) : Arms(o);
  if (!arms) return Report(arms.error());
  const fs::path tasks = TasksDir(o);
  std::error_code ec;
  const fs::path root = fs::absolute(tasks, ec).lexically_normal().parent_path();
  auto suite = bench::LoadSuite(tasks, root.empty() ? fs::path(".") : root);
  if (!suite) return Report(suite.error());

  if (!o.postgres.empty() && engine::ServerDialect(o.postgres) != engine::Dialect::kPostgreSQL) {
    return Report({Error::Code::kUsage,
                   "--postgres takes a PostgreSQL server: postgresql://USER@HOST:PORT/DB, "
                   "postgres://..., or service=NAME (a password comes from PGPASSWORD, "
                   "~/.pgpass or the service file, never from the URL)"});
  }
  if (!o.mysql.empty() && engine::ServerDialect(o.mysql) != engine::Dialect::kMySQL) {
    return Report({Error::Code::kUsage,
                   "--mysql takes a MariaDB or MySQL server: mysql://USER@HOST:PORT/DB or "
                   "mariadb://... (a password comes from MYSQL_PWD or ~/.my.cnf, never from the "
                   "URL)"});
  }
  // Never the .quarry/ of the working directory: a knowledge arm gives each task its own.
  AskOptions ask = o.ask;
  ask.no_knowledge = true;
  auto config = BaseConfig(ask);
  if (!config) return Report(config.error());
  if (knowledge_arm) config->self_correction = !o.no_self_correction;
  // Found out before any run, not after a live bench has been paid for.
  const fs::path probe = fs::path(o.out) / ".quarry-write-check";
  if (auto w = bench::WriteFileAtomically(probe, ""); !w) {
    return Report({Error::Code::kUsage, "--out " + o.out + " cannot hold the results (" +
                                            w.error().message + "): give a writable folder"});
  }
  fs::remove(probe, ec);

  bench::BenchOptions options;
  options.arms = *arms;
  if (knowledge_arm) {
    options.ablation = bench::Ablation::kKnowledge;
    options.knowledge = o.ask.knowledge;
  }
  options.samples = o.samples;
  options.offline = o.ask.offline;
  options.limit = o.limit;
  options.tags = SplitTags(o.tags);
  if (o.max_cost_usd >= 0) options.max_cost_usd = o.max_cost_usd;
  options.jobs = o.jobs;
  options.runs_dir =
      o.runs_dir.empty() ? fs::path("runs") / ("bench-" + trace::NewRunId()) : fs::path(o.runs_dir);
  options.config = *config;
  LoadFlags load = o.ask.load;
  load.timeout_ms = o.ask.config.limits.timeout_ms;
  options.open_engine = [load](const std::vector<fs::path>& data) {
    std::vector<std::string> specs;
    for (const auto& p : data) specs.push_back(p.string());
    return OpenData(specs, load);
  };
  options.server = o.postgres.empty() ? o.mysql : o.postgres;
  options.server_engine = o.postgres.empty() ? "mysql" : "postgresql";
  const std::string flag = o.postgres.empty() ? "--mysql" : "--postgres";
  if (!options.server.empty()) {
    // An unreachable server is said once, before anything runs, not as an error in every run.
    if (auto e = options.open_engine({fs::path(options.server)}); !e) {
      return Report({e.error().code, flag + ": " + e.error().message});
    }
  }
  if (!o.ask.offline) {
    const llm::Settings agent_flags = ModelSettings(o.ask);
    const llm::Settings judge_flags = ModelSettings(o.ask, o.judge_model);
    // Said once, before anything runs, rather than as an error in every task run.
    if (auto c = ResolveModelSettings(agent_flags); !c) {
      return Report(
          {c.error().code, "quarry bench runs live: " + c.error().message +
                               " (quarry bench --offline replays the tasks' scripted fixtures)"});
    }
    options.live_client = [agent_flags](const std::string&, const std::vector<std::string>&) {
      return BenchClient(agent_flags);
    };
    options.live_judge = [judge_flags] { return BenchClient(judge_flags); };
  }
  std::mutex log_mu;
  if (o.verbose) {
    options.on_run = [&log_mu](const std::string& line) {
      std::lock_guard lock(log_mu);
      std::cerr << "quarry: bench: " << TerminalText(line) << "\n";
    };
  }
  const InterruptScope interrupt;
  options.stop = interrupt.token();
  auto result = bench::RunBench(*suite, options);
  if (!result) return Report(result.error());

  const fs::path out = o.out;
  // A run on a server keeps its own latest files, so RESULTS.md never mixes its figures with
  // the SQLite ones.
  const fs::path kept = knowledge_arm         ? out / "knowledge"
                        : !o.postgres.empty() ? out / "postgresql"
                        : !o.mysql.empty()    ? out / "mysql"
                                              : out;
  const json doc = bench::ResultsJson(*result);
  const std::string text = doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  if (auto w = bench::WriteFileAtomically(out / "bench_results.json", text); !w)
    return Report(w.error());
  if (auto w = bench::WriteFileAtomically(kept / result->mode / "bench_results.json", text); !w) {
    return Report(w.error());
  }
  const auto offline = ReadResults(out / "offline" / "bench_results.json");
  const auto live = ReadResults(out / "live" / "bench_results.json");
  const auto pg_offline = ReadResults(out / "postgresql" / "offline" / "bench_results.json");
  const auto pg_live = ReadResults(out / "postgresql" / "live" / "bench_results.json");
  const auto k_offline = ReadResults(out / "knowledge" / "offline" / "bench_results.json");
  const auto k_live = ReadResults(out / "knowledge" / "live" / "bench_results.json");
  const auto my_offline = ReadResults(out / "mysql" / "offline" / "bench_results.json");
  const auto my_live = ReadResults(out / "mysql" / "live" / "bench_results.json");
  const std::string md = bench::RenderResultsMarkdown(offline, live, pg_offline, pg_live, k_offline,
                                                      k_live, my_offline, my_live);
  if (auto w = bench::WriteFileAtomically(out / "RESULTS.md", md); !w) return Report(w.error());
  PrintSummary(*result, out);
  return result->interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace quarry::cli
