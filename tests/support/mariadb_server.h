// A real MariaDB server for the tests (Debian's `mariadb-server` 10.11: /usr/sbin/mariadbd,
// mariadb-install-db): a template data directory is built once per machine under a file lock and
// cached in the temp dir; each test process starts a private copy on a Unix socket (no TCP unless
// asked), as the `mysql` user when run as root, and the copy dies with the process.
//
// The template (kSchemaVersion in mariadb_server.cc; bump it when this changes) holds:
//   users (all @localhost):
//     root     no password, for test setup only (Exec, Rows)
//     reader   SELECT and SHOW VIEW on Chinook.* and quarry_types.* (the README's role)
//     writer   reader's grants plus INSERT, UPDATE, DELETE on Chinook.*
//     pwuser   reader's grants, password 'my-test-secret'
//   database Chinook: data/chinook_mysql.sql (CamelCase names as in SQLite's Chinook:
//     Track.UnitPrice, InvoiceLine ...; 3503 tracks, 412 invoices, 59 customers)
//   database quarry_types, table measures (id INT PK), 4 rows, see mariadb_server.cc:
//     amount DECIMAL(30,10), big BIGINT UNSIGNED, ratio DOUBLE, taken DATETIME(6),
//     stamped TIMESTAMP(3) NULL, flags BIT(8), doc JSON, size ENUM('S','M','L'),
//     tags SET('red','green','blue'), raw VARBINARY(16), born DATE, note TEXT
//   tables quarry_types.analyzed and .unanalyzed: 20,000 rows each (id 1..20000 PK, grp = id % 7
//     indexed, amount = id / 100 NULL every 10th row, label 'L0'..'L49'); only `analyzed` has
//     MariaDB's engine-independent statistics (ANALYZE ... PERSISTENT FOR ALL), which reader
//     may read (SELECT on mysql.column_stats)
//   Server settings: utf8mb4, time zone +00:00, sql_mode of 10.11 without NO_ZERO_DATE (so
//   the zero-date row can exist).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quarry::test {

struct MariaDbServer {
  std::string socket;  // the Unix socket's path
  int tcp_port = 0;    // 0: no TCP; else it also listens on 127.0.0.1:tcp_port

  // mysql://USER@localhost/DB?socket=SOCKET (percent-encoded). No password.
  std::string Url(std::string_view db = "Chinook", std::string_view user = "reader") const;
  // Over TCP (tcp_port != 0 only): mysql://USER@127.0.0.1:PORT/DB.
  std::string TcpUrl(std::string_view db = "Chinook", std::string_view user = "reader") const;

  // As root, for test setup only. Exec runs SQL (several statements in one string are fine)
  // and ADD_FAILUREs with the server's message on error. Rows returns the last statement's
  // rows as text (nullopt for NULL); on error it ADD_FAILUREs and returns no rows.
  void Exec(std::string_view db, std::string_view sql) const;
  std::vector<std::vector<std::optional<std::string>>> Rows(std::string_view db,
                                                            std::string_view sql) const;
  // Every base table of `db` -> CHECKSUM TABLE ... EXTENDED. Equal maps before and after mean
  // no table's content changed. ADD_FAILUREs on error.
  std::map<std::string, std::string> TableChecksums(std::string_view db) const;
};

// The process's server: started at the first call (~1 s; the first run on a machine also
// builds the template, ~10 s), stopped and its directory removed at process exit. Throws
// std::runtime_error naming the problem (binaries missing: run scripts/setup.sh --tests; the
// server did not start: the tail of its log) on this and every later call.
const MariaDbServer& SharedMariaDbServer();

// A server of one's own (a shard, a server to stop): a fresh copy of the template. Throws like
// SharedMariaDbServer. Destruction stops the server, reaps it and removes its directory, in
// the process that started it only. `plugins`: extra --plugin-load-add values ("ha_spider").
class OwnedMariaDbServer {
 public:
  explicit OwnedMariaDbServer(bool loopback_tcp = false, std::vector<std::string> plugins = {});
  ~OwnedMariaDbServer();
  OwnedMariaDbServer(const OwnedMariaDbServer&) = delete;
  OwnedMariaDbServer& operator=(const OwnedMariaDbServer&) = delete;

  const MariaDbServer& server() const { return server_; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  MariaDbServer server_;
  pid_t pid_ = -1;
  pid_t owner_ = -1;
  std::filesystem::path dir_;
};

}  // namespace quarry::test

namespace quarry::testing {
using test::MariaDbServer;
using test::OwnedMariaDbServer;
using test::SharedMariaDbServer;
}  // namespace quarry::testing
