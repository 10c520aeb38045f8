// Workbooks: the reader's pieces (number formats, serial dates, ranges, the CSV it writes), and
// a corpus written at test time by three independent writers (openpyxl from Debian, SheetJS
// from npm, and hand-made packages from Python's zipfile), loaded through the real engine.
#include <gtest/gtest.h>

#include <set>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "quarry/engine/workbook.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

namespace fs = std::filesystem;
using internal::DateStyle;
using internal::DateStyleOf;
using internal::SerialToIso;
using internal::SheetValue;

// ---- The pieces ------------------------------------------------------------------------------

TEST(WorkbookFormatTest, NumberFormatsTellDatesAndTimesFromNumbers) {
  EXPECT_EQ(DateStyleOf(14, ""), DateStyle::kDate);
  EXPECT_EQ(DateStyleOf(22, ""), DateStyle::kDateTime);
  EXPECT_EQ(DateStyleOf(21, ""), DateStyle::kTime);
  EXPECT_EQ(DateStyleOf(0, ""), DateStyle::kNone);   // General
  EXPECT_EQ(DateStyleOf(4, ""), DateStyle::kNone);   // #,##0.00
  EXPECT_EQ(DateStyleOf(49, ""), DateStyle::kNone);  // @ (text)
  EXPECT_EQ(DateStyleOf(164, "yyyy-mm-dd"), DateStyle::kDate);
  EXPECT_EQ(DateStyleOf(165, "dd/mm/yyyy hh:mm"), DateStyle::kDateTime);
  EXPECT_EQ(DateStyleOf(166, "[h]:mm:ss"), DateStyle::kTime);
  EXPECT_EQ(DateStyleOf(167, "h:mm AM/PM"), DateStyle::kTime);
  EXPECT_EQ(DateStyleOf(168, "mmm"), DateStyle::kDate);
  EXPECT_EQ(DateStyleOf(169, "[$-409]d-mmm-yy;@"), DateStyle::kDate);
  // Letters inside quotes, escapes, colours and later sections are no date parts.
  EXPECT_EQ(DateStyleOf(170, "#,##0\" days\""), DateStyle::kNone);
  EXPECT_EQ(DateStyleOf(171, "0\\d"), DateStyle::kNone);
  EXPECT_EQ(DateStyleOf(172, "[Red]0.00"), DateStyle::kNone);
  EXPECT_EQ(DateStyleOf(173, "0.00;\"d\"0"), DateStyle::kNone);
  EXPECT_EQ(DateStyleOf(174, "0.00E+00"), DateStyle::kNone);
  EXPECT_EQ(DateStyleOf(175, "General"), DateStyle::kNone);
}

TEST(WorkbookFormatTest, SerialDaysInBothDateSystems) {
  EXPECT_EQ(SerialToIso(1, false, DateStyle::kDate), "1900-01-01");
  EXPECT_EQ(SerialToIso(59, false, DateStyle::kDate), "1900-02-28");
  EXPECT_EQ(SerialToIso(60, false, DateStyle::kDate), std::nullopt);  // Lotus's 1900-02-29
  EXPECT_EQ(SerialToIso(61, false, DateStyle::kDate), "1900-03-01");
  EXPECT_EQ(SerialToIso(45413, false, DateStyle::kDate), "2024-05-01");
  EXPECT_EQ(SerialToIso(45413.5, false, DateStyle::kDate), "2024-05-01 12:00:00");
  EXPECT_EQ(SerialToIso(45413, false, DateStyle::kDateTime), "2024-05-01 00:00:00");
  EXPECT_EQ(SerialToIso(45413.999999999, false, DateStyle::kDate), "2024-05-02");
  EXPECT_EQ(SerialToIso(0.75, false, DateStyle::kTime), "18:00:00");
  EXPECT_EQ(SerialToIso(1.5, false, DateStyle::kTime), std::nullopt);  // a duration past a day
  EXPECT_EQ(SerialToIso(0, true, DateStyle::kDate), "1904-01-01");
  EXPECT_EQ(SerialToIso(43951, true, DateStyle::kDate), "2024-05-01");
  EXPECT_EQ(SerialToIso(2958465, false, DateStyle::kDate), "9999-12-31");
  EXPECT_EQ(SerialToIso(2958466, false, DateStyle::kDate), std::nullopt);
  EXPECT_EQ(SerialToIso(-1, false, DateStyle::kDate), std::nullopt);
}

