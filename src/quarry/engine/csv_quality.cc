// What a CSV holds that misleads a query while the table reads exactly as the file says: rows
// that are totals of the other rows, values that differ only in spaces, case or Unicode form,
// rows repeated exactly, numbers in mixed units. The loader's first pass counts the signs
// (CsvTextQualityAggregates); this file looks closer only where a sign showed, and words the
// notes. Nothing here changes the table: quarry never edits the data.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "quarry/engine/csv_internal.h"

namespace quarry::engine::internal {
namespace {

// A label that reads like a total, lower-cased and trimmed: 'Total', 'Grand total', 'Subtotal',
// 'Sub-total North', 'Totals', 'Sum', 'Summe', 'Gesamt', 'Gesamtsumme', 'Insgesamt', 'Totale',
// 'Total général', and 'Sum', 'Overall', 'All' alone. A word that only starts like one
// ('Totalled', 'Summer', 'Allen', 'All-Bran', 'Sum 41') is no total.
constexpr const char* kTotalLabel =
    "((grand|sub)[ -]?)?totals?([^a-z].*)?|(summe|gesamt|gesamtsumme|insgesamt|totale)([^a-z].*)?|"
    "(sum|overall|all)\\s*:?";

// A number with a unit of measure after it: '3 lb', '1.5 kg', '800g', '12,5 cm', '98.6 °F'.
constexpr const char* kNumberWithUnit = "[+-]?[0-9]+([.,][0-9]+)?\\s?(°?[a-zµ]{1,12}|°)\\.?";

std::string Plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A value as a note shows it: quoted, escaped, and marked when it holds combining accents
// (U+0300..U+036F), which look the same as the composed letter on a screen.
std::string Shown(const std::string& value) {
  bool decomposed = false;
  for (size_t i = 0; i + 1 < value.size(); ++i) {
    const auto a = static_cast<unsigned char>(value[i]);
    const auto b = static_cast<unsigned char>(value[i + 1]);
    if ((a == 0xCC && b >= 0x80) || (a == 0xCD && b <= 0xAF)) decomposed = true;
  }
  return "'" + PromptText(value, 60) + "'" + (decomposed ? " (accents decomposed)" : "");
}

int64_t Int(const std::optional<std::string>& v) {
  if (!v) return 0;
  try {
    return std::stoll(*v);
  } catch (const std::exception&) {
    return 0;
  }
}

std::optional<double> Real(const std::optional<std::string>& v) {
  if (!v) return std::nullopt;
  try {
    return std::stod(*v);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Groups of values that one normalised value would merge: the largest five, with counts. Short
// codes that differ only in which letters are capitals, none of them all lower case, are
// different symbols ('Co' cobalt and 'CO' carbon monoxide, 'mS' and 'MS'), not one value
// written two ways.
Result<void> NoteNearDuplicates(const RunRows& run, const std::string& rows, const std::string& col,
                                std::vector<std::string>& notes) {
  const std::string q = QuoteIdent(col);
  const std::string folded = "lower(trim(nfc_normalize(" + q + ")))";
  auto found = run(
      "WITH f AS (SELECT " + folded + " AS k, " + q + " AS v, count(*) AS n FROM " + rows +
      " WHERE " + q + " IS NOT NULL GROUP BY ALL), g AS (SELECT k, count(*) OVER () AS groups, "
      "sum(n) AS rows FROM f GROUP BY k HAVING count(*) > 1 AND length(k) > 1 AND NOT "
      "(max(length(v)) <= 3 AND bool_and(v = trim(nfc_normalize(v)) AND v <> lower(v))) "
      "ORDER BY rows DESC, k LIMIT 5) "
      "SELECT g.groups, f.k, f.v, f.n FROM f JOIN g USING (k) ORDER BY g.rows DESC, f.k, f.n DESC, "
      "f.v");
  if (!found) return std::unexpected(found.error());
  if (found->empty()) return {};
  const int64_t groups = Int(found->front()[0]);
  std::string shown, key;
  for (const auto& row : *found) {
    const std::string k = row[1].value_or("");
    if (k != key) {
      shown += key.empty() ? "" : "; ";
      key = k;
    } else {
      shown += ", ";
    }
    shown += Shown(row[2].value_or("")) + " (" + Plural(Int(row[3]), "row", "rows") + ")";
  }
  notes.push_back(
      "values that differ only in spaces, case or Unicode form group apart: " + shown +
      (groups > 5 ? "; " + std::to_string(groups) + " such groups in all" : "") +
      ". GROUP BY lower(trim(nfc_normalize(" + q + "))) counts each as one; the data keeps them "
      "as written");
  return {};
}

// The units of a column whose every value is a number, with a unit or without: more than one
// unit, or one unit beside numbers that carry none ('800' among '3 lb' and '1.5 kg': grams?).
Result<void> NoteMixedUnits(const RunRows& run, const std::string& rows, const std::string& col,
                            std::vector<std::string>& notes) {
  const std::string q = QuoteIdent(col);
  auto units = run("SELECT lower(regexp_extract(trim(" + q + "), '[0-9.,]\\s?(°?[A-Za-zµ]+|°)\\.?$', 1)) "
                   "AS u, count(*) AS n FROM " + rows + " WHERE " + q + " IS NOT NULL GROUP BY u "
                   "ORDER BY n DESC, u LIMIT 12");
  if (!units) return std::unexpected(units.error());
  // No units: ordinals (1st), times of day (10am), and CR/DR, which are a sign (a credit).
  static const std::set<std::string> kNoUnits = {"st", "nd", "rd", "th", "am", "pm", "cr", "dr"};
  std::string shown;
  int kinds = 0;
  int64_t bare = 0;
  for (const auto& row : *units) {
    const std::string u = row[0].value_or("");
    if (kNoUnits.count(u) > 0) return {};  // ordinals or times, not measures
    if (u.empty()) {
      bare += Int(row[1]);
      continue;
    }
    ++kinds;
    shown += (shown.empty() ? "'" : ", '") + PromptText(u, 20) + "' (" +
             Plural(Int(row[1]), "row", "rows") + ")";
  }
  if (kinds < 2 && (kinds == 0 || bare == 0)) return {};
  const std::string recipe = "TRY_CAST(regexp_extract(" + q + ", '^[+-]?[0-9.]+') AS DOUBLE)";
  if (kinds < 2) {
    notes.push_back("numbers in " + shown + " and " + Plural(bare, "number", "numbers") +
                    " with no unit: find out which unit those are before comparing or summing "
                    "(the number alone is " + recipe + ")");
    return {};
  }
  notes.push_back("numbers in mixed units: " + shown +
                  (bare > 0 ? " and " + Plural(bare, "number", "numbers") + " with no unit" : "") +
                  "; convert to one unit before comparing or summing (the number alone is " +
                  recipe + ")");
  return {};
}

// A column that a total row adds up: its name and its reading as a number over the text.
struct Addend {
  std::string name, number;
};

// Where the rows that may be totals are: under a label that reads like a total (`label` is
// that column), or under no label at all (`label` empty: every column that holds no number is
// empty in the row, `unlabelled` names them).
struct TotalSearch {
  std::string label;
  std::vector<std::string> unlabelled;
};

// Rows whose numbers are the sum of the other rows, or of the block since the last such row.
// A row with no label must add up in every column that has a number, and is a grand total or
// the subtotal of two rows or more: a blank label is no sign of a total by itself.
Result<void> NoteTotalRows(const RunRows& run, const std::string& rows, const TotalSearch& search,
                           const std::vector<Addend>& numeric, std::vector<std::string>& notes) {
  if (numeric.empty()) return {};
  const bool blank = search.label.empty();
  const std::string l = blank ? std::string() : QuoteIdent(search.label);
  std::string values, sums;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const std::string v = "v" + std::to_string(i);
    values += ", TRY_CAST(" + numeric[i].number + " AS DOUBLE) AS " + v;
    const std::string kept = "CASE WHEN NOT tot THEN " + v + " END";
    sums += ", " + v + ", sum(" + kept + ") OVER (ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING "
            "AND 1 PRECEDING), sum(" + kept + ") OVER (), count(" + kept + ") OVER (ORDER BY rn "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)";
  }
  std::string is_total;
  if (blank) {
    for (const std::string& c : search.unlabelled) {
      is_total += (is_total.empty() ? "" : " AND ") + std::string("coalesce(trim(") +
                  QuoteIdent(c) + "), '') = ''";
    }
  } else {
    is_total = "coalesce(regexp_full_match(lower(trim(" + l + ")), '" + kTotalLabel + "'), false)";
  }
  // The file's order: the rows come from the reader in order (DuckDB keeps insertion order),
  // and row_number() numbers them so.
  auto found = run("WITH r AS (SELECT row_number() OVER () AS rn, " +
                   (blank ? std::string("NULL") : l) + " AS label, " + is_total + " AS tot" +
                   values + " FROM " + rows + ") SELECT rn, label" + sums +
                   " FROM r QUALIFY tot ORDER BY rn LIMIT 1000");
  if (!found) return std::unexpected(found.error());
  constexpr size_t kPer = 4;  // the value, the sum before it, the sum of all, the count before
  std::vector<double> block_start(numeric.size(), 0.0);
  std::vector<int64_t> block_rows(numeric.size(), 0);
  std::vector<std::string> labels;
  std::vector<int64_t> at;
  std::set<std::string> columns;
  bool before_rows = false;  // a total above the rows it adds up (a grand total at the top)
  for (const auto& row : *found) {
    int matched = 0, valued = 0;
    std::vector<double> prefix(numeric.size(), 0.0);
    std::vector<int64_t> counted(numeric.size(), 0);
    std::set<std::string> row_columns;
    bool row_before = false;
    for (size_t i = 0; i < numeric.size(); ++i) {
      const std::optional<double> x = Real(row[2 + kPer * i]);
      prefix[i] = Real(row[3 + kPer * i]).value_or(0.0);
      const double all = Real(row[4 + kPer * i]).value_or(0.0);
      counted[i] = Int(row[5 + kPer * i]);
      if (!x) continue;
      ++valued;
      const double tolerance = std::max(0.005, std::fabs(*x) * 1e-9);
      const double block = prefix[i] - block_start[i];
      const bool nonzero = std::fabs(*x) > tolerance;
      const bool grand = std::fabs(*x - all) <= tolerance;
      const bool subtotal = std::fabs(*x - block) <= tolerance &&
                            (!blank || counted[i] - block_rows[i] >= 2);
      if (nonzero && (grand || subtotal)) {
        ++matched;
        row_columns.insert(numeric[i].name);
        // Nothing counted above it yet: the rows it adds up come after it.
        if (grand && std::fabs(prefix[i]) <= tolerance) row_before = true;
      }
    }
    const bool total = blank ? valued > 0 && matched == valued : matched > 0 && matched * 2 >= valued;
    if (total) {
      block_start = prefix;
      block_rows = counted;
      labels.push_back(row[1].value_or(""));
      at.push_back(Int(row[0]));
      columns.insert(row_columns.begin(), row_columns.end());
      before_rows = before_rows || row_before;
    } else if (!blank) {
      block_start = prefix;
      block_rows = counted;
    }
  }
  if (labels.empty()) return {};
  std::string rows_shown, in_list;
  std::set<std::string> distinct_labels;
  for (size_t i = 0; i < labels.size() && i < 5; ++i) {
    rows_shown += (i ? ", " : "") + (blank ? std::string("row ") + std::to_string(at[i])
                                           : Shown(labels[i]) + " (row " + std::to_string(at[i]) + ")");
  }
  for (const auto& text : labels) {
    if (distinct_labels.insert(text).second) {
      in_list += (in_list.empty() ? "" : ", ") + QuoteLiteral(text);
    }
  }
  std::string cols;
  for (const auto& c : columns) cols += (cols.empty() ? "" : ", ") + c;
  const bool one = labels.size() == 1;
  std::string filter;
  if (blank) {
    filter = QuoteIdent(search.unlabelled.front()) + " IS NOT NULL";
    const int64_t others = static_cast<int64_t>(found->size() - labels.size());
    if (others > 0) {
      filter += " (which also leaves out " + Plural(others, "other row", "other rows") +
                " with no label)";
    }
  } else {
    // A long list of labels is no filter to copy: the pattern they all match is.
    filter = distinct_labels.size() <= 8
                 ? l + " NOT IN (" + in_list + ")"
                 : "NOT coalesce(regexp_full_match(lower(trim(" + l + ")), '" + kTotalLabel +
                       "'), false)";
  }
  notes.push_back(
      (one ? std::string("a row") : std::to_string(labels.size()) + " rows") +
      (blank ? " with no label" : "") + (one ? " holds the total" : " hold totals or subtotals") +
      " of the " + (before_rows ? std::string("other rows") : one ? "rows above it" : "rows above them") +
      " in " + cols + ": " + rows_shown + (labels.size() > 5 ? ", ..." : "") +
      ". SUM over the column counts " + (one ? "it" : "them") + " on top of the rows they add "
      "up; leave " + (one ? "it" : "them") + " out with WHERE " + filter);
  return {};
}

}  // namespace

namespace {

// A currency's token as written and the kind it counts as: '$' and 'USD' are one currency.
struct Currency {
  const char* token;
  const char* kind;
};
constexpr Currency kCurrencyTokens[] = {
    {"$", "$ or USD"}, {"€", "€ or EUR"}, {"£", "£ or GBP"}, {"¥", "¥ or JPY"},
    {"USD", "$ or USD"}, {"EUR", "€ or EUR"}, {"GBP", "£ or GBP"}, {"JPY", "¥ or JPY"},
    {"CHF", "CHF"}, {"CAD", "CAD"},
    {"AUD", "AUD"}, {"NZD", "NZD"}, {"CNY", "CNY"}, {"HKD", "HKD"}, {"SGD", "SGD"},
    {"INR", "INR"}, {"SEK", "SEK"}, {"NOK", "NOK"}, {"DKK", "DKK"}, {"PLN", "PLN"},
    {"CZK", "CZK"}, {"ZAR", "ZAR"}, {"BRL", "BRL"}, {"MXN", "MXN"}};

// An optional space between a number and what it carries, the no-break ones included.
constexpr const char* kGap = "[\\s\\x{00A0}\\x{202F}]?";

}  // namespace

std::string CsvCurrencyPattern() {
  std::string codes;
  for (const Currency& c : kCurrencyTokens) {
    if (std::string(c.token).size() == 3) codes += std::string("|") + c.token;
  }
  return "[$€£¥]" + codes;
}

std::string CsvCurrencyKind(const std::string& v) {
  const std::string token = "regexp_extract(" + v + ", '" + CsvCurrencyPattern() + "')";
  std::string sql = "CASE " + token;
  for (const Currency& c : kCurrencyTokens) {
    sql += std::string(" WHEN '") + c.token + "' THEN '" + c.kind + "'";
  }
  return sql + " END";
}

const std::vector<std::string>& CsvCurrencies() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out;
    for (const Currency& c : kCurrencyTokens) {
      if (std::find(out.begin(), out.end(), c.kind) == out.end()) out.push_back(c.kind);
    }
    return out;
  }();
  return kinds;
}

