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

struct Rule {
  const char* name;
  const char* rule;
  const char* why;
};

// Statements refused by first word, with a rule more telling than read_only.
constexpr std::array kMyStatementRules = {
    Rule{"SET", "configuration", "SET changes the session"},
    Rule{"CALL", "read_only", "CALL runs a stored procedure"},
    Rule{"DO", "read_only", "DO runs expressions for their effects"},
    Rule{"HANDLER", "read_only", "HANDLER opens tables outside SQL"},
    Rule{"LOCK", "locking", "LOCK takes table locks"},
    Rule{"UNLOCK", "locking", "UNLOCK releases table locks"},
    Rule{"LOAD", "file_access", "LOAD reads files"},
    Rule{"SHOW", "configuration", "SHOW is not a query"},
    Rule{"DESCRIBE", "configuration", "DESCRIBE is not a query"},
    Rule{"DESC", "configuration", "DESC is not a query"},
    Rule{"EXPLAIN", "read_only", "EXPLAIN (its ANALYZE form runs the statement)"},
    Rule{"ANALYZE", "read_only", "ANALYZE runs the statement or rewrites statistics"},
    Rule{"USE", "configuration", "USE changes the default database"},
    Rule{"KILL", "admin", "KILL ends other sessions"},
    Rule{"FLUSH", "admin", "FLUSH changes the server's state"},
    Rule{"RESET", "admin", "RESET changes the server's state"},
    Rule{"PURGE", "admin", "PURGE removes logs"},
    Rule{"SHUTDOWN", "admin", "SHUTDOWN stops the server"},
    Rule{"INSTALL", "extension_loading", "INSTALL loads code into the server"},
    Rule{"UNINSTALL", "extension_loading", "UNINSTALL unloads code"},
    Rule{"PREPARE", "dynamic_sql", "PREPARE runs SQL given as text"},
    Rule{"EXECUTE", "dynamic_sql", "EXECUTE runs SQL given as text"},
    Rule{"XA", "read_only", "XA controls transactions"},
    Rule{"BINLOG", "admin", "BINLOG replays events"},
    Rule{"CHANGE", "admin", "CHANGE configures replication"},
    Rule{"CACHE", "admin", "CACHE INDEX changes the server's state"},
    Rule{"HELP", "configuration", "HELP is not a query"},
};

// Functions refused by name.
constexpr std::array kMyFunctionRules = {
    Rule{"LOAD_FILE", "file_access", "reads the server's files"},
    Rule{"SLEEP", "sleep", "only waits"},
    Rule{"BENCHMARK", "sleep", "only burns time"},
    Rule{"GET_LOCK", "locking", "takes a lock that outlives the query"},
    Rule{"RELEASE_LOCK", "locking", "releases locks"},
    Rule{"RELEASE_ALL_LOCKS", "locking", "releases locks"},
    Rule{"MASTER_POS_WAIT", "sleep", "waits on replication"},
    Rule{"MASTER_GTID_WAIT", "sleep", "waits on replication"},
    Rule{"SOURCE_POS_WAIT", "sleep", "waits on replication"},
    Rule{"WAIT_FOR_EXECUTED_GTID_SET", "sleep", "waits on replication"},
    Rule{"WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS", "sleep", "waits on replication"},
    Rule{"NEXTVAL", "read_only", "advances a sequence"},
    Rule{"SETVAL", "read_only", "changes a sequence"},
    Rule{"LASTVAL", "read_only", "reads a sequence's session state"},
    Rule{"SYS_EXEC", "admin", "runs commands on the server"},
    Rule{"SYS_EVAL", "admin", "runs commands on the server"},
    Rule{"SYS_GET", "admin", "reads the server's environment"},
    Rule{"SYS_SET", "admin", "changes the server's environment"},
};

QueryFailure Violation(std::string rule, std::string message) {
  return QueryFailure{FailureClass::kGuardViolation, std::move(rule), std::move(message)};
}

constexpr const char* kOnly = ": only a single read-only query may run";

}  // namespace

std::optional<QueryFailure> CheckMySql(const std::vector<Token>& tokens) {
  const Token& first = tokens.front();
  const bool starts = std::any_of(kMyQueryStarts.begin(), kMyQueryStarts.end(),
                                  [&](const char* k) { return first.text == k; });
  if (!starts || first.kind == TokenKind::kString || first.kind == TokenKind::kQuotedIdent) {
    for (const Rule& r : kMyStatementRules) {
      if (first.kind == TokenKind::kWord && first.text == r.name) {
        return Violation(r.rule, std::string("guard: ") + r.why + ", which is not allowed" + kOnly);
      }
    }
    return Violation("read_only",
                     "guard: only a read-only query is allowed (SELECT, WITH ... SELECT, VALUES "
                     "or TABLE); got a statement starting with " +
                         first.text);
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
      return Violation("read_only",
                       "guard: ':=' assigns a variable, which is not allowed: compute the value "
                       "in the query itself");
    }
    if (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdent) continue;
    if (t.kind == TokenKind::kWord) {
      if (t.text == "INTO") {
        const std::string target = word(1);
        if (target == "OUTFILE" || target == "DUMPFILE") {
          return Violation("file_write", "guard: INTO " + target +
                                             " writes a file on the server, which is not "
                                             "allowed: drop the INTO clause");
        }
        return Violation("read_only",
                         "guard: SELECT ... INTO stores the result, which is not allowed: drop "
                         "the INTO clause");
      }
      if (t.text == "FOR" && (word(1) == "UPDATE" || word(1) == "SHARE")) {
        return Violation("locking",
                         "guard: FOR UPDATE/SHARE locks rows, which is not allowed: drop the "
                         "locking clause");
      }
      if (t.text == "LOCK" && word(1) == "IN" && word(2) == "SHARE" && word(3) == "MODE") {
        return Violation("locking",
                         "guard: LOCK IN SHARE MODE locks rows, which is not allowed: drop the "
                         "locking clause");
      }
      if (t.text == "PROCEDURE" && (symbol(2, "(") || word(1) == "ANALYSE")) {
        return Violation("read_only",
                         "guard: a PROCEDURE clause runs a procedure over the result, which is "
                         "not allowed");
      }
      if (t.text == "NEXT" && word(1) == "VALUE" && word(2) == "FOR") {
        return Violation("read_only",
                         "guard: NEXT VALUE FOR advances a sequence, which is not allowed");
      }
      if (t.text == "PREVIOUS" && word(1) == "VALUE" && word(2) == "FOR") {
        return Violation("read_only",
                         "guard: PREVIOUS VALUE FOR reads a sequence's session state (as LASTVAL "
                         "does), which is not allowed");
      }
    }
    if (!symbol(1, "(")) continue;
    std::string name = t.text;
    if (t.kind == TokenKind::kQuotedIdent) {
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    for (const Rule& r : kMyFunctionRules) {
      if (name == r.name) {
        return Violation(r.rule,
                         "guard: " + name + "() " + r.why + ", which is not allowed" + kOnly);
      }
    }
  }
  return std::nullopt;
}

}  // namespace quarry::engine::internal
