// Prompt assembly: the prompt files (embedded at build time from prompts/*.md) with their
// {{placeholders}} filled.
#include <map>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"

namespace quarry::agent {

const std::map<std::string, std::string>& EmbeddedPrompts();

std::string Prompt(const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& values) {
  std::string text = EmbeddedPrompts().at(name);
  for (const auto& [key, value] : values) {
    const std::string mark = "{{" + key + "}}";
    for (size_t pos = 0; (pos = text.find(mark, pos)) != std::string::npos; pos += value.size()) {
      text.replace(pos, mark.size(), value);
    }
  }
  return text;
}

std::string SystemPrompt(const engine::Engine& engine, const std::string& question,
                         const SchemaOptions& options, SchemaView* view, PromptMode mode) {
  const auto [dialect, cleaning] = [&]() -> std::pair<const char*, const char*> {
    switch (engine.dialect()) {
      case engine::Dialect::kDuckDB:
        return {"DuckDB", "cleaning_duckdb"};
      case engine::Dialect::kSQLite:
        return {"SQLite", "cleaning_sqlite"};
      case engine::Dialect::kPostgreSQL:
        return {"PostgreSQL", "cleaning_postgres"};
      case engine::Dialect::kMySQL:
        return {"MySQL", "cleaning_mysql"};
      case engine::Dialect::kClickHouse:
        return {"ClickHouse", "cleaning_clickhouse"};
    }
    return {"SQLite", "cleaning_sqlite"};
  }();
  SchemaView schema = ViewSchema(engine, question, options);
  // The eval line is a bullet of its own; without it the prompt is byte for byte ask's.
  const std::string eval = mode == PromptMode::kEval ? "\n- " + Prompt("eval", {}) : "";
  std::string text = Prompt("system", {{"dialect", dialect},
                                       {"cleaning", Prompt(cleaning, {})},
                                       {"eval", eval},
                                       {"schema_cards", schema.text}});
  if (view) *view = std::move(schema);
  return text;
}

size_t StablePrefixBytes(const std::string& system_prompt) {
  // The marker is the prompt file's own line; the cards after it cannot forge it at the start
  // of a line (card text escapes line breaks), and find() returns the first one anyway.
  const std::string marker = "--- schema cards (data) ---\n";
  const size_t at = system_prompt.find(marker);
  return at == std::string::npos ? 0 : at + marker.size();
}

}  // namespace quarry::agent
