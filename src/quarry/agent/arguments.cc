// The tools' argument contract: the JSON Schema of each tool's arguments as the model sees it,
// the check of a tool call's arguments against it (agent.h, ValidateArguments), and the limits
// on final_answer's assumptions the schema cannot state. Apart from
// tools.cc, which runs the tools, so the check can be built and fuzzed on its own (fuzz/).
#include <algorithm>
#include <string>
#include <string_view>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;

std::string JsonType(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

bool TypeFits(const json& schema, const json& v) {
  if (!schema.contains("type")) return true;
  const json& t = schema["type"];
  auto fits = [&](const std::string& want) {
    const std::string got = JsonType(v);
    return got == want || (want == "number" && got == "integer");
  };
  if (t.is_array()) {
    return std::any_of(t.begin(), t.end(),
                       [&](const json& w) { return fits(w.get<std::string>()); });
  }
  return fits(t.get<std::string>());
}

std::string TypeText(const json& schema) {
  return schema.contains("type") ? schema["type"].dump() : "any";
}

}  // namespace

json ToolParameters(std::string_view tool) {
  if (tool == "inspect_schema") {
    return json::parse(R"({"type":"object","properties":{"table":{"type":"string","minLength":1,
        "description":"one table's name; omit for all"},"columns":{"type":"array",
        "items":{"type":"string"},"description":"only these columns of `table`"},
        "prefix":{"type":"string","description":"name start"},
        "offset":{"type":"integer","minimum":0}},
        "additionalProperties":false})");
  }
  if (tool == "run_sql") {
    return json::parse(R"({"type":"object","properties":{"sql":{"type":"string","minLength":1,
        "description":"a single SELECT query in the engine's dialect"}},"required":["sql"],
        "additionalProperties":false})");
  }
  if (tool == "run_python") {
    return json::parse(R"({"type":"object","properties":{"code":{"type":"string","minLength":1,
          "description":"a Python script; print the results"}},"required":["code"],
          "additionalProperties":false})");
  }
  if (tool == "make_chart") {
    return json::parse(R"({"type":"object","properties":{"spec":{"type":"object",
          "description":"the chart spec; data.sql is the query whose rows are drawn"}},
          "required":["spec"],"additionalProperties":false})");
  }
  if (tool == "ask_user") {
    return json::parse(R"({"type":"object","properties":{
        "question":{"type":"string","minLength":1,"maxLength":500,
          "description":"one short question to the user"},
        "choices":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":6,
          "description":"2 to 6 short options the user can pick from; omit for a free reply"},
        "term":{"type":"string","maxLength":80,
          "description":"the word or phrase of the user's question that is open, e.g. top customer: the reply can be kept in the glossary for later questions"}},
        "required":["question"],"additionalProperties":false})");
  }
  if (tool == "final_answer") {
    return json::parse(R"({"type":"object","properties":{
        "answer":{"type":"string","minLength":1,"description":"the answer in plain English"},
        "supporting_values":{"type":"array","items":{"type":["string","number"]},
          "description":"the exact values from query results that the answer rests on"},
        "assumptions":{"type":"array","items":{"type":"string"},"maxItems":5,
          "description":"choices the question left open, each a short sentence: top customer = by revenue"},
        "outcome":{"type":"string","enum":["answer","declined"],
          "description":"declined: you cannot answer; say why"}},
        "required":["answer","supporting_values"],"additionalProperties":false})");
  }
  return json::object();
}

std::string CheckAssumptions(const std::vector<std::string>& assumptions) {
  if (assumptions.size() > kMaxAssumptions) {
    return "at most " + std::to_string(kMaxAssumptions) +
           " assumptions; keep the ones the "
           "answer depends on";
  }
  for (const std::string& a : assumptions) {
    if (a.size() > kMaxAssumptionBytes) {
      return "each assumption must be at most " + std::to_string(kMaxAssumptionBytes) +
             " bytes: state the choice in one sentence";
    }
  }
  return "";
}

std::string ValidateArguments(const json& schema, const json& arguments) {
  if (!arguments.is_object()) return "arguments must be a JSON object, got " + JsonType(arguments);
  const json props = schema.value("properties", json::object());
  for (const auto& req : schema.value("required", json::array())) {
    if (!arguments.contains(req.get<std::string>())) {
      return "missing required argument '" + req.get<std::string>() + "'";
    }
  }
  for (const auto& [key, value] : arguments.items()) {
    if (!props.contains(key)) {
      std::string known;
      for (const auto& [k, _] : props.items()) known += (known.empty() ? "" : ", ") + k;
      return "unknown argument '" + key + "'; this tool takes: " + known;
    }
    const json& p = props[key];
    if (!TypeFits(p, value)) {
      return "argument '" + key + "' must be " + TypeText(p) + ", got " + JsonType(value);
    }
    if (p.contains("enum") &&
        std::find(p["enum"].begin(), p["enum"].end(), value) == p["enum"].end()) {
      return "argument '" + key + "' must be one of " + p["enum"].dump();
    }
    if (value.is_string() && p.value("minLength", 0) > 0 && value.get<std::string>().empty()) {
      return "argument '" + key + "' must not be empty";
    }
    if (value.is_array() && p.contains("items")) {
      for (const auto& item : value) {
        if (!TypeFits(p["items"], item)) {
          return "every item of '" + key + "' must be " + TypeText(p["items"]) + ", got " +
                 JsonType(item);
        }
      }
    }
  }
  return "";
}

}  // namespace quarry::agent
