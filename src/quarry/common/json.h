// JSON from outside (an MCP line, a provider reply, a replay file, a trace, a price file, the
// sandbox child's report), parsed with a bound on nesting: a value nested deeper than
// kMaxJsonDepth is refused before any copy or dump could recurse once per level and overflow
// the stack. Header-only; depends on nlohmann::json.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace quarry {

// Deeper than anything quarry reads or writes (traces nest about 6 levels), shallow enough
// that a recursive copy or dump stays far from the stack's end.
inline constexpr size_t kMaxJsonDepth = 256;

// The deepest nesting of arrays and objects in `text`, counting brackets outside strings;
// stops counting once past `limit`.
inline size_t JsonDepth(std::string_view text, size_t limit = kMaxJsonDepth) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Parses `text`; on malformed or too deeply nested JSON returns a discarded value (as
// json::parse(text, nullptr, false) does) and, when `problem` is given, says which.
template <typename Json = nlohmann::ordered_json>
Json ParseJson(std::string_view text, std::string* problem = nullptr) {
  if (JsonDepth(text) > kMaxJsonDepth) {
    if (problem) {
      *problem = "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep";
    }
    return Json(Json::value_t::discarded);
  }
  Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() && problem) *problem = "not valid JSON";
  return doc;
}

}  // namespace quarry
