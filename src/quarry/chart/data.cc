// From query rows to what is drawn: parsing cells as numbers and dates, and grouping rows by x
// (and color) with the spec's aggregate, in the order the chart shows them.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include "quarry/chart/chart_internal.h"

namespace quarry::chart::internal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Reads exactly `n` digits at `pos`, advancing it.
std::optional<int> Digits(std::string_view s, size_t& pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int value = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  pos += n;
  return value;
}

double Aggregate(const std::string& op, std::vector<double>& values, size_t rows) {
  if (op == "count") return static_cast<double>(rows);
  if (values.empty()) return std::nan("");
  if (op == "mean") {
    return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  }
  if (op == "min") return *std::min_element(values.begin(), values.end());
  if (op == "max") return *std::max_element(values.begin(), values.end());
  if (op == "median") {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  }
  // "sum", and no aggregate on a band: several rows of one bar stack into one.
  return std::accumulate(values.begin(), values.end(), 0.0);
}

// Natural order of category texts: numbers by value when all are numbers, else text.
bool AllNumbers(const std::vector<std::string>& texts) {
  return std::all_of(texts.begin(), texts.end(),
                     [](const std::string& t) { return ParseNumber(t).has_value(); });
}

}  // namespace

std::optional<double> ParseNumber(std::string_view text) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseTimestamp(std::string_view text) {
  text = Trim(text);
  size_t pos = 0;
  auto year = Digits(text, pos, 4);
  if (!year) return std::nullopt;
  int month = 1, day = 1, hour = 0, minute = 0;
  double second = 0;
  if (pos < text.size()) {
    if (text[pos++] != '-') return std::nullopt;
    auto m = Digits(text, pos, 2);
    if (!m) return std::nullopt;
    month = *m;
    if (pos < text.size()) {
      if (text[pos++] != '-') return std::nullopt;
      auto d = Digits(text, pos, 2);
      if (!d) return std::nullopt;
      day = *d;
    }
  }
  if (pos < text.size() && (text[pos] == ' ' || text[pos] == 'T')) {
    ++pos;
    auto h = Digits(text, pos, 2);
    if (!h || pos >= text.size() || text[pos++] != ':') return std::nullopt;
    auto mi = Digits(text, pos, 2);
    if (!mi) return std::nullopt;
    hour = *h;
    minute = *mi;
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      auto s = Digits(text, pos, 2);
      if (!s) return std::nullopt;
      second = *s;
      if (pos < text.size() && text[pos] == '.') {
        size_t start = ++pos;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
        if (pos == start) return std::nullopt;
        second +=
            std::stod("0." + std::string(text.substr(start, std::min<size_t>(pos - start, 9))));
      }
    }
    // The offset is checked for shape and then ignored (see the header).
    if (pos < text.size() && text[pos] == 'Z') {
      ++pos;
    } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      ++pos;
      if (!Digits(text, pos, 2)) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (pos < text.size() && !Digits(text, pos, 2)) return std::nullopt;
    }
  }
  if (pos != text.size() || hour > 23 || minute > 59 || second >= 61) return std::nullopt;
  using namespace std::chrono;
  const year_month_day ymd{std::chrono::year{*year},
                           std::chrono::month{static_cast<unsigned>(month)},
                           std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return std::nullopt;
  const auto days = static_cast<double>(sys_days{ymd}.time_since_epoch().count());
  return days * 86400.0 + hour * 3600.0 + minute * 60.0 + second;
}

std::optional<size_t> FindColumn(const Table& table, std::string_view field) {
  for (size_t i = 0; i < table.columns.size(); ++i) {
    if (table.columns[i] == field) return i;
  }
  std::optional<size_t> found;
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (size_t i = 0; i < table.columns.size(); ++i) {
    if (lower(table.columns[i]) != lower(field)) continue;
    if (found) return std::nullopt;  // ambiguous: make the model spell it exactly
    found = i;
  }
  return found;
}

