// The first layer of the read-only guard: the rules checked on the tokens of the guard's own SQL
// tokenizer (sql_tokens.cc: comments, string literals and quoted identifiers understood). The
// engines add their own authoritative checks (statement type, read-only flags) after this one.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "quarry/common/text.h"
#include "quarry/engine/engine.h"
#include "quarry/engine/sql_tokens_internal.h"

namespace quarry::engine {
namespace {

using internal::Token;
using internal::Tokenize;
using internal::TokenKind;

// Statement keywords that write. Checked anywhere in the text, not only at the start, because
// DuckDB and SQLite accept `WITH d AS (DELETE ... RETURNING *) SELECT ...` forms.
constexpr std::array kDmlKeywords = {"INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT"};

// What a statement that is not a query is called in the rejection, by its first keyword.
struct StatementRule {
  const char* keyword;
  const char* rule;
  const char* what;
};
constexpr std::array kStatementRules = {
    StatementRule{"ATTACH", "attach", "attaching another database"},
    StatementRule{"DETACH", "attach", "detaching a database"},
    StatementRule{"PRAGMA", "pragma", "a PRAGMA statement"},
    StatementRule{"COPY", "file_write", "COPY (it reads or writes files)"},
    StatementRule{"EXPORT", "file_write", "EXPORT DATABASE (it writes files)"},
    StatementRule{"IMPORT", "file_access", "IMPORT DATABASE (it reads files)"},
    StatementRule{"INSTALL", "extension_loading", "installing extensions"},
    StatementRule{"FORCE", "extension_loading", "installing extensions"},
    StatementRule{"LOAD", "extension_loading", "loading extensions"},
    StatementRule{"SET", "configuration", "changing settings"},
    StatementRule{"RESET", "configuration", "changing settings"},
    StatementRule{"USE", "configuration", "changing the default database"},
    StatementRule{"CALL", "read_only", "a CALL statement"},
};

// Table functions and scalar functions that reach the file system or the network.
constexpr std::array kFileFunctions = {
    "READ_CSV",
    "READ_CSV_AUTO",
    "READ_PARQUET",
    "PARQUET_SCAN",
    "READ_JSON",
    "READ_JSON_AUTO",
    "READ_NDJSON",
    "READ_NDJSON_AUTO",
    "READ_JSON_OBJECTS",
    "READ_NDJSON_OBJECTS",
    "READ_TEXT",
    "READ_BLOB",
    "SNIFF_CSV",
    "GLOB",
    "PARQUET_METADATA",
    "PARQUET_SCHEMA",
    "PARQUET_FILE_METADATA",
    "PARQUET_KV_METADATA",
    "SQLITE_SCAN",
    "SQLITE_ATTACH",
    "POSTGRES_SCAN",
    "MYSQL_SCAN",
    "ICEBERG_SCAN",
    "DELTA_SCAN",
    "READ_XLSX",
    "LOAD_EXTENSION",
    "READFILE",
    "WRITEFILE",
    "EDIT",
    "FTS3_TOKENIZER",
    "CSV_SCAN",
    "JSON_SCAN",
    "READ_CSV_AUTO",
};
// DuckDB's functions that run SQL given as a string (which the guard cannot see), or take a
// path, a pointer or a setting as one, beyond the readers above. Listed from duckdb_functions()
// of the pinned DuckDB 1.4.4; tests/engine/duckdb_functions_test.cc fails when a new version
// brings a table function, or a function whose name speaks of SQL, files or settings, that is
// neither here nor reviewed as harmless.
struct FunctionRule {
  const char* name;
  const char* rule;
};
constexpr std::array kDuckDbFunctionRules = {
    FunctionRule{"QUERY", "dynamic_sql"},
    FunctionRule{"QUERY_TABLE", "dynamic_sql"},
    FunctionRule{"JSON_EXECUTE_SERIALIZED_SQL", "dynamic_sql"},
    FunctionRule{"JSON_SERIALIZE_PLAN", "dynamic_sql"},
    FunctionRule{"JSON_SERIALIZE_SQL", "dynamic_sql"},
    FunctionRule{"JSON_DESERIALIZE_SQL", "dynamic_sql"},
    FunctionRule{"SQL_AUTO_COMPLETE", "dynamic_sql"},
    FunctionRule{"CHECK_PEG_PARSER", "dynamic_sql"},
    // Table macros over query_table(source::VARCHAR): a string source is read as a table name,
    // so a path.
    FunctionRule{"HISTOGRAM", "dynamic_sql"},
    FunctionRule{"HISTOGRAM_VALUES", "dynamic_sql"},
    FunctionRule{"PARQUET_BLOOM_PROBE", "file_access"},
    FunctionRule{"READ_JSON_OBJECTS_AUTO", "file_access"},
    FunctionRule{"READ_NDJSON_OBJECTS_AUTO", "file_access"},
    FunctionRule{"WHICH_SECRET", "file_access"},
    FunctionRule{"ARROW_SCAN", "internal"},
    FunctionRule{"ARROW_SCAN_DUMB", "internal"},
    FunctionRule{"ENABLE_LOGGING", "configuration"},
    FunctionRule{"DISABLE_LOGGING", "configuration"},
    FunctionRule{"TRUNCATE_DUCKDB_LOGS", "configuration"},
    FunctionRule{"WRITE_LOG", "configuration"},
    FunctionRule{"CHECKPOINT", "read_only"},
    FunctionRule{"FORCE_CHECKPOINT", "read_only"},
};

constexpr std::array kQueryStarts = {"SELECT",   "WITH",      "VALUES", "FROM",  "TABLE",  "(",
                                     "DESCRIBE", "SUMMARIZE", "SHOW",   "PIVOT", "UNPIVOT"};
// Statement keywords that are not queries. A first word that is neither these nor a query
// start (a typo like SELEC) goes on to the engine's parser, which reports a syntax error.
constexpr std::array kOtherStatements = {
    "INSERT",  "UPDATE",     "DELETE",   "REPLACE", "MERGE",    "UPSERT",  "CREATE",
    "DROP",    "ALTER",      "TRUNCATE", "VACUUM",  "ANALYZE",  "REINDEX", "GRANT",
    "REVOKE",  "BEGIN",      "START",    "COMMIT",  "ROLLBACK", "END",     "SAVEPOINT",
    "RELEASE", "CHECKPOINT", "COMMENT",  "EXPLAIN", "PREPARE",  "EXECUTE", "DEALLOCATE"};
constexpr std::array kRemotePrefixes = {"http://", "https://", "s3://",    "s3a://",   "gs://",
                                        "gcs://",  "az://",    "azure://", "abfss://", "hf://",
                                        "r2://",   "ftp://",   "file://"};

// PostgreSQL: what may start a query (no DuckDB FROM-first, DESCRIBE, SHOW or PIVOT; no
// EXPLAIN, whose ANALYZE form runs the statement).
constexpr std::array kPgQueryStarts = {"SELECT", "WITH", "VALUES", "TABLE", "("};
// Statements refused by first word, with a rule more telling than read_only.
constexpr std::array kPgStatementRules = {
    StatementRule{"DO", "read_only", "DO (it runs procedural code)"},
    StatementRule{"LOCK", "locking", "LOCK"},
    StatementRule{"LISTEN", "notify", "LISTEN"},
    StatementRule{"NOTIFY", "notify", "NOTIFY"},
    StatementRule{"UNLISTEN", "notify", "UNLISTEN"},
    StatementRule{"DECLARE", "cursor", "DECLARE (cursors)"},
    StatementRule{"FETCH", "cursor", "FETCH (cursors)"},
    StatementRule{"MOVE", "cursor", "MOVE (cursors)"},
    StatementRule{"CLOSE", "cursor", "CLOSE (cursors)"},
    StatementRule{"DISCARD", "configuration", "DISCARD"},
    StatementRule{"SHOW", "configuration", "SHOW"},
};

// PostgreSQL functions refused by name (schema-qualified or quoted alike), by rule. A name
// ending in '*' is a prefix. These reach the server's files or the network, have side effects
// beyond the query (signals, WAL, replication, locks, notifications, sequences), run SQL given
// as text (which the guard cannot see), or only wait.
constexpr std::array kPgFunctionRules = {
    FunctionRule{"PG_READ_FILE", "file_access"},
    FunctionRule{"PG_READ_BINARY_FILE", "file_access"},
    FunctionRule{"PG_LS_*", "file_access"},
    FunctionRule{"PG_STAT_FILE", "file_access"},
    FunctionRule{"PG_FILE_*", "file_access"},
    FunctionRule{"PG_LOGDIR_LS", "file_access"},
    FunctionRule{"PG_CURRENT_LOGFILE", "file_access"},
    FunctionRule{"LO_*", "file_access"},
    FunctionRule{"LOREAD", "file_access"},
    FunctionRule{"LOWRITE", "file_access"},
    FunctionRule{"DBLINK*", "network"},
    FunctionRule{"POSTGRES_FDW*", "network"},
    FunctionRule{"SET_CONFIG", "configuration"},
    FunctionRule{"PG_RELOAD_CONF", "admin"},
    FunctionRule{"PG_TERMINATE_BACKEND", "admin"},
    FunctionRule{"PG_CANCEL_BACKEND", "admin"},
    FunctionRule{"PG_SIGNAL_BACKEND", "admin"},
    FunctionRule{"PG_ROTATE_LOGFILE*", "admin"},
    FunctionRule{"PG_CREATE_*", "admin"},
    FunctionRule{"PG_DROP_*", "admin"},
    FunctionRule{"PG_SWITCH_WAL", "admin"},
    FunctionRule{"PG_SWITCH_XLOG", "admin"},
    FunctionRule{"PG_PROMOTE", "admin"},
    FunctionRule{"PG_WAL_REPLAY_*", "admin"},
    FunctionRule{"PG_BACKUP_*", "admin"},
    FunctionRule{"PG_START_BACKUP", "admin"},
    FunctionRule{"PG_STOP_BACKUP", "admin"},
    FunctionRule{"PG_REPLICATION_*", "admin"},
    FunctionRule{"PG_LOGICAL_*", "admin"},
    FunctionRule{"PG_COPY_*", "admin"},
    FunctionRule{"PG_STAT_RESET*", "admin"},
    FunctionRule{"PG_STAT_STATEMENTS_RESET", "admin"},
    FunctionRule{"PG_LOG_BACKEND_MEMORY_CONTEXTS", "admin"},
    FunctionRule{"PG_LOG_STANDBY_SNAPSHOT", "admin"},    // PostgreSQL 16: writes to the WAL
    FunctionRule{"PG_SYNC_REPLICATION_SLOTS", "admin"},  // 17: creates slots on a standby
    FunctionRule{"BINARY_UPGRADE_*", "admin"},           // pg_upgrade's own
    // PostgreSQL 18 writes planner statistics through these (pg_restore_relation_stats,
    // pg_clear_attribute_stats ...), inside a READ ONLY transaction too, for a role with
    // MAINTAIN on the table; the cards read those statistics.
    FunctionRule{"PG_RESTORE_*", "admin"},
    FunctionRule{"PG_CLEAR_*", "admin"},
    FunctionRule{"PG_IMPORT_SYSTEM_COLLATIONS", "admin"},
    FunctionRule{"PG_PREWARM", "admin"},
    // Index maintenance that PostgreSQL allows inside a READ ONLY transaction.
    FunctionRule{"GIN_CLEAN_PENDING_LIST", "admin"},
    FunctionRule{"BRIN_SUMMARIZE_*", "admin"},
    FunctionRule{"BRIN_DESUMMARIZE_RANGE", "admin"},
    FunctionRule{"PG_NOTIFY", "notify"},
    FunctionRule{"PG_ADVISORY_*", "locking"},
    FunctionRule{"PG_TRY_ADVISORY_*", "locking"},
    FunctionRule{"NEXTVAL", "read_only"},
    FunctionRule{"SETVAL", "read_only"},
    FunctionRule{"TXID_CURRENT", "read_only"},
    FunctionRule{"PG_CURRENT_XACT_ID", "read_only"},
    FunctionRule{"QUERY_TO_XML*", "dynamic_sql"},
    FunctionRule{"QUERY_TO_XMLSCHEMA", "dynamic_sql"},
    FunctionRule{"CURSOR_TO_XML*", "dynamic_sql"},
    FunctionRule{"TABLE_TO_XML*", "dynamic_sql"},
    FunctionRule{"SCHEMA_TO_XML*", "dynamic_sql"},
    FunctionRule{"DATABASE_TO_XML*", "dynamic_sql"},
    FunctionRule{"TS_STAT", "dynamic_sql"},
    FunctionRule{"TS_REWRITE", "dynamic_sql"},
    FunctionRule{"PG_SLEEP", "sleep"},
    FunctionRule{"PG_SLEEP_FOR", "sleep"},
    FunctionRule{"PG_SLEEP_UNTIL", "sleep"},
};

const FunctionRule* PgFunctionRule(const std::string& name) {
  for (const FunctionRule& r : kPgFunctionRules) {
    const std::string_view rule(r.name);
    if (rule.ends_with('*') ? std::string_view(name).starts_with(rule.substr(0, rule.size() - 1))
                            : name == rule) {
      return &r;
    }
  }
  return nullptr;
}

template <size_t N>
bool Contains(const std::array<const char*, N>& set, const std::string& word) {
  return std::any_of(set.begin(), set.end(), [&](const char* k) { return word == k; });
}

std::string TableList(const std::vector<std::string>& tables) {
  std::string out;
  for (const auto& t : tables) out += (out.empty() ? "" : ", ") + t;
  return out.empty() ? "(none)" : out;
}

QueryFailure Violation(std::string rule, std::string message) {
  return internal::GuardViolation(std::move(rule), std::move(message));
}

using FunctionCheck = std::optional<QueryFailure> (*)(const std::string& name, bool in_string);

// DuckDB: the file readers and kDuckDbFunctionRules.
std::optional<QueryFailure> DuckDbFunctionViolation(const std::string& name, bool in_string) {
  std::string rule;
  if (Contains(kFileFunctions, name)) rule = "file_access";
  for (const FunctionRule& r : kDuckDbFunctionRules) {
    if (name == r.name) rule = r.rule;
  }
  if (rule.empty()) return std::nullopt;
  const std::string why = rule == "file_access"   ? "reads files or loads code"
                          : rule == "dynamic_sql" ? "runs or reads SQL given as text"
                          : rule == "internal"    ? "reads process memory by address"
                          : rule == "read_only"   ? "writes to the database"
                                                  : "changes settings";
  return Violation(rule, "guard: " + std::string(in_string ? "a string holds a call to " : "") +
                             name + "() " + why +
                             ", which is not allowed: only a single "
                             "read-only query over the registered tables "
                             "may run");
}

std::optional<QueryFailure> FunctionViolation(const std::string& name, bool in_string) {
  const FunctionRule* r = PgFunctionRule(name);
  if (!r) return std::nullopt;
  const std::string rule = r->rule;
  std::string why = rule == "file_access"   ? "reaches the server's files"
                    : rule == "network"     ? "reaches other servers"
                    : rule == "dynamic_sql" ? "runs SQL given as text"
                    : rule == "sleep"       ? "only waits"
                    : rule == "locking"     ? "takes locks"
                    : rule == "notify"      ? "sends notifications"
                                            : "changes the server's state";
  return Violation(rule, "guard: " + std::string(in_string ? "a string holds a call to " : "") +
                             name + "() " + why +
                             ", which is not allowed: only a single "
                             "read-only query may run");
}

// A string that is no readable SQL on its own may still become SQL once concatenated with
// another: every word followed by '(' (a closing '"' and spaces between allowed) is checked.
std::optional<QueryFailure> CheckRawCalls(std::string_view text,
                                          FunctionCheck check = FunctionViolation) {
  auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
  };
  for (size_t i = 0; i < text.size();) {
    if (!word_char(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && word_char(text[j])) ++j;
    size_t k = j < text.size() && text[j] == '"' ? j + 1 : j;
    while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
    if (k < text.size() && text[k] == '(') {
      if (auto v = check(Upper(text.substr(i, j - i)), true)) return v;
    }
    i = j;
  }
  return std::nullopt;
}

// Some functions run a string as SQL (ts_rewrite, ts_stat, query_to_xml, and any function
// someone wrote with EXECUTE), so a call inside a string literal is as good as one outside it.
// Strings are read as SQL too, nested strings included, and a call to a refused function in
// any of them is refused. `SELECT 'pg_sleep(1)'` is refused with them: a rare price.
std::optional<QueryFailure> CheckPgStrings(const std::vector<Token>& tokens, int depth) {
  if (depth > 4) return std::nullopt;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::kString) {
      if (t.text.find('(') == std::string::npos) continue;
      const auto inner = Tokenize(t.text, Dialect::kPostgreSQL);
      if (auto v = inner ? CheckPgStrings(*inner, depth + 1) : CheckRawCalls(t.text)) return v;
      continue;
    }
    if (depth == 0 || (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdent)) continue;
    if (i + 1 < tokens.size() && tokens[i + 1].text == "(" &&
        tokens[i + 1].kind == TokenKind::kSymbol) {
      if (auto v = FunctionViolation(Upper(t.text), true)) return v;
    }
  }
  return std::nullopt;
}

