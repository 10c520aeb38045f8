// Scales and labels: nice ticks, number and date formatting, cell parsing, bins, and the
// category-label layout.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quarry/chart/chart_internal.h"

namespace quarry::chart::internal {
namespace {

TEST(NiceTicksTest, KnownRanges) {
  EXPECT_EQ(NiceTicks(0, 12500).values, (std::vector<double>{0, 2500, 5000, 7500, 10000, 12500}));
  EXPECT_EQ(NiceTicks(0, 100).values, (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(NiceTicks(0, 1).values, (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1}));
  EXPECT_EQ(NiceTicks(-3, 7).values, (std::vector<double>{-4, -2, 0, 2, 4, 6, 8}));
  EXPECT_EQ(NiceTicks(0, 3, /*integers=*/true).values, (std::vector<double>{0, 1, 2, 3}));
  const Ticks one = NiceTicks(5, 5);  // one value still gets an axis around it
  EXPECT_LT(one.values.front(), 5);
  EXPECT_GT(one.values.back(), 5);
}

TEST(NiceTicksTest, AnyRangeGetsFourToEightCoveringTicksOfANiceStep) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-3, 7), unit(0, 1);
  for (int i = 0; i < 2000; ++i) {
    const double scale = std::pow(10.0, exponent(rng));
    const double lo = (unit(rng) - 0.3) * scale, hi = lo + (unit(rng) + 1e-3) * scale;
    const Ticks t = NiceTicks(lo, hi);
    ASSERT_GE(t.values.size(), 4u) << lo << " " << hi;
    ASSERT_LE(t.values.size(), 8u) << lo << " " << hi;
    EXPECT_LE(t.values.front(), lo);
    EXPECT_GE(t.values.back(), hi);
    const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step)));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                std::abs(mantissa - 2.5) < 1e-9 || std::abs(mantissa - 5) < 1e-9)
        << t.step;
  }
}

TEST(FormatNumberTest, ThousandsSeparatorsAndDecimals) {
  EXPECT_EQ(FormatNumber(12500, 0), "12,500");
  EXPECT_EQ(FormatNumber(-2500, 0), "-2,500");
  EXPECT_EQ(FormatNumber(999, 0), "999");
  EXPECT_EQ(FormatNumber(1234567.891, 2), "1,234,567.89");
  EXPECT_EQ(FormatNumber(-0.0001, 2), "0.00");
  EXPECT_EQ(FormatNumber(0.25, DecimalsFor(0.25)), "0.25");
  EXPECT_EQ(DecimalsFor(2500), 0);
  EXPECT_EQ(DecimalsFor(0.2), 1);
}

TEST(ParseTest, NumbersAsEnginesRenderThem) {
  EXPECT_EQ(ParseNumber("12"), 12);
  EXPECT_EQ(ParseNumber(" -3.5 "), -3.5);
  EXPECT_EQ(ParseNumber("+2"), 2);
  EXPECT_EQ(ParseNumber("1e6"), 1e6);
  EXPECT_FALSE(ParseNumber("12,500").has_value());
  EXPECT_FALSE(ParseNumber("").has_value());
  EXPECT_FALSE(ParseNumber("North").has_value());
}

TEST(ParseTest, IsoDatesAndTimestamps) {
  const double day = 86400;
  EXPECT_EQ(ParseTimestamp("1970-01-02"), day);
  EXPECT_EQ(ParseTimestamp("2025-03-14"), 20161 * day);
  EXPECT_EQ(ParseTimestamp("2025-03-14 09:30:00"), 20161 * day + 9.5 * 3600);
  EXPECT_EQ(ParseTimestamp("2025-03-14T09:30:00.500+01:00"), 20161 * day + 9.5 * 3600 + 0.5);
  EXPECT_EQ(ParseTimestamp("2025-03"), ParseTimestamp("2025-03-01"));
  EXPECT_EQ(ParseTimestamp("2024"), ParseTimestamp("2024-01-01"));
  EXPECT_FALSE(ParseTimestamp("2025-02-30").has_value());
  EXPECT_FALSE(ParseTimestamp("2025-Q1").has_value());
  EXPECT_FALSE(ParseTimestamp("14/03/2025").has_value());
}

