// Scales and labels: nice numeric ticks, thousands separators, time ticks labelled for their
// span, histogram bin edges, and how category labels avoid overlapping.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "quarry/chart/chart_internal.h"

namespace quarry::chart::internal {
namespace {

constexpr double kDay = 86400;
constexpr std::array<const char*, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct Civil {
  int year, month, day, hour, minute;
  double second;
};

Civil ToCivil(double t) {
  using namespace std::chrono;
  const double days = std::floor(t / kDay);
  const year_month_day ymd{sys_days{std::chrono::days{static_cast<long>(days)}}};
  double rest = t - days * kDay;
  const int hour = static_cast<int>(rest / 3600);
  rest -= hour * 3600;
  const int minute = static_cast<int>(rest / 60);
  return {static_cast<int>(ymd.year()),
          static_cast<int>(static_cast<unsigned>(ymd.month())),
          static_cast<int>(static_cast<unsigned>(ymd.day())),
          hour,
          minute,
          rest - minute * 60};
}

double FromCivil(int year, int month, int day) {
  using namespace std::chrono;
  const year_month_day ymd{std::chrono::year{year},
                           std::chrono::month{static_cast<unsigned>(month)},
                           std::chrono::day{static_cast<unsigned>(day)}};
  return static_cast<double>(sys_days{ymd}.time_since_epoch().count()) * kDay;
}

std::string MonthYear(const Civil& c) {
  return kMonths[c.month - 1] + (" " + std::to_string(c.year));
}
std::string MonthDay(const Civil& c) {
  return kMonths[c.month - 1] + (" " + std::to_string(c.day));
}
std::string Clock(const Civil& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d:%02d", c.hour, c.minute);
  return buf;
}

// Candidate ticks at multiples of `step` (in the caller's unit) inside [lo, hi].
std::vector<double> Multiples(double lo, double hi, double step) {
  std::vector<double> out;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; ++k) {
    out.push_back(k * step);
  }
  return out;
}

}  // namespace

Ticks NiceTicks(double lo, double hi, bool integers) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = 0;
    hi = 1;
  }
  if (lo > hi) std::swap(lo, hi);
  // A span lost in rounding noise is one value: give it an axis around it.
  if (hi - lo <= 1e-9 * std::max(std::abs(lo), std::abs(hi))) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    hi = lo == 0 ? 1 : hi + pad;
    lo = lo == 0 ? 0 : lo - pad;
  }
  const double span = hi - lo;
  const int top = static_cast<int>(std::floor(std::log10(span)));
  struct Candidate {
    double score, first, last, step;
    int count;
  };
  std::optional<Candidate> best, fallback;
  for (int k = top - 2; k <= top + 1; ++k) {
    for (double q : {1.0, 2.0, 2.5, 5.0}) {
      const double step = q * std::pow(10.0, k);
      if (integers && step < 1) continue;
      if (integers && q == 2.5 && k == 0) continue;  // 2.5 is not a whole step
      const double first = std::floor(lo / step + 1e-9) * step;
      const double last = std::ceil(hi / step - 1e-9) * step;
      const int count = static_cast<int>(std::lround((last - first) / step)) + 1;
      // Least wasted range first, then about six ticks, and 2.5 only when it fits clearly better.
      const double waste = (last - first - span) / (last - first);
      const double score = waste * 3 + std::abs(count - 6) * 0.25 + (q == 2.5 ? 0.6 : 0);
      const Candidate c{score, first, last, step, count};
      if (count >= 4 && count <= 8) {
        if (!best || c.score < best->score) best = c;
      } else if (count >= 2 && (!fallback || c.score < fallback->score)) {
        fallback = c;
      }
    }
  }
  // Whole steps cannot split a span below one; ticks at fractions are better than none.
  if (!best && !fallback) return integers ? NiceTicks(lo, hi, false) : Ticks{{lo, hi}, span};
  const Candidate c = best ? *best : *fallback;
  Ticks ticks;
  ticks.step = c.step;
  const double scale = std::pow(10.0, DecimalsFor(c.step));
  for (int i = 0; i < c.count; ++i) {
    // Round to the step's decimals so 0.1 * 3 is 0.3, not 0.30000000000000004.
    ticks.values.push_back(std::round((c.first + i * c.step) * scale) / scale);
  }
  return ticks;
}

int DecimalsFor(double step) {
  for (int d = 0; d < 10; ++d) {
    const double scaled = std::abs(step) * std::pow(10.0, d);
    const double whole = std::round(scaled);
    if (whole >= 1 && std::abs(scaled - whole) < 1e-6 * scaled) return d;
  }
  return 10;
}

std::string FormatNumber(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(value));
  std::string digits = buf;
  const size_t dot = digits.find('.');
  std::string whole = digits.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "" : digits.substr(dot);
  for (int i = static_cast<int>(whole.size()) - 3; i > 0; i -= 3) whole.insert(i, ",");
  const bool zero = digits.find_first_not_of("0.") == std::string::npos;
  return (value < 0 && !zero ? "-" : "") + whole + fraction;
}

