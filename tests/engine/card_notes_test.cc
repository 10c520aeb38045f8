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
  // Five values, five samples; the long one cut to 30 bytes. 'ok' and 'OK' group apart, which
  // the loader's quality check says (issue 25).
  EXPECT_EQ(ColumnText(text, "status"),
            "  status VARCHAR, 5 distinct, e.g. 'OK', 'fault', 'maint', 'ok', '" +
                std::string(30, 'z') +
                "\u2026'\n    note: values that differ only in spaces, case "
                "or Unicode form group apart: 'OK' (8 rows), 'ok' (8 rows). GROUP BY "
                "lower(trim(regexp_replace(nfc_normalize(\"status\"), '[\\s\\x{00A0}]', ' ', "
                "'g'))) counts each as one; the data keeps them as written")
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

// A SQLite database built from `sql`, its cards, and one query's single cell.
class SqliteNotesTest : public ::testing::Test {
 protected:
  std::string Open(const std::string& sql) {
    path_ = dir_.path() / "notes.sqlite";
    quarry::testing::MakeSqlite(path_, sql);
    return Cards({path_});
  }
  std::string Cell(const std::string& query) {
    auto engine = engine::Open({path_});
    if (!engine) return "cannot open: " + engine.error().message;
    auto r = (*engine)->Query(query, Limits{});
    if (!r) return "failed: " + r.error().message;
    return r->rows.empty() ? "no row" : r->rows[0][0].value_or("NULL");
  }
  TempDir dir_;
  std::filesystem::path path_;
};

TEST_F(SqliteNotesTest, ABooleanWrittenAsTextIsSaidToBeOneNotFilteredAway) {
  std::string sql = "CREATE TABLE t(flag bool, ok BOOLEAN);";
  for (int i = 0; i < 10; ++i) {
    sql += std::string("INSERT INTO t VALUES ('") + (i % 3 ? "T" : "F") + "', '" +
           (i % 2 ? "yes" : "no") + "');";
  }
  const std::string text = Open(sql);
  EXPECT_EQ(ColumnText(text, "flag"),
            "  flag bool, 2 distinct, e.g. 'T', 'F'\n"
            "    note: declared bool, stored as text in 10/10 rows: the text is a boolean written "
            "as 'T'/'F'; test it with \"flag\" = 'T', since \"flag\" = 1 and \"flag\" = TRUE "
            "match no text row")
      << text;
  EXPECT_NE(
      ColumnText(text, "ok").find("a boolean written as 'no'/'yes'; test it with \"ok\" = 'yes'"),
      std::string::npos)
      << text;
  // The advice that dropped every row is gone, and what the note says holds.
  EXPECT_EQ(text.find("typeof("), std::string::npos) << text;
  EXPECT_EQ(Cell("SELECT count(*) FROM t WHERE flag = 'T'"), "6");
  EXPECT_EQ(Cell("SELECT count(*) FROM t WHERE flag = 1 OR flag = TRUE"), "0");
}

TEST_F(SqliteNotesTest, KeepingOnlyTheNumbersIsAdvisedOnlyWhereTheyAreTheMost) {
  const std::string text = Open(
      "CREATE TABLE m(reading REAL, weight INTEGER);"
      "INSERT INTO m VALUES (1.5, 3), (2.5, 'about 5'), (3.5, 'about 5'), ('oops', 'six'),"
      "  ('oops', 'about 5');");
  // Three numbers, two texts: the numbers are the data.
  EXPECT_NE(ColumnText(text, "reading")
                .find("note: declared REAL, stored as real in 3 rows, text in 2: arithmetic reads "
                      "text as 0 or its leading digits, and text sorts above every number; use "
                      "only rows where typeof(\"reading\") IN ('integer', 'real')"),
            std::string::npos)
      << text;
  // One number, four texts: keeping the numbers would keep one row of five.
  const std::string weight = ColumnText(text, "weight");
  EXPECT_NE(weight.find("note: declared INTEGER, stored as integer in 1 row, text in 4: most "
                        "values are text, which arithmetic reads as 0 or its leading digits; "
                        "clean the text (replace, trim) before a CAST"),
            std::string::npos)
      << weight;
  EXPECT_EQ(weight.find("typeof("), std::string::npos) << weight;
}

