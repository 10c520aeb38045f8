// The knowledge files from the command line: loading them for a run (LoadKnowledge) and
// `quarry knowledge check`, which runs every definition against the data.
#include <iostream>
#include <map>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/common/exit_codes.h"

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

int RunKnowledgeCheck(const KnowledgeOptions& o) {
  auto k = LoadKnowledge(o.knowledge, false, o.paths);
  if (!k) return Report(k.error());
  if (!*k) {
    std::cerr << "quarry knowledge check: no knowledge folder: give --knowledge DIR, or put "
                 ".quarry/ beside the data (docs/knowledge.md)\n";
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
        std::cout << "ok     " << TerminalText(f.item) << " (" << Where(f.origin) << ")\n";
      }
      continue;
    }
    (f.stale ? stale : failed) += 1;
    if (o.format_name == "text") {
      std::cout << (f.stale ? "stale  " : "FAIL   ") << TerminalText(f.item) << " ("
                << Where(f.origin) << "): " << TerminalText(f.problem) << "\n";
    }
  }
  std::cerr << "quarry knowledge check: " << findings.size() << " checked, " << failed
            << " failed, " << stale << " stale\n";
  return failed + stale == 0 ? kExitOk : kExitData;
}

}  // namespace quarry::cli
