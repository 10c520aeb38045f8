// The tools the model sees and the tools that execute: inspect_schema, run_sql and run_python
// (their code arguments cleaned of Markdown first, see hygiene_internal.h). Their argument
// schemas and the check against them are in arguments.cc. ask_user and final_answer are listed
// here; the loop runs them (clarify.cc, the verify gate).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"
#include "quarry/common/scratch.h"
#include "quarry/agent/hygiene_internal.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;

// The table a model names: by its SQL name, by the escaped form the cards showed it in (a name
// holding a newline), or, failing both, ignoring case.
const engine::TableCard* FindTable(const std::vector<engine::TableCard>& cards,
                                   const std::string& want) {
  for (const auto& card : cards) {
    if (card.name == want || engine::PromptText(card.name, engine::kCardNameBytes) == want)
      return &card;
  }
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  for (const auto& card : cards) {
    if (lower(card.name) == lower(want)) return &card;
  }
  return nullptr;
}

Observation InspectSchema(const json& args, ToolContext& ctx) {
  const auto& cards = ctx.engine.describe();
  Observation obs;
  engine::CardOptions options;
  options.samples = ctx.config.schema.samples;
  for (const auto& c : args.value("columns", json::array()))
    options.only.push_back(c.get<std::string>());
  if (args.contains("table")) {
    const std::string want = args["table"].get<std::string>();
    if (const engine::TableCard* card = FindTable(cards, want)) {
      std::vector<std::string> missing;
      for (const auto& name : options.only) {
        if (std::none_of(card->columns.begin(), card->columns.end(),
                         [&](const engine::ColumnCard& c) { return c.name == name; })) {
          missing.push_back(name);
        }
      }
      if (!missing.empty()) {
        obs.failure = FailureClass::kBadArguments;
        obs.text = "table " + engine::PromptText(card->name, engine::kCardNameBytes) +
                   " has no column named '" +
                   engine::PromptText(missing.front(), engine::kCardNameBytes) +
                   "'; inspect_schema with only `table` lists its columns";
        return obs;
      }
      options.max_columns = options.only.empty() ? 0 : engine::kCardColumns;
      obs.text = engine::RenderCards({*card}, options);
      obs.detail = {{"table", card->name}};
      return obs;
    }
    obs.failure = FailureClass::kBadArguments;
    obs.text = UnknownTableText(cards, want);
    return obs;
  }
  const std::string prefix = args.value("prefix", std::string());
  const int64_t offset = args.contains("offset") ? args["offset"].get<int64_t>() : 0;
  if (offset < 0) {
    obs.failure = FailureClass::kBadArguments;
    obs.text = "`offset` must be 0 or more (the index's first page is offset 0)";
    return obs;
  }
  if (!prefix.empty() || offset > 0) {
    obs.text = TableIndex(cards, prefix, static_cast<size_t>(offset));
    return obs;
  }
  options.max_columns = engine::kCardColumns;
  obs.text = engine::RenderCards(cards, options);
  if (options.only.empty() && engine::EstimateTokens(obs.text) > ctx.config.schema.budget_tokens) {
    obs.text = TableIndex(cards, "", 0);
  }
  return obs;
}

// What a cleaned argument had removed, as the observation's first line and in its detail.
void NoteCleaned(Observation& obs, const CleanedCode& cleaned, const std::string& what) {
  if (cleaned.cleaning == Cleaning::kNone) return;
  obs.text = CleaningNote(cleaned, what) + "\n" + obs.text;
  obs.detail["cleaned"] = cleaned.removed;
}

Observation RunSqlText(const std::string& sql, ToolContext& ctx);

// Runs `run` on the code in args[key] once one fence or language tag is removed; code that
// cannot be cleaned (prose around it) is bad_arguments.
Observation RunCleaned(const json& args, const char* key, CleanedCode (*clean)(std::string_view),
                       Observation (*run)(const std::string&, ToolContext&), const char* what,
                       ToolContext& ctx) {
  const CleanedCode cleaned = clean(args[key].get<std::string>());
  if (!cleaned.problem.empty()) {
    Observation obs;
    obs.failure = FailureClass::kBadArguments;
    obs.text = "bad_arguments: " + cleaned.problem;
    obs.detail = {{key, args[key]}};
    return obs;
  }
  Observation obs = run(cleaned.text, ctx);
  NoteCleaned(obs, cleaned, what);
  return obs;
}