TEST_F(SqliteNotesTest, TextMissingMarkersAmongNumbersAreCounted) {
  std::string sql = "CREATE TABLE r(reading TEXT, name TEXT);";
  for (int i = 0; i < 20; ++i) {
    const std::string v = i < 6 ? "null" : i < 8 ? "N/A" : i == 8 ? "" : std::to_string(i) + ".5";
    sql += "INSERT INTO r VALUES ('" + v + "', 'n" + std::to_string(i % 12) + "');";
  }
  const std::string text = Open(sql);
  EXPECT_NE(ColumnText(text, "reading")
                .find("    note: 'null' (6 rows), 'N/A' (2 rows) and '' (1 row) look like "
                      "missing-value markers; CAST reads a marker as 0: cast only where "
                      "\"reading\" NOT IN ('null', 'N/A', '')"),
            std::string::npos)
      << text;
  EXPECT_EQ(ColumnText(text, "name").find("note:"), std::string::npos) << text;
  // Why it matters: the naive average counts 'null' as 0.
  EXPECT_EQ(Cell("SELECT avg(CAST(reading AS REAL)) FROM r"), "7.975");
  EXPECT_EQ(
      Cell("SELECT avg(CAST(reading AS REAL)) FROM r WHERE reading NOT IN ('null', 'N/A', '')"),
      "14.5");
}

TEST(CardNotesTest, CsvMissingMarkersAreCountedEachWithItsRows) {
  TempDir dir;
  std::string csv = "id,v\n";
  for (int i = 0; i < 40; ++i) {
    const std::string v = i < 6    ? "null"
                          : i < 9  ? "N/A"
                          : i < 11 ? "NULL"
                                   : std::to_string(i) + ".25";
    csv += std::to_string(i) + "," + v + "\n";
  }
  const std::string text = Cards({dir.Write("markers.csv", csv)});
  EXPECT_NE(ColumnText(text, "v").find(
                "    note: 'null' (6 rows), 'N/A' (3 rows) and 'NULL' (2 rows) look like "
                "missing-value markers; the other 29 values are numbers, so the column is text: "
                "TRY_CAST(\"v\" AS DOUBLE) reads them with the markers as NULL"),
            std::string::npos)
      << text;
}

// sensors.csv's temperature: numbers with their unit, 'N/A', and -999 for "no reading".
std::string SensorsLike() {
  std::string csv = "station,temperature,level\n";
  for (int i = 0; i < 40; ++i) {
    const std::string t = i % 8 == 0    ? "-999"
                          : i % 10 == 3 ? "N/A"
                                        : std::to_string(15 + i % 16) + ".5 C";
    csv += "S" + std::to_string(i % 3) + "," + t + "," +
           (i % 5 == 0 ? "-9999" : std::to_string(i)) + "\n";
  }
  return csv;
}

TEST(CardNotesTest, ASentinelFarOutsideTheOtherNumbersIsNamedWithItsCount) {
  TempDir dir;
  const std::string text = Cards({dir.Write("sensors.csv", SensorsLike())});
  EXPECT_NE(
      ColumnText(text, "temperature")
          .find("    note: 'N/A' (4 rows) looks like a missing-value marker and -999 (5 rows) "
                "like a sentinel for a missing number: the other numbers lie in 16.5..30.5; "
                "leave '-999' out before aggregating"),
      std::string::npos)
      << text;
  // A column DuckDB reads as numbers: noted from its bounds.
  EXPECT_NE(ColumnText(text, "level")
                .find("    note: -9999 (8 rows) looks like a sentinel for a missing number: the "
                      "other numbers lie in 1..39; leave it out (\"level\" <> -9999) before "
                      "aggregating"),
            std::string::npos)
      << text;

  // SQLite: stored as a number, or as text among numbers written as text.
  std::string sql = "CREATE TABLE s(depth REAL, code TEXT);";
  for (int i = 0; i < 30; ++i) {
    sql += "INSERT INTO s VALUES (" + std::string(i % 6 == 0 ? "-999" : std::to_string(100 + i)) +
           ", '" + (i % 10 == 0 ? "99999" : std::to_string(i % 7)) + "');";
  }
  ASSERT_NO_FATAL_FAILURE(quarry::testing::MakeSqlite(dir.path() / "s.sqlite", sql));
  const std::string lite = Cards({dir.path() / "s.sqlite"});
  EXPECT_NE(ColumnText(lite, "depth")
                .find("    note: -999 (5 rows) looks like a sentinel for a missing number: the "
                      "other numbers lie in 101..129; leave it out (\"depth\" <> -999) before "
                      "aggregating"),
            std::string::npos)
      << lite;
  EXPECT_NE(ColumnText(lite, "code").find("    note: 99999 (3 rows) looks like a sentinel"),
            std::string::npos)
      << lite;
}

