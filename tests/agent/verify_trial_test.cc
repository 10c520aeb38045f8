// The verify gate against the kinds of answers a new-user trial found it misjudging: false
// answers it believed (zeros from nothing, fractions from row counts, percents off by 100,
// whole units lost to a relative tolerance, literals the query wrote, decrease words it did
// not know, references grounded by measures, month names) and honest ones it refused
// (comparisons by "trails"/"beats"/"a gap of", lists sharing a verb, hedged roundings).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "quarry/agent/verify.h"
#include "quarry/agent/verify/internal.h"

namespace quarry::agent {
namespace {

using Strings = std::vector<std::string>;
using Rows = std::vector<std::vector<std::optional<std::string>>>;

class TrialTest : public ::testing::Test {
 protected:
  void Result(const Strings& columns, const Rows& rows, const std::string& sql = "SELECT ... FROM t") {
    evidence_.AddResult({++step_, "run_sql", sql, static_cast<int64_t>(rows.size())}, columns,
                        rows);
  }
  bool Grounded(const std::string& answer, std::string_view question = "") {
    return Verify(answer, {}, evidence_, question).grounded();
  }
  Evidence evidence_;
  int step_ = 1;
};

TEST_F(TrialTest, ZeroIsGroundedOnlyByAZero) {
  Result({"revenue_2024"}, {{"1150000"}});
  EXPECT_FALSE(Grounded("0 accounts churned."));
  EXPECT_FALSE(Grounded("Acme had $0 revenue last year."));
  Result({"revenue"}, {{std::nullopt}});  // NULL is not a number
  EXPECT_FALSE(Grounded("Delta Co had $0 revenue last year."));
  Result({"churned"}, {{"0"}});
  EXPECT_TRUE(Grounded("0 accounts churned."));
  EXPECT_TRUE(Grounded("Zero accounts churned."));
}

// Issue 23: "its revenue doubled" after a query that only counted orders was accepted. A
// multiplier states a ratio, as "twice" does: a result must hold it.
TEST_F(TrialTest, MultiplierClaimsNeedARatioInAResult) {
  Result({"region", "orders"}, {{"West", "412"}});
  EXPECT_FALSE(Grounded("The West has 412 orders, and its revenue doubled from 2024 to 2025."));
  for (const char* claim : {"Its revenue tripled.", "Its revenue quadrupled.", "Its revenue halved.",
                            "Revenue grew 3x.", "Revenue grew 3 times over.", "Revenue grew 2.5-fold.",
                            "Revenue grew threefold.", "Revenue was \u00d7" "2 higher."}) {
    EXPECT_FALSE(Grounded(claim)) << claim;
  }
  EXPECT_TRUE(Grounded("The West has 412 orders."));
  // Adjectives are not multiples.
  EXPECT_EQ(ExtractNumbers("double quotes, a triple join, double-check"), Strings{});
}

// Found by fuzzing (CI): a digit run longer than any date part before a dotted date threw
// std::out_of_range from stoi and took the process down.
TEST_F(TrialTest, ALongDigitRunBeforeDotsIsNoDateAndNoCrash) {
  Result({"total"}, {{"2222222222222222222.97"}});
  EXPECT_NO_THROW(ExtractNumbers("North-2222222222222222222.97.14 from customer #4."));
  EXPECT_NO_THROW(ExtractNumbers("99999999999/12/2025 and 123456789012345678901234567890.1.2025"));
  for (const std::string& n : ExtractNumbers("ID 2222222222222222222.97.14 closed.")) {
    EXPECT_EQ(n.find('-'), std::string::npos) << n;  // read as no date key
  }
  EXPECT_TRUE(Grounded("The total was 31.03.2025.") == false);
}

// Times of day read as times (key "HH:MM" in 24 hours), and what only looks like one does not.
TEST(ClockTimeTest, TimesOfDayAreReadAndNumbersThatLookLikeThemAreNot) {
  auto keys = [](std::string_view text) {
    Strings out;
    for (const auto& t : internal::Scan(text, /*words=*/true)) {
      out.push_back((t.is_time ? "time " : t.is_date ? "date " : "number ") +
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
  EXPECT_EQ(keys("on 14-Mar-2025, not 14-Mars-2025"), (Strings{"date 2025-03-14", "number 14"}));  // "Mars-2025" is one word
  EXPECT_EQ(keys("2025-03-14 23:00:00"), (Strings{"date 2025-03-14 23:00:00"}));
}

TEST_F(TrialTest, RowCountsGroundOnlyPlainWholeNumbers) {
  Result({"max_revenue"}, {{"2226550.25"}});  // 1 row
  EXPECT_FALSE(Grounded("Half of the accounts churned."));
  EXPECT_FALSE(Grounded("100% of accounts are active."));
  EXPECT_FALSE(Grounded("North sold twice as much."));
  Rows six(6, {std::string("x")});
  Result({"name"}, six);
  EXPECT_FALSE(Grounded("600% of accounts are active."));
  EXPECT_TRUE(Grounded("There are 6 accounts."));
  Result({"active", "total"}, {{"3", "6"}});
  EXPECT_FALSE(Grounded("Two thirds of accounts are active."));
  Result({"north_share"}, {{"0.2811"}});
  EXPECT_FALSE(Grounded("North has nearly half of revenue."));
}

TEST_F(TrialTest, PercentScaleFollowsTheColumnName) {
  Result({"north_share", "pct_change"}, {{"0.2811", "8.4"}});
  EXPECT_FALSE(Grounded("North's share is 0.28%."));
  EXPECT_TRUE(Grounded("North's share is 28%."));
  EXPECT_TRUE(Grounded("North's share is 28.11%."));
  EXPECT_FALSE(Grounded("Birch grew 840%."));
  EXPECT_TRUE(Grounded("Birch grew 8.4%."));
}

TEST_F(TrialTest, ExactValuesKeepEveryWrittenDigit) {
  Result({"revenue", "total", "big", "inf_col"},
         {{"1150000", "2226550.25", "123456789012345678", "inf"}});
  EXPECT_FALSE(Grounded("Acme had $1,150,001."));
  EXPECT_TRUE(Grounded("Acme had $1,150,000."));
  EXPECT_FALSE(Grounded("The total is $2,226,551.25."));
  EXPECT_FALSE(Grounded("The total is $2,226,550.27."));
  EXPECT_TRUE(Grounded("The total is $2,226,550.25."));
  EXPECT_FALSE(Grounded("The id sum is 123456789012345600."));
  EXPECT_TRUE(Grounded("The id sum is 123456789012345678."));
  EXPECT_FALSE(Grounded("It reached 1e400."));
}

TEST_F(TrialTest, LiteralsAreEchoesWhereverTheQueryWritesThem) {
  Result({"total"}, {{"2226550.25"}, {"999999"}},
         "SELECT sum(revenue) FROM accounts UNION ALL SELECT 999999");
  EXPECT_FALSE(Grounded("Total revenue was $999,999."));
  EXPECT_TRUE(Grounded("Total revenue was $2,226,550.25."));
  Result({"total_revenue"}, {{"888888"}}, "SELECT 888888 AS total_revenue FROM accounts LIMIT 1");
  EXPECT_FALSE(Grounded("Total revenue was $888,888."));
  Result({"y", "n"}, {{"2025", "1000"}}, "SELECT 2025 AS y, count(*) AS n FROM t WHERE x > 1000");
  EXPECT_TRUE(Grounded("In 2025 there were 1000 large orders."));  // years and round thresholds
}

// Issue 23, the live sensors run: -999 is a value the query compares with (a sentinel in an
// IN list), and avg() over those rows returned -999.0 from the data; a literal the query
// produces stays an echo whatever else it compares.
TEST_F(TrialTest, ALiteralTheQueryComparesWithIsNotAnEcho) {
  Result({"avg_try_cast_only", "n_sentinel"}, {{"-999.0", "33"}},
         "WITH t AS (SELECT trim(temperature) IN ('N/A', '-999', '') AS is_missing, temperature "
         "FROM sensors) SELECT round(avg(TRY_CAST(temperature AS DOUBLE)), 2) AS avg_try_cast_only, "
         "count(*) FILTER (WHERE trim(temperature) = '-999') AS n_sentinel FROM t");
  EXPECT_TRUE(Grounded("A plain cast parses only the 33 sentinel rows, giving an average of -999.0."));
  Result({"n"}, {{"412"}}, "SELECT count(*) AS n FROM orders WHERE amount BETWEEN 250 AND 999999");
  EXPECT_TRUE(Grounded("412 orders."));
  // Compared and produced: still the query's own number.
  Result({"total"}, {{"777777"}}, "SELECT 777777 AS total FROM sales WHERE revenue > 777777");
  EXPECT_FALSE(Grounded("Total revenue is $777,777."));
  Result({"total"}, {{"666666"}}, "SELECT coalesce(max(revenue), 666666) AS total FROM sales "
                                  "WHERE region IN ('North')");
  EXPECT_FALSE(Grounded("Total revenue is $666,666."));
}

// Issue 23: "(F - 32) * 5 / 9" is the conversion the answer explains, not three results; a
// constant the code used grounds as the answer's definition. A figure no code wrote does not,
// and neither does a formula's result stated as a claim.
TEST_F(TrialTest, AFormulasConstantsAreTheAnswersDefinition) {
  Result({"clean_avg_c"}, {{"21.13"}},
         "SELECT round(avg(CASE WHEN is_f THEN (v - 32) * 5 / 9 ELSE v END), 2) AS clean_avg_c "
         "FROM t");
  EXPECT_TRUE(Grounded("Converted with (F - 32) * 5 / 9, the average is 21.13 °C."));
  EXPECT_TRUE(Grounded("Converted with (F - 32) × 5 ÷ 9, the average is 21.13 °C."));
  EXPECT_FALSE(Grounded("Converted with (F - 40) * 5 / 9, the average is 21.13 °C."));
  EXPECT_FALSE(Grounded("The average is 32 °C."));  // 32 stated as a result, not an operand
  Result({"ms"}, {{"5"}}, "SELECT count(*) AS ms FROM track WHERE ms / 1000 > 300");
  EXPECT_TRUE(Grounded("Durations are ms / 1000 seconds; 5 tracks run longer."));
}

TEST_F(TrialTest, DecreaseWordsNeedANegativeValue) {
  Result({"birch_change"}, {{"8.4"}});
  for (const char* answer : {"Birch contracted 8.4%.", "Birch tumbled 8.4%.", "Birch dipped 8.4%.",
                             "Birch sank 8.4%.", "Birch did 8.4% worse.",
                             "Birch had a negative change of 8.4%.", "Birch changed by minus 8.4%."}) {
    EXPECT_FALSE(Grounded(answer)) << answer;
  }
  Result({"echo_change"}, {{"-25"}});
  EXPECT_TRUE(Grounded("Echo contracted 25%."));
  EXPECT_TRUE(Grounded("Echo had a negative change of 25%."));
}

TEST_F(TrialTest, AListSharesItsDirection) {
  Result({"birch", "echo"}, {{"8.4", "25"}});
  EXPECT_FALSE(Grounded("Revenue fell at Birch and Echo by 8.4% and 25% respectively."));
  EXPECT_TRUE(Grounded("Revenue rose at Birch and Echo by 8.4% and 25% respectively."));
  Result({"acme", "cobalt", "foxtrot"}, {{"-4.17", "-20", "-50"}});
  EXPECT_TRUE(Grounded("Revenue fell at Acme, Cobalt and Foxtrot by 4.17%, 20% and 50%."));
}

TEST_F(TrialTest, ComparisonsOfTwoThingsGroundEitherSign) {
  Result({"central_minus_north"}, {{"-83217.99"}});
  EXPECT_TRUE(Grounded("Central trails North by $83,217.99."));
  EXPECT_TRUE(Grounded("North beats Central by $83,217.99."));
  EXPECT_TRUE(Grounded("North is ahead, a gap of $83,217.99."));
  EXPECT_TRUE(Grounded("Central's revenue is $83,217.99 lower."));
  EXPECT_FALSE(Grounded("Central's revenue is $83,217.99 higher."));
}

TEST_F(TrialTest, AReferenceIsGroundedByAnIdentifier) {
  Result({"qty"}, {{"17"}});
  EXPECT_FALSE(Grounded("Customer 17 placed the order with the most items."));
  EXPECT_TRUE(Grounded("The largest order had 17 items."));
  Result({"customer_id", "qty"}, {{"4", "17"}});
  EXPECT_TRUE(Grounded("Customer 4 placed the order with the most items: 17."));
  EXPECT_TRUE(Grounded("Customer IDs: 4."));
}

// Issue 23, a live Spider run: "What are the id and names of the countries ...?" answered "1 usa,
// 2 germany, 4 japan and 5 italy" from exactly those rows was refused twice. An id is grounded
// as what it is where the question asks for ids or where it stands beside the entity it names;
// an id stated as a count or an amount stays refused.
TEST_F(TrialTest, AnIdIsGroundedWhereAskedForOrBesideItsEntity) {
  Result({"CountryId", "CountryName"}, {{"1", "usa"}, {"2", "germany"}, {"4", "japan"}, {"5", "italy"}});
  const char* question = "What are the id and names of the countries which have more than 3 car "
                         "makers or produce the 'fiat' model?";
  EXPECT_TRUE(Grounded("Four countries qualify: 1 usa, 2 germany, 4 japan and 5 italy.", question));
  // Beside the name, whatever the question: "CountryId 1 = usa", "usa (1)".
  EXPECT_TRUE(Grounded("Four countries qualify: 1 usa, 2 germany, 4 japan and 5 italy."));
  EXPECT_TRUE(Grounded("CountryId 1 = usa and CountryId 5 = italy."));
  EXPECT_TRUE(Grounded("They are usa (1) and japan (4)."));
  // An id as a count or an amount, asked for or not.
  EXPECT_FALSE(Grounded("There are 5 countries.", question));
  EXPECT_FALSE(Grounded("Italy sold $5 of cars.", question));
  EXPECT_FALSE(Grounded("5 makers qualify."));
  // Not beside a name of the same result.
  EXPECT_FALSE(Grounded("The answer is 2."));  // (4 is the row count)
  Result({"area_code"}, {{"212"}, {"718"}});
  EXPECT_TRUE(Grounded("Voters voted in area codes 212 and 718.",
                       "List the area codes in which voters voted."));
  EXPECT_FALSE(Grounded("212 voters voted.", "List the area codes in which voters voted."));
}

TEST_F(TrialTest, MonthNamesAreDates) {
  Result({"month", "total"}, {{"2025-12-01", "10"}});
  EXPECT_FALSE(Grounded("March 2025 was the best month."));
  EXPECT_TRUE(Grounded("December 2025 was the best month."));
  EXPECT_TRUE(Grounded("Dec 2025 was the best month."));
  Result({"day"}, {{"2025-03-12 00:00:00"}});
  EXPECT_TRUE(Grounded("The peak came on March 12, 2025."));
  EXPECT_FALSE(Grounded("The peak came on March 13, 2025."));
  EXPECT_EQ(ExtractNumbers("in March 2025 and on Mar 12, 2025, but may 3 times"),
            (Strings{"March 2025", "Mar 12, 2025", "3"}));
}

// Issue 23: a text cell holds 'September 24, 2007' and "aired on September 24, 2007" was refused
// ("no date in any result starts with 2007-09-24"); so were 'Oct 1 2007' and 'Jan 2000'.
TEST_F(TrialTest, DatesGroundAsTheDataWritesThem) {
  Result({"title", "air_date"}, {{"Pilot", "September 24, 2007"}, {"Homecoming", "Oct 1 2007"},
                                 {"Finale", "Jan 2000"}});
  EXPECT_TRUE(Grounded("Pilot aired on September 24, 2007."));
  EXPECT_TRUE(Grounded("Pilot aired in September 2007."));
  EXPECT_TRUE(Grounded("Homecoming aired on October 1, 2007."));
  EXPECT_TRUE(Grounded("Finale aired in January 2000."));
  EXPECT_FALSE(Grounded("Pilot aired on September 25, 2007."));
  EXPECT_FALSE(Grounded("Finale aired in February 2000."));
}

TEST_F(TrialTest, AValueCellLeadsWithItsNumber) {
  Result({"note", "amount"}, {{"pay 999999 now", "USD 1,234"}});
  EXPECT_FALSE(Grounded("Total revenue is $999,999."));
  EXPECT_TRUE(Grounded("The amount is $1,234."));
}

TEST_F(TrialTest, HedgedRoundsAndFractionsOfAmounts) {
  Result({"north_share", "customers", "orders", "total"}, {{"0.2811", "382", "2065", "504488.21"}});
  EXPECT_TRUE(Grounded("North has roughly 30% of revenue."));
  EXPECT_FALSE(Grounded("North has roughly 40% of revenue."));
  EXPECT_TRUE(Grounded("Nearly 400 customers bought."));
  EXPECT_TRUE(Grounded("About 380 customers bought."));
  EXPECT_FALSE(Grounded("380 customers bought."));  // unhedged, every digit counts
  EXPECT_TRUE(Grounded("Over 2,000 orders came in."));
  EXPECT_TRUE(Grounded("Revenue was half a million dollars."));
}

TEST_F(TrialTest, BoundsMustHoldOfTheValue) {
  Result({"total", "orders", "share"}, {{"504488.21", "2065", "0.46"}});
  EXPECT_FALSE(Grounded("Total revenue was under $500K."));
  EXPECT_TRUE(Grounded("Total revenue was over $500K."));
  EXPECT_TRUE(Grounded("Total revenue was just over half a million."));
  EXPECT_TRUE(Grounded("There were more than 2,000 orders."));
  EXPECT_FALSE(Grounded("There were fewer than 2,000 orders."));
  EXPECT_TRUE(Grounded("Nearly half of the orders were online."));
  EXPECT_TRUE(Grounded("At least 45% of the orders were online."));
  EXPECT_FALSE(Grounded("At most 45% of the orders were online."));
  const VerifyReport r = Verify("Total revenue was under $500K.", {}, evidence_, "");
  ASSERT_FALSE(r.grounded());
  EXPECT_NE(r.checks[0].reason.find("above the bound"), std::string::npos) << r.checks[0].reason;
}

TEST_F(TrialTest, SecondTrialHonestAnswers) {
  Result({"churn_rate"}, {{"0.3333"}});
  EXPECT_TRUE(Grounded("A third of accounts churned."));
  EXPECT_FALSE(Grounded("A quarter of accounts churned."));
  Result({"revenue_2024", "revenue_2025"}, {{"232657.68", "271830.53"}});
  EXPECT_TRUE(Grounded("Revenue went from $232,657.68 in 2024 to $271,830.53 in 2025."));
  EXPECT_FALSE(Grounded("Revenue was $232,657.68 in 2023."));
  Result({"diff", "pct_change", "foxtrot", "cobalt"}, {{"-15000", "-20", "-50", "-20"}});
  EXPECT_TRUE(Grounded("Cobalt's revenue declined by $15,000 (20%)."));
  EXPECT_TRUE(Grounded("Foxtrot dropped 50% and Cobalt 20%."));
  Result({"acme", "echo"}, {{"-4.17", "25"}});
  EXPECT_FALSE(Grounded("Acme fell 4.17%, and Echo 25%."));  // Echo rose
}

TEST_F(TrialTest, AOneFigureBoundIsTightToHalfItsUnit) {
  Result({"total"}, {{"504488.21"}});
  EXPECT_FALSE(Grounded("Revenue was almost $600K."));
  EXPECT_TRUE(Grounded("Revenue was just over $500K."));
}

TEST_F(TrialTest, EveryRefusalHasAReason) {
  Result({"x"}, {{"5"}});
  for (const ValueCheck& c : Verify("It was 7 and Mars.", {"Mars", "+5"}, evidence_, "").checks) {
    if (!c.grounded()) {
      EXPECT_FALSE(c.reason.empty()) << c.value;
    }
  }
  Result({"change"}, {{"-25"}});
  const VerifyReport r = Verify("Echo changed +25%.", {}, evidence_, "");
  ASSERT_FALSE(r.grounded());
  EXPECT_NE(r.checks[0].reason.find("opposite sign"), std::string::npos) << r.checks[0].reason;
}

}  // namespace
}  // namespace quarry::agent
