// What a column's values say that its type does not, worded once for every engine's cards:
// missing-value markers written as text ('N/A', 'null'), numeric sentinels (-999), booleans
// written as text ('T'/'F'). The CSV loader, the SQLite cards and the DuckDB profile find them
// with their own SQL and describe them here. Only the engine module includes this header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

// Values analysts' tools write for "no value", lower-case, as a SQL list for
// `lower(trim(x)) IN (...)`. '' is a blank cell kept as text (SQLite; spaces in a CSV).
extern const char* const kMarkerList;
// Booleans written as words, lower-case, as a SQL list for `lower(trim(x)) IN (...)`.
extern const char* const kBooleanList;

bool IsBooleanWord(std::string_view text);  // t, f, true, false, y, n, yes, no (any case)
bool IsTrueWord(std::string_view text);     // t, true, y, yes (any case)

struct ValueCount {
  std::string value;  // a marker as written ('N/A'), a sentinel as a number ("-999")
  int64_t rows = 0;
};

// The markers the text expression `text` holds in `from` (a table or subquery), as written,
// most rows first (then by value), at most 6. SQL both SQLite and DuckDB run.
Result<std::vector<ValueCount>> CountMarkers(const RunRows& run, const std::string& from,
                                             const std::string& text);

// Numeric sentinels: a classic "no value" literal (-99999, -9999, -999, -99, 999, 9999, 99999,
// 999999, and -1) that lies far outside the column's other numbers. Far means: at least as far
// from the nearest other number as those numbers are spread (-999 beside 15..80 is; -999 among
// balances from -5,000 to 20,000 is not). -1 is one only beside whole numbers from 0 spread over
// 10 or more (ages, counts), where nothing else is negative. At least 3 other numbers are
// needed to judge.
struct Sentinels {
  std::vector<ValueCount> values;  // most rows first
  double low = 0;                  // the other numbers' range
  double high = 0;
};
bool IsSentinelLiteral(double value);

// Finds the sentinels of the numeric SQL expression `number` (NULL where the row holds no
// number) over `from`, given the expression's bounds: a sentinel is always one of them, so
// nothing is queried unless `low` or `high` is a sentinel literal. nullopt: none.
Result<std::optional<Sentinels>> FindSentinels(const RunRows& run, const std::string& from,
                                               const std::string& number, std::optional<double> low,
                                               std::optional<double> high);

// "'N/A' (19 rows) looks like a missing-value marker and -999 (33 rows) like a sentinel for a
// missing number: the other numbers lie in 15.2..80.1". Empty when there is neither.
std::string MissingValueNote(const std::vector<ValueCount>& markers,
                             const std::optional<Sentinels>& sentinels);

// "'null'", "'null', 'N/A'" or "-999, -9999": the values as a SQL list, for `x NOT IN (...)`.
std::string SqlValues(const std::vector<ValueCount>& markers);
std::string SqlNumbers(const Sentinels& sentinels);

// A number as the cards write it: shortest round-trip form, no ".0" ("-999", "15.2").
std::string NumberText(double value);
// A bound from the statistics as a number; nullopt when it is none.
std::optional<double> ParseNumber(const std::optional<std::string>& text);

// DuckDB-served tables: a note on the sentinels of every numeric column, judged from its
// bounds, so only a column whose min or max is a sentinel literal is read again.
Result<void> NoteNumericSentinels(TableCard& card, const std::string& sql_name, const RunRows& run);

// Dates written as text (text_dates.cc).
struct TextDate {
  int year = 0, month = 0, day = 0;
  std::string format;  // as strptime reads it: "%b %d %Y", "%B %d, %Y", "%d %b %Y", "%d-%b-%Y"
  bool either_month = false;  // "May": %b and %B both read it (format says %b)
  std::string Iso() const;    // "2005-04-01"
};
// 'Apr 1 2005', 'Apr 01 2005', 'April 1, 2005', '1 Apr 2005', '01-Apr-2005': English month
// names or their three-letter abbreviations in any case, a day that exists, a 4-digit year.
// nullopt for anything else (ISO dates included: engines read those already).
std::optional<TextDate> ParseTextDate(std::string_view text);
// Every text column whose samples are all such dates is read value by value (up to 50,000
// distinct values); when nine rows in ten at least are dates, it gets ColumnCard::date_format,
// min/max as ISO dates and a note on reading them in `dialect`. The data stays as it is.
Result<void> NoteTextDates(TableCard& card, const std::string& sql_name, const RunRows& run,
                           Dialect dialect);

// SQLite (sqlite_notes.cc). Whether a declared type has INTEGER, REAL or NUMERIC affinity.
bool NumericDeclared(std::string type);
// What a SQLite column's card scan counts beyond the statistics (storage classes, markers,
// booleans and numbers written as text, numeric bounds) and the notes made of it. `from` is
// how queries reach the table.
ColumnExtra SqliteColumnExtra(const std::string& from, const std::string& column,
                              const std::string& declared);

}  // namespace quarry::engine::internal