TEST(CardNotesTest, ASentinelLiteralAmongNumbersSpreadAroundItIsNoSentinel) {
  TempDir dir;
  std::string csv = "balance,change,temp,debt\n";
  for (int i = 0; i < 40; ++i) {
    // -999 is the smallest balance, but the others reach from -700 to 20,000: a real value.
    const std::string balance = i == 7 ? "-999" : std::to_string(-700 + i * 530);
    // -1 beside 0..3 is a small change, and beside decimals a temperature.
    const std::string change = i == 3 ? "-1" : std::to_string(i % 4);
    const std::string temp = i == 5 ? "-1" : std::to_string(i % 20) + ".5";
    // 9999 tops debts that reach 9,000 from 0.
    const std::string debt = i == 9 ? "9999" : std::to_string(i * 230);
    csv += balance + "," + change + "," + temp + "," + debt + "\n";
  }
  const std::string text = Cards({dir.Write("money.csv", csv)});
  EXPECT_EQ(text.find("note:"), std::string::npos) << text;
  EXPECT_NE(ColumnText(text, "balance").find("-999..19970"), std::string::npos) << text;
}

TEST(CardNotesTest, DatesWrittenAsTextShowTheirRangeAndHowToReadThem) {
  TempDir dir;
  std::string csv = "opened,signed,label\n";
  const char* opened[] = {"Apr 1 2005", "Apr 01 2005", "Jan 2 2004", "Sep 24 2007", "Mar 9 2005"};
  const char* signed_on[] = {"\"April 1, 2005\"", "1 Apr 2005", "\"June 30, 2006\"",
                             "\"February 2, 2003\"", "\"May 9, 2005\""};
  for (int i = 0; i < 20; ++i) {
    csv += std::string(opened[i % 5]) + "," + signed_on[i % 5] + "," +
           (i % 4 ? "Apr 1 2005" : "soon") + "\n";
  }
  const auto file = dir.Write("opened.csv", csv);
  const std::string hash = quarry::testing::Sha256File(file);
  OpenOptions options;
  options.use_cache = false;
  auto engine = Open({file}, options);
  ASSERT_TRUE(engine) << engine.error().message;
  const std::string text = RenderCards((*engine)->describe());
  // The range is the dates', not the text's ('Apr' < 'Jan' < 'Mar' < 'Sep').
  EXPECT_EQ(ColumnText(text, "opened"),
            "  opened VARCHAR, 5 distinct, 2004-01-02..2007-09-24, e.g. 'Apr 01 2005', "
            "'Apr 1 2005', 'Jan 2 2004', 'Mar 9 2005', 'Sep 24 2007'\n"
            "    note: dates written as text in the format %b %d %Y; as text they sort by month "
            "name: read them with CAST(strptime(\"opened\", '%b %d %Y') AS DATE) to compare or "
            "sort")
      << text;
  EXPECT_NE(ColumnText(text, "signed")
                .find("2003-02-02..2006-06-30, e.g. '1 Apr 2005', 'April 1, 2005', 'February 2, "
                      "2003', 'June 30, 2006', 'May 9, 2005'\n    note: dates written as text in "
                      "the formats %B %d, %Y and %d %b %Y; as text they sort by month name: read "
                      "them with CAST(strptime(\"signed\", ['%B %d, %Y', '%d %b %Y']) AS DATE)"),
            std::string::npos)
      << text;
  // A quarter of the labels are no dates: no date column.
  EXPECT_EQ(ColumnText(text, "label").find("note:"), std::string::npos) << text;
  // The advice reads, and the data is still text, unchanged.
  auto latest = (*engine)->Query(
      "SELECT CAST(max(CAST(strptime(signed, ['%B %d, %Y', '%d %b %Y']) AS DATE)) AS VARCHAR), "
      "typeof(any_value(opened)) FROM opened",
      Limits{});
  ASSERT_TRUE(latest) << latest.error().message;
  EXPECT_EQ(latest->rows[0][0].value_or("NULL"), "2006-06-30");
  EXPECT_EQ(latest->rows[0][1].value_or("NULL"), "VARCHAR");
  EXPECT_EQ(quarry::testing::Sha256File(file), hash);

  // SQLite has no strptime: the note says what the model can do there.
  std::string sql = "CREATE TABLE v(visit TEXT, day DATE);";
  for (int i = 0; i < 10; ++i) {
    sql += "INSERT INTO v VALUES ('" + std::string(opened[i % 5]) + "', '0" +
           std::to_string(i % 5 + 1) + "-Mar-2011');";
  }
  ASSERT_NO_FATAL_FAILURE(quarry::testing::MakeSqlite(dir.path() / "v.sqlite", sql));
  const std::string lite = Cards({dir.path() / "v.sqlite"});
  EXPECT_NE(ColumnText(lite, "visit")
                .find("2004-01-02..2007-09-24, e.g. 'Apr 01 2005', 'Apr 1 2005', 'Jan 2 2004', "
                      "'Mar 9 2005', 'Sep 24 2007'\n    note: dates written as text in the format "
                      "%b %d %Y; SQLite's date functions cannot read them"),
            std::string::npos)
      << lite;
  // A DATE column holding such text shows the dates' range too, not 'Apr..'..'Sep..'.
  EXPECT_NE(ColumnText(lite, "day").find("2011-03-01..2011-03-05"), std::string::npos) << lite;
}