TEST(WorkbookFormatTest, RangesColumnsAndNumbers) {
  auto r = internal::ParseCellRange("A3:F200");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first_row, 2u);
  EXPECT_EQ(r->last_row, 199u);
  EXPECT_EQ(r->first_col, 0u);
  EXPECT_EQ(r->last_col, 5u);
  auto swapped = internal::ParseCellRange("f200:a3");
  ASSERT_TRUE(swapped.has_value());
  EXPECT_EQ(swapped->first_row, 2u);
  EXPECT_EQ(swapped->last_col, 5u);
  auto one = internal::ParseCellRange("XFD1048576");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->first_col, 16383u);
  EXPECT_EQ(one->first_row, 1048575u);
  auto dollars = internal::ParseCellRange("Report!$B$2:$C$9");
  ASSERT_TRUE(dollars.has_value());
  EXPECT_EQ(dollars->first_col, 1u);
  EXPECT_EQ(dollars->last_row, 8u);
  EXPECT_EQ(internal::RangeSheet("'Q3 2024'!A1:B2"), "Q3 2024");
  EXPECT_EQ(internal::RangeSheet("A1:B2"), std::nullopt);
  for (const char* bad : {"", "A0", "3A", "XFE1", "A1048577", "A1:", "A1:B", "AAAA1", "A1:B2:C3"}) {
    auto e = internal::ParseCellRange(bad);
    ASSERT_FALSE(e.has_value()) << bad;
    EXPECT_EQ(e.error().code, Error::Code::kUsage);
    EXPECT_NE(e.error().message.find("range=A3:F200"), std::string::npos);
  }
  EXPECT_EQ(internal::ColumnLetters(0), "A");
  EXPECT_EQ(internal::ColumnLetters(25), "Z");
  EXPECT_EQ(internal::ColumnLetters(26), "AA");
  EXPECT_EQ(internal::ColumnLetters(16383), "XFD");
  EXPECT_EQ(internal::CellNumberText(100000), "100000");
  EXPECT_EQ(internal::CellNumberText(0.1), "0.1");
  EXPECT_EQ(internal::CellNumberText(-2.5), "-2.5");
  EXPECT_EQ(internal::CellNumberText(0), "0");
  EXPECT_EQ(internal::CellNumberText(1e20), "1e+20");
  EXPECT_EQ(internal::CellNumberText(1e-7), "1e-07");
  EXPECT_EQ(internal::CellNumberText(123456789012345.0), "123456789012345");
}

internal::SheetCell Text(uint32_t row, uint32_t col, std::string text) {
  return {row, col, SheetValue::kText, std::move(text)};
}
internal::SheetCell Number(uint32_t row, uint32_t col, std::string text) {
  return {row, col, SheetValue::kNumber, std::move(text)};
}

TEST(WorkbookCsvTest, MergedLabelsAreRepeatedAndMergedNumbersAreNot) {
  internal::Sheet sheet;
  sheet.name = "S";
  sheet.cells = {Text(0, 0, "region"), Text(0, 1, "amount"), Text(1, 0, "North"),
                 Number(1, 1, "10"),   Number(2, 1, "20"),   Number(3, 0, "30"),
                 Number(3, 1, "5")};
  sheet.merged = {{1, 0, 2, 0},       // A2:A3, the label 'North'
                  {3, 0, 4, 0},       // A4:A5, a number: never repeated
                  {0, 3, 20000, 3}};  // D1:D20001, empty: nothing to repeat
  std::string csv;
  auto r = internal::WriteSheetCsv(sheet, std::nullopt, csv);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(csv, "\"region\",\"amount\"\n\"North\",10\n\"North\",20\n30,5\n");
  EXPECT_EQ(r->rows, 4);
  EXPECT_EQ(r->cols, 2);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("A2:A3 ('North')"), std::string::npos) << r->notes[0];
}

