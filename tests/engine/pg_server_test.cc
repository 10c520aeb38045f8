// The test PostgreSQL server itself (tests/support/pg_server.h): it answers, holds the same
// Chinook as data/chinook.sqlite, has the roles it promises, checksums see a change, and it
// never outlives the process that started it.
#include "support/pg_server.h"
#include "support/test_support.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace quarry::test {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Conn = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

Conn Connect(const std::string& conninfo) { return Conn(PQconnectdb(conninfo.c_str()), &PQfinish); }

// One value of a one-row query, or the error text prefixed with "ERROR: ".
std::string Scalar(PGconn* conn, const std::string& sql) {
  Result result(PQexec(conn, sql.c_str()), &PQclear);
  ExecStatusType status = PQresultStatus(result.get());
  if (status == PGRES_COMMAND_OK) return "OK";
  if (status != PGRES_TUPLES_OK) return std::string("ERROR: ") + PQerrorMessage(conn);
  if (PQntuples(result.get()) != 1) return "ROWS: " + std::to_string(PQntuples(result.get()));
  return PQgetisnull(result.get(), 0, 0) ? "NULL" : PQgetvalue(result.get(), 0, 0);
}

std::string SqliteScalar(const std::string& sql) {
  sqlite3* raw = nullptr;
  const std::string path = (quarry::testing::SourceDir() / "data/chinook.sqlite").string();
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return "cannot open " + path;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    return std::string("sqlite: ") + sqlite3_errmsg(db.get());
  }
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> owned(stmt, &sqlite3_finalize);
  if (sqlite3_step(stmt) != SQLITE_ROW) return "no row";
  const unsigned char* text = sqlite3_column_text(stmt, 0);
  return text ? reinterpret_cast<const char*>(text) : "NULL";
}

TEST(PgServerTest, AnswersOnItsUnixSocketByUrlAndConninfo) {
  const PgServer& server = SharedPgServer();
  EXPECT_EQ(&server, &SharedPgServer());
  EXPECT_TRUE(
      fs::exists(fs::path(server.socket_dir) / (".s.PGSQL." + std::to_string(server.port))));
  EXPECT_EQ(server.tcp_port, 0);
  EXPECT_NE(server.Url().find("reader@/chinook?host=%2F"), std::string::npos) << server.Url();
  for (const std::string& info : {server.Url(), server.Conninfo("chinook", "reader")}) {
    Conn conn = Connect(info);
    ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK) << info << ": " << PQerrorMessage(conn.get());
    EXPECT_GE(PQserverVersion(conn.get()), 150000);
    EXPECT_EQ(Scalar(conn.get(), "SELECT current_user || '@' || current_database()"),
              "reader@chinook");
    EXPECT_EQ(Scalar(conn.get(), "SHOW TimeZone"), "UTC");
    EXPECT_EQ(Scalar(conn.get(), "SHOW server_encoding"), "UTF8");
  }
  auto rows = server.Rows("postgres", "SELECT 1, NULL::text, 'x'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::vector<std::optional<std::string>>{"1", std::nullopt, "x"}));
}

// What a build's postgres says it is: "postgres (PostgreSQL) 18.4" -> "18.4", and Debian's
// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" -> "15.18"; "" on failure.
std::string BuildVersion(const fs::path& postgres) {
  std::string command = "'";
  for (char c : postgres.string()) command += c == '\'' ? std::string("'\\''") : std::string(1, c);
  command += "' --version";
  std::unique_ptr<FILE, decltype(&::pclose)> out(::popen(command.c_str(), "r"), &::pclose);
  if (!out) return "";
  char line[256] = {};
  if (!std::fgets(line, sizeof line, out.get())) return "";
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    if (word == "(PostgreSQL)") return words >> word ? word : "";
  }
  return "";
}