// Notes on the cards are for the model, which cannot pass quarry an option; advice that names
// one goes to the user (Source::notes, printed on stderr), while what the loader decided is
// still told to both.
TEST(CardNotesTest, AdviceNamingQuarrysOptionsIsTheUsersNotTheModels) {
  TempDir dir;
  const auto dates = dir.Write("umsatz.csv",
                               "Datum,Umsatz\n01.03.2024,10\n15.03.2024,20\n"
                               "28.03.2024,30\n02.04.2024,40\n");
  const auto latin = dir.Write("kunden.csv", "name,stadt\nJos\xe9,K\xf6ln\nAnna,Ulm\n");
  OpenOptions options;
  options.cache_dir = dir.path() / "cache";
  for (const bool cached : {false, true}) {
    SCOPED_TRACE(cached ? "from the parse cache" : "from the files");
    if (cached) {
      ASSERT_TRUE(BuildCacheEntry(dates, options));
      ASSERT_TRUE(BuildCacheEntry(latin, options));
    }
    auto engine = Open({dates, latin}, options);
    ASSERT_TRUE(engine) << engine.error().message;
    ASSERT_EQ((*engine)->sources().size(), 2u);
    EXPECT_EQ(CacheUseName((*engine)->sources()[0].cache), cached ? "hit" : "miss");
    const std::string text = RenderCards((*engine)->describe());
    // The model is told what was decided, and nothing about options.
    EXPECT_NE(text.find("  note: dates read in the format %d.%m.%Y (as the sniffer found it)\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("  note: the file is not valid UTF-8; it was read as Latin-1 "
                        "(ISO-8859-1)\n"),
              std::string::npos)
        << text;
    for (const char* option : {"types=", "encoding=", "FILE?", "--"}) {
      EXPECT_EQ(text.find(option), std::string::npos) << option << " in:\n" << text;
    }
    // The user is told how to read the file otherwise.
    EXPECT_EQ((*engine)->sources()[0].notes,
              (std::vector<std::string>{"dates were read in the format %d.%m.%Y; to keep a "
                                        "column as written, give FILE?types=COLUMN:VARCHAR"}));
    EXPECT_EQ((*engine)->sources()[1].notes,
              (std::vector<std::string>{"not valid UTF-8, so read as Latin-1 (ISO-8859-1): if "
                                        "accented letters look wrong, give the encoding as "
                                        "FILE?encoding=cp1252 (or utf-16, or another)"}));
  }
}

}  // namespace
}  // namespace quarry::engine
