// The guard's ClickHouse-dialect rules, on the tokens sql_tokens.cc reads as the server does
// (backslash escapes in strings and quoted names, heredocs, `#` comments). The server's layers
// stand behind these: every query carries readonly=1 (no writes, no setting changes, and on
// 18.x no table functions at all), a time limit and a result row limit. The guard's job is a
// clear message, and the rules the server does not enforce: a KILL, a FORMAT that would change
// what quarry reads back, and table functions that reach outside on servers that allow them.
#include <algorithm>
#include <array>
#include <string_view>

#include "quarry/common/text.h"
#include "quarry/engine/sql_tokens_internal.h"

namespace quarry::engine::internal {
namespace {

constexpr std::array kChQueryStarts = {"SELECT", "WITH", "("};

struct Rule {
  const char* name;
  const char* rule;
  const char* why;
};

constexpr std::array kChStatementRules = {
    Rule{"SET", "configuration", "SET changes settings"},
    Rule{"SYSTEM", "admin", "SYSTEM controls the server"},
    Rule{"KILL", "admin", "KILL ends queries"},
    Rule{"OPTIMIZE", "read_only", "OPTIMIZE rewrites a table's parts"},
    Rule{"ATTACH", "attach", "ATTACH adds tables or databases"},
    Rule{"DETACH", "attach", "DETACH removes tables or databases"},
    Rule{"RENAME", "read_only", "RENAME changes names"},
    Rule{"EXCHANGE", "read_only", "EXCHANGE swaps tables"},
    Rule{"SHOW", "configuration", "SHOW is not a query"},
    Rule{"DESCRIBE", "configuration", "DESCRIBE is not a query"},
    Rule{"DESC", "configuration", "DESC is not a query"},
    Rule{"EXISTS", "configuration", "EXISTS is not a query"},
    Rule{"EXPLAIN", "configuration", "EXPLAIN is not a query"},
    Rule{"USE", "configuration", "USE changes the default database"},
    Rule{"CHECK", "admin", "CHECK TABLE reads a table's files"},
    Rule{"WATCH", "read_only", "WATCH waits on a live view"},
    Rule{"BACKUP", "file_write", "BACKUP writes files"},
    Rule{"RESTORE", "read_only", "RESTORE writes tables"},
    Rule{"UNDROP", "read_only", "UNDROP restores a table"},
    Rule{"MOVE", "read_only", "MOVE changes access entities"},
    Rule{"GRANT", "admin", "GRANT changes privileges"},
    Rule{"REVOKE", "admin", "REVOKE changes privileges"},
};

// Table functions and functions that reach files, other servers or the network, run programs,
// or only wait. Names are compared without case: the server knows some in either.
constexpr std::array kChFunctionRules = {
    Rule{"FILE", "file_access", "reads the server's files"},
    Rule{"FILECLUSTER", "file_access", "reads the servers' files"},
    Rule{"INPUT", "file_access", "reads data sent with the query"},
    Rule{"URL", "remote_url", "reaches a URL"},
    Rule{"URLCLUSTER", "remote_url", "reaches a URL"},
    Rule{"S3", "remote_url", "reaches object storage"},
    Rule{"S3CLUSTER", "remote_url", "reaches object storage"},
    Rule{"GCS", "remote_url", "reaches object storage"},
    Rule{"COSN", "remote_url", "reaches object storage"},
    Rule{"OSS", "remote_url", "reaches object storage"},
    Rule{"AZUREBLOBSTORAGE", "remote_url", "reaches object storage"},
    Rule{"AZUREBLOBSTORAGECLUSTER", "remote_url", "reaches object storage"},
    Rule{"HDFS", "remote_url", "reaches HDFS"},
    Rule{"HDFSCLUSTER", "remote_url", "reaches HDFS"},
    Rule{"ICEBERG", "remote_url", "reaches object storage"},
    Rule{"DELTALAKE", "remote_url", "reaches object storage"},
    Rule{"HUDI", "remote_url", "reaches object storage"},
    Rule{"REMOTE", "remote_url", "reaches another server"},
    Rule{"REMOTESECURE", "remote_url", "reaches another server"},
    Rule{"CLUSTER", "remote_url", "reaches other servers"},
    Rule{"CLUSTERALLREPLICAS", "remote_url", "reaches other servers"},
    Rule{"MYSQL", "remote_url", "reaches a MySQL server"},
    Rule{"POSTGRESQL", "remote_url", "reaches a PostgreSQL server"},
    Rule{"MONGODB", "remote_url", "reaches a MongoDB server"},
    Rule{"REDIS", "remote_url", "reaches a Redis server"},
    Rule{"JDBC", "remote_url", "reaches a JDBC bridge"},
    Rule{"ODBC", "remote_url", "reaches an ODBC bridge"},
    Rule{"SQLITE", "file_access", "reads a SQLite file"},
    Rule{"HIVE", "remote_url", "reaches Hive"},
    Rule{"EXECUTABLE", "admin", "runs a program on the server"},
    Rule{"SLEEP", "sleep", "only waits"},
    Rule{"SLEEPEACHROW", "sleep", "only waits"},
};

QueryFailure Violation(std::string rule, std::string message) {
  return QueryFailure{FailureClass::kGuardViolation, std::move(rule), std::move(message)};
}

constexpr const char* kOnly = ": only a single read-only query may run";

}  // namespace

std::optional<QueryFailure> CheckClickHouse(const std::vector<Token>& tokens) {
  const Token& first = tokens.front();
  const bool starts = first.kind != TokenKind::kString && first.kind != TokenKind::kQuotedIdent &&
                      std::any_of(kChQueryStarts.begin(), kChQueryStarts.end(),
                                  [&](const char* k) { return first.text == k; });
  if (!starts) {
    for (const Rule& r : kChStatementRules) {
      if (first.kind == TokenKind::kWord && first.text == r.name) {
        return Violation(r.rule, std::string("guard: ") + r.why + ", which is not allowed" + kOnly);
      }
    }
    return Violation("read_only",
                     "guard: only a read-only query is allowed (SELECT or WITH ... SELECT); got a "
                     "statement starting with " +
                         first.text);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    auto word = [&](size_t k) -> std::string {
      return i + k < tokens.size() && tokens[i + k].kind == TokenKind::kWord ? tokens[i + k].text
                                                                             : "";
    };
    const bool call = i + 1 < tokens.size() && tokens[i + 1].kind == TokenKind::kSymbol &&
                      tokens[i + 1].text == "(";
    if (t.kind == TokenKind::kWord && !call) {
      // SETTINGS name = value, and FORMAT name at the end: a column may be called either.
      const bool assigns = i + 2 < tokens.size() && tokens[i + 2].kind == TokenKind::kSymbol &&
                           tokens[i + 2].text == "=";
      if (t.text == "SETTINGS" && assigns) {
        return Violation("configuration",
                         "guard: a SETTINGS clause changes the query's limits, which is not "
                         "allowed: drop it");
      }
      if (t.text == "FORMAT" && !word(1).empty() &&
          (i + 2 == tokens.size() || word(2) == "SETTINGS")) {
        return Violation("configuration",
                         "guard: a FORMAT clause changes how the result comes back, which quarry "
                         "sets itself: drop it");
      }
      if (t.text == "INTO") {
        const bool file = word(1) == "OUTFILE";
        return Violation(file ? "file_write" : "read_only",
                         file ? "guard: INTO OUTFILE writes a file, which is not allowed: drop "
                                "the INTO clause"
                              : "guard: INTO stores data, which is not allowed: drop the INTO "
                                "clause");
      }
    }
    if (!call || (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdent)) continue;
    const std::string name = Upper(t.text);
    for (const Rule& r : kChFunctionRules) {
      if (name == r.name) {
        return Violation(r.rule,
                         "guard: " + t.text + "() " + r.why + ", which is not allowed" + kOnly);
      }
    }
  }
  return std::nullopt;
}

}  // namespace quarry::engine::internal
