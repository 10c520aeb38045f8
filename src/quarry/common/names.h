// Name tables for enum classes whose values are written as text (traces, fixtures, flags): one
// array of {value, name} pairs per enum, read both ways. Header-only; depends on nothing.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace quarry {

template <typename E>
using NamePair = std::pair<E, std::string_view>;

// The name of `value`; the table's first name for a value it lacks (a table is written to
// cover its enum, and -Wswitch cannot see into it: tests read every value back).
template <typename E, size_t N>
constexpr std::string_view NameOf(const NamePair<E> (&names)[N], E value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return names[0].second;
}

// The value named `name`, or nullopt when no entry has that name (case-sensitive).
template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const NamePair<E> (&names)[N], std::string_view name) {
  for (const auto& [v, n] : names) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace quarry
