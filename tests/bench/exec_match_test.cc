// The execution match of `quarry eval` (bench/eval.h): the comparison rules on hand-built
// results, the SQL text rules, real SQLite results through the engine, the deterministic
// sample, and the Spider and BIRD loaders on good and bad layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "bench/eval_fixture.h"
#include "quarry/bench/eval.h"
#include "support/test_support.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;

Cell I(int64_t v) {
  Cell c;
  c.kind = Cell::Kind::kInteger;
  c.integer = v;
  return c;
}
Cell R(double v) {
  Cell c;
  c.kind = Cell::Kind::kReal;
  c.real = v;
  return c;
}
Cell T(std::string v, Cell::Kind kind = Cell::Kind::kText) {
  Cell c;
  c.kind = kind;
  c.bytes = std::move(v);
  return c;
}
Cell B(std::string v) { return T(std::move(v), Cell::Kind::kBlob); }
Cell N() { return {}; }

CompareOptions Options(bool order, MatchRule rule = MatchRule::kTestSuite) {
  CompareOptions o;
  o.order_matters = order;
  o.rule = rule;
  return o;
}

Denotation D(std::vector<std::vector<Cell>> rows) { return {{}, std::move(rows)}; }

bool Match(const Denotation& g, const Denotation& p, bool order = false,
           MatchRule rule = MatchRule::kTestSuite) {
  return CompareDenotations(g, p, Options(order, rule)).match;
}

TEST(ExecMatchTest, CellsCompareByTypeAndIntegersEqualTheirReals) {
  const Tolerance t;
  EXPECT_TRUE(CellsEqual(I(1), R(1.0), t));     // 1 == 1.0, as in Python
  EXPECT_FALSE(CellsEqual(I(1), T("1"), t));    // '1' is not 1
  EXPECT_FALSE(CellsEqual(T("a"), B("a"), t));  // text is not a blob
  EXPECT_TRUE(CellsEqual(N(), N(), t));
  EXPECT_FALSE(CellsEqual(N(), I(0), t));
  EXPECT_FALSE(CellsEqual(N(), T(""), t));
  EXPECT_FALSE(CellsEqual(T("Rock"), T("rock"), t));                      // text byte for byte
  EXPECT_FALSE(CellsEqual(I(9007199254740993), I(9007199254740992), t));  // exact integers
}

TEST(ExecMatchTest, RealsEqualWithinTheStatedToleranceOnly) {
  const Tolerance t;  // relative 1e-9
  EXPECT_TRUE(CellsEqual(R(0.1 + 0.2), R(0.3), t));
  EXPECT_TRUE(CellsEqual(R(1e12), R(1e12 + 1.0), t));  // 1e-12 relative
  EXPECT_FALSE(CellsEqual(R(3.14), R(3.14159), t));    // a ROUND difference is a miss
  EXPECT_FALSE(CellsEqual(R(1.0), R(1.000001), t));
  EXPECT_TRUE(CellsEqual(R(0.0), R(1e-13), t));  // absolute floor near zero
  EXPECT_FALSE(CellsEqual(R(0.0), R(1e-11), t));
  EXPECT_TRUE(CellsEqual(I(2), R(2.0000000000001), t));
  EXPECT_TRUE(Match(D({{R(0.1 + 0.2)}}), D({{R(0.3)}})));
}

TEST(ExecMatchTest, RowsAreMultisetsUnlessTheGoldIsOrdered) {
  const Denotation gold = D({{I(1)}, {I(2)}, {I(2)}});
  EXPECT_TRUE(Match(gold, D({{I(2)}, {I(1)}, {I(2)}})));
  // A duplicate counts: same set, another multiset.
  EXPECT_FALSE(Match(gold, D({{I(1)}, {I(1)}, {I(2)}})));
  EXPECT_FALSE(Match(gold, D({{I(1)}, {I(2)}})));
  // With ORDER BY in the gold query, order is compared.
  EXPECT_TRUE(Match(gold, D({{I(1)}, {I(2)}, {I(2)}}), true));
  const Comparison c = CompareDenotations(gold, D({{I(2)}, {I(1)}, {I(2)}}), Options(true));
  EXPECT_FALSE(c.match);
  EXPECT_NE(c.reason.find("row order differs"), std::string::npos) << c.reason;
}

