// What the engine tests look up on an opened engine: a table's card, a column's card, and the
// options that open a source without statistics.
#pragma once

#include <string>

#include "quarry/engine/engine.h"

namespace quarry::engine {

inline OpenOptions NoProfile() {
  OpenOptions options;
  options.profile = false;
  return options;
}

// nullptr when there is none of that name.
inline const TableCard* Card(const Engine& engine, const std::string& name) {
  for (const auto& c : engine.describe()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

inline const ColumnCard* Column(const TableCard& card, const std::string& name) {
  for (const auto& c : card.columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace quarry::engine
