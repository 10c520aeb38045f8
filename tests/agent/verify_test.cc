// Tests for the verify gate (quarry/agent/verify.h): number extraction, each matching rule
// passing and failing, and whole answers checked against result cells.
#include "quarry/agent/verify.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace quarry::agent {
namespace {

using Strings = std::vector<std::string>;

class VerifyTest : public ::testing::Test {
 protected:
  void Cells(const Strings& cells) {
    for (const std::string& c : cells) evidence_.AddValue(c);
  }

  // Checks one supporting value (with no answer text) and returns its check.
  ValueCheck CheckValue(const std::string& value, std::string_view question = "") {
    VerifyReport report = Verify("", {value}, evidence_, question);
    EXPECT_EQ(report.checks.size(), 1u) << value;
    return report.checks.empty() ? ValueCheck{} : report.checks.front();
  }
  // The name of the rule that grounds `value`, so failures print readably.
  std::string_view Rule(const std::string& value, std::string_view question = "") {
    return MatchRuleName(CheckValue(value, question).rule);
  }

  Evidence evidence_;
};

TEST_F(VerifyTest, MatchRuleNames) {
  EXPECT_EQ(MatchRuleName(MatchRule::kNone), "none");
  EXPECT_EQ(MatchRuleName(MatchRule::kVerbatim), "verbatim");
  EXPECT_EQ(MatchRuleName(MatchRule::kNumeric), "numeric");
  EXPECT_EQ(MatchRuleName(MatchRule::kRounding), "rounding");
  EXPECT_EQ(MatchRuleName(MatchRule::kPercent), "percent");
  EXPECT_EQ(MatchRuleName(MatchRule::kQuestion), "question");
}

TEST_F(VerifyTest, ExtractNumbersCurrencyThousandsAndPercent) {
  EXPECT_EQ(ExtractNumbers("Revenue was $1,234,567.89 and costs \u20ac2,500 or \u00a3300."),
            (Strings{"$1,234,567.89", "\u20ac2,500", "\u00a3300"}));
  EXPECT_EQ(ExtractNumbers("margin -3.5%, share 12.5 %, growth 7 percent"),
            (Strings{"-3.5%", "12.5 %", "7 percent"}));
  EXPECT_EQ(ExtractNumbers("a loss of -$42.10 and \u22125"), (Strings{"-$42.10", "\u22125"}));
}

TEST_F(VerifyTest, ExtractNumbersThousandsNeedWholeGroups) {
  EXPECT_EQ(ExtractNumbers("items 1, 2 and 3"), (Strings{"1", "2", "3"}));
  EXPECT_EQ(ExtractNumbers("1,23 and 12345,678"), (Strings{"1", "23", "12345", "678"}));
  EXPECT_EQ(ExtractNumbers("1,234,56"), (Strings{"1,234", "56"}));
}

TEST_F(VerifyTest, ExtractNumbersMagnitudeSuffixes) {
  EXPECT_EQ(ExtractNumbers("1.2M users, 3.4k and 3.4K rows, 2.1B, 2.1bn, $5 bn"),
            (Strings{"1.2M", "3.4k", "3.4K", "2.1B", "2.1bn", "$5 bn"}));
  EXPECT_EQ(ExtractNumbers("about 1.2 million, 2.1 billion and 3 thousand"),
            (Strings{"1.2 million", "2.1 billion", "3 thousand"}));
}

TEST_F(VerifyTest, ExtractNumbersKeepsIsoDatesWhole) {
  EXPECT_EQ(ExtractNumbers("from 2025-03-01 to 2025-03-31 12:30:00, month 2025-04."),
            (Strings{"2025-03-01", "2025-03-31 12:30:00", "2025-04"}));
  EXPECT_EQ(ExtractNumbers("at 2025-03-01T08:15:00Z"), (Strings{"2025-03-01T08:15:00Z"}));
  EXPECT_EQ(ExtractNumbers("fiscal 2024-2025"), (Strings{"2024", "2025"}));
}

TEST_F(VerifyTest, ExtractNumbersSkipsNumbersGluedToLetters) {
  EXPECT_EQ(ExtractNumbers("Q4 H2O 3rd 2nd COVID-19 v1.2 1.2.3 x_2 #1"), Strings{});
  EXPECT_EQ(ExtractNumbers("In Q4, 3rd place had 17 sales"), (Strings{"17"}));
}

TEST_F(VerifyTest, ExtractNumbersSentencePeriodSignsAndListMarkers) {
  EXPECT_EQ(ExtractNumbers("The total was 42."), (Strings{"42"}));
  EXPECT_EQ(ExtractNumbers("It was 42.5. Then -7 and +3."), (Strings{"42.5", "-7", "+3"}));
  EXPECT_EQ(ExtractNumbers("1. West: 10\n2. East: 8"), (Strings{"10", "8"}));
  EXPECT_EQ(ExtractNumbers("pandas says 1.234568e+06"), (Strings{"1.234568e+06"}));
  EXPECT_EQ(ExtractNumbers("(1,234) [5]"), (Strings{"1,234", "5"}));
}

TEST_F(VerifyTest, VerbatimTextIgnoresCaseQuotesAndWhitespace) {
  Cells({"west", "North  America", "NULL"});
  EXPECT_EQ(Rule("West"), "verbatim");
  EXPECT_EQ(Rule("  \"north america\" "), "verbatim");
  ValueCheck check = CheckValue("WEST");
  EXPECT_EQ(check.matched, "west");
  EXPECT_EQ(check.origin, "supporting_values");
}

TEST_F(VerifyTest, VerbatimTextIsNotGroundedByPartOfACell) {
  Cells({"Northwest", "Eastern Europe"});
  EXPECT_EQ(Rule("West"), "none");
  EXPECT_EQ(Rule("Eastern"), "none");
  EXPECT_EQ(Rule("Antarctica"), "none");
}

TEST_F(VerifyTest, VerbatimTextFromFreeTextAtWordBoundaries) {
  evidence_.AddText("region   revenue\nWest     1234567.89\nNorthEast 99\n");
  ValueCheck check = CheckValue("west");
  EXPECT_EQ(MatchRuleName(check.rule), "verbatim");
  EXPECT_NE(check.matched.find("west"), std::string::npos);
  EXPECT_EQ(Rule("East"), "none");  // only inside "NorthEast"
  EXPECT_EQ(Rule("South"), "none");
}

TEST_F(VerifyTest, VerbatimNumbersIgnoreCurrencyAndThousands) {
  Cells({"1234567.89", "2025-03-01 00:00:00"});
  ValueCheck check = CheckValue("$1,234,567.89");
  EXPECT_EQ(MatchRuleName(check.rule), "verbatim");
  EXPECT_EQ(check.matched, "1234567.89");
  EXPECT_EQ(Rule("2025-03-01"), "verbatim");  // a date grounds by prefix
  EXPECT_EQ(Rule("2025-03"), "verbatim");
  EXPECT_EQ(Rule("2025"), "verbatim");  // a year within a date cell
  EXPECT_EQ(Rule("2025-03-02"), "none");
  EXPECT_EQ(Rule("2024"), "none");
}

TEST_F(VerifyTest, NumericWithinRelativeTolerance) {
  Cells({"1234567.8900004", "0.0", "-17.25"});
  EXPECT_EQ(Rule("1234567.89"), "numeric");
  EXPECT_EQ(Rule("0.0"), "verbatim");
  EXPECT_EQ(Rule("0"), "numeric");
  EXPECT_EQ(Rule("0.000"), "numeric");
  EXPECT_EQ(Rule("-17.250"), "numeric");
  EXPECT_EQ(Rule("1246913.57"), "none");  // 1% too high
  EXPECT_EQ(Rule("1222222.21"), "none");  // 1% too low
}

TEST_F(VerifyTest, RoundingAtTheWrittenPrecisionPasses) {
  Cells({"0.44705882352941176", "1234.4", "12.04", "1234567", "3391", "2083000000", "-3.46"});
  ValueCheck check = CheckValue("0.4471");
  EXPECT_EQ(MatchRuleName(check.rule), "rounding");
  EXPECT_EQ(check.matched, "0.44705882352941176");
  EXPECT_EQ(Rule("0.45"), "rounding");
  EXPECT_EQ(Rule("0.447"), "rounding");
  EXPECT_EQ(Rule("1,234"), "rounding");
  EXPECT_EQ(Rule("12.0"), "rounding");
  EXPECT_EQ(Rule("1.2M"), "rounding");
  EXPECT_EQ(Rule("1.2 million"), "rounding");
  EXPECT_EQ(Rule("$1.23M"), "rounding");
  EXPECT_EQ(Rule("3.4k"), "rounding");
  EXPECT_EQ(Rule("3.4K"), "rounding");
  EXPECT_EQ(Rule("2.1bn"), "rounding");
  EXPECT_EQ(Rule("2.1 billion"), "rounding");
  EXPECT_EQ(Rule("-3.5"), "rounding");
}

TEST_F(VerifyTest, RoundingHalfEitherWayAtTheBoundary) {
  Cells({"0.125", "2.5"});
  EXPECT_EQ(Rule("0.12"), "rounding");
  EXPECT_EQ(Rule("0.13"), "rounding");
  EXPECT_EQ(Rule("2"), "rounding");
  EXPECT_EQ(Rule("3"), "rounding");
}

TEST_F(VerifyTest, WrongRoundingFails) {
  Cells({"0.447", "12.06", "1234567", "-3.46"});
  EXPECT_EQ(Rule("0.44"), "none");
  EXPECT_EQ(Rule("12.0"), "none");  // d=1 means 12.06 rounds to 12.1
  EXPECT_EQ(Rule("1.3M"), "none");
  EXPECT_EQ(Rule("1,234,000"), "none");  // written to the unit, not the thousand
  EXPECT_EQ(Rule("+3.5"), "none");       // an explicit sign must agree
  evidence_ = Evidence();
  Cells({"0.47"});
  EXPECT_EQ(Rule("0.4"), "none");
  EXPECT_EQ(Rule("0.5"), "rounding");
}

TEST_F(VerifyTest, UnsignedSupportingValueMatchesEitherSign) {
  // The answer's words carry the direction; a supporting value only cites the result.
  Cells({"-0.05", "-1200"});
  EXPECT_EQ(Rule("5%"), "percent");
  EXPECT_EQ(Rule("1,200"), "numeric");
  EXPECT_EQ(Rule("-1,200.0"), "numeric");
}

TEST_F(VerifyTest, PercentAndProportionConvert) {
  Cells({"0.44705882352941176", "12.5"});
  ValueCheck check = CheckValue("44.71%");
  EXPECT_EQ(MatchRuleName(check.rule), "percent");
  EXPECT_EQ(check.matched, "0.44705882352941176");
  EXPECT_EQ(Rule("44.7%"), "percent");
  EXPECT_EQ(Rule("45%"), "percent");
  EXPECT_EQ(Rule("44.71 percent"), "percent");
  EXPECT_EQ(Rule("0.125"), "percent");  // a proportion of the percentage 12.5
  EXPECT_EQ(Rule("12.5%"), "numeric");  // the percentage itself
}

TEST_F(VerifyTest, PercentWhoseProportionIsAbsentFails) {
  Cells({"0.44705882352941176", "12.5"});
  EXPECT_EQ(Rule("44.70%"), "none");  // wrong rounding of 44.7059
  EXPECT_EQ(Rule("46%"), "none");
  EXPECT_EQ(Rule("0.14"), "none");  // 14 is not 12.5
  EXPECT_EQ(Rule("0.1251"), "none");
}

TEST_F(VerifyTest, ValuesFromTheQuestionAreGrounded) {
  Cells({"West"});
  const std::string question = "Which of the top 5 regions grew fastest since 2024-01-01, East?";
  EXPECT_EQ(Rule("5", question), "question");
  EXPECT_EQ(Rule("5.0", question), "question");
  EXPECT_EQ(Rule("2024-01-01", question), "question");
  EXPECT_EQ(Rule("2024", question), "question");
  ValueCheck check = CheckValue("east", question);
  EXPECT_EQ(MatchRuleName(check.rule), "question");
  EXPECT_NE(check.matched.find("east"), std::string::npos);
  EXPECT_EQ(Rule("6", question), "none");
  EXPECT_EQ(Rule("grew fast", question), "none");  // not at a word boundary
}

TEST_F(VerifyTest, MixedValueNeedsEveryNumberGrounded) {
  Cells({"West", "1234567.89", "1097393.68"});
  ValueCheck check = CheckValue("West: 1,234,567.89");
  EXPECT_EQ(MatchRuleName(check.rule), "verbatim");
  EXPECT_EQ(check.matched, "1234567.89");
  check = CheckValue("$1.2M vs $1.1M");
  EXPECT_EQ(MatchRuleName(check.rule), "rounding");
  EXPECT_EQ(check.matched, "1234567.89; 1097393.68");
  EXPECT_EQ(Rule("West: 1,234,567.89, East: 9,999"), "none");
  EXPECT_EQ(Rule("Q4"), "none");  // digits only glued: checked as text
  Cells({"Q4"});
  EXPECT_EQ(Rule("q4"), "verbatim");
}

TEST_F(VerifyTest, NumbersInFreeTextAreEvidence) {
  evidence_.AddText("mean revenue: 1.234568e+06\nshare of West: 44.705882%\nrows: 12.\n");
  EXPECT_EQ(Rule("1.23M"), "rounding");
  EXPECT_EQ(Rule("44.71%"), "rounding");
  EXPECT_EQ(Rule("0.4471"), "percent");
  EXPECT_EQ(Rule("12"), "verbatim");
  EXPECT_EQ(Rule("13"), "none");
}

TEST_F(VerifyTest, EmptySupportingValuesAreSkipped) {
  Cells({"1"});
  VerifyReport report = Verify("", {"", "  \"\" "}, evidence_, "");
  EXPECT_TRUE(report.checks.empty());
  EXPECT_TRUE(report.grounded());
}

TEST_F(VerifyTest, ReportListsUnsupportedOnceInFirstSeenOrder) {
  Cells({"West", "10"});
  VerifyReport report = Verify("West had 10, then 11, then 99, then 11 again.",
                               {"West", "99", "Mars"}, evidence_, "");
  ASSERT_EQ(report.checks.size(), 7u);
  EXPECT_EQ(report.checks[3].origin, "answer_text");
  EXPECT_EQ(report.checks[3].value, "10");
  EXPECT_TRUE(report.checks[3].grounded());
  EXPECT_FALSE(report.grounded());
  EXPECT_EQ(report.unsupported(), (Strings{"99", "Mars", "11"}));
}

TEST_F(VerifyTest, EndToEndGroundedAnswer) {
  Cells({"region", "revenue", "pct_ahead", "West", "1234567.89", "0.125", "East", "1097393.68",
         "0.0"});
  const std::string answer =
      "West leads with $1,234,567.89 in revenue, 12.5% ahead of East ($1,097,393.68).";
  VerifyReport report = Verify(answer, {"West", "1234567.89", "12.5%", "East: $1,097,393.68"},
                               evidence_, "Which region has the highest revenue, and by how much?");
  ASSERT_EQ(report.checks.size(), 7u);
  EXPECT_TRUE(report.grounded());
  EXPECT_TRUE(report.unsupported().empty());
  EXPECT_EQ(MatchRuleName(report.checks[2].rule), "percent");
  EXPECT_EQ(MatchRuleName(report.checks[3].rule), "verbatim");
  EXPECT_EQ(report.checks[4].value, "$1,234,567.89");
  EXPECT_EQ(MatchRuleName(report.checks[4].rule), "verbatim");
  EXPECT_EQ(report.checks[5].value, "12.5%");
  EXPECT_EQ(report.checks[5].matched, "0.125");
  EXPECT_EQ(report.checks[6].value, "$1,097,393.68");
  EXPECT_EQ(report.checks[6].origin, "answer_text");
}

TEST_F(VerifyTest, EndToEndHallucinatedNumbersAreUnsupported) {
  Cells({"West", "1234567.89", "0.125", "East", "1097393.68"});
  const std::string answer =
      "West leads with $1,234,567.89 in revenue, 14% ahead of East ($1,097,393.68), "
      "and North trails at $850,000.";
  VerifyReport report =
      Verify(answer, {"West", "North", "14%"}, evidence_, "Which region sells the most?");
  EXPECT_FALSE(report.grounded());
  EXPECT_EQ(report.unsupported(), (Strings{"North", "14%", "$850,000"}));
}

TEST_F(VerifyTest, PercentagePointsAreAPercentOfADifference) {
  Cells({"0.48113"});
  EXPECT_TRUE(Verify("a gap of 48.11 percentage points", {}, evidence_, "").grounded());
  EXPECT_TRUE(Verify("a gap of 48.1 pp", {}, evidence_, "").grounded());
  EXPECT_FALSE(Verify("a gap of 48.2 percentage points", {}, evidence_, "").grounded());
  EXPECT_EQ(ExtractNumbers("up 3.5 percentage points"), std::vector<std::string>{"3.5 percentage points"});
}

TEST_F(VerifyTest, GluedUnitsStillStateTheirNumber) {
  Cells({"7.1", "0.5"});
  EXPECT_TRUE(Verify("North is 7.1x the size of East", {}, evidence_, "").grounded());
  EXPECT_FALSE(Verify("North is 9x the size of East", {}, evidence_, "").grounded());
  EXPECT_TRUE(Verify("50pct of orders", {}, evidence_, "").grounded());
  EXPECT_FALSE(Verify("60pct of orders", {}, evidence_, "").grounded());
  EXPECT_TRUE(Verify("the 3rd region", {}, evidence_, "").grounded());  // an ordinal
}

}  // namespace
}  // namespace quarry::agent
