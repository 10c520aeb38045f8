// Rendering bench results (suite.h): RESULTS.md from the latest offline and live results
// files, and the table block of site/index.html. Both read the JSON files (not the in-memory
// result), so either can be rebuilt from what is on disk; a field of the wrong type reads as
// missing and shows as "n/a", never as a crash.
#include <cmath>
#include <cstdio>
#include <limits>

#include "quarry/common/text.h"
#include "quarry/bench/suite.h"

namespace quarry::bench {
namespace {

using json = nlohmann::ordered_json;

const char* kBegin = "<!-- bench:begin -->";
const char* kEnd = "<!-- bench:end -->";

// j[key], or null when j is no object or lacks it.
json Field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it != j.end() ? *it : json(nullptr);
}

double NumberAt(const json& j, const char* key) {
  if (!j.is_object()) return std::numeric_limits<double>::quiet_NaN();
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>()
                                          : std::numeric_limits<double>::quiet_NaN();
}

std::string TextAt(const json& j, const char* key, const std::string& fallback = "n/a") {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string Fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Count(double v) { return Fmt("%.0f", v); }
std::string Percent(double v) { return Fmt("%.1f%%", v * 100); }

// One figure per arm, as text, in the order of the file's "arms".
struct Row {
  std::string figure;
  std::vector<std::string> cells;
};

std::vector<Row> Rows(const json& results) {
  const json arms = Field(results, "arms");
  std::vector<Row> rows = {{"task success (95% Wilson CI)", {}},
                           {"task runs graded", {}},
                           {"tasks graded", {}},
                           {"task runs skipped", {}},
                           {"task runs not graded (error)", {}},
                           {"median steps", {}},
                           {"repair rate", {}},
                           {"repair success rate", {}},
                           {"send-backs (answers the verify gate returned)", {}},
                           {"grounded-answer rate", {}},
                           {"mean cost per task run", {}},
                           {"p50 / p95 latency", {}},
                           {"sandbox and guard violations", {}},
                           {"judge: answers judged, calls, all-three agreement", {}}};
  for (const json& a : arms.is_array() ? arms : json::array()) {
    const double graded = NumberAt(a, "graded"), passed = NumberAt(a, "passed");
    const json ci = Field(a, "success_ci95");
    const double lo =
        ci.is_array() && ci.size() == 2 && ci[0].is_number() ? ci[0].get<double>() : NAN;
    const double hi =
        ci.is_array() && ci.size() == 2 && ci[1].is_number() ? ci[1].get<double>() : NAN;
    std::string success = Count(passed) + "/" + Count(graded);
    if (graded > 0) {
      success += " = " + Percent(NumberAt(a, "success_rate")) + " (" + Percent(lo) + " to " +
                 Percent(hi) + ")";
    }
    std::string skipped = Count(NumberAt(a, "skipped"));
    const json by = Field(a, "skipped_by_reason");
    if (by.is_object() && !by.empty()) {
      std::string reasons;
      for (const auto& [reason, n] : by.items()) {
        reasons += (reasons.empty() ? "" : "; ") + reason + ": " +
                   (n.is_number() ? Count(n.get<double>()) : std::string("n/a"));
      }
      skipped += " (" + reasons + ")";
    }
    const json judge = Field(a, "judge");
    std::string judged = Count(NumberAt(judge, "answers_judged"));
    if (NumberAt(judge, "answers_judged") > 0) {
      judged += ", " + Count(NumberAt(judge, "calls")) + " calls, " +
                Percent(NumberAt(judge, "agreement_rate")) + " agreed";
      if (NumberAt(judge, "no_votes") > 0) {
        judged += ", " + Count(NumberAt(judge, "no_votes")) + " unusable replies";
      }
    }
    const std::string repair_rate =
        Percent(NumberAt(a, "repair_rate")) + " of " + Count(NumberAt(a, "runs")) + " runs";
    const std::string repair_success = Percent(NumberAt(a, "repair_success_rate")) + " (" +
                                       Count(NumberAt(a, "repair_successes")) + "/" +
                                       Count(NumberAt(a, "repair_attempts")) + ")";
    // Results files written before send-backs were counted have no figure: n/a, not 0.
    const std::string send_backs = Field(a, "send_backs").is_number()
                                       ? Count(NumberAt(a, "send_backs")) + " (in " +
                                             Count(NumberAt(a, "runs_with_send_backs")) + " of " +
                                             Count(NumberAt(a, "runs")) + " runs)"
                                       : std::string("n/a");
    const std::string cells[] = {success,
                                 Count(graded),
                                 Count(NumberAt(a, "tasks_graded")),
                                 skipped,
                                 Count(NumberAt(a, "errors")),
                                 Fmt("%.1f", NumberAt(a, "median_steps")),
                                 repair_rate,
                                 repair_success,
                                 send_backs,
                                 Percent(NumberAt(a, "grounded_rate")),
                                 Fmt("$%.4f", NumberAt(a, "mean_cost_usd")),
                                 Fmt("%.0f ms", NumberAt(a, "p50_latency_ms")) + " / " +
                                     Fmt("%.0f ms", NumberAt(a, "p95_latency_ms")),
                                 Count(NumberAt(a, "guard_violations")),
                                 judged};
    for (size_t i = 0; i < rows.size(); ++i) rows[i].cells.push_back(cells[i]);
  }
  return rows;
}

std::vector<std::string> ArmNames(const json& results) {
  std::vector<std::string> names;
  const json arms = Field(results, "arms");
  for (const json& a : arms.is_array() ? arms : json::array()) {
    const std::string arm = TextAt(a, "arm");
    names.push_back(arm == "off"         ? "self-correction off"
                    : arm == "knowledge" ? "with knowledge files"
                    : arm == "none"      ? "without knowledge files"
                                         : "self-correction on");
  }
  return names;
}

std::string McNemarLine(const json& results) {
  const json m = Field(results, "mcnemar");
  if (!m.is_object()) return "";
  const bool knowledge = TextAt(results, "ablation", "") == "knowledge";
  return "Paired comparison (McNemar's exact test over the " + Count(NumberAt(m, "pairs")) +
         " (task, sample) pairs graded in both arms): passed only " +
         (knowledge ? "with knowledge files" : "with self-correction on") +
         " b = " + Count(NumberAt(m, "b_on_only")) + ", only " +
         (knowledge ? "without them" : "with it off") + " c = " + Count(NumberAt(m, "c_off_only")) +
         ", two-sided p = " + Fmt("%.4g", NumberAt(m, "p_value")) + ".";
}

// Which engines served the runs: "sqlite, duckdb", or for --postgres and --mysql "postgresql
// (data/chinook.sqlite served by postgresql://reader@/chinook...)".
std::string EngineText(const json& results) {
  std::string engines;
  const json list = Field(results, "engines");
  for (const json& e : list.is_array() ? list : json::array()) {
    if (e.is_string()) engines += (engines.empty() ? "" : ", ") + e.get<std::string>();
  }
  if (engines.empty()) engines = "none opened";
  for (const char* flag : {"postgres", "mysql"}) {
    const json server = Field(results, flag);
    if (server.is_object()) {
      engines += " (" + TextAt(server, "replaces") + " served by " +
                 TextAt(server, "server", std::string("the --") + flag + " server") + ")";
    }
  }
  return engines;
}

std::string Header(const json& results) {
  return "Model: " + TextAt(results, "model") + " (" + TextAt(results, "provider") +
         ") · judge: " + TextAt(results, "judge_model") + " · date: " + TextAt(results, "date") +
         " · total cost: " + Fmt("$%.4f", NumberAt(results, "total_cost_usd")) +
         " · samples: " + Count(NumberAt(results, "samples")) +
         " · tasks selected: " + Count(NumberAt(results, "tasks_selected")) +
         " · engine: " + EngineText(results);
}

std::string MdSection(const json& results) {
  std::string out;
  out += MarkdownCell(Header(results)) + "\n\n";
  if (const auto it = results.find("budget_stopped");
      it != results.end() && it->is_boolean() && it->get<bool>()) {
    out +=
        "The bench stopped at its --max-cost budget; the task runs not started are counted "
        "as skipped.\n\n";
  }
  const auto names = ArmNames(results);
  out += "| figure |";
  for (const auto& n : names) out += " " + n + " |";
  out += "\n|---|";
  for (size_t i = 0; i < names.size(); ++i) out += "---|";
  out += "\n";
  for (const Row& row : Rows(results)) {
    out += "| " + row.figure + " |";
    for (const auto& c : row.cells) out += " " + MarkdownCell(c) + " |";
    out += "\n";
  }
  if (const std::string m = McNemarLine(results); !m.empty()) out += "\n" + m + "\n";
  out += "\n<details><summary>Every task run</summary>\n\n";
  out +=
      "| task | grader | arm | sample | grade | engine | reason | run id |\n"
      "|---|---|---|---|---|---|---|---|\n";
  const json runs = Field(results, "runs");
  for (const json& r : runs.is_array() ? runs : json::array()) {
    out += "| " + MarkdownCell(TextAt(r, "task")) + " | " + MarkdownCell(TextAt(r, "grader")) +
           " | " + MarkdownCell(TextAt(r, "arm")) + " | " + Count(NumberAt(r, "sample")) + " | " +
           MarkdownCell(TextAt(r, "status")) + " | " + MarkdownCell(TextAt(r, "engine", "")) +
           " | " + MarkdownCell(TextAt(r, "reason", "")) + " | " +
           MarkdownCell(TextAt(r, "run_id", "")) + " |\n";
  }
  out += "\n</details>\n";
  return out;
}

std::string PendingTable() {
  std::string out = "| figure | self-correction on | self-correction off |\n|---|---|---|\n";
  for (const Row& row : Rows(json::object({{"arms", json::array()}}))) {
    out += "| " + row.figure + " | pending | pending |\n";
  }
  return out;
}

// A section of the Chinook tasks on one kind of server (--postgres, --mysql).
std::string ServerSection(const std::string& title, const std::string& flag,
                          const std::string& script, const std::string& dir,
                          const std::optional<json>& offline, const std::optional<json>& live) {
  std::string out = "\n## On " + title + "\n\n" + "The tasks whose data is `" + kServerStandIn +
                    "`, run by `quarry bench --" + flag + " URL` on a " + title +
                    " server loaded from `" + script +
                    "` (the same database), graded with the same truth. From `results/" + dir +
                    "/live/` and `results/" + dir +
                    "/offline/`; these figures are never merged with the ones above.\n\n"
                    "### Live on " +
                    title + "\n\n";
  if (live) {
    out += MdSection(*live);
  } else {
    out += "No live run on " + title + " yet: every figure is pending. Run `quarry bench --" +
           flag + " URL` with a model configured.\n";
  }
  out += "\n### Harness run on scripted turns, on " + title + "\n\n";
  out += std::string("> ") + kScriptedLabel + ".\n\n";
  if (offline) {
    out += MdSection(*offline);
  } else {
    out += "Not run yet: `quarry bench --offline --" + flag + " URL`.\n";
  }
  return out;
}

}  // namespace

std::string RenderResultsMarkdown(
    const std::optional<json>& offline, const std::optional<json>& live,
    const std::optional<json>& postgres_offline, const std::optional<json>& postgres_live,
    const std::optional<json>& knowledge_offline, const std::optional<json>& knowledge_live,
    const std::optional<json>& mysql_offline, const std::optional<json>& mysql_live) {
  std::string out =
      "# quarry bench: results\n\n"
      "Written by `quarry bench` from `results/offline/bench_results.json` (the latest run "
      "on scripted turns) and `results/live/bench_results.json` (the latest run against a "
      "model). Every task run is listed with its run id; its trace is in the JSON file.\n\n";
  out += "## Live\n\n";
  if (live) {
    out += MdSection(*live);
  } else {
    out +=
        "No live run yet: every figure is pending. Run `quarry bench` with a model "
        "configured (see the README's \"Measuring quality\").\n\n";
    out += PendingTable();
  }
  out += "\n## Harness run on scripted turns\n\n";
  out += std::string("> ") + kScriptedLabel + ".\n\n";
  if (offline) {
    out += MdSection(*offline);
  } else {
    out += "Not run yet: `quarry bench --offline`.\n";
  }
  out += ServerSection("PostgreSQL", "postgres", "data/chinook_postgresql.sql", "postgresql",
                       postgres_offline, postgres_live);
  out += ServerSection("MariaDB (MySQL protocol)", "mysql", "data/chinook_mysql.sql", "mysql",
                       mysql_offline, mysql_live);
  out += std::string("\n## With and without knowledge files\n\n") +
         "The same tasks, each run once with the knowledge files of its data (`quarry bench "
         "--knowledge data/knowledge`: `data/knowledge/<data file's stem>/`) and once without "
         "them, self-correction on in both. From `results/knowledge/live/` and "
         "`results/knowledge/offline/`.\n\n### Live, knowledge arm\n\n";
  if (knowledge_live) {
    out += MdSection(*knowledge_live);
  } else {
    out +=
        "No live run yet: every figure is pending. Run `quarry bench --knowledge "
        "data/knowledge` with a model configured.\n";
  }
  out += "\n### Harness run on scripted turns, knowledge arm\n\n";
  out += std::string("> ") + kScriptedLabel +
         ". Scripted turns are the same in both arms, so equal figures here say only that the "
         "harness runs both.\n\n";
  if (knowledge_offline) {
    out += MdSection(*knowledge_offline);
  } else {
    out += "Not run yet: `quarry bench --offline --knowledge data/knowledge`.\n";
  }
  return out;
}

std::string RenderSiteBlock(const json& results) {
  const bool scripted = TextAt(results, "source") == "scripted";
  std::string out = "<div class=\"bench\">\n";
  out += "<p>" + EscapeMarkup(Header(results)) + "</p>\n";
  if (scripted) out += "<p><strong>" + EscapeMarkup(kScriptedLabel) + ".</strong></p>\n";
  out += "<table>\n<thead><tr><th>figure</th>";
  for (const auto& n : ArmNames(results)) out += "<th>" + EscapeMarkup(n) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const Row& row : Rows(results)) {
    out += "<tr><td>" + EscapeMarkup(row.figure) + "</td>";
    for (const auto& c : row.cells) out += "<td>" + EscapeMarkup(c) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
  if (const std::string m = McNemarLine(results); !m.empty())
    out += "<p>" + EscapeMarkup(m) + "</p>\n";
  out += "</div>\n";
  return out;
}

Result<std::string> ReplaceMarkedBlock(const std::string& page, const std::string& block) {
  const size_t begin = page.find(kBegin);
  const size_t end = page.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return Fail(Error::Code::kData, std::string("the page has no ") + kBegin + " ... " + kEnd +
                                        " block (in that order); add the two markers where the "
                                        "table goes");
  }
  if (page.find(kBegin, begin + 1) != std::string::npos ||
      page.find(kEnd, end + 1) != std::string::npos) {
    return Fail(Error::Code::kData, "the page has more than one bench block; keep one");
  }
  const size_t after_begin = begin + std::string(kBegin).size();
  return page.substr(0, after_begin) + "\n" + block + page.substr(end);
}

}  // namespace quarry::bench
