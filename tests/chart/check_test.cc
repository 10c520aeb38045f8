// Check: every lint rule fires on data that earns it, and stays quiet on its twin that does
// not; and Prepare aggregates the way the chart will show it.
#include <gtest/gtest.h>

#include "chart/chart_test_util.h"
#include "quarry/chart/chart.h"
#include "quarry/chart/chart_internal.h"

namespace quarry::chart {
namespace {

using testing::Cell;
using testing::MakeTable;
using testing::MustParse;

Spec BarSpec(const std::string& y_extra = "") {
  return MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "region", "type": "nominal"},
    "y": {"field": "revenue", "type": "quantitative")" +
                   y_extra + R"(}}, "data": {"sql": "S"}})");
}

Spec LineSpec(const std::string& x_type, const std::string& x_extra = "") {
  return MustParse(R"({"mark": "line", "encoding": {"x": {"field": "x", "type": ")" + x_type +
                   "\"" + x_extra + R"(}, "y": {"field": "y", "type": "quantitative"}},
                   "data": {"sql": "S"}})");
}

Table XY(const std::vector<std::string>& xs) {
  std::vector<std::vector<Cell>> rows;
  for (size_t i = 0; i < xs.size(); ++i) rows.push_back({xs[i], std::to_string(i + 1)});
  return MakeTable({"x", "y"}, rows);
}

std::vector<std::string> Rules(const std::vector<Problem>& problems) {
  std::vector<std::string> out;
  for (const Problem& p : problems) out.push_back(p.rule);
  return out;
}

const Table kSales = MakeTable({"region", "revenue"}, {{"North", "100"}, {"South", "250.5"}});

TEST(CheckTest, GoodBarHasNoProblems) { EXPECT_TRUE(Check(BarSpec(), kSales).empty()); }

TEST(CheckTest, MissingFieldNamesItAndListsTheColumns) {
  Spec s = MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "region", "type": "nominal"},
    "y": {"field": "revnue", "type": "quantitative"}}, "data": {"sql": "S"}})");
  auto problems = Check(s, kSales);
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"missing_field"});
  EXPECT_NE(problems[0].message.find("\"revnue\""), std::string::npos);
  EXPECT_NE(problems[0].message.find("(columns: region, revenue)"), std::string::npos);
  // A field differing only in case is the column the model meant.
  Spec upper =
      MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "REGION", "type": "nominal"},
    "y": {"field": "revenue", "type": "quantitative"}}, "data": {"sql": "S"}})");
  EXPECT_TRUE(Check(upper, kSales).empty());
}

TEST(CheckTest, TypeMismatchOnTextMeasure) {
  Table t = MakeTable({"region", "revenue"}, {{"North", "100"}, {"South", "n/a"}});
  auto problems = Check(BarSpec(), t);
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"type_mismatch"});
  EXPECT_NE(problems[0].message.find("e.g. \"n/a\""), std::string::npos);
  EXPECT_NE(problems[0].message.find("CAST"), std::string::npos);
  // NULLs are not text: a numeric column with gaps is still numeric.
  Table gaps = MakeTable({"region", "revenue"}, {{"North", "100"}, {"South", std::nullopt}});
  EXPECT_TRUE(Check(BarSpec(), gaps).empty());
}

TEST(CheckTest, TypeMismatchOnSumOfText) {
  Spec s = MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "revenue", "type": "nominal"},
    "y": {"field": "region", "type": "quantitative", "aggregate": "sum"}}, "data": {"sql": "S"}})");
  auto problems = Check(s, kSales);
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"type_mismatch"});
  EXPECT_NE(problems[0].message.find("aggregated with sum"), std::string::npos);
  // count counts rows of any column.
  Spec count = MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "revenue", "type":
    "nominal"}, "y": {"field": "region", "aggregate": "count"}}, "data": {"sql": "S"}})");
  EXPECT_TRUE(Check(count, kSales).empty());
}

TEST(CheckTest, TypeMismatchOnTemporalThatIsNotADate) {
  auto problems = Check(LineSpec("temporal"), XY({"2025-Q1", "2025-Q2"}));
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"type_mismatch"});
  EXPECT_NE(problems[0].message.find("\"2025-Q1\" is not an ISO date"), std::string::npos);
  EXPECT_TRUE(Check(LineSpec("temporal"), XY({"2025-01-01", "2025-04-01 00:00:00"})).empty());
}

