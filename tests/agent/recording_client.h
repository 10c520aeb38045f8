// A model client for the agent's tests: plays scripted turns (labelled scripted in each test)
// and keeps every request the loop sent, so a test can read exactly what the model was shown.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/llm/llm.h"

namespace quarry::agent::testing {

// One scripted tool call; `arguments` is serialised as the model would send it.
inline llm::ToolCall Call(std::string id, std::string name,
                          const nlohmann::ordered_json& arguments) {
  return {std::move(id), std::move(name), arguments.dump()};
}

// A scripted assistant turn: text, tool calls, and a fixed usage and cost.
inline llm::Turn Scripted(std::vector<llm::ToolCall> calls, std::string content = "") {
  llm::Turn t;
  t.content = std::move(content);
  t.tool_calls = std::move(calls);
  t.finish_reason = t.tool_calls.empty() ? llm::FinishReason::kStop : llm::FinishReason::kToolCalls;
  t.usage = {1000, 40, 0};
  t.cost_usd = 0.001;
  t.cost_reported = true;
  return t;
}

class RecordingClient final : public llm::Client {
 public:
  std::deque<llm::Turn> turns;
  std::vector<llm::Request> requests;  // every request, in order
  // The bound MaxCostUsd reports for any prompt; nullopt: the model has no price.
  std::optional<double> max_cost_usd;

  Result<llm::Turn> Complete(const llm::Request& request) override {
    requests.push_back(request);
    if (turns.empty()) return Fail(Error::Code::kModel, "script exhausted");
    llm::Turn next = std::move(turns.front());
    turns.pop_front();
    return next;
  }
  llm::Provider provider() const override { return llm::Provider::kReplay; }
  std::string model() const override { return "scripted-model"; }
  std::optional<double> MaxCostUsd(int64_t) const override { return max_cost_usd; }
};

}  // namespace quarry::agent::testing
