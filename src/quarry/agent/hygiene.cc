// Tool-call hygiene (see hygiene_internal.h): Markdown around code, prose instead of SQL,
// identical repeats of failed calls, and string literals selected where a column was meant.
#include <algorithm>
#include <array>
#include <cctype>

#include "quarry/common/text.h"
#include "quarry/agent/hygiene_internal.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Words a statement of either dialect can start with. Anything starting so goes to the
// engine unchanged (the guard names a write; the parser names a typo).
constexpr std::array<std::string_view, 56> kStatementWords = {
    "select",  "with",     "from",       "values",   "table",     "explain",     "insert",
    "update",  "delete",   "create",     "drop",     "alter",     "attach",      "detach",
    "pragma",  "copy",     "export",     "import",   "install",   "load",        "set",
    "reset",   "call",     "summarize",  "describe", "desc",      "show",        "pivot",
    "unpivot", "begin",    "commit",     "rollback", "replace",   "vacuum",      "analyze",
    "analyse", "reindex",  "checkpoint", "use",      "prepare",   "execute",     "deallocate",
    "merge",   "truncate", "grant",      "revoke",   "savepoint", "release",     "end",
    "abort",   "upsert",   "comment",    "force",    "start",     "transaction", "unlisten"};

constexpr std::array<std::string_view, 6> kSqlTags = {"sql",        "duckdb",   "sqlite",
                                                      "postgresql", "postgres", "mysql"};
constexpr std::array<std::string_view, 3> kPythonTags = {"python", "py", "python3"};

// Skips whitespace and SQL comments from `i`.
size_t SkipSqlSpace(std::string_view s, size_t i) {
  while (i < s.size()) {
    if (IsSpace(s[i])) {
      ++i;
    } else if (s.substr(i, 2) == "--") {
      const size_t nl = s.find('\n', i);
      i = nl == std::string_view::npos ? s.size() : nl + 1;
    } else if (s.substr(i, 2) == "/*") {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
    } else {
      break;
    }
  }
  return i;
}

