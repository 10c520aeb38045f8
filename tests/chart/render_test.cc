// Render: real PNG and SVG output for known data: size, ink, the words a reader needs (title,
// axis titles, ticks, dates, legend), labels that do not overlap, and the marks' geometry.
#include <gtest/gtest.h>

#include <cairo.h>

#include <cmath>
#include <memory>

#include "chart/chart_test_util.h"
#include "quarry/chart/chart.h"
#include "quarry/chart/chart_internal.h"

namespace quarry::chart {
namespace {

using internal::Scene;
using internal::TextItem;
using internal::TextRole;
using testing::Cell;
using testing::MakeTable;
using testing::MustParse;

uint32_t BigEndian(const std::string& s, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(s[at])) << 24 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

struct PngReader {
  const std::string* bytes;
  size_t at = 0;
};

cairo_status_t ReadPng(void* closure, unsigned char* data, unsigned int length) {
  auto* r = static_cast<PngReader*>(closure);
  if (r->at + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
  std::copy_n(r->bytes->data() + r->at, length, data);
  r->at += length;
  return CAIRO_STATUS_SUCCESS;
}

// Share of pixels that are not (near) white, decoding the PNG with cairo.
double InkShare(const std::string& png) {
  PngReader reader{&png};
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> s(
      cairo_image_surface_create_from_png_stream(ReadPng, &reader), cairo_surface_destroy);
  EXPECT_EQ(cairo_surface_status(s.get()), CAIRO_STATUS_SUCCESS);
  const int w = cairo_image_surface_get_width(s.get()), h = cairo_image_surface_get_height(s.get());
  const int stride = cairo_image_surface_get_stride(s.get());
  const unsigned char* data = cairo_image_surface_get_data(s.get());
  long ink = 0;
  for (int y = 0; y < h; ++y) {
    const auto* row = reinterpret_cast<const uint32_t*>(data + y * stride);
    for (int x = 0; x < w; ++x) {
      const uint32_t p = row[x];
      if (((p >> 16) & 0xff) < 240 || ((p >> 8) & 0xff) < 240 || (p & 0xff) < 240) ++ink;
    }
  }
  return static_cast<double>(ink) / (w * h);
}

std::vector<std::string> Texts(const Scene& scene, TextRole role) {
  std::vector<std::string> out;
  for (const TextItem& t : scene.texts) {
    if (t.role == role) out.push_back(t.text);
  }
  return out;
}

Scene RenderScene(const Spec& spec, const Table& table, Rendered* out = nullptr) {
  Scene scene;
  auto r = internal::RenderWithScene(spec, table, 800, 500, &scene);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  if (r && out) *out = *r;
  return scene;
}

const char* kRevenueSpec = R"json({"mark": "bar", "title": "Revenue by region",
  "encoding": {"x": {"field": "region", "type": "nominal", "title": "Sales region"},
               "y": {"field": "revenue", "type": "quantitative", "title": "Revenue (USD)"}},
  "data": {"sql": "SELECT region, revenue FROM sales"}})json";

Table Revenue() {
  return MakeTable({"region", "revenue"},
                   {{"North", "12500"}, {"South", "8000"}, {"East", "3100"}, {"West", "0"}});
}

TEST(RenderTest, PngIs800By500AndNotBlank) {
  auto r = Render(MustParse(kRevenueSpec), Revenue());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->width, 800);
  EXPECT_EQ(r->height, 500);
  ASSERT_GT(r->png.size(), 24u);
  EXPECT_EQ(r->png.substr(1, 3), "PNG");
  EXPECT_EQ(r->png.substr(12, 4), "IHDR");
  EXPECT_EQ(BigEndian(r->png, 16), 800u);
  EXPECT_EQ(BigEndian(r->png, 20), 500u);
  const double ink = InkShare(r->png);
  EXPECT_GT(ink, 0.05);  // bars, text and grid
  EXPECT_LT(ink, 0.6);   // on a white background
}

TEST(RenderTest, OtherSizesAreHonouredAndSillyOnesRefused) {
  auto r = Render(MustParse(kRevenueSpec), Revenue(), 1000, 600);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(BigEndian(r->png, 16), 1000u);
  EXPECT_EQ(BigEndian(r->png, 20), 600u);
  EXPECT_NE(r->svg.find("viewBox=\"0 0 1000 600\""), std::string::npos);
  auto tiny = Render(MustParse(kRevenueSpec), Revenue(), 10, 10);
  ASSERT_FALSE(tiny.has_value());
  EXPECT_EQ(tiny.error().code, Error::Code::kUsage);
}

