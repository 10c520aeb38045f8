// ask_user: the model's question to the user instead of a guess. The loop records it
// (trace.clarifications) and either waits for the reply through RunInput::ask_user or ends the
// run with clarification_needed; a later run resumes with the reply (RunInput::resume).
#include <algorithm>
#include <cctype>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"

namespace quarry::agent {

using json = nlohmann::ordered_json;

Clarification ClarificationFrom(const json& args, std::string* problem) {
  Clarification c;
  problem->clear();
  c.question = args.value("question", std::string());
  c.term = args.value("term", std::string());
  for (const auto& choice : args.value("choices", json::array())) {
    if (choice.is_string()) c.choices.push_back(choice.get<std::string>());
  }
  const auto blank = [](const std::string& s) {
    return s.find_first_not_of(" \t\r\n") == std::string::npos;
  };
  // A choice is shown as one numbered line: a line break in it could fake further choices.
  const auto one_line = [](const std::string& s) {
    return s.find_first_of("\r\n") == std::string::npos;
  };
  if (!one_line(c.term) || c.term.size() > knowledge::kMaxTermBytes) {
    *problem = "`term` must be one line of at most " + std::to_string(knowledge::kMaxTermBytes) +
               " bytes: the phrase of the question that is open";
  } else if (blank(c.question)) {
    *problem = "`question` is empty: ask one short question";
  } else if (c.question.size() > kMaxClarificationBytes) {
    *problem = "`question` must be at most " + std::to_string(kMaxClarificationBytes) +
               " bytes: ask one short question";
  } else if (args.contains("choices") && (c.choices.size() < 2 || c.choices.size() > 6)) {
    *problem = "`choices` must hold 2 to 6 options, or be left out for a free reply";
  } else {
    for (size_t i = 0; i < c.choices.size() && problem->empty(); ++i) {
      const std::string& choice = c.choices[i];
      if (blank(choice) || choice.size() > kMaxChoiceBytes || !one_line(choice)) {
        *problem = "each choice must be one line of 1 to " + std::to_string(kMaxChoiceBytes) +
                   " bytes: a few words naming the option";
      } else if (std::find(c.choices.begin(), c.choices.begin() + static_cast<long>(i), choice) !=
                 c.choices.begin() + static_cast<long>(i)) {
        *problem = "the choice \"" + choice + "\" is given twice: each option once";
      }
    }
  }
  return c;
}

std::string ReplyObservation(const std::string& reply) { return "the user replied: " + reply; }

std::string TypedPart(std::string_view reply, const std::vector<std::string>& choices) {
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
  };
  std::string typed(reply);
  // Longest first, so a choice inside another ("10", "top 10") cannot leave a piece behind.
  std::vector<std::string> cut;
  for (const std::string& c : choices) {
    if (c.find_first_not_of(" \t\r\n") != std::string::npos) cut.push_back(lower(c));
  }
  std::sort(cut.begin(), cut.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& c : cut) {
    for (size_t at = lower(typed).find(c); at != std::string::npos; at = lower(typed).find(c, at)) {
      typed.replace(at, c.size(), "\n");
    }
  }
  return typed;
}

std::string WaitingObservation(const Clarification& c) {
  std::string choices;
  for (const std::string& choice : c.choices) choices += (choices.empty() ? "" : " | ") + choice;
  return "waiting for the user's reply to: " + c.question +
         (choices.empty() ? "" : " (choices: " + choices + ")") +
         "; the run ends here and continues with the reply";
}

std::optional<std::string> AskTheUser(const AskUserFn& ask, const Clarification& c,
                                      std::vector<std::string>& notes) {
  if (!ask) return std::nullopt;
  try {
    return ask(c);
  } catch (const std::exception& e) {  // the caller's code: it must not end the process
    notes.push_back(std::string("asking the user failed: ") + e.what());
    return std::nullopt;
  }
}

std::vector<llm::Message> ResumeMessages(const PendingClarification& resume) {
  json args = {{"question", resume.asked.question}};
  if (!resume.asked.choices.empty()) args["choices"] = resume.asked.choices;
  if (!resume.asked.term.empty()) args["term"] = resume.asked.term;
  const std::string id = "resume_1";
  llm::ToolCall call{id, "ask_user", args.dump(-1, ' ', false, json::error_handler_t::replace)};
  return {{llm::Role::kAssistant, "", {call}, {}},
          {llm::Role::kTool, ReplyObservation(resume.reply), {}, id}};
}

}  // namespace quarry::agent
