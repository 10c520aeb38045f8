// `quarry report`, figures and rendering (report.h): a group's mean, median and maximum, and the
// same tables as text, JSON and one self-contained HTML page with an inline SVG histogram.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "quarry/common/text.h"
#include "quarry/bench/report.h"
#include "quarry/chart/chart.h"

namespace quarry::bench {
namespace {

using json = nlohmann::ordered_json;

Figure FigureOf(const std::vector<double>& values) {
  if (values.empty()) {
    const double nan = std::nan("");
    return {nan, nan, nan};
  }
  return {Mean(values), Median(values), *std::max_element(values.begin(), values.end())};
}

// The rows of every table, in order: name, unit-aware formatting, and the figure.
struct Row {
  const char* key;    // the JSON name
  const char* label;  // the table's
  int decimals;       // mean and median; a count's maximum is whole
  bool whole_max;
  const Figure GroupFigures::*figure;
};
constexpr Row kRows[] = {
    {"model_calls", "model calls", 2, true, &GroupFigures::model_calls},
    {"tool_calls", "tool calls", 2, true, &GroupFigures::tool_calls},
    {"prompt_tokens", "prompt tokens", 1, true, &GroupFigures::prompt_tokens},
    {"completion_tokens", "completion tokens", 1, true, &GroupFigures::completion_tokens},
    {"wall_seconds", "wall seconds", 3, false, &GroupFigures::wall_seconds},
    {"cost_usd", "cost (USD)", 6, false, &GroupFigures::cost_usd},
};

std::string Fixed(double v, int decimals) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Pad(const std::string& s, size_t width, bool right) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

json Number(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

std::string GroupTitle(const GroupFigures& g) {
  return g.group.empty() ? std::string("all runs") : "arm " + g.group;
}

std::string StopReasonsText(const GroupFigures& g) {
  std::string out;
  for (const auto& [reason, n] : g.stop_reasons) {
    out += (out.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  }
  return out.empty() ? "none" : out;
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Headline(const Report& r) {
  size_t incomplete = 0;
  for (const ReportRun& run : r.runs) incomplete += run.incomplete ? 1 : 0;
  std::string out = std::string(ReportSourceName(r.source)) + " " + r.path.string() + ": " +
                    Plural(r.runs.size(), "run", "runs");
  if (incomplete > 0) out += " (" + std::to_string(incomplete) + " incomplete)";
  if (!r.skipped.empty()) out += ", " + Plural(r.skipped.size(), "trace skipped", "traces skipped");
  if (r.not_run > 0) out += ", " + Plural(r.not_run, "entry", "entries") + " listed without a run";
  return out;
}

// Figures from recorded turns measure the harness; they are never shown as a model's.
std::string ReplayNote(const Report& r) {
  if (r.replayed == 0) return "";
  return std::to_string(r.replayed) + " of " + Plural(r.runs.size(), "run", "runs") +
         " replayed recorded model turns (provider replay): harness figures, not a measure of "
         "any model";
}

// ---- HTML -------------------------------------------------------------------------------

std::string H(std::string_view text) { return EscapeMarkup(text); }

// The latency histogram (wall seconds per run; one colour per arm when there are arms) as an
// SVG element to inline. cairo's file starts with an XML declaration, which HTML does not take.
Result<std::string> HistogramSvg(const Report& r) {
  const bool by_arm = r.groups.size() > 1;
  chart::Table table;
  table.columns = {"wall seconds"};
  table.types = {"DOUBLE"};
  if (by_arm) {
    table.columns.push_back("arm");
    table.types.push_back("VARCHAR");
  }
  for (const ReportRun& run : r.runs) {
    std::vector<std::optional<std::string>> row = {
        Fixed(static_cast<double>(run.metrics.wall_ms) / 1000.0, 3)};
    if (by_arm) row.push_back(run.group.empty() ? "(no arm)" : run.group);
    table.rows.push_back(std::move(row));
  }
  chart::Spec spec;
  spec.mark = chart::Mark::kBar;
  spec.title = "Latency per run (" + Plural(r.runs.size(), "run", "runs") + ")";
  chart::Channel x;
  x.field = "wall seconds";
  x.type = chart::FieldType::kQuantitative;
  x.bin = true;
  x.title = "wall seconds per run";
  spec.x = x;
  chart::Channel y;
  y.type = chart::FieldType::kQuantitative;
  y.aggregate = "count";
  y.title = "runs";
  spec.y = y;
  if (by_arm) {
    chart::Channel color;
    color.field = "arm";
    spec.color = color;
  }
  auto rendered = chart::Render(spec, table, 720, 360);
  if (!rendered) {
    return std::unexpected(Context(rendered.error(), "drawing the latency histogram failed"));
  }
  const size_t open = rendered->svg.find("<svg");
  if (open == std::string::npos) {
    return Fail(Error::Code::kInternal, "drawing the latency histogram failed: no <svg> element");
  }
  return rendered->svg.substr(open);
}

std::string FiguresTableHtml(const GroupFigures& g) {
  std::string h =
      "<table class=\"figures\"><thead><tr><th>per run</th><th>mean</th>"
      "<th>median</th><th>max</th></tr></thead><tbody>";
  for (const Row& row : kRows) {
    const Figure& f = g.*row.figure;
    h += "<tr><th>" + H(row.label) + "</th><td>" + Fixed(f.mean, row.decimals) + "</td><td>" +
         Fixed(f.median, row.decimals) + "</td><td>" +
         Fixed(f.max, row.whole_max ? 0 : row.decimals) + "</td></tr>";
  }
  return h + "</tbody></table>";
}

std::string CountsTableHtml(const GroupFigures& g) {
  std::string h = "<table class=\"counts\"><tbody>";
  auto line = [&](const std::string& name, int n) {
    h += "<tr><th>" + H(name) + "</th><td>" + std::to_string(n) + "</td></tr>";
  };
  line("runs", g.runs);
  line("incomplete (killed)", g.incomplete);
  line("answered", g.answered);
  line("grounded", g.grounded);
  line("repair attempts", g.repair_attempts);
  line("repair successes", g.repair_successes);
  line("send-backs (answers the verify gate returned)", g.send_backs);
  line("runs with a send-back", g.runs_with_send_backs);
  for (const auto& [reason, n] : g.stop_reasons) line("stop: " + reason, n);
  return h + "</tbody></table>";
}

std::string RunListHtml(const Report& r) {
  std::string h =
      "<table class=\"runs\"><thead><tr><th>run</th><th>arm</th><th>task</th>"
      "<th>question</th><th>stop</th><th>model calls</th><th>tool calls</th>"
      "<th>repairs</th><th>send-backs</th>"
      "<th>prompt tokens</th><th>completion tokens</th><th>wall s</th>"
      "<th>cost (USD)</th></tr></thead><tbody>";
  for (const ReportRun& run : r.runs) {
    const RunMetrics& m = run.metrics;
    h += "<tr><td title=\"" + H(run.trace_path.string()) + "\">" + H(run.run_id) + "</td><td>" +
         H(run.group) + "</td><td>" + H(run.label) + "</td><td>" + H(run.question) + "</td><td>" +
         H(run.stop_reason) + (run.incomplete ? " <span class=\"badge\">incomplete</span>" : "") +
         "</td><td>" + std::to_string(m.model_calls) + "</td><td>" + std::to_string(m.tool_calls) +
         "</td><td>" + std::to_string(m.repair_successes) + "/" +
         std::to_string(m.repair_attempts) + "</td><td>" + std::to_string(m.send_backs) +
         "</td><td>" + std::to_string(m.prompt_tokens) + "</td><td>" +
         std::to_string(m.completion_tokens) + "</td><td>" +
         Fixed(static_cast<double>(m.wall_ms) / 1000.0, 3) + "</td><td>" + Fixed(m.cost_usd, 6) +
         "</td></tr>";
  }
  return h + "</tbody></table>";
}

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#222;"
    "padding:0 1rem}table{border-collapse:collapse;margin:.5rem 0 1.5rem}"
    "th,td{border:1px solid #ddd;padding:.25rem .6rem;text-align:right;vertical-align:top}"
    "thead th,tbody th{text-align:left;background:#f6f6f6}"
    "table.runs td:nth-child(-n+5){text-align:left}.muted{color:#666}"
    ".badge{background:#fde2e1;color:#8a1c14;border-radius:3px;padding:0 .3rem;"
    "font-size:.85em}.note{background:#fff8e1;padding:.4rem .6rem}figure{margin:1rem "
    "0}svg{max-width:100%;height:auto}";

}  // namespace

GroupFigures FiguresOf(const std::vector<const ReportRun*>& runs, const std::string& group) {
  GroupFigures g;
  g.group = group;
  std::vector<double> model, tool, prompt, completion, wall, cost;
  for (const ReportRun* run : runs) {
    const RunMetrics& m = run->metrics;
    ++g.runs;
    g.incomplete += run->incomplete ? 1 : 0;
    g.answered += m.answered ? 1 : 0;
    g.grounded += m.grounded ? 1 : 0;
    g.repair_attempts += m.repair_attempts;
    g.repair_successes += m.repair_successes;
    g.send_backs += m.send_backs;
    g.runs_with_send_backs += m.send_backs > 0 ? 1 : 0;
    ++g.stop_reasons[run->stop_reason.empty() ? "(none)" : run->stop_reason];
    model.push_back(m.model_calls);
    tool.push_back(m.tool_calls);
    prompt.push_back(static_cast<double>(m.prompt_tokens));
    completion.push_back(static_cast<double>(m.completion_tokens));
    wall.push_back(static_cast<double>(m.wall_ms) / 1000.0);
    cost.push_back(m.cost_usd);
  }
  g.model_calls = FigureOf(model);
  g.tool_calls = FigureOf(tool);
  g.prompt_tokens = FigureOf(prompt);
  g.completion_tokens = FigureOf(completion);
  g.wall_seconds = FigureOf(wall);
  g.cost_usd = FigureOf(cost);
  return g;
}

std::string ReportText(const Report& r) {
  std::string out = Headline(r) + "\n";
  if (r.replayed > 0) out += "note: " + ReplayNote(r) + "\n";
  for (const GroupFigures& g : r.groups) {
    out += "\n" + GroupTitle(g) + ": " + Plural(g.runs, "run", "runs");
    if (g.incomplete > 0) out += " (" + std::to_string(g.incomplete) + " incomplete)";
    out += "\n" + Pad("per run", 20, false) + Pad("mean", 12, true) + Pad("median", 12, true) +
           Pad("max", 12, true) + "\n";
    for (const Row& row : kRows) {
      const Figure& f = g.*row.figure;
      out += Pad(row.label, 20, false) + Pad(Fixed(f.mean, row.decimals), 12, true) +
             Pad(Fixed(f.median, row.decimals), 12, true) +
             Pad(Fixed(f.max, row.whole_max ? 0 : row.decimals), 12, true) + "\n";
    }
    out += "answered " + std::to_string(g.answered) + " of " + std::to_string(g.runs) +
           ", grounded " + std::to_string(g.grounded) + " of " + std::to_string(g.runs) + "\n";
    out += "repairs " + std::to_string(g.repair_successes) + "/" +
           std::to_string(g.repair_attempts) + " (succeeded/attempted), send-backs " +
           std::to_string(g.send_backs) + " (in " + std::to_string(g.runs_with_send_backs) +
           " of " + std::to_string(g.runs) + " runs)\n";
    out += "stop reasons: " + StopReasonsText(g) + "\n";
  }
  bool header = false;
  for (const ReportRun& run : r.runs) {
    if (!run.incomplete) continue;
    if (!header) out += "\nincomplete runs (killed; figures summed from events.jsonl):\n";
    header = true;
    out += "  " + run.run_id + "  " + run.trace_path.string() + "\n";
  }
  if (!r.skipped.empty()) out += "\nskipped (could not be read):\n";
  for (const SkippedTrace& s : r.skipped) out += "  " + s.path.string() + ": " + s.reason + "\n";
  return out;
}

json ReportJson(const Report& r) {
  int incomplete = 0;
  for (const ReportRun& run : r.runs) incomplete += run.incomplete ? 1 : 0;
  json skipped = json::array();
  for (const SkippedTrace& s : r.skipped) {
    skipped.push_back({{"path", s.path.string()}, {"reason", s.reason}});
  }
  json groups = json::array();
  for (const GroupFigures& g : r.groups) {
    json figures = json::object();
    for (const Row& row : kRows) {
      const Figure& f = g.*row.figure;
      figures[row.key] = {
          {"mean", Number(f.mean)}, {"median", Number(f.median)}, {"max", Number(f.max)}};
    }
    json stops = json::object();
    for (const auto& [reason, n] : g.stop_reasons) stops[reason] = n;
    groups.push_back({{"group", g.group.empty() ? json(nullptr) : json(g.group)},
                      {"runs", g.runs},
                      {"incomplete", g.incomplete},
                      {"answered", g.answered},
                      {"grounded", g.grounded},
                      {"repair_attempts", g.repair_attempts},
                      {"repair_successes", g.repair_successes},
                      {"send_backs", g.send_backs},
                      {"runs_with_send_backs", g.runs_with_send_backs},
                      {"stop_reasons", stops},
                      {"figures", figures}});
  }
  json runs = json::array();
  for (const ReportRun& run : r.runs) {
    const RunMetrics& m = run.metrics;
    runs.push_back({{"run_id", run.run_id},
                    {"group", run.group.empty() ? json(nullptr) : json(run.group)},
                    {"label", run.label.empty() ? json(nullptr) : json(run.label)},
                    {"trace", run.trace_path.string()},
                    {"provider", run.provider},
                    {"model", run.model},
                    {"stop_reason", run.stop_reason},
                    {"incomplete", run.incomplete},
                    {"model_calls", m.model_calls},
                    {"tool_calls", m.tool_calls},
                    {"repair_attempts", m.repair_attempts},
                    {"repair_successes", m.repair_successes},
                    {"send_backs", m.send_backs},
                    {"prompt_tokens", m.prompt_tokens},
                    {"completion_tokens", m.completion_tokens},
                    {"wall_seconds", static_cast<double>(m.wall_ms) / 1000.0},
                    {"cost_usd", m.cost_usd},
                    {"answered", m.answered},
                    {"grounded", m.grounded}});
  }
  return {{"source", r.path.string()}, {"kind", std::string(ReportSourceName(r.source))},
          {"runs", r.runs.size()},     {"incomplete", incomplete},
          {"replayed", r.replayed},    {"not_run", r.not_run},
          {"skipped", skipped},        {"groups", groups},
          {"run_list", runs}};
}

Result<std::string> ReportHtml(const Report& r) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>quarry report: " +
      H(r.path.string()) + "</title><style>" + kStyle +
      "</style></head><body>\n<h1>quarry report</h1>\n<p class=\"muted\">" + H(Headline(r)) +
      "</p>\n";
  if (r.replayed > 0) h += "<p class=\"note\">" + H(ReplayNote(r)) + "</p>\n";
  for (const GroupFigures& g : r.groups) {
    h += "<h2>" + H(GroupTitle(g)) + "</h2>\n" + FiguresTableHtml(g) + "\n" + CountsTableHtml(g) +
         "\n";
  }
  if (!r.runs.empty()) {
    auto svg = HistogramSvg(r);
    if (!svg) return std::unexpected(svg.error());
    h += "<h2>Latency</h2>\n<figure class=\"histogram\">" + *svg +
         "<figcaption class=\"muted\">Wall seconds per run (the trace's totals.wall_ms: the "
         "whole run, opening the data included).</figcaption></figure>\n";
    h += "<h2>Runs</h2>\n" + RunListHtml(r) + "\n";
  }
  if (!r.skipped.empty()) {
    h += "<h2>Skipped traces</h2>\n<table class=\"skipped\"><thead><tr><th>path</th>"
         "<th>reason</th></tr></thead><tbody>";
    for (const SkippedTrace& s : r.skipped) {
      h += "<tr><td>" + H(s.path.string()) + "</td><td>" + H(s.reason) + "</td></tr>";
    }
    h += "</tbody></table>\n";
  }
  return h + "</body></html>\n";
}

}  // namespace quarry::bench
