// The notes of a SQLite column's card. SQLite stores any value in any column, so the declared
// type says little: these notes say what the rows hold when it matters to a query (text in a
// numeric column, a boolean written as 'T'/'F', missing-value markers and sentinels among
// numbers), counted in the card's statistics scan.
#include <cctype>
#include <cstdlib>

#include "quarry/engine/card_notes_internal.h"

namespace quarry::engine::internal {

bool NumericDeclared(std::string type) {
  // INTEGER, REAL or NUMERIC affinity, by the rules of https://sqlite.org/datatype3.html
  // section 3.1. Dates are NUMERIC by those rules but SQLite has no date storage class and keeps
  // ISO-8601 dates as text by design: no note for DATE/TIME types.
  for (char& ch : type) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto has = [&](const char* s) { return type.find(s) != std::string::npos; };
  if (has("INT")) return true;
  if (has("CHAR") || has("CLOB") || has("TEXT") || has("BLOB") || type.empty()) return false;
  if (has("REAL") || has("FLOA") || has("DOUB")) return true;
  return !has("DATE") && !has("TIME");
}

namespace {

// The aggregates, in this order, of every column SqliteColumnExtra counts.
enum Slot : size_t {
  kInteger,
  kReal,
  kText,
  kBlob,
  kMarkers,
  kBooleans,
  kNumberText,
  kLow,
  kHigh,
  kSlots
};

// Text that is a plain decimal number ('12', '-3.5', '1e6'), as far as GLOB can tell.
std::string IsNumberText(const std::string& q) {
  const std::string t = "trim(" + q + ")";
  return "(" + t + " GLOB '*[0-9]*' AND (" + t + " GLOB '[0-9.]*' OR " + t +
         " GLOB '[+-][0-9.]*') AND substr(" + t + ", 2) NOT GLOB '*[^0-9.eE+-]*' AND " + t +
         " NOT GLOB '*.*.*')";
}

// The column's numbers: stored as numbers, or written as plain numbers in text.
std::string Number(const std::string& q) {
  return "CASE WHEN typeof(" + q + ") IN ('integer', 'real') THEN " + q + " WHEN typeof(" + q +
         ") = 'text' AND " + IsNumberText(q) + " THEN CAST(trim(" + q + ") AS REAL) END";
}

int64_t Count(const std::vector<std::optional<std::string>>& v, size_t slot) {
  return slot < v.size() && v[slot] ? std::strtoll(v[slot]->c_str(), nullptr, 10) : 0;
}

// "declared INTEGER, stored as text in 3/3 rows" or "..., stored as integer in 2 rows, text in 3".
std::string Stored(const std::string& declared, const int64_t n[4], int64_t non_null) {
  static constexpr const char* kClass[] = {"integer", "real", "text", "blob"};
  std::string note = "declared " + declared + ", stored as ";
  const int present = (n[0] > 0) + (n[1] > 0) + (n[2] > 0) + (n[3] > 0);
  if (present == 1) {
    const size_t i = n[2] > 0 ? 2 : 3;
    return note + kClass[i] + " in " + std::to_string(n[i]) + "/" + std::to_string(non_null) +
           " rows";
  }
  bool first = true;
  for (size_t i = 0; i < 4; ++i) {
    if (n[i] == 0) continue;
    note += (first ? "" : ", ") + std::string(kClass[i]) + " in " + std::to_string(n[i]) +
            (first ? (n[i] == 1 ? " row" : " rows") : "");
    first = false;
  }
  return note;
}

// The condition that leaves the missing values out: "x <> 'N/A'", "x NOT IN ('N/A', -999)".
std::string Exclusion(const std::string& q, const std::vector<ValueCount>& markers,
                      const std::optional<Sentinels>& sentinels) {
  std::string values = SqlValues(markers);
  if (sentinels) values += (values.empty() ? "" : ", ") + SqlNumbers(*sentinels);
  const size_t n = markers.size() + (sentinels ? sentinels->values.size() : 0);
  return n == 1 ? q + " <> " + values : q + " NOT IN (" + values + ")";
}

Result<std::vector<std::string>> Notes(const std::string& from, const std::string& column,
                                       const std::string& declared,
                                       const std::vector<std::optional<std::string>>& v,
                                       int64_t non_null, const ColumnCard& card,
                                       const RunRows& run) {
  const std::string q = QuoteIdent(column);
  const bool numeric = NumericDeclared(declared);
  const int64_t stored[4] = {Count(v, kInteger), Count(v, kReal), Count(v, kText), Count(v, kBlob)};
  const int64_t text = stored[2], odd = stored[2] + stored[3];
  const int64_t numbers = stored[0] + stored[1] + Count(v, kNumberText);
  const int64_t marker_rows = Count(v, kMarkers);
  std::vector<ValueCount> markers;
  if (marker_rows > 0) {
    auto counted = CountMarkers(run, from, q);
    if (!counted) return std::unexpected(counted.error());
    markers = std::move(*counted);
  }
  std::optional<Sentinels> sentinels;
  if (numbers >= 3) {
    auto found = FindSentinels(run, from, Number(q), ParseNumber(v[kLow]), ParseNumber(v[kHigh]));
    if (!found) return std::unexpected(found.error());
    sentinels = std::move(*found);
  }
  std::vector<std::string> notes;
  std::string missing = MissingValueNote(markers, sentinels);
  if (numeric && odd > 0) {
    std::string note = Stored(declared, stored, non_null);
    if (stored[3] == 0 && Count(v, kBooleans) == text) {
      // 'T'/'F' in a bool column: a filter on 1 or TRUE would find no row at all.
      std::string words, yes;
      for (const std::string& s : card.samples) {
        if (!IsBooleanWord(s)) continue;
        words += (words.empty() ? "'" : "/'") + s + "'";
        if (yes.empty() && IsTrueWord(s)) yes = s;
      }
      note += ": the text is a boolean written as " + (words.empty() ? "words" : words);
      if (!yes.empty()) {
        note += "; test it with " + q + " = " + QuoteLiteral(yes) + ", since " + q + " = 1 and " +
                q + " = TRUE match no text row";
      }
    } else if (stored[3] == 0 && marker_rows == text) {
      note += ": " + missing + "; arithmetic reads the text as 0: use only rows where typeof(" + q +
              ") IN ('integer', 'real')";
      missing.clear();
    } else if (stored[0] + stored[1] >= odd) {
      // No CAST here: CAST('N/A' AS REAL) is 0 and CAST('7 kg' AS REAL) is 7, silently.
      note +=
          ": arithmetic reads text as 0 or its leading digits, and text sorts above every "
          "number; use only rows where typeof(" +
          q + ") IN ('integer', 'real')";
    } else {
      // Mostly text: keeping only the numbers would drop most rows. The samples show the text
      // (a note quotes no value of the data: --no-samples keeps the notes).
      note +=
          ": most values are text, which arithmetic reads as 0 or its leading digits; clean "
          "the text (replace, trim) before a CAST";
    }
    notes.push_back(note);
  }
  if (!missing.empty()) {
    const std::string out = Exclusion(q, markers, sentinels);
    if (!markers.empty() && numbers > 0 && numbers + marker_rows == non_null) {
      // The rest are numbers written as text; SQLite has no TRY_CAST.
      missing += "; CAST reads a marker as 0: cast only where " + out;
    } else if (markers.empty()) {
      missing += "; leave it out (" + out + ") before aggregating";
    }
    notes.push_back(missing);
  }
  return notes;
}

}  // namespace

ColumnExtra SqliteColumnExtra(const std::string& from, const std::string& column,
                              const std::string& declared) {
  ColumnExtra extra;
  const std::string q = QuoteIdent(column);
  auto text_and = [&](const std::string& condition) {
    return "sum(typeof(" + q + ") = 'text' AND " + condition + ")";
  };
  for (const char* cls : {"integer", "real", "text", "blob"}) {
    extra.aggregates.push_back("sum(typeof(" + q + ") = '" + cls + "')");
  }
  extra.aggregates.push_back(text_and("lower(trim(" + q + ")) IN (" + kMarkerList + ")"));
  extra.aggregates.push_back(text_and("lower(trim(" + q + ")) IN (" + kBooleanList + ")"));
  extra.aggregates.push_back(text_and(IsNumberText(q)));
  extra.aggregates.push_back("CAST(min(" + Number(q) + ") AS VARCHAR)");
  extra.aggregates.push_back("CAST(max(" + Number(q) + ") AS VARCHAR)");
  extra.notes_from = [from, column, declared](const std::vector<std::optional<std::string>>& v,
                                              int64_t non_null, const ColumnCard& card,
                                              const RunRows& run) {
    return Notes(from, column, declared, v, non_null, card, run);
  };
  return extra;
}

}  // namespace quarry::engine::internal
