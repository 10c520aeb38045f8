// ParseSpec: the accepted Vega-Lite spellings, and errors that name the JSON path to repair.
#include <gtest/gtest.h>

#include "chart/chart_test_util.h"
#include "quarry/chart/chart.h"

namespace quarry::chart {
namespace {

using testing::MustParse;
using Json = nlohmann::ordered_json;

TEST(ParseSpecTest, ReadsABarSpec) {
  Spec s = MustParse(R"json({"mark": "bar", "title": "Revenue by region",
    "encoding": {"x": {"field": "region", "type": "nominal", "sort": "-y"},
                 "y": {"field": "revenue", "type": "quantitative", "aggregate": "sum",
                       "title": "Revenue (USD)"}},
    "data": {"sql": "SELECT region, revenue FROM sales"}})json");
  EXPECT_EQ(s.mark, Mark::kBar);
  EXPECT_EQ(s.title, "Revenue by region");
  ASSERT_TRUE(s.x && s.y);
  EXPECT_EQ(s.x->field, "region");
  EXPECT_EQ(s.x->type, FieldType::kNominal);
  EXPECT_EQ(s.x->sort, "-y");
  EXPECT_EQ(s.y->aggregate, "sum");
  EXPECT_EQ(s.y->title, "Revenue (USD)");
  EXPECT_FALSE(s.color.has_value());
  EXPECT_EQ(s.sql, "SELECT region, revenue FROM sales");
}

TEST(ParseSpecTest, AcceptsMarkObjectsShortTypesAndTitleObjects) {
  Spec s = MustParse(R"({"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "description": "ignored", "mark": {"type": "line"}, "title": {"text": "Monthly"},
    "encoding": {"x": {"field": "month", "type": "T", "axis": {"title": "Month"}},
                 "y": {"field": "n", "type": "Q", "aggregate": "average"},
                 "color": {"field": "region", "type": "N", "legend": {"title": "Region"}}},
    "data": {"sql": "SELECT 1"}})");
  EXPECT_EQ(s.mark, Mark::kLine);
  EXPECT_EQ(s.title, "Monthly");
  EXPECT_EQ(s.x->type, FieldType::kTemporal);
  EXPECT_EQ(s.x->title, "Month");
  EXPECT_EQ(s.y->type, FieldType::kQuantitative);
  EXPECT_EQ(s.y->aggregate, "mean");
  EXPECT_EQ(s.color->type, FieldType::kNominal);
  EXPECT_EQ(s.color->title, "Region");
}

TEST(ParseSpecTest, HistogramIsABarWithBinnedXAndCountedY) {
  Spec s = MustParse(R"({"mark": "histogram", "encoding": {"x": {"field": "price"}},
                         "data": {"sql": "SELECT price FROM t"}})");
  EXPECT_EQ(s.mark, Mark::kBar);
  EXPECT_TRUE(s.x->bin);
  EXPECT_EQ(s.x->maxbins, 0);
  EXPECT_EQ(s.x->type, FieldType::kQuantitative);
  ASSERT_TRUE(s.y.has_value());
  EXPECT_EQ(s.y->aggregate, "count");
  EXPECT_EQ(s.y->field, "");

  Spec m = MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "price", "bin": {"maxbins": 8}},
                         "y": {"aggregate": "count"}}, "data": {"sql": "SELECT price FROM t"}})");
  EXPECT_TRUE(m.x->bin);
  EXPECT_EQ(m.x->maxbins, 8);
}

TEST(ParseSpecTest, SortNullMeansKeepTheQueryOrder) {
  Spec s = MustParse(R"({"mark": "line", "encoding": {"x": {"field": "day", "type": "ordinal",
    "sort": null}, "y": {"field": "n", "type": "quantitative"}}, "data": {"sql": "SELECT 1"}})");
  EXPECT_EQ(s.x->sort, "none");
}

TEST(ParseSpecTest, ArcTakesThetaAndColor) {
  Spec s = MustParse(R"({"mark": "arc", "encoding": {"theta": {"field": "n"},
    "color": {"field": "kind"}}, "data": {"sql": "SELECT kind, n FROM t"}})");
  EXPECT_EQ(s.mark, Mark::kArc);
  EXPECT_EQ(s.theta->type, FieldType::kQuantitative);
  EXPECT_EQ(s.color->type, FieldType::kNominal);
  EXPECT_FALSE(s.x.has_value());
}

// Each bad spec and the start of the one-line error it must give.
struct BadSpec {
  const char* json;
  const char* error;
};

class ParseSpecErrorTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(ParseSpecErrorTest, NamesThePath) {
  auto spec = ParseSpec(Json::parse(GetParam().json));
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, Error::Code::kUsage);
  EXPECT_EQ(spec.error().message.rfind(GetParam().error, 0), 0u) << spec.error().message;
  EXPECT_EQ(spec.error().message.find('\n'), std::string::npos);
}

// x and y for the marks that take them.
constexpr const char* kXY = R"("encoding": {"x": {"field": "a", "type": "nominal"},
  "y": {"field": "b", "type": "quantitative"}}, "data": {"sql": "SELECT a, b FROM t"})";