TEST(ExecMatchTest, BirdRuleIsSetEqualityByPosition) {
  const Denotation gold = D({{I(1), T("a")}, {I(2), T("b")}, {I(2), T("b")}});
  // Duplicates and order do not matter to BIRD's set(pred) == set(gold).
  EXPECT_TRUE(Match(gold, D({{I(2), T("b")}, {I(1), T("a")}}), false, MatchRule::kBirdSet));
  // Columns are compared by position: swapped columns are a miss there, a match for test-suite.
  const Denotation swapped = D({{T("a"), I(1)}, {T("b"), I(2)}, {T("b"), I(2)}});
  EXPECT_FALSE(Match(gold, swapped, false, MatchRule::kBirdSet));
  EXPECT_TRUE(Match(gold, swapped));
  EXPECT_TRUE(Match(D({}), D({}), false, MatchRule::kBirdSet));
  EXPECT_FALSE(Match(D({{I(1)}}), D({}), false, MatchRule::kBirdSet));
  EXPECT_TRUE(Match(D({{I(3)}}), D({{R(3.0)}}), false, MatchRule::kBirdSet));
}

TEST(ExecMatchTest, ColumnsMatchUpToAPermutation) {
  const Denotation gold = D({{T("France"), I(3)}, {T("Netherlands"), I(1)}});
  EXPECT_TRUE(Match(gold, D({{I(1), T("Netherlands")}, {I(3), T("France")}})));
  EXPECT_TRUE(Match(gold, D({{I(3), T("France")}, {I(1), T("Netherlands")}}), true));
  // The same values column by column, but paired in other rows: not the same result.
  EXPECT_FALSE(Match(gold, D({{T("France"), I(1)}, {T("Netherlands"), I(3)}})));
  const Comparison c = CompareDenotations(gold, D({{T("France"), I(3)}, {T("Spain"), I(1)}}), {});
  EXPECT_FALSE(c.match);
  EXPECT_NE(c.reason.find("gold column 1"), std::string::npos) << c.reason;
}

TEST(ExecMatchTest, AmbiguousSameValueColumnsTryEveryPermutation) {
  // Both columns hold {1, 2}: the identity does not match, the swap does.
  const Denotation gold = D({{I(1), I(2), T("x")}, {I(2), I(1), T("y")}});
  EXPECT_TRUE(Match(gold, D({{I(2), I(1), T("x")}, {I(1), I(2), T("y")}})));
  EXPECT_TRUE(Match(gold, D({{T("x"), I(2), I(1)}, {T("y"), I(1), I(2)}})));
  // Column-wise the same multisets, row-wise no permutation fits.
  EXPECT_FALSE(Match(gold, D({{I(1), I(1), T("x")}, {I(2), I(2), T("y")}})));
  // Identical columns (all NULL) are not swapped needlessly: eight of them still decide fast.
  std::vector<Cell> g_row(8, N()), p_row(8, N());
  g_row[7] = I(5);
  p_row[0] = I(5);
  EXPECT_TRUE(Match(D({g_row}), D({p_row})));
  p_row[0] = I(6);
  EXPECT_FALSE(Match(D({g_row}), D({p_row})));
}

