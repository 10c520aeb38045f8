// ASCII text helpers every module uses: case folding and trimming that leave UTF-8 bytes as
// they are, and a cut that never splits a UTF-8 character. Header-only; depends on nothing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace quarry {

// `s` with ASCII letters lower-cased; every other byte (UTF-8 included) unchanged. Unlike
// std::tolower it does not depend on the process's locale.
inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// `s` with ASCII letters upper-cased; every other byte unchanged (SQL keywords, type names).
inline std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// Whether `c` is ASCII whitespace: space, \t, \n, \v, \f or \r (std::isspace in the C locale).
constexpr bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// `s` without leading and trailing ASCII whitespace (a view into `s`).
constexpr std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The longest prefix of `s` of at most `max_bytes` that ends on a UTF-8 character boundary:
// a cut never leaves half a character (which a JSON dump would turn into U+FFFD or refuse).
constexpr size_t Utf8Prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s.size();
  size_t n = max_bytes;
  // Back over continuation bytes (10xxxxxx) to the start of the character that was cut.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

// `s` safe inside HTML or XML text and quoted attributes (the trace viewer, reports, SVG charts):
// & < > " ' as entities, and the control characters XML 1.0 forbids (all below 0x20 but tab,
// line feed and carriage return) dropped. UTF-8 passes through.
inline std::string EscapeMarkup(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r') out += c;
    }
  }
  return out;
}

}  // namespace quarry
