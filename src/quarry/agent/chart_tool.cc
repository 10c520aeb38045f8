// The make_chart tool: the spec's query runs through the same guard as run_sql, the spec is
// checked and linted against the rows, and the chart is rendered to PNG and SVG beside the
// trace. Its data comes from a query, so a chart is as grounded as an answer.
#include <fstream>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"
#include "quarry/chart/chart.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;

bool WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace

Observation MakeChart(const json& args, ToolContext& ctx) {
  Observation obs;
  auto spec = chart::ParseSpec(args["spec"]);
  if (!spec) {
    obs.failure = FailureClass::kBadArguments;
    obs.text = "bad_arguments: " + spec.error().message;
    return obs;
  }
  obs.detail = {{"spec", args["spec"]}, {"sql", spec->sql}};
  engine::Limits limits = ctx.config.limits;
  limits.max_rows = static_cast<int>(ctx.config.chart_max_rows);
  auto outcome = ctx.engine.Query(spec->sql, limits);
  if (!outcome) {
    obs.failure = outcome.error().failure_class;
    obs.rule = outcome.error().rule;
    obs.text = (outcome.error().code == Error::Code::kCancelled
                    ? std::string("cancelled")
                    : std::string(FailureClassName(obs.failure))) +
               ": " + outcome.error().message;
    return obs;
  }
  if (outcome->truncated()) {
    obs.failure = FailureClass::kBadArguments;
    obs.rule = "too_many_rows";
    obs.text = "bad_arguments (too_many_rows): the chart query returned " +
               std::to_string(outcome->row_count) + " rows; a chart draws at most " +
               std::to_string(ctx.config.chart_max_rows) + ": aggregate or bin in SQL";
    return obs;
  }
  const chart::Table table{outcome->columns, outcome->types, outcome->rows};
  const auto problems = chart::Check(*spec, table);
  if (!problems.empty()) {
    obs.failure = problems.front().rule == "no_rows" ? FailureClass::kEmptyResult
                                                     : FailureClass::kBadArguments;
    obs.rule = problems.front().rule;
    obs.text = std::string(FailureClassName(obs.failure)) + ": the chart was not drawn:";
    for (const auto& p : problems) obs.text += "\n- " + p.rule + ": " + p.message;
    return obs;
  }
  auto rendered = chart::Render(*spec, table);
  if (!rendered) {
    obs.failure = FailureClass::kRuntimeError;
    obs.text = "runtime_error: " + rendered.error().message;
    return obs;
  }
  const auto& dir = ctx.config.artifacts_dir;
  int n = 1;
  while (std::filesystem::exists(dir / ("chart-" + std::to_string(n) + ".png"))) ++n;
  const auto png = dir / ("chart-" + std::to_string(n) + ".png");
  const auto svg = dir / ("chart-" + std::to_string(n) + ".svg");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!WriteFile(png, rendered->png) || !WriteFile(svg, rendered->svg)) {
    obs.failure = FailureClass::kRuntimeError;
    obs.text = "runtime_error: cannot write the chart to " + dir.string();
    return obs;
  }
  obs.artifacts = {png.string(), svg.string()};
  obs.detail["artifacts"] = obs.artifacts;
  obs.detail["sql"] = spec->sql;
  obs.detail["columns"] = outcome->columns;
  obs.detail["row_count"] = outcome->row_count;
  obs.detail["rows"] = RowsJson(*outcome, outcome->rows.size());
  obs.text = "chart drawn: " + png.filename().string() + " and " + svg.filename().string() + " (" +
             std::to_string(rendered->width) + "x" + std::to_string(rendered->height) + "), " +
             std::to_string(outcome->row_count) + " rows. The data drawn:\n" +
             ShowResult(*outcome, ctx, "make_chart", spec->sql);
  return obs;
}

}  // namespace quarry::agent
