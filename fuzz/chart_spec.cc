// libFuzzer target: a chart spec as the model writes it (any bytes, parsed with
// quarry::ParseJson), read by chart::ParseSpec and, when it parses, checked and linted against
// small tables (chart::Check). A refusal must say why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/chart/chart.h"
#include "quarry/common/json.h"

using quarry::chart::Table;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Table> tables = [] {
    Table sales{{"region", "month", "revenue", "orders"},
                {"VARCHAR", "DATE", "DOUBLE", "BIGINT"},
                {{"North", "2024-01-01", "141794.14", "17"},
                 {"East", "2024-02-01", "-5.5", std::nullopt},
                 {std::nullopt, "2024-03-01", "1e308", "0"},
                 {"West", "not a date", "NaN", "-9223372036854775808"}}};
    Table empty{{"region", "revenue"}, {"VARCHAR", "DOUBLE"}, {}};
    return std::vector<Table>{sales, empty};
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto doc = quarry::ParseJson(text);
  if (doc.is_discarded()) return 0;
  const auto spec = quarry::chart::ParseSpec(doc);
  if (!spec) {
    if (spec.error().message.empty()) std::abort();
    return 0;
  }
  for (const Table& table : tables) {
    for (const auto& problem : quarry::chart::Check(*spec, table)) {
      if (problem.rule.empty() || problem.message.empty()) std::abort();
    }
  }
  return 0;
}