TEST(WorkbookCsvTest, ErrorsTitlesGapsQuotesAndRanges) {
  internal::Sheet sheet;
  sheet.name = "Report";
  sheet.cells = {Text(0, 1, "Sales \"2024\""),
                 Text(2, 1, "item"),
                 Text(2, 2, "qty"),
                 Text(3, 1, "a,b\nc"),
                 {3, 2, SheetValue::kError, "#N/A"},
                 Text(6, 1, "d"),
                 {6, 2, SheetValue::kNoValue, ""}};
  std::string csv;
  auto r = internal::WriteSheetCsv(sheet, std::nullopt, csv);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(csv, "\"item\",\"qty\"\n\"a,b\nc\",\n\"d\",\n");
  std::string notes;
  for (const auto& n : r->notes) notes += n + "\n";
  EXPECT_NE(
      notes.find("1 title row(s) above the header are not part of the table ('Sales \"2024\"')"),
      std::string::npos)
      << notes;
  EXPECT_NE(notes.find("2 empty row(s) between the data were skipped"), std::string::npos) << notes;
  EXPECT_NE(notes.find("column C ('qty'): 1 × #N/A"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 formula cell(s) have no saved result"), std::string::npos) << notes;
  // A range the user chose keeps every row in it, the title too.
  csv.clear();
  auto ranged = internal::WriteSheetCsv(sheet, internal::ParseCellRange("B1:B4").value(), csv);
  ASSERT_TRUE(ranged.has_value());
  EXPECT_EQ(csv, "\"Sales \"\"2024\"\"\"\n\"item\"\n\"a,b\nc\"\n");
}

// ---- The corpus --------------------------------------------------------------------------------

// Each test runs in a process of its own (gtest_discover_tests): it writes only the workbooks it
// reads, with the writer that makes them.
class WorkbookCorpusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new quarry::testing::TempDir(); }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
    made_.clear();
  }

  // "openpyxl", "hostile", "sheetjs" (small books) or "sheetjs-big" (the 100,000-row sheet).
  static void Need(const std::string& writer) {
    if (!made_.insert(writer).second) return;
    const fs::path here = quarry::testing::SourceDir() / "tests" / "engine" / "workbooks";
    std::vector<std::string> argv;
    if (writer == "openpyxl") argv = {"/usr/bin/python3", (here / "make_openpyxl.py").string()};
    if (writer == "hostile") argv = {"/usr/bin/python3", (here / "make_hostile.py").string()};
    if (writer.starts_with("sheetjs")) {
      ASSERT_TRUE(fs::exists(quarry::testing::SourceDir() / "node_modules" / "xlsx"))
          << "run scripts/setup.sh --tests (npm ci) first";
      argv = {"/usr/bin/env", "node", (here / "make_sheetjs.cjs").string()};
    }
    argv.push_back(dir_->path().string());
    if (writer.starts_with("sheetjs")) argv.push_back(writer == "sheetjs-big" ? "big" : "small");
    const auto run = quarry::testing::RunProcess(argv, here);
    ASSERT_EQ(run.exit_code, 0) << argv.back() << ": " << run.err
                                << " (python3-openpyxl comes with scripts/setup.sh --tests)";
  }

  static fs::path File(const std::string& name) { return dir_->path() / name; }

  static std::unique_ptr<Engine> Load(const std::string& name) {
    auto engine = Open({File(name)});
    EXPECT_TRUE(engine.has_value()) << name << ": " << engine.error().message;
    return engine ? std::move(*engine) : nullptr;
  }

  static std::string Value(Engine& engine, const std::string& sql) {
    auto r = engine.Query(sql, Limits{});
    EXPECT_TRUE(r.has_value()) << sql << ": " << (r ? "" : r.error().message);
    if (!r || r->rows.empty() || r->rows[0].empty()) return "<none>";
    return r->rows[0][0].value_or("NULL");
  }

  static const TableCard& Card(const Engine& engine, const std::string& table) {
    for (const auto& c : engine.describe()) {
      if (c.name == table) return c;
    }
    ADD_FAILURE() << "no table " << table;
    static TableCard none;
    return none;
  }

  static std::string TypeOf(const TableCard& card, const std::string& column) {
    for (const auto& c : card.columns) {
      if (c.name == column) return c.type;
    }
    return "<no column " + column + ">";
  }

  static std::string Notes(const TableCard& card) {
    std::string all;
    for (const auto& n : card.notes) all += n + "\n";
    return all;
  }

  static quarry::testing::TempDir* dir_;
  static std::set<std::string> made_;
};
quarry::testing::TempDir* WorkbookCorpusTest::dir_ = nullptr;
std::set<std::string> WorkbookCorpusTest::made_;

