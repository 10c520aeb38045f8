// The PostgreSQL engine against a real server (tests/support/pg_server.h): specs, credentials
// and redaction; every query in its own READ ONLY transaction; cells converted per type; the
// row cap with the true count; error messages with hints.
#include <gtest/gtest.h>

#include <cstdlib>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "support/pg_server.h"

namespace quarry::engine {
namespace {

using quarry::test::SharedPgServer;

std::unique_ptr<Engine> OpenPg(const std::string& url, bool profile = true) {
  OpenOptions options;
  options.profile = profile;
  auto engine = Open({url}, options);
  EXPECT_TRUE(engine.has_value()) << (engine ? "" : engine.error().message);
  return engine ? std::move(*engine) : nullptr;
}

TEST(PostgresConnect, SpecsCredentialsAndRedaction) {
  const auto& pg = SharedPgServer();
  // A password in the spec is refused before anything is sent, and never echoed.
  for (const std::string spec : {"postgresql://reader:hunter2@localhost:5432/chinook",
                                 "postgres://reader:hunter2@/chinook?host=%2Ftmp",
                                 "postgresql://reader@localhost/chinook?password=hunter2",
                                 "postgresql://reader@localhost/chinook?sslpassword=hunter2"}) {
    auto engine = Open({spec});
    ASSERT_FALSE(engine.has_value()) << spec;
    EXPECT_EQ(engine.error().code, Error::Code::kUsage) << spec;
    EXPECT_EQ(engine.error().message.find("hunter2"), std::string::npos) << engine.error().message;
    EXPECT_NE(engine.error().message.find("PGPASSWORD"), std::string::npos)
        << engine.error().message;
    EXPECT_EQ(internal::RedactServerSpec(spec).find("hunter2"), std::string::npos);
  }
  EXPECT_EQ(
      internal::RedactServerSpec("postgresql://ann:secret@db.example:6543/shop?sslmode=require"),
      "postgresql://ann@db.example:6543/shop");
  EXPECT_EQ(internal::RedactServerSpec("postgres://ann@[::1]/shop"), "postgresql://ann@[::1]/shop");
  EXPECT_EQ(internal::RedactServerSpec("service=warehouse"), "service=warehouse");
  EXPECT_EQ(internal::RedactServerSpec("service=warehouse password=x"), "service=warehouse");
  EXPECT_EQ(internal::RedactServerSpec("postgresql://ann@/shop?host=%2Fvar%2Frun&port=5433"),
            "postgresql://ann@/shop?host=%2Fvar%2Frun&port=5433");
  // Malformed: the quoted piece libpq would echo (maybe part of a password) is dropped.
  const std::string bad = "postgresql://ann:s%zzcret@host/db";
  EXPECT_EQ(internal::RedactServerSpec(bad), "postgresql://…");
  auto malformed = Open({bad});
  ASSERT_FALSE(malformed.has_value());
  EXPECT_EQ(malformed.error().code, Error::Code::kUsage);
  EXPECT_EQ(malformed.error().message.find("s%zz"), std::string::npos) << malformed.error().message;

  // The source shows the redacted URL; it is the test server's URL, which has no secret.
  auto engine = OpenPg(pg.Url("chinook", "reader"), false);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->dialect(), Dialect::kPostgreSQL);
  ASSERT_EQ(engine->sources().size(), 1u);
  EXPECT_EQ(SourceFormatName(engine->sources()[0].format), "postgresql");
  EXPECT_EQ(engine->sources()[0].path, internal::RedactServerSpec(pg.Url("chinook", "reader")));
  EXPECT_TRUE(engine->sources()[0].path.starts_with("postgresql://reader@/chinook?host="));
  EXPECT_EQ(engine->sources()[0].tables.size(), 11u);
  auto settings = engine->Query(
      "SELECT current_setting('application_name'), current_setting('client_encoding'), "
      "current_setting('transaction_read_only'), current_setting('statement_timeout'), "
      "current_setting('lock_timeout'), current_setting('DateStyle')",
      Limits{4321, 10, {}});
  ASSERT_TRUE(settings.has_value()) << settings.error().message;
  EXPECT_EQ(settings->rows[0][0], "quarry");
  EXPECT_EQ(settings->rows[0][1], "UTF8");
  EXPECT_EQ(settings->rows[0][2], "on");
  EXPECT_EQ(settings->rows[0][3], "4321ms");
  EXPECT_EQ(settings->rows[0][4], "4321ms");
  EXPECT_EQ(settings->rows[0][5], "ISO, YMD");
  // The settings were LOCAL to the query's transaction, which was rolled back: the next query
  // gets its own.
  auto next = engine->Query("SELECT current_setting('statement_timeout')", Limits{999, 10, {}});
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->rows[0][0], "999ms");