Observation RunSql(const json& args, ToolContext& ctx) {
  return RunCleaned(args, "sql", CleanSql, RunSqlText, "SQL", ctx);
}

Observation RunSqlText(const std::string& sql, ToolContext& ctx) {
  Observation obs;
  obs.detail = {{"sql", sql}};
  auto outcome = ctx.engine.Query(sql, ctx.config.limits);
  if (!outcome) {
    obs.failure = outcome.error().failure_class;
    obs.rule = outcome.error().rule;
    obs.text = (outcome.error().code == Error::Code::kCancelled
                    ? std::string("cancelled")
                    : std::string(FailureClassName(obs.failure))) +
               ": " + outcome.error().message;
    return obs;
  }
  const engine::ResultTable& table = *outcome;
  obs.detail["columns"] = table.columns;
  obs.detail["types"] = table.types;
  obs.detail["row_count"] = table.row_count;
  obs.detail["rows"] = RowsJson(table, static_cast<size_t>(ctx.config.preview_rows));
  if (table.row_count == 0) {
    // Still evidence: an empty result grounds 0 and "no rows".
    RecordEvidence(table, ctx, "run_sql", sql);
    obs.failure = FailureClass::kEmptyResult;
    obs.text =
        "empty_result: the query ran and returned no rows. Check filter values against "
        "the samples in the schema (case, spelling, date format) before concluding "
        "there is no data.\n" +
        engine::RenderResult(table, 0);
    return obs;
  }
  obs.text = ShowResult(table, ctx, "run_sql", sql);
  const auto notes = LiteralColumnNotes(table, static_cast<size_t>(ctx.config.preview_rows),
                                        ctx.engine.describe());
  for (const std::string& n : notes) obs.text += "note: " + n + "\n";
  if (!notes.empty()) obs.detail["notes"] = notes;
  ctx.last = sandbox::LastResult{table.columns, table.types, table.rows};
  return obs;
}

}  // namespace

namespace {

// Every integer of at most this magnitude is exact in a double, so any JSON reader (a
// JavaScript client too) reads it back unchanged (2^53).
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;
// A decimal of at most 15 significant digits survives the trip through a double and back
// (DBL_DIG), so it can be a JSON number without changing its value.
constexpr int kMaxExactDigits = 15;

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char ch : bytes) {
    acc = (acc << 8) | static_cast<unsigned char>(ch);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  while (out.size() % 4 != 0) out += '=';
  return out;
}

std::optional<double> ParseDouble(const std::string& text) {
  double d = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(d)) {
    return std::nullopt;
  }
  return d;
}

int SignificantDigits(std::string_view decimal) {
  int digits = 0;
  bool leading = true;
  for (const char ch : decimal) {
    if (ch < '0' || ch > '9') continue;
    if (leading && ch == '0') continue;
    leading = false;
    ++digits;
  }
  return digits;
}

// One cell as JSON by its kind (engine::CellKind), as the README documents for --format json.
json CellJson(const std::optional<std::string>& cell, engine::CellKind kind) {
  using engine::CellKind;
  if (!cell) return nullptr;
  const std::string& text = *cell;
  switch (kind) {
    case CellKind::kInteger: {
      int64_t n = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec == std::errc() && end == text.data() + text.size() && n <= kMaxExactInteger &&
          n >= -kMaxExactInteger) {
        return n;
      }
      return text;  // HUGEINT, UBIGINT or a BIGINT beyond 2^53: its exact digits
    }
    case CellKind::kReal:
      if (auto d = ParseDouble(text)) return *d;
      return text;  // inf, -inf, nan have no JSON number
    case CellKind::kDecimal:
      if (SignificantDigits(text) <= kMaxExactDigits) {
        if (auto d = ParseDouble(text)) return *d;
      }
      return text;
    case CellKind::kBoolean:
      if (text == "true" || text == "false") return text == "true";
      return text;
    case CellKind::kBlob:
      return json{{"base64", Base64(engine::BlobBytes(text))}};
    case CellKind::kNull:
    case CellKind::kText:
      break;
  }
  return text;
}

}  // namespace

