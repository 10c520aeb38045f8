// The explanation a run gets when it ends on a budget (repair, steps, tool calls): one last
// model call without tools, so the user reads what failed and what to try instead of a bare
// stop reason. Its text goes to trace.explanation: never an answer, never verified.
#include <chrono>
#include <cstdio>
#include <map>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"

namespace quarry::agent {
namespace {

// The conversation in plain text: every provider takes it without the tool schemas (some
// refuse tool calls in a history when no tools are offered).
std::vector<llm::Message> AsText(const std::vector<llm::Message>& messages) {
  std::vector<llm::Message> out;
  auto add = [&out](llm::Role role, std::string text) {
    // Consecutive turns of one role become one: some providers require alternation.
    if (!out.empty() && out.back().role == role && role != llm::Role::kSystem) {
      out.back().content += "\n\n" + text;
      return;
    }
    out.push_back({role, std::move(text), {}, {}});
  };
  std::map<std::string, std::string> tool_of;  // call id -> tool name
  for (const llm::Message& m : messages) {
    switch (m.role) {
      case llm::Role::kSystem:
        add(m.role, m.content);
        out.back().cache_split = m.cache_split;  // the same stable prefix as the run's calls
        break;
      case llm::Role::kUser:
        add(m.role, m.content);
        break;
      case llm::Role::kAssistant: {
        std::string text = m.content;
        for (const llm::ToolCall& c : m.tool_calls) {
          tool_of[c.id] = c.name;
          text += (text.empty() ? "" : "\n") + std::string("[called ") + c.name + " with " +
                  c.arguments_json + "]";
        }
        add(llm::Role::kAssistant, text.empty() ? "(no reply)" : text);
        break;
      }
      case llm::Role::kTool: {
        const auto it = tool_of.find(m.tool_call_id);
        add(llm::Role::kUser, "[result of " + (it == tool_of.end() ? m.tool_call_id : it->second) +
                                  "]\n" + m.content);
        break;
      }
    }
  }
  return out;
}

std::string Why(trace::StopReason stop_reason, const Config& config) {
  if (stop_reason == trace::StopReason::kStepBudget) {
    return "the step budget (--max-steps " + std::to_string(config.max_steps) +
           ") ran out without a verified answer";
  }
  if (stop_reason == trace::StopReason::kToolCallBudget) {
    return "the tool-call budget (--max-tool-calls " + std::to_string(config.max_tool_calls) +
           ") ran out without a verified answer";
  }
  return "the repair budget (--max-repairs " + std::to_string(config.max_repairs) +
         ") ran out: failed tool calls were not repaired, or one was sent again unchanged";
}

std::string Flag(trace::StopReason stop_reason) {
  if (stop_reason == trace::StopReason::kStepBudget) return "--max-steps";
  if (stop_reason == trace::StopReason::kToolCallBudget) return "--max-tool-calls";
  return "--max-repairs";
}

std::string Trimmed(std::string text) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!text.empty() && space(text.back())) text.pop_back();
  size_t start = 0;
  while (start < text.size() && space(text[start])) ++start;
  text.erase(0, start);
  if (text.size() > kMaxExplanationBytes) {
    size_t cut = kMaxExplanationBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
    text += "…";
  }
  return text;
}

}  // namespace

bool ExplainsStop(trace::StopReason stop_reason) {
  return stop_reason == trace::StopReason::kRepairBudget ||
         stop_reason == trace::StopReason::kStepBudget ||
         stop_reason == trace::StopReason::kToolCallBudget;
}

Explanation Explain(llm::Client& client, const std::vector<llm::Message>& messages,
                    trace::StopReason stop_reason, const Config& config, double spent_usd,
                    const StopToken& stop) {
  Explanation out;
  if (stop.stop_requested()) return out;
  llm::Request request;
  request.messages = AsText(messages);
  request.messages.push_back(
      {llm::Role::kUser,
       Prompt("explain", {{"why", Why(stop_reason, config)}, {"flag", Flag(stop_reason)}}),
       {},
       {}});
  if (request.messages.size() >= 2 &&
      request.messages[request.messages.size() - 2].role == llm::Role::kUser) {
    // The last result and the request as one user turn (alternation, as above).
    std::string last = std::move(request.messages.back().content);
    request.messages.pop_back();
    request.messages.back().content += "\n\n" + last;
  }
  request.max_output_tokens = kExplanationMaxTokens;
  request.stop = stop;
  request.prompt_tokens_estimate = EstimateRequestTokens(request.messages, {});
  // The bound uses the client's own output limit, above kExplanationMaxTokens: a cautious one.
  const std::optional<double> most = client.MaxCostUsd(request.prompt_tokens_estimate);
  if ((most && !(spent_usd + *most <= config.max_cost_usd)) ||
      !(spent_usd <= config.max_cost_usd)) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "no explanation of the stop: the call could cost up to $%.4f and $%.4f of the "
                  "$%.4f budget (--max-cost) is spent",
                  most.value_or(0.0), spent_usd, config.max_cost_usd);
    out.note = line;
    return out;
  }
  const auto started = std::chrono::steady_clock::now();
  auto turn = client.Complete(request);
  if (!turn) {
    if (!stop.stop_requested()) {
      out.note = "no explanation of the stop: " + turn.error().message;
    }
    return out;
  }
  trace::Step step;
  step.kind = trace::StepKind::kModel;
  step.content = turn->content;
  step.input_tokens = turn->usage.input_tokens;
  step.output_tokens = turn->usage.output_tokens;
  step.cached_tokens = turn->usage.cached_tokens;
  step.cache_write_tokens = turn->usage.cache_write_tokens;
  step.cost_usd = turn->cost_usd;
  step.cache_saved_usd = turn->cache_saved_usd;
  step.attempts = turn->attempts;
  step.streamed = turn->streamed;
  step.duration_ms = turn->latency_ms > 0 ? turn->latency_ms
                                          : std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::steady_clock::now() - started)
                                                .count();
  step.detail = {{"purpose", "explanation"}, {"tools_offered", false}};
  out.step = std::move(step);
  out.text = Trimmed(turn->content);
  if (out.text.empty()) out.note = "no explanation of the stop: the model's reply had no text";
  return out;
}

}  // namespace quarry::agent