TEST_F(WorkbookCorpusTest, OpenpyxlSalesSheetHasTypesNotesAndATotalRow) {
  Need("openpyxl");
  auto engine = Load("sales.xlsx");
  ASSERT_TRUE(engine);
  ASSERT_EQ(engine->describe().size(),
            2u);  // Sales and the hidden Lookup; the chart sheet is not a table
  const TableCard& sales = Card(*engine, "sales_sales");
  EXPECT_EQ(sales.row_count, 4);
  EXPECT_EQ(TypeOf(sales, "units"), "BIGINT");
  EXPECT_EQ(TypeOf(sales, "day"), "DATE");
  EXPECT_EQ(TypeOf(sales, "at"), "TIMESTAMP");
  EXPECT_EQ(TypeOf(sales, "ok"), "BOOLEAN");
  EXPECT_EQ(TypeOf(sales, "price"), "DOUBLE");
  EXPECT_EQ(Value(*engine, "SELECT SUM(units) FROM sales_sales WHERE region <> 'Grand total'"),
            "15");
  EXPECT_EQ(Value(*engine, "SELECT day FROM sales_sales WHERE region = 'East'"), "2024-02-29");
  EXPECT_EQ(Value(*engine, "SELECT \"at\" FROM sales_sales WHERE region = 'East'"),
            "2024-02-29 00:00:01");
  EXPECT_EQ(Value(*engine, "SELECT COUNT(price) FROM sales_sales"),
            "2");  // #N/A and the formula are NULL
  const std::string notes = Notes(sales);
  EXPECT_NE(notes.find("a row holds the total of the rows above it in units: 'Grand total'"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("1 cell(s) hold Excel errors, read as NULL (column F ('price'): 1 × #N/A)"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("1 formula cell(s) have no saved result"), std::string::npos) << notes;
  EXPECT_NE(notes.find("sheet(s) 'Chart' hold no table"), std::string::npos) << notes;
  EXPECT_NE(Notes(Card(*engine, "sales_lookup")).find("sheet 'Lookup' is hidden"),
            std::string::npos);
  EXPECT_EQ(Card(*engine, "sales_sales").source, File("sales.xlsx").string() + ", sheet 'Sales'");
}

TEST_F(WorkbookCorpusTest, The1904DateSystemFromBothWriters) {
  Need("openpyxl");
  Need("sheetjs");
  auto mac = Load("mac1904.xlsx");
  ASSERT_TRUE(mac);
  EXPECT_EQ(TypeOf(Card(*mac, "mac1904_mac"), "day"), "DATE");
  EXPECT_EQ(Value(*mac, "SELECT day FROM mac1904_mac WHERE amount = 10"), "2024-05-01");
  EXPECT_EQ(Value(*mac, "SELECT day FROM mac1904_mac WHERE amount = 20"), "1904-01-02");
  auto sheetjs = Load("sheetjs1904.xlsx");
  ASSERT_TRUE(sheetjs);
  EXPECT_EQ(Value(*sheetjs, "SELECT day FROM sheetjs1904_mac"), "2024-05-01");
}

TEST_F(WorkbookCorpusTest, AReportWithTitleMergedLabelsAndCodes) {
  Need("openpyxl");
  auto engine = Load("report.xlsx");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "report_report");
  ASSERT_EQ(card.columns.size(), 4u);
  EXPECT_EQ(card.columns[0].name, "region");
  EXPECT_EQ(card.row_count, 4);
  EXPECT_EQ(TypeOf(card, "zip"), "VARCHAR");
  EXPECT_EQ(TypeOf(card, "sales"), "BIGINT");
  EXPECT_EQ(Value(*engine, "SELECT min(zip) FROM report_report"), "02134");
  // The merged label reaches every row it covers: North's three stores add up to 600.
  EXPECT_EQ(Value(*engine, "SELECT SUM(sales) FROM report_report WHERE region = 'North'"), "600");
  const std::string notes = Notes(card);
  EXPECT_NE(
      notes.find(
          "2 title row(s) above the header are not part of the table ('Quarterly report', …)"),
      std::string::npos)
      << notes;
  EXPECT_NE(notes.find("B5:B7 ('North')"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 empty row(s) between the data were skipped"), std::string::npos) << notes;
}

TEST_F(WorkbookCorpusTest, SheetsRangesAndOptions) {
  Need("openpyxl");
  Need("hostile");
  auto all = Load("quarters.xlsx");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->describe().size(), 2u);
  EXPECT_EQ(all->describe()[0].name, "quarters_q1_2024");
  EXPECT_EQ(all->describe()[1].name, "quarters_q2_2024");
  EXPECT_NE(Notes(all->describe()[0]).find("'Blank' hold no table"), std::string::npos);

  auto q2 = Open({File("quarters.xlsx").string() + "?sheet=q2.2024"});  // a sheet's name, any case
  ASSERT_TRUE(q2.has_value()) << q2.error().message;
  ASSERT_EQ((*q2)->describe().size(), 1u);
  EXPECT_EQ(Value(**q2, "SELECT SUM(v) FROM quarters_q2_2024"), "5");

  auto ranged = Open({File("quarters.xlsx").string() + "?sheet=Q2.2024&range=A1:B2"});
  ASSERT_TRUE(ranged.has_value()) << ranged.error().message;
  EXPECT_EQ(Value(**ranged, "SELECT COUNT(*) || ':' || SUM(v) FROM quarters_q2_2024"), "1:2");

  auto headerless = Open({File("plain.xlsx").string() + "?header=false"});
  ASSERT_TRUE(headerless.has_value()) << headerless.error().message;
  EXPECT_EQ((*headerless)->describe()[0].row_count, 2);

  struct Bad {
    std::string suffix, says;
    Error::Code code;
  };
  for (const Bad& b : std::vector<Bad>{
           {"?sheet=Q9", "has no sheet 'Q9'; its sheets are 'Q1 2024', 'Q2.2024', 'Blank'",
            Error::Code::kUsage},
           {"?range=A1:B2", "range= needs sheet= too", Error::Code::kUsage},
           {"?range=A0", "range=A3:F200", Error::Code::kUsage},
           {"?delim=;", "describe CSV text, not a workbook", Error::Code::kUsage},
           {"?sheet=Blank", "has no cells in sheet 'Blank'", Error::Code::kData}}) {
    auto e = Open({File("quarters.xlsx").string() + b.suffix});
    ASSERT_FALSE(e.has_value()) << b.suffix;
    EXPECT_EQ(e.error().code, b.code) << b.suffix;
    EXPECT_NE(e.error().message.find(b.says), std::string::npos)
        << b.suffix << ": " << e.error().message;
  }
  quarry::testing::TempDir other;
  auto on_csv = Open({other.Write("t.csv", "a,b\n1,2\n").string() + "?sheet=S"});
  ASSERT_FALSE(on_csv.has_value());
  EXPECT_NE(on_csv.error().message.find("apply to workbooks"), std::string::npos);
}

TEST_F(WorkbookCorpusTest, SheetJsCachedFormulaResultsAndErrors) {
  Need("sheetjs");
  auto engine = Load("orders.xlsx");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "orders_orders");
  EXPECT_EQ(card.row_count, 3);
  EXPECT_EQ(TypeOf(card, "amount"), "DOUBLE");
  EXPECT_EQ(TypeOf(card, "paid"), "BOOLEAN");
  EXPECT_EQ(TypeOf(card, "due"), "DATE");
  // The formulas' saved results, and NULL where the result was #DIV/0!.
  EXPECT_EQ(Value(*engine, "SELECT SUM(amount) FROM orders_orders"), "4.5");
  EXPECT_EQ(Value(*engine, "SELECT COUNT(*) FROM orders_orders WHERE amount IS NULL"), "1");
  EXPECT_EQ(Value(*engine, "SELECT COUNT(lookup) FROM orders_orders"), "1");
  EXPECT_EQ(Value(*engine, "SELECT max(due) FROM orders_orders"), "2024-02-29");
  const std::string notes = Notes(card);
  EXPECT_NE(
      notes.find("3 cell(s) hold Excel errors, read as NULL (column D ('amount'): 1 × #DIV/0!; "
                 "column G ('lookup'): 2 × #N/A)"),
      std::string::npos)
      << notes;
}

TEST_F(WorkbookCorpusTest, AHundredThousandRowSheet) {
  Need("sheetjs-big");
  auto engine = Load("big.xlsx");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "big_big");
  EXPECT_EQ(card.row_count, 100000);
  EXPECT_EQ(TypeOf(card, "id"), "BIGINT");
  EXPECT_EQ(TypeOf(card, "amount"), "DOUBLE");
  EXPECT_EQ(TypeOf(card, "day"), "DATE");
  EXPECT_EQ(Value(*engine, "SELECT SUM(amount) FROM big_big"), "499500.0");
  EXPECT_EQ(Value(*engine, "SELECT COUNT(DISTINCT grp) FROM big_big"), "7");
  EXPECT_EQ(Value(*engine, "SELECT min(day) || '/' || max(day) FROM big_big"),
            "2020-01-01/2023-12-31");
  EXPECT_EQ(Notes(card), "");  // nothing in it misleads: no note cries wolf
}

