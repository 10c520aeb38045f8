// Card statistics from sampled rows, for servers whose own statistics say too little (a
// PostgreSQL table never analyzed, a MariaDB or MySQL table): counted in the client.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {

void SampleStatsInto(TableCard& card, const Rows& rows, int64_t rows_known,
                     const std::function<int(const ColumnCard&)>& ranged) {
  const auto sampled = static_cast<int64_t>(rows.size());
  for (size_t c = 0; c < card.columns.size(); ++c) {
    ColumnCard& col = card.columns[c];
    std::map<std::string, int64_t> counts;
    int64_t nulls = 0;
    for (const auto& row : rows) {
      if (c >= row.size() || !row[c]) {
        ++nulls;
      } else {
        ++counts[*row[c]];
      }
    }
    col.profiled = true;
    col.null_count = nulls;
    col.distinct_count = static_cast<int64_t>(counts.size());
    col.distinct_approx = sampled != rows_known;
    if (sampled > 0 && rows_known > sampled) {
      // A sample's counts, scaled to the table: nulls in proportion; a column whose sampled
      // values were all different is taken as all different, others keep the sample's count
      // (a floor; the card marks it "~").
      const double scale = static_cast<double>(rows_known) / static_cast<double>(sampled);
      col.null_count = std::llround(static_cast<double>(nulls) * scale);
      if (col.distinct_count == sampled - nulls && col.distinct_count > 1) {
        col.distinct_count = rows_known - col.null_count;
      }
    }
    if (const int how = ranged(col); how != 0 && !counts.empty()) {
      if (how == 2) {
        col.min = counts.begin()->first;
        col.max = counts.rbegin()->first;
      } else {
        auto less = [](const std::string& a, const std::string& b) {
          return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
        };
        for (const auto& [value, n] : counts) {
          if (!col.min || less(value, *col.min)) col.min = value;
          if (!col.max || less(*col.max, value)) col.max = value;
        }
      }
    }
    std::vector<std::pair<int64_t, std::string>> top;
    for (const auto& [value, n] : counts) top.emplace_back(-n, value);
    std::sort(top.begin(), top.end());
    for (size_t i = 0; i < top.size() && i < kCardFewValues; ++i) {
      col.samples.push_back(top[i].second);
    }
    KeepSamples(col);
  }
}

}  // namespace quarry::engine::internal