  // A role that needs a password: refused without one, with a hint; PGPASSWORD works.
  unsetenv("PGPASSWORD");
  auto no_password = Open({pg.Url("chinook", "pwuser")});
  ASSERT_FALSE(no_password.has_value());
  EXPECT_EQ(no_password.error().code, Error::Code::kData);
  EXPECT_NE(no_password.error().message.find("PGPASSWORD"), std::string::npos)
      << no_password.error().message;
  setenv("PGPASSWORD", "pg-test-secret", 1);
  auto with_password = Open({pg.Url("chinook", "pwuser")});
  unsetenv("PGPASSWORD");
  ASSERT_TRUE(with_password.has_value()) << with_password.error().message;
  EXPECT_EQ((*with_password)->sources()[0].path.find("pg-test-secret"), std::string::npos);

  // Nothing listens there: a data error naming the redacted spec.
  auto nowhere = Open({"postgresql://reader@/chinook?host=%2Fnonexistent-dir&port=1"});
  ASSERT_FALSE(nowhere.has_value());
  EXPECT_EQ(nowhere.error().code, Error::Code::kData);
  EXPECT_TRUE(nowhere.error().message.starts_with(
      "cannot open postgresql://reader@/chinook?host=%2Fnonexistent-dir&port=1: "))
      << nowhere.error().message;
}