std::string CsvPeopleNumberPattern(bool decimal_comma) {
  const std::string c = "(" + CsvCurrencyPattern() + ")";
  const std::string before = "(" + c + kGap + ")?";
  const std::string after = "(" + std::string(kGap) + c + ")?";
  // Leading zeros are left out: '(020)' is an area code and '0042' a code, not numbers.
  const std::string number =
      decimal_comma
          ? "(0|[1-9][0-9]{0,2}([.\\s\\x{00A0}\\x{202F}][0-9]{3})+|[1-9][0-9]*)(,[0-9]+)?"
          : "(0|[1-9][0-9]{0,2}(,[0-9]{3})+|[1-9][0-9]*)(\\.[0-9]+)?";
  const std::string percent = std::string(kGap) + "%?";
  return "([+-]?" + before + "[+-]?" + number + after + percent + "-?|[+-]?" + before + "[(]" +
         before + number + after + percent + "[)]" + after + ")";
}

std::string CsvPeopleNumber(const std::string& v, const char* cast, bool decimal_comma) {
  const std::string t = "trim(" + v + ")";
  // What surrounds the number goes; what is inside it stays, so '10-20' fails to read.
  const std::string digits =
      decimal_comma ? "replace(regexp_replace(" + t + ", '^[^0-9,]*|[^0-9,]*$|[.\\s\\x{00A0}\\x{202F}]', "
                      "'', 'g'), ',', '.')"
                    : "regexp_replace(" + t + ", '^[^0-9.]*|[^0-9.]*$|,', '', 'g')";
  return "(CASE WHEN regexp_matches(" + t + ", '^[^0-9]*[(-]|-$') THEN -1 ELSE 1 END) * " + cast +
         "(" + digits + " AS DOUBLE)";
}

