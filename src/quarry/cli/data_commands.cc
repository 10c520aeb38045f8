// `quarry schema`, `quarry sql` and `quarry trace`: the engine and the trace reader used
// directly, without a model.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/terminal.h"
#include "quarry/cli/interrupt.h"
#include "quarry/cli/commands.h"

namespace quarry::cli {
namespace {

using json = nlohmann::ordered_json;

std::string Dump(const json& j) { return JsonText(j); }

// With --no-samples, min and max stay only for numbers, dates and times (as in the cards).
bool KeepsRange(const std::string& type) {
  std::string u = type;
  for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const char* word : {"INT", "REAL", "FLOA", "DOUB", "DEC", "NUMERIC", "DATE", "TIME"}) {
    if (u.find(word) != std::string::npos && u.find("POINT") == std::string::npos) return true;
  }
  return false;
}

json CardsJson(const std::vector<engine::TableCard>& cards, bool samples) {
  json out = json::array();
  for (const auto& t : cards) {
    json cols = json::array();
    for (const auto& c : t.columns) {
      json col = {{"name", c.name},
                  {"type", c.type},
                  {"null_count", c.null_count},
                  {"distinct_count", c.distinct_count}};
      const bool range = samples || KeepsRange(c.type);
      col["min"] = c.min && range ? json(*c.min) : json(nullptr);
      col["max"] = c.max && range ? json(*c.max) : json(nullptr);
      col["samples"] = samples ? c.samples : std::vector<std::string>{};
      col["notes"] = c.notes;
      cols.push_back(col);
    }
    json fks = json::array();
    for (const auto& fk : t.foreign_keys) {
      fks.push_back(
          {{"column", fk.column}, {"ref_table", fk.ref_table}, {"ref_column", fk.ref_column}});
    }
    out.push_back({{"name", t.name},
                   {"source", t.source},
                   {"row_count", t.row_count},
                   {"estimated", t.estimated},
                   {"columns", cols},
                   {"foreign_keys", fks},
                   {"notes", t.notes}});
  }
  return out;
}

// One RFC 4180 record with LF line ends (as DuckDB's COPY writes): a field with a comma, quote,
// CR or LF is quoted with quotes doubled; NULL is an empty field and the empty string a quoted
// empty field, so the two stay apart.
std::string CsvField(const std::optional<std::string>& cell) {
  if (!cell) return "";
  if (!cell->empty() && cell->find_first_of(",\"\r\n") == std::string::npos) return *cell;
  std::string out = "\"";
  for (const char ch : *cell) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

template <typename Cells>
std::string CsvRecord(const Cells& cells) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    out += (i ? "," : "") + CsvField(std::optional<std::string>(cells[i]));
  }
  return out + "\n";
}

// The first request `quarry ask` sends for `question` (its defaults: run_python and make_chart
// offered), in the OpenAI Chat Completions shape, with what the schema section holds and the
// estimate recorded in a trace: for measuring the prompt (bench/prompt_tokens.mjs).
json FirstRequest(const engine::Engine& engine, const std::string& question,
                  const agent::SchemaOptions& options) {
  agent::SchemaView view;
  const std::string system = agent::SystemPrompt(engine, question, options, &view);
  std::vector<llm::ToolSchema> schemas;
  json tools = json::array();
  for (const auto& t : agent::DefaultTools(true, true)) {
    schemas.push_back(t.schema);
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", t.schema.name},
                       {"description", t.schema.description},
                       {"parameters", t.schema.parameters}}}});
  }
  const std::vector<llm::Message> messages = {{llm::Role::kSystem, system, {}, {}},
                                              {llm::Role::kUser, question, {}, {}}};
  return {{"messages", json::array({{{"role", "system"}, {"content", system}},
                                    {{"role", "user"}, {"content", question}}})},
          {"tools", tools},
          {"schema",
           {{"text", view.text},
            {"tokens_estimated", view.tokens_estimated},
            {"whole", view.whole},
            {"full", view.full},
            {"compact", view.compact},
            {"partial", view.partial},
            {"listed", view.listed},
            {"ranking", view.ranking},
            {"ranked", view.ranked},
            {"notes", view.notes}}},
          {"prompt_tokens_estimated", agent::EstimateRequestTokens(messages, schemas)}};
}

}  // namespace