TEST(RenderTest, SvgCarriesTitleAxisTitlesAndThousandsTicks) {
  Rendered r;
  Scene scene = RenderScene(MustParse(kRevenueSpec), Revenue(), &r);
  EXPECT_EQ(Texts(scene, TextRole::kYTick),
            (std::vector<std::string>{"0", "2,500", "5,000", "7,500", "10,000", "12,500"}));
  EXPECT_EQ(Texts(scene, TextRole::kXTick),
            (std::vector<std::string>{"North", "South", "East", "West"}));
  for (const char* word :
       {"<title>Revenue by region</title>", ">Sales region</text>", ">Revenue (USD)</text>",
        ">12,500</text>", ">2,500</text>", ">North</text>"}) {
    EXPECT_NE(r.svg.find(word), std::string::npos) << word;
  }
  EXPECT_NE(r.svg.find("<desc>Bar chart of Revenue (USD) by Sales region, from 4 rows.</desc>"),
            std::string::npos);
  // The bars: the tallest reaches the top tick, the zero-valued one has no height.
  ASSERT_EQ(scene.bars.size(), 4u);
  EXPECT_NEAR(scene.bars[0].y0, scene.plot_top, 0.5);
  EXPECT_NEAR(scene.bars[3].y1 - scene.bars[3].y0, 0, 0.01);
}

TEST(RenderTest, TitlesAreEscapedInTheSvg) {
  Spec s = MustParse(kRevenueSpec);
  s.title = "Revenue <EU & US>";
  Rendered r;
  RenderScene(s, Revenue(), &r);
  EXPECT_NE(r.svg.find("<title>Revenue &lt;EU &amp; US&gt;</title>"), std::string::npos);
  EXPECT_EQ(r.svg.find("<EU"), std::string::npos);
}

TEST(RenderTest, InvalidUtf8InCellsIsReplacedNotPassedOn) {
  Table t = MakeTable({"region", "revenue"}, {{"Caf\xE9", "10"}, {"Bar", "5"}});
  Rendered r;
  Scene scene = RenderScene(MustParse(kRevenueSpec), t, &r);
  EXPECT_EQ(Texts(scene, TextRole::kXTick), (std::vector<std::string>{"Caf\uFFFD", "Bar"}));
  EXPECT_NE(r.svg.find(">Caf\uFFFD</text>"), std::string::npos);
  EXPECT_EQ(r.svg.find("Caf\xE9"), std::string::npos);
}

TEST(RenderTest, MonthlySeriesOf2025HasMonthTicks) {
  std::vector<std::vector<Cell>> rows;
  for (int m = 1; m <= 12; ++m) {
    rows.push_back({"2025-" + std::string(m < 10 ? "0" : "") + std::to_string(m) + "-01",
                    std::to_string(1000 + 150 * m)});
  }
  Spec s = MustParse(R"({"mark": "line", "encoding": {"x": {"field": "month", "type": "temporal"},
    "y": {"field": "orders", "type": "quantitative"}}, "data": {"sql": "S"}})");
  Rendered r;
  Scene scene = RenderScene(s, MakeTable({"month", "orders"}, rows), &r);
  const std::vector<std::string> months = {"Jan 2025", "Mar 2025", "May 2025",
                                           "Jul 2025", "Sep 2025", "Nov 2025"};
  EXPECT_EQ(Texts(scene, TextRole::kXTick), months);
  for (const auto& m : months) EXPECT_NE(r.svg.find(">" + m + "</text>"), std::string::npos);
  EXPECT_EQ(Texts(scene, TextRole::kTitle), std::vector<std::string>{"orders by month"});
}

// Two labels drawn at the same angle overlap only if their boxes overlap along the text and
// across it (separating axes of two rectangles with the same rotation).
bool Overlap(const TextItem& a, const TextItem& b) {
  const double r = a.angle_deg * M_PI / 180;
  const double ux = std::cos(r), uy = std::sin(r), vx = -uy, vy = ux;
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double along = dx * ux + dy * uy, across = dx * vx + dy * vy;
  const bool apart_along = along >= a.width || along <= -b.width;
  const bool apart_across = across >= a.height || across <= -b.height;
  return !(apart_along || apart_across);
}

