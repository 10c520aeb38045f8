// SQL text as the execution match reads it (eval.h): a top-level ORDER BY, DISTINCT removed,
// spaced comparison operators joined; each scans the text once, skipping string literals,
// quoted identifiers and comments, so a value such as 'order by' never counts.
#include <cctype>

#include "quarry/bench/eval.h"

namespace quarry::bench {
namespace {

enum class Piece { kCode, kQuoted, kComment };

// Calls `on(piece, begin, end)` for consecutive pieces of `sql`: code, a quoted literal or
// identifier ('...', "...", `...`, [...], doubled quotes escaping), or a comment (-- to the
// end of the line, /* ... */). An unterminated piece runs to the end.
template <typename Fn>
void Scan(std::string_view sql, Fn on) {
  size_t i = 0, code_from = 0;
  auto flush = [&](size_t to) {
    if (to > code_from) on(Piece::kCode, code_from, to);
  };
  while (i < sql.size()) {
    const char c = sql[i];
    if (c == '\'' || c == '"' || c == '`' || c == '[') {
      flush(i);
      const char close = c == '[' ? ']' : c;
      size_t j = i + 1;
      while (j < sql.size()) {
        if (sql[j] == close) {
          if (close != ']' && j + 1 < sql.size() && sql[j + 1] == close) {
            j += 2;
            continue;
          }
          ++j;
          break;
        }
        ++j;
      }
      on(Piece::kQuoted, i, j);
      i = code_from = j;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      flush(i);
      size_t j = sql.find('\n', i);
      j = j == std::string_view::npos ? sql.size() : j;
      on(Piece::kComment, i, j);
      i = code_from = j;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      flush(i);
      size_t j = sql.find("*/", i + 2);
      j = j == std::string_view::npos ? sql.size() : j + 2;
      on(Piece::kComment, i, j);
      i = code_from = j;
    } else {
      ++i;
    }
  }
  flush(sql.size());
}

bool WordChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == '$' || u >= 0x80;
}

bool SameWord(std::string_view a, std::string_view upper) {
  if (a.size() != upper.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) != upper[i]) return false;
  }
  return true;
}

}  // namespace

bool HasTopLevelOrderBy(std::string_view sql) {
  int depth = 0;
  bool after_order = false;  // the last word at depth 0 was ORDER (whitespace, comments between)
  bool found = false;
  Scan(sql, [&](Piece piece, size_t from, size_t to) {
    if (found) return;
    if (piece == Piece::kComment) return;
    if (piece == Piece::kQuoted) {
      after_order = false;
      return;
    }
    size_t i = from;
    while (i < to && !found) {
      const char c = sql[i];
      if (WordChar(c)) {
        size_t j = i;
        while (j < to && WordChar(sql[j])) ++j;
        const std::string_view word = sql.substr(i, j - i);
        if (depth == 0 && after_order && SameWord(word, "BY")) found = true;
        after_order = depth == 0 && SameWord(word, "ORDER");
        i = j;
        continue;
      }
      if (c == '(') ++depth;
      if (c == ')' && depth > 0) --depth;
      if (!std::isspace(static_cast<unsigned char>(c))) after_order = false;
      ++i;
    }
  });
  return found;
}

std::string RemoveDistinct(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  Scan(sql, [&](Piece piece, size_t from, size_t to) {
    if (piece != Piece::kCode) {
      out.append(sql.substr(from, to - from));
      return;
    }
    size_t i = from;
    while (i < to) {
      if (WordChar(sql[i])) {
        size_t j = i;
        while (j < to && WordChar(sql[j])) ++j;
        const std::string_view word = sql.substr(i, j - i);
        if (!SameWord(word, "DISTINCT")) out.append(word);
        i = j;
      } else {
        out += sql[i++];
      }
    }
  });
  return out;
}

std::string JoinSpacedOperators(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  Scan(sql, [&](Piece piece, size_t from, size_t to) {
    if (piece != Piece::kCode) {
      out.append(sql.substr(from, to - from));
      return;
    }
    for (size_t i = from; i < to; ++i) {
      const char c = sql[i];
      if ((c == '>' || c == '<' || c == '!') && i + 2 < to && sql[i + 1] == ' ' &&
          sql[i + 2] == '=') {
        out += c;
        out += '=';
        i += 2;
      } else {
        out += c;
      }
    }
  });
  return out;
}

}  // namespace quarry::bench
