// Tool-call hygiene: what the agent does about the ways models commonly misuse its tools.
// Markdown around code is removed (and said so), prose instead of SQL is refused, an identical
// repeat of a failed call is answered from the first one, and a string literal selected where
// a column was meant is pointed out. Internal to the agent; tests include it directly.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "quarry/agent/agent.h"

namespace quarry::agent {

// What cleaning took away from a code argument.
enum class Cleaning {
  kNone,
  kFence,      // a Markdown code fence around the code
  kTagLine,    // a first line that is only a language tag, before the code
  kBackticks,  // one pair of single backticks around the whole code
};

// A code argument after cleaning. `problem` non-empty: the argument cannot be run as sent
// (prose around the code, several code blocks, an empty fence): the text for bad_arguments.
// Otherwise `text` is what runs, `cleaning` what was taken away, and `removed` names it as
// sent, for the step's detail ("a Markdown code fence (```sql)", "a language tag line (sql)",
// "backticks"; "" when nothing).
struct CleanedCode {
  std::string text;
  std::string removed;
  std::string problem;
  Cleaning cleaning = Cleaning::kNone;
};

// run_sql's `sql`: removes one Markdown code fence (```sql ... ``` or ``` ... ```, any info
// word), or a first line that is only a language tag (sql, duckdb, sqlite, postgresql,
// postgres, mysql; a trailing ':' allowed), or one pair of single backticks around the whole
// query. Text that is valid SQL is never changed (a query starting with WITH, '(' or a
// comment included). Prose before the query ("Here is the query: SELECT ...") is a problem.
CleanedCode CleanSql(std::string_view sql);
// run_python's `code`: one ```python (py, python3, or no tag) fence, a first line "python", or
// one pair of single backticks around the whole code (no Python 3 code starts with one).
// Indentation inside is kept.
CleanedCode CleanPython(std::string_view code);
// The note that starts the observation of cleaned code that ran, `what` naming the code
// ("SQL", "Python code"): "note: removed a Markdown code fence (```sql) around the SQL and ran
// it; send the SQL alone." A tag line is "before" the code. "" when nothing was removed.
std::string CleaningNote(const CleanedCode& cleaned, std::string_view what);

// The form of a call two calls are compared in: the tool's name and its arguments, with SQL
// cleaned as CleanSql does and normalised outside string literals and quoted identifiers
// (whitespace runs to one space, letters to lower case, comments dropped, a final ';'
// dropped: both engines read unquoted keywords and names case-insensitively), Python code
// cleaned and right-trimmed per line, and other arguments as canonical JSON (sorted keys).
// Literals keep their case and spacing: 'North' and 'north' are different queries.
std::string CallKey(std::string_view tool, const nlohmann::ordered_json& arguments);
std::string RawCallKey(std::string_view tool, std::string_view raw_arguments);  // not valid JSON
std::string NormalizeSql(std::string_view sql);

// The failed calls of one run, so an identical call is recognised as a repeat. Repeats are
// deterministic: the data is read-only and SQL sees nothing else, so a failed run_sql,
// inspect_schema or make_chart call fails the same way again. run_python has state (the
// kernel's variables, `last`), so its repeat counts only when no execution call came between,
// and a Python call that never ran, timed out or lost its kernel is not remembered at all.
//
// A repeat is always answered from the earlier failure, but it ends the run only when the model
// is stuck: the same failed call sent kStuckSends times with no successful execution call
// (run_sql, run_python, make_chart) between the first of them and the last. A success in
// between is progress, so it restarts the count (the failure itself stays remembered).
class RepeatLog {
 public:
  struct Earlier {
    int step = 0;  // the trace step of the first failure
    FailureClass failure = FailureClass::kNone;
    std::string rule;
    std::string error;  // that step's observation (at most 800 bytes): the error
    int repeats = 0;    // identical calls already answered from it, in the whole run
    // Times this call was sent (the failure itself included, when it came after) since the
    // last successful execution call, not counting the call being looked up.
    int sends_since_success = 0;
  };
  // The failed call this one repeats, or nullopt. final_answer is never a repeat here (the
  // verify gate judges it).
  std::optional<Earlier> Find(std::string_view tool, const std::string& key) const;
  // After every call: remembers a failed one, counts an answered repeat, and notes that an
  // execution call ran (changing run_python's state) and whether it succeeded. `execution`:
  // the call was an execution tool's and actually ran (not a repeat, not bad arguments).
  void Record(std::string_view tool, const std::string& key, int step, const Observation& obs,
              bool was_repeat, bool execution);

 private:
  struct Entry {
    Earlier earlier;
    int epoch = 0;      // run_python: the execution count when it failed
    int successes = 0;  // successes_ when sends_since_success was last counted
  };
  std::unordered_map<std::string, Entry> failed_;
  int epoch_ = 0;      // execution calls that ran
  int successes_ = 0;  // execution calls that ran and succeeded
};

// Sends of one failed call, with no successful execution between, at which the run ends (stop
// reason repair_budget_exhausted): the failure and two answered repeats; the third is the last.
inline constexpr int kStuckSends = 3;

// The observation for an identical repeat of a failed call, which is not run again: the same
// failure class and rule, the earlier error, and what to do. `ends_run`: says the run stops;
// otherwise says how many more unchanged sends end it. detail: {"repeat_of": step,
// "executed": false}.
Observation RepeatObservation(const RepeatLog::Earlier& earlier, bool ends_run);

// Notes on result columns that look like a string literal selected where a column was meant:
// a column named like a single-quoted literal ('Total Sales ($)'), or whose shown rows (at
// least two) all hold the same text, when that text equals the name of a column of a
// registered table (case, spaces and underscores aside, and after stripping quotes), and the
// result column is not that column itself. One sentence each, naming the table column and
// how to quote it (double quotes, in both dialects).
std::vector<std::string> LiteralColumnNotes(const engine::ResultTable& table, size_t shown,
                                            const std::vector<engine::TableCard>& cards);

}  // namespace quarry::agent