// The server under test is the build QUARRY_TEST_PG_BIN names (the Pg18 CTest entries rest on
// it), else the newest in /usr/lib/postgresql. Its version is printed for the log.
TEST(PgServerTest, IsTheBuildQuarryTestPgBinNamesOrDebiansNewest) {
  fs::path bin;
  if (const char* named = std::getenv("QUARRY_TEST_PG_BIN"); named && *named) {
    bin = named;
  } else {
    int best = -1;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
      const int major = std::atoi(entry.path().filename().c_str());
      if (major > best && fs::exists(entry.path() / "bin" / "postgres")) {
        best = major;
        bin = entry.path() / "bin";
      }
    }
  }
  const std::string expected = BuildVersion(bin / "postgres");
  ASSERT_FALSE(expected.empty()) << "cannot run " << (bin / "postgres") << " --version";
  Conn conn = Connect(SharedPgServer().Conninfo("postgres", "reader"));
  ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK) << PQerrorMessage(conn.get());
  // Debian's says "15.18 (Debian 15.18-0+deb12u1)", the npm build "18.4".
  const std::string version = Scalar(conn.get(), "SHOW server_version");
  std::printf("test PostgreSQL server: %s, from %s\n", version.c_str(), bin.c_str());
  EXPECT_EQ(version.substr(0, version.find(' ')), expected) << bin;
}

TEST(PgServerTest, ChinookHasTheSameRowsAsTheSqliteFile) {
  const PgServer& server = SharedPgServer();
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"album", "Album"},
      {"artist", "Artist"},
      {"customer", "Customer"},
      {"employee", "Employee"},
      {"genre", "Genre"},
      {"invoice", "Invoice"},
      {"invoice_line", "InvoiceLine"},
      {"media_type", "MediaType"},
      {"playlist", "Playlist"},
      {"playlist_track", "PlaylistTrack"},
      {"track", "Track"}};
  for (const auto& [pg, lite] : tables) {
    auto rows = server.Rows("chinook", "SELECT count(*) FROM " + pg);
    ASSERT_EQ(rows.size(), 1u) << pg;
    EXPECT_EQ(rows[0][0], SqliteScalar("SELECT count(*) FROM " + lite)) << pg;
  }
  EXPECT_EQ(server.Rows("chinook", "SELECT count(*) FROM track")[0][0], "3503");
  EXPECT_EQ(server.Rows("chinook", "SELECT count(*) FROM invoice")[0][0], "412");
  EXPECT_EQ(server.Rows("chinook", "SELECT count(*) FROM customer")[0][0], "59");
  EXPECT_EQ(server.Rows("chinook", "SELECT sum(total)::numeric(10,2) FROM invoice")[0][0],
            SqliteScalar("SELECT printf('%.2f', sum(Total)) FROM Invoice"));
  EXPECT_EQ(server.Rows("chinook", "SELECT name FROM artist WHERE artist_id = 1")[0][0],
            SqliteScalar("SELECT Name FROM Artist WHERE ArtistId = 1"));
}

TEST(PgServerTest, RolesHaveThePromisedPrivileges) {
  const PgServer& server = SharedPgServer();
  Conn reader = Connect(server.Conninfo("chinook", "reader"));
  ASSERT_EQ(PQstatus(reader.get()), CONNECTION_OK) << PQerrorMessage(reader.get());
  EXPECT_EQ(Scalar(reader.get(), "SELECT count(*) FROM genre"), "25");
  EXPECT_EQ(
      Scalar(reader.get(), "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user"),
      "false");
  EXPECT_NE(Scalar(reader.get(), "INSERT INTO genre VALUES (1000, 'x')").find("permission denied"),
            std::string::npos);
  Conn reader_types = Connect(server.Conninfo("quarry_types", "reader"));
  EXPECT_EQ(Scalar(reader_types.get(), "SELECT count(*) FROM sales.\"Order Items\""), "5");

  Conn writer = Connect(server.Conninfo("chinook", "writer"));
  ASSERT_EQ(PQstatus(writer.get()), CONNECTION_OK) << PQerrorMessage(writer.get());
  EXPECT_EQ(Scalar(writer.get(), "BEGIN"), "OK");
  EXPECT_EQ(Scalar(writer.get(), "INSERT INTO genre VALUES (1000, 'x')"), "OK");
  EXPECT_EQ(Scalar(writer.get(), "UPDATE genre SET name = 'y' WHERE genre_id = 1000"), "OK");
  EXPECT_EQ(Scalar(writer.get(), "DELETE FROM genre WHERE genre_id = 1000"), "OK");
  EXPECT_EQ(Scalar(writer.get(), "ROLLBACK"), "OK");
  EXPECT_NE(Scalar(writer.get(), "CREATE TABLE t (x int)").find("permission denied"),
            std::string::npos);
  EXPECT_EQ(server.Rows("chinook",
                        "SELECT rolsuper::text FROM pg_roles WHERE rolname = "
                        "'quarry_admin'")[0][0],
            "true");
}

