// Internals shared by the agent's files; not part of its public surface.
#pragma once

#include <string>
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

// make_chart's implementation (chart_tool.cc).
Observation MakeChart(const nlohmann::ordered_json& args, ToolContext& context);

}  // namespace quarry::agent
