// `quarry threads`: the saved conversations (agent/threads.h) listed, one shown turn by turn,
// or one deleted; as text or JSON.
#include <iostream>

#include "quarry/agent/threads.h"
#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string SourceNames(const std::vector<agent::ThreadSource>& sources) {
  std::string out;
  for (const auto& s : sources)
    out += (out.empty() ? "" : ", ") +
           (engine::IsServerSpec(s.path) ? s.path : fs::path(s.path).filename().string());
  return out.empty() ? "-" : out;
}

std::string Indent(const std::string& text, const std::string& pad) {
  std::string out = pad;
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

std::string StatusText(const agent::ThreadTurn& turn) {
  if (turn.waiting()) return "waiting for a reply to a clarification";
  if (turn.status == agent::kTurnRunning) return "running (or its process was killed)";
  const auto stop = trace::ParseStopReason(turn.status);
  if (stop == trace::StopReason::kAnswered)
    return turn.grounded ? "answered" : "answered, not grounded";
  if (stop == trace::StopReason::kDeclined) return "declined";
  return "no answer: " + turn.status;
}

void PrintThread(const agent::Thread& t) {
  std::cout << "thread " << TerminalText(t.name) << ": " << t.turn_count
            << (t.turn_count == 1 ? " turn" : " turns") << ", created " << t.created_at
            << ", updated " << t.updated_at << "\n";
  for (const auto& s : t.sources) {
    // A server is bound by its set of tables (agent::ThreadSource), not by bytes.
    const bool server = engine::IsServerSpec(s.path);
    std::cout << "data: " << TerminalText(s.path) << " (" << s.size_bytes
              << (server ? " tables" : " bytes")
              << (s.sha256.empty() ? "" : ", sha256 " + s.sha256.substr(0, 12)) << ")\n";
  }
  for (const auto& turn : t.turns) {
    std::cout << "\nturn " << turn.number << " · " << StatusText(turn) << " · run "
              << TerminalText(turn.run_id) << "\n";
    std::cout << "  question: " << TerminalText(turn.question) << "\n";
    for (const auto& c : turn.clarifications) {
      std::cout << "  asked: " << TerminalText(c.question) << "\n";
      for (size_t i = 0; i < c.choices.size(); ++i) {
        std::cout << "    " << i + 1 << ". " << TerminalText(c.choices[i]) << "\n";
      }
      // Only the last turn's last question can still wait; an earlier one was left unanswered
      // (the run was interrupted, or the client declined).
      const bool waits = turn.waiting() && &c == &turn.clarifications.back();
      std::cout << "  reply: "
                << (!c.reply.empty() ? TerminalText(c.reply)
                                     : std::string(waits ? "(waiting)" : "(none)"))
                << "\n";
    }
    if (!turn.answer.empty()) std::cout << "  answer: " << TerminalText(turn.answer) << "\n";
    if (!turn.sql.empty())
      std::cout << "  SQL:\n" << Indent(TerminalText(turn.sql), "    ") << "\n";
  }
}

}  // namespace

int RunThreads(const ThreadsOptions& o) {
  const fs::path path = agent::ThreadsPath(o.runs_dir);
  if (o.action != "list" && o.name.empty()) {
    return Report({Error::Code::kUsage, "quarry threads " + o.action + " NAME: which thread?"});
  }
  if (!o.name.empty()) {
    if (auto v = agent::ValidateThreadName(o.name); !v) return Report(v.error());
  }
  std::error_code ec;
  // Reading needs no database: none yet means no threads, and none is created for it.
  if (!path.empty() && !fs::exists(path, ec)) {
    if (o.action != "list") {
      return Report({Error::Code::kUsage, "no thread named \"" + o.name +
                                              "\": there are no "
                                              "threads in " +
                                              path.string() + " yet"});
    }
    if (o.format_name == "json") {
      std::cout << JsonText({{"path", path.string()}, {"threads", json::array()}}) << "\n";
    } else {
      std::cout << "no threads yet (" << TerminalText(path.string()) << ")\n";
    }
    return kExitOk;
  }
  auto store = agent::ThreadStore::Open(path);
  if (!store) return Report(store.error());
  if (o.action == "delete") {
    if (auto d = store->Delete(o.name); !d) return Report(d.error());
    std::cout << "deleted thread " << TerminalText(o.name) << "\n";
    return kExitOk;
  }
  if (o.action == "show") {
    auto t = store->Find(o.name);
    if (!t) return Report(t.error());
    if (!*t) {
      return Report({Error::Code::kUsage, "no thread named \"" + o.name + "\" in " + path.string() +
                                              " (quarry threads lists them)"});
    }
    if (o.format_name == "json") {
      json out = agent::ThreadJson(**t);
      out["turns"] = json::array();
      for (const auto& turn : (*t)->turns) out["turns"].push_back(agent::TurnJson(turn));
      out["turn_count"] = (*t)->turn_count;
      std::cout << JsonText(out) << "\n";
    } else {
      PrintThread(**t);
    }
    return kExitOk;
  }
  auto list = store->List();
  if (!list) return Report(list.error());
  if (o.format_name == "json") {
    json threads = json::array();
    for (const auto& t : *list) threads.push_back(agent::ThreadJson(t));
    std::cout << JsonText({{"path", path.string()}, {"threads", threads}}) << "\n";
    return kExitOk;
  }
  if (list->empty()) {
    std::cout << "no threads yet (" << TerminalText(path.string()) << ")\n";
    return kExitOk;
  }
  std::cout << "threads in " << TerminalText(path.string()) << "\n";
  for (const auto& t : *list) {
    char turns[32];
    std::snprintf(turns, sizeof turns, "%3d %s", t.turn_count,
                  t.turn_count == 1 ? "turn " : "turns");
    std::cout << "  " << TerminalText(t.name) << "  " << turns << "  updated " << t.updated_at
              << "  " << TerminalText(SourceNames(t.sources))
              << (t.waiting ? "  waiting for a reply" : "") << "\n";
  }
  return kExitOk;
}

}  // namespace quarry::cli
