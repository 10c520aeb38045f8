// The wording and the rules of the value notes every engine's cards share: missing-value
// markers, numeric sentinels and booleans written as text (card_notes_internal.h).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "quarry/common/text.h"
#include "quarry/engine/card_notes_internal.h"

namespace quarry::engine::internal {

const char* const kMarkerList =
    "'', 'n/a', 'na', 'null', 'none', 'nan', '-', '--', '?', '#n/a', 'missing', 'nil', '.', "
    "'(null)'";
const char* const kBooleanList = "'t', 'f', 'true', 'false', 'y', 'n', 'yes', 'no'";

namespace {

// In the order a sentinel is reported when a column holds several.
constexpr double kSentinelLiterals[] = {-999, -9999, -99999, -99, 999, 9999, 99999, 999999, -1};

std::string Rows(int64_t n) { return std::to_string(n) + (n == 1 ? " row" : " rows"); }

// "'a' (3 rows)", "'a' (3 rows) and 'b' (1 row)", "'a' (3 rows), 'b' (2 rows) and 'c' (1 row)".
template <typename Shown>
std::string Listed(const std::vector<ValueCount>& values, Shown shown) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i == 0                   ? ""
            : i + 1 == values.size() ? " and "
                                     : ", ") +
           shown(values[i].value) + " (" + Rows(values[i].rows) + ")";
  }
  return out;
}

bool IsSentinel(double value, const Sentinels& others, int64_t other_count, bool integral) {
  if (other_count < 3) return false;
  const double spread = others.high - others.low;
  if (value == -1) {
    return integral && others.low >= 0 && spread >= 10;
  }
  if (value >= others.low && value <= others.high) return false;
  const double distance = value < others.low ? others.low - value : value - others.high;
  return distance >= spread;
}

