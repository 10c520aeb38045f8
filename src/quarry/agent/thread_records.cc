// The rows of the thread store: statements with errors that name the file, reading and writing
// threads, sources and turns, and what a turn keeps of a finished run (its preview, its
// clarifications) and shows the next run (a PriorTurn).
#include <sqlite3.h>

#include <algorithm>
#include <charconv>

#include "quarry/agent/threads.h"
#include "quarry/agent/threads_internal.h"
#include "quarry/common/json.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;

// Cuts `text` to at most `max_bytes` without splitting a UTF-8 sequence, marking the cut.
std::string CutUtf8(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const std::string mark = "…";
  size_t end = max_bytes > mark.size() ? max_bytes - mark.size() : 0;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + mark;
}

// A cell or column name of the preview on one line with its control and invisible characters
// escaped: it is data, and the preview is shown to the model again in later turns, where a raw
// newline would let a cell start a line of its own ("SYSTEM: ...").
std::string CellText(const json& cell) {
  if (cell.is_null()) return "NULL";
  if (cell.is_string()) return engine::PromptText(cell.get<std::string>(), 200);
  return engine::PromptText(cell.dump(-1, ' ', false, json::error_handler_t::replace), 200);
}

// The byte length of the UTF-8 sequence at text[i] and its code point; 0 when malformed.
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t& cp) {
  const auto b = static_cast<unsigned char>(text[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(text[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

namespace {

bool ControlCharacter(uint32_t cp) { return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F); }

// Invisible characters that reorder or hide text would make a listed name read as another one.
bool InvisibleFormatting(uint32_t cp) {
  return cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

}  // namespace

std::string ThreadNameFromText(std::string_view text, size_t max_bytes) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(text, i, cp);
    if (n == 0) {
      ++i;
      continue;
    }
    const std::string_view ch = text.substr(i, n);
    i += n;
    if (cp == ' ' || ControlCharacter(cp)) {
      space = !out.empty();
      continue;
    }
    if (InvisibleFormatting(cp)) continue;
    if (out.size() + (space ? 1 : 0) + ch.size() > max_bytes) break;
    if (space) out += ' ';
    space = false;
    out += ch;
  }
  return out;
}

Result<void> ValidateThreadName(std::string_view name) {
  const std::string allowed =
      "a thread name is 1 to 64 bytes of printable text (letters, digits, punctuation, inner "
      "spaces), e.g. sales-q3";
  if (name.empty()) return Fail(Error::Code::kUsage, "the thread name is empty: " + allowed);
  if (name.size() > 64) {
    return Fail(Error::Code::kUsage,
                "the thread name is " + std::to_string(name.size()) + " bytes long: " + allowed);
  }
  if (name.front() == ' ' || name.back() == ' ') {
    return Fail(Error::Code::kUsage, "the thread name starts or ends with a space: " + allowed);
  }
  // "." and ".." name the folder above in a URL (the web app's /api/threads/NAME): a browser
  // would send the request elsewhere and the thread could not be opened or deleted.
  if (name.find_first_not_of('.') == std::string_view::npos) {
    return Fail(Error::Code::kUsage, "the thread name is only dots: " + allowed);
  }
  for (size_t i = 0; i < name.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(name, i, cp);
    if (n == 0) return Fail(Error::Code::kUsage, "the thread name is not valid UTF-8: " + allowed);
    if (ControlCharacter(cp)) {
      return Fail(Error::Code::kUsage, "the thread name holds a control character: " + allowed);
    }
    if (InvisibleFormatting(cp)) {
      return Fail(Error::Code::kUsage,
                  "the thread name holds an invisible formatting character: " + allowed);
    }
    i += n;
  }
  return {};
}

Result<std::string> ReplyText(const Clarification& asked, std::string_view typed) {
  const size_t first = typed.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return Fail(Error::Code::kUsage, "the reply is empty: type the answer to the question");
  }
  typed = typed.substr(first, typed.find_last_not_of(" \t\r\n") - first + 1);
  if (typed.size() > kMaxReplyBytes) {
    return Fail(Error::Code::kUsage, "the reply is " + std::to_string(typed.size()) +
                                         " bytes long; a reply is at most " +
                                         std::to_string(kMaxReplyBytes) + " bytes");
  }
  // A choice typed out wins over a number, so with choices "10", "5", "1" the reply "1" is "1".
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
  };
  for (const std::string& choice : asked.choices) {
    if (lower(choice) == lower(typed)) return choice;
  }
  if (asked.choices.empty()) return std::string(typed);
  const bool number = typed.find_first_not_of("0123456789") == std::string_view::npos ||
                      (typed.size() > 1 && (typed[0] == '-' || typed[0] == '+') &&
                       typed.find_first_not_of("0123456789", 1) == std::string_view::npos);
  if (!number) return std::string(typed);
  size_t pick = 0;
  const auto [end, ec] = std::from_chars(typed.data(), typed.data() + typed.size(), pick);
  if (ec == std::errc() && end == typed.data() + typed.size() && pick >= 1 &&
      pick <= asked.choices.size()) {
    return asked.choices[pick - 1];
  }
  const std::string range = "1 to " + std::to_string(asked.choices.size());
  return Fail(Error::Code::kUsage, std::string(typed) + " is not one of the choices (" + range +
                                       "): type a number from " + range +
                                       ", or the reply in words");
}

std::string ResultPreview(const trace::Trace& trace) {
  for (auto q = trace.answer_queries.rbegin(); q != trace.answer_queries.rend(); ++q) {
    if (q->tool != "run_sql") continue;
    const auto step =
        std::find_if(trace.steps.begin(), trace.steps.end(), [&](const trace::Step& s) {
          return s.index == q->step && s.kind == trace::StepKind::kTool;
        });
    if (step == trace.steps.end() || !step->detail.is_object()) continue;
    const json& d = step->detail;
    if (!d.contains("columns") || !d["columns"].is_array() || !d.contains("rows") ||
        !d["rows"].is_array()) {
      continue;
    }
    std::string out;
    for (const json& c : d["columns"]) out += (out.empty() ? "" : " | ") + CellText(c);
    out += "\n";
    size_t shown = 0;
    for (const json& row : d["rows"]) {
      if (shown == kPreviewRows || !row.is_array()) break;
      std::string line;
      for (const json& cell : row) line += (line.empty() ? "" : " | ") + CellText(cell);
      out += line + "\n";
      ++shown;
    }
    const int64_t count = d.value("row_count", static_cast<int64_t>(shown));
    out += "(" + std::to_string(count) + (count == 1 ? " row" : " rows");
    if (static_cast<int64_t>(shown) < count) out += ", " + std::to_string(shown) + " shown";
    out += ")";
    return CutUtf8(out, kPreviewBytes);
  }
  return "";
}

namespace internal {

Stmt::Stmt(sqlite3_stmt* stmt, const Db* db) : stmt_(stmt), db_(db) {}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = other.db_;
  }
  return *this;
}