bool CsvNumericType(const std::string& type) {
  return type == "BIGINT" || type == "INTEGER" || type == "SMALLINT" || type == "TINYINT" ||
         type == "HUGEINT" || type == "UBIGINT" || type == "UINTEGER" || type == "DOUBLE" ||
         type == "FLOAT" || type.starts_with("DECIMAL");
}

std::vector<std::string> CsvTextQualityAggregates(const std::string& q) {
  return {"count(DISTINCT " + q + ")",
          "count(DISTINCT lower(trim(nfc_normalize(" + q + "))))",
          "count_if(regexp_full_match(lower(trim(" + q + ")), '" + kTotalLabel + "'))",
          "count_if(regexp_full_match(lower(trim(" + q + ")), '" + kNumberWithUnit + "'))"};
}

std::string CsvDistinctRowsAggregate(const std::vector<std::string>& quoted_columns) {
  std::string args;
  for (const auto& q : quoted_columns) args += (args.empty() ? "" : ", ") + q;
  return "count(DISTINCT hash(" + args + "))";
}

Result<void> NoteCsvQuality(const RunRows& run, const std::string& rows,
                            const std::vector<std::string>& cols,
                            const std::vector<CsvReading>& readings,
                            const std::vector<CsvColumnStats>& stats, int64_t total_rows,
                            int64_t distinct_rows, std::vector<std::string>& table_notes,
                            std::map<std::string, std::vector<std::string>>& column_notes) {
  if (distinct_rows > 0 && distinct_rows < total_rows) {
    const int64_t copies = total_rows - distinct_rows;
    table_notes.push_back(
        Plural(copies, "row is an exact copy", "rows are exact copies") + " of another row (" +
        std::to_string(distinct_rows) + " distinct of " + std::to_string(total_rows) +
        (copies * 2 == total_rows ? "; every row appears twice, as when an export is appended to "
                                    "itself"
                                  : "") +
        "): count(*) and SUM count every copy. Copies can be real (two equal orders), so none was "
        "dropped; SELECT DISTINCT * reads each once where they are not");
  }
  // The columns a total adds up: numbers as the table reads them ('$1,234.50' too), but no
  // identifiers (an id 3 beside ids 1 and 2 is their sum by chance).
  auto id_like = [](std::string name) {
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name == "id" || name.ends_with("_id") || name.ends_with(" id") || name == "no" ||
           name == "nr" || name == "#";
  };
  std::vector<Addend> numeric;
  std::vector<std::string> unlabelled;
  bool every_label_has_a_gap = true;
  for (size_t i = 0; i < cols.size(); ++i) {
    if (readings[i].number) {
      if (!id_like(cols[i])) numeric.push_back({cols[i], readings[i].expr});
    } else {
      unlabelled.push_back(cols[i]);
      if (stats[i].non_null >= total_rows) every_label_has_a_gap = false;
    }
  }
  for (size_t i = 0; i < cols.size(); ++i) {
    const CsvColumnStats& s = stats[i];
    if (readings[i].expr != QuoteIdent(cols[i]) || s.non_null == 0) continue;
    std::vector<std::string>& notes = column_notes[cols[i]];
    if (s.total_labels > 0 && s.total_labels < s.non_null) {
      if (auto r = NoteTotalRows(run, rows, {cols[i], {}}, numeric, table_notes); !r) return r;
    }
    // A column of nearly unique values is identifiers, where case is meant ('aB3x', 'Ab3X').
    const bool identifiers = s.non_null >= 20 && s.distinct * 10 >= s.non_null * 9;
    if (s.distinct_folded > 0 && s.distinct_folded < s.distinct && !identifiers) {
      if (auto r = NoteNearDuplicates(run, rows, cols[i], notes); !r) return r;
    }
    if (s.with_unit >= 2 && s.with_unit + s.doubles >= s.non_null) {
      if (auto r = NoteMixedUnits(run, rows, cols[i], notes); !r) return r;
    }
  }
  // A total under no label: looked for only where every label column has an empty cell, and
  // there are rows enough to add up.
  if (!unlabelled.empty() && every_label_has_a_gap && total_rows >= 3) {
    if (auto r = NoteTotalRows(run, rows, {"", unlabelled}, numeric, table_notes); !r) return r;
  }
  return {};
}

}  // namespace quarry::engine::internal