TEST(RenderTest, FortyCategoriesAreRotatedAndThinnedWithoutOverlap) {
  std::vector<std::vector<Cell>> rows;
  for (int i = 0; i < 40; ++i) rows.push_back({"Product " + std::to_string(100 + i), "5"});
  Spec s = MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "product", "type": "nominal"},
    "y": {"field": "units", "type": "quantitative"}}, "data": {"sql": "S"}})");
  Scene scene = RenderScene(s, MakeTable({"product", "units"}, rows));
  std::vector<TextItem> labels;
  for (const TextItem& t : scene.texts) {
    if (t.role == TextRole::kXTick) labels.push_back(t);
  }
  ASSERT_GE(labels.size(), 10u);
  ASSERT_LT(labels.size(), 40u);
  EXPECT_EQ(labels.front().text, "Product 100");
  for (size_t i = 0; i < labels.size(); ++i) {
    EXPECT_EQ(labels[i].angle_deg, -45);
    // Every corner inside the image, below the plot.
    for (const auto& [a, b] : {std::pair(0.0, 0.0), {1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}}) {
      const double x =
          labels[i].x + a * labels[i].width * M_SQRT1_2 - b * labels[i].height * -M_SQRT1_2;
      const double y =
          labels[i].y - a * labels[i].width * M_SQRT1_2 + b * labels[i].height * M_SQRT1_2;
      EXPECT_GE(x, 0);
      EXPECT_LE(y, 500);
      EXPECT_GT(y, scene.plot_bottom);
    }
    if (i > 0) {
      EXPECT_FALSE(Overlap(labels[i - 1], labels[i])) << labels[i].text;
    }
  }
  // Rotated labels sit below the plot and above the x title.
  const auto title = Texts(scene, TextRole::kXTitle);
  EXPECT_EQ(title, std::vector<std::string>{"product"});
  EXPECT_EQ(scene.bars.size(), 40u);
}

TEST(RenderTest, LegendListsTheColorCategoriesAndBarsStack) {
  Spec s = MustParse(R"({"mark": "bar", "encoding": {"x": {"field": "quarter", "type": "ordinal"},
    "y": {"field": "sales", "type": "quantitative"},
    "color": {"field": "channel", "type": "nominal", "title": "Channel"}}, "data": {"sql": "S"}})");
  Table t = MakeTable({"quarter", "sales", "channel"}, {{"Q1", "100", "Online"},
                                                        {"Q1", "50", "Retail"},
                                                        {"Q2", "80", "Online"},
                                                        {"Q2", "70", "Wholesale"}});
  Rendered r;
  Scene scene = RenderScene(s, t, &r);
  EXPECT_EQ(Texts(scene, TextRole::kLegendTitle), std::vector<std::string>{"Channel"});
  EXPECT_EQ(Texts(scene, TextRole::kLegend),
            (std::vector<std::string>{"Online", "Retail", "Wholesale"}));
  EXPECT_NE(r.svg.find(">Wholesale</text>"), std::string::npos);
  // Q1: Retail sits on top of Online.
  ASSERT_EQ(scene.bars.size(), 4u);
  EXPECT_EQ(scene.bars[0].series, 0);
  EXPECT_EQ(scene.bars[1].series, 1);
  EXPECT_NEAR(scene.bars[1].y1, scene.bars[0].y0, 1e-9);
  EXPECT_NEAR(scene.bars[0].y1, *scene.zero_y, 1e-9);
}

TEST(RenderTest, ALongLegendEndsWithHowManyMore) {
  Spec s = MustParse(R"({"mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"},
    "y": {"field": "y", "type": "quantitative"}, "color": {"field": "c"}}, "data": {"sql": "S"}})");
  std::vector<std::vector<Cell>> rows;
  for (int i = 0; i < 40; ++i)
    rows.push_back({std::to_string(i), "1", "series " + std::to_string(i)});
  Scene scene = RenderScene(s, MakeTable({"x", "y", "c"}, rows));
  const auto legend = Texts(scene, TextRole::kLegend);
  ASSERT_GT(legend.size(), 10u);
  ASSERT_LT(legend.size(), 40u);
  EXPECT_EQ(legend.front(), "series 0");
  EXPECT_EQ(legend.back(), "+" + std::to_string(40 - (legend.size() - 1)) + " more");
  for (const TextItem& t : scene.texts) EXPECT_LE(t.y + t.height, 500) << t.text;
}

TEST(RenderTest, NegativeBarsHangFromAZeroLineInsideThePlot) {
  Table t = MakeTable({"region", "revenue"}, {{"North", "300"}, {"South", "-200"}});
  Scene scene = RenderScene(MustParse(kRevenueSpec), t);
  ASSERT_TRUE(scene.zero_y.has_value());
  EXPECT_GT(*scene.zero_y, scene.plot_top + 10);
  EXPECT_LT(*scene.zero_y, scene.plot_bottom - 10);
  ASSERT_EQ(scene.bars.size(), 2u);
  EXPECT_NEAR(scene.bars[0].y1, *scene.zero_y, 1e-9);  // up from zero
  EXPECT_NEAR(scene.bars[1].y0, *scene.zero_y, 1e-9);  // down from zero
  EXPECT_NE(std::find(Texts(scene, TextRole::kYTick).begin(), Texts(scene, TextRole::kYTick).end(),
                      "-200"),
            Texts(scene, TextRole::kYTick).end());
}

