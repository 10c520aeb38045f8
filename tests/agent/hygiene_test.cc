// Tool-call hygiene as units: what CleanSql and CleanPython take away (and what they must
// leave alone), when two calls are the same call, the repeat log's rule for stateful Python,
// and when a result column is a string literal that names a real column.
#include <gtest/gtest.h>

#include "quarry/agent/hygiene_internal.h"
#include "support/test_support.h"

namespace quarry::agent {
namespace {

using json = nlohmann::ordered_json;

struct SqlCase {
  const char* name;
  const char* sent;
  const char* runs;     // the SQL that runs ("" when refused)
  const char* removed;  // what the note names ("" when nothing)
  const char* problem;  // a fragment of the bad_arguments message ("" when it runs)
};

const SqlCase kSqlCases[] = {
    {"plain", "SELECT 1", "SELECT 1", "", ""},
    {"with", "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
     "WITH x AS (SELECT 1 AS a) SELECT a FROM x", "", ""},
    {"comment_first", "-- sql\nSELECT 1", "-- sql\nSELECT 1", "", ""},
    {"block_comment_first", "/* ```sql */ SELECT 1", "/* ```sql */ SELECT 1", "", ""},
    {"parenthesised", "(SELECT 1) UNION (SELECT 2)", "(SELECT 1) UNION (SELECT 2)", "", ""},
    {"duckdb_from_first", "FROM sales LIMIT 1", "FROM sales LIMIT 1", "", ""},
    {"literal_with_fence", "SELECT '```sql' AS s", "SELECT '```sql' AS s", "", ""},
    {"write_left_to_guard", "DELETE FROM t", "DELETE FROM t", "", ""},
    {"typo_left_to_engine", "SELEC x FROM (SELECT 1 AS x)", "SELEC x FROM (SELECT 1 AS x)", "", ""},
    {"fence_sql", "```sql\nSELECT 1\n```", "SELECT 1", "a Markdown code fence (```sql)", ""},
    {"fence_upper_tag", "```SQL\nSELECT 1;\n```\n", "SELECT 1;", "a Markdown code fence (```SQL)",
     ""},
    {"fence_bare", "  ```\nSELECT 1\n```", "SELECT 1", "a Markdown code fence (```)", ""},
    {"fence_unclosed", "```sql\nSELECT 1", "SELECT 1", "a Markdown code fence (```sql)", ""},
    {"fence_one_line", "```SELECT 1```", "SELECT 1", "a Markdown code fence (```)", ""},
    {"fence_tilde", "~~~duckdb\nSELECT 1\n~~~", "SELECT 1", "a Markdown code fence (~~~duckdb)",
     ""},
    {"tag_line", "sql\nSELECT 1", "SELECT 1", "a language tag line (sql)", ""},
    {"tag_line_colon", "SQLite:\nSELECT 1", "SELECT 1", "a language tag line (SQLite:)", ""},
    {"tag_postgresql", "postgresql\nWITH a AS (SELECT 1) SELECT * FROM a",
     "WITH a AS (SELECT 1) SELECT * FROM a", "a language tag line (postgresql)", ""},
    {"backticks", "`SELECT 1`", "SELECT 1", "backticks", ""},
    {"prose_colon", "Here is the query: SELECT 1", "", "", "starts with prose"},
    {"prose_line", "This counts the rows\nSELECT count(*) FROM t", "", "",
     "send one SQL query only"},
    {"prose_then_fence", "Here it is:\n```sql\nSELECT 1\n```", "", "", "starts with prose"},
    {"text_after_fence", "```sql\nSELECT 1\n```\nThis returns one.", "", "",
     "text after the code block"},
    {"two_fences", "```sql\nSELECT 1\n```\n```sql\nSELECT 2\n```", "", "", "several code blocks"},
    {"empty_fence", "```sql\n```", "", "", "the code block is empty"},
};

class CleanSqlTest : public ::testing::TestWithParam<SqlCase> {};

TEST_P(CleanSqlTest, RemovesMarkdownAndLeavesSqlAlone) {
  const SqlCase& c = GetParam();
  const CleanedCode out = CleanSql(c.sent);
  if (*c.problem) {
    EXPECT_NE(out.problem.find(c.problem), std::string::npos) << out.problem;
    return;
  }
  EXPECT_EQ(out.problem, "");
  EXPECT_EQ(out.text, c.runs);
  EXPECT_EQ(out.removed, c.removed);
}

INSTANTIATE_TEST_SUITE_P(Cases, CleanSqlTest, ::testing::ValuesIn(kSqlCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(HygieneTest, PythonFencesGoAndIndentationStays) {
  const CleanedCode fenced = CleanPython("```python\nfor x in [1, 2]:\n    print(x)\n```");
  EXPECT_EQ(fenced.text, "for x in [1, 2]:\n    print(x)");
  EXPECT_EQ(fenced.removed, "a Markdown code fence (```python)");
  EXPECT_EQ(CleanPython("py\nprint(1)").text, "print(1)");
  // Code that merely holds backticks in a string is code.
  const CleanedCode literal = CleanPython("s = 'a ```b``` c'\nprint(s)");
  EXPECT_EQ(literal.text, "s = 'a ```b``` c'\nprint(s)");
  EXPECT_EQ(literal.removed, "");
  EXPECT_EQ(literal.problem, "");
  EXPECT_NE(CleanPython("Run this:\n```python\nprint(1)\n```").problem.find("prose"),
            std::string::npos);
}

TEST(HygieneTest, PythonInBackticksRunsWithoutThem) {
  const CleanedCode ticked = CleanPython("`print(df.shape)`");
  EXPECT_EQ(ticked.text, "print(df.shape)");
  EXPECT_EQ(ticked.cleaning, Cleaning::kBackticks);
  EXPECT_EQ(ticked.removed, "backticks");
  // Backticks inside the code (in a string) are the code's own.
  const CleanedCode inner = CleanPython("`print('`')`");
  EXPECT_EQ(inner.text, "`print('`')`");
  EXPECT_EQ(inner.cleaning, Cleaning::kNone);
}

// Each kind of cleaning says once where the removed text was (the trial found "removed
// backticks around the query around the SQL").
TEST(HygieneTest, CleaningNotesNameThePlaceOnce) {
  EXPECT_EQ(CleaningNote(CleanSql("```sql\nSELECT 1\n```"), "SQL"),
            "note: removed a Markdown code fence (```sql) around the SQL and ran it; send the "
            "SQL alone.");
  EXPECT_EQ(CleaningNote(CleanSql("sql\nSELECT 1"), "SQL"),
            "note: removed a language tag line (sql) before the SQL and ran it; send the SQL "
            "alone.");
  EXPECT_EQ(CleaningNote(CleanSql("`SELECT 1`"), "SQL"),
            "note: removed backticks around the SQL and ran it; send the SQL alone.");
  EXPECT_EQ(CleaningNote(CleanPython("```python\nprint(1)\n```"), "Python code"),
            "note: removed a Markdown code fence (```python) around the Python code and ran it; "
            "send the Python code alone.");
  EXPECT_EQ(CleaningNote(CleanPython("python\nprint(1)"), "Python code"),
            "note: removed a language tag line (python) before the Python code and ran it; send "
            "the Python code alone.");
  EXPECT_EQ(CleaningNote(CleanPython("`print(1)`"), "Python code"),
            "note: removed backticks around the Python code and ran it; send the Python code "
            "alone.");
  EXPECT_EQ(CleaningNote(CleanSql("SELECT 1"), "SQL"), "");
  EXPECT_EQ(CleaningNote(CleanPython("print(1)"), "Python code"), "");
}

TEST(HygieneTest, SqlIsNormalisedOutsideLiteralsOnly) {
  EXPECT_EQ(NormalizeSql("SELECT  a ,b\n FROM t -- note\n WHERE x = 1 ;"),
            "select a,b from t where x=1");
  EXPECT_EQ(NormalizeSql("select A, B from T where X=1"),
            NormalizeSql("SELECT a,b FROM t WHERE x = 1"));
  // Literals and quoted names keep their case and spacing: they are values.
  EXPECT_NE(NormalizeSql("SELECT 1 FROM t WHERE r = 'North'"),
            NormalizeSql("SELECT 1 FROM t WHERE r = 'north'"));
  EXPECT_NE(NormalizeSql("SELECT 'a  b'"), NormalizeSql("SELECT 'a b'"));
  EXPECT_NE(NormalizeSql("SELECT \"Total Sales\" FROM t"),
            NormalizeSql("SELECT \"total sales\" FROM t"));
  EXPECT_EQ(NormalizeSql("SELECT 'it''s  x' , 1"), "select 'it''s  x',1");
  EXPECT_NE(NormalizeSql("SELECT a b FROM t"), NormalizeSql("SELECT ab FROM t"));
}

TEST(HygieneTest, CallKeysMatchTheSameCallInAnyDress) {
  const std::string plain = CallKey("run_sql", json{{"sql", "SELECT region FROM sales"}});
  EXPECT_EQ(CallKey("run_sql", json{{"sql", "```sql\nselect REGION\nfrom sales;\n```"}}), plain);
  EXPECT_NE(CallKey("run_sql", json{{"sql", "SELECT region FROM sales WHERE r = 'A'"}}),
            CallKey("run_sql", json{{"sql", "SELECT region FROM sales WHERE r = 'a'"}}));
  EXPECT_NE(CallKey("make_chart", json{{"sql", "SELECT region FROM sales"}}), plain);
  // Other tools compare their arguments as JSON, whatever the key order.
  EXPECT_EQ(CallKey("final_answer", json::parse(R"({"answer":"x","supporting_values":[1]})")),
            CallKey("final_answer", json::parse(R"({"supporting_values":[1],"answer":"x"})")));
  EXPECT_EQ(CallKey("run_python", json{{"code", "print(1)  \n"}}),
            CallKey("run_python", json{{"code", "```python\nprint(1)\n```"}}));
  EXPECT_NE(RawCallKey("run_sql", "{\"sql\": "), plain);
}

Observation Failed(FailureClass failure, const std::string& text) {
  Observation obs;
  obs.failure = failure;
  obs.text = text;
  return obs;
}

TEST(HygieneTest, RepeatLogKnowsFailedCallsAndPythonState) {
  RepeatLog log;
  const std::string sql = CallKey("run_sql", json{{"sql", "SELECT x FROM t"}});
  EXPECT_FALSE(log.Find("run_sql", sql));
  log.Record("run_sql", sql, 2, Failed(FailureClass::kRuntimeError, "runtime_error: no x\nmore"),
             false, true);
  auto earlier = log.Find("run_sql", sql);
  ASSERT_TRUE(earlier);
  EXPECT_EQ(earlier->step, 2);
  EXPECT_EQ(earlier->failure, FailureClass::kRuntimeError);
  EXPECT_EQ(earlier->error, "runtime_error: no x\nmore");
  EXPECT_EQ(earlier->repeats, 0);
  log.Record("run_sql", sql, 4, RepeatObservation(*earlier, false), true, false);
  EXPECT_EQ(log.Find("run_sql", sql)->repeats, 1);
  EXPECT_EQ(log.Find("run_sql", sql)->step, 2);
  const RepeatLog::Earlier stuck = *log.Find("run_sql", sql);  // its next send is the third

  // A failed Python cell is a repeat only while nothing else has run since.
  const std::string py = CallKey("run_python", json{{"code", "print(y)"}});
  Observation name_error = Failed(FailureClass::kRuntimeError, "NameError: y");
  name_error.detail = {{"exit_code", 1}, {"kernel_state_lost", false}};
  log.Record("run_python", py, 6, name_error, false, true);
  EXPECT_TRUE(log.Find("run_python", py));
  // Python that never started, timed out or lost its kernel may run differently next time.
  for (Observation unsettled :
       {Failed(FailureClass::kRuntimeError, "runtime_error: no sandbox"),
        Failed(FailureClass::kTimeout, "timeout"), Failed(FailureClass::kRuntimeError, "killed")}) {
    if (unsettled.failure == FailureClass::kTimeout) unsettled.detail = {{"exit_code", -9}};
    if (unsettled.text == "killed")
      unsettled.detail = {{"exit_code", -9}, {"kernel_state_lost", true}};
    const std::string other = CallKey("run_python", json{{"code", "heavy()"}});
    log.Record("run_python", other, 7, unsettled, false, true);
    EXPECT_FALSE(log.Find("run_python", other)) << unsettled.text;
  }
  log.Record("run_python", py, 6, name_error, false, true);
  EXPECT_TRUE(log.Find("run_python", py));
  log.Record("run_python", CallKey("run_python", json{{"code", "y = 1"}}), 8, Observation{}, false,
             true);
  EXPECT_FALSE(log.Find("run_python", py));
  // SQL does not see Python's state: its failure stays a repeat (the Python success restarted
  // its count towards stopping).
  EXPECT_TRUE(log.Find("run_sql", sql));
  EXPECT_EQ(log.Find("run_sql", sql)->sends_since_success, 0);

  // final_answer is the verify gate's to judge, never a repeat here.
  const std::string answer = CallKey("final_answer", json{{"answer", "x"}});
  log.Record("final_answer", answer, 10, Failed(FailureClass::kBadArguments, "bad"), false, false);
  EXPECT_FALSE(log.Find("final_answer", answer));

  const Observation obs = RepeatObservation(stuck, true);
  EXPECT_EQ(obs.failure, FailureClass::kRuntimeError);
  EXPECT_TRUE(
      obs.text.starts_with("repeat of step 2 again: this exact call failed there with "
                           "runtime_error and has now been sent 3 times with no successful "
                           "run_sql, run_python or make_chart call in between."))
      << obs.text;
  EXPECT_EQ(obs.detail["repeat_of"], 2);
  EXPECT_EQ(obs.detail["executed"], false);
}

// The trial's case: fail, fail, a good query, the same failing call. The repeat is still
// answered from step 2, but the success restarted the count: the model is not stuck.
TEST(HygieneTest, ASuccessBetweenRestartsTheRepeatCount) {
  RepeatLog log;
  const std::string bad = CallKey("run_sql", json{{"sql", "SELECT total_amount FROM sales"}});
  const std::string good = CallKey("run_sql", json{{"sql", "SELECT SUM(revenue) FROM sales"}});
  log.Record("run_sql", bad, 2, Failed(FailureClass::kRuntimeError, "Binder Error"), false, true);
  EXPECT_EQ(log.Find("run_sql", bad)->sends_since_success, 1);
  log.Record("run_sql", bad, 4, RepeatObservation(*log.Find("run_sql", bad), false), true, false);
  EXPECT_EQ(log.Find("run_sql", bad)->sends_since_success, 2);  // the next send is the third

  log.Record("run_sql", good, 6, Observation{}, false, true);
  auto earlier = log.Find("run_sql", bad);
  ASSERT_TRUE(earlier);  // still a repeat of step 2, not run again
  EXPECT_EQ(earlier->step, 2);
  EXPECT_EQ(earlier->sends_since_success, 0);
  EXPECT_EQ(earlier->repeats, 1);
  const Observation warned = RepeatObservation(*earlier, false);
  EXPECT_NE(warned.text.find("Sending it twice more ends the run, unless a run_sql, run_python "
                             "or make_chart call succeeds first."),
            std::string::npos)
      << warned.text;
  log.Record("run_sql", bad, 8, warned, true, false);
  EXPECT_EQ(log.Find("run_sql", bad)->sends_since_success, 1);
  EXPECT_EQ(log.Find("run_sql", bad)->repeats, 2);

  // Neither a failed execution call nor a call that is not an execution (inspect_schema)
  // restarts it: only a success counts as progress.
  log.Record("run_sql", CallKey("run_sql", json{{"sql", "SELECT nope FROM sales"}}), 10,
             Failed(FailureClass::kRuntimeError, "Binder Error"), false, true);
  log.Record("inspect_schema", CallKey("inspect_schema", json::object()), 12, Observation{}, false,
             false);
  EXPECT_EQ(log.Find("run_sql", bad)->sends_since_success, 1);
  log.Record("run_sql", bad, 14, RepeatObservation(*log.Find("run_sql", bad), false), true, false);
  EXPECT_EQ(log.Find("run_sql", bad)->sends_since_success, 2);
  EXPECT_EQ(log.Find("run_sql", bad)->sends_since_success + 1, kStuckSends);
}

engine::ColumnCard Col(const std::string& name) {
  engine::ColumnCard c;
  c.name = name;
  return c;
}

engine::ResultTable Table(std::vector<std::string> columns,
                          std::vector<std::vector<std::optional<std::string>>> rows) {
  engine::ResultTable t;
  t.columns = std::move(columns);
  t.types.assign(t.columns.size(), "VARCHAR");
  for (const auto& r : rows) t.kinds.emplace_back(r.size(), engine::CellKind::kText);
  t.rows = std::move(rows);
  t.row_count = static_cast<int64_t>(t.rows.size());
  return t;
}

TEST(HygieneTest, LiteralColumnsNamingARealColumnAreNoted) {
  engine::TableCard card;
  card.name = "t";
  card.columns = {Col("Total Sales ($)"), Col("status"), Col("order_date")};
  const std::vector<engine::TableCard> cards = {card};

  auto named = LiteralColumnNotes(Table({"'Total Sales ($)'"}, {{"Total Sales ($)"}}), 30, cards);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0],
            "result column 'Total Sales ($)' is the same string on every row and equals "
            "the name of column t.\"Total Sales ($)\"; single quotes make a string "
            "literal: to read the column, quote it with double quotes, \"Total Sales ($)\"");
  // An aliased constant, in another case and spelling of spaces: still the column's name.
  auto aliased = LiteralColumnNotes(Table({"d"}, {{"Order Date"}, {"Order Date"}}), 30, cards);
  ASSERT_EQ(aliased.size(), 1u);
  EXPECT_NE(aliased[0].find("t.\"order_date\""), std::string::npos) << aliased[0];

  // Near misses: one row of a real column, values that vary, a constant naming no column, the
  // column itself holding its own name, NULLs, and a number.
  EXPECT_TRUE(LiteralColumnNotes(Table({"x"}, {{"status"}}), 30, cards).empty());
  EXPECT_TRUE(LiteralColumnNotes(Table({"x"}, {{"status"}, {"shipped"}}), 30, cards).empty());
  EXPECT_TRUE(LiteralColumnNotes(Table({"'EUR'"}, {{"EUR"}, {"EUR"}}), 30, cards).empty());
  EXPECT_TRUE(LiteralColumnNotes(Table({"status"}, {{"status"}, {"status"}}), 30, cards).empty());
  EXPECT_TRUE(
      LiteralColumnNotes(Table({"x"}, {{std::nullopt}, {std::nullopt}}), 30, cards).empty());
  engine::ResultTable number = Table({"x"}, {{"1"}, {"1"}});
  number.kinds = {{engine::CellKind::kInteger}, {engine::CellKind::kInteger}};
  engine::TableCard numeric;
  numeric.name = "n";
  numeric.columns = {Col("1")};
  EXPECT_TRUE(LiteralColumnNotes(number, 30, {numeric}).empty());
  // Only the rows the model was shown count.
  EXPECT_FALSE(
      LiteralColumnNotes(Table({"x"}, {{"status"}, {"status"}, {"other"}}), 2, cards).empty());
}

}  // namespace
}  // namespace quarry::agent