// DuckDB's number types (DECIMAL(18,2) included); lists and structs of them are not numbers.
bool IsNumberType(const std::string& type) {
  if (type.find_first_of("[(") != std::string::npos && !type.starts_with("DECIMAL(")) return false;
  for (const char* t :
       {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
        "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL"}) {
    if (type == t || (type.starts_with("DECIMAL(") && std::string_view(t) == "DECIMAL")) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool IsBooleanWord(std::string_view text) {
  const std::string w = Lower(text);
  for (const char* b : {"t", "f", "true", "false", "y", "n", "yes", "no"}) {
    if (w == b) return true;
  }
  return false;
}

bool IsTrueWord(std::string_view text) {
  const std::string w = Lower(text);
  return w == "t" || w == "true" || w == "y" || w == "yes";
}

std::string NumberText(double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec != std::errc()) return std::to_string(value);
  return std::string(buf, end);
}

std::optional<double> ParseNumber(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (end != text->c_str() + text->size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool IsSentinelLiteral(double value) {
  return std::find(std::begin(kSentinelLiterals), std::end(kSentinelLiterals), value) !=
         std::end(kSentinelLiterals);
}

Result<std::vector<ValueCount>> CountMarkers(const RunRows& run, const std::string& from,
                                             const std::string& text) {
  auto rows = run("SELECT " + text + ", count(*) FROM " + from + " WHERE lower(trim(" + text +
                  ")) IN (" + kMarkerList + ") GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 6");
  if (!rows) return std::unexpected(rows.error());
  std::vector<ValueCount> out;
  for (const auto& r : *rows) {
    if (r.size() < 2 || !r[0]) continue;
    out.push_back({*r[0], std::strtoll(r[1].value_or("0").c_str(), nullptr, 10)});
  }
  return out;
}

Result<std::optional<Sentinels>> FindSentinels(const RunRows& run, const std::string& from,
                                               const std::string& number, std::optional<double> low,
                                               std::optional<double> high) {
  if (!(low && IsSentinelLiteral(*low)) && !(high && IsSentinelLiteral(*high))) {
    return std::nullopt;
  }
  std::string literals;
  for (const double s : kSentinelLiterals)
    literals += (literals.empty() ? "" : ", ") + NumberText(s);
  const std::string values = "(SELECT " + number + " AS v FROM " + from + ") AS quarry_values";
  auto others =
      run("SELECT CAST(min(v) AS VARCHAR), CAST(max(v) AS VARCHAR), count(v), "
          "count(CASE WHEN v <> round(v) THEN 1 END) FROM " +
          values + " WHERE v NOT IN (" + literals + ")");
  if (!others) return std::unexpected(others.error());
  if (others->empty() || others->front().size() < 4) return std::nullopt;
  const auto& o = others->front();
  const auto lo = ParseNumber(o[0]), hi = ParseNumber(o[1]);
  const int64_t count = std::strtoll(o[2].value_or("0").c_str(), nullptr, 10);
  const bool integral = o[3].value_or("1") == "0";
  if (!lo || !hi) return std::nullopt;
  Sentinels found;
  found.low = *lo;
  found.high = *hi;
  auto hits = run("SELECT CAST(v AS VARCHAR), count(*) FROM " + values + " WHERE v IN (" +
                  literals + ") GROUP BY v");
  if (!hits) return std::unexpected(hits.error());
  for (const auto& h : *hits) {
    const auto v = ParseNumber(h.empty() ? std::nullopt : h[0]);
    if (!v || !IsSentinel(*v, found, count, integral)) continue;
    found.values.push_back({NumberText(*v), std::strtoll(h[1].value_or("0").c_str(), nullptr, 10)});
  }
  if (found.values.empty()) return std::nullopt;
  std::sort(found.values.begin(), found.values.end(), [](const ValueCount& a, const ValueCount& b) {
    return a.rows != b.rows ? a.rows > b.rows : a.value < b.value;
  });
  return found;
}

std::string MissingValueNote(const std::vector<ValueCount>& markers,
                             const std::optional<Sentinels>& sentinels) {
  const bool several_markers = markers.size() > 1;
  const bool any_sentinel = sentinels && !sentinels->values.empty();
  const bool several_sentinels = any_sentinel && sentinels->values.size() > 1;
  std::string out;
  if (!markers.empty()) {
    out = Listed(markers, [](const std::string& v) { return "'" + v + "'"; }) +
          (several_markers ? " look like missing-value markers"
                           : " looks like a missing-value marker");
  }
  if (any_sentinel) {
    const std::string listed = Listed(sentinels->values, [](const std::string& v) { return v; });
    if (out.empty()) {
      out = listed + (several_sentinels ? " look like sentinels for missing numbers"
                                        : " looks like a sentinel for a missing number");
    } else {
      out += " and " + listed +
             (several_sentinels ? " like sentinels for missing numbers"
                                : " like a sentinel for a missing number");
    }
    out += ": the other numbers lie in " + NumberText(sentinels->low) + ".." +
           NumberText(sentinels->high);
  }
  return out;
}

std::string SqlValues(const std::vector<ValueCount>& markers) {
  std::string out;
  for (const ValueCount& m : markers) out += (out.empty() ? "" : ", ") + QuoteLiteral(m.value);
  return out;
}

std::string SqlNumbers(const Sentinels& sentinels) {
  std::string out;
  for (const ValueCount& s : sentinels.values) out += (out.empty() ? "" : ", ") + s.value;
  return out;
}

Result<void> NoteNumericSentinels(TableCard& card, const std::string& sql_name,
                                  const RunRows& run) {
  for (ColumnCard& col : card.columns) {
    if (!IsNumberType(col.type)) continue;
    const std::string q = QuoteIdent(col.name);
    auto found = FindSentinels(run, sql_name, q, ParseNumber(col.min), ParseNumber(col.max));
    if (!found) return std::unexpected(found.error());
    if (!*found) continue;
    const bool one = (*found)->values.size() == 1;
    col.notes.push_back(MissingValueNote({}, *found) + "; leave " + (one ? "it" : "them") +
                        " out (" + q + (one ? " <> " : " NOT IN (") + SqlNumbers(**found) +
                        (one ? "" : ")") + ") before aggregating");
  }
  return {};
}

}  // namespace quarry::engine::internal
