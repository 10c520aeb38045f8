// A real ClickHouse server for the tests (Debian's `clickhouse-server` 18.16.1:
// /usr/sbin/clickhouse-server), one per test process on free loopback ports, as the `clickhouse`
// user when run as root; it dies with the process. Loaded at start from data/chinook.sqlite
// (about 1 s):
//   users (from 127.0.0.1 only):
//     default   no password, readonly=0: test setup, and a user who may write
//     reader    no password, a profile with readonly=1 and max_execution_time=300 (the
//               recommended user, docs/engines.md)
//     bareuser  no password, readonly=1 and no time limit of its own
//     twouser   no password, readonly=2 (takes settings with a query, but not readonly)
//     pwuser    password 'ch-test-secret', reader's profile
//   database Chinook: the 11 Chinook tables as MergeTree (CamelCase names as in SQLite's
//     Chinook). INTEGER -> Int64, NUMERIC(10,2) -> Decimal(10,2), NVARCHAR -> String,
//     DATETIME -> DateTime, Nullable where a value is NULL; a DATETIME column holding a date
//     before 1970 (Employee.BirthDate) is String, since 18.16's DateTime starts at 1970.
//   database ChinookSharded: the same, but InvoiceLine is a Distributed table over the cluster
//     `quarry_shards`: two shards on this server (databases shard1 and shard2, reached over
//     the native protocol), holding the lines of invoices 1..200 and 201..412.
//   database quarry_types, table measures: see clickhouse_server.cc.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quarry::test {

struct ClickHouseServer {
  int http_port = 0;
  int tcp_port = 0;

  // clickhouse://USER@127.0.0.1:HTTP_PORT/DB. No password.
  std::string Url(std::string_view db = "Chinook", std::string_view user = "reader") const;

  // As `default`, for test setup only: Exec runs one statement and ADD_FAILUREs with the
  // server's message on error; Rows returns its rows as text (nullopt for \N).
  void Exec(std::string_view sql) const;
  std::vector<std::vector<std::optional<std::string>>> Rows(std::string_view sql) const;
  // Every table of `db` that holds rows (MergeTree, Distributed) -> "count:hash" of its rows
  // (groupBitXor of cityHash64 over the columns): equal maps mean no table changed.
  std::map<std::string, std::string> TableChecksums(std::string_view db) const;
};

// The process's server: started at the first call (~2 s), stopped and its directory removed
// at process exit. Throws std::runtime_error naming the problem (binary missing: run
// scripts/setup.sh --tests; the server did not start: the tail of its log).
const ClickHouseServer& SharedClickHouseServer();

}  // namespace quarry::test

namespace quarry::testing {
using test::ClickHouseServer;
using test::SharedClickHouseServer;
}  // namespace quarry::testing
