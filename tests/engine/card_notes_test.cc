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

using quarry::testing::TempDir;

// The card's line for `column` and the note lines under it.
std::string ColumnText(const std::string& cards, const std::string& column) {
  const size_t at = cards.find("\n  " + column + " ");
  if (at == std::string::npos) return "no column " + column + " in:\n" + cards;
  size_t end = cards.find('\n', at + 1);
  while (end != std::string::npos && cards.compare(end + 1, 10, "    note: ") == 0) {
    end = cards.find('\n', end + 1);
  }
  return cards.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

std::string Cards(const std::vector<std::filesystem::path>& paths) {
  OpenOptions options;
  options.use_cache = false;
  auto engine = Open(paths, options);
  if (!engine) return "cannot open: " + engine.error().message;
  return RenderCards((*engine)->describe());
}

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

TEST(CardNotesTest, AColumnOfFewValuesListsEveryOneCappedInLength) {
  TempDir dir;
  const std::string long_value(60, 'z');
  std::string csv = "status,code\n";
  const std::string statuses[] = {"ok", "OK", "fault", "maint", long_value};
  for (int i = 0; i < 40; ++i) {
    csv += statuses[i % 5] + ",c" + std::to_string(i % 12) + "\n";
  }
  const std::string text = Cards({dir.Write("status.csv", csv)});
  // Five values, five samples; the long one cut to 30 bytes.
  EXPECT_EQ(ColumnText(text, "status"),
            "  status VARCHAR, 5 distinct, e.g. 'OK', 'fault', 'maint', 'ok', '" +
                std::string(30, 'z') + "\u2026'")
      << text;
  // Twelve values: the three most frequent show the spelling.
  EXPECT_EQ(ColumnText(text, "code"), "  code VARCHAR, 12 distinct, e.g. 'c0', 'c1', 'c2'") << text;

  // The same in SQLite.
  std::string sql = "CREATE TABLE t(kind TEXT);";
  for (const char* k : {"a", "b", "c", "d", "e", "a", "b"}) {
    sql += "INSERT INTO t VALUES ('" + std::string(k) + "');";
  }
  ASSERT_NO_FATAL_FAILURE(quarry::testing::MakeSqlite(dir.path() / "kinds.sqlite", sql));
  const std::string lite = Cards({dir.path() / "kinds.sqlite"});
  EXPECT_EQ(ColumnText(lite, "kind"), "  kind TEXT, 5 distinct, e.g. 'a', 'b', 'c', 'd', 'e'")
      << lite;
}

}  // namespace
}  // namespace quarry::engine
