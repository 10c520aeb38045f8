// The guard's MySQL-dialect rules (MariaDB, MySQL and the engines that speak the protocol), on
// the tokens sql_tokens.cc reads as the server does: `#` and `-- ` comments, backslash escapes in
// '...' and "..." strings, `backtick` names, and executable comments (/*! ... */, /*!50001 ... */,
// /*M! ... */), whose text the server runs and the tokenizer therefore reads as code. The
// server's layers stand behind these (a READ ONLY transaction, the user's grants, the statement
// time limit, a reset connection after each query); the guard's job is a clear message.
#include <algorithm>
#include <array>

#include "quarry/engine/sql_tokens_internal.h"

namespace quarry::engine::internal {
namespace {

constexpr std::array kMyQueryStarts = {"SELECT", "WITH", "VALUES", "TABLE", "("};

// Statements refused by first word, with a rule more telling than read_only.
constexpr std::array kMyStatementRules = {
    NamedRule{"SET", "configuration", "SET changes the session"},
    NamedRule{"CALL", "read_only", "CALL runs a stored procedure"},
    NamedRule{"DO", "read_only", "DO runs expressions for their effects"},
    NamedRule{"HANDLER", "read_only", "HANDLER opens tables outside SQL"},
    NamedRule{"LOCK", "locking", "LOCK takes table locks"},
    NamedRule{"UNLOCK", "locking", "UNLOCK releases table locks"},
    NamedRule{"LOAD", "file_access", "LOAD reads files"},
    NamedRule{"SHOW", "configuration", "SHOW is not a query"},
    NamedRule{"DESCRIBE", "configuration", "DESCRIBE is not a query"},
    NamedRule{"DESC", "configuration", "DESC is not a query"},
    NamedRule{"EXPLAIN", "read_only", "EXPLAIN (its ANALYZE form runs the statement)"},
    NamedRule{"ANALYZE", "read_only", "ANALYZE runs the statement or rewrites statistics"},
    NamedRule{"USE", "configuration", "USE changes the default database"},
    NamedRule{"KILL", "admin", "KILL ends other sessions"},
    NamedRule{"FLUSH", "admin", "FLUSH changes the server's state"},
    NamedRule{"RESET", "admin", "RESET changes the server's state"},
    NamedRule{"PURGE", "admin", "PURGE removes logs"},
    NamedRule{"SHUTDOWN", "admin", "SHUTDOWN stops the server"},
    NamedRule{"INSTALL", "extension_loading", "INSTALL loads code into the server"},
    NamedRule{"UNINSTALL", "extension_loading", "UNINSTALL unloads code"},
    NamedRule{"PREPARE", "dynamic_sql", "PREPARE runs SQL given as text"},
    NamedRule{"EXECUTE", "dynamic_sql", "EXECUTE runs SQL given as text"},
    NamedRule{"XA", "read_only", "XA controls transactions"},
    NamedRule{"BINLOG", "admin", "BINLOG replays events"},
    NamedRule{"CHANGE", "admin", "CHANGE configures replication"},
    NamedRule{"CACHE", "admin", "CACHE INDEX changes the server's state"},
    NamedRule{"HELP", "configuration", "HELP is not a query"},
};

// Functions refused by name.
constexpr std::array kMyFunctionRules = {
    NamedRule{"LOAD_FILE", "file_access", "reads the server's files"},
    NamedRule{"SLEEP", "sleep", "only waits"},
    NamedRule{"BENCHMARK", "sleep", "only burns time"},
    NamedRule{"GET_LOCK", "locking", "takes a lock that outlives the query"},
    NamedRule{"RELEASE_LOCK", "locking", "releases locks"},
    NamedRule{"RELEASE_ALL_LOCKS", "locking", "releases locks"},
    NamedRule{"MASTER_POS_WAIT", "sleep", "waits on replication"},
    NamedRule{"MASTER_GTID_WAIT", "sleep", "waits on replication"},
    NamedRule{"SOURCE_POS_WAIT", "sleep", "waits on replication"},
    NamedRule{"WAIT_FOR_EXECUTED_GTID_SET", "sleep", "waits on replication"},
    NamedRule{"WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS", "sleep", "waits on replication"},
    NamedRule{"NEXTVAL", "read_only", "advances a sequence"},
    NamedRule{"SETVAL", "read_only", "changes a sequence"},
    NamedRule{"LASTVAL", "read_only", "reads a sequence's session state"},
    NamedRule{"SYS_EXEC", "admin", "runs commands on the server"},
    NamedRule{"SYS_EVAL", "admin", "runs commands on the server"},
    NamedRule{"SYS_GET", "admin", "reads the server's environment"},
    NamedRule{"SYS_SET", "admin", "changes the server's environment"},
};

}  // namespace

std::optional<QueryFailure> CheckMySql(const std::vector<Token>& tokens) {
  if (auto v = CheckStatementStart(tokens.front(), kMyQueryStarts, kMyStatementRules,
                                   "SELECT, WITH ... SELECT, VALUES or TABLE")) {
    return v;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    auto word = [&](size_t k) -> std::string {
      return i + k < tokens.size() && tokens[i + k].kind == TokenKind::kWord ? tokens[i + k].text
                                                                             : "";
    };
    auto symbol = [&](size_t k, const char* s) {
      return i + k < tokens.size() && tokens[i + k].kind == TokenKind::kSymbol &&
             tokens[i + k].text == s;
    };
    if (t.kind == TokenKind::kSymbol && t.text == ":" && symbol(1, "=")) {
      return GuardViolation(
          "read_only",
          "guard: ':=' assigns a variable, which is not allowed: compute the value "
          "in the query itself");
    }
    if (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdent) continue;
    if (t.kind == TokenKind::kWord) {
      if (t.text == "INTO") {
        const std::string target = word(1);
        if (target == "OUTFILE" || target == "DUMPFILE") {
          return GuardViolation("file_write", "guard: INTO " + target +
                                                  " writes a file on the server, which is not "
                                                  "allowed: drop the INTO clause");
        }
        return GuardViolation(
            "read_only",
            "guard: SELECT ... INTO stores the result, which is not allowed: drop "
            "the INTO clause");
      }
      if (t.text == "FOR" && (word(1) == "UPDATE" || word(1) == "SHARE")) {
        return GuardViolation("locking",
                              "guard: FOR UPDATE/SHARE locks rows, which is not allowed: drop the "
                              "locking clause");
      }
      if (t.text == "LOCK" && word(1) == "IN" && word(2) == "SHARE" && word(3) == "MODE") {
        return GuardViolation(
            "locking",
            "guard: LOCK IN SHARE MODE locks rows, which is not allowed: drop the "
            "locking clause");
      }
      if (t.text == "PROCEDURE" && (symbol(2, "(") || word(1) == "ANALYSE")) {
        return GuardViolation(
            "read_only",
            "guard: a PROCEDURE clause runs a procedure over the result, which is "
            "not allowed");
      }
      if (t.text == "NEXT" && word(1) == "VALUE" && word(2) == "FOR") {
        return GuardViolation("read_only",
                              "guard: NEXT VALUE FOR advances a sequence, which is not allowed");
      }
      if (t.text == "PREVIOUS" && word(1) == "VALUE" && word(2) == "FOR") {
        return GuardViolation(
            "read_only",
            "guard: PREVIOUS VALUE FOR reads a sequence's session state (as LASTVAL "
            "does), which is not allowed");
      }
    }
    if (!symbol(1, "(")) continue;
    std::string name = t.text;
    if (t.kind == TokenKind::kQuotedIdent) {
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (auto v = CheckFunctionCall(name, name, kMyFunctionRules)) return v;
  }
  return std::nullopt;
}

}  // namespace quarry::engine::internal