TEST(ExecMatchTest, RowCountsColumnCountsAndEmptyResults) {
  EXPECT_TRUE(Match(D({}), D({})));
  Denotation empty_with_columns{{"a", "b"}, {}};
  EXPECT_TRUE(Match(D({}), empty_with_columns));  // two empty results are equal
  EXPECT_FALSE(Match(D({}), D({{I(0)}})));
  EXPECT_FALSE(Match(D({{I(0)}}), D({})));
  const Comparison rows = CompareDenotations(D({{I(1)}, {I(2)}}), D({{I(1)}}), {});
  EXPECT_NE(rows.reason.find("row count differs: gold 2, predicted 1"), std::string::npos);
  const Comparison cols = CompareDenotations(D({{I(1)}}), D({{I(1), I(1)}}), {});
  EXPECT_NE(cols.reason.find("column count differs"), std::string::npos);
}

TEST(ExecMatchTest, NullsAreValuesThatMatchOnlyNulls) {
  const Denotation gold = D({{T("France")}, {N()}, {T("France")}});
  EXPECT_TRUE(Match(gold, D({{N()}, {T("France")}, {T("France")}})));
  EXPECT_FALSE(Match(gold, D({{T("")}, {T("France")}, {T("France")}})));
  EXPECT_FALSE(Match(gold, D({{T("NULL")}, {T("France")}, {T("France")}})));
}

TEST(ExecMatchTest, RowsWithRealsThatSortApartStillMatchWithinTolerance) {
  // Sorting puts 1.0 before 1.0000000000001 on the gold side and the other way on the
  // predicted side; the rows still pair up within the tolerance.
  const Denotation gold = D({{R(1.0000000000001), T("b")}, {R(1.0), T("a")}});
  const Denotation pred = D({{R(1.0), T("b")}, {R(1.0000000000001), T("a")}});
  EXPECT_TRUE(Match(gold, pred));
  EXPECT_FALSE(Match(gold, D({{R(1.0), T("b")}, {R(1.0001), T("a")}})));
}

TEST(EvalSqlTest, OrderByCountsOnlyAtTheTopLevel) {
  EXPECT_TRUE(HasTopLevelOrderBy("SELECT name FROM singer ORDER BY age DESC"));
  EXPECT_TRUE(HasTopLevelOrderBy("select name from singer order\n  by age"));
  EXPECT_TRUE(HasTopLevelOrderBy("SELECT a FROM t ORDER /* why */ BY a"));
  EXPECT_TRUE(HasTopLevelOrderBy("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1"));
  EXPECT_TRUE(
      HasTopLevelOrderBy("SELECT name FROM (SELECT * FROM singer ORDER BY age) ORDER BY name"));
  EXPECT_FALSE(HasTopLevelOrderBy("SELECT name FROM (SELECT * FROM singer ORDER BY age LIMIT 3)"));
  EXPECT_FALSE(HasTopLevelOrderBy("SELECT row_number() OVER (ORDER BY age) FROM singer"));
  EXPECT_FALSE(HasTopLevelOrderBy("SELECT name FROM t WHERE note = 'order by'"));
  EXPECT_FALSE(HasTopLevelOrderBy("SELECT \"order\" FROM t -- ORDER BY x"));
  EXPECT_FALSE(HasTopLevelOrderBy("SELECT [order] , by FROM t"));
  EXPECT_FALSE(HasTopLevelOrderBy("SELECT border, bypass FROM t"));
}

TEST(EvalSqlTest, DistinctIsRemovedOutsideLiteralsAndSpacedOperatorsJoined) {
  EXPECT_EQ(RemoveDistinct("SELECT DISTINCT country FROM singer"), "SELECT  country FROM singer");
  EXPECT_EQ(RemoveDistinct("select count(distinct x) from t where y = 'DISTINCT'"),
            "select count( x) from t where y = 'DISTINCT'");
  EXPECT_EQ(RemoveDistinct("SELECT distinctive FROM t"), "SELECT distinctive FROM t");
  EXPECT_EQ(JoinSpacedOperators("SELECT a FROM t WHERE b > = 3 AND c ! = '> ='"),
            "SELECT a FROM t WHERE b >= 3 AND c != '> ='");
}

const std::vector<size_t> kPinnedSample = {7, 9, 11, 12};

