// What the data means, kept as files beside it (docs/knowledge.md): the grain and the columns'
// meanings of each table, joins the database does not declare, named metrics, a glossary,
// rules the analyst must always apply, and verified questions with their SQL. The files are the
// user's own configuration, trusted like a prompt the user wrote. This module reads them
// (Load), picks what matters for a question within a token budget (Retrieve), and runs each
// definition against the data (Check).
#pragma once

#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "quarry/common/common.h"
#include "quarry/engine/engine.h"

namespace quarry::knowledge {

// Where an item was written: a file relative to the knowledge folder, and its line from 1
// (0 for a whole Markdown file).
struct Origin {
  std::string file;  // "metrics.yaml", "tables/sales.yaml", "queries/revenue-by-region.md"
  int line = 0;
};

// One column's meaning (tables/<table>.yaml, under columns:).
struct ColumnDoc {
  std::string name;
  std::string meaning;
  std::string unit;  // "USD", "minutes", "" when none is given
  // Allowed values and what each means ("paid": "settled by the customer"), in file order.
  std::vector<std::pair<std::string, std::string>> values;
  bool personal = false;  // personal data: its values are never put in the prompt
};

// tables/<table>.yaml: what a row is, a description, and the columns' meanings.
struct TableDoc {
  std::string table;  // the table's name as the engine lists it
  std::string grain;  // "one row per order line"
  std::string description;
  std::vector<ColumnDoc> columns;
  Origin origin;
};

// relationships.yaml: a join the database does not declare. `from` and `to` are
// "table.column"; cardinality is one of many-to-one, one-to-many, one-to-one, many-to-many.
struct Relationship {
  std::string from;
  std::string to;
  std::string cardinality;
  std::string note;
  Origin origin;
};

// metrics.yaml: a named measure. `sql` is an aggregate expression over `table` ("sum(amount)"),
// `filter` a condition rows must meet ("status = 'paid'", "" for none), `time` the column
// dates are read from ("" for none).
struct Metric {
  std::string name;
  std::string sql;
  std::string table;
  std::string filter;
  std::string time;
  std::string description;
  std::vector<std::string> synonyms;
  Origin origin;
};

// glossary.yaml: a business term, what it means, and what it points at (a column "table.column",
// a value of it, or a metric), each "" when not given.
struct Term {
  std::string name;
  std::string means;
  std::vector<std::string> synonyms;
  std::string column;
  std::string value;
  std::string metric;
  Origin origin;
};

// rules/<name>.md: a caveat every answer must respect. The title is the file's first "# "
// heading (else its name); the text is the rest.
struct Rule {
  std::string name;  // the file's stem
  std::string title;
  std::string text;
  Origin origin;
};

// queries/<name>.md: a verified question. YAML front matter (question, verified_by,
// verified_at, tags, and what it returned when saved: result_rows, result_sha256), then the SQL
// in the first ```sql fenced block.
struct VerifiedQuery {
  std::string name;  // the file's stem
  std::string question;
  std::string sql;
  std::string verified_by;
  std::string verified_at;  // a date, "2026-11-02"
  std::vector<std::string> tags;
  std::optional<int64_t> result_rows;
  std::string result_sha256;  // of the result (ResultFingerprint); "" when not saved
  Origin origin;
};

// Everything one knowledge folder holds.
struct Knowledge {
  std::filesystem::path dir;
  std::vector<TableDoc> tables;
  std::vector<Relationship> relationships;
  std::vector<Metric> metrics;
  std::vector<Term> terms;
  std::vector<Rule> rules;
  std::vector<VerifiedQuery> queries;
  size_t size() const {
    return tables.size() + relationships.size() + metrics.size() + terms.size() + rules.size() +
           queries.size();
  }
};

// Reads a knowledge folder: tables/*.yaml, relationships.yaml, metrics.yaml, glossary.yaml,
// rules/*.md and queries/*.md, each optional; other files are ignored. Errors (kUsage) name the
// file, the line and the problem, and say what to write instead ("metrics.yaml:4: metric
// 'revenue' has no sql: give an aggregate expression, e.g. sql: sum(amount)"); a folder that does
// not exist or is not a folder is kUsage too. Files over 1 MiB are refused. Never throws.
Result<Knowledge> Load(const std::filesystem::path& dir);

// The knowledge folder for a run: `given` (--knowledge) when not empty; else the first
// `.quarry/` folder found beside a data file (in its folder, or the folder itself when a folder
// was given) or in `cwd`. nullopt when there is none. Server URLs are skipped.
std::optional<std::filesystem::path> Discover(const std::filesystem::path& given,
                                              const std::vector<std::filesystem::path>& data,
                                              const std::filesystem::path& cwd);

// The knowledge section's size in a run's prompt unless configured (agent::Config), in
// engine::EstimateTokens.
inline constexpr int64_t kDefaultBudgetTokens = 1500;

// What a question is given of the knowledge (Retrieve).
struct Selection {
  std::string text;    // the prompt section; "" when nothing was selected
  int64_t tokens = 0;  // engine::EstimateTokens(text)
  // Each item put in, as "metric revenue (metrics.yaml:3)", in the order shown: the trace keeps
  // them, so an answer can be traced to the definitions it was given.
  std::vector<std::string> items;
  std::vector<std::string> left_out;  // items that mattered but did not fit the budget
};

// The knowledge that matters for `question`, within `budget_tokens` (engine::EstimateTokens of
// the whole section, its headings included; nothing when not even one item fits):
// every rule first (they always apply), then the metrics the question names (by name or synonym,
// whole words, any case) in full, then the other items ranked by engine::RankDocuments (names
// weigh most): glossary terms, table docs (with their columns' meanings), joins and metrics, and
// the two nearest verified queries as worked examples. Items that do not fit are left out whole,
// never cut, and listed in left_out. Metrics and table docs of tables not in `tables` (the
// engine's, any case) are skipped; an empty `tables` skips none.
Selection Retrieve(const Knowledge& knowledge, const std::string& question, int64_t budget_tokens,
                   const std::vector<std::string>& tables = {});

// The definitions an answer's SQL rests on, named as Selection::items names them: each metric
// whose expression (and filter, when it has one) appears in `sql` over its table, and each
// verified query whose SQL `sql` holds whole, compared without case, spaces or a final ';'.
// A citation found in the SQL, so it holds whether or not the model named it.
std::vector<std::string> RestsOn(const Knowledge& knowledge, const std::string& sql);

// What the knowledge folder already says of a phrase a clarification asks about.
struct Definition {
  std::string item;  // "term best customer (glossary.yaml:3)", as Selection::items names it
  std::string text;  // the definition as the prompt shows it, one line
};

// The definition a clarification is answered from instead of asking the user again: the
// glossary term or metric whose name or synonym is `term` (ask_user's; whole words, any case).
// With no `term`, the one glossary term (not a metric: a question such as "by revenue or by
// orders?" names measures as choices, not as the phrase asked about) whose name or synonym
// stands in `question` as whole words; nullopt when none, or more than one, does.
std::optional<Definition> Define(const Knowledge& knowledge, const std::string& term,
                                 const std::string& question);

// The engine as a run's model sees it when the knowledge marks columns personal
// (ColumnDoc::personal; tables and columns matched by name in any case): each such column keeps
// its name, type and counts but has no samples and no min or max, and carries the note
// "personal data (FILE): its values are not shown". Queries pass through unchanged. The
// references describe() returns stay valid for the wrapper's life. As thread-safe as `inner`.
class PersonalRedaction final : public engine::Engine {
 public:
  PersonalRedaction(engine::Engine& inner, const Knowledge& knowledge);
  engine::Dialect dialect() const override { return inner_.dialect(); }
  const std::vector<engine::TableCard>& describe() const override;
  const std::vector<engine::Source>& sources() const override { return inner_.sources(); }
  uint64_t cards_version() const override { return inner_.cards_version(); }
  engine::QueryOutcome Query(std::string_view sql, const engine::Limits& limits) override {
    return inner_.Query(sql, limits);
  }

