// The read-only guard's SQL tokenizer (sql_tokens_internal.h).
#include <cctype>
#include <cstring>

#include "quarry/common/text.h"
#include "quarry/engine/sql_tokens_internal.h"

namespace quarry::engine::internal {
namespace {

// For a '$' at `i` that opens a dollar quote ($$ or $tag$), the index of the tag's closing '$'.
// A tag is an identifier without '$': a letter, '_' or non-ASCII byte first, then digits too
// ($q1$). A tag the guard missed would let a quote inside the string start one of its own.
size_t DollarTagEnd(std::string_view sql, size_t i) {
  size_t j = i + 1;
  auto tag_char = [&](size_t k) {
    const auto b = static_cast<unsigned char>(sql[k]);
    return std::isalpha(b) || b == '_' || b >= 0x80 || (k > i + 1 && std::isdigit(b));
  };
  while (j < sql.size() && tag_char(j)) ++j;
  return j < sql.size() && sql[j] == '$' ? j : std::string_view::npos;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// ClickHouse's escapes, in strings and quoted names alike: `fi\x6ce` names file. The guard
// compares names as the server decodes them. Returns the characters consumed after the '\'.
size_t DecodeClickHouseEscape(std::string_view sql, size_t j, std::string& out) {
  const char e = sql[j];
  if (e == 'x' && j + 2 < sql.size() && Hex(sql[j + 1]) >= 0 && Hex(sql[j + 2]) >= 0) {
    out += static_cast<char>(Hex(sql[j + 1]) * 16 + Hex(sql[j + 2]));
    return 3;
  }
  const char* from = "bfnrt0av";
  const char* to = "\b\f\n\r\t\0\a\v";
  const char* at = std::strchr(from, e);
  out += at && e != '\0' ? to[at - from] : e;
  return 1;
}

std::optional<std::vector<Token>> Tokenize(std::string_view sql, Dialect dialect) {
  const bool postgres = dialect == Dialect::kPostgreSQL;
  const bool sqlite = dialect == Dialect::kSQLite;
  const bool mysql = dialect == Dialect::kMySQL;
  const bool clickhouse = dialect == Dialect::kClickHouse;
  std::vector<Token> tokens;
  size_t i = 0;
  bool in_executable = false;  // MySQL: inside /*! ... */, whose text the server runs
  while (i < sql.size()) {
    char c = sql[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (mysql && in_executable && c == '*' && i + 1 < sql.size() && sql[i + 1] == '/') {
      in_executable = false;
      i += 2;
    } else if (clickhouse && c == '#') {
      // ClickHouse 22 and later read "# " and "#!" as comments; 18.16 refuses '#'. Read as a
      // comment here, the guard never reads less than a server runs.
      while (i < sql.size() && sql[i] != '\n' && sql[i] != '\r') ++i;
    } else if (mysql && (c == '#' || (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-' &&
                                      (i + 2 == sql.size() ||
                                       static_cast<unsigned char>(sql[i + 2]) <= ' ')))) {
      // MySQL reads "--" as a comment only before a space or control character: 1--1 is 1 - -1.
      // Ending it at a carriage return too only shows the guard more text.
      while (i < sql.size() && sql[i] != '\n' && sql[i] != '\r') ++i;
    } else if (mysql && c == '/' && i + 2 < sql.size() && sql[i + 1] == '*' &&
               (sql[i + 2] == '!' ||
                (sql[i + 2] == 'M' && i + 3 < sql.size() && sql[i + 3] == '!'))) {
      // An executable comment: the server runs its text (when its version is at least the
      // optional number), so the guard reads it as code, always.
      if (in_executable) return std::nullopt;  // the server refuses them nested
      const bool mariadb = sql[i + 2] == 'M';
      i += mariadb ? 4 : 3;
      size_t digits = 0;
      while (i + digits < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + digits]))) {
        ++digits;
      }
      // A version is five digits (/*!50001) or six (/*M!100100); another count, where MySQL
      // and MariaDB may split version and code differently, is not read.
      if (digits != 0 && digits != (mariadb ? 6u : 5u)) return std::nullopt;
      i += digits;
      in_executable = true;
    } else if (mysql && c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      tokens.push_back({TokenKind::kSymbol, "-"});
      ++i;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      // PostgreSQL also ends a comment at a carriage return; ending it there everywhere only
      // shows the guard more text.
      while (i < sql.size() && sql[i] != '\n' && sql[i] != '\r') ++i;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      // Inside an executable comment the first */ may end either: unreadable, so refused.
      if (in_executable) return std::nullopt;
      size_t end = sql.find("*/", i + 2);
      if (end == std::string_view::npos) return std::nullopt;
      // ClickHouse nests block comments (/* /* */ still open */): a comment that opens another
      // is read differently by the guard and some servers, so it is not read.
      if (clickhouse && sql.substr(i + 2, end - i - 2).find("/*") != std::string_view::npos) {
        return std::nullopt;
      }
      i = end + 2;
    } else if (!sqlite && !mysql && c == '$' && DollarTagEnd(sql, i) != std::string_view::npos) {
      // $$...$$ or $tag$...$tag$: a string literal in DuckDB and PostgreSQL, and a heredoc
      // string in ClickHouse 23 and later.
      const size_t tag_end = DollarTagEnd(sql, i);
      const std::string_view tag = sql.substr(i, tag_end - i + 1);
      const size_t close = sql.find(tag, tag_end + 1);
      if (close == std::string_view::npos) return std::nullopt;
      tokens.push_back(
          {TokenKind::kString, std::string(sql.substr(tag_end + 1, close - tag_end - 1))});
      i = close + tag.size();
    } else if (c == '\'' || c == '"' ||
               (!postgres && (c == '`' || (!mysql && !clickhouse && c == '[')))) {
      char close = c == '[' ? ']' : c;
      // E'...' (PostgreSQL, DuckDB): a backslash escapes the next character, \' included.
      // Read as a plain string, E'\'', pg_read_file(...) --' would hide the call.
      // MySQL: every '...' and "..." string takes backslash escapes. ClickHouse: strings and
      // both kinds of quoted names do.
      const bool escapes = (mysql && c != '`') || clickhouse ||
                           (!sqlite && !mysql && c == '\'' && !tokens.empty() &&
                            tokens.back().kind == TokenKind::kWord && tokens.back().text == "E" &&
                            i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e'));
      std::string text;
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= sql.size()) return std::nullopt;
        if (escapes && sql[j] == '\\') {
          if (++j >= sql.size()) return std::nullopt;
          if (clickhouse) {
            j += DecodeClickHouseEscape(sql, j, text) - 1;
          } else {
            text += sql[j];
          }
          continue;
        }
        if (sql[j] == close) {
          if (close != ']' && j + 1 < sql.size() && sql[j + 1] == close) {
            text += close;  // doubled quote escapes itself
            ++j;
            continue;
          }
          break;
        }
        text += sql[j];
      }
      const bool string = c == '\'' || (mysql && c == '"');
      tokens.push_back({string ? TokenKind::kString : TokenKind::kQuotedIdent, text});
      i = j + 1;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$') {
      size_t j = i;
      while (j < sql.size() &&
             (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_' || sql[j] == '$')) {
        ++j;
      }
      tokens.push_back({TokenKind::kWord, Upper(sql.substr(i, j - i))});
      i = j;
    } else {
      tokens.push_back({TokenKind::kSymbol, std::string(1, c)});
      ++i;
    }
  }
  if (in_executable) return std::nullopt;
  return tokens;
}

}  // namespace quarry::engine::internal