TEST_F(WorkbookCorpusTest, XlsThroughFreeXl) {
  Need("sheetjs");
  auto engine = Load("cities.xls");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "cities_cities");
  EXPECT_EQ(card.row_count, 300);
  EXPECT_EQ(TypeOf(card, "pop"), "BIGINT");
  EXPECT_EQ(TypeOf(card, "founded"), "DATE");
  EXPECT_EQ(Value(*engine, "SELECT SUM(pop) FROM cities_cities"), "46011919");
  EXPECT_EQ(Value(*engine, "SELECT founded FROM cities_cities WHERE city = 'Lyon'"), "1900-03-01");
}

TEST_F(WorkbookCorpusTest, HandWrittenXmlThatTheFormatAllows) {
  Need("hostile");
  auto engine = Load("odd.xlsx");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "odd_s");
  EXPECT_EQ(card.row_count, 2);
  EXPECT_EQ(TypeOf(card, "day"), "DATE");
  // Rows out of order are put in order; the phonetic reading is no part of the text.
  EXPECT_EQ(Value(*engine, "SELECT string_agg(city, ',' ORDER BY day) FROM odd_s"), "Tokyo,Kyoto");
  EXPECT_EQ(Value(*engine, "SELECT shout FROM odd_s WHERE city = 'Tokyo'"), "Tokyo!");
}

