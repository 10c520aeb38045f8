// Internals shared by the agent's files; not part of its public surface.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quarry/agent/agent.h"

namespace quarry::agent {

// The prompt file prompts/<name>.md with each {{key}} replaced by its value.
std::string Prompt(const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& values);

// A result as the model reads it (RenderResult with the preview size), recording what that
// shows (the preview cells and the true row count) as evidence for the verify gate, with the
// tool and the query that produced it.
std::string ShowResult(const engine::ResultTable& table, ToolContext& context,
                       const std::string& tool, const std::string& sql);
// Only the evidence part of ShowResult (an empty result, shown as a failure, still grounds 0).
void RecordEvidence(const engine::ResultTable& table, ToolContext& context,
                    const std::string& tool, const std::string& sql);

// The JSON Schema of a tool's arguments as the model sees it (inspect_schema, run_sql,
// run_python, make_chart, final_answer; arguments.cc); an empty object for any other name.
nlohmann::ordered_json ToolParameters(std::string_view tool);

// make_chart's implementation (chart_tool.cc).
Observation MakeChart(const nlohmann::ordered_json& args, ToolContext& context);

// inspect_schema's index of the tables whose names start with `prefix` (ignoring case; "" for
// all), from the `offset`-th: one line each (name, rows, columns) up to kIndexPageBytes, a line
// of counts by name prefix when they do not all fit, and the offset of the next page.
inline constexpr size_t kIndexPageBytes = 6000;
std::string TableIndex(const std::vector<engine::TableCard>& cards, const std::string& prefix,
                       size_t offset);

// The error for a table name that matches none: every name when they fit kNamesInErrorBytes,
// else the kNearestNames nearest (containing it, then by edit distance, ignoring case), the count,
// and how to list them.
inline constexpr size_t kNamesInErrorBytes = 2000;
inline constexpr size_t kNearestNames = 8;
std::string UnknownTableText(const std::vector<engine::TableCard>& cards, const std::string& want);

}  // namespace quarry::agent
