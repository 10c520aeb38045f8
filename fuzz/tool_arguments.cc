// libFuzzer target: a tool call's arguments as the model sends them (any bytes), parsed as
// the loop and the MCP server do (quarry::ParseJson) and checked against every tool's real
// schema (agent::ValidateArguments, agent::ToolParameters). Anything but an object is refused.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"
#include "quarry/common/json.h"

using json = nlohmann::ordered_json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<json> schemas = [] {
    std::vector<json> all;
    for (const char* tool : {"inspect_schema", "run_sql", "run_python", "make_chart", "ask_user",
                             "final_answer", "unknown"}) {
      all.push_back(quarry::agent::ToolParameters(tool));
    }
    return all;
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json arguments = quarry::ParseJson(text);
  if (arguments.is_discarded()) return 0;
  for (const json& schema : schemas) {
    const std::string problem = quarry::agent::ValidateArguments(schema, arguments);
    if (!arguments.is_object() && problem.empty()) std::abort();
  }
  return 0;
}
