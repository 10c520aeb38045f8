// Builders shared by the chart tests: tables from literals and specs from JSON text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "quarry/chart/chart.h"

namespace quarry::chart::testing {

using Cell = std::optional<std::string>;

inline Table MakeTable(std::vector<std::string> columns, std::vector<std::vector<Cell>> rows) {
  Table t;
  t.types.assign(columns.size(), "VARCHAR");
  t.columns = std::move(columns);
  t.rows = std::move(rows);
  return t;
}

// Parses a spec that the test expects to be valid; fails the test with the error otherwise.
inline Spec MustParse(const std::string& text) {
  auto spec = ParseSpec(nlohmann::ordered_json::parse(text));
  EXPECT_TRUE(spec.has_value()) << (spec ? "" : spec.error().message);
  return spec ? *spec : Spec{};
}

}  // namespace quarry::chart::testing