// The PostgreSQL rules on top of the shared ones. The server's layers (READ ONLY transaction,
// the role's privileges, timeouts) stand behind these; the guard's job is a clear message.
std::optional<QueryFailure> CheckPostgres(const std::vector<Token>& tokens) {
  const Token& first = tokens.front();
  if (!Contains(kPgQueryStarts, first.text) || first.kind == TokenKind::kString) {
    for (const StatementRule& r : kPgStatementRules) {
      if (first.text == r.keyword) {
        return Violation(r.rule, std::string("guard: ") + r.what +
                                     " is not allowed: only a single read-only query may run");
      }
    }
    return Violation("read_only",
                     "guard: only a read-only query is allowed (SELECT, WITH ... "
                     "SELECT, VALUES or TABLE); got a statement starting with " +
                         first.text);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    auto next = [&](size_t k) -> std::string {
      return i + k < tokens.size() && tokens[i + k].kind == TokenKind::kWord ? tokens[i + k].text
                                                                             : "";
    };
    // U&"\0070g_sleep" names pg_sleep in a form no list of names matches.
    if (t.kind == TokenKind::kWord && t.text == "U" && i + 2 < tokens.size() &&
        tokens[i + 1].text == "&" && tokens[i + 2].kind == TokenKind::kQuotedIdent) {
      return Violation("unicode_escape",
                       "guard: U&\"...\" identifiers are not allowed; write the "
                       "name plainly or in double quotes");
    }
    if (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdent) continue;
    if (t.kind == TokenKind::kWord && t.text == "INTO") {
      return Violation("read_only",
                       "guard: SELECT ... INTO creates a table, which is not allowed: "
                       "drop the INTO clause");
    }
    // FOR UPDATE / FOR NO KEY UPDATE / FOR SHARE / FOR KEY SHARE take row locks.
    if (t.kind == TokenKind::kWord && t.text == "FOR" &&
        (next(1) == "UPDATE" || next(1) == "SHARE" || (next(1) == "NO" && next(2) == "KEY") ||
         (next(1) == "KEY" && next(2) == "SHARE"))) {
      return Violation("locking",
                       "guard: FOR UPDATE/SHARE locks rows, which is not allowed: drop "
                       "the locking clause");
    }
    const bool call = i + 1 < tokens.size() && tokens[i + 1].text == "(" &&
                      tokens[i + 1].kind == TokenKind::kSymbol;
    if (!call) continue;
    if (auto v = FunctionViolation(Upper(t.text), false)) return v;
  }
  return CheckPgStrings(tokens, 0);
}

