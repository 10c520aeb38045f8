// A conversation on a MySQL-protocol server (MariaDB) and on ClickHouse, as on PostgreSQL
// (postgres_cli_test.cc): `ask --thread` binds the thread to the server, `chat` continues it
// with piped questions and shows the SQL, a table added between turns is said, and
// `threads show` names the server by its redacted URL.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/server_cli.h"
#include "support/clickhouse_server.h"
#include "support/mariadb_server.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
constexpr const char* kQuestion = "Which 3 genres bring in the most revenue?";

struct ThreadCase {
  std::string url;
  std::string shown;     // how the thread names the server: the URL as quarry shows it
  std::string sql_line;  // a line of the fixture's SQL, which /sql shows
  std::function<void()> add_table;
  std::function<void()> drop_table;
};

class ServerThreadsTest : public testing::ServerCliTest {
 protected:
  void ContinuesAThread(const ThreadCase& c) {
    auto ask = Quarry(
        {"ask", "--offline", "--runs-dir", Runs(), "--thread", "t", "--data", c.url, kQuestion});
    ASSERT_EQ(ask.exit_code, 0) << ask.out << ask.err;
    EXPECT_NE(ask.out.find("Rock brings in the most revenue ($826.65)"), std::string::npos)
        << ask.out;
    c.add_table();
    auto chat =
        Chat({"--offline", "--no-python", "--runs-dir", Runs(), "--thread", "t", "--data", c.url},
             std::string(kQuestion) + "\n/sql\n");
    c.drop_table();
    ASSERT_EQ(chat.exit_code, 0) << chat.out << chat.err;
    EXPECT_NE(chat.out.find("thread: t (1 earlier turn)"), std::string::npos) << chat.out;
    EXPECT_NE(chat.out.find("Rock brings in the most revenue ($826.65)"), std::string::npos)
        << chat.out;
    EXPECT_NE(chat.out.find(c.sql_line), std::string::npos) << chat.out;
    EXPECT_NE(chat.err.find("changed since turn 1 (its tables: 11 -> 12)"), std::string::npos)
        << chat.err;
    auto show = Quarry({"threads", "show", "t", "--runs-dir", Runs(), "--format", "json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    const json thread = json::parse(show.out);
    ASSERT_EQ(thread["sources"].size(), 1u) << thread.dump(1);
    EXPECT_EQ(thread["sources"][0]["path"], c.shown);
    EXPECT_EQ(thread["turns"].size(), 2u) << thread.dump(1);
  }
};

TEST_F(ServerThreadsTest, MariaDbThreadContinuesInChat) {
  const test::MariaDbServer& my = test::SharedMariaDbServer();
  // The socket's path as a path, not percent-encoded.
  const std::string shown = "mysql://reader@localhost/Chinook?socket=" + my.socket;
  ContinuesAThread({my.Url(), shown, "JOIN Genre g ON g.GenreId = t.GenreId",
                    [&] { my.Exec("Chinook", "CREATE TABLE zz_extra (id INT)"); },
                    [&] { my.Exec("Chinook", "DROP TABLE zz_extra"); }});
}

TEST_F(ServerThreadsTest, ClickHouseThreadContinuesInChat) {
  const test::ClickHouseServer& ch = test::SharedClickHouseServer();
  ContinuesAThread({ch.Url(), ch.Url(), "JOIN (SELECT GenreId, Name FROM Genre) USING GenreId",
                    [&] { ch.Exec("CREATE TABLE Chinook.zz_extra (id Int32) ENGINE = Memory"); },
                    [&] { ch.Exec("DROP TABLE Chinook.zz_extra"); }});
}

}  // namespace
}  // namespace quarry
