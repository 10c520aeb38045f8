// What the template cluster of the test PostgreSQL server holds (documented in pg_server.h):
// Chinook from the repo's script, the roles, and the quarry_types database. Run once per
// machine, while the template is built.
#include <libpq-fe.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "support/pg_server_internal.h"

namespace quarry::test::internal {
namespace {

using Conn = std::unique_ptr<PGconn, decltype(&PQfinish)>;

[[noreturn]] void Fail(const std::string& what) {
  throw std::runtime_error("test PostgreSQL template: " + what);
}

Conn Connect(const std::string& admin_conninfo, const std::string& db) {
  Conn conn(PQconnectdb((admin_conninfo + " dbname=" + db).c_str()), &PQfinish);
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    Fail("cannot connect to database " + db + ": " +
         (conn ? PQerrorMessage(conn.get()) : "out of memory"));
  }
  return conn;
}

void Run(PGconn* conn, const std::string& step, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn, sql.c_str()), &PQclear);
  ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY) {
    Fail(step + " failed: " + PQerrorMessage(conn));
  }
}

// The script starts with DROP/CREATE DATABASE and psql's `\c chinook;`: the database is
// created here and only what follows that line is sent (the server never reads the file, so
// a clone in a directory the server's user cannot enter works).
std::string ChinookTables() {
  const std::string path = QUARRY_SOURCE_DIR "/data/chinook_postgresql.sql";
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot read " + path + " (the Chinook script in the repo)");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string script = text.str();
  const std::string marker = "\n\\c chinook;";
  size_t at = script.find(marker);
  if (at == std::string::npos) Fail(path + " has no `\\c chinook;` line; was it replaced?");
  size_t body = script.find('\n', at + 1);
  return body == std::string::npos ? std::string() : script.substr(body + 1);
}

constexpr const char* kRoles = R"sql(
CREATE ROLE reader LOGIN;
GRANT pg_read_all_data TO reader;
CREATE ROLE writer LOGIN;
GRANT pg_read_all_data TO writer;
CREATE ROLE pwuser LOGIN PASSWORD 'pg-test-secret';
GRANT pg_read_all_data TO pwuser;
)sql";

constexpr const char* kWriterGrants = R"sql(
GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO writer;
)sql";

constexpr const char* kTypes = R"sql(
CREATE TABLE measures (
  id integer PRIMARY KEY,
  label text NOT NULL,
  amount numeric(20,6),
  taken_at timestamptz,
  readings integer[],
  tags text[],
  doc json,
  docb jsonb,
  uid uuid,
  span interval,
  raw bytea,
  ok boolean
);
COMMENT ON TABLE measures IS 'One measurement per row, in every type quarry must show exactly.';
COMMENT ON COLUMN measures.amount IS 'Amount in euros, exact to the micro-euro.';
INSERT INTO measures VALUES
  (1, 'exact', 12345678901234.123456, '2024-03-01 12:34:56.789+00', '{1,2,3}',
   '{alpha,"with space"}', '{"k": [1, 2.5, "x"]}', '{"b": 2, "a": 1}',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '1 day 02:03:04', '\xdeadbeef', true),
  (2, 'small', 0.000001, '1999-12-31 23:59:59+05', '{}', '{}', 'null', '[]',
   '00000000-0000-0000-0000-000000000000', '-3 months', '\x', false),
  (3, 'nulls', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE VIEW measure_summary AS
  SELECT id, label, amount FROM measures WHERE amount IS NOT NULL;

CREATE SCHEMA sales;
CREATE TABLE sales.customers (
  customer_id integer PRIMARY KEY,
  name text NOT NULL,
  country text
);
CREATE TABLE sales.orders (
  order_id integer PRIMARY KEY,
  customer_id integer NOT NULL REFERENCES sales.customers (customer_id),
  ordered_on date NOT NULL,
  total numeric(12,2) NOT NULL
);
CREATE TABLE sales."Order Items" (
  "Order Id" integer REFERENCES sales.orders (order_id),
  "Line No" integer,
  "Product Name" text,
  quantity integer,
  PRIMARY KEY ("Order Id", "Line No")
);
INSERT INTO sales.customers VALUES
  (1, 'Ada Lovelace', 'UK'), (2, 'Grace Hopper', 'USA'), (3, 'Kurt Gödel', NULL);
INSERT INTO sales.orders VALUES
  (10, 1, '2024-01-05', 120.50), (11, 1, '2024-02-10', 80.00),
  (12, 2, '2024-02-11', 15.25), (13, 3, '2024-03-01', 999.99);
INSERT INTO sales."Order Items" VALUES
  (10, 1, 'Difference Engine', 1), (10, 2, 'Punched Cards', 100),
  (11, 1, 'Analytical Engine', 1), (12, 1, 'COBOL Manual', 3), (13, 1, 'Proof', 1);
)sql";

}  // namespace

void PopulateTemplate(const std::string& admin_conninfo) {
  {
    Conn postgres = Connect(admin_conninfo, "postgres");
    Run(postgres.get(), "CREATE DATABASE chinook", "CREATE DATABASE chinook");
    Run(postgres.get(), "CREATE DATABASE quarry_types", "CREATE DATABASE quarry_types");
    Run(postgres.get(), "creating the roles", kRoles);
  }
  {
    Conn chinook = Connect(admin_conninfo, "chinook");
    Run(chinook.get(), "loading data/chinook_postgresql.sql", ChinookTables());
    Run(chinook.get(), "granting writer's privileges", kWriterGrants);
    Run(chinook.get(), "ANALYZE chinook", "ANALYZE");
  }
  Conn types = Connect(admin_conninfo, "quarry_types");
  Run(types.get(), "creating quarry_types", kTypes);
  Run(types.get(), "ANALYZE quarry_types", "ANALYZE");
}

}  // namespace quarry::test::internal