// DuckDB builds a function's result between two interrupt checks, so one call that makes a
// 1 GB value runs on past every timeout and cancel. The engine's macros bound repeat(), lpad()
// and rpad() (DuckDbEngine::Confine); naming DuckDB's own (system.main.repeat) would go around
// them. printf() and format() take the width in the format string: a width of six digits or
// more, or one taken from an argument ('*', a nested {}), is refused.
std::optional<QueryFailure> DuckDbSizeViolation(const std::vector<Token>& tokens, size_t i) {
  const std::string name = Upper(tokens[i].text);
  if ((name == "REPEAT" || name == "LPAD" || name == "RPAD") && i > 0 &&
      tokens[i - 1].kind == TokenKind::kSymbol && tokens[i - 1].text == ".") {
    return Violation("resource", "guard: call " + name +
                                     "() by its plain name; the qualified "
                                     "name skips the size limit on the value it builds");
  }
  if ((name != "PRINTF" && name != "FORMAT") || i + 2 >= tokens.size() ||
      tokens[i + 2].kind != TokenKind::kString) {
    return std::nullopt;
  }
  const std::string& f = tokens[i + 2].text;
  size_t digits = 0;
  bool wide = false, nested = false;
  int depth = 0;
  for (char c : f) {
    digits = std::isdigit(static_cast<unsigned char>(c)) ? digits + 1 : 0;
    wide = wide || digits >= 6 || c == '*';
    if (c == '{') nested = nested || ++depth > 1;
    if (c == '}' && depth > 0) --depth;
  }
  if (!wide && !nested) return std::nullopt;
  return Violation("resource", "guard: " + name +
                                   "() with a width of six digits or more, or "
                                   "one taken from an argument, could build a value too large to "
                                   "stop; give a smaller, literal width");
}