TEST(EvalSampleTest, SampleIsDeterministicSortedAndWithoutRepeats) {
  const auto a = SampleIndices(1034, 100, 7);
  EXPECT_EQ(a, SampleIndices(1034, 100, 7));
  ASSERT_EQ(a.size(), 100u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<size_t>(a.begin(), a.end()).size(), 100u);
  EXPECT_LT(a.back(), 1034u);
  EXPECT_NE(a, SampleIndices(1034, 100, 8));
  EXPECT_EQ(SampleIndices(5, 0, 7), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(SampleIndices(5, 9, 7), (std::vector<size_t>{0, 1, 2, 3, 4}));
  // Pinned: std::mt19937_64 is specified by the standard, so this holds on every platform.
  EXPECT_EQ(SampleIndices(13, 4, 7), kPinnedSample);
}

class ExecuteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() / "t.sqlite";
    ASSERT_NO_FATAL_FAILURE(quarry::testing::MakeSqlite(
        path_,
        "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB);"
        "INSERT INTO t VALUES (1, 1.0, '1', x'00ff'), (2, 2.5, NULL, NULL),"
        "(3, NULL, 'c', NULL);"));
    engine::OpenOptions options;
    options.profile = false;
    options.fingerprint = false;
    auto e = engine::Open({path_}, options);
    ASSERT_TRUE(e) << e.error().message;
    engine_ = std::move(*e);
  }
  quarry::testing::TempDir dir_;
  fs::path path_;
  std::unique_ptr<engine::Engine> engine_;
};

TEST_F(ExecuteTest, SqliteValuesKeepTheirTypes) {
  auto d = Execute(*engine_, "SELECT i, r, s, b FROM t ORDER BY i", {});
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->rows.size(), 3u);
  EXPECT_EQ(d->rows[0][0].kind, Cell::Kind::kInteger);
  EXPECT_EQ(d->rows[0][1].kind, Cell::Kind::kReal);
  EXPECT_EQ(d->rows[0][2].kind, Cell::Kind::kText);
  EXPECT_EQ(d->rows[0][3].kind, Cell::Kind::kBlob);
  EXPECT_EQ(d->rows[0][3].bytes, std::string("\x00\xff", 2));
  EXPECT_EQ(d->rows[1][2].kind, Cell::Kind::kNull);
  EXPECT_DOUBLE_EQ(d->rows[1][1].real, 2.5);
  // The integer column equals the real column's 1.0 but not the text '1'.
  auto ints = Execute(*engine_, "SELECT i FROM t WHERE i = 1", {});
  auto reals = Execute(*engine_, "SELECT r FROM t WHERE i = 1", {});
  auto texts = Execute(*engine_, "SELECT s FROM t WHERE i = 1", {});
  ASSERT_TRUE(ints && reals && texts);
  EXPECT_TRUE(CompareDenotations(*ints, *reals, {}).match);
  EXPECT_FALSE(CompareDenotations(*ints, *texts, {}).match);
}

TEST_F(ExecuteTest, EmptyResultsErrorsAndTheRowCap) {
  auto empty = Execute(*engine_, "SELECT i FROM t WHERE i > 10", {});
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->rows.empty());
  auto bad = Execute(*engine_, "SELECT nope FROM t", {});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("nope"), std::string::npos) << bad.error().message;
  auto capped = Execute(*engine_, "SELECT i FROM t", ExecLimits{60000, 2});
  ASSERT_FALSE(capped);
  EXPECT_NE(capped.error().message.find("more than the 2"), std::string::npos);
  // Read-only: a write is refused and the file is unchanged.
  const std::string before = quarry::testing::Sha256File(path_);
  EXPECT_FALSE(Execute(*engine_, "DELETE FROM t", {}));
  EXPECT_EQ(quarry::testing::Sha256File(path_), before);
}

