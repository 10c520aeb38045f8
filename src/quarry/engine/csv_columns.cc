// How the CSV loader reads one column, decided from what its whole-file pass counted (every
// row, or the sniffer's sample of a large file): the sniffer's type, exact HUGEINT or text for
// long integers, numbers behind decimal commas and thousands separators, and text kept as text
// with a note on its missing-value markers, sentinels and stray values.
#include <algorithm>

#include "quarry/engine/csv_internal.h"

namespace quarry::engine::internal {

std::string CsvLeadingNumber(const std::string& v) {
  return "TRY_CAST(regexp_extract(trim(" + v +
         "), '^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)') AS DOUBLE)";
}

namespace {

// A column of numbers written for people ('(1,234.00)', '45%', '$12.50', '1.234,50 €'): read as
// DOUBLE when every value is one and they agree (all percent or none, one currency, one decimal
// mark); otherwise a note on how to read them, since a cleaning recipe that drops the bracket
// flips the sign.
std::optional<std::string> PeopleNumbers(const std::string& q, const CsvColumnStats& s, int64_t n,
                                         std::vector<std::string>& notes) {
  const int64_t marked =
      s.paren + s.trailing_minus + s.percent + s.currency + s.minus_sign + s.space_grouped;
  // A decimal comma only where a value cannot be read with a point: '1,234 €' is a thousand.
  const bool comma = s.people_comma > s.people;
  const int64_t people = std::max(s.people, s.people_comma);
  if (marked == 0 || people * 10 < n * 9) return std::nullopt;
  const auto& kinds_known = CsvCurrencies();
  const std::string sign = s.currency_kinds == 1 && s.currency_sign >= 1 &&
                                   s.currency_sign <= static_cast<int64_t>(kinds_known.size())
                               ? kinds_known[static_cast<size_t>(s.currency_sign - 1)]
                               : "a currency sign";
  std::vector<std::string> kinds;
  auto count = [](int64_t k, const char* one, const char* many) {
    return std::to_string(k) + " " + (k == 1 ? one : many);
  };
  if (s.paren > 0) {
    kinds.push_back(count(s.paren, "accounting negative", "accounting negatives") +
                    " such as (1,234.00)");
  }
  if (s.trailing_minus > 0) {
    kinds.push_back(count(s.trailing_minus, "negative", "negatives") +
                    " with the minus after the number such as 1,234.00-");
  }
  if (s.minus_sign > 0) {
    kinds.push_back(count(s.minus_sign, "negative", "negatives") +
                    " written with the minus sign − (U+2212)");
  }
  if (s.space_grouped > 0) {
    kinds.push_back(count(s.space_grouped, "number", "numbers") +
                    " with thousands grouped by a space or an apostrophe such as 1 234");
  }
  if (s.percent > 0) {
    kinds.push_back(count(s.percent, "percent string", "percent strings") + " such as 45%");
  }
  if (s.currency > 0) {
    kinds.push_back(count(s.currency, "amount", "amounts") + " written with " + sign);
  }
  std::string listed;
  for (size_t i = 0; i < kinds.size(); ++i) {
    listed += (i == 0 ? "" : i + 1 == kinds.size() ? " and " : ", ") + kinds[i];
  }
  const std::string mark =
      comma ? "; ',' marks decimals and '.' or a space groups thousands (1.234,50 is 1234.5)" : "";
  const bool mixed_percent = s.percent > 0 && s.percent < people;
  // Every value in brackets is no accounting column (where positives go bare): standard errors
  // under coefficients, or notes. Read as minus they would all flip sign.
  const bool all_bracketed = s.paren > 0 && s.paren == people;
  if (people == n && !mixed_percent && s.currency_kinds <= 1 && !all_bracketed) {
    // '€1.234', '€2.500': three decimals in every value that has a point is how '.' groups
    // thousands in much of Europe.
    // Not in dollars, pounds or yen, whose point is a decimal point ('$3.499' a gallon).
    const bool point_currency = s.currency > 0 && s.currency_kinds == 1 && s.currency_sign >= 1 &&
                                s.currency_sign != 2 && s.currency_sign <= 4;
    const bool maybe_grouped =
        !comma && !point_currency && s.three_decimals >= 2 && s.three_decimals == s.with_point;
    notes.push_back(
        "numbers written for people were read as DOUBLE: " + listed +
        (s.paren + s.trailing_minus + s.minus_sign > 0 ? "; the negatives were read as minus"
                                                       : "") +
        mark + (s.percent > 0 ? "; a percent is its number of percent (45% is 45, not 0.45)" : "") +
        (s.currency > 0 ? "; the currency was dropped" : "") +
        (maybe_grouped ? "; every value with a point has three digits after it "
                         "(1.234), as where the point groups thousands: if it does "
                         "here, each value read with a fraction is 1000 times "
                         "larger (1.234 is 1234)"
                       : ""));
    return CsvPeopleNumber(q, "CAST", comma);
  }
  const std::string why =
      all_bracketed   ? "every value is in brackets: accounting negatives, or standard "
                        "errors and other annotations?"
      : mixed_percent ? "some values are percent strings and some are not"
      : s.currency_kinds > 1
          ? std::to_string(s.currency_kinds) + " currencies are mixed"
          : std::to_string(n - people) + " of " + std::to_string(n) + " values are not numbers";
  notes.push_back("kept as text (" + why + "): " + listed + mark + "; read one as a number with " +
                  CsvPeopleNumber(q, "TRY_CAST", comma) + ", which keeps the minus of a bracket");
  return q;
}

}  // namespace

namespace {

CsvReading DecideReading(const CsvColumn& column, const CsvColumnStats& s,
                         std::vector<std::string>& notes) {
  const std::string q = QuoteIdent(column.name);
  const CsvReading as_sniffed{column.typed, CsvNumericType(column.sniffed)};
  const CsvReading text_reading{q, false};
  if (column.user_typed) return as_sniffed;
  const int64_t n = s.non_null;
  if (n <= 0) return as_sniffed;
  const int64_t all_ints = s.ints + s.long_ints + s.too_long;
  if (all_ints == n && s.leading_zero == 0 && (s.long_ints > 0 || s.too_long > 0)) {
    if (s.too_long > 0) {
      notes.push_back(
          "integers longer than 38 digits: kept exact as text; compare them as "
          "strings, never as numbers");
      return text_reading;
    }
    notes.push_back(
        "integers past 64 bits: kept exact as HUGEINT (a DOUBLE would round "
        "them and merge distinct ids)");
    return {"CAST(" + q + " AS HUGEINT)", true};
  }
  const bool text = column.sniffed == "VARCHAR";
  if (!text && !column.resniff) return as_sniffed;
  if (s.ints == n && s.leading_zero == 0) return {"CAST(" + q + " AS BIGINT)", true};
  if (s.doubles == n && s.leading_zero == 0) return {"CAST(" + q + " AS DOUBLE)", true};
  if (!text) return as_sniffed;
  // Decimal commas (1.234,50; 12,00) win over thousands separators when some value can only
  // be read that way: a comma followed by other than three digits.
  if (s.decimal_comma > 0 && s.decimal_comma + s.ints == n && s.decimal_comma > s.thousands) {
    notes.push_back(
        "numbers written with a decimal comma (e.g. 1.234,50) were read as DOUBLE: "
        "'.' groups thousands and ',' marks decimals");
    return {"CAST(replace(replace(trim(" + q + "), '.', ''), ',', '.') AS DOUBLE)", true};
  }
  if (s.thousands > 0 && s.thousands + s.ints + (s.doubles - s.ints) >= n &&
      s.thousands + s.doubles >= n) {
    notes.push_back(
        "numbers written with thousands separators (e.g. 1,234,567) were read as "
        "numbers with the commas removed");
    const bool fractions = s.doubles > s.ints || s.thousands_decimals > 0;
    return {"CAST(replace(trim(" + q + "), ',', '') AS " +
                (fractions ? std::string("DOUBLE") : std::string("BIGINT")) + ")",
            true};
  }
  if (s.excel_text == n) {
    notes.push_back(
        "Excel's text guard (=\"0042\") removed: read as the text inside it, leading "
        "zeros kept");
    return {"regexp_extract(trim(" + q + "), '^=\"(.*)\"$', 1)", false};
  }
  if (s.credit_debit > 0 && (s.credit_debit + std::max(s.people, s.people_comma)) * 10 >= n * 9) {
    notes.push_back(
        "kept as text: " + std::to_string(s.credit_debit) + " of " + std::to_string(n) +
        " amounts are marked CR or DR (credit, debit), and which of them is negative depends on "
        "the account; the number alone is " +
        CsvPeopleNumber(q, "TRY_CAST") + " and the mark is " + q + " LIKE '%CR'");
    return text_reading;
  }
  if (auto people = PeopleNumbers(q, s, n, notes)) return {*people, *people != q};
  if (column.resniff && s.dates == n) return {"CAST(" + q + " AS DATE)", false};
  if (column.resniff && s.timestamps == n) return {"CAST(" + q + " AS TIMESTAMP)", false};
  if (s.markers > 0 || s.sentinels) {
    std::vector<ValueCount> markers = s.marker_values;
    if (markers.empty()) markers.push_back({"?", s.markers});  // the breakdown did not read
    std::string note =
        MissingValueNote(s.markers > 0 ? markers : std::vector<ValueCount>{}, s.sentinels);
    std::string sentinels;
    if (s.sentinels) {
      for (const ValueCount& v : s.sentinels->values) {
        sentinels += (sentinels.empty() ? "'" : "', '") + v.value;
      }
      sentinels += "'";
    }
    // 'NaN' is a marker that DuckDB also reads as a DOUBLE: counted once.
    int64_t numbers = s.doubles;
    std::string nan;
    for (const ValueCount& m : s.marker_values) {
      if (m.value.size() == 3 && (m.value[0] | 0x20) == 'n' && (m.value[1] | 0x20) == 'a' &&
          (m.value[2] | 0x20) == 'n') {
        numbers -= m.rows;
        nan = m.value;
      }
    }
    if (s.markers > 0 && numbers + s.markers == n && numbers > 0) {
      note += "; the other " + std::to_string(numbers) +
              " values are numbers, so the column "
              "is text: TRY_CAST(" +
              q + " AS DOUBLE) reads them with the markers as NULL";
      if (!nan.empty()) note += ", but '" + nan + "' as NaN (isnan() finds it)";
      if (s.sentinels) note += " (leave out " + sentinels + " too)";
    } else if (s.markers > 0 && s.people > 0 && s.people + s.markers == n) {
      note += "; the other " + std::to_string(s.people) +
              " values are numbers written for people "
              "(1,234.50, 45%, $5.00): " +
              CsvPeopleNumber(q, "TRY_CAST") +
              " reads them with "
              "the markers as NULL";
    } else if (s.markers > 0 && s.dates > 0 && s.dates + s.markers == n) {
      note += "; the other " + std::to_string(s.dates) + " values are dates: TRY_CAST(" + q +
              " AS DATE) reads them with the markers as NULL";
    } else if (s.sentinels) {
      note += "; leave " + sentinels + " out before aggregating";
    }
    notes.push_back(note);
  } else if (s.doubles == n && s.leading_zero > 0) {
    notes.push_back("kept as text: " + std::to_string(s.leading_zero) +
                    " values have leading zeros (codes such as zip codes, not amounts)");
  } else if (s.doubles > 0 && s.doubles * 10 >= n * 9) {
    notes.push_back(std::to_string(s.doubles) + " of " + std::to_string(n) +
                    " values are numbers, the rest text: TRY_CAST(" + q +
                    " AS DOUBLE) reads the numbers and gives NULL for the rest");
  } else if (s.decimal_comma > 0 && s.decimal_comma * 2 >= n) {
    notes.push_back(std::to_string(s.decimal_comma) + " of " + std::to_string(n) +
                    " values look like numbers with a decimal comma (1.234,50), the rest do "
                    "not: kept as text");
  } else if (s.thousands > 0 && s.thousands * 2 >= n) {
    notes.push_back(std::to_string(s.thousands) + " of " + std::to_string(n) +
                    " values look like numbers with thousands separators (1,234,567), the "
                    "rest do not: kept as text");
  }
  return text_reading;
}

}  // namespace

CsvReading DecideCsvColumn(const CsvColumn& column, const CsvColumnStats& s,
                           std::vector<std::string>& notes) {
  const std::string q = QuoteIdent(column.name);
  if (!column.user_typed && s.infinite > 0) {
    notes.push_back("kept as text: " + std::to_string(s.infinite) + " of " +
                    std::to_string(s.non_null) +
                    " values are past what a DOUBLE holds (1.8e308) "
                    "and would read as infinity; compare them as text");
    return {q, false};
  }
  CsvReading reading = DecideReading(column, s, notes);
  if (reading.number && s.long_digits > 0 && !reading.expr.ends_with("AS HUGEINT)") &&
      !column.user_typed) {
    notes.push_back(std::to_string(s.long_digits) +
                    (s.long_digits == 1 ? " value has" : " values have") +
                    " more than 17 digits, more than a DOUBLE keeps: rounded (ids that differ "
                    "only in their last digits read as equal); where exactness matters, compare "
                    "them as the file writes them");
  }
  return reading;
}

}  // namespace quarry::engine::internal