TEST(CheckTest, NoRows) {
  auto problems = Check(BarSpec(), MakeTable({"region", "revenue"}, {}));
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"no_rows"});
  EXPECT_NE(problems[0].message.find("WHERE"), std::string::npos);
}

TEST(CheckTest, AllNullMeasure) {
  Table nulls =
      MakeTable({"region", "revenue"}, {{"North", std::nullopt}, {"South", std::nullopt}});
  auto problems = Check(BarSpec(), nulls);
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"all_null_measure"});
  EXPECT_NE(problems[0].message.find("NULL in all 2 rows"), std::string::npos);
  Table one = MakeTable({"region", "revenue"}, {{"North", std::nullopt}, {"South", "3"}});
  EXPECT_TRUE(Check(BarSpec(), one).empty());
}

TEST(CheckTest, TooManyCategoriesOnABar) {
  std::vector<std::vector<Cell>> rows;
  for (int i = 0; i < 31; ++i) rows.push_back({"r" + std::to_string(i), "1"});
  Table many = MakeTable({"region", "revenue"}, rows);
  auto problems = Check(BarSpec(), many);
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"too_many_categories"});
  EXPECT_NE(problems[0].message.find("31 distinct"), std::string::npos);
  EXPECT_NE(problems[0].message.find("GROUP BY"), std::string::npos);
  rows.pop_back();
  EXPECT_TRUE(Check(BarSpec(), MakeTable({"region", "revenue"}, rows)).empty());
}

TEST(CheckTest, TooManySlicesOnAnArc) {
  Spec arc = MustParse(R"({"mark": "arc", "encoding": {"theta": {"field": "revenue"},
    "color": {"field": "region"}}, "data": {"sql": "S"}})");
  std::vector<std::vector<Cell>> rows;
  for (int i = 0; i < 31; ++i) rows.push_back({"r" + std::to_string(i), "1"});
  auto problems = Check(arc, MakeTable({"region", "revenue"}, rows));
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"too_many_categories"});
  EXPECT_NE(problems[0].message.find("'Other'"), std::string::npos);
  EXPECT_TRUE(Check(arc, kSales).empty());
}

TEST(CheckTest, UnsortedLine) {
  auto problems = Check(LineSpec("quantitative"), XY({"1", "3", "2"}));
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"unsorted_line"});
  EXPECT_NE(problems[0].message.find("ORDER BY x"), std::string::npos);
  EXPECT_NE(problems[0].message.find("\"2\" comes after \"3\""), std::string::npos);
  // Twins that pass: descending order, an explicit sort, a temporal x (drawn sorted), and
  // "sort": null for an ordinal x whose order is the query's on purpose.
  EXPECT_TRUE(Check(LineSpec("quantitative"), XY({"10", "3", "2"})).empty());
  EXPECT_TRUE(
      Check(LineSpec("quantitative", R"(, "sort": "ascending")"), XY({"1", "3", "2"})).empty());
  EXPECT_TRUE(Check(LineSpec("temporal"), XY({"2025-03-01", "2025-01-01", "2025-02-01"})).empty());
  const auto days = XY({"Mon", "Tue", "Wed", "Thu"});
  EXPECT_EQ(Rules(Check(LineSpec("ordinal"), days)), std::vector<std::string>{"unsorted_line"});
  EXPECT_TRUE(Check(LineSpec("ordinal", R"(, "sort": null)"), days).empty());
}

TEST(CheckTest, UnsortedLineLooksWithinEachSeries) {
  Spec s = MustParse(R"({"mark": "line", "encoding": {"x": {"field": "x", "type": "quantitative"},
    "y": {"field": "y", "type": "quantitative"}, "color": {"field": "c"}}, "data": {"sql": "S"}})");
  Table t = MakeTable({"x", "y", "c"},
                      {{"1", "5", "a"}, {"2", "6", "a"}, {"1", "7", "b"}, {"2", "8", "b"}});
  EXPECT_TRUE(Check(s, t).empty());
  t.rows.push_back({"0", "1", "b"});
  EXPECT_EQ(Rules(Check(s, t)), std::vector<std::string>{"unsorted_line"});
}

TEST(CheckTest, NegativeArc) {
  Spec arc = MustParse(R"({"mark": "arc", "encoding": {"theta": {"field": "profit"},
    "color": {"field": "region"}}, "data": {"sql": "S"}})");
  Table t = MakeTable({"region", "profit"}, {{"North", "1200"}, {"West", "-1500"}});
  auto problems = Check(arc, t);
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"negative_arc"});
  EXPECT_NE(problems[0].message.find("-1,500 for \"West\""), std::string::npos);
  EXPECT_NE(problems[0].message.find("bar chart"), std::string::npos);
  t.rows[1][1] = "1500";
  EXPECT_TRUE(Check(arc, t).empty());
}

