// Tests of the verify gate's API that are no verdict on an answer (quarry/agent/verify.h): the
// names of the matching rules and the numbers ExtractNumbers reads in a text. What the gate
// accepts and refuses is data: tests/agent/gate/*.test, run by gate_suite_test.cc.
#include "quarry/agent/verify.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace quarry::agent {
namespace {

using Strings = std::vector<std::string>;

TEST(VerifyTest, MatchRuleNames) {
  EXPECT_EQ(MatchRuleName(MatchRule::kNone), "none");
  EXPECT_EQ(MatchRuleName(MatchRule::kVerbatim), "verbatim");
  EXPECT_EQ(MatchRuleName(MatchRule::kNumeric), "numeric");
  EXPECT_EQ(MatchRuleName(MatchRule::kRounding), "rounding");
  EXPECT_EQ(MatchRuleName(MatchRule::kPercent), "percent");
  EXPECT_EQ(MatchRuleName(MatchRule::kQuestion), "question");
}

TEST(VerifyTest, ExtractNumbersCurrencyThousandsAndPercent) {
  EXPECT_EQ(ExtractNumbers("Revenue was $1,234,567.89 and costs \u20ac2,500 or \u00a3300."),
            (Strings{"$1,234,567.89", "\u20ac2,500", "\u00a3300"}));
  EXPECT_EQ(ExtractNumbers("margin -3.5%, share 12.5 %, growth 7 percent"),
            (Strings{"-3.5%", "12.5 %", "7 percent"}));
  EXPECT_EQ(ExtractNumbers("up 3.5 percentage points"), (Strings{"3.5 percentage points"}));
  EXPECT_EQ(ExtractNumbers("a loss of -$42.10 and \u22125"), (Strings{"-$42.10", "\u22125"}));
}

TEST(VerifyTest, ExtractNumbersThousandsNeedWholeGroups) {
  EXPECT_EQ(ExtractNumbers("items 1, 2 and 3"), (Strings{"1", "2", "3"}));
  EXPECT_EQ(ExtractNumbers("1,23 and 12345,678"), (Strings{"1", "23", "12345", "678"}));
  EXPECT_EQ(ExtractNumbers("1,234,56"), (Strings{"1,234", "56"}));
}

TEST(VerifyTest, ExtractNumbersMagnitudeSuffixes) {
  EXPECT_EQ(ExtractNumbers("1.2M users, 3.4k and 3.4K rows, 2.1B, 2.1bn, $5 bn"),
            (Strings{"1.2M", "3.4k", "3.4K", "2.1B", "2.1bn", "$5 bn"}));
  EXPECT_EQ(ExtractNumbers("about 1.2 million, 2.1 billion and 3 thousand"),
            (Strings{"1.2 million", "2.1 billion", "3 thousand"}));
}

TEST(VerifyTest, ExtractNumbersKeepsIsoDatesWhole) {
  EXPECT_EQ(ExtractNumbers("from 2025-03-01 to 2025-03-31 12:30:00, month 2025-04."),
            (Strings{"2025-03-01", "2025-03-31 12:30:00", "2025-04"}));
  EXPECT_EQ(ExtractNumbers("at 2025-03-01T08:15:00Z"), (Strings{"2025-03-01T08:15:00Z"}));
  EXPECT_EQ(ExtractNumbers("fiscal 2024-2025"), (Strings{"2024", "2025"}));
}

TEST(VerifyTest, ExtractNumbersSkipsNumbersGluedToLetters) {
  EXPECT_EQ(ExtractNumbers("Q4 H2O 3rd 2nd COVID-19 v1.2 1.2.3 x_2 #1"), Strings{});
  EXPECT_EQ(ExtractNumbers("In Q4, 3rd place had 17 sales"), (Strings{"17"}));
}

TEST(VerifyTest, ExtractNumbersSentencePeriodSignsAndListMarkers) {
  EXPECT_EQ(ExtractNumbers("The total was 42."), (Strings{"42"}));
  EXPECT_EQ(ExtractNumbers("It was 42.5. Then -7 and +3."), (Strings{"42.5", "-7", "+3"}));
  EXPECT_EQ(ExtractNumbers("1. West: 10\n2. East: 8"), (Strings{"10", "8"}));
  EXPECT_EQ(ExtractNumbers("pandas says 1.234568e+06"), (Strings{"1.234568e+06"}));
  EXPECT_EQ(ExtractNumbers("(1,234) [5]"), (Strings{"1,234", "5"}));
}

}  // namespace
}  // namespace quarry::agent