TEST(PostgresQuery, ValuesTypesCapAndErrors) {
  const auto& pg = SharedPgServer();
  auto engine = OpenPg(pg.Url("quarry_types", "reader"), false);
  ASSERT_TRUE(engine);
  auto v = engine->Query(
      "SELECT 7::int2 AS a, 2147483647::int4 AS b, 9223372036854775807::int8 AS c, "
      "0.1::float8 + 0.2::float8 AS d, 'Infinity'::float8 AS e, 'NaN'::float4 AS f, "
      "0.1::float4 AS g, 1.10::numeric(5,2) AS h, 'NaN'::numeric AS i, true AS j, false AS k, "
      "'\\x00ff41275c'::bytea AS l, NULL::text AS m, 3::float8 AS n, "
      "'-Infinity'::numeric AS o, 'héllo'::text AS p",
      Limits{});
  ASSERT_TRUE(v.has_value()) << v.error().message;
  const std::vector<std::optional<std::string>> want = {"7",
                                                        "2147483647",
                                                        "9223372036854775807",
                                                        "0.30000000000000004",
                                                        "inf",
                                                        "nan",
                                                        "0.1",
                                                        "1.10",
                                                        "nan",
                                                        "true",
                                                        "false",
                                                        "\\x00\\xFFA\\x27\\x5C",
                                                        std::nullopt,
                                                        "3.0",
                                                        "-inf",
                                                        "héllo"};
  EXPECT_EQ(v->rows[0], want);
  const std::vector<CellKind> kinds = {
      CellKind::kInteger, CellKind::kInteger, CellKind::kInteger, CellKind::kReal,
      CellKind::kReal,    CellKind::kReal,    CellKind::kReal,    CellKind::kDecimal,
      CellKind::kReal,    CellKind::kBoolean, CellKind::kBoolean, CellKind::kBlob,
      CellKind::kNull,    CellKind::kReal,    CellKind::kReal,    CellKind::kText};
  EXPECT_EQ(v->kinds[0], kinds);
  EXPECT_EQ(BlobBytes(*v->rows[0][11]), std::string("\x00\xff"
                                                    "A'\\",
                                                    5));
  EXPECT_EQ(v->types[0], "smallint");
  EXPECT_EQ(v->types[7], "numeric(5,2)");
  EXPECT_EQ(v->types[11], "bytea");

  // The test table: exact NUMERIC past a double's digits, timestamptz with its offset (the
  // server's TimeZone, UTC here), arrays, JSON as the server keeps it, UUID, interval.
  auto m = engine->Query("SELECT * FROM measures ORDER BY id", Limits{});
  ASSERT_TRUE(m.has_value()) << m.error().message;
  ASSERT_EQ(m->row_count, 3);
  const auto& exact = m->rows[0];
  EXPECT_EQ(exact[2], "12345678901234.123456");
  EXPECT_EQ(m->kinds[0][2], CellKind::kDecimal);
  EXPECT_EQ(exact[3], "2024-03-01 12:34:56.789+00");
  EXPECT_EQ(exact[4], "{1,2,3}");
  EXPECT_EQ(exact[5], "{alpha,\"with space\"}");
  EXPECT_EQ(exact[6], "{\"k\": [1, 2.5, \"x\"]}");
  EXPECT_EQ(exact[7], "{\"a\": 1, \"b\": 2}");
  EXPECT_EQ(exact[8], "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  EXPECT_EQ(exact[9], "1 day 02:03:04");
  EXPECT_EQ(exact[10], "\\xDE\\xAD\\xBE\\xEF");
  EXPECT_EQ(exact[11], "true");
  EXPECT_EQ(m->rows[1][2], "0.000001");
  EXPECT_EQ(m->rows[1][3], "1999-12-31 18:59:59+00");
  EXPECT_EQ(m->rows[1][9], "-3 mons");
  EXPECT_EQ(m->rows[1][10], "");
  EXPECT_EQ(m->kinds[1][10], CellKind::kBlob);
  EXPECT_EQ(m->rows[2][2], std::nullopt);
  const std::vector<std::string> types = {
      "integer",   "text",     "numeric(20,6)", "timestamp with time zone",
      "integer[]", "text[]",   "json",          "jsonb",
      "uuid",      "interval", "bytea",         "boolean"};
  EXPECT_EQ(m->types, types);

  // The cap bounds what is kept, not what is counted; an empty result still has columns.
  auto chinook = OpenPg(pg.Url("chinook", "reader"), false);
  ASSERT_TRUE(chinook);
  auto capped =
      chinook->Query("SELECT track_id, name FROM track ORDER BY track_id", Limits{10000, 5, {}});
  ASSERT_TRUE(capped.has_value()) << capped.error().message;
  EXPECT_EQ(capped->rows.size(), 5u);
  EXPECT_EQ(capped->row_count, 3503);
  EXPECT_TRUE(capped->truncated());
  EXPECT_EQ(capped->rows[0][1], "For Those About To Rock (We Salute You)");
  auto none = chinook->Query("SELECT name FROM track WHERE false", Limits{});
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->row_count, 0);
  EXPECT_EQ(none->columns, std::vector<std::string>{"name"});
  EXPECT_EQ(none->types, std::vector<std::string>{"character varying(200)"});

  // Errors: syntax vs runtime, the position, and the nearest names for unknown ones.
  auto syntax = chinook->Query("SELECT name FRM track", Limits{});
  ASSERT_FALSE(syntax.has_value());
  EXPECT_EQ(syntax.error().failure_class, FailureClass::kSyntaxError);
  EXPECT_EQ(syntax.error().message,
            "postgresql: syntax error at or near \"track\" (at character 17: 'track')");
  // The position counts characters: 'é' is one.
  auto utf8 = chinook->Query("SELECT 'héllo' AS x FRM track", Limits{});
  ASSERT_FALSE(utf8.has_value());
  EXPECT_EQ(utf8.error().message,
            "postgresql: syntax error at or near \"FRM\" (at character 21: 'FRM track')");
  auto column = chinook->Query("SELECT unitprice FROM track", Limits{});
  ASSERT_FALSE(column.has_value());
  EXPECT_EQ(column.error().failure_class, FailureClass::kRuntimeError);
  EXPECT_TRUE(column.error().message.starts_with(
      "postgresql: column \"unitprice\" does not exist (at character 8: 'unitprice FROM track')"))
      << column.error().message;
  EXPECT_NE(column.error().message.find("unit_price"), std::string::npos) << column.error().message;
  auto table = chinook->Query("SELECT * FROM tracks", Limits{});
  ASSERT_FALSE(table.has_value());
  EXPECT_TRUE(table.error().message.starts_with("postgresql: relation \"tracks\" does not exist"))
      << table.error().message;
  EXPECT_NE(table.error().message.find("track"), std::string::npos);
  auto runtime = chinook->Query("SELECT 1 / (track_id - track_id) FROM track", Limits{});
  ASSERT_FALSE(runtime.has_value());
  EXPECT_EQ(runtime.error().message, "postgresql: division by zero");
  // After every failure the engine still answers.
  auto after = chinook->Query("SELECT count(*) FROM invoice", Limits{});
  ASSERT_TRUE(after.has_value()) << after.error().message;
  EXPECT_EQ(after->rows[0][0], "412");
}

}  // namespace
}  // namespace quarry::engine