std::vector<TimeTick> TimeTicks(double t0, double t1) {
  std::vector<TimeTick> out;
  if (t1 < t0) std::swap(t0, t1);
  const double span_days = (t1 - t0) / kDay;
  if (span_days <= 0) {
    out.push_back({t0, FormatDates({t0}).front()});
    return out;
  }
  const Civil a = ToCivil(t0), b = ToCivil(t1);
  if (span_days >= 3 * 365) {
    for (int step : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}) {
      out.clear();
      for (int y = a.year; y <= b.year; ++y) {
        const double t = FromCivil(y, 1, 1);
        if (y % step == 0 && t >= t0 && t <= t1) out.push_back({t, std::to_string(y)});
      }
      if (out.size() <= 8) break;
    }
  } else if (span_days >= 60) {
    for (int step : {1, 2, 3, 6, 12}) {
      out.clear();
      for (int m = a.year * 12 + a.month - 1; m <= b.year * 12 + b.month - 1; ++m) {
        const Civil c{m / 12, m % 12 + 1, 1, 0, 0, 0};
        const double t = FromCivil(c.year, c.month, 1);
        if ((m % 12) % step == 0 && t >= t0 && t <= t1) out.push_back({t, MonthYear(c)});
      }
      if (out.size() <= 8) break;
    }
  } else if (span_days >= 2) {
    for (int step : {1, 2, 7, 14}) {
      out.clear();
      // Weekly ticks fall on Mondays: 1970-01-01 was a Thursday, so shift by 3 days.
      const double shift = step >= 7 ? 3 * kDay : 0;
      for (double t : Multiples(t0 + shift, t1 + shift, step * kDay)) {
        out.push_back({t - shift, MonthDay(ToCivil(t - shift))});
      }
      if (out.size() <= 8) break;
    }
  } else {
    for (double step :
         {60.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0, 43200.0}) {
      out.clear();
      for (double t : Multiples(t0, t1, step)) {
        const Civil c = ToCivil(t);
        out.push_back({t, c.hour == 0 && c.minute == 0 ? MonthDay(c) : Clock(c)});
      }
      if (out.size() <= 8) break;
    }
  }
  return out;
}

std::vector<std::string> FormatDates(const std::vector<double>& times) {
  std::vector<Civil> cs;
  for (double t : times) cs.push_back(ToCivil(t));
  auto all = [&](auto pred) { return std::all_of(cs.begin(), cs.end(), pred); };
  const bool midnight =
      all([](const Civil& c) { return c.hour == 0 && c.minute == 0 && c.second < 1e-6; });
  const bool firsts = midnight && all([](const Civil& c) { return c.day == 1; });
  const bool years = firsts && all([](const Civil& c) { return c.month == 1; });
  const bool one_year = cs.empty() || all([&](const Civil& c) { return c.year == cs[0].year; });
  std::vector<std::string> out;
  for (const Civil& c : cs) {
    char buf[32];
    if (years) {
      out.push_back(std::to_string(c.year));
    } else if (firsts) {
      out.push_back(MonthYear(c));
    } else if (midnight) {
      out.push_back(one_year ? MonthDay(c) : MonthDay(c) + ", " + std::to_string(c.year));
    } else {
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d", c.year, c.month, c.day, c.hour,
                    c.minute);
      out.push_back(buf);
    }
  }
  return out;
}

std::vector<double> BinEdges(double lo, double hi, int maxbins) {
  maxbins = std::max(maxbins, 1);
  if (hi <= lo) return {lo - 0.5, lo + 0.5};  // one value: one bin around it
  const double raw = (hi - lo) / maxbins;
  double step = std::pow(10.0, std::floor(std::log10(raw)));
  for (double q : {1.0, 2.0, 5.0, 10.0}) {
    if (q * step >= raw - 1e-12) {
      step *= q;
      break;
    }
  }
  const double first = std::floor(lo / step) * step;
  // Bins are [a, b) except the last, which also takes the maximum (as Vega-Lite's do).
  const int bins = std::max(1, static_cast<int>(std::ceil((hi - first) / step - 1e-9)));
  std::vector<double> edges;
  const double scale = std::pow(10.0, DecimalsFor(step));
  for (int i = 0; i <= bins; ++i) edges.push_back(std::round((first + i * step) * scale) / scale);
  return edges;
}

LabelLayout LayoutCategoryLabels(const std::vector<double>& widths, double text_height,
                                 double band) {
  constexpr double kGap = 6;
  if (widths.empty() || band <= 0) return {};
  bool fits = true;
  double widest = 0;
  for (size_t i = 0; i < widths.size(); ++i) {
    widest = std::max(widest, widths[i]);
    if (i > 0 && (widths[i - 1] + widths[i]) / 2 + kGap > band) fits = false;
  }
  if (fits) return {0, 1};
  // Rotated -45 degrees, neighbours' baselines are band * sin(45) apart; they must clear a line.
  const int rotated =
      std::max(1, static_cast<int>(std::ceil((text_height + 2) / (band * M_SQRT1_2))));
  const int flat = std::max(1, static_cast<int>(std::ceil((widest + kGap) / band)));
  if (flat <= rotated) return {0, flat};
  return {-45, rotated};
}

}  // namespace quarry::chart::internal
