// What a CSV holds that misleads a query while the table reads exactly as the file says: rows
// that are totals of the other rows, values that differ only in spaces, case or Unicode form,
// rows repeated exactly, numbers in mixed units. The loader's first pass counts the signs
// (CsvTextQualityAggregates); this file looks closer only where a sign showed, and words the
// notes. Nothing here changes the table: quarry never edits the data.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include "quarry/engine/csv_internal.h"

namespace quarry::engine::internal {
namespace {

// A label that reads like a total, lower-cased and trimmed: 'Total', 'Grand total', 'Subtotal',
// 'Sub-total North', 'Totals', 'Sum', 'Summe', 'Gesamt', 'Gesamtsumme', 'Insgesamt', 'Totale',
// 'Total général', an Excel pivot's 'North Total', 'Overall total', and 'Sum', 'Overall', 'All'
// alone or 'All regions'. A word that only starts like one ('Totalled', 'Summer', 'Allen',
// 'All-Bran', 'Sum 41') is no total.
constexpr const char* kTotalLabel =
    "((grand|sub)[ -]?)?totals?([^a-z].*)?|(summe|gesamt|gesamtsumme|insgesamt|totale)([^a-z].*)?|"
    "(sum|overall|all)\\s*:?|.*[^a-z]totals?\\s*:?|all\\s+[a-z][a-z ]*";

// Of those, a label that names something after the word ('Total Wine', 'Total North', 'All
// Star'): a shop's name as often as a subtotal's. Such a row is a total only where another
// total follows it, or where it is the grand total in the file's last row.
constexpr const char* kWeakTotalLabel = "(totals?|all)\\s+[^:\\s].*";

// The labels that are nothing but a total's ('Total', 'Grand total:', 'Summe'): a row under one
// whose numbers do not add up is still named, as a total that is rounded or partial.
constexpr const char* kBareTotalLabel =
    "(((grand|sub)[ -]?)?totals?|summe|gesamt|gesamtsumme|insgesamt|totale|sum|overall)\\s*:?";

// A number with a unit of measure after it: '3 lb', '1.5 kg', '800g', '12,5 cm', '98.6 °F'.
constexpr const char* kNumberWithUnit = "[+-]?[0-9]+([.,][0-9]+)?\\s?(°?[a-zµ]{1,12}|°)\\.?";

// A text value as one group counts it: NFC, spaces of any kind (tabs, no-break spaces) made
// one, trimmed, lower case.
std::string Folded(const std::string& q) {
  return "lower(trim(regexp_replace(nfc_normalize(" + q + "), '[\\s\\x{00A0}]', ' ', 'g')))";
}

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
  const std::string folded = Folded(q);
  auto found = run(
      "WITH f AS (SELECT " + folded + " AS k, " + q + " AS v, count(*) AS n FROM " + rows +
      " WHERE " + q +
      " IS NOT NULL GROUP BY ALL), g AS (SELECT k, count(*) OVER () AS groups, "
      "sum(n) AS rows FROM f GROUP BY k HAVING count(*) > 1 AND length(k) > 1 AND k NOT IN (" +
      kMarkerList +
      ") AND NOT "
      "(max(length(v)) <= 3 AND bool_and(lower(v) = " +
      Folded("v") +
      " AND v <> lower(v))) "
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
  notes.push_back("values that differ only in spaces, case or Unicode form group apart: " + shown +
                  (groups > 5 ? "; " + std::to_string(groups) + " such groups in all" : "") +
                  ". GROUP BY " + folded + " counts each as one; the data keeps them as written");
  return {};
}

// A unit as a note names it: case kept for one letter ('M' million, 'm' metre), folded for
// longer ones ('LB' is 'lb'), and a plural made singular ('lbs' is 'lb').
std::string UnitName(std::string unit) {
  if (unit.size() >= 2) {
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  static const std::set<std::string> kPlurals = {"lbs", "kgs", "hrs",  "mins", "secs", "pcs",
                                                 "yds", "ozs", "gals", "pts",  "qts"};
  if (kPlurals.count(unit) > 0) unit.pop_back();
  return unit;
}

// Units of measure as UnitName gives them: mass, length, area, volume, time, data, energy,
// power, speed, temperature, and the scale letters k, M and bn.
bool KnownUnit(const std::string& u) {
  static const std::set<std::string> kUnits = {
      "mg",   "g",     "kg",    "t",    "lb",   "oz",   "st",   "ton",   "tons", "mm",    "cm",
      "m",    "km",    "in",    "ft",   "yd",   "mi",   "nm",   "µm",    "m2",   "km2",   "ha",
      "sqft", "acre",  "acres", "ml",   "cl",   "dl",   "l",    "L",     "gal",  "qt",    "pt",
      "floz", "cup",   "cups",  "tbsp", "tsp",  "ms",   "s",    "sec",   "min",  "h",     "hr",
      "hour", "hours", "d",     "day",  "days", "wk",   "week", "weeks", "mo",   "month", "months",
      "yr",   "year",  "years", "b",    "B",    "kb",   "mb",   "gb",    "tb",   "pb",    "kib",
      "mib",  "gib",   "tib",   "bit",  "bits", "kbps", "mbps", "gbps",  "j",    "kj",    "mj",
      "cal",  "kcal",  "wh",    "kwh",  "mwh",  "w",    "W",    "kw",    "mw",   "hp",    "mph",
      "kmh",  "kph",   "knots", "°",    "°c",   "°f",   "C",    "F",     "K",    "k",     "M",
      "bn",   "pa",    "kpa",   "hpa",  "bar",  "psi",  "v",    "V",     "mv",   "kv",    "a",
      "A",    "ma",    "hz",    "khz",  "mhz",  "ghz",  "rpm",  "ppm",   "ppb",  "mol",   "mmol",
      "iu",   "x"};
  return kUnits.count(u) > 0;
}

// The units of a column whose every value is a number, with a unit or without: more than one
// unit, or one unit beside numbers that carry none ('800' among '3 lb' and '1.5 kg': grams?).
Result<void> NoteMixedUnits(const RunRows& run, const std::string& rows, const std::string& col,
                            std::vector<std::string>& notes) {
  const std::string q = QuoteIdent(col);
  const std::string t = "trim(" + q + ")";
  auto units = run("SELECT regexp_extract(" + t +
                   ", '[0-9.,]\\s?(°?[A-Za-zµ]+|°)\\.?$', 1) AS u, "
                   "count(*) AS n, count_if(regexp_matches(" +
                   t +
                   ", '^[+-]?[0-9]+,[0-9]{1,2}"
                   "([^0-9]|$)')) AS comma, count_if(regexp_matches(" +
                   t +
                   ", '^[+-]?[0-9]{1,3}"
                   "(,[0-9]{3})+([^0-9]|$)')) AS grouped FROM " +
                   rows + " WHERE " + q + " IS NOT NULL GROUP BY u ORDER BY n DESC, u LIMIT 50");
  if (!units) return std::unexpected(units.error());
  // No units: ordinals (1st), times of day (10am), and CR/DR, which are a sign (a credit).
  static const std::set<std::string> kNoUnits = {"st", "nd", "rd", "th", "am", "pm", "cr", "dr"};
  std::vector<std::pair<std::string, int64_t>> seen;  // in order of rows, most first
  int64_t bare = 0, comma = 0, grouped = 0;
  for (const auto& row : *units) {
    const std::string raw = row[0].value_or("");
    comma += Int(row[2]);
    grouped += Int(row[3]);
    if (raw.empty()) {
      bare += Int(row[1]);
      continue;
    }
    const std::string u = UnitName(raw);
    if (kNoUnits.count(u) > 0) return {};  // ordinals or times, not measures
    // Only units of measure make a column of measures: '32 Regular' and '1 large' are sizes.
    if (!KnownUnit(u)) return {};
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == u; });
    if (it == seen.end()) {
      seen.emplace_back(u, Int(row[1]));
    } else {
      it->second += Int(row[1]);
    }
  }
  std::stable_sort(seen.begin(), seen.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  const size_t kinds = seen.size();
  if (kinds < 2 && (kinds == 0 || bare == 0)) return {};
  std::string shown;
  for (size_t i = 0; i < seen.size() && i < 12; ++i) {
    shown += (shown.empty() ? "'" : ", '") + PromptText(seen[i].first, 20) + "' (" +
             Plural(seen[i].second, "row", "rows") + ")";
  }
  // The number alone, as the values write it: '1,500 g' is 1500, and with decimal commas
  // '1,5 kg' is 1.5.
  const std::string recipe = comma > grouped ? "TRY_CAST(replace(replace(regexp_extract(" + t +
                                                   ", '^[+-]?[0-9][0-9.]*,?[0-9]*'), "
                                                   "'.', ''), ',', '.') AS DOUBLE)"
                                             : "TRY_CAST(replace(regexp_extract(" + t +
                                                   ", '^[+-]?[0-9][0-9,]*[.]?[0-9]*'), ',', "
                                                   "'') AS DOUBLE)";
  if (kinds < 2) {
    notes.push_back("numbers in " + shown + " and " + Plural(bare, "number", "numbers") +
                    " with no unit: find out which unit those are before comparing or summing "
                    "(the number alone is " +
                    recipe + ")");
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
// the subtotal of two rows or more; and when another row with no label is no total, none is:
// the blank labels are then data.
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
    sums += ", " + v + ", sum(" + kept +
            ") OVER (ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING "
            "AND 1 PRECEDING), sum(" +
            kept + ") OVER (), count(" + kept +
            ") OVER (ORDER BY rn "
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
  const std::string folded = blank ? "''" : "lower(trim(label))";
  // The file's order: the rows come from the reader in order (DuckDB keeps insertion order),
  // and row_number() numbers them so.
  auto found = run("WITH r AS (SELECT row_number() OVER () AS rn, count(*) OVER () AS last, " +
                   (blank ? std::string("NULL") : l) + " AS label, " + is_total + " AS tot" +
                   values + " FROM " + rows +
                   ") SELECT rn, label, rn = last, "
                   "coalesce(regexp_full_match(" +
                   folded + ", '" + kWeakTotalLabel +
                   "'), false), "
                   "coalesce(regexp_full_match(" +
                   folded + ", '" + kBareTotalLabel + "'), false)" + sums +
                   " FROM r QUALIFY tot ORDER BY rn LIMIT 1000");
  if (!found) return std::unexpected(found.error());
  constexpr size_t kFirst = 5;  // the columns before each number's
  constexpr size_t kPer = 4;    // the value, the sum before it, the sum of all, the count before
  struct Row {
    int64_t at = 0;
    std::string label;
    bool total = false, weak = false, grand_last = false, bare = false;
    std::set<std::string> columns;
    bool before = false;  // a grand total of rows below it too
    std::string missed;   // a bare label's number against what the rows add up to
  };
  std::vector<Row> candidates;
  std::vector<double> block_start(numeric.size(), 0.0);
  std::vector<int64_t> block_rows(numeric.size(), 0);
  for (const auto& row : *found) {
    Row r;
    r.at = Int(row[0]);
    r.label = row[1].value_or("");
    const bool last = row[2].value_or("false") == "true";
    r.weak = row[3].value_or("false") == "true";
    r.bare = row[4].value_or("false") == "true";
    int matched = 0, valued = 0, grand_matched = 0;
    std::vector<double> prefix(numeric.size(), 0.0);
    std::vector<int64_t> counted(numeric.size(), 0);
    for (size_t i = 0; i < numeric.size(); ++i) {
      const size_t k = kFirst + kPer * i;
      const std::optional<double> x = Real(row[k]);
      prefix[i] = Real(row[k + 1]).value_or(0.0);
      const double all = Real(row[k + 2]).value_or(0.0);
      counted[i] = Int(row[k + 3]);
      if (!x) continue;
      ++valued;
      const double tolerance = std::max(0.005, std::fabs(*x) * 1e-9);
      const double block = prefix[i] - block_start[i];
      const bool nonzero = std::fabs(*x) > tolerance;
      const bool grand = std::fabs(*x - all) <= tolerance;
      const bool subtotal =
          std::fabs(*x - block) <= tolerance && (!blank || counted[i] - block_rows[i] >= 2);
      if (nonzero && (grand || subtotal)) {
        ++matched;
        grand_matched += grand ? 1 : 0;
        r.columns.insert(numeric[i].name);
        // Rows it adds up come after it: the rows above it are not all.
        if (grand && std::fabs(prefix[i] - all) > tolerance) r.before = true;
      } else if (r.missed.empty() && nonzero && last && block != 0 &&
                 std::fabs(*x - block) <= std::fabs(block) * 0.02) {
        // Within 2% of the rows above, in the last row: a rounded or partial total, not a
        // category named 'Total' or a rating called 'Overall'.
        std::ostringstream shown;
        shown << std::setprecision(15) << *x << " in " << numeric[i].name
              << ", where the rows above add up to " << block;
        r.missed = shown.str();
      }
    }
    r.total = blank ? valued > 0 && matched == valued : matched > 0 && matched * 2 >= valued;
    r.grand_last = last && grand_matched > 0;
    if (r.total || !blank) {
      block_start = prefix;
      block_rows = counted;
    }
    candidates.push_back(std::move(r));
  }
  // A weak label needs a total after it, or to be the grand total at the end.
  bool later = false;
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    if (it->total && it->weak && !later && !it->grand_last) it->total = false;
    later = later || it->total;
  }
  std::vector<const Row*> totals;
  for (const Row& r : candidates) {
    if (r.total) totals.push_back(&r);
  }
  if (blank && totals.size() < candidates.size()) return {};
  if (totals.empty()) {
    // No row adds up; a lone row under a bare total label, last in the file, is named all the
    // same when it is near the sum.
    for (const Row& r : candidates) {
      if (!r.bare || r.missed.empty() || candidates.size() > 1) continue;
      notes.push_back("a row labelled " + Shown(r.label) + " (row " + std::to_string(r.at) +
                      ") reads like a total, but its numbers are not the sum of the other rows (" +
                      r.missed +
                      "): a rounded or partial total? SUM over the column counts it "
                      "with the rest; leave it out with WHERE " +
                      l + " <> " + QuoteLiteral(r.label));
      break;
    }
    return {};
  }
  std::string rows_shown, in_list, cols;
  std::set<std::string> distinct_labels, columns;
  bool before_rows = false;
  for (size_t i = 0; i < totals.size(); ++i) {
    const Row& r = *totals[i];
    if (i < 5) {
      rows_shown +=
          (i ? ", " : "") + (blank ? std::string("row ") + std::to_string(r.at)
                                   : Shown(r.label) + " (row " + std::to_string(r.at) + ")");
    }
    if (distinct_labels.insert(r.label).second) {
      in_list += (in_list.empty() ? "" : ", ") + QuoteLiteral(r.label);
    }
    columns.insert(r.columns.begin(), r.columns.end());
    before_rows = before_rows || r.before;
  }
  for (const auto& c : columns) cols += (cols.empty() ? "" : ", ") + c;
  const bool one = totals.size() == 1;
  std::string filter;
  if (blank) {
    filter = QuoteIdent(search.unlabelled.front()) + " IS NOT NULL";
  } else {
    // A long list of labels is no filter to copy: the pattern they all match is.
    filter = distinct_labels.size() <= 8 ? l + " NOT IN (" + in_list + ")"
                                         : "NOT coalesce(regexp_full_match(lower(trim(" + l +
                                               ")), '" + kTotalLabel + "'), false)";
  }
  notes.push_back((one ? std::string("a row") : std::to_string(totals.size()) + " rows") +
                  (blank ? " with no label" : "") +
                  (one ? " holds the total" : " hold totals or subtotals") + " of the " +
                  (before_rows ? std::string("other rows")
                   : one       ? "rows above it"
                               : "rows above them") +
                  " in " + cols + ": " + rows_shown + (totals.size() > 5 ? ", ..." : "") +
                  ". SUM over the column counts " + (one ? "it" : "them") +
                  " on top of the rows they add "
                  "up; leave " +
                  (one ? "it" : "them") + " out with WHERE " + filter);
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
    {"$", "$ or USD"},   {"€", "€ or EUR"},   {"£", "£ or GBP"},   {"¥", "¥ or JPY"},
    {"US$", "$ or USD"}, {"USD", "$ or USD"}, {"EUR", "€ or EUR"}, {"GBP", "£ or GBP"},
    {"JPY", "¥ or JPY"}, {"CHF", "CHF"},      {"CAD", "CAD"},      {"AUD", "AUD"},
    {"NZD", "NZD"},      {"CNY", "CNY"},      {"HKD", "HKD"},      {"SGD", "SGD"},
    {"INR", "INR"},      {"SEK", "SEK"},      {"NOK", "NOK"},      {"DKK", "DKK"},
    {"PLN", "PLN"},      {"CZK", "CZK"},      {"ZAR", "ZAR"},      {"BRL", "BRL"},
    {"MXN", "MXN"}};

// An optional space between a number and what it carries, the no-break ones included.
constexpr const char* kGap = "[\\s\\x{00A0}\\x{202F}]?";
// A sign: '+', '-' or the minus sign U+2212 that typeset reports carry.
constexpr const char* kSign = "[+\\x{2212}-]?";

}  // namespace

std::string CsvCurrencyPattern() {
  std::string codes;
  for (const Currency& c : kCurrencyTokens) {
    if (std::string(c.token).size() == 3 && c.token[2] != '$') codes += std::string("|") + c.token;
  }
  return "US\\$|[$€£¥]" + codes;
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
  // Thousands grouped by ',' (or '.' with a decimal comma), a space, a no-break space, or the
  // Swiss apostrophe (1'234.50).
  const std::string number =
      decimal_comma
          ? "(0|[1-9][0-9]{0,2}([.\\s\\x{00A0}\\x{202F}][0-9]{3})+|[1-9][0-9]*)(,[0-9]+)?"
          : "(0|[1-9][0-9]{0,2}((,[0-9]{3})+|([\\s\\x{00A0}\\x{202F}\\x{27}\\x{2019}][0-9]{3})+)|"
            "[1-9][0-9]*)(\\.[0-9]+)?";
  const std::string percent = std::string(kGap) + "%?";
  return "(" + std::string(kSign) + before + kSign + number + after + percent + "-?|" + kSign +
         before + "[(]" + before + number + after + percent + "[)]" + after + ")";
}

std::string CsvSpaceGrouped(const std::string& v) {
  return "regexp_matches(" + v + ", '[0-9][\\s\\x{00A0}\\x{202F}\\x{27}\\x{2019}][0-9]{3}')";
}

std::string CsvPeopleNumber(const std::string& v, const char* cast, bool decimal_comma) {
  const std::string t = "trim(" + v + ")";
  // What surrounds the number goes; what is inside it stays, so '10-20' fails to read.
  const std::string digits =
      decimal_comma ? "replace(regexp_replace(" + t +
                          ", '^[^0-9,]*|[^0-9,]*$|[.\\s\\x{00A0}\\x{202F}]', "
                          "'', 'g'), ',', '.')"
                    : "regexp_replace(" + t +
                          ", '^[^0-9.]*|[^0-9.]*$|[,\\s\\x{00A0}\\x{202F}\\x{27}\\x{2019}]', "
                          "'', 'g')";
  return "(CASE WHEN regexp_matches(" + t +
         ", '^[^0-9]*[(\\x{2212}-]|[\\x{2212}-]$') THEN -1 ELSE 1 "
         "END) * " +
         cast + "(" + digits + " AS DOUBLE)";
}

bool CsvNumericType(const std::string& type) {
  return type == "BIGINT" || type == "INTEGER" || type == "SMALLINT" || type == "TINYINT" ||
         type == "HUGEINT" || type == "UBIGINT" || type == "UINTEGER" || type == "DOUBLE" ||
         type == "FLOAT" || type.starts_with("DECIMAL");
}

std::vector<std::string> CsvTextQualityAggregates(const std::string& q) {
  return {"count(DISTINCT " + q + ")", "count(DISTINCT " + Folded(q) + ")",
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
  // A table of a few categories only (a survey's age group and answer) repeats rows by nature.
  bool categories = true;
  for (size_t i = 0; i < cols.size(); ++i) {
    if (readings[i].expr != QuoteIdent(cols[i]) || stats[i].distinct * 2 > stats[i].non_null) {
      categories = false;
    }
  }
  if (distinct_rows > 0 && distinct_rows < total_rows) {
    const int64_t copies = total_rows - distinct_rows;
    // Half the rows copies is also one row thrice and another once: look before saying twice.
    bool twice = false;
    if (copies * 2 == total_rows) {
      std::string args;
      for (const auto& c : cols) args += (args.empty() ? "" : ", ") + QuoteIdent(c);
      auto counts = run("SELECT bool_and(n = 2) FROM (SELECT count(*) AS n FROM " + rows +
                        " GROUP BY hash(" + args + "))");
      if (!counts) return std::unexpected(counts.error());
      twice = !counts->empty() && counts->front()[0].value_or("false") == "true";
    }
    if (!categories || twice) {
      table_notes.push_back(
          Plural(copies, "row is an exact copy", "rows are exact copies") + " of another row (" +
          std::to_string(distinct_rows) + " distinct of " + std::to_string(total_rows) +
          (twice ? "; every row appears twice, as when an export is appended to itself" : "") +
          "): count(*) and SUM count every copy. Copies can be real (two equal orders), so none "
          "was dropped; SELECT DISTINCT * reads each once where they are not");
    }
  }
  // The columns a total adds up: numbers as the table reads them ('$1,234.50' too), but no
  // identifiers (an id 3 beside ids 1 and 2 is their sum by chance).
  auto id_like = [](std::string name) {
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name == "id" || name.ends_with("_id") || name.ends_with(" id") || name == "no" ||
           name == "nr" || name == "#" || name == "rank" || name == "position" || name == "place";
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
