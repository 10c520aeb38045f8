// `quarry schema`, `quarry sql` and `quarry trace`: the engine and the trace reader used
// directly, without a model.
#include <fstream>
#include <iostream>

#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"

namespace quarry::cli {
namespace {

using json = nlohmann::ordered_json;

std::string Dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

json CardsJson(const std::vector<engine::TableCard>& cards) {
  json out = json::array();
  for (const auto& t : cards) {
    json cols = json::array();
    for (const auto& c : t.columns) {
      json col = {{"name", c.name}, {"type", c.type}, {"null_count", c.null_count},
                  {"distinct_count", c.distinct_count}};
      col["min"] = c.min ? json(*c.min) : json(nullptr);
      col["max"] = c.max ? json(*c.max) : json(nullptr);
      col["samples"] = c.samples;
      col["notes"] = c.notes;
      cols.push_back(col);
    }
    json fks = json::array();
    for (const auto& fk : t.foreign_keys) {
      fks.push_back({{"column", fk.column}, {"ref_table", fk.ref_table}, {"ref_column", fk.ref_column}});
    }
    out.push_back({{"name", t.name}, {"source", t.source}, {"row_count", t.row_count},
                   {"columns", cols}, {"foreign_keys", fks}, {"notes", t.notes}});
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

}  // namespace

int RunSchema(const DataOptions& o) {
  LoadFlags load = o.load;
  load.timeout_ms = o.timeout_ms;
  load.fingerprint = false;  // nothing records it
  auto engine = OpenData(o.paths, load);
  if (!engine) return Report(engine.error());
  FillCache(**engine, o.paths, load);
  if (o.format_name == "json") {
    std::cout << Dump({{"dialect", engine::DialectName((*engine)->dialect())},
                       {"tables", CardsJson((*engine)->describe())}})
              << "\n";
  } else {
    std::cout << engine::RenderCards((*engine)->describe());
  }
  return kExitOk;
}

int RunSql(const DataOptions& o) {
  // One query needs no statistics and no hash: the cards would go unread.
  LoadFlags load = o.load;
  load.timeout_ms = o.timeout_ms;
  load.profile = false;
  load.fingerprint = false;
  auto engine = OpenData(o.paths, load);
  if (!engine) return Report(engine.error());
  const FillCacheAtExit fill(**engine, o.paths, load);
  auto result = (*engine)->Query(o.sql, engine::Limits{o.timeout_ms, o.max_rows});
  // After the query: a value past the sample may have made the engine read the file again.
  PrintNotes(**engine);
  if (!result) {
    const auto& f = result.error();
    std::string kind(FailureClassName(f.failure_class));
    if (!f.rule.empty()) kind += " (" + f.rule + ")";
    std::string message = f.message;
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::cerr << "quarry: " << kind << ": " << message << "\n";
    return kExitData;
  }
  if (o.format_name == "json") {
    const json rows = agent::RowsJson(*result, result->rows.size());
    std::cout << Dump({{"columns", result->columns}, {"types", result->types}, {"rows", rows},
                       {"row_count", result->row_count}, {"truncated", result->truncated()}})
              << "\n";
  } else if (o.format_name == "csv") {
    std::cout << CsvRecord(result->columns);
    for (const auto& row : result->rows) std::cout << CsvRecord(row);
    // stdout holds only the rows; a reader must still learn that some were left out.
    if (result->truncated()) {
      std::cerr << "quarry: " << result->row_count << " rows, first " << result->rows.size()
                << " written; raise --max-rows for more\n";
    }
  } else {
    std::string text = engine::RenderResult(*result, o.max_rows);
    // The "rows are data" header is for the model; a person reading a terminal knows.
    std::cout << text.substr(text.find('\n') + 1);
  }
  return kExitOk;
}

int RunTrace(const TraceOptions& o) {
  auto path = trace::FindTrace(o.runs_dir, o.which);
  if (!path) return Report(path.error());
  auto t = trace::ReadTrace(*path);
  if (!t) return Report(t.error());
  std::cout << trace::Summary(*t) << "trace: " << path->string() << "\n";
  return kExitOk;
}

int RunView(const ViewOptions& o) {
  auto path = trace::FindTrace(o.runs_dir, o.which);
  if (!path) return Report(path.error());
  auto t = trace::ReadTrace(*path);
  if (!t) return Report(t.error());
  const std::filesystem::path out =
      o.out.empty() ? path->parent_path() / "trace.html" : std::filesystem::path(o.out);
  const std::string tmp = out.string() + ".tmp";
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << trace::RenderHtml(*t, path->parent_path());
    if (!file) return Report({Error::Code::kUsage, "cannot write " + out.string()});
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) return Report({Error::Code::kUsage, "cannot write " + out.string() + ": " + ec.message()});
  std::cout << out.string() << "\n";
  return kExitOk;
}

}  // namespace quarry::cli