TEST(PgServerTest, PasswordRoleNeedsItsPassword) {
  const PgServer& server = SharedPgServer();
  // No ~/.pgpass may supply the password behind the test's back.
  const std::string info =
      server.Conninfo("chinook", "pwuser") + " passfile=" + server.socket_dir + "/no-pgpass";
  ::unsetenv("PGPASSWORD");
  Conn without = Connect(info);
  EXPECT_EQ(PQstatus(without.get()), CONNECTION_BAD);
  EXPECT_NE(std::string(PQerrorMessage(without.get())).find("password"), std::string::npos)
      << PQerrorMessage(without.get());

  ::setenv("PGPASSWORD", "wrong", 1);
  Conn wrong = Connect(info);
  EXPECT_EQ(PQstatus(wrong.get()), CONNECTION_BAD);
  ::setenv("PGPASSWORD", "pg-test-secret", 1);
  Conn with = Connect(info);
  ::unsetenv("PGPASSWORD");
  ASSERT_EQ(PQstatus(with.get()), CONNECTION_OK) << PQerrorMessage(with.get());
  EXPECT_TRUE(PQconnectionUsedPassword(with.get()));
  EXPECT_EQ(Scalar(with.get(), "SELECT count(*) FROM track"), "3503");
}

TEST(PgServerTest, TypesDatabaseHasThePromisedObjects) {
  const PgServer& server = SharedPgServer();
  auto rows = server.Rows("quarry_types",
                          "SELECT amount::text, taken_at::text, readings::text, tags::text, "
                          "docb::text, uid::text, span::text, raw::text, ok::text "
                          "FROM measures ORDER BY id");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            (std::vector<std::optional<std::string>>{
                "12345678901234.123456", "2024-03-01 12:34:56.789+00", "{1,2,3}",
                "{alpha,\"with space\"}", "{\"a\": 1, \"b\": 2}",
                "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "1 day 02:03:04", "\\xdeadbeef", "true"}));
  EXPECT_EQ(rows[1][0], "0.000001");
  EXPECT_EQ(rows[1][6], "-3 mons");
  EXPECT_EQ(rows[2][0], std::nullopt);
  EXPECT_EQ(server.Rows("quarry_types", "SELECT obj_description('measures'::regclass)")[0][0],
            "One measurement per row, in every type quarry must show exactly.");
  EXPECT_EQ(server.Rows("quarry_types", "SELECT col_description('measures'::regclass, 3)")[0][0],
            "Amount in euros, exact to the micro-euro.");
  EXPECT_EQ(server.Rows("quarry_types", "SELECT count(*) FROM measure_summary")[0][0], "2");
  EXPECT_EQ(server.Rows("quarry_types",
                        "SELECT confrelid::regclass::text FROM pg_constraint WHERE contype = 'f' "
                        "AND conrelid = 'sales.orders'::regclass")[0][0],
            "sales.customers");
  auto sums = server.TableChecksums("quarry_types");
  std::vector<std::string> names;
  for (const auto& [name, sum] : sums) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"public.measures", "sales.Order Items",
                                             "sales.customers", "sales.orders"}));
}