std::vector<std::string> Labels(const std::vector<TimeTick>& ticks) {
  std::vector<std::string> out;
  for (const auto& t : ticks) out.push_back(t.label);
  return out;
}

TEST(TimeTicksTest, LabelledForTheirSpan) {
  EXPECT_EQ(Labels(TimeTicks(*ParseTimestamp("2025-01-01"), *ParseTimestamp("2025-12-01"))),
            (std::vector<std::string>{"Jan 2025", "Mar 2025", "May 2025", "Jul 2025", "Sep 2025",
                                      "Nov 2025"}));
  EXPECT_EQ(Labels(TimeTicks(*ParseTimestamp("2015-06-01"), *ParseTimestamp("2024-06-01"))),
            (std::vector<std::string>{"2016", "2018", "2020", "2022", "2024"}));
  EXPECT_EQ(Labels(TimeTicks(*ParseTimestamp("2025-03-10"), *ParseTimestamp("2025-03-16"))),
            (std::vector<std::string>{"Mar 10", "Mar 11", "Mar 12", "Mar 13", "Mar 14", "Mar 15",
                                      "Mar 16"}));
  EXPECT_EQ(
      Labels(TimeTicks(*ParseTimestamp("2025-03-14 08:00"), *ParseTimestamp("2025-03-14 20:00"))),
      (std::vector<std::string>{"08:00", "10:00", "12:00", "14:00", "16:00", "18:00", "20:00"}));
}

TEST(FormatDatesTest, GranularityOfTheValues) {
  auto at = [](const char* s) { return *ParseTimestamp(s); };
  EXPECT_EQ(FormatDates({at("2023"), at("2024")}), (std::vector<std::string>{"2023", "2024"}));
  EXPECT_EQ(FormatDates({at("2025-01-01"), at("2025-02-01")}),
            (std::vector<std::string>{"Jan 2025", "Feb 2025"}));
  EXPECT_EQ(FormatDates({at("2025-03-14"), at("2025-03-15")}),
            (std::vector<std::string>{"Mar 14", "Mar 15"}));
  EXPECT_EQ(FormatDates({at("2024-12-31"), at("2025-01-02")}),
            (std::vector<std::string>{"Dec 31, 2024", "Jan 2, 2025"}));
  EXPECT_EQ(FormatDates({at("2025-03-14 09:30")}), (std::vector<std::string>{"2025-03-14 09:30"}));
}

TEST(BinEdgesTest, NiceStepsAtMostMaxbins) {
  EXPECT_EQ(BinEdges(0, 100, 20).size(), 21u);
  EXPECT_EQ(BinEdges(0, 100, 20)[1], 5);
  EXPECT_EQ(BinEdges(3, 97, 10), (std::vector<double>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(BinEdges(7, 7, 20).size(), 2u);  // one value still makes one bin around it
}

TEST(LabelLayoutTest, FlatWhenTheyFitRotatedThenThinned) {
  EXPECT_EQ(LayoutCategoryLabels({30, 30, 30}, 17, 100).angle_deg, 0);
  EXPECT_EQ(LayoutCategoryLabels({30, 30, 30}, 17, 100).step, 1);
  // 40 labels of 60px in 17.5px bands: rotated they need 17 + 2 between baselines, which is
  // two bands at sin 45, so every second label shows.
  const LabelLayout many = LayoutCategoryLabels(std::vector<double>(40, 60), 17, 17.5);
  EXPECT_EQ(many.angle_deg, -45);
  EXPECT_EQ(many.step, 2);
  // Short labels are thinned flat rather than rotated when that shows as many.
  const LabelLayout short_ones = LayoutCategoryLabels(std::vector<double>(40, 12), 17, 10);
  EXPECT_EQ(short_ones.angle_deg, 0);
  EXPECT_EQ(short_ones.step, 2);
}

}  // namespace
}  // namespace quarry::chart::internal