Prepared Prepare(const Spec& spec, const Table& table) {
  Prepared p;
  const bool arc = spec.mark == Mark::kArc;
  const Channel* xc = arc ? (spec.color ? &*spec.color : nullptr) : (spec.x ? &*spec.x : nullptr);
  const Channel* yc = arc ? (spec.theta ? &*spec.theta : nullptr) : (spec.y ? &*spec.y : nullptr);
  const Channel* cc = arc ? xc : (spec.color ? &*spec.color : nullptr);
  p.series.push_back("");
  if (!xc || !yc) return p;
  // Plain indices, npos for "no such channel": GCC 12 misreads optionals in the loop below
  // as maybe-uninitialized.
  constexpr size_t kNone = static_cast<size_t>(-1);
  const size_t xi = FindColumn(table, xc->field).value_or(kNone);
  const size_t yi = yc->field.empty() ? kNone : FindColumn(table, yc->field).value_or(kNone);
  const size_t ci = cc ? FindColumn(table, cc->field).value_or(kNone) : kNone;
  if (xi == kNone || (!yc->field.empty() && yi == kNone) || (cc && ci == kNone)) return p;

  if (arc || spec.mark == Mark::kBar) {
    p.x_mode = xc->bin ? XMode::kBinned : XMode::kBand;
  } else if (xc->type == FieldType::kQuantitative) {
    p.x_mode = XMode::kLinear;
  } else if (xc->type == FieldType::kTemporal) {
    p.x_mode = XMode::kTime;
  }
  const bool temporal = xc->type == FieldType::kTemporal;

  if (p.x_mode == XMode::kBinned) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& row : table.rows) {
      auto v = row[xi] ? ParseNumber(*row[xi]) : std::nullopt;
      if (!v || !std::isfinite(*v)) continue;
      lo = std::min(lo, *v);
      hi = std::max(hi, *v);
    }
    if (lo > hi) return p;
    p.bin_edges = BinEdges(lo, hi, xc->maxbins > 0 ? xc->maxbins : 20);
  }

  // x keys in first-appearance order; continuous modes key by value so "1" and "1.0" meet.
  std::vector<std::string> key_text;
  std::vector<double> key_value;
  std::map<std::string, int> by_text;
  std::map<double, int> by_value;
  std::map<std::string, int> series_index;
  if (cc) p.series.clear();
  struct Group {
    std::vector<double> values;
    size_t rows = 0;
  };
  std::map<std::pair<int, int>, Group> groups;  // (x key, series)
  std::vector<std::pair<int, int>> group_order;
  const bool grouped =
      !yc->aggregate.empty() || p.x_mode == XMode::kBand || p.x_mode == XMode::kBinned;

  for (const auto& row : table.rows) {
    if (!row[xi]) continue;
    const std::string& xtext = *row[xi];
    int key = -1;
    if (p.x_mode == XMode::kBand) {
      auto [it, added] = by_text.try_emplace(xtext, static_cast<int>(key_text.size()));
      if (added) {
        key_text.push_back(xtext);
        key_value.push_back(temporal ? ParseTimestamp(xtext).value_or(0) : 0);
      }
      key = it->second;
    } else {
      auto v = temporal ? ParseTimestamp(xtext) : ParseNumber(xtext);
      if (!v || !std::isfinite(*v)) continue;
      if (p.x_mode == XMode::kBinned) {
        const double step = p.bin_edges[1] - p.bin_edges[0];
        const auto last = static_cast<double>(p.bin_edges.size() - 2);
        key = static_cast<int>(std::clamp(std::floor((*v - p.bin_edges[0]) / step), 0.0, last));
      } else {
        auto [it, added] = by_value.try_emplace(*v, static_cast<int>(key_value.size()));
        if (added) key_value.push_back(*v);
        key = it->second;
      }
    }
    int series = 0;
    if (cc) {
      const std::string name = row[ci] ? *row[ci] : "(null)";
      auto [it, added] = series_index.try_emplace(name, static_cast<int>(p.series.size()));
      if (added) p.series.push_back(name);
      series = it->second;
    }
    double y = NAN;
    if (yi != kNone && row[yi]) y = ParseNumber(*row[yi]).value_or(NAN);
    const bool has_y = std::isfinite(y);
    if (!grouped) {
      if (has_y) p.points.push_back({series, key_value[key], y});
      continue;
    }
    auto [it, added] = groups.try_emplace({key, series});
    if (added) group_order.push_back({key, series});
    if (has_y) it->second.values.push_back(y);
    // count without a field counts rows; with a field, its non-null cells
    if (yc->field.empty() || has_y) ++it->second.rows;
  }
  if (p.series.empty()) p.series.push_back("");

  for (const auto& key : group_order) {
    Group& g = groups[key];
    if (yc->aggregate.empty() && g.values.empty()) continue;
    const double y = Aggregate(yc->aggregate, g.values, g.rows);
    if (!std::isfinite(y)) continue;
    const double x =
        p.x_mode == XMode::kBand || p.x_mode == XMode::kBinned ? key.first : key_value[key.first];
    p.points.push_back({key.second, x, y});
  }

  if (p.x_mode == XMode::kBand) {
    // Category order: the sort asked for, time for dates, value for numbers, else the query's.
    std::vector<int> order(key_text.size());
    std::iota(order.begin(), order.end(), 0);
    const std::string& sort = xc->sort;
    const bool numbers = xc->type == FieldType::kQuantitative && AllNumbers(key_text);
    auto natural = [&](int a, int b) {
      if (temporal) return key_value[a] < key_value[b];
      if (numbers) return *ParseNumber(key_text[a]) < *ParseNumber(key_text[b]);
      return key_text[a] < key_text[b];
    };
    if (sort == "y" || sort == "-y") {
      std::vector<double> totals(key_text.size(), 0.0);
      for (const Point& pt : p.points) totals[static_cast<size_t>(pt.x)] += pt.y;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return sort == "y" ? totals[a] < totals[b] : totals[a] > totals[b];
      });
    } else if (sort == "ascending" || sort == "x" ||
               (sort.empty() && (temporal || numbers) && !arc)) {
      std::stable_sort(order.begin(), order.end(), natural);
    } else if (sort == "descending" || sort == "-x") {
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return natural(b, a); });
    }
    std::vector<int> rank(order.size());
    for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<int>(i);
    for (Point& pt : p.points) pt.x = rank[static_cast<size_t>(pt.x)];
    std::vector<double> times;
    for (int k : order) {
      p.categories.push_back(key_text[k]);
      times.push_back(key_value[k]);
    }
    if (temporal) p.categories = FormatDates(times);
    std::stable_sort(p.points.begin(), p.points.end(),
                     [](const Point& a, const Point& b) { return a.x < b.x; });
  } else if (temporal || p.x_mode == XMode::kBinned || xc->sort == "ascending" || xc->sort == "x" ||
             xc->sort == "descending" || xc->sort == "-x") {
    // Time always reads left to right; a quantitative x keeps the query's order unless sorted.
    std::stable_sort(p.points.begin(), p.points.end(),
                     [](const Point& a, const Point& b) { return a.x < b.x; });
  }
  p.y_integers = std::all_of(p.points.begin(), p.points.end(),
                             [](const Point& pt) { return pt.y == std::round(pt.y); });
  return p;
}

}  // namespace quarry::chart::internal
