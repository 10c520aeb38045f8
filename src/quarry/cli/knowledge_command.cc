// The knowledge files from the command line: loading them for a run (LoadKnowledge),
// `quarry knowledge check`, which runs every definition against the data, and `quarry knowledge
// import dbt`, which writes them from a dbt manifest.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/common/exit_codes.h"
#include "quarry/knowledge/dbt.h"
#include "quarry/trace/trace.h"

namespace quarry::cli {

namespace {

std::string Where(const knowledge::Origin& o) {
  return o.line > 0 ? o.file + ":" + std::to_string(o.line) : o.file;
}

std::string Summary(const knowledge::Knowledge& k) {
  std::string out;
  auto add = [&out](size_t n, const std::string& what) {
    if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(k.metrics.size(), k.metrics.size() == 1 ? "metric" : "metrics");
  add(k.terms.size(), k.terms.size() == 1 ? "glossary term" : "glossary terms");
  add(k.tables.size(), k.tables.size() == 1 ? "table" : "tables");
  add(k.relationships.size(), k.relationships.size() == 1 ? "join" : "joins");
  add(k.rules.size(), k.rules.size() == 1 ? "rule" : "rules");
  add(k.queries.size(), k.queries.size() == 1 ? "verified query" : "verified queries");
  return out.empty() ? "nothing" : out;
}

// "3 tables, 2 relationships, 1 metric" of the files in `files`.
std::string Counted(const std::vector<const knowledge::KnowledgeFile*>& files) {
  size_t tables = 0, joins = 0, metrics = 0;
  for (const auto* f : files) {
    (!f->table.empty() ? tables : f->path == "metrics.yaml" ? metrics : joins) += f->items;
  }
  auto n = [](size_t count, const std::string& one, const std::string& many) {
    return std::to_string(count) + " " + (count == 1 ? one : many);
  };
  return n(tables, "table", "tables") + ", " + n(joins, "relationship", "relationships") + ", " +
         n(metrics, "metric", "metrics");
}

// "; not written: a (it exists); skipped: metric x (ratio metrics are not imported), ..."
std::string Left(const std::vector<std::string>& kept, const std::vector<std::string>& skipped) {
  std::string out;
  auto add = [&out](const std::string& label, const std::vector<std::string>& list) {
    if (list.empty()) return;
    out += "; " + label + ": ";
    for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + list[i];
  };
  add("not written", kept);
  add("skipped", skipped);
  return out;
}

int RunImportDbt(const ImportDbtOptions& o) {
  auto import = knowledge::ReadDbtManifest(o.manifest);
  if (!import) return Report(import.error());
  auto files = knowledge::RenderDbtImport(*import, o.manifest);
  if (!files) return Report(files.error());
  const std::filesystem::path dir = o.knowledge;
  const std::string where = TerminalText(dir.string());
  knowledge::ImportPlan plan = knowledge::PlanDbtImport(dir, std::move(*files));
  for (const auto& note : import->notes) {
    std::cerr << "quarry: dbt import: note: " << TerminalText(note) << "\n";
  }
  if (!plan.existing_problem.empty()) {
    std::cerr << "quarry: dbt import: note: " << where
              << " does not load now, and will not after the import: "
              << TerminalText(plan.existing_problem) << "\n";
  }
  std::vector<const knowledge::KnowledgeFile*> planned;
  for (const auto& f : plan.write) planned.push_back(&f);
  if (o.dry_run) {
    for (const auto& f : plan.write) {
      std::cout << "# " << TerminalText((dir / f.path).string()) << "\n"
                << TerminalText(f.text) << "\n";
    }
    std::cerr << "quarry: dbt import (dry run): " << Counted(planned) << " would be written to "
              << where << TerminalText(Left(plan.kept, import->skipped)) << "\n";
    return kExitOk;
  }
  if (plan.write.empty()) {
    std::cerr << "quarry: dbt import: nothing written to " << where
              << TerminalText(Left(plan.kept, import->skipped)) << "\n";
    return kExitOk;
  }
  if (!o.yes) {
    for (const auto& f : plan.write) {
      std::cerr << "quarry: dbt import: " << TerminalText((dir / f.path).string()) << " ("
                << TerminalText(f.what) << ")\n";
    }
    if (!isatty(STDIN_FILENO)) {
      std::cerr << "quarry: dbt import: nothing written: pass --yes to write these files, or "
                   "--dry-run to see them\n";
      return kExitUsage;
    }
    std::cerr << "Write them? [y/N] " << std::flush;
    std::string reply;
    std::getline(std::cin, reply);
    if (Lower(Trim(reply)) != "y" && Lower(Trim(reply)) != "yes") {
      std::cerr << "quarry: dbt import: nothing written\n";
      return kExitOk;
    }
  }
  auto written = knowledge::WriteKnowledgeFiles(dir, plan.write);
  if (!written) return Report(written.error());
  std::vector<const knowledge::KnowledgeFile*> done;
  for (const auto& f : plan.write) {
    if (std::ranges::find(written->written, f.path) != written->written.end()) done.push_back(&f);
  }
  std::vector<std::string> kept = plan.kept;
  kept.insert(kept.end(), written->kept.begin(), written->kept.end());
  std::cerr << "quarry: dbt import: " << Counted(done) << " written to " << where
            << TerminalText(Left(kept, import->skipped)) << "\n";
  return kExitOk;
}

}  // namespace

Result<std::shared_ptr<const knowledge::Knowledge>> LoadKnowledge(
    const std::string& given, bool none, const std::vector<std::string>& data) {
  if (none) return std::shared_ptr<const knowledge::Knowledge>();
  std::vector<std::filesystem::path> paths(data.begin(), data.end());
  std::error_code ec;
  const auto dir = knowledge::Discover(given, paths, std::filesystem::current_path(ec));
  if (!dir) return std::shared_ptr<const knowledge::Knowledge>();
  auto loaded = knowledge::Load(*dir);
  if (!loaded) {
    loaded.error().message += " (in " + dir->string() + "; --no-knowledge runs without it)";
    return std::unexpected(loaded.error());
  }
  std::cerr << "quarry: knowledge: " << TerminalText(dir->string()) << " (" << Summary(*loaded)
            << ")\n";
  return std::make_shared<const knowledge::Knowledge>(std::move(*loaded));
}

std::pair<CLI::App*, CLI::App*> AddKnowledgeCommands(CLI::App& app, KnowledgeOptions& knowledge,
                                                     LearnOptions& learn) {
  CLI::App* knowledge_cmd = app.add_subcommand(
      "knowledge",
      "The knowledge files: quarry knowledge check DATA... [--knowledge DIR], quarry knowledge "
      "import dbt MANIFEST");
  knowledge_cmd->require_subcommand(1);
  CLI::App* knowledge_check = knowledge_cmd->add_subcommand(
      "check",
      "Run every metric, join and verified query against the data; report what is "
      "stale or gone (exit 3 when anything is)");
  knowledge_check->add_option("paths", knowledge.paths, "Data files, a folder, or a server URL")
      ->required();
  knowledge_check->add_option("--knowledge", knowledge.knowledge,
                              "The knowledge folder (default: .quarry/ beside the data or here)");
  knowledge_check->add_option("--timeout-ms", knowledge.timeout_ms, "Per-query timeout")
      ->default_val(10000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  knowledge_check->add_option("--format", knowledge.format_name, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");

  CLI::App* import_cmd = knowledge_cmd->add_subcommand(
      "import", "Write knowledge files from another tool's documentation: import dbt MANIFEST");
  import_cmd->require_subcommand(1);
  ImportDbtOptions& dbt = knowledge.import_dbt;
  CLI::App* import_dbt = import_cmd->add_subcommand(
      "dbt",
      "Write table meanings, joins and simple metrics from a dbt manifest "
      "(target/manifest.json); never over a file");
  import_dbt->callback([&dbt] { dbt.given = true; });
  import_dbt->add_option("manifest", dbt.manifest, "The manifest dbt wrote: target/manifest.json")
      ->required();
  import_dbt->add_option("--knowledge", dbt.knowledge, "The knowledge folder to write into")
      ->default_val(".quarry");
  auto* yes = import_dbt->add_flag("--yes", dbt.yes, "Write without asking");
  import_dbt->add_flag("--dry-run", dbt.dry_run, "Print the files; write nothing")->excludes(yes);

  CLI::App* learn_cmd = app.add_subcommand(
      "learn",
      "Save an answered, grounded run as a verified query of the knowledge files, after "
      "showing it: quarry learn [latest|ID]");
  learn_cmd->add_option("which", learn.which, "latest, a run id, or a trace.json path")
      ->default_val("latest");
  learn_cmd->add_option("--runs-dir", learn.runs_dir, "Where the runs are")->default_val("runs");
  learn_cmd->add_option("--knowledge", learn.knowledge,
                        "The knowledge folder (default: .quarry/ beside the data or here)");
  learn_cmd
      ->add_option("--name", learn.name,
                   "The file's name, queries/NAME.md (default: from the question)")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            // A first '-' would read as a flag in every later command that names the file.
            const bool ok = !name.empty() && name.size() <= 80 && name[0] != '-' &&
                            name[0] != '_' &&
                            name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") ==
                                std::string::npos;
            return ok ? ""
                      : "a name is 1 to 80 of a-z, 0-9, '-' and '_', starting with a letter or "
                        "digit";
          },
          "NAME", "query name"));
  learn_cmd->add_flag("--yes", learn.yes, "Save without asking");
  return {knowledge_cmd, learn_cmd};
}

int RunKnowledge(const KnowledgeOptions& o) {
  if (o.import_dbt.given) return RunImportDbt(o.import_dbt);
  auto k = LoadKnowledge(o.knowledge, false, o.paths);
  if (!k) return Report(k.error());
  if (!*k) {
    std::cerr << "quarry knowledge check: no knowledge folder: give --knowledge DIR, or put "
                 ".quarry/ beside the data (docs/knowledge.md)\n";
    return kExitUsage;
  }
  if ((*k)->size() == 0) {
    std::cerr << "quarry knowledge check: " << TerminalText((*k)->dir.string())
              << " holds no knowledge files: nothing to check (docs/knowledge.md)\n";
    return kExitUsage;
  }
  const InterruptScope interrupt;
  LoadFlags load = o.load;
  load.stop = interrupt.token();
  load.profile = false;  // names and types are all a check reads
  auto engine = OpenData(o.paths, load);
  if (!engine) return Report(engine.error());
  engine::Limits limits;
  limits.timeout_ms = o.timeout_ms;
  limits.stop = interrupt.token();
  const auto findings = knowledge::Check(**k, **engine, limits);
  size_t failed = 0, stale = 0;
  if (o.format_name == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& f : findings) {
      out.push_back({{"item", f.item},
                     {"where", Where(f.origin)},
                     {"ok", f.problem.empty()},
                     {"stale", f.stale},
                     {"problem", f.problem}});
    }
    std::cout << JsonText(out) << "\n";
  }
  for (const auto& f : findings) {
    if (f.problem.empty()) {
      if (o.format_name == "text") {
        std::cout << "ok     " << TerminalText(f.item) << " (" << TerminalText(Where(f.origin))
                  << ")\n";
      }
      continue;
    }
    (f.stale ? stale : failed) += 1;
    if (o.format_name == "text") {
      std::cout << (f.stale ? "stale  " : "FAIL   ") << TerminalText(f.item) << " ("
                << TerminalText(Where(f.origin)) << "): " << TerminalText(f.problem) << "\n";
    }
  }
  std::cerr << "quarry knowledge check: " << findings.size() << " checked, " << failed
            << " failed, " << stale << " stale\n";
  return failed + stale == 0 ? kExitOk : kExitData;
}

