// quarry remember, and the offer `ask` and `chat` make after a clarification was answered
// (remember.h): the user's reply kept as a glossary term, only when the user agrees.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/remember.h"
#include "quarry/common/exit_codes.h"
#include "quarry/common/text.h"
#include "quarry/engine/engine.h"

namespace quarry::cli {

namespace {

bool Yes(const std::string& reply) {
  const std::string r = Lower(std::string(Trim(reply)));
  return r == "y" || r == "yes";
}

}  // namespace

std::filesystem::path GlossaryDir(const std::string& given, const std::vector<std::string>& data) {
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  const std::vector<std::filesystem::path> paths(data.begin(), data.end());
  return agent::GlossaryDir(given, paths, cwd);
}

int OfferGlossary(const std::vector<agent::GlossaryOffer>& offers, const std::filesystem::path& dir,
                  const AskLine& ask) {
  int saved = 0;
  const std::string file = TerminalText((dir / "glossary.yaml").string());
  for (const agent::GlossaryOffer& offer : offers) {
    const std::string what = TerminalText(agent::OfferText(offer));
    if (!ask) {
      std::cerr << "quarry: to keep \"" << what << "\" for later questions: quarry remember "
                << offer.run_id << " (writes " << file << ")\n";
      continue;
    }
    const auto reply = ask("Keep \"" + what + "\" in " + file + " for later questions? [y/N] ");
    if (!reply || !Yes(*reply)) continue;
    auto kept = agent::KeepInGlossary(dir, offer);
    if (!kept) {
      std::cerr << "quarry: not kept: " << TerminalText(kept.error().message) << "\n";
      continue;
    }
    ++saved;
    std::cerr << "quarry: kept in " << file << ":" << kept->line << "\n";
  }
  return saved;
}

CLI::App* AddRememberCommand(CLI::App& app, RememberOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "remember",
      "Keep a run's clarification replies in the knowledge glossary, so later questions use "
      "them instead of asking: quarry remember [latest|ID]");
  cmd->add_option("which", o.which, "latest, a run id, or a trace.json path")
      ->default_val("latest");
  cmd->add_option("--runs-dir", o.runs_dir, "Where the runs are")->default_val("runs");
  cmd->add_option("--knowledge", o.knowledge,
                  "The knowledge folder (default: .quarry/ beside the data or here)");
  cmd->add_option("--term", o.term,
                  "The term to keep the last reply under (default: the phrase the model asked "
                  "about)");
  cmd->add_flag("--yes", o.yes, "Keep without asking");
  return cmd;
}

int RunRemember(const RememberOptions& o) {
  auto path = trace::FindTrace(o.runs_dir, o.which);
  if (!path) return Report(path.error());
  auto t = trace::ReadTrace(*path);
  if (!t) return Report(t.error());
  if (!o.term.empty()) {  // the last reply, under the name given
    for (auto c = t->clarifications.rbegin(); c != t->clarifications.rend(); ++c) {
      if (!Trim(c->reply).empty()) {
        c->term = o.term;
        break;
      }
    }
  }
  std::vector<std::string> data;
  for (const auto& s : t->sources) data.push_back(s.path);
  const std::filesystem::path dir = GlossaryDir(o.knowledge, data);
  std::shared_ptr<knowledge::Knowledge> known;
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    auto loaded = knowledge::Load(dir);
    if (!loaded) return Report(loaded.error());
    known = std::make_shared<knowledge::Knowledge>(std::move(*loaded));
  }
  const auto offers = agent::GlossaryOffers(*t, known.get());
  if (offers.empty()) {
    const bool answered = std::any_of(t->clarifications.begin(), t->clarifications.end(),
                                      [](const auto& c) { return !Trim(c.reply).empty(); });
    std::cerr << "quarry remember: run " << t->id
              << (t->clarifications.empty() ? " asked no clarification"
                  : !answered               ? "'s clarification has no reply yet"
                  : o.term.empty()          ? " has no reply to keep: the model named no term for "
                                              "it (give one with --term NAME), the reply has no "
                                              "words, or it is defined already"
                                            : " has no reply to keep: the reply has no words, or "
                                              "the term is defined already")
              << "\n";
    return kExitUsage;
  }
  if (!o.yes && !isatty(STDIN_FILENO)) {
    for (const auto& offer : offers) {
      std::cout << TerminalText(agent::OfferText(offer)) << "\n";
    }
    std::cerr << "quarry remember: not kept: pass --yes to keep them without being asked\n";
    return kExitUsage;
  }
  AskLine ask = [&](const std::string& prompt) -> std::optional<std::string> {
    if (o.yes) return "y";
    std::cerr << prompt << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
  };
  const int kept = OfferGlossary(offers, dir, ask);
  // --yes asked for every one: one not kept (its error was said) fails the command.
  return o.yes && kept < static_cast<int>(offers.size()) ? kExitUsage : kExitOk;
}

}  // namespace quarry::cli