TEST(EvalLoadTest, SpiderFixtureLoadsWithGoldAndDatabases) {
  quarry::testing::TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path()));
  auto data = LoadSpider(tmp.path(), "dev");
  ASSERT_TRUE(data) << data.error().message;
  ASSERT_EQ(data->questions.size(), 13u);
  EXPECT_EQ(data->questions[1].gold_sql, "SELECT name FROM singer ORDER BY age DESC");
  EXPECT_EQ(data->questions[9].db_id, "shop");
  EXPECT_EQ(data->questions[9].db_path, tmp.path() / "database" / "shop" / "shop.sqlite");
  EXPECT_EQ(data->questions[9].suite_paths.size(), 1u);
  EXPECT_EQ(PromptQuestion(data->questions[0]), "How many singers do we have?");
}

TEST(EvalLoadTest, BirdFixtureLoadsWithEvidenceAsAHint) {
  quarry::testing::TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("bird", tmp.path()));
  auto data = LoadBird(tmp.path(), "dev");
  ASSERT_TRUE(data) << data.error().message;
  ASSERT_EQ(data->questions.size(), 5u);
  EXPECT_EQ(data->questions[1].difficulty, "simple");
  EXPECT_EQ(PromptQuestion(data->questions[1]),
            "How many singers are older than 40?\n\nHint: older than 40 refers to age > 40");
  EXPECT_EQ(PromptQuestion(data->questions[2]), "Which countries do the singers come from?");
}

TEST(EvalLoadTest, BadLayoutsNameTheProblem) {
  quarry::testing::TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(BuildEvalFixture("spider", tmp.path()));
  auto expect_error = [&](const std::string& needle) {
    auto data = LoadSpider(tmp.path(), "dev");
    ASSERT_FALSE(data) << "expected an error naming " << needle;
    EXPECT_NE(data.error().message.find(needle), std::string::npos) << data.error().message;
  };
  const std::string dev = quarry::testing::ReadFile(tmp.path() / "dev.json");
  const std::string gold = quarry::testing::ReadFile(tmp.path() / "dev_gold.sql");

  fs::remove(tmp.path() / "dev.json");
  expect_error("dev.json is missing");
  tmp.Write("dev.json", "[{\"db_id\": \"shop\", \"question\": ");
  expect_error("not valid JSON");
  tmp.Write("dev.json", "{\"db_id\": \"shop\"}");
  expect_error("should be a JSON array");
  tmp.Write("dev.json", "[{\"db_id\": \"shop\", \"query\": \"SELECT 1\"}]");
  expect_error("entry 0 has no string field 'question'");
  tmp.Write("dev.json", dev);
  tmp.Write("dev_gold.sql", "SELECT 1\tshop\n");
  expect_error("has 1 queries for 13 questions");
  tmp.Write("dev_gold.sql", gold);
  // A missing database is no load error: its questions are marked, and RunEval skips them.
  fs::remove_all(tmp.path() / "database" / "shop");
  auto partial = LoadSpider(tmp.path(), "dev");
  ASSERT_TRUE(partial) << partial.error().message;
  EXPECT_FALSE(partial->questions[8].db_missing);
  EXPECT_TRUE(partial->questions[9].db_missing);
  EXPECT_EQ(partial->questions[9].db_path, tmp.path() / "database" / "shop" / "shop.sqlite");
  EXPECT_TRUE(partial->questions[9].suite_paths.empty());
  fs::remove_all(tmp.path() / "database");
  expect_error("the database folder");
  tmp.Write("dev.json", "[{\"db_id\": \"../x\", \"question\": \"q\", \"query\": \"SELECT 1\"}]");
  fs::remove(tmp.path() / "dev_gold.sql");
  fs::create_directories(tmp.path() / "database");
  expect_error("not a folder name");
  EXPECT_FALSE(LoadSpider(tmp.path() / "nowhere", "dev"));
  EXPECT_FALSE(LoadBird(tmp.path(), "dev"));  // no BIRD layout here
}

}  // namespace
}  // namespace quarry::bench
