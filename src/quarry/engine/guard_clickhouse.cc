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

constexpr std::array kChStatementRules = {
    NamedRule{"SET", "configuration", "SET changes settings"},
    NamedRule{"SYSTEM", "admin", "SYSTEM controls the server"},
    NamedRule{"KILL", "admin", "KILL ends queries"},
    NamedRule{"OPTIMIZE", "read_only", "OPTIMIZE rewrites a table's parts"},
    NamedRule{"ATTACH", "attach", "ATTACH adds tables or databases"},
    NamedRule{"DETACH", "attach", "DETACH removes tables or databases"},
    NamedRule{"RENAME", "read_only", "RENAME changes names"},
    NamedRule{"EXCHANGE", "read_only", "EXCHANGE swaps tables"},
    NamedRule{"SHOW", "configuration", "SHOW is not a query"},
    NamedRule{"DESCRIBE", "configuration", "DESCRIBE is not a query"},
    NamedRule{"DESC", "configuration", "DESC is not a query"},
    NamedRule{"EXISTS", "configuration", "EXISTS is not a query"},
    NamedRule{"EXPLAIN", "configuration", "EXPLAIN is not a query"},
    NamedRule{"USE", "configuration", "USE changes the default database"},
    NamedRule{"CHECK", "admin", "CHECK TABLE reads a table's files"},
    NamedRule{"WATCH", "read_only", "WATCH waits on a live view"},
    NamedRule{"BACKUP", "file_write", "BACKUP writes files"},
    NamedRule{"RESTORE", "read_only", "RESTORE writes tables"},
    NamedRule{"UNDROP", "read_only", "UNDROP restores a table"},
    NamedRule{"MOVE", "read_only", "MOVE changes access entities"},
    NamedRule{"GRANT", "admin", "GRANT changes privileges"},
    NamedRule{"REVOKE", "admin", "REVOKE changes privileges"},
};

// Table functions and functions that reach files, other servers or the network, run programs,
// or only wait. Names are compared without case: the server knows some in either.
constexpr std::array kChFunctionRules = {
    NamedRule{"FILE", "file_access", "reads the server's files"},
    NamedRule{"FILECLUSTER", "file_access", "reads the servers' files"},
    NamedRule{"INPUT", "file_access", "reads data sent with the query"},
    NamedRule{"URL", "remote_url", "reaches a URL"},
    NamedRule{"URLCLUSTER", "remote_url", "reaches a URL"},
    NamedRule{"S3", "remote_url", "reaches object storage"},
    NamedRule{"S3CLUSTER", "remote_url", "reaches object storage"},
    NamedRule{"GCS", "remote_url", "reaches object storage"},
    NamedRule{"COSN", "remote_url", "reaches object storage"},
    NamedRule{"OSS", "remote_url", "reaches object storage"},
    NamedRule{"AZUREBLOBSTORAGE", "remote_url", "reaches object storage"},
    NamedRule{"AZUREBLOBSTORAGECLUSTER", "remote_url", "reaches object storage"},
    NamedRule{"HDFS", "remote_url", "reaches HDFS"},
    NamedRule{"HDFSCLUSTER", "remote_url", "reaches HDFS"},
    NamedRule{"ICEBERG", "remote_url", "reaches object storage"},
    NamedRule{"DELTALAKE", "remote_url", "reaches object storage"},
    NamedRule{"HUDI", "remote_url", "reaches object storage"},
    NamedRule{"REMOTE", "remote_url", "reaches another server"},
    NamedRule{"REMOTESECURE", "remote_url", "reaches another server"},
    NamedRule{"CLUSTER", "remote_url", "reaches other servers"},
    NamedRule{"CLUSTERALLREPLICAS", "remote_url", "reaches other servers"},
    NamedRule{"MYSQL", "remote_url", "reaches a MySQL server"},
    NamedRule{"POSTGRESQL", "remote_url", "reaches a PostgreSQL server"},
    NamedRule{"MONGODB", "remote_url", "reaches a MongoDB server"},
    NamedRule{"REDIS", "remote_url", "reaches a Redis server"},
    NamedRule{"JDBC", "remote_url", "reaches a JDBC bridge"},
    NamedRule{"ODBC", "remote_url", "reaches an ODBC bridge"},
    NamedRule{"SQLITE", "file_access", "reads a SQLite file"},
    NamedRule{"HIVE", "remote_url", "reaches Hive"},
    NamedRule{"EXECUTABLE", "admin", "runs a program on the server"},
    NamedRule{"SLEEP", "sleep", "only waits"},
    NamedRule{"SLEEPEACHROW", "sleep", "only waits"},
};

}  // namespace

std::optional<QueryFailure> CheckClickHouse(const std::vector<Token>& tokens) {
  if (auto v = CheckStatementStart(tokens.front(), kChQueryStarts, kChStatementRules,
                                   "SELECT or WITH ... SELECT")) {
    return v;
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
        return GuardViolation("configuration",
                              "guard: a SETTINGS clause changes the query's limits, which is not "
                              "allowed: drop it");
      }
      if (t.text == "FORMAT" && !word(1).empty() &&
          (i + 2 == tokens.size() || word(2) == "SETTINGS")) {
        return GuardViolation(
            "configuration",
            "guard: a FORMAT clause changes how the result comes back, which quarry "
            "sets itself: drop it");
      }
      if (t.text == "INTO") {
        const bool file = word(1) == "OUTFILE";
        return GuardViolation(file ? "file_write" : "read_only",
                              file
                                  ? "guard: INTO OUTFILE writes a file, which is not allowed: drop "
                                    "the INTO clause"
                                  : "guard: INTO stores data, which is not allowed: drop the INTO "
                                    "clause");
      }
    }
    if (!call || (t.kind != TokenKind::kWord && t.kind != TokenKind::kQuotedIdent)) continue;
    if (auto v = CheckFunctionCall(Upper(t.text), t.text, kChFunctionRules)) return v;
  }
  return std::nullopt;
}

}  // namespace quarry::engine::internal
