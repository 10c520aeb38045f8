// PriorMessages: what the model is shown of a thread's earlier turns, within a token budget.
#include <gtest/gtest.h>

#include "quarry/agent/agent.h"
#include "quarry/agent/agent_internal.h"
#include "quarry/engine/engine.h"

namespace quarry::agent {
namespace {

PriorTurn Turn(int n) {
  PriorTurn p;
  p.question = "Question " + std::to_string(n) + " about revenue by region?";
  p.answer = "Answer " + std::to_string(n) + ": North had 141794.14.";
  p.sql = "SELECT region, sum(revenue) FROM sales GROUP BY region -- turn " + std::to_string(n);
  p.preview = "region | total\nNorth | 141794.14\n(1 row)";
  return p;
}

int64_t Tokens(const std::vector<llm::Message>& messages) {
  int64_t total = 0;
  for (const auto& m : messages) total += engine::EstimateTokens(m.content) + 4;
  return total;
}

TEST(PriorMessagesTest, NoHistoryNoMessages) {
  std::vector<std::string> notes;
  EXPECT_TRUE(PriorMessages({}, 1500, &notes).empty());
  EXPECT_TRUE(notes.empty());
}

TEST(PriorMessagesTest, NewestTwoInFullOlderOnesShortenedOldestFirst) {
  std::vector<std::string> notes;
  const auto m = PriorMessages({Turn(1), Turn(2), Turn(3)}, 5000, &notes);
  ASSERT_EQ(m.size(), 6u);
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i].role, i % 2 == 0 ? llm::Role::kUser : llm::Role::kAssistant) << i;
  }
  // The header opens the first message and says the turns are context, not evidence.
  EXPECT_TRUE(m[0].content.starts_with("[quarry] Earlier turns of this conversation follow"));
  EXPECT_NE(m[0].content.find("Their answers are context, not evidence"), std::string::npos);
  EXPECT_NE(m[0].content.find("Their result previews are real results quarry kept"),
            std::string::npos);
  EXPECT_NE(m[0].content.find("1 older turn is shortened to question, answer and SQL."),
            std::string::npos);
  EXPECT_TRUE(m[0].content.ends_with("Earlier question: Question 1 about revenue by region?"));
  EXPECT_EQ(m[2].content, "Earlier question: Question 2 about revenue by region?");
  // Turn 1 is a summary: answer and SQL, no preview.
  EXPECT_NE(m[1].content.find("Answer 1: North had 141794.14."), std::string::npos);
  EXPECT_NE(m[1].content.find("-- turn 1"), std::string::npos);
  EXPECT_EQ(m[1].content.find("Result preview"), std::string::npos);
  // Turns 2 and 3 in full, the preview marked as a real result.
  for (size_t i : {3u, 5u}) {
    EXPECT_NE(m[i].content.find("Result preview of that run (a real result quarry kept"),
              std::string::npos);
    EXPECT_NE(m[i].content.find("North | 141794.14"), std::string::npos);
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "thread: the model saw 3 earlier turns (2 in full, 1 shortened to question, answer "
            "and SQL)");
  EXPECT_LE(Tokens(m), 5000);
}

TEST(PriorMessagesTest, OverTheBudgetTheOldestAreDroppedFirst) {
  std::vector<PriorTurn> history = {Turn(1), Turn(2), Turn(3), Turn(4)};
  // Room for the header and one full turn (190 tokens estimated).
  std::vector<std::string> notes;
  const auto m = PriorMessages(history, 240, &notes);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_NE(m[0].content.find("Question 4"), std::string::npos);
  EXPECT_NE(m[0].content.find("3 oldest turns are left out."), std::string::npos);
  EXPECT_NE(m[1].content.find("Result preview"), std::string::npos);
  EXPECT_EQ(Tokens(m), 190);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "thread: the model saw 1 earlier turn (1 in full, 0 shortened to question, answer and "
            "SQL); 3 oldest turns left out over the history budget of 240 tokens");
  // Less room: the newest turn shortened (168 tokens), rather than nothing.
  notes.clear();
  const auto shortened = PriorMessages(history, 190, &notes);
  ASSERT_EQ(shortened.size(), 2u);
  EXPECT_EQ(shortened[1].content.find("Result preview"), std::string::npos);
  EXPECT_NE(shortened[1].content.find("Answer 4: North had 141794.14."), std::string::npos);
  EXPECT_EQ(Tokens(shortened), 168);
  EXPECT_EQ(notes[0],
            "thread: the model saw 1 earlier turn (0 in full, 1 shortened to question, answer and "
            "SQL); 3 oldest turns left out over the history budget of 190 tokens");
}

