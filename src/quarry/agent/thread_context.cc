// How a thread's earlier turns reach the model: rendered by the harness from its records (the
// model never summarises them), the newest turns in full, older ones shortened to question,
// answer and SQL, the oldest dropped first when over the budget; shown oldest first, under a
// header that says their answers are context, not evidence, and their kept results real ones.
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"
#include "quarry/engine/engine.h"

namespace quarry::agent {
namespace {

// The newest turns shown with their result preview and clarification; older ones shortened.
constexpr size_t kFullTurns = 2;
constexpr size_t kSummaryAnswerBytes = 400;
constexpr size_t kSummarySqlBytes = 600;
// Per message, as EstimateRequestTokens counts the framing.
constexpr int64_t kMessageTokens = 4;

std::string Cut(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "… (cut)";
}

enum class Form { kFull, kSummary };

std::string AssistantText(const PriorTurn& p, Form form) {
  std::string out =
      form == Form::kFull
          ? "(quarry's record of an earlier turn: its answer is context, not evidence)\n"
          : "(quarry's summary of an earlier turn, question, answer and SQL only: "
            "context, not evidence)\n";
  out += "Answer: " + (form == Form::kFull ? p.answer : Cut(p.answer, kSummaryAnswerBytes));
  if (form == Form::kFull && !p.clarification.empty()) out += "\n" + p.clarification;
  if (!p.sql.empty()) {
    out += "\nSQL:\n" + (form == Form::kFull ? p.sql : Cut(p.sql, kSummarySqlBytes));
  }
  if (form == Form::kFull && !p.preview.empty()) {
    out += (p.data_note.empty()
                ? "\nResult preview of that run (a real result quarry kept: its values may be "
                  "stated, as " +
                      (p.turn > 0 ? "turn " + std::to_string(p.turn) + "'s"
                                  : std::string("that turn's")) +
                      "):\n"
                : "\nResult preview of that run (the data changed since: re-run the query to use "
                  "its numbers):\n") +
           p.preview;
  }
  return out;
}

std::string UserText(const PriorTurn& p) { return "Earlier question: " + p.question; }

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Header(size_t summarised, size_t dropped, const std::vector<std::string>& data_notes) {
  std::string h =
      "[quarry] Earlier turns of this conversation follow, oldest first, written by quarry from "
      "its records. Their answers are context, not evidence: a number from an earlier answer "
      "must be queried again before you state it. Their result previews are real results "
      "quarry kept: you may state their values without querying again, unless the data "
      "changed.";
  if (summarised > 0) {
    h += " " + Plural(summarised, "older turn is", "older turns are") +
         " shortened to question, answer and SQL.";
  }
  if (dropped > 0) h += " " + Plural(dropped, "oldest turn is", "oldest turns are") + " left out.";
  for (const auto& n : data_notes) h += "\nThe data changed: " + n + ".";
  return h;
}

}  // namespace

std::vector<llm::Message> PriorMessages(const std::vector<PriorTurn>& history,
                                        int64_t budget_tokens, std::vector<std::string>* notes) {
  if (history.empty()) return {};
  std::vector<std::string> data_notes;
  for (const PriorTurn& p : history) {
    if (!p.data_note.empty()) data_notes.push_back(p.data_note);
  }
  // Room for the header at its longest (every count present), so the total stays in budget
  // whatever the counts turn out to be.
  const int64_t header_tokens =
      engine::EstimateTokens(Header(history.size(), history.size(), data_notes) + "\n\n");
  int64_t left = budget_tokens - header_tokens;
  std::vector<std::optional<Form>> form(history.size());
  size_t kept = 0;
  for (size_t k = 0; k < history.size(); ++k) {
    const size_t i = history.size() - 1 - k;
    const int64_t user = engine::EstimateTokens(UserText(history[i])) + 2 * kMessageTokens;
    const int64_t full = user + engine::EstimateTokens(AssistantText(history[i], Form::kFull));
    const int64_t summary =
        user + engine::EstimateTokens(AssistantText(history[i], Form::kSummary));
    if (k < kFullTurns && full <= left) {
      form[i] = Form::kFull;
      left -= full;
    } else if (summary <= left) {
      form[i] = Form::kSummary;
      left -= summary;
    } else {
      break;  // this one and every older one are left out
    }
    ++kept;
  }
  const size_t dropped = history.size() - kept;
  const size_t summarised = static_cast<size_t>(
      std::count(form.begin(), form.end(), std::optional<Form>(Form::kSummary)));
  if (notes) {
    if (kept == 0) {
      notes->push_back("thread: all " + Plural(history.size(), "earlier turn", "earlier turns") +
                       " left out: none fits the history budget of " +
                       std::to_string(budget_tokens) + " tokens");
    } else {
      std::string n = "thread: the model saw " + Plural(kept, "earlier turn", "earlier turns") +
                      " (" + std::to_string(kept - summarised) + " in full, " +
                      std::to_string(summarised) + " shortened to question, answer and SQL)";
      if (dropped > 0) {
        n += "; " + Plural(dropped, "oldest turn", "oldest turns") +
             " left out over the history budget of " + std::to_string(budget_tokens) + " tokens";
      }
      notes->push_back(n);
    }
    for (const auto& d : data_notes) notes->push_back("thread: the data changed: " + d);
  }
  if (kept == 0) return {};
  std::vector<llm::Message> messages;
  bool first = true;
  for (size_t i = dropped; i < history.size(); ++i) {
    std::string user = UserText(history[i]);
    if (first) user = Header(summarised, dropped, data_notes) + "\n\n" + user;
    first = false;
    messages.push_back({llm::Role::kUser, user, {}, {}});
    messages.push_back({llm::Role::kAssistant, AssistantText(history[i], *form[i]), {}, {}});
  }
  return messages;
}

void AddKeptResults(const std::vector<PriorTurn>& history, const std::vector<llm::Message>& shown,
                    Evidence& evidence) {
  const auto split = [](std::string_view line) {
    std::vector<std::string> cells;
    size_t at = 0;
    for (size_t bar = line.find(" | "); bar != std::string_view::npos; bar = line.find(" | ", at)) {
      cells.emplace_back(line.substr(at, bar - at));
      at = bar + 3;
    }
    cells.emplace_back(line.substr(at));
    return cells;
  };
  for (const PriorTurn& p : history) {
    if (p.preview.empty() || !p.data_note.empty()) continue;
    const bool is_shown = std::any_of(shown.begin(), shown.end(), [&](const llm::Message& m) {
      return m.content.find(p.preview) != std::string::npos;
    });
    if (!is_shown) continue;
    std::vector<std::string> lines;
    for (size_t at = 0; at <= p.preview.size();) {
      const size_t nl = std::min(p.preview.find('\n', at), p.preview.size());
      lines.push_back(p.preview.substr(at, nl - at));
      at = nl + 1;
    }
    if (lines.empty()) continue;
    const std::vector<std::string> columns = split(lines[0]);
    std::vector<std::vector<std::optional<std::string>>> rows;
    int64_t count = -1;
    for (size_t i = 1; i < lines.size(); ++i) {
      if (lines[i].starts_with("(") && lines[i].find(" row") != std::string::npos) {
        count = std::strtoll(lines[i].c_str() + 1, nullptr, 10);
        break;
      }
      std::vector<std::string> cells = split(lines[i]);
      if (cells.size() != columns.size()) continue;  // cut by the preview's byte bound
      std::vector<std::optional<std::string>> row;
      for (std::string& c : cells) {
        row.push_back(c == "NULL" ? std::nullopt : std::optional<std::string>(std::move(c)));
      }
      rows.push_back(std::move(row));
    }
    EvidenceSource source{0, "run_sql", p.sql, count};
    source.turn = p.turn > 0 ? p.turn : 1;
    evidence.AddResult(source, columns, rows);
  }
}

}  // namespace quarry::agent
