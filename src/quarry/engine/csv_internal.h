// Pieces of the CSV loader: csv_loader.cc plans the reading of a file, csv_columns.cc decides
// each column from what the plan's whole-file pass counted. Only they include this header.
#pragma once

#include <cstdint>
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
  int64_t numeric_start = 0;
  std::vector<ValueCount> marker_values;  // the markers as written, most rows first
  // Sentinels among the numbers the values start with (CsvLeadingNumber), and their bounds.
  std::optional<Sentinels> sentinels;
  std::optional<std::string> lead_low, lead_high;
};

struct CsvColumn {
  std::string name;
  std::string sniffed;  // the sniffer's type
  std::string typed;    // the column's text read as that type (in the sniffed date format)
  bool user_typed = false;  // the user gave its type (?types=)
  bool resniff = false;     // the sniffer's types do not hold (a header repeated mid-file)
};

// The column's expression over its text, and the notes that explain it (added to `notes`).
std::string DecideCsvColumn(const CsvColumn& column, const CsvColumnStats& s,
                            std::vector<std::string>& notes);

// The number a text value starts with, as SQL over the text expression `v` ("22.5 C" gives
// 22.5, "-999" -999, "N/A" NULL): a sentinel hides among numbers written with their unit.
std::string CsvLeadingNumber(const std::string& v);

}  // namespace quarry::engine::internal