Stmt::~Stmt() {
  if (stmt_) sqlite3_finalize(stmt_);
}

void Stmt::Bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void Stmt::Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

Result<bool> Stmt::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return std::unexpected(db_->Failure("read or write a row"));
}

int64_t Stmt::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string Stmt::Text(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  if (!text) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

Error Db::Failure(const char* what) const {
  const int code = sqlite3_extended_errcode(handle) & 0xFF;
  std::string advice;
  switch (code) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      advice =
          "; the file is damaged or is not a threads database: move it away (threads are "
          "safe to delete; every run's trace stays in runs/)";
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      advice = "; another process held it for more than 10 s: try again";
      break;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR:
    case SQLITE_FULL:
      advice = "; check the file's permissions and the disk";
      break;
    default:
      break;
  }
  return Error{Error::Code::kData, "threads database " + path.string() + ": cannot " + what + ": " +
                                       sqlite3_errmsg(handle) + advice};
}

std::unexpected<Error> Db::Refuse(const std::string& why) const {
  return std::unexpected(
      Error{Error::Code::kData, "threads database " + path.string() + " " + why});
}

Result<Stmt> Db::Prepare(const std::string& sql) const {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(handle, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(stmt);
    return std::unexpected(Failure("prepare a statement"));
  }
  return Stmt(stmt, this);
}

Result<void> Db::Exec(const std::string& sql, const char* what) const {
  if (sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return std::unexpected(Failure(what));
  }
  return {};
}

Result<int64_t> ThreadId(const Db& db, std::string_view name) {
  auto st = db.Prepare("SELECT id FROM threads WHERE name = ?");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, name);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  return *row ? st->Int(0) : 0;
}

Result<std::vector<ThreadSource>> LoadSources(const Db& db, int64_t thread_id) {
  auto st = db.Prepare(
      "SELECT path, size_bytes, sha256 FROM thread_sources WHERE thread_id = ? ORDER BY position");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, thread_id);
  std::vector<ThreadSource> out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({st->Text(0), st->Int(1), st->Text(2)});
  }
  return out;
}

Result<void> ReplaceSources(const Db& db, int64_t thread_id,
                            const std::vector<ThreadSource>& sources) {
  auto del = db.Prepare("DELETE FROM thread_sources WHERE thread_id = ?");
  if (!del) return std::unexpected(del.error());
  del->Bind(1, thread_id);
  if (auto r = del->Step(); !r) return std::unexpected(r.error());
  for (size_t i = 0; i < sources.size(); ++i) {
    auto ins = db.Prepare(
        "INSERT INTO thread_sources (thread_id, position, path, size_bytes, sha256) "
        "VALUES (?, ?, ?, ?, ?)");
    if (!ins) return std::unexpected(ins.error());
    ins->Bind(1, thread_id);
    ins->Bind(2, static_cast<int64_t>(i));
    ins->Bind(3, sources[i].path);
    ins->Bind(4, sources[i].size_bytes);
    ins->Bind(5, sources[i].sha256);
    if (auto r = ins->Step(); !r) return std::unexpected(r.error());
  }
  return {};
}