INSTANTIATE_TEST_SUITE_P(
    Paths, ParseSpecErrorTest,
    ::testing::Values(
        BadSpec{R"([1, 2])", "spec: must be a JSON object"},
        BadSpec{
            R"({"mark": "bar", "width": 800, "height": 400, "encoding": {}, "data": {}})",
            R"(spec: unknown keys "width", "height" (this subset takes mark, title, encoding, data)"},
        BadSpec{
            R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "quantity"}}, "data": {"sql": "S"}})",
            R"(spec.encoding.x.type: "quantity" is not one of nominal, ordinal, quantitative, temporal)"},
        BadSpec{R"({"mark": "pie", "encoding": {}, "data": {"sql": "S"}})",
                R"(spec.mark: "pie" is not one of bar, line, point, area, arc, histogram)"},
        BadSpec{
            R"({"mark": {"type": "bar", "innerRadius": 5}, "encoding": {}, "data": {"sql": "S"}})",
            R"(spec.mark: unknown key "innerRadius")"},
        BadSpec{R"({"encoding": {}, "data": {"sql": "S"}})", "spec.mark: missing"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                   "y": {"field": "b", "type": "quantitative"}}})",
                "spec.data: missing"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                   "y": {"field": "b", "type": "quantitative"}}, "data": {"sql": "  "}})",
                "spec.data.sql: must be the non-empty SELECT query"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                   "y": {"field": "b", "type": "quantitative"}}, "data": {"values": [{"a": 1}]}})",
                "spec.data.values: not accepted"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                   "size": {"field": "c"}}, "data": {"sql": "S"}})",
                R"(spec.encoding: unknown key "size")"},
        BadSpec{R"({"mark": "line", "encoding": {"x": {"field": "a", "type": "temporal",
                   "timeUnit": "month"}}, "data": {"sql": "S"}})",
                R"(spec.encoding.x: unknown key "timeUnit")"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"type": "nominal"}}, "data": {"sql": "S"}})",
                "spec.encoding.x.field: missing"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a"}}, "data": {"sql": "S"}})",
                "spec.encoding.x.type: missing"},
        BadSpec{R"({"mark": "line", "encoding": {"x": {"field": "a", "type": "nominal"}},
                   "data": {"sql": "S"}})",
                "spec.encoding.y: missing"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "quantitative"},
                   "y": {"field": "b", "type": "nominal"}}, "data": {"sql": "S"}})",
                "spec.encoding.y.type: must be quantitative"},
        BadSpec{
            R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                   "y": {"field": "b", "type": "quantitative", "aggregate": "avg"}}, "data": {"sql": "S"}})",
            R"(spec.encoding.y.aggregate: "avg" is not one of sum, mean, average, count, min, max, median)"},
        BadSpec{
            R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal", "sort": ["b", "a"]},
                   "y": {"field": "b", "type": "quantitative"}}, "data": {"sql": "S"}})",
            "spec.encoding.x.sort: [\"b\",\"a\"] is not one of"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                   "y": {"field": "b", "type": "quantitative", "sort": "ascending"}}, "data": {"sql": "S"}})",
                "spec.encoding.y.sort: only x can be sorted"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "bin": {"maxbins": 0}}},
                   "data": {"sql": "S"}})",
                "spec.encoding.x.bin.maxbins: must be a whole number"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "bin": true},
                   "y": {"field": "b", "type": "quantitative"}}, "data": {"sql": "S"}})",
                "spec.encoding.y.aggregate: a binned x needs an aggregate"},
        BadSpec{R"({"mark": "arc", "encoding": {"theta": {"field": "n"}}, "data": {"sql": "S"}})",
                "spec.encoding.color: missing; an arc needs the slices in color"},
        BadSpec{R"({"mark": "arc", "encoding": {"theta": {"field": "n"}, "color": {"field": "k"},
                   "x": {"field": "k", "type": "nominal"}}, "data": {"sql": "S"}})",
                "spec.encoding.x: an arc (pie) uses theta"},
        BadSpec{R"({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                   "y": {"field": "b", "type": "quantitative"},
                   "color": {"field": "c", "type": "quantitative"}}, "data": {"sql": "S"}})",
                "spec.encoding.color.type: must be nominal or ordinal"},
        BadSpec{R"({"mark": "bar", "title": 5, "encoding": {}, "data": {"sql": "S"}})",
                "spec.title: must be a string"}));

TEST(ParseSpecTest, CountNeedsNoField) {
  Spec s = MustParse(std::string(R"({"mark": "bar", "encoding": {"x": {"field": "a",
    "type": "nominal"}, "y": {"aggregate": "count"}}, "data": {"sql": "SELECT a FROM t"}})"));
  EXPECT_EQ(s.y->field, "");
  EXPECT_EQ(s.y->aggregate, "count");
  EXPECT_EQ(s.y->type, FieldType::kQuantitative);
  Spec t = MustParse(std::string(R"({"mark": "point", )") + kXY + "}");
  EXPECT_EQ(t.mark, Mark::kPoint);
}

}  // namespace
}  // namespace quarry::chart