TEST_F(WorkbookCorpusTest, HostilePackagesAreRefusedWithAClearError) {
  Need("hostile");
  struct Case {
    std::string file, says;
  };
  for (const Case& c : std::vector<Case>{
           {"huge_strings.xlsx",
            "its part 'xl/sharedStrings.xml' unpacks to 1024 MiB, over the 512 MiB"},
           {"many_parts.xlsx", "is refused"},
           {"bomb.xlsx", "times larger than it is packed (a zip bomb)"},
           {"climb_entry.xlsx", "an entry whose path climbs out of the package ('../../evil.txt')"},
           {"climb_absolute.xlsx",
            "an entry whose path climbs out of the package ('/etc/evil.txt')"},
           {"climb_rel.xlsx", "a relationship points outside the package"},
           {"laughs.xlsx", "declares a DTD"},
           {"badxml.xlsx", "is not well-formed XML"},
           {"outside.xlsx", "cell reference 'XFE2' is not an Excel cell"},
           {"bad_shared.xlsx", "refers to shared string '7' of 0"},
           {"binary.xlsx", "binary workbook (.xlsb)"},
           {"truncated.xlsx", "is not a readable .xlsx workbook"},
           {"text.xlsx", "is not a readable .xlsx workbook"},
           {"encrypted.xlsx", "password-protected"}}) {
    auto e = Open({File(c.file)});
    ASSERT_FALSE(e.has_value()) << c.file;
    EXPECT_EQ(e.error().code, Error::Code::kData) << c.file;
    EXPECT_NE(e.error().message.find(c.says), std::string::npos)
        << c.file << ": " << e.error().message;
  }
}

