// Pieces the engine implementations share; only the engine module includes this header.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "quarry/engine/engine.h"

namespace quarry::engine::internal {

using Rows = std::vector<std::vector<std::optional<std::string>>>;
// Runs trusted, engine-internal SQL (card statistics), returning every row as text.
using RunRows = std::function<Result<Rows>(const std::string& sql)>;

struct ColumnInfo {
  std::string name;
  std::string type;
  bool ordered = true;  // min/max mean something for this type
};

// What an engine adds to one column's card: aggregates over the column computed in the card's
// one statistics scan, and `notes_from`, which turns their values (as text, in order) and the
// column's non-null count into column notes.
struct ColumnExtra {
  std::vector<std::string> aggregates;
  std::function<std::vector<std::string>(const std::vector<std::optional<std::string>>& values,
                                         int64_t non_null)>
      notes_from;
};

// "name" with embedded quotes doubled; valid in both dialects.
std::string QuoteIdent(std::string_view name);
// 'text' with embedded quotes doubled.
std::string QuoteLiteral(std::string_view text);

// Row count, per-column null/distinct counts, min/max and the three most frequent values.
// `sql_name` is how queries reach the table (quoted, maybe schema-qualified). `extras`, when
// given, has one entry per column.
Result<TableCard> BuildCard(const std::string& table, const std::string& sql_name,
                            const std::string& source,
                            const std::vector<ColumnInfo>& columns, const RunRows& run,
                            const std::vector<ColumnExtra>& extras = {});

// Hashes and sizes the file; errors name the file (unreadable, directory, empty).
Result<Source> Fingerprint(const std::filesystem::path& path, std::string format);

// A SQL-safe table name from a file stem: lower case, [a-z0-9_], not starting with a digit,
// not one of `keywords` (lower case), and distinct from every name in `taken`.
std::string TableNameFor(const std::filesystem::path& path, const std::vector<std::string>& taken,
                         const std::vector<std::string>& keywords);

Result<std::unique_ptr<Engine>> OpenDuckDbFiles(const std::vector<std::filesystem::path>& paths,
                                                const std::vector<std::string>& formats,
                                                const OpenOptions& options);
Result<std::unique_ptr<Engine>> OpenDuckDbDatabase(const std::filesystem::path& path,
                                                   const OpenOptions& options);
// Tests only: a SQLite engine's query without the text guard (CheckQueryText), so a test can
// show the engine's own layer (authorizer, read-only statement check) refuses on its own.
// Any other engine gets a runtime_error failure.
QueryOutcome QuerySqlitePastTextGuard(Engine& engine, std::string_view sql,
                                      const Limits& limits);

Result<std::unique_ptr<Engine>> OpenSqlite(const std::filesystem::path& path,
                                           const OpenOptions& options);

}  // namespace quarry::engine::internal