int RunLearn(const LearnOptions& o) {
  auto path = trace::FindTrace(o.runs_dir, o.which);
  if (!path) return Report(path.error());
  auto t = trace::ReadTrace(*path);
  if (!t) return Report(t.error());
  if (t->stop_reason != trace::StopReason::kAnswered || !t->grounded) {
    std::cerr << "quarry learn: run " << t->id << " ended " << trace::StopReasonName(t->stop_reason)
              << (t->stop_reason == trace::StopReason::kAnswered ? " but not grounded" : "")
              << ": only an answered, grounded run is saved as a verified query\n";
    return kExitUsage;
  }
  if (Trim(t->answer_sql).empty()) {
    std::cerr << "quarry learn: run " << t->id
              << "'s answer rests on no SQL query: there is nothing to save\n";
    return kExitUsage;
  }
  // A path the run was given relative to where it ran: that is the runs folder's parent when
  // learn runs elsewhere.
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  const auto ran_in = std::filesystem::absolute(o.runs_dir, ec).parent_path();
  std::vector<std::string> data;
  for (const auto& s : t->sources) {
    std::filesystem::path p = s.path;
    if (p.is_relative() && !engine::IsServerSpec(s.path) && !std::filesystem::exists(p, ec) &&
        std::filesystem::exists(ran_in / p, ec)) {
      p = ran_in / p;
    }
    data.push_back(p.string());
  }
  std::vector<std::filesystem::path> paths(data.begin(), data.end());
  const std::filesystem::path dir =
      knowledge::Discover(o.knowledge, paths, cwd).value_or(cwd / ".quarry");

  // The result is fingerprinted as it is now, so `knowledge check` can tell when it changes.
  const InterruptScope interrupt;
  LoadFlags load = o.load;
  load.stop = interrupt.token();
  load.profile = false;
  auto engine = OpenData(data, load);
  if (!engine) return Report(engine.error());
  for (size_t i = 0; i < t->sources.size() && i < (*engine)->sources().size(); ++i) {
    const auto& then = t->sources[i].sha256;
    if (!then.empty() && then != (*engine)->sources()[i].sha256) {
      std::cerr << "quarry learn: note: " << TerminalText(t->sources[i].path)
                << " has changed since the run: the result saved is today's\n";
    }
  }
  engine::Limits limits;
  limits.max_rows = 100000;
  limits.stop = interrupt.token();
  auto result = (*engine)->Query(t->answer_sql, limits);
  if (!result) {
    return Report(
        Error{Error::Code::kData, "the run's SQL no longer runs: " + result.error().message});
  }
  const knowledge::ResultFingerprint print = knowledge::Fingerprint(*result);

  knowledge::VerifiedQuery q;
  q.name = o.name.empty() ? knowledge::QueryName(t->question) : o.name;
  q.question = t->question;
  q.sql = t->answer_sql;
  const passwd* pw = getpwuid(getuid());
  const char* user = std::getenv("USER");
  q.verified_by = user && *user ? user : (pw && pw->pw_name ? pw->pw_name : "");
  q.verified_at = trace::UtcTimestamp().substr(0, 10);
  q.result_rows = print.rows;
  q.result_sha256 = print.sha256;
  const std::filesystem::path file = dir / "queries" / (q.name + ".md");
  std::cout << "# " << TerminalText(file.string()) << " (from run " << t->id << ")\n"
            << TerminalText(knowledge::RenderVerifiedQuery(q));
  if (!o.yes) {
    if (!isatty(STDIN_FILENO)) {
      std::cerr << "quarry learn: not saved: pass --yes to save it without being asked\n";
      return kExitUsage;
    }
    std::cerr << "Save it? [y/N] " << std::flush;
    std::string reply;
    std::getline(std::cin, reply);
    if (Lower(Trim(reply)) != "y" && Lower(Trim(reply)) != "yes") {
      std::cerr << "quarry learn: not saved\n";
      return kExitOk;
    }
  }
  auto saved = knowledge::SaveVerifiedQuery(dir, q);
  if (!saved) return Report(saved.error());
  std::cerr << "quarry learn: saved " << TerminalText(saved->string()) << "\n";
  return kExitOk;
}

}  // namespace quarry::cli