TEST_F(WorkbookCorpusTest, ASheetReachesPandasThroughTheExport) {
  Need("openpyxl");
  auto engine = Load("report.xlsx");
  ASSERT_TRUE(engine);
  quarry::testing::TempDir out;
  auto exported = ExportTables(*engine, out.path(), 1000);
  ASSERT_TRUE(exported.has_value()) << exported.error().message;
  ASSERT_EQ(exported->size(), 1u);
  EXPECT_EQ((*exported)[0].rows_written, 4);
  const std::string csv = quarry::testing::ReadFile((*exported)[0].path);
  EXPECT_NE(csv.find("02134"), std::string::npos) << csv;
}

TEST_F(WorkbookCorpusTest, AStrayCellFarRightAndATemplateSheetAreNotTheTable) {
  Need("openpyxl");
  auto engine = Load("stray.xlsx");
  ASSERT_TRUE(engine);
  ASSERT_EQ(engine->describe().size(), 1u);  // the header-only template is not loaded
  const TableCard& card = Card(*engine, "stray_s");
  EXPECT_EQ(card.columns.size(), 3u);  // not 16,384
  EXPECT_EQ(card.row_count, 100);
  EXPECT_EQ(Value(*engine, "SELECT SUM(amt) FROM stray_s"), "12375.0");
  const std::string notes = Notes(card);
  EXPECT_NE(notes.find("1 cell(s) apart from the table, past empty columns, are not part of it "
                       "(XFD50 ('x')); read them with range="),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("'Template' hold no table (a chart, no cells, or a header only)"),
            std::string::npos)
      << notes;
  // Named, the template is a table with no rows, as the user asked.
  auto tpl = Open({File("stray.xlsx").string() + "?sheet=Template"});
  ASSERT_FALSE(tpl.has_value());
  EXPECT_NE(tpl.error().message.find("has a header but no rows"), std::string::npos);
  // A range written as Excel writes references.
  auto part = Open({File("stray.xlsx").string() + "?range=S!$A$1:$B$3"});
  ASSERT_TRUE(part.has_value()) << part.error().message;
  EXPECT_EQ((*part)->describe()[0].name, "stray_s");
  EXPECT_EQ((*part)->describe()[0].row_count, 2);
  EXPECT_EQ((*part)->describe()[0].columns.size(), 2u);
}

