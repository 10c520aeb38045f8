// Check: does a spec fit the rows it will draw, and would the chart mislead or say nothing?
// Every message tells the model what to change (in the spec or in the SQL).
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "quarry/chart/chart_internal.h"

namespace quarry::chart {
namespace {

using internal::FindColumn;
using internal::ParseNumber;
using internal::ParseTimestamp;

constexpr size_t kMaxCategories = 30;

std::string Quote(const std::string& s) {
  return "\"" + (s.size() > 40 ? s.substr(0, 37) + "..." : s) + "\"";
}

std::string ColumnList(const Table& table) {
  std::string out;
  for (const std::string& c : table.columns) out += (out.empty() ? "" : ", ") + c;
  return out.empty() ? "none" : out;
}

// The first non-null cell of a column that `parses` rejects, if any.
template <typename Parse>
std::optional<std::string> FirstBad(const Table& table, size_t column, Parse parses) {
  for (const auto& row : table.rows) {
    if (row[column] && !parses(*row[column])) return *row[column];
  }
  return std::nullopt;
}

struct Named {
  std::string name;  // "x", "y", "color", "theta"
  const Channel* channel;
};

std::vector<Named> Channels(const Spec& spec) {
  std::vector<Named> out;
  if (spec.x) out.push_back({"x", &*spec.x});
  if (spec.y) out.push_back({"y", &*spec.y});
  if (spec.color) out.push_back({"color", &*spec.color});
  if (spec.theta) out.push_back({"theta", &*spec.theta});
  return out;
}

// The x (or, on an arc, the color) texts in the order a series first shows them.
std::vector<std::vector<std::string>> SeriesSequences(const Spec& spec, const Table& table) {
  // Plain indices: GCC 12 misreads optionals in this loop as maybe-uninitialized.
  constexpr size_t kNone = static_cast<size_t>(-1);
  const size_t xi = FindColumn(table, spec.x->field).value_or(kNone);
  const size_t ci = spec.color ? FindColumn(table, spec.color->field).value_or(kNone) : kNone;
  if (xi == kNone) return {};
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> seqs;
  std::vector<std::set<std::string>> seen;
  for (const auto& row : table.rows) {
    if (!row[xi]) continue;
    const std::string name = ci != kNone && row[ci] ? *row[ci] : "";
    auto it = std::find(names.begin(), names.end(), name);
    const size_t s = static_cast<size_t>(it - names.begin());
    if (it == names.end()) {
      names.push_back(name);
      seqs.emplace_back();
      seen.emplace_back();
    }
    if (seen[s].insert(*row[xi]).second) seqs[s].push_back(*row[xi]);
  }
  return seqs;
}

// Whether texts are monotonic in their natural order; if not, a pair out of order.
std::optional<std::pair<std::string, std::string>> OutOfOrder(const std::vector<std::string>& seq,
                                                              FieldType type) {
  const bool numbers = std::all_of(seq.begin(), seq.end(),
                                   [](const std::string& s) { return ParseNumber(s).has_value(); });
  const bool dates = !numbers && std::all_of(seq.begin(), seq.end(), [](const std::string& s) {
    return ParseTimestamp(s).has_value();
  });
  auto cmp = [&](const std::string& a, const std::string& b) -> int {
    if (numbers || type == FieldType::kQuantitative) {
      const double x = ParseNumber(a).value_or(0), y = ParseNumber(b).value_or(0);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (dates) {
      const double x = *ParseTimestamp(a), y = *ParseTimestamp(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
  };
  bool up = true, down = true;
  std::optional<std::pair<std::string, std::string>> up_break;
  for (size_t i = 1; i < seq.size(); ++i) {
    const int c = cmp(seq[i - 1], seq[i]);
    if (c > 0 && up) {
      up = false;
      up_break = std::pair(seq[i - 1], seq[i]);
    }
    if (c < 0) down = false;
  }
  if (up || down) return std::nullopt;
  return up_break;
}

}  // namespace

namespace internal {

std::vector<Problem> CheckFields(const Spec& spec, const Table& table) {
  std::vector<Problem> problems;
  const bool arc = spec.mark == Mark::kArc;
  if (arc ? !(spec.theta && spec.color) : !(spec.x && spec.y)) {
    problems.push_back({"missing_field", arc ? "an arc needs encoding.theta and encoding.color"
                                             : "this mark needs encoding.x and encoding.y"});
    return problems;
  }
  for (const Named& n : Channels(spec)) {
    const Channel& c = *n.channel;
    if (c.field.empty()) continue;
    if (!FindColumn(table, c.field)) {
      problems.push_back({"missing_field", "encoding." + n.name + ".field " + Quote(c.field) +
                                               " is not a column of the query result (columns: " +
                                               ColumnList(table) +
                                               "); use one of these names, or alias the "
                                               "column in the SQL (AS " +
                                               c.field + ")"});
    }
  }
  if (!problems.empty()) return problems;

  for (const Named& n : Channels(spec)) {
    const Channel& c = *n.channel;
    if (c.field.empty()) continue;
    const size_t col = *FindColumn(table, c.field);
    const std::string where = "encoding." + n.name;
    const bool needs_numbers = (c.type == FieldType::kQuantitative && c.aggregate != "count") ||
                               (!c.aggregate.empty() && c.aggregate != "count");
    if (needs_numbers) {
      auto bad = FirstBad(table, col, [](const std::string& s) { return ParseNumber(s); });
      if (bad) {
        const std::string fix =
            n.name == "x" ? "use a numeric column, CAST it in the SQL, or set " + where +
                                ".type to \"nominal\""
                          : "use a numeric column, CAST it in the SQL, or count rows with "
                            "{\"aggregate\": \"count\"}";
        problems.push_back(
            {"type_mismatch",
             where + " " + Quote(c.field) +
                 (c.aggregate.empty() ? " is quantitative" : " is aggregated with " + c.aggregate) +
                 " but holds non-numeric text (e.g. " + Quote(*bad) + "); " + fix});
      }
    } else if (c.type == FieldType::kTemporal) {
      auto bad = FirstBad(table, col, [](const std::string& s) { return ParseTimestamp(s); });
      if (bad) {
        problems.push_back(
            {"type_mismatch", where + " " + Quote(c.field) + " is temporal but " + Quote(*bad) +
                                  " is not an ISO date (YYYY, YYYY-MM, YYYY-MM-DD or "
                                  "YYYY-MM-DD HH:MM:SS); format it so in the SQL, or set " +
                                  where + ".type to \"ordinal\""});
      }
    }
  }
  return problems;
}

}  // namespace internal

std::vector<Problem> Check(const Spec& spec, const Table& table) {
  std::vector<Problem> problems = internal::CheckFields(spec, table);
  if (!problems.empty()) return problems;
  if (table.rows.empty()) {
    return {{"no_rows",
             "the query returned no rows, so there is nothing to draw; check its "
             "WHERE filters and joins (try it with run_sql first)"}};
  }
  const bool arc = spec.mark == Mark::kArc;
  const Channel& measure = arc ? *spec.theta : *spec.y;
  if (!measure.field.empty()) {
    const size_t col = *FindColumn(table, measure.field);
    const bool all_null = std::all_of(table.rows.begin(), table.rows.end(),
                                      [&](const auto& row) { return !row[col].has_value(); });
    if (all_null) {
      return {{"all_null_measure",
               std::string("encoding.") + (arc ? "theta " : "y ") + Quote(measure.field) +
                   " is NULL in all " + std::to_string(table.rows.size()) +
                   " rows, so every mark would be empty; check the join or the column, or "
                   "COALESCE it in the SQL"}};
    }
  }

  const internal::Prepared prepared = internal::Prepare(spec, table);
  auto sample = [](const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < std::min<size_t>(3, names.size()); ++i) out += Quote(names[i]) + ", ";
    return out + "...";
  };
  if (spec.mark == Mark::kBar && !spec.x->bin && prepared.categories.size() > kMaxCategories) {
    problems.push_back(
        {"too_many_categories",
         "the bar chart has " + std::to_string(prepared.categories.size()) + " distinct " +
             Quote(spec.x->field) + " values (" + sample(prepared.categories) + ") but at most " +
             std::to_string(kMaxCategories) +
             " stay readable; aggregate in SQL with GROUP BY a "
             "coarser key, keep the top ones with ORDER BY ... DESC LIMIT 30, or use a line "
             "chart for a series over time"});
  }
  if (arc && prepared.categories.size() > kMaxCategories) {
    problems.push_back(
        {"too_many_categories",
         "the arc has " + std::to_string(prepared.categories.size()) + " slices of " +
             Quote(spec.color->field) + " (" + sample(prepared.categories) + ") but at most " +
             std::to_string(kMaxCategories) +
             " stay readable; group the small ones into "
             "'Other' in SQL (CASE WHEN ... ELSE 'Other' END, GROUP BY), or use a bar chart"});
  }

  // Only lines: areas are drawn over the sorted union of their x values, so they cannot zigzag.
  if (spec.mark == Mark::kLine && spec.x->type != FieldType::kTemporal && spec.x->sort.empty()) {
    for (const auto& seq : SeriesSequences(spec, table)) {
      auto pair = OutOfOrder(seq, spec.x->type);
      if (!pair) continue;
      const bool continuous = spec.x->type == FieldType::kQuantitative;
      problems.push_back(
          {"unsorted_line",
           "the line's x " + Quote(spec.x->field) +
               " is neither ascending nor descending in "
               "the query's order (" +
               Quote(pair->second) + " comes after " + Quote(pair->first) + ")" +
               (continuous ? ", so the line would zigzag" : "") + "; ORDER BY " + spec.x->field +
               " in the query, or set encoding.x.sort to \"ascending\"" +
               (continuous ? "" : ", or set \"sort\": null to keep the query's order on purpose")});
      break;
    }
  }

  if (arc) {
    int negatives = 0;
    std::string example;
    for (const internal::Point& pt : prepared.points) {
      if (pt.y >= 0) continue;
      if (negatives++ == 0) {
        example = internal::FormatNumber(pt.y, pt.y == std::round(pt.y) ? 0 : 2) + " for " +
                  Quote(prepared.categories[static_cast<size_t>(pt.x)]);
      }
    }
    if (negatives > 0) {
      problems.push_back(
          {"negative_arc", "encoding.theta " + Quote(spec.theta->field) + " has " +
                               std::to_string(negatives) + " negative value" +
                               (negatives > 1 ? "s" : "") + " (e.g. " + example +
                               "); a slice cannot be negative, so use a bar chart, which shows "
                               "negatives below zero"});
    }
  }

  if (spec.mark == Mark::kLine || spec.mark == Mark::kArea || spec.mark == Mark::kPoint) {
    std::set<double> xs;
    for (const internal::Point& pt : prepared.points) xs.insert(pt.x);
    if (xs.size() == 1 || prepared.points.size() == 1) {
      const char* what = spec.mark == Mark::kPoint ? "a point chart" : "a line";
      problems.push_back(
          {"single_point",
           std::string("there is only one ") + Quote(spec.x->field) + " value to draw, so " + what +
               " shows a single dot; return more rows (check the WHERE filter and GROUP BY), "
               "or use a bar chart for a single value"});
    }
  }
  return problems;
}

}  // namespace quarry::chart