bool StartsLikeSql(std::string_view s) {
  const size_t i = SkipSqlSpace(s, 0);
  if (i >= s.size()) return true;  // only comments: the engine says it is empty
  if (s[i] == '(') return true;
  size_t j = i;
  while (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
  const std::string word = Lower(s.substr(i, j - i));
  return std::find(kStatementWords.begin(), kStatementWords.end(), word) != kStatementWords.end();
}

// Prose before a query: a SELECT or WITH that starts a line or follows a ':', after text
// that is not SQL. A typo such as "SELEC x FROM (SELECT ...)" is not prose.
bool ProseBeforeQuery(std::string_view s) {
  const std::string low = Lower(s);
  for (const std::string_view kw : {"select", "with"}) {
    for (size_t at = low.find(kw); at != std::string::npos; at = low.find(kw, at + 1)) {
      const size_t end = at + kw.size();
      if (end < low.size() &&
          (std::isalnum(static_cast<unsigned char>(low[end])) || low[end] == '_'))
        continue;
      size_t k = at;
      while (k > 0 && (low[k - 1] == ' ' || low[k - 1] == '\t')) --k;
      if (k == 0) continue;
      const char before = low[k - 1];
      if (before == '\n' || before == ':') return true;
    }
  }
  return false;
}

bool TagIn(std::string_view tag, const auto& tags) {
  std::string t = Lower(Trim(tag));
  if (!t.empty() && t.back() == ':') t.pop_back();
  return std::find(tags.begin(), tags.end(), t) != tags.end();
}

// One fence or one tag line, for either language. `what` names the code in messages.
CleanedCode StripMarkdown(std::string_view raw, const auto& tags, const std::string& what) {
  CleanedCode out;
  std::string_view t = Trim(raw);
  if (t.starts_with("```") || t.starts_with("~~~")) {
    const std::string_view fence = t.substr(0, 3);
    const size_t nl = t.find('\n');
    std::string_view info =
        Trim(t.substr(3, nl == std::string_view::npos ? std::string_view::npos : nl - 3));
    std::string_view body = nl == std::string_view::npos ? std::string_view() : t.substr(nl + 1);
    if (nl == std::string_view::npos) {
      // All on one line: ```SELECT 1``` or ```sql SELECT 1```.
      body = info;
      info = {};
      if (body.ends_with(fence)) body.remove_suffix(3);
      const size_t sp = body.find(' ');
      if (sp != std::string_view::npos && TagIn(body.substr(0, sp), tags)) {
        info = body.substr(0, sp);
        body.remove_prefix(sp + 1);
      }
    } else if (const size_t close = body.rfind(fence); close != std::string_view::npos) {
      if (!Trim(body.substr(close + 3)).empty()) {
        out.problem = "there is text after the code block; send the " + what +
                      " only, with no explanation or Markdown around it";
        return out;
      }
      body = body.substr(0, close);
    }
    if (body.find(fence) != std::string_view::npos) {
      out.problem = "the argument holds several code blocks; send one " + what +
                    " only, with no explanation or Markdown around it";
      return out;
    }
    out.text = std::string(Trim(body));
    out.removed = "a Markdown code fence (" + std::string(fence) + std::string(info) + ")";
    out.cleaning = Cleaning::kFence;
    if (out.text.empty()) out.problem = "the code block is empty; send the " + what + " itself";
    return out;
  }
  const size_t nl = t.find('\n');
  if (nl != std::string_view::npos && TagIn(t.substr(0, nl), tags)) {
    out.text = std::string(Trim(t.substr(nl + 1)));
    out.removed = "a language tag line (" + std::string(Trim(t.substr(0, nl))) + ")";
    out.cleaning = Cleaning::kTagLine;
    return out;
  }
  out.text = std::string(raw);
  return out;
}

// Trimmed text with one pair of single backticks around it and none inside: the inside.
std::optional<std::string_view> InsideBackticks(std::string_view t) {
  if (t.size() > 2 && t.front() == '`' && t.back() == '`' && !t.starts_with("``") &&
      t.substr(1, t.size() - 2).find('`') == std::string_view::npos) {
    return Trim(t.substr(1, t.size() - 2));
  }
  return std::nullopt;
}

std::string Canonical(const json& v) {
  return nlohmann::json::parse(v.dump(-1, ' ', false, json::error_handler_t::replace))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RightTrimLines(std::string_view code) {
  std::string out;
  size_t start = 0;
  while (start <= code.size()) {
    size_t nl = code.find('\n', start);
    if (nl == std::string_view::npos) nl = code.size();
    std::string_view line = code.substr(start, nl - start);
    while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
    out += std::string(line) + "\n";
    start = nl + 1;
  }
  while (!out.empty() && (out.back() == '\n')) out.pop_back();
  return out;
}

// For matching a literal against a column name: case, spaces and underscores aside, and
// without surrounding quotes.
std::string NameForm(std::string_view s) {
  s = Trim(s);
  while (s.size() >= 2 &&
         ((s.front() == '"' && s.back() == '"') || (s.front() == '\'' && s.back() == '\'') ||
          (s.front() == '`' && s.back() == '`') || (s.front() == '[' && s.back() == ']'))) {
    s = Trim(s.substr(1, s.size() - 2));
  }
  std::string out;
  for (const char c : s) {
    if (!IsSpace(c) && c != '_')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string DoubleQuoted(std::string_view name) {
  std::string out = "\"";
  for (const char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

CleanedCode CleanSql(std::string_view sql) {
  std::string_view t = Trim(sql);
  // Valid SQL is never touched: a fence or tag line cannot start a statement.
  if (StartsLikeSql(t)) return {std::string(sql), "", ""};
  if (const auto inside = InsideBackticks(t); inside && StartsLikeSql(*inside)) {
    return {std::string(*inside), "backticks", "", Cleaning::kBackticks};
  }
  CleanedCode out = StripMarkdown(t, kSqlTags, "SQL query");
  if (!out.problem.empty() || !out.removed.empty()) return out;
  if (t.find("```") != std::string_view::npos || ProseBeforeQuery(t)) {
    out.problem = "the sql argument starts with prose, not SQL (\"" +
                  std::string(t.substr(0, std::min<size_t>(t.find('\n'), 60))) +
                  "\"); send one SQL query only, with no explanation or Markdown around it";
  }
  return out;
}

CleanedCode CleanPython(std::string_view code) {
  if (const auto inside = InsideBackticks(Trim(code)); inside && !inside->empty()) {
    return {std::string(*inside), "backticks", "", Cleaning::kBackticks};
  }
  CleanedCode out = StripMarkdown(code, kPythonTags, "Python code");
  // Prose, then a fence starting a line (never valid Python): what to run is a guess.
  if (out.problem.empty() && out.removed.empty() &&
      Trim(code).find("\n```") != std::string_view::npos) {
    out.problem =
        "the code argument holds prose and a Markdown code block; send the Python "
        "code only, with no explanation or Markdown around it";
  }
  return out;
}

std::string CleaningNote(const CleanedCode& cleaned, std::string_view what) {
  std::string where;
  switch (cleaned.cleaning) {
    case Cleaning::kNone:
      return "";
    case Cleaning::kFence:
    case Cleaning::kBackticks:
      where = " around the ";
      break;
    case Cleaning::kTagLine:
      where = " before the ";
      break;
  }
  const std::string code(what);
  return "note: removed " + cleaned.removed + where + code + " and ran it; send the " + code +
         " alone.";
}

std::string NormalizeSql(std::string_view sql) {
  std::string out;
  bool space = false;
  // A space matters only between two word characters ("a b"), not beside punctuation
  // ("a , b" is "a,b").
  auto wordy = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '\'' ||
           c == '"' || c == '`' || c == '[' || c == ']' || static_cast<unsigned char>(c) >= 0x80;
  };
  auto put = [&](std::string_view piece) {
    if (space && !out.empty() && wordy(out.back()) && wordy(piece.front())) out += ' ';
    space = false;
    out += piece;
  };
  for (size_t i = 0; i < sql.size();) {
    const char c = sql[i];
    if (IsSpace(c)) {
      space = true;
      ++i;
    } else if (sql.substr(i, 2) == "--" || sql.substr(i, 2) == "/*") {
      const size_t j = SkipSqlSpace(sql, i);
      space = true;
      i = j > i ? j : i + 1;
    } else if (c == '\'' || c == '"' || c == '`' || c == '[') {
      // Literals and quoted names verbatim: their case and spacing are their value.
      const char close = c == '[' ? ']' : c;
      size_t j = i + 1;
      while (j < sql.size()) {
        if (sql[j] == close) {
          if (close != ']' && j + 1 < sql.size() && sql[j + 1] == close) {
            j += 2;
            continue;
          }
          break;
        }
        ++j;
      }
      j = std::min(j + 1, sql.size());
      put(sql.substr(i, j - i));
      i = j;
    } else {
      put(std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(c)))));
      ++i;
    }
  }
  while (!out.empty() && (out.back() == ';' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string CallKey(std::string_view tool, const json& arguments) {
  json args = arguments;
  if (args.is_object()) {
    if (tool == "run_sql" && args.contains("sql") && args["sql"].is_string()) {
      const CleanedCode c = CleanSql(args["sql"].get<std::string>());
      args["sql"] = NormalizeSql(c.problem.empty() ? c.text : args["sql"].get<std::string>());
    }
    if (tool == "run_python" && args.contains("code") && args["code"].is_string()) {
      const CleanedCode c = CleanPython(args["code"].get<std::string>());
      args["code"] = RightTrimLines(c.problem.empty() ? c.text : args["code"].get<std::string>());
    }
  }
  return std::string(tool) + "\n" + Canonical(args);
}

std::string RawCallKey(std::string_view tool, std::string_view raw_arguments) {
  return std::string(tool) + "\nraw:" + std::string(raw_arguments);
}

std::optional<RepeatLog::Earlier> RepeatLog::Find(std::string_view tool,
                                                  const std::string& key) const {
  if (tool == "final_answer") return std::nullopt;
  const auto it = failed_.find(key);
  if (it == failed_.end()) return std::nullopt;
  if (tool == "run_python" && it->second.epoch != epoch_) return std::nullopt;
  Earlier e = it->second.earlier;
  if (it->second.successes != successes_) e.sends_since_success = 0;
  return e;
}

void RepeatLog::Record(std::string_view tool, const std::string& key, int step,
                       const Observation& obs, bool was_repeat, bool execution) {
  if (was_repeat) {
    if (auto it = failed_.find(key); it != failed_.end()) {
      Entry& entry = it->second;
      ++entry.earlier.repeats;
      if (entry.successes != successes_) {
        entry.earlier.sends_since_success = 0;
        entry.successes = successes_;
      }
      ++entry.earlier.sends_since_success;
    }
    return;
  }
  // A cell that fails may still have changed the kernel's state before failing; what counts
  // is that nothing ran between it and its repeat.
  if (execution) ++epoch_;
  if (execution && obs.failure == FailureClass::kNone) ++successes_;
  if (tool == "final_answer") return;
  // Python that did not run (no sandbox this time: the next call tries again), or whose
  // kernel was replaced (a timeout, a crash), may well run differently next time.
  const bool python_unsettled =
      tool == "run_python" &&
      (obs.failure == FailureClass::kTimeout || !obs.detail.is_object() ||
       !obs.detail.contains("exit_code") || obs.detail.value("kernel_state_lost", false));
  if (obs.failure == FailureClass::kNone || python_unsettled) {
    failed_.erase(key);
    return;
  }
  Earlier e;
  e.step = step;
  e.failure = obs.failure;
  e.rule = obs.rule;
  e.error = obs.text;
  e.sends_since_success = 1;
  if (e.error.size() > 800) {
    size_t cut = 800;
    while (cut > 0 && (static_cast<unsigned char>(e.error[cut]) & 0xC0) == 0x80) --cut;
    e.error = e.error.substr(0, cut) + "\u2026";
  }
  failed_[key] = Entry{std::move(e), epoch_, successes_};
}

Observation RepeatObservation(const RepeatLog::Earlier& earlier, bool ends_run) {
  Observation obs;
  obs.failure = earlier.failure;
  obs.rule = earlier.rule;
  const std::string n = std::to_string(earlier.step);
  const std::string failure(FailureClassName(earlier.failure));
  if (ends_run) {
    obs.text = "repeat of step " + n + " again: this exact call failed there with " + failure +
               " and has now been sent " + std::to_string(earlier.sends_since_success + 1) +
               " times with no successful run_sql, run_python or make_chart call in between. "
               "It was not run; the run stops here. The error was:\n" +
               earlier.error;
  } else {
    // This send counts too: `left` more unchanged sends end the run.
    const int left = kStuckSends - (earlier.sends_since_success + 1);
    const std::string more = left <= 1   ? "once more"
                             : left == 2 ? "twice more"
                                         : std::to_string(left) + " more times";
    obs.text = "repeat of step " + n + ": this exact call failed there with " + failure +
               " and was not run again: the same call on the same data gives the same error. "
               "Change the call: fix what the error below names, or check the names with "
               "inspect_schema. Sending it " +
               more +
               " ends the run, unless a run_sql, run_python or make_chart call succeeds first. "
               "The error was:\n" +
               earlier.error;
  }
  obs.detail = {{"repeat_of", earlier.step}, {"executed", false}};
  return obs;
}

std::vector<std::string> LiteralColumnNotes(const engine::ResultTable& table, size_t shown,
                                            const std::vector<engine::TableCard>& cards) {
  std::vector<std::string> notes;
  shown = std::min(shown, table.rows.size());
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const std::string& name = table.columns[i];
    std::optional<std::string> literal;
    const bool literal_named = name.size() >= 2 && name.front() == '\'' && name.back() == '\'';
    if (literal_named) {
      literal = name.substr(1, name.size() - 2);
    } else if (shown >= 2) {
      bool same = true;
      for (size_t r = 0; r < shown && same; ++r) {
        const bool text = r >= table.kinds.size() || i >= table.kinds[r].size() ||
                          table.kinds[r][i] == engine::CellKind::kText;
        same = i < table.rows[r].size() && table.rows[r][i] && text &&
               *table.rows[r][i] == table.rows[0][i].value_or("");
      }
      if (same) literal = table.rows[0][i];
    }
    if (!literal) continue;
    const std::string form = NameForm(*literal);
    if (form.empty()) continue;
    for (const engine::TableCard& card : cards) {
      const auto col = std::find_if(card.columns.begin(), card.columns.end(),
                                    [&](const auto& c) { return NameForm(c.name) == form; });
      // The column itself, selected by name, holding its own name in every row: not a mistake.
      if (col == card.columns.end() || (!literal_named && col->name == name)) continue;
      notes.push_back("result column " + (literal_named ? name : DoubleQuoted(name)) +
                      " is the same string on every row and equals the name of column " +
                      card.name + "." + DoubleQuoted(col->name) +
                      "; single quotes make a string literal: to read the column, quote it "
                      "with double quotes, " +
                      DoubleQuoted(col->name));
      break;
    }
  }
  return notes;
}

}  // namespace quarry::agent