Result<std::vector<ThreadTurn>> LoadTurns(const Db& db, int64_t thread_id) {
  auto st = db.Prepare(
      "SELECT number, run_id, question, status, answer, grounded, sql, preview, clarifications, "
      "created_at, updated_at FROM turns WHERE thread_id = ? ORDER BY number");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, thread_id);
  std::vector<ThreadTurn> out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    ThreadTurn t;
    t.number = static_cast<int>(st->Int(0));
    t.run_id = st->Text(1);
    t.question = st->Text(2);
    t.status = st->Text(3);
    t.answer = st->Text(4);
    t.grounded = st->Int(5) != 0;
    t.sql = st->Text(6);
    t.preview = st->Text(7);
    t.clarifications = ClarificationsFromJson(st->Text(8));
    t.created_at = st->Text(9);
    t.updated_at = st->Text(10);
    out.push_back(std::move(t));
  }
  return out;
}

Result<void> Touch(const Db& db, int64_t thread_id, const std::string& now) {
  auto st = db.Prepare("UPDATE threads SET updated_at = ? WHERE id = ?");
  if (!st) return std::unexpected(st.error());
  st->Bind(1, now);
  st->Bind(2, thread_id);
  if (auto r = st->Step(); !r) return std::unexpected(r.error());
  return {};
}

std::string ClarificationsJson(const std::vector<ThreadClarification>& clarifications) {
  json out = json::array();
  for (const auto& c : clarifications) {
    json record = {
        {"question", c.question}, {"choices", c.choices}, {"reply", c.reply}, {"run_id", c.run_id}};
    if (!c.term.empty()) record["term"] = c.term;
    out.push_back(std::move(record));
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<ThreadClarification> ClarificationsFromJson(const std::string& text) {
  std::vector<ThreadClarification> out;
  const json doc = ParseJson(text);
  if (!doc.is_array()) return out;
  for (const json& c : doc) {
    if (!c.is_object()) continue;
    ThreadClarification t;
    if (c.contains("question") && c["question"].is_string()) t.question = c["question"];
    if (c.contains("reply") && c["reply"].is_string()) t.reply = c["reply"];
    if (c.contains("run_id") && c["run_id"].is_string()) t.run_id = c["run_id"];
    if (c.contains("term") && c["term"].is_string()) t.term = c["term"];
    if (c.contains("choices") && c["choices"].is_array()) {
      for (const json& choice : c["choices"]) {
        if (choice.is_string()) t.choices.push_back(choice.get<std::string>());
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

void MergeClarifications(const trace::Trace& trace, std::vector<ThreadClarification>& into) {
  for (const trace::ClarificationRecord& c : trace.clarifications) {
    const bool known = std::any_of(into.begin(), into.end(), [&](const ThreadClarification& t) {
      return t.question == c.question && t.reply == c.reply;
    });
    if (!known) into.push_back({c.question, c.choices, c.reply, trace.id, c.term});
  }
}

PriorTurn ToPriorTurn(const ThreadTurn& turn) {
  PriorTurn p;
  p.question = turn.question;
  p.turn = turn.number;
  const auto stop = trace::ParseStopReason(turn.status);
  if (stop == trace::StopReason::kAnswered && !turn.answer.empty()) {
    p.answer = turn.answer;
  } else if (stop == trace::StopReason::kDeclined && !turn.answer.empty()) {
    p.answer = "(declined, not an answer) " + turn.answer;
  } else {
    p.answer = "(no verified answer: the run ended with " + turn.status + ")";
  }
  p.sql = turn.sql;
  p.preview = turn.preview;
  for (const auto& c : turn.clarifications) {
    if (c.reply.empty()) continue;
    if (!p.clarification.empty()) p.clarification += "\n";
    p.clarification += "asked the user: " + c.question + " | reply: " + c.reply;
  }
  return p;
}

}  // namespace internal
namespace {

json SourcesJson(const std::vector<ThreadSource>& sources) {
  json out = json::array();
  for (const auto& s : sources) {
    out.push_back({{"path", s.path}, {"size_bytes", s.size_bytes}, {"sha256", s.sha256}});
  }
  return out;
}

}  // namespace

json ThreadJson(const Thread& t) {
  return {{"name", t.name},
          {"turns", t.turn_count},
          {"waiting", t.waiting},
          {"created_at", t.created_at},
          {"updated_at", t.updated_at},
          {"sources", SourcesJson(t.sources)}};
}

json TurnJson(const ThreadTurn& turn) {
  json clarifications = json::array();
  for (const auto& c : turn.clarifications) {
    clarifications.push_back({{"question", c.question},
                              {"choices", c.choices},
                              {"reply", c.reply},
                              {"run_id", c.run_id}});
  }
  return {{"number", turn.number},
          {"run_id", turn.run_id},
          {"question", turn.question},
          {"status", turn.status},
          {"answer", turn.answer},
          {"grounded", turn.grounded},
          {"sql", turn.sql},
          {"preview", turn.preview},
          {"clarifications", clarifications},
          {"created_at", turn.created_at},
          {"updated_at", turn.updated_at}};
}

}  // namespace quarry::agent
