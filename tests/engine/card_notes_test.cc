// What a column's values say beyond its type, as the model reads it in the cards (issue 23,
// section 3): booleans and dates written as text, missing-value markers and numeric sentinels
// with their counts, every value of a column with few, notes cut between words, and advice
// for the user kept out of the model's notes. Real SQLite databases and real CSV files.
#include <gtest/gtest.h>

#include <string>

#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

TEST(CardNotesTest, ALongNoteIsCutBetweenClausesNeverInsideAWord) {
  TableCard card;
  card.name = "t";
  card.source = "t.csv";
  card.profiled = true;
  card.row_count = 1;
  ColumnCard c;
  c.name = "x";
  c.type = "VARCHAR";
  c.profiled = true;
  std::string note;
  while (note.size() < 300) note += "values are written between brackets; ";
  c.notes.push_back(note);
  card.columns.push_back(c);
  const std::string text = RenderCards({card});
  const size_t at = text.find("    note: ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string shown = text.substr(at + 10, text.find('\n', at) - at - 10);
  // 240 bytes would end in "bet"; the cut falls after the last whole clause instead.
  EXPECT_TRUE(shown.ends_with("written between brackets\u2026")) << shown;
  EXPECT_LE(shown.size(), kCardNoteBytes + 3);

  // Without a clause in reach, at the last space.
  card.columns[0].notes = {std::string(200, 'a') + " " + std::string(30, 'b') + " beforehand"};
  const std::string words = RenderCards({card});
  EXPECT_NE(words.find(std::string(30, 'b') + "\u2026\n"), std::string::npos) << words;
  EXPECT_EQ(words.find("bef"), std::string::npos) << words;
}

}  // namespace
}  // namespace quarry::engine
