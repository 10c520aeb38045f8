// Non-throwing field readers for JSON from outside (a trace, a replay file, the sandbox child's
// report): nlohmann's get<T>() throws on a wrong type, and a wrong type in a file is a data
// error that names the field, never an internal error. Header-only; depends on nlohmann::json.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace quarry {

// What a JSON value is, in words ("a string", "an array", ...), for error messages.
template <typename Json>
std::string JsonKind(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "not JSON";
}

// Converts `v` into `out` when its type fits T (std::string, bool, an integer type, double,
// std::vector<std::string>, or the JSON type itself). Returns "" on success, else the expected
// kind ("a string", ...); `out` is then unchanged. Integers must fit T; a double takes any number.
template <typename T, typename Json>
std::string ReadJsonValue(const Json& v, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return "a string";
    out = v.template get_ref<const std::string&>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return "a boolean";
    out = v.template get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) {
      const auto u = v.template get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return "an integer in range";
      out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const auto i = v.template get<int64_t>();
      if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (i > 0 &&
           static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
        return "an integer in range";
      }
      out = static_cast<T>(i);
    } else {
      return "an integer";
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return "a number";
    out = v.template get<T>();
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!v.is_array()) return "an array of strings";
    std::vector<std::string> items;
    for (const auto& item : v) {
      if (!item.is_string()) return "an array of strings";
      items.push_back(item.template get_ref<const std::string&>());
    }
    out = std::move(items);
  } else {
    static_assert(std::is_same_v<T, Json>, "ReadJsonValue: unsupported type");
    out = v;
  }
  return "";
}

// Reads `object[key]` into `out` when present and not null (absent keeps `out`). Returns "" or
// the problem, naming the field by its path: "field 'steps[2].duration_ms' should be an integer,
// found a string". `where` is the object's own path ("" at the top).
template <typename T, typename Json>
std::string ReadJsonField(const Json& object, std::string_view key, T& out,
                          std::string_view where = "") {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  const std::string expected = ReadJsonValue(*it, out);
  if (expected.empty()) return "";
  return "field '" + (where.empty() ? std::string() : std::string(where) + ".") + std::string(key) +
         "' should be " + expected + ", found " + JsonKind(*it);
}

// The string at `object[key]`, or `fallback` when it is absent or not a string.
template <typename Json>
std::string JsonString(const Json& object, std::string_view key, std::string fallback = "") {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->template get<std::string>() : fallback;
}

}  // namespace quarry