int RunSchema(const DataOptions& o) {
  LoadFlags load = o.load;
  load.timeout_ms = o.timeout_ms;
  load.fingerprint = false;  // nothing records it
  auto engine = OpenData(o.paths, load);
  if (!engine) return Report(engine.error());
  FillCache(**engine, o.paths, load);
  auto schema = ResolveSchemaOptions(o.schema_budget, o.no_samples, o.prompt_question.has_value());
  if (!schema) return Report(schema.error());
  if (o.prompt_question) {
    std::cout << Dump(FirstRequest(**engine, *o.prompt_question, *schema)) << "\n";
    return kExitOk;
  }
  if (o.format_name == "json") {
    // Source paths as the engine keeps them: a server's spec redacted, never a password.
    json sources = json::array();
    for (const auto& s : (*engine)->sources()) {
      sources.push_back(
          {{"path", s.path}, {"format", engine::SourceFormatName(s.format)}, {"notes", s.notes}});
    }
    std::cout << Dump({{"dialect", engine::DialectName((*engine)->dialect())},
                       {"sources", sources},
                       {"tables", CardsJson((*engine)->describe(), schema->samples)}})
              << "\n";
  } else {
    engine::CardOptions options;
    options.samples = schema->samples;
    if (!PageOrPrint(engine::RenderCards((*engine)->describe(), options))) {
      return Report({Error::Code::kData,
                     std::string("the output could not be written: ") + std::strerror(errno)});
    }
  }
  return kExitOk;
}

int RunSql(const DataOptions& o) {
  // One query needs no statistics and no hash: the cards would go unread.
  LoadFlags load = o.load;
  load.timeout_ms = o.timeout_ms;
  load.profile = false;
  load.fingerprint = false;
  const InterruptScope interrupt;
  load.stop = interrupt.token();
  auto engine = OpenData(o.paths, load);
  if (interrupt.token().stop_requested()) {
    return Report({Error::Code::kCancelled, "interrupted while opening the data"});
  }
  if (!engine) return Report(engine.error());
  const FillCacheAtExit fill(**engine, o.paths, load);
  auto result =
      (*engine)->Query(o.sql, engine::Limits{o.timeout_ms, o.max_rows, interrupt.token()});
  // After the query: a value past the sample may have made the engine read the file again.
  PrintNotes(**engine);
  if (!result) {
    const auto& f = result.error();
    std::string kind(FailureClassName(f.failure_class));
    if (!f.rule.empty()) kind += " (" + f.rule + ")";
    std::string message = f.message;
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::cerr << "quarry: " << kind << ": " << TerminalText(message) << "\n";
    return f.code == Error::Code::kCancelled ? kExitInterrupted : kExitData;
  }
  if (o.format_name == "json") {
    const json rows = agent::RowsJson(*result, result->rows.size());
    std::cout << Dump({{"columns", result->columns},
                       {"types", result->types},
                       {"rows", rows},
                       {"row_count", result->row_count},
                       {"truncated", result->truncated()}})
              << "\n";
  } else if (o.format_name == "csv") {
    // Exact bytes into a pipe or a file (CSV is data); a terminal gets the cells escaped, so
    // a cell's ESC, BEL or C1 control cannot act on it.
    std::cout << TerminalTextIfTty(1, CsvRecord(result->columns));
    for (const auto& row : result->rows) std::cout << TerminalTextIfTty(1, CsvRecord(row));
    // stdout holds only the rows; a reader must still learn that some were left out.
    if (result->truncated()) {
      std::cerr << "quarry: " << result->row_count << " rows, first " << result->rows.size()
                << " written; raise --max-rows for more\n";
    }
  } else {
    std::string text = engine::RenderResult(*result, o.max_rows);
    // The "rows are data" header is for the model; a person reading a terminal knows.
    if (!PageOrPrint(text.substr(text.find('\n') + 1))) {
      return Report({Error::Code::kData,
                     std::string("the output could not be written: ") + std::strerror(errno)});
    }
  }
  return kExitOk;
}

int RunTrace(const TraceOptions& o) {
  auto path = trace::FindTrace(o.runs_dir, o.which);
  if (!path) return Report(path.error());
  auto t = trace::ReadTrace(*path);
  if (!t) return Report(t.error());
  // A trace holds the model's text, tool names and the data's values: shown, never obeyed.
  std::cout << TerminalText(trace::Summary(*t)) << "trace: " << TerminalText(path->string())
            << "\n";
  return kExitOk;
}

int RunView(const ViewOptions& o) {
  auto path = trace::FindTrace(o.runs_dir, o.which);
  if (!path) return Report(path.error());
  auto t = trace::ReadTrace(*path);
  if (!t) return Report(t.error());
  const std::filesystem::path out =
      o.out.empty() ? path->parent_path() / "trace.html" : std::filesystem::path(o.out);
  // Beside a trace that may sit in someone else's folder: never written through a link.
  if (auto w = trace::WritePrivateFile(out, trace::RenderHtml(*t, path->parent_path())); !w) {
    return Report(w.error());
  }
  std::cout << TerminalText(out.string()) << "\n";
  return kExitOk;
}

}  // namespace quarry::cli
