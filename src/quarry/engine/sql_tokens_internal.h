// The read-only guard's SQL tokenizer (sql_tokens.cc): comments, string literals, dollar quotes
// and quoted identifiers as each dialect reads them. Internal to the engine.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quarry/engine/engine.h"

namespace quarry::engine::internal {

enum class TokenKind { kWord, kString, kQuotedIdent, kSymbol };

struct Token {
  TokenKind kind;
  std::string text;  // words upper-cased; strings without their quotes
};

// Returns nullopt when a literal or comment never closes: the engine's parser reports that
// as a syntax error with a better message than ours.
// The dialect decides what hides text: '[' and '`' are operators in PostgreSQL (ARRAY[...]),
// not quoted names; SQLite has neither dollar quotes nor E'' strings ($a$ is a parameter name
// there, E a column), so reading them as strings would hide the code between them.
// MySQL: `#` and `-- ` (a space or control character after it) comments; '...' and "..." are
// strings with backslash escapes (the engine sets a sql_mode without ANSI_QUOTES and
// NO_BACKSLASH_ESCAPES, so the server reads them so too); `name` is a quoted name; the text of an
// executable comment (/*!, /*!NNNNN, /*M!, /*M!NNNNNN) is read as code.
// ClickHouse: `--` and `#` comments; '...' strings and "..." and `...` names, all with backslash
// escapes, decoded as the server decodes them (\xHH, \n, \t, \0 ...), so `fi\x6ce` reads file;
// $tag$...$tag$ heredoc strings; a block comment holding another "/*" is not read (servers differ
// on nesting).
std::optional<std::vector<Token>> Tokenize(std::string_view sql, Dialect dialect);

// ClickHouse's backslash escape after the '\\' at text[at - 1]: appends what it stands for
// (\xHH a byte; \b \f \n \r \t \0 \a \v control characters; any other character itself)
// to `out` and returns the characters it took. The server reads strings, quoted names and TSV
// fields so.
size_t DecodeClickHouseEscape(std::string_view text, size_t at, std::string& out);

// A statement or function a dialect refuses by its name (upper-case), the rule it breaks, and
// why ("SET changes the session").
struct NamedRule {
  const char* name;
  const char* rule;
  const char* why;
};
QueryFailure GuardViolation(std::string rule, std::string message);
// nullopt when `first` is one of `starts` (a string or quoted name never is); else the rule of
// `statements` that names its first word, or read_only, saying `allowed` ("SELECT or WITH ...
// SELECT") is what may run. (guard.cc)
std::optional<QueryFailure> CheckStatementStart(const Token& first,
                                                std::span<const char* const> starts,
                                                std::span<const NamedRule> statements,
                                                std::string_view allowed);
// The refusal of a call of a function that `functions` names (`upper`: its name upper-cased;
// `shown`: as the message gives it), or nullopt.
std::optional<QueryFailure> CheckFunctionCall(std::string_view upper, std::string_view shown,
                                              std::span<const NamedRule> functions);

// The MySQL dialect's rules (guard_mysql.cc) on the tokens of a text with one statement.
std::optional<QueryFailure> CheckMySql(const std::vector<Token>& tokens);
// The ClickHouse dialect's rules (guard_clickhouse.cc), likewise.
std::optional<QueryFailure> CheckClickHouse(const std::vector<Token>& tokens);

}  // namespace quarry::engine::internal