TEST(CheckTest, SinglePoint) {
  auto problems = Check(LineSpec("temporal"), XY({"2025-01-01"}));
  ASSERT_EQ(Rules(problems), std::vector<std::string>{"single_point"});
  EXPECT_NE(problems[0].message.find("bar chart"), std::string::npos);
  EXPECT_TRUE(Check(LineSpec("temporal"), XY({"2025-01-01", "2025-02-01"})).empty());
  // One distinct x over many rows is a single point too.
  Spec point = MustParse(R"({"mark": "point", "encoding": {"x": {"field": "x", "type": "nominal"},
    "y": {"field": "y", "type": "quantitative"}}, "data": {"sql": "S"}})");
  EXPECT_EQ(Rules(Check(point, XY({"a", "a", "a"}))), std::vector<std::string>{"single_point"});
  EXPECT_TRUE(Check(point, XY({"a", "b", "a"})).empty());
}

TEST(PrepareTest, AggregatesByXAndColor) {
  Spec s = MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "region", "type": "nominal"},
    "y": {"field": "revenue", "type": "quantitative", "aggregate": "mean"},
    "color": {"field": "year", "type": "ordinal"}}, "data": {"sql": "S"}})");
  Table t = MakeTable({"region", "revenue", "year"}, {{"North", "10", "2024"},
                                                      {"North", "20", "2024"},
                                                      {"South", "5", "2024"},
                                                      {"North", "7", "2025"},
                                                      {"South", std::nullopt, "2025"}});
  internal::Prepared p = internal::Prepare(s, t);
  EXPECT_EQ(p.categories, (std::vector<std::string>{"North", "South"}));
  EXPECT_EQ(p.series, (std::vector<std::string>{"2024", "2025"}));
  ASSERT_EQ(p.points.size(), 3u);  // South 2025 has no value to average
  EXPECT_EQ(p.points[0].x, 0);
  EXPECT_DOUBLE_EQ(p.points[0].y, 15);  // North 2024
  EXPECT_DOUBLE_EQ(p.points[1].y, 7);   // North 2025
  EXPECT_DOUBLE_EQ(p.points[2].y, 5);   // South 2024
}

TEST(PrepareTest, SortsCategoriesByY) {
  Spec s = BarSpec();
  s.x->sort = "-y";
  Table t = MakeTable({"region", "revenue"}, {{"A", "1"}, {"B", "30"}, {"C", "20"}});
  EXPECT_EQ(internal::Prepare(s, t).categories, (std::vector<std::string>{"B", "C", "A"}));
}

TEST(PrepareTest, HistogramCountsPerBin) {
  Spec s =
      MustParse(R"({"mark": "histogram", "encoding": {"x": {"field": "v", "bin": {"maxbins": 5}}},
    "data": {"sql": "S"}})");
  Table t = MakeTable({"v"}, {{"0"}, {"1"}, {"2.5"}, {"3"}, {"9.9"}, {"10"}, {std::nullopt}});
  internal::Prepared p = internal::Prepare(s, t);
  EXPECT_EQ(p.bin_edges, (std::vector<double>{0, 2, 4, 6, 8, 10}));
  std::vector<double> counts(5, 0);
  for (const auto& pt : p.points) counts[static_cast<size_t>(pt.x)] = pt.y;
  EXPECT_EQ(counts, (std::vector<double>{2, 2, 0, 0, 2}));  // 10 falls in the last bin
}

TEST(PrepareTest, TimeIsSortedAndCountsWithoutAField) {
  Spec s = MustParse(R"({"mark": "line", "encoding": {"x": {"field": "d", "type": "temporal"},
    "y": {"aggregate": "count"}}, "data": {"sql": "S"}})");
  Table t = MakeTable({"d"}, {{"2025-02-01"}, {"2025-01-01"}, {"2025-02-01"}});
  internal::Prepared p = internal::Prepare(s, t);
  EXPECT_EQ(p.x_mode, internal::XMode::kTime);
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_LT(p.points[0].x, p.points[1].x);
  EXPECT_EQ(p.points[0].y, 1);
  EXPECT_EQ(p.points[1].y, 2);
}

}  // namespace
}  // namespace quarry::chart