TEST(RenderTest, HistogramBarsAreAsTallAsTheirCounts) {
  Spec s =
      MustParse(R"({"mark": "histogram", "encoding": {"x": {"field": "v", "bin": {"maxbins": 5}}},
    "data": {"sql": "S"}})");
  Table t = MakeTable({"v"}, {{"1"}, {"1.5"}, {"3"}, {"9"}, {"9.5"}, {"9.9"}});
  Scene scene = RenderScene(s, t);
  ASSERT_EQ(scene.bars.size(), 3u);  // [0,2): 2, [2,4): 1, [8,10]: 3
  const double unit = (scene.bars[1].y1 - scene.bars[1].y0);
  EXPECT_NEAR(scene.bars[0].y1 - scene.bars[0].y0, 2 * unit, 1e-6);
  EXPECT_NEAR(scene.bars[2].y1 - scene.bars[2].y0, 3 * unit, 1e-6);
  EXPECT_LT(scene.bars[0].x1, scene.bars[1].x0 + 1);  // contiguous, in order
  EXPECT_EQ(Texts(scene, TextRole::kYTitle), std::vector<std::string>{"Count"});
}

// Regression: a histogram of values spanning less than one (latencies of 9 to 11 ms in
// seconds) took its axis for whole numbers and read an empty tick list (SIGSEGV).
TEST(RenderTest, HistogramOfSmallFractionsHasFractionalTicks) {
  Spec s = MustParse(R"({"mark": "histogram", "encoding": {"x": {"field": "v"}},
    "data": {"sql": "S"}})");
  Table t = MakeTable({"v"}, {{"0.009"}, {"0.011"}, {"0.011"}, {"0.010"}});
  Scene scene = RenderScene(s, t);
  const std::vector<std::string> ticks = Texts(scene, TextRole::kXTick);
  ASSERT_GE(ticks.size(), 4u);
  ASSERT_LE(ticks.size(), 8u);
  EXPECT_LE(std::stod(ticks.front()), 0.009);  // the axis covers the bins
  EXPECT_GE(std::stod(ticks.back()), 0.011);
  EXPECT_LT(std::stod(ticks.back()) - std::stod(ticks.front()), 0.01);  // not whole numbers
  int total = 0;
  const double unit = scene.bars.empty() ? 0 : scene.bars[0].y1 - scene.bars[0].y0;
  for (const auto& b : scene.bars) total += static_cast<int>(std::lround((b.y1 - b.y0) / unit));
  EXPECT_EQ(total, 4);  // every value in a bin
}

TEST(RenderTest, PieHasSlicesWithSharesAndALegend) {
  Spec s = MustParse(R"({"mark": "arc", "title": "Orders by channel", "encoding": {
    "theta": {"field": "n"}, "color": {"field": "channel"}}, "data": {"sql": "S"}})");
  Table t = MakeTable({"channel", "n"}, {{"Online", "50"}, {"Retail", "30"}, {"Phone", "20"}});
  Rendered r;
  Scene scene = RenderScene(s, t, &r);
  EXPECT_EQ(Texts(scene, TextRole::kLegend),
            (std::vector<std::string>{"Online", "Retail", "Phone"}));
  EXPECT_EQ(Texts(scene, TextRole::kSlice), (std::vector<std::string>{"50%", "30%", "20%"}));
  EXPECT_GT(InkShare(r.png), 0.1);
}

TEST(RenderTest, LinesAndPointsDraw) {
  for (const char* mark : {"line", "point", "area"}) {
    Spec s = MustParse(std::string(R"({"mark": ")") + mark + R"(", "encoding": {
      "x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"},
      "color": {"field": "c"}}, "data": {"sql": "S"}})");
    Table t = MakeTable(
        {"x", "y", "c"},
        {{"2019", "1.5", "a"}, {"2020", "2.5", "a"}, {"2019", "1", "b"}, {"2020", "0.5", "b"}});
    Rendered r, empty;
    Scene scene = RenderScene(s, t, &r);
    RenderScene(s, MakeTable({"x", "y", "c"}, {}), &empty);
    // The marks add ink to what the frame alone (axes, grid, text) has.
    EXPECT_GT(InkShare(r.png), InkShare(empty.png) + 0.004) << mark;
    // Years on a quantitative axis keep no thousands separator.
    const auto ticks = Texts(scene, TextRole::kXTick);
    EXPECT_NE(std::find(ticks.begin(), ticks.end(), "2020"), ticks.end()) << mark;
  }
}

TEST(RenderTest, NoRowsDrawsANoteAndMissingFieldsAreRefused) {
  Scene scene = RenderScene(MustParse(kRevenueSpec), MakeTable({"region", "revenue"}, {}));
  EXPECT_EQ(Texts(scene, TextRole::kNote), std::vector<std::string>{"No rows to draw"});
  auto r = Render(MustParse(kRevenueSpec), MakeTable({"region", "amount"}, {{"North", "1"}}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Error::Code::kUsage);
  EXPECT_NE(r.error().message.find("\"revenue\" is not a column"), std::string::npos);
}

}  // namespace
}  // namespace quarry::chart