TEST(PriorMessagesTest, EveryBudgetIsKeptAndTheNewestTurnIsAlwaysTheLastShown) {
  std::vector<PriorTurn> history;
  for (int i = 1; i <= 8; ++i) history.push_back(Turn(i));
  size_t last_count = 0;
  for (int64_t budget = 100; budget <= 2000; budget += 50) {
    std::vector<std::string> notes;
    const auto m = PriorMessages(history, budget, &notes);
    EXPECT_LE(Tokens(m), budget) << budget;
    EXPECT_GE(m.size(), last_count) << "a larger budget never shows fewer turns";
    last_count = m.size();
    if (!m.empty()) {
      EXPECT_NE(m[m.size() - 2].content.find("Question 8"), std::string::npos) << budget;
    }
  }
  EXPECT_EQ(last_count, 16u) << "2000 tokens hold all 8 turns";
}

TEST(PriorMessagesTest, ABudgetTooSmallForAnyTurnShowsNoneAndSaysSo) {
  std::vector<std::string> notes;
  EXPECT_TRUE(PriorMessages({Turn(1), Turn(2)}, 40, &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "thread: all 2 earlier turns left out: none fits the history budget of 40 tokens");
}

TEST(PriorMessagesTest, ALongTurnIsShortenedWhenItDoesNotFitInFull) {
  PriorTurn big = Turn(2);
  big.preview = std::string(4000, 'p');  // about 1000 tokens
  big.answer = "Answer 2: " + std::string(1000, 'a');
  std::vector<std::string> notes;
  const auto m = PriorMessages({Turn(1), big}, 600, &notes);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[3].content.find("Result preview"), std::string::npos);
  EXPECT_NE(m[3].content.find("… (cut)"), std::string::npos);
  EXPECT_LT(m[3].content.size(), 1000u);
  EXPECT_NE(m[1].content.find("Result preview"), std::string::npos) << "turn 1 fits in full";
  EXPECT_LE(Tokens(m), 600);
}

TEST(PriorMessagesTest, ClarificationsAndDataChangesAreShown) {
  PriorTurn p = Turn(1);
  p.clarification = "asked the user: Gross or net? | reply: net";
  p.data_note =
      "sales.csv changed since turn 1 (10 -> 12 bytes): answers about it before may "
      "no longer hold";
  std::vector<std::string> notes;
  const auto m = PriorMessages({p}, 1500, &notes);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_NE(m[0].content.find("The data changed: sales.csv changed since turn 1 (10 -> 12 bytes)"),
            std::string::npos);
  EXPECT_NE(m[1].content.find("asked the user: Gross or net? | reply: net"), std::string::npos);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1], "thread: the data changed: " + p.data_note);
}

// The kept results the model is shown ground a follow-up, cited by turn; a summarised turn's
// (no preview shown), a changed source's and an earlier answer's words do not.
TEST(KeptResultsTest, ShownPreviewsOnUnchangedDataAreEvidenceByTurn) {
  PriorTurn old = Turn(1), kept = Turn(2), changed = Turn(3), latest = Turn(4);
  old.turn = 1, kept.turn = 2, changed.turn = 3, latest.turn = 4;
  old.preview = "region | total\nWest | 86974.81\n(1 row)";
  kept.preview = "Name | tracks\nRock | 1297\nLatin | 579\nMeta";  // cut by the byte bound
  changed.preview = "region | total\nSouth | 93317.87\n(1 row)";
  changed.data_note = "sales.csv changed after turn 3";
  latest.preview = "region | orders\nNorth | 565\n(5 rows, 1 shown)";
  const std::vector<PriorTurn> history = {old, kept, changed, latest};
  std::vector<std::string> notes;
  // The newest two turns (3 and 4) are shown in full; 1 and 2 shortened, with no preview.
  const auto shown = PriorMessages(history, 5000, &notes);
  Evidence evidence;
  AddKeptResults(history, shown, evidence);
  evidence.AddResult({5, "run_sql", "SELECT 1", 1}, {"one"}, {{"1"}});
  const std::string q = "And which sells least?";
  // Turn 4's kept result, with its true row count.
  VerifyReport r = Verify("North had 565 orders; 5 regions in all.", {}, evidence, q);
  EXPECT_TRUE(r.grounded());
  ASSERT_EQ(r.checks.size(), 2u);
  ASSERT_GE(r.checks[0].source, 0);
  EXPECT_EQ(evidence.sources()[static_cast<size_t>(r.checks[0].source)].turn, 4);
  EXPECT_EQ(r.checks[1].matched, "(5 rows)");
  // Turn 3's data changed since, turn 1's preview was not shown, turn 2's answer words are not
  // results.
  EXPECT_FALSE(Verify("South had 93317.87.", {}, evidence, q).grounded());
  EXPECT_FALSE(Verify("West had 86974.81.", {}, evidence, q).grounded());
  EXPECT_FALSE(Verify("Rock has 1297 tracks.", {}, evidence, q).grounded());
  // Shown in full, the cut preview's whole rows ground and its partial row is dropped.
  const auto two = PriorMessages({kept}, 5000, &notes);
  Evidence from_two;
  AddKeptResults({kept}, two, from_two);
  from_two.AddResult({5, "run_sql", "SELECT 1", 1}, {"one"}, {{"1"}});
  EXPECT_TRUE(Verify("Rock has 1297 tracks, Latin 579.", {}, from_two, q).grounded());
}

}  // namespace
}  // namespace quarry::agent
