// `quarry bench --suite behaviour`: the behaviour suite (bench/behaviour.h) run with the model
// flags `ask` takes, live or on the recorded turns of fixtures/behaviour (--offline); progress
// on stderr, the table on stdout, results/behaviour_results.json and results/BEHAVIOUR.md.
#include <cstdlib>
#include <iostream>

#include "quarry/bench/behaviour.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/installation.h"
#include "quarry/cli/run_question.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;

// A path as given when it exists from here, else the same path among the bundled files
// (ShareDir: installed, or the source tree for a build run from elsewhere, as the tests do).
fs::path InRepo(const std::string& given, const char* fallback) {
  if (!given.empty()) return given;
  std::error_code ec;
  if (fs::exists(fallback, ec)) return fallback;
  return ShareDir() / fallback;
}

}  // namespace

int RunBehaviourCommand(const BehaviourCommandOptions& o) {
  // Measured without knowledge files: a .quarry/ found here would change what is measured (a
  // knowledge arm is issue 28's, not built yet).
  AskOptions run = o.run;
  run.no_knowledge = true;
  if (!run.replay.empty()) {
    return Report(Error{Error::Code::kUsage,
                        "the behaviour suite asks many questions; --replay takes one recording. "
                        "Use --offline (fixtures/behaviour, or --fixtures DIR)"});
  }
  auto config = BaseConfig(run);
  if (!config) return Report(config.error());
  bench::ClientFactory clients;
  if (run.offline) {
    auto fixtures = bench::BehaviourFixtureClients(InRepo(run.fixtures, "fixtures/behaviour"));
    if (!fixtures) return Report(fixtures.error());
    clients = std::move(*fixtures);
  } else {
    AskOptions live = run;
    live.question = "";
    // Fail once, before any copy is made, when no model is configured.
    if (auto probe = MakeClient(live); !probe) return Report(probe.error());
    clients = [live](const std::string&, const std::vector<std::string>&) {
      return MakeClient(live);
    };
  }
  bench::BehaviourOptions options;
  options.source = InRepo(o.source, "data/chinook.sqlite");
  options.runs_dir = run.runs_dir;
  options.work_dir = o.work_dir;
  options.scripted = run.offline;
  options.only = o.only;
  options.config = *config;
  std::cerr << Paint("quarry: behaviour suite on a copy of " +
                         TerminalText(options.source.string()) +
                         (run.offline ? " (scripted turns: a harness run)" : ""),
                     "2")
            << "\n";
  auto report = bench::RunBehaviour(options, clients);
  if (!report) return Report(report.error());
  for (const auto& c : report->cases) {
    const bool pass = c.status == bench::CaseStatus::kPass;
    std::cerr << "  " << Paint(std::string(bench::CaseStatusName(c.status)), pass ? "32" : "31")
              << "  " << TerminalText(c.id) << ": " << TerminalText(c.reason) << "\n";
  }
  auto written = bench::WriteBehaviourResults(*report, o.out_dir);
  if (!written) return Report(written.error());
  std::cout << TerminalText(bench::BehaviourMarkdown(*report));
  for (const auto& p : *written) std::cout << "wrote " << TerminalText(p.string()) << "\n";
  if (report->source_sha256_after != report->source_sha256_before) {
    return Report(Error{Error::Code::kInternal, "the source " + report->source +
                                                    " changed during the suite (sha256 " +
                                                    report->source_sha256_after + ")"});
  }
  return report->failed > 0 ? kExitNoAnswer : kExitOk;
}

}  // namespace quarry::cli