TEST_F(WorkbookCorpusTest, AHeaderOverTwoRowsBecomesOneRowOfNames) {
  Need("openpyxl");
  auto engine = Load("twoheader.xlsx");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "twoheader_p");
  ASSERT_EQ(card.columns.size(), 5u);
  EXPECT_EQ(card.columns[0].name, "id");
  EXPECT_EQ(card.columns[1].name, "Sales 2023");
  EXPECT_EQ(card.columns[4].name, "Cost 2024");
  EXPECT_EQ(card.row_count, 2);
  EXPECT_EQ(TypeOf(card, "id"), "BIGINT");
  EXPECT_EQ(Value(*engine, "SELECT SUM(\"Sales 2023\") FROM twoheader_p"), "30");  // not 2053
  EXPECT_NE(Notes(card).find("the header spans rows 1-2"), std::string::npos) << Notes(card);
  EXPECT_EQ(Notes(card).find("empty row"), std::string::npos) << Notes(card);
}

TEST_F(WorkbookCorpusTest, DateFormattedZerosAreNullAndCounted) {
  Need("openpyxl");
  auto engine = Load("zerodate.xlsx");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "zerodate_d");
  EXPECT_EQ(TypeOf(card, "paid"), "DATE");
  EXPECT_EQ(Value(*engine, "SELECT COUNT(*) FROM zerodate_d WHERE paid IS NULL"), "1");
  EXPECT_NE(Notes(card).find("1 cell(s) formatted as dates hold no date"), std::string::npos);
}

TEST_F(WorkbookCorpusTest, EscapesEmptyFormulaResultsAndOverlappingMerges) {
  Need("hostile");
  auto engine = Load("escaped.xlsx");
  ASSERT_TRUE(engine);
  const TableCard& card = Card(*engine, "escaped_s");
  EXPECT_EQ(card.columns.size(), 2u);  // overlapping merges fill each cell once
  EXPECT_EQ(Value(*engine, "SELECT note FROM escaped_s WHERE note LIKE 'line1%'"), "line1\nline2");
  EXPECT_EQ(Value(*engine, "SELECT note FROM escaped_s WHERE note LIKE '%literal'"),
            "_x000D_ literal");
  // <v></v> is a saved empty string, not a missing result.
  EXPECT_EQ(Notes(card).find("no saved result"), std::string::npos) << Notes(card);
  auto dup = Open({File("duplicate.xlsx")});
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message.find("holds two entries named 'xl/worksheets/sheet1.xml'"),
            std::string::npos);
  auto both = Open({File("plain.xlsx").string() + "?sheet=S&range=T!A1:B2"});
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.error().message.find("names sheet 'T' but sheet=S"), std::string::npos);
}

TEST_F(WorkbookCorpusTest, TheWorkbooksAreOnlyRead) {
  Need("openpyxl");
  Need("sheetjs");
  const auto before = quarry::testing::DirectoryFingerprint(dir_->path());
  for (const char* name :
       {"sales.xlsx", "report.xlsx", "quarters.xlsx", "cities.xls", "orders.xlsx"}) {
    auto engine = Load(name);
    ASSERT_TRUE(engine) << name;
    for (const auto& card : engine->describe()) {
      ASSERT_TRUE(engine->Query("SELECT * FROM \"" + card.name + "\"", Limits{}).has_value());
    }
  }
  EXPECT_EQ(quarry::testing::DirectoryFingerprint(dir_->path()), before);
}

}  // namespace
}  // namespace quarry::engine
