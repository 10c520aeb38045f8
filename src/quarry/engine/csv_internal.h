// Pieces of the CSV loader: csv_loader.cc plans the reading of a file, csv_columns.cc decides
// each column from what the plan's whole-file pass counted. Only they include this header.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "quarry/engine/card_notes_internal.h"

namespace quarry::engine::internal {

// What the loader's pass over a column read as text counted: how many values fit each type
// and pattern, and the missing values found among them.
struct CsvColumnStats {
  int64_t non_null = 0, ints = 0, long_ints = 0, too_long = 0, doubles = 0, leading_zero = 0;
  int64_t decimal_comma = 0, thousands = 0, dates = 0, timestamps = 0, markers = 0;
  // Thousands-separated values with a decimal part ('1,454.80'): the column is DOUBLE, not
  // BIGINT, even when no value is a plain number.
  int64_t thousands_decimals = 0;
  // Values of two or three capital letters ('NA' is Namibia among ISO codes, not a marker).
  int64_t upper_codes = 0;
  int64_t numeric_start = 0;
  // Numbers a DOUBLE cannot hold: past 1.8e308 (read as infinity), or with an integer part of
  // more than 17 digits (rounded, so that ids differing in their last digits become equal).
  int64_t infinite = 0, long_digits = 0;
  // Numbers written for people (CsvPeopleNumberPattern): how many values are one with a
  // decimal point, and with a decimal comma ('1.234,50 €'); of those the accounting negatives
  // '(1,234.00)' and '$(5.00)', the trailing minus '1,234.00-', percent strings '45%' and
  // amounts with a currency '$12.50', 'USD 1,234.00'; how many currencies occur; Excel's text
  // guard '="0042"'.
  int64_t people = 0, people_comma = 0, paren = 0, trailing_minus = 0, percent = 0, currency = 0;
  int64_t currency_kinds = 0, excel_text = 0;
  // Of those, the ones with the minus sign U+2212 ('−5.00') and with thousands grouped by a
  // space or an apostrophe ('1 234,50', "1'234.50"); and the values that are such a number
  // marked CR or DR (credit, debit), whose sign depends on the account.
  int64_t minus_sign = 0, space_grouped = 0, credit_debit = 0;
  // Of those with a decimal point and no comma, how many have three digits after it ('€1.234'):
  // when all do, the point may group thousands.
  int64_t with_point = 0, three_decimals = 0;
  int64_t currency_sign = 0;  // with one kind: its 1-based place in CsvCurrencies()
  // Text columns (csv_quality.cc): distinct values as written and after trim, case folding and
  // NFC; labels that read like a total ('Grand total'); numbers with a unit ('3 lb').
  int64_t distinct = 0, distinct_folded = 0, total_labels = 0, with_unit = 0;
  std::vector<ValueCount> marker_values;  // the markers as written, most rows first
  // Sentinels among the numbers the values start with (CsvLeadingNumber), and their bounds.
  std::optional<Sentinels> sentinels;
  std::optional<std::string> lead_low, lead_high;
};

struct CsvColumn {
  std::string name;
  std::string sniffed;      // the sniffer's type
  std::string typed;        // the column's text read as that type (in the sniffed date format)
  bool user_typed = false;  // the user gave its type (?types=)
  bool resniff = false;     // the sniffer's types do not hold (a header repeated mid-file)
};

// A number as people write it: an optional sign, an accounting bracket, a currency sign or
// ISO code before or after, thousands separators, decimals, a percent sign, a trailing minus
// ('-$1,234.50', '(1,234.00)', '$(5.00)', '1,234.00-', '45%', 'USD 12.50', '12.50 €'). With
// `decimal_comma`, ',' marks decimals and '.' or a space groups thousands ('1.234,50 €',
// '45,5 %'). A regular expression for regexp_full_match over the trimmed text.
std::string CsvPeopleNumberPattern(bool decimal_comma);
// SQL over the text expression `v`: whether its thousands are grouped by a space, a no-break
// space or an apostrophe.
std::string CsvSpaceGrouped(const std::string& v);
// The currencies such a number may carry, as a regular expression ('[$€£¥]|USD|EUR|...').
std::string CsvCurrencyPattern();
// SQL over the text expression `v`: its currency as one kind ('USD' is '$'), or NULL.
std::string CsvCurrencyKind(const std::string& v);
// The kinds CsvCurrencyKind gives, in the order CsvColumnStats::currency_sign counts them.
const std::vector<std::string>& CsvCurrencies();
// Such a value as a DOUBLE, SQL over the text expression `v`: the signs, brackets, currency and
// percent around the number dropped, an accounting bracket or a trailing minus made minus
// ('(1,234.00)' is -1234, '1,234.00-' -1234, '45%' 45), inner text left to fail ('10-20').
// `cast` is CAST (a value that is none fails the query) or TRY_CAST (it reads as NULL).
std::string CsvPeopleNumber(const std::string& v, const char* cast = "CAST",
                            bool decimal_comma = false);

// How a column is read: SQL over its text, and whether that gives a number (which a total
// row can add up).
struct CsvReading {
  std::string expr;
  bool number = false;
};

// The column's reading, and the notes that explain it (added to `notes`).
CsvReading DecideCsvColumn(const CsvColumn& column, const CsvColumnStats& s,
                           std::vector<std::string>& notes);

// The number a text value starts with, as SQL over the text expression `v` ("22.5 C" gives
// 22.5, "-999" -999, "N/A" NULL): a sentinel hides among numbers written with their unit.
std::string CsvLeadingNumber(const std::string& v);

// A DuckDB type that holds numbers (BIGINT, DOUBLE, DECIMAL(18,3), ...).
bool CsvNumericType(const std::string& type);

// The sniffer's columns, name and type, in order.
using CsvSniffedColumns = std::vector<std::pair<std::string, std::string>>;
// Sniffs again with the header on and `skip` lines skipped, giving the columns.
using CsvResniff = std::function<Result<CsvSniffedColumns>(int64_t skip)>;

// A reading the sniffer got wrong about the header (csv_header.cc).
struct CsvHeaderFix {
  bool header = true;  // read with a header
  int64_t skip = 0;    // lines before it
  std::string note;    // what was decided, for the card
};
// Judges the sniffer's `header` and `skip` against the first lines and the columns below them:
// a first line of years rising across the columns is a wide table's header, and a title line
// with the header's width above a line of names is a preamble. `reader` is
// "read_csv(<path>, <dialect>, all_varchar = true" without its closing bracket. nullopt: the
// sniffer was right.
Result<std::optional<CsvHeaderFix>> CheckCsvHeader(const RunRows& run, const std::string& reader,
                                                   bool header, int64_t skip,
                                                   const CsvSniffedColumns& columns,
                                                   const CsvResniff& resniff);

// The first of `lines` (the file's first lines, raw) when it is a title written as one quoted
// field ('"Sales, all regions"') above lines that split into a table: the sniffer reads the
// delimiters inside its quotes as a header's. nullopt: no such title.
std::optional<std::string> QuotedTitleLine(const std::vector<std::string>& lines, char quote);

// Refuses a file of nothing but blank lines (or a byte-order mark), which has no header and no
// rows: read, it would be a column 'column0' of NULLs that count(*) counts. Files over 64 KB
// pass unread.
Result<void> RefuseBlankCsv(const std::string& path);

// Whether a one-column file's first line `text` (unquoted) is a number, and so its first value
// rather than a name: '1,000', '$5.00', '(12)'; a year (1800..2100) may be a name.
bool CsvLineIsANumber(const std::string& text);

// The aggregates that csv_quality.cc reads from the loader's first pass over the rows as text:
// for a text column `q`, the CsvColumnStats fields distinct, distinct_folded, total_labels and
// with_unit, in that order; for the whole row, how many distinct rows there are (`columns`
// quoted, all of them).
std::vector<std::string> CsvTextQualityAggregates(const std::string& q);
std::string CsvDistinctRowsAggregate(const std::vector<std::string>& quoted_columns);

// What the first pass counted that misleads a query without changing the table (csv_quality.cc):
// rows that are totals of the others (under a label that reads like one, or under no label at
// all), values that differ only in spaces, case or Unicode form, rows repeated exactly, columns
// of numbers in mixed units. Adds a note to `table_notes` or to `column_notes` for each, naming
// the rows or values and what a query can do; runs a query of its own over `rows` (the table
// read as text, in the file's order) only for a column where the pass found a sign.
// `readings`: how each column is read (DecideCsvColumn), `total_rows` and `distinct_rows` from
// the pass.
Result<void> NoteCsvQuality(const RunRows& run, const std::string& rows,
                            const std::vector<std::string>& cols,
                            const std::vector<CsvReading>& readings,
                            const std::vector<CsvColumnStats>& stats, int64_t total_rows,
                            int64_t distinct_rows, std::vector<std::string>& table_notes,
                            std::map<std::string, std::vector<std::string>>& column_notes);

}  // namespace quarry::engine::internal
