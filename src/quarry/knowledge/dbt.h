// Knowledge files from a dbt project's own documentation (docs/knowledge.md, "Importing from
// dbt"): the manifest dbt writes to target/manifest.json (schema v10 to v12, dbt 1.6 and later)
// read into table meanings, joins and metrics (ParseDbtManifest), rendered as the YAML Load
// reads (RenderDbtImport), and written into a knowledge folder without replacing any file
// (PlanDbtImport, WriteKnowledgeFiles). `quarry knowledge import dbt` is the caller.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/common/common.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::knowledge {

// A larger manifest is refused before it is read: parsed, it takes several times its size.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;

// What a manifest gives. Each item's origin.file holds the dbt unique_id it came from
// ("model.shop.orders", "metric.shop.revenue"), line 0. Tables, joins and metrics are sorted by
// name, so an import of the same manifest writes the same files.
struct DbtImport {
  // Models, seeds and sources with a description, a described column, a personal column or an
  // accepted_values test. A column's description is its meaning; meta personal / pii /
  // contains_pii / is_pii true (or a tag pii / personal) marks it personal; accepted_values give
  // its values.
  std::vector<TableDoc> tables;
  // relationships tests, as many-to-one joins from the tested column to `field` of `to`.
  std::vector<Relationship> relationships;
  // Simple metrics: their measure's aggregate over its semantic model's table, their filters
  // when they are SQL, the measure's agg_time_dimension as time, the label as a synonym.
  std::vector<Metric> metrics;
  // What was left out, each with its reason: "metric margin (ratio metrics are not imported)".
  std::vector<std::string> skipped;
  // What was imported but changed on the way: "metric revenue: time left out: ...".
  std::vector<std::string> notes;
};

// Reads manifest text. `name` (the file's path as the user gave it) starts every error message.
// Errors (kData): not valid JSON (with the line and column), nested deeper than kMaxJsonDepth,
// not a manifest (no "nodes" object), or a field that is read holding the wrong kind of value,
// named by its path ("nodes["model.shop.orders"].columns is a list, not an object"). A
// manifest that documents nothing is an empty DbtImport, not an error. Never throws.
Result<DbtImport> ParseDbtManifest(std::string_view text, const std::string& name);

// The manifest at `path`, read and parsed. Errors (kData): it is missing, not a regular file,
// over kMaxManifestBytes, or unreadable, and what ParseDbtManifest refuses.
Result<DbtImport> ReadDbtManifest(const std::filesystem::path& path);

// One knowledge file as an import writes it.
struct KnowledgeFile {
  std::string path;   // relative to the knowledge folder: "tables/orders.yaml", "metrics.yaml"
  std::string text;   // YAML that Load reads back as the items
  std::string what;   // "table orders", "2 relationships", "1 metric"
  std::string table;  // the table a tables/ file describes; "" for the other files
  size_t items = 0;   // tables, joins or metrics it holds
};

// The files of `import`: tables/<table>.yaml for each table (the name kept to letters, digits,
// '_', '-' and '.' for the file, with a table: key when that changed it), relationships.yaml and
// metrics.yaml when there are any. Each starts with a comment naming `source` (the manifest).
// YAML is written by yaml-cpp's emitter, so any text is quoted as it must be. Errors
// (kInternal): the emitter refused a value.
Result<std::vector<KnowledgeFile>> RenderDbtImport(const DbtImport& import,
                                                   const std::string& source);

// Which of `files` can be written into `dir` without replacing anything.
struct ImportPlan {
  std::vector<KnowledgeFile> write;
  // Files left as they are, each with why: "metrics.yaml (it exists)",
  // "tables/orders.yaml (table orders is described in tables/sales.yaml)".
  std::vector<std::string> kept;
  // Why the folder's files do not load now, "" when they do or there are none: the import
  // cannot mend that, and the caller should say so.
  std::string existing_problem;
};
// A file that exists (as anything, a link too) is kept; so is a file over the 1 MiB Load reads,
// and a table file whose table another file of `dir` describes, when the folder loads (two
// descriptions would make it fail to load).
ImportPlan PlanDbtImport(const std::filesystem::path& dir, std::vector<KnowledgeFile> files);

// Writes `files` under `dir`, creating it and tables/ when missing; a file that appeared since
// the plan is not replaced but listed in `kept`. Returns the paths written, relative to `dir`.
// Errors (kData): a folder or file cannot be created or written, naming it and the files
// written before it (which are kept).
struct WriteOutcome {
  std::vector<std::string> written;
  std::vector<std::string> kept;
};
Result<WriteOutcome> WriteKnowledgeFiles(const std::filesystem::path& dir,
                                         const std::vector<KnowledgeFile>& files);

}  // namespace quarry::knowledge
