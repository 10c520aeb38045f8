// Tests of the verify gate's API that are no verdict on an answer (quarry/agent/verify.h): the
// names of the matching rules, the numbers ExtractNumbers reads in a text (and the times of day
// its scanner reads), and what a column's name says it holds. What the gate accepts and
// refuses is data: tests/agent/gate/*.test, run by gate_suite_test.cc.
#include "quarry/agent/verify.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quarry/agent/verify/internal.h"

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

TEST(VerifyTest, ExtractNumbersWrittenAsWords) {
  EXPECT_EQ(ExtractNumbers("two thousand orders, a dozen regions, half of them"),
            (Strings{"two thousand", "a dozen", "half"}));
  EXPECT_EQ(ExtractNumbers("twenty-one, three hundred and five, two thirds of sales"),
            (Strings{"twenty-one", "three hundred and five", "two thirds"}));
  // Not claims: a lone "one", ordinals and periods.
  EXPECT_EQ(ExtractNumbers("one of the regions in the first half of the third quarter"), Strings{});
}

TEST(VerifyTest, ExtractNumbersMultipliers) {
  EXPECT_EQ(ExtractNumbers("it doubled, then halved, and grew 3x or 4 times"),
            (Strings{"doubled", "halved", "3x", "4"}));
}

TEST(VerifyTest, RoleOfColumnByName) {
  for (const char* id : {"id", "order_id", "CustomerId", "CustomerID", "InvoiceLineId", "order_no",
                         "zip_code", "row_number", "rn", "rank", "row_number() OVER ()", "pk"}) {
    EXPECT_EQ(RoleOfColumn(id), ColumnRole::kIdentifier) << id;
  }
  for (const char* measure : {"revenue", "paid", "valid", "n_orders", "total_number",
                              "idle_minutes", "count_star()", "avg_id_length_x", "year"}) {
    EXPECT_EQ(RoleOfColumn(measure), ColumnRole::kMeasure) << measure;
  }
  EXPECT_EQ(RoleOfColumn("Cust"), ColumnRole::kMeasure);
  EXPECT_EQ(RoleOfColumn("Cust", {"cust"}), ColumnRole::kIdentifier);
  EXPECT_EQ(DirectionOfColumn("drop_pct"), -1);
  EXPECT_EQ(DirectionOfColumn("download_count"), 1);  // "down" only as a whole word
  EXPECT_EQ(DirectionOfColumn("rel_diff"), 1);
}

// Adjectives are not multiples.
TEST(VerifyTest, ExtractNumbersSkipsAdjectivesOfMultiples) {
  EXPECT_EQ(ExtractNumbers("double quotes, a triple join, double-check"), Strings{});
}

TEST(VerifyTest, ExtractNumbersMonthNames) {
  EXPECT_EQ(ExtractNumbers("in March 2025 and on Mar 12, 2025, but may 3 times"),
            (Strings{"March 2025", "Mar 12, 2025", "3"}));
}

// Found by fuzzing (CI): a digit run longer than any date part before a dotted date threw
// std::out_of_range from stoi and took the process down.
TEST(VerifyTest, ExtractNumbersLongDigitRunBeforeDotsIsNoDateAndNoCrash) {
  EXPECT_NO_THROW(ExtractNumbers("North-2222222222222222222.97.14 from customer #4."));
  EXPECT_NO_THROW(ExtractNumbers("99999999999/12/2025 and 123456789012345678901234567890.1.2025"));
  for (const std::string& n : ExtractNumbers("ID 2222222222222222222.97.14 closed.")) {
    EXPECT_EQ(n.find('-'), std::string::npos) << n;  // read as no date key
  }
}

// Times of day read as times (key "HH:MM" in 24 hours), and what only looks like one does not.
TEST(ClockTimeTest, TimesOfDayAreReadAndNumbersThatLookLikeThemAreNot) {
  auto keys = [](std::string_view text) {
    Strings out;
    for (const auto& t : internal::Scan(text, /*words=*/true)) {
      out.push_back((t.is_time   ? "time "
                     : t.is_date ? "date "
                                 : "number ") +
                    (t.is_date ? t.key : t.text));
    }
    return out;
  };
  EXPECT_EQ(keys("It began at 23:00 and ended at 23:45:10."),
            (Strings{"time 23:00", "time 23:45:10"}));
  EXPECT_EQ(keys("at 11 PM, at 9:30 am, at 12 a.m., at 12pm"),
            (Strings{"time 23:00", "time 09:30", "time 00:00", "time 12:00"}));
  EXPECT_EQ(keys("13 PM, 24:00, 9:60, 12:30:45:10"),
            (Strings{"number 13", "number 24", "number 00", "number 9", "number 60", "number 12",
                     "number 30", "number 45", "number 10"}));
  EXPECT_EQ(keys("11 pmt and 11 people"), (Strings{"number 11", "number 11"}));
  // "Mars-2025" is one word.
  EXPECT_EQ(keys("on 14-Mar-2025, not 14-Mars-2025"), (Strings{"date 2025-03-14", "number 14"}));
  EXPECT_EQ(keys("2025-03-14 23:00:00"), (Strings{"date 2025-03-14 23:00:00"}));
}

}  // namespace
}  // namespace quarry::agent