TEST(PgServerTest, TableChecksumsAreStableAndSeeAOneRowChange) {
  const PgServer& server = SharedPgServer();
  const auto before = server.TableChecksums("chinook");
  ASSERT_EQ(before.size(), 11u);
  EXPECT_EQ(before.at("public.genre").size(), 32u);
  EXPECT_EQ(server.TableChecksums("chinook"), before);

  server.Exec("chinook", "UPDATE genre SET name = name || '!' WHERE genre_id = 1");
  const auto changed = server.TableChecksums("chinook");
  EXPECT_NE(changed.at("public.genre"), before.at("public.genre"));
  EXPECT_EQ(changed.at("public.track"), before.at("public.track"));
  server.Exec("chinook", "UPDATE genre SET name = rtrim(name, '!') WHERE genre_id = 1");
  EXPECT_EQ(server.TableChecksums("chinook"), before);
}

TEST(PgServerTest, ListensOnLoopbackWhenAsked) {
  OwnedPgServer owned(/*loopback_tcp=*/true);
  ASSERT_GT(owned.server().tcp_port, 0);
  Conn conn = Connect(owned.server().TcpUrl("chinook", "reader"));
  ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK) << PQerrorMessage(conn.get());
  EXPECT_EQ(Scalar(conn.get(), "SELECT inet_server_addr()::text"), "127.0.0.1/32");
  EXPECT_EQ(Scalar(conn.get(), "SELECT count(*) FROM invoice"), "412");
}

struct Held {
  pid_t holder = -1;
  int stdin_fd = -1;
  pid_t postmaster = -1;
  int port = 0;
  std::string socket_dir;
};

// Starts pg_server_holder and reads the server it started.
Held StartHolder() {
  Held held;
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return held;
  held.holder = ::fork();
  if (held.holder == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::execl(QUARRY_PG_SERVER_HOLDER, QUARRY_PG_SERVER_HOLDER, nullptr);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  held.stdin_fd = in[1];
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);
  std::istringstream fields(line);
  fields >> held.postmaster >> held.port >> held.socket_dir;
  return held;
}

bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

PGPing Ping(const Held& held) {
  const std::string info = "host=" + held.socket_dir + " port=" + std::to_string(held.port) +
                           " dbname=postgres user=reader connect_timeout=2";
  return PQping(info.c_str());
}

TEST(PgServerTest, ServerDiesWhenItsOwnerIsKilled) {
  Held held = StartHolder();
  ASSERT_GT(held.holder, 0);
  ASSERT_GT(held.postmaster, 0) << "pg_server_holder printed no server";
  EXPECT_TRUE(Alive(held.postmaster));
  EXPECT_EQ(Ping(held), PQPING_OK);

  ASSERT_EQ(::kill(held.holder, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(held.holder, &status, 0), held.holder);
  ::close(held.stdin_fd);
  const auto started = std::chrono::steady_clock::now();
  while (Alive(held.postmaster) && std::chrono::steady_clock::now() - started < 5s) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(Alive(held.postmaster)) << "the server outlived its killed owner by 5 s";
  EXPECT_NE(Ping(held), PQPING_OK);
  std::error_code ignored;  // the owner died before it could clean up
  fs::remove_all(fs::path(held.socket_dir).parent_path(), ignored);
}

TEST(PgServerTest, ServerIsStoppedAndRemovedAtNormalExit) {
  Held held = StartHolder();
  ASSERT_GT(held.postmaster, 0) << "pg_server_holder printed no server";
  EXPECT_EQ(Ping(held), PQPING_OK);
  ::close(held.stdin_fd);
  int status = 0;
  ASSERT_EQ(::waitpid(held.holder, &status, 0), held.holder);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(Alive(held.postmaster));  // stopped and reaped before the holder exited
  EXPECT_FALSE(fs::exists(fs::path(held.socket_dir).parent_path()));
}

}  // namespace
}  // namespace quarry::test