// DuckDB's version of CheckPgStrings: query() and its kin are refused outright, but a macro
// stored in a .duckdb file can pass its argument to them, so a refused call, or a file read
// as a table (FROM 'x.csv'), inside any string is refused too. `SELECT 'glob(x)'` pays for it.
std::optional<QueryFailure> CheckDuckDbStrings(const std::vector<Token>& tokens, int depth) {
  if (depth > 4) return std::nullopt;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::kString) {
      if (depth > 0 && i > 0 && tokens[i - 1].kind == TokenKind::kWord &&
          (tokens[i - 1].text == "FROM" || tokens[i - 1].text == "JOIN")) {
        return Violation("file_access", "guard: a string holds a query that reads the file '" +
                                            t.text + "' directly, which is not allowed");
      }
      if (t.text.find('(') == std::string::npos && t.text.find('\'') == std::string::npos) {
        continue;
      }
      const auto inner = Tokenize(t.text, Dialect::kDuckDB);
      if (auto v = inner ? CheckDuckDbStrings(*inner, depth + 1)
                         : CheckRawCalls(t.text, DuckDbFunctionViolation)) {
        return v;
      }
      continue;
    }
    if (depth == 0 || (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdent)) continue;
    if (i + 1 < tokens.size() && tokens[i + 1].text == "(" &&
        tokens[i + 1].kind == TokenKind::kSymbol) {
      if (auto v = DuckDbFunctionViolation(Upper(t.text), true)) return v;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<QueryFailure> CheckQueryText(std::string_view sql, Dialect dialect,
                                           const std::vector<std::string>& tables) {
  // Every engine's C API reads the statement as a C string, up to its first NUL: what runs would
  // be a prefix of what the guard read.
  if (sql.find('\0') != std::string_view::npos) {
    return Violation("single_statement",
                     "guard: the SQL holds a NUL character (\\u0000), and the engine would run "
                     "only the text before it; remove it and send one SELECT query");
  }
  auto tokens = Tokenize(sql, dialect);
  if (!tokens && (dialect == Dialect::kPostgreSQL || dialect == Dialect::kMySQL ||
                  dialect == Dialect::kClickHouse)) {
    // What the guard cannot read is not sent: a lexer difference must not become a way past.
    return QueryFailure{
        FailureClass::kSyntaxError, "",
        "the SQL has a string, quoted name or comment that never closes, or a comment "
        "the server may read otherwise (one inside another, or a /*! comment "
        "whose version is not 5 or 6 digits); close it, drop the inner comment, "
        "and send one SELECT query"};
  }
  if (!tokens) return std::nullopt;
  // Trailing semicolons are harmless; anything after one is a second statement.
  while (!tokens->empty() && tokens->back().text == ";" &&
         tokens->back().kind == TokenKind::kSymbol) {
    tokens->pop_back();
  }
  if (tokens->empty()) {
    return QueryFailure{FailureClass::kSyntaxError, "", "the SQL is empty: write one SELECT query"};
  }
  for (const Token& t : *tokens) {
    if (t.kind == TokenKind::kSymbol && t.text == ";") {
      return Violation("single_statement",
                       "guard: exactly one statement is allowed; remove the ';' and everything "
                       "after it, and send one SELECT query");
    }
  }
  if (dialect == Dialect::kMySQL) {
    if (auto v = internal::CheckMySql(*tokens)) return v;
  }
  if (dialect == Dialect::kClickHouse) {
    if (auto v = internal::CheckClickHouse(*tokens)) return v;
  }
  const Token& first = tokens->front();
  if (!Contains(kQueryStarts, first.text)) {
    for (const StatementRule& r : kStatementRules) {
      if (first.text == r.keyword) {
        return Violation(r.rule, std::string("guard: ") + r.what +
                                     " is not allowed: only a single read-only SELECT query may "
                                     "run");
      }
    }
    if (Contains(kOtherStatements, first.text)) {
      return Violation("read_only",
                       "guard: only a read-only query is allowed (SELECT or WITH ... "
                       "SELECT); got a statement starting with " +
                           first.text);
    }
  }
  if (dialect == Dialect::kPostgreSQL) {
    if (auto v = CheckPostgres(*tokens)) return v;
  }
  const std::string tables_hint =
      "; query the registered tables by name instead: " + TableList(tables);
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Token& t = (*tokens)[i];
    const bool call = i + 1 < tokens->size() && (*tokens)[i + 1].text == "(";
    if (t.kind == TokenKind::kWord && !call && Contains(kDmlKeywords, t.text)) {
      return Violation("read_only", "guard: " + t.text +
                                        " is not allowed anywhere in the query, a WITH clause "
                                        "included: the data is read-only");
    }
    // "read_csv"(...) names the same function as read_csv(...).
    const bool named = t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdent;
    if (named && call && Contains(kFileFunctions, Upper(t.text))) {
      return Violation("file_access", "guard: " + Upper(t.text) +
                                          "() reads files or loads code, which is not allowed" +
                                          tables_hint);
    }
    if (named && call && dialect == Dialect::kDuckDB) {
      if (auto v = DuckDbFunctionViolation(Upper(t.text), false)) return v;
      if (auto v = DuckDbSizeViolation(*tokens, i)) return v;
    }
    if (t.kind == TokenKind::kString) {
      std::string lower = t.text;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      // A URL handed to a function or read as a table; a literal compared against a column
      // (url LIKE 'http://%') reaches nothing.
      const std::string before = i > 0 ? (*tokens)[i - 1].text : "";
      const bool reaches = before == "(" || before == "," || before == "FROM" || before == "JOIN";
      for (const char* prefix : kRemotePrefixes) {
        if (reaches && lower.starts_with(prefix)) {
          return Violation("remote_url", "guard: remote and file URLs ('" + t.text +
                                             "') are not allowed" + tables_hint);
        }
      }
      // DuckDB reads `FROM 'file.csv'` as a file scan.
      if (dialect == Dialect::kDuckDB && i > 0 && (*tokens)[i - 1].kind == TokenKind::kWord &&
          ((*tokens)[i - 1].text == "FROM" || (*tokens)[i - 1].text == "JOIN")) {
        return Violation("file_access", "guard: reading the file '" + t.text +
                                            "' directly is not allowed" + tables_hint);
      }
    }
  }
  if (dialect == Dialect::kDuckDB) return CheckDuckDbStrings(*tokens, 0);
  return std::nullopt;
}

