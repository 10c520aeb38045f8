// The statistics the suites report (bench.h): Wilson intervals, McNemar's exact test,
// percentiles. Written out rather than pulled from a library: Debian has no C++ statistics
// package that the rest of quarry would otherwise need, and each is a few lines of textbook
// arithmetic, checked against published values in the tests.
#include <algorithm>
#include <cmath>
#include <limits>

#include "quarry/bench/bench.h"

namespace quarry::bench {

Interval WilsonInterval(int64_t successes, int64_t n, double z) {
  if (n <= 0) return {0.0, 1.0};
  successes = std::clamp<int64_t>(successes, 0, n);
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(successes) / nn;
  const double z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / (1 + z2 / nn);
  // At 0 and n the exact ends are 0 and 1; floating point can miss them by an ulp.
  return {successes == 0 ? 0.0 : std::max(0.0, centre - half),
          successes == n ? 1.0 : std::min(1.0, centre + half)};
}

double McNemarExactP(int64_t b, int64_t c) {
  b = std::max<int64_t>(b, 0);
  c = std::max<int64_t>(c, 0);
  const int64_t n = b + c;
  if (n == 0) return 1.0;
  const int64_t k = std::min(b, c);
  // P(X <= k) for X ~ Binomial(n, 1/2), summed in log space so large n neither overflows
  // nor underflows to zero before the sum.
  double tail = 0.0;
  for (int64_t i = 0; i <= k; ++i) {
    const double log_term =
        std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
        std::lgamma(static_cast<double>(n - i) + 1) - static_cast<double>(n) * std::log(2.0);
    tail += std::exp(log_term);
  }
  return std::min(1.0, 2.0 * tail);
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  p = std::clamp(p, 0.0, 100.0);
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = static_cast<size_t>(std::ceil(rank));
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

double Median(std::vector<double> values) { return Percentile(std::move(values), 50.0); }

double Mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

}  // namespace quarry::bench