json RowsJson(const engine::ResultTable& table, size_t max_rows) {
  json rows = json::array();
  for (size_t r = 0; r < std::min(table.rows.size(), max_rows); ++r) {
    json row = json::array();
    for (size_t c = 0; c < table.rows[r].size(); ++c) {
      const bool known = r < table.kinds.size() && c < table.kinds[r].size();
      const engine::CellKind kind = known ? table.kinds[r][c] : engine::CellKind::kText;
      row.push_back(CellJson(table.rows[r][c], kind));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void RecordEvidence(const engine::ResultTable& table, ToolContext& ctx, const std::string& tool,
                    const std::string& sql) {
  // The gate may only accept what the model was actually shown.
  const size_t shown = std::min(table.rows.size(), static_cast<size_t>(ctx.config.preview_rows));
  const std::vector<std::vector<std::optional<std::string>>> rows(
      table.rows.begin(), table.rows.begin() + static_cast<std::ptrdiff_t>(shown));
  // Keys the schema declares are identifiers whatever their names.
  std::vector<std::string> keys;
  for (const auto& card : ctx.engine.describe()) {
    for (const auto& fk : card.foreign_keys)
      keys.push_back(fk.column), keys.push_back(fk.ref_column);
  }
  ctx.evidence.AddResult({ctx.step, tool, sql, table.row_count}, table.columns, rows, keys);
}

std::string ShowResult(const engine::ResultTable& table, ToolContext& ctx, const std::string& tool,
                       const std::string& sql) {
  RecordEvidence(table, ctx, tool, sql);
  return engine::RenderResult(table, ctx.config.preview_rows);
}

Result<std::vector<sandbox::TableFile>> SandboxTables(const engine::Engine& engine,
                                                      const std::filesystem::path& dir,
                                                      int64_t max_rows) {
  auto exported = engine::ExportTables(engine, dir, max_rows);
  if (!exported) return std::unexpected(exported.error());
  std::vector<sandbox::TableFile> out;
  for (const engine::TableExport& e : *exported) {
    sandbox::TableFile t;
    t.name = e.table;
    t.host_path = e.path;
    t.format = "export";
    t.columns = e.columns;
    t.null_marker = std::string(engine::kExportNull);
    t.row_count = e.row_count;
    t.rows_written = e.rows_written;
    t.max_rows = max_rows;
    t.notes = e.notes;
    out.push_back(std::move(t));
  }
  return out;
}

std::filesystem::path TablesDirFor(const sandbox::Options& options) {
  if (!options.tables_dir.empty()) return options.tables_dir;
  return std::filesystem::absolute(options.workdir).lexically_normal().parent_path() / "tables";
}

namespace {

Observation RunPythonCode(const std::string& code, ToolContext& ctx);

Observation RunPython(const json& args, ToolContext& ctx) {
  return RunCleaned(args, "code", CleanPython, RunPythonCode, "Python code", ctx);
}

Observation RunPythonCode(const std::string& code, ToolContext& ctx) {
  Observation obs;
  obs.detail = {{"code", code}};
  Result<sandbox::PythonResult> result;
  if (ctx.kernel) {
    result = ctx.kernel->Run(code, ctx.last);
  } else {
    // No kernel (a direct tool call): a fresh Python, its tables copied for this call alone.
    sandbox::Options options = ctx.config.sandbox;
    options.tables_dir = TablesDirFor(options);
    ScratchDirs::Add(options.tables_dir);
    options.last = ctx.last;
    auto tables = SandboxTables(ctx.engine, options.tables_dir, ctx.config.python_max_rows);
    if (tables) {
      options.tables = std::move(*tables);
    }
    result = sandbox::RunPython(code, options);
    if (result && !tables) {
      result->notes.insert(result->notes.begin(), "the tables could not be copied for Python (" +
                                                      tables.error().message + "); use run_sql");
    }
    std::error_code ec;
    std::filesystem::remove_all(options.tables_dir, ec);
    ScratchDirs::Forget(options.tables_dir);
  }
  if (!result && result.error().code == Error::Code::kUsage) {
    // quarry cannot run Python here at all: the model should fall back to SQL.
    obs.failure = FailureClass::kGuardViolation;
    obs.rule = "isolation_unavailable";
    obs.text = "guard_violation: " + result.error().message;
    return obs;
  }
  if (!result) {  // Python could not be started this time (the next call tries again)
    obs.failure = FailureClass::kRuntimeError;
    obs.text =
        (result.error().code == Error::Code::kCancelled ? "cancelled: " : "runtime_error: ") +
        result.error().message;
    return obs;
  }
  obs.failure = result->failure;
  obs.rule = result->rule;
  obs.text = sandbox::RenderObservation(*result);
  obs.detail["stdout"] = result->stdout_text;
  obs.detail["stderr"] = result->stderr_text;
  obs.detail["exit_code"] = result->exit_code;
  obs.detail["isolation"] =
      result->isolation == sandbox::Isolation::kNamespaces ? "namespaces" : "rlimits_only";
  if (!result->notes.empty()) obs.detail["notes"] = result->notes;
  if (ctx.kernel) obs.detail["kernel_state_lost"] = result->state_lost;
  for (const auto& a : result->artifacts) obs.artifacts.push_back(a.string());
  obs.detail["artifacts"] = obs.artifacts;
  if (obs.failure == FailureClass::kNone) {
    ctx.evidence.AddText({ctx.step, "run_python", code, -1}, result->stdout_text);
  } else {
    // It ran, at least in part, in the warm kernel: what it assigned outlives the failure.
    ctx.evidence.AddCode({ctx.step, "run_python", code, -1});
  }
  return obs;
}

}  // namespace

std::vector<Tool> DefaultTools(bool python, bool charts) {
  std::vector<Tool> tools;
  tools.push_back(
      Tool{{"inspect_schema",
            "Show schema cards. `table`: one table, every "
            "column; `columns`: just those. Without `table`, a large schema gives an index of "
            "names by pages (`offset`), narrowed by `prefix`.",
            ToolParameters("inspect_schema")},
           false,
           InspectSchema});
  tools.push_back(
      Tool{{"run_sql",
            "Run one read-only SQL query (SELECT or WITH ... SELECT) on the registered tables. "
            "Returns up to 30 rows and the true row count.",
            ToolParameters("run_sql")},
           true,
           RunSql});
  if (python) {
    tools.push_back(Tool{
        {"run_python",
         "Run Python 3 with pandas (pd), numpy (np) and matplotlib.pyplot (plt) in a sandbox. "
         "Each registered table is a DataFrame in `tables` (and `df` when there is one); the "
         "latest run_sql result is `last`. Variables persist between run_python calls of this "
         "run, as in a notebook (you are told if the state was lost). Print what you need; "
         "save figures with plt.savefig('name.png'). Imports: pandas, numpy, matplotlib, json, "
         "math, datetime, re, statistics, collections, itertools. Use it where SQL is the "
         "wrong tool.",
         ToolParameters("run_python")},
        true,
        RunPython});
  }
  if (charts) {
    tools.push_back(Tool{
        {"make_chart",
         "Draw a chart of a query's result (a small Vega-Lite subset, rendered to PNG and SVG). "
         "spec: {\"mark\": \"bar\"|\"line\"|\"point\"|\"area\"|\"arc\", \"title\": "
         "\"...\", \"data\": {\"sql\": \"SELECT ...\"}, \"encoding\": {\"x\": {\"field\", "
         "\"type\": nominal|ordinal|quantitative|temporal, \"sort\"?, \"title\"?}, \"y\": "
         "{...}, \"color\"?: {...}, \"theta\"? (arc)}}. A histogram: bar, x with \"bin\": true, "
         "y {\"aggregate\": \"count\"}. Aggregate in SQL where you can.",
         ToolParameters("make_chart")},
        true,
        MakeChart});
  }
  tools.push_back(
      Tool{{"ask_user",
            "Ask the user one short question when the answer needs their choice (an entity not "
            "named, a measure left open). Give `choices` when the options are few, and the open "
            "phrase as `term`. The run waits for the reply (or ends, and continues when the user "
            "answers).",
            ToolParameters("ask_user")},
           false,
           nullptr});
  tools.push_back(Tool{
      {"final_answer",
       "Give the answer, after at least one query. Every number in `answer` (digits or words) "
       "and in `supporting_values` must be in a result, a schema card, an earlier turn's kept "
       "result or the question: the same kind of quantity (an id is not a count), the sign its "
       "words say, rounded to the figures written. Else it is sent back.",
       ToolParameters("final_answer")},
      false,
      nullptr});
  return tools;
}

}  // namespace quarry::agent