namespace internal {

QueryFailure GuardViolation(std::string rule, std::string message) {
  return QueryFailure{FailureClass::kGuardViolation, std::move(rule), std::move(message)};
}

namespace {
constexpr const char* kOnlyOneQuery = ": only a single read-only query may run";
}  // namespace

std::optional<QueryFailure> CheckStatementStart(const Token& first,
                                                std::span<const char* const> starts,
                                                std::span<const NamedRule> statements,
                                                std::string_view allowed) {
  const bool plain = first.kind != TokenKind::kString && first.kind != TokenKind::kQuotedIdent;
  if (plain &&
      std::any_of(starts.begin(), starts.end(), [&](const char* k) { return first.text == k; })) {
    return std::nullopt;
  }
  for (const NamedRule& r : statements) {
    if (first.kind == TokenKind::kWord && first.text == r.name) {
      return GuardViolation(
          r.rule, std::string("guard: ") + r.why + ", which is not allowed" + kOnlyOneQuery);
    }
  }
  return GuardViolation("read_only", "guard: only a read-only query is allowed (" +
                                         std::string(allowed) +
                                         "); got a statement starting with " + first.text);
}

std::optional<QueryFailure> CheckFunctionCall(std::string_view upper, std::string_view shown,
                                              std::span<const NamedRule> functions) {
  for (const NamedRule& r : functions) {
    if (upper == r.name) {
      return GuardViolation(r.rule, "guard: " + std::string(shown) + "() " + r.why +
                                        ", which is not allowed" + kOnlyOneQuery);
    }
  }
  return std::nullopt;
}

}  // namespace internal
}  // namespace quarry::engine