 private:
  engine::Engine& inner_;
  // Copied, not pointed at: the knowledge may be read again while a run goes on.
  std::vector<std::string> personal_;  // "table.column", lower case
  std::vector<std::string> files_;     // where each was marked, by personal_'s index
  mutable std::mutex mu_;
  mutable std::deque<std::pair<uint64_t, std::vector<engine::TableCard>>> views_;
};

// Whether `knowledge` marks any column personal.
bool HasPersonalColumns(const Knowledge& knowledge);

// One finding of Check: what was checked ("metric revenue"), where it is written, and what is
// wrong ("" when it passed).
struct Finding {
  std::string item;
  Origin origin;
  std::string problem;  // "" : ok
  bool stale = false;   // a verified query that runs but no longer returns what it did
};

// Runs every definition against `engine` under `limits`: each table doc's table and columns
// exist, each rule fits the default budget with the rules before it (rules always go first:
// one that does not fit is never given), each metric's aggregate runs over its table with its
// filter, each join's columns exist and join, each glossary term's column and metric exist, and
// each verified query runs and, when its result was saved, still returns it (ResultFingerprint).
// Every query goes through the engine's guard.
std::vector<Finding> Check(const Knowledge& knowledge, engine::Engine& engine,
                           const engine::Limits& limits);

// The fingerprint of a query result saved with a verified query: its row count and the sha256
// of its rows (columns and every row, as text, in order).
struct ResultFingerprint {
  int64_t rows = 0;
  std::string sha256;
};
ResultFingerprint Fingerprint(const engine::ResultTable& result);

// A verified query as its file is written (queries/<name>.md): front matter, then the SQL in a
// ```sql block. Load reads back what this writes.
std::string RenderVerifiedQuery(const VerifiedQuery& query);
// A file name for a question: its words, lower case, joined by '-', at most 60 bytes
// ("revenue-by-region"); "query" when it has none.
std::string QueryName(const std::string& question);
// Writes `query` as dir/queries/<query.name>.md, creating queries/ when missing; never replaces
// a file. Errors (kUsage): the file exists (choose another name); kData: it cannot be written.
Result<std::filesystem::path> SaveVerifiedQuery(const std::filesystem::path& dir,
                                                const VerifiedQuery& query);

// Adds `term` (its name, means, and metric, column and value when set) to dir/glossary.yaml
// under `terms:`, after `comment` as "# " lines (who saved it, from which run), creating the
// folder and the file when missing. Only text is appended: the file's comments and layout
// stay. Returns where the term now stands. Errors: kUsage when the folder does not load (its
// error), the term has no name or no meaning, its name or a synonym is already a term or
// metric (naming where), or the file is laid out so that an entry cannot be appended (flow
// style; the error gives the lines to add by hand); kData when it cannot be written.
// A glossary term's name at most, in bytes (SaveTerm; ask_user's `term`).
inline constexpr size_t kMaxTermBytes = 80;
Result<Origin> SaveTerm(const std::filesystem::path& dir, const Term& term,
                        const std::string& comment);

}  // namespace quarry::knowledge
