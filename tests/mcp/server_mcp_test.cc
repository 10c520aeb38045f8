// `quarry mcp` serving a real database server to a client on pipes, for MariaDB
// (tests/support/mariadb_server.h) and ClickHouse (tests/support/clickhouse_server.h): the
// instructions and tool descriptions name the dialect and the redacted server, the schema lists
// Chinook's tables, run_sql returns exact values, a write and a dialect's own trick are refused
// (the tables unchanged), and a URL with a password is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "live_server.h"
#include "support/clickhouse_server.h"
#include "support/mariadb_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::Call;
using quarry::testing::LiveServer;
using quarry::testing::Request;
using quarry::testing::TempDir;
using std::chrono::milliseconds;

std::string Text(const json& result) {
  std::string text;
  for (const auto& block : result["content"]) {
    if (block["type"] == "text") text += block["text"].get<std::string>();
  }
  return text;
}

// What differs from one server to the next.
struct ServerCase {
  std::string url;
  std::function<std::map<std::string, std::string>()> checksums;
  std::string instructions;  // a piece of the instructions naming the server
  std::string dialect;       // as the prompt and the tools name it
  std::string transaction;   // how run_sql's description says the server keeps it read-only
  std::string card_line;     // a line of InvoiceLine's card
  std::string revenue_sql;   // the top two genres by revenue, columns genre and revenue
  std::vector<std::string> refused;
  std::string password_url;  // a URL holding the password `secret`
  std::string password_variable;
  std::string secret;
};

void ServesTheServer(const ServerCase& c) {
  const auto before = c.checksums();
  TempDir tmp;
  const std::vector<std::string> env = {"HOME=" + tmp.path().string()};
  LiveServer server({"--runs-dir", (tmp.path() / "runs").string(), c.url}, tmp.path(), env);
  server.Send(Request(0, "initialize",
                      {{"protocolVersion", "2025-11-25"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "server_mcp_test"}, {"version", "1"}}}}));
  const auto init = server.Response(0, milliseconds(30000));
  ASSERT_TRUE(init.has_value()) << server.Err();
  const std::string instructions = init->message["result"]["instructions"];
  EXPECT_NE(instructions.find(c.instructions), std::string::npos) << instructions;
  EXPECT_NE(instructions.find("(" + c.dialect + " SQL)"), std::string::npos) << instructions;
  server.Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});

  server.Send(Request(1, "tools/list"));
  const auto list = server.Response(1, milliseconds(10000));
  ASSERT_TRUE(list.has_value()) << server.Err();
  std::string run_sql_description;
  for (const auto& tool : list->message["result"]["tools"]) {
    if (tool["name"] == "run_sql") run_sql_description = tool["description"];
  }
  EXPECT_NE(run_sql_description.find("in the " + c.dialect + " dialect"), std::string::npos)
      << run_sql_description;
  EXPECT_NE(run_sql_description.find(c.transaction), std::string::npos) << run_sql_description;

  server.Send(Call(2, "describe_schema", {{"table", "InvoiceLine"}}));
  const auto card = server.Response(2, milliseconds(30000));
  ASSERT_TRUE(card.has_value()) << server.Err();
  EXPECT_EQ(card->message["result"]["isError"], false);
  const std::string card_text = Text(card->message["result"]);
  EXPECT_NE(card_text.find(c.card_line), std::string::npos) << card_text;

  server.Send(Call(3, "run_sql", {{"sql", c.revenue_sql}}));
  const auto rows = server.Response(3, milliseconds(30000));
  ASSERT_TRUE(rows.has_value()) << server.Err();
  const json& sc = rows->message["result"]["structuredContent"];
  EXPECT_EQ(sc["columns"], json::parse(R"(["genre","revenue"])"));
  EXPECT_EQ(sc["rows"], json::parse(R"([["Rock",826.65],["Latin",382.14]])")) << sc.dump();

  int id = 4;
  for (const std::string& sql : c.refused) {
    server.Send(Call(id, "run_sql", {{"sql", sql}}));
    const auto refused = server.Response(id++, milliseconds(30000));
    ASSERT_TRUE(refused.has_value()) << server.Err();
    EXPECT_EQ(refused->message["result"]["isError"], true) << sql;
    EXPECT_NE(Text(refused->message["result"]).find("guard_violation"), std::string::npos)
        << Text(refused->message["result"]);
  }

  server.CloseInput();
  EXPECT_EQ(server.Wait(milliseconds(10000)), 0) << server.Err();
  EXPECT_EQ(c.checksums(), before);

  LiveServer bad({c.password_url}, tmp.path(), env);
  EXPECT_EQ(bad.Wait(milliseconds(10000)), 2) << bad.Err();
  EXPECT_NE(bad.Err().find(c.password_variable), std::string::npos) << bad.Err();
  EXPECT_EQ(bad.Err().find(c.secret), std::string::npos) << bad.Err();
}

TEST(ServerMcpTest, MariaDbListsTheSchemaRunsSqlAndIsRefusedAWrite) {
  const test::MariaDbServer& my = test::SharedMariaDbServer();
  ServesTheServer({my.Url(),
                   [&] { return my.TableChecksums("Chinook"); },
                   "11 table(s) on the MySQL-protocol server mysql://reader@localhost/",
                   "MySQL",
                   "read-only transaction",
                   "UnitPrice DECIMAL(10,2)",
                   "SELECT g.Name AS genre, SUM(il.UnitPrice * il.Quantity) AS revenue "
                   "FROM InvoiceLine il JOIN Track t USING (TrackId) "
                   "JOIN Genre g USING (GenreId) GROUP BY g.Name "
                   "ORDER BY revenue DESC LIMIT 2",
                   {"UPDATE Track SET UnitPrice = 0", "SELECT 1 /*!50000 , SLEEP(5) */"},
                   "mysql://pwuser:my-test-secret@localhost/Chinook",
                   "MYSQL_PWD",
                   "my-test-secret"});
}

TEST(ServerMcpTest, ClickHouseListsTheSchemaRunsSqlAndIsRefusedAWrite) {
  const test::ClickHouseServer& ch = test::SharedClickHouseServer();
  ServesTheServer(
      {ch.Url("ChinookSharded"),
       [&] { return ch.TableChecksums("ChinookSharded"); },
       "11 table(s) on the ClickHouse server clickhouse://reader@127.0.0.1:",
       "ClickHouse",
       "readonly=1",
       "UnitPrice Decimal(10, 2)",
       "SELECT Name AS genre, revenue FROM (SELECT GenreId, sum(r) AS revenue FROM (SELECT "
       "TrackId, sum(UnitPrice * Quantity) AS r FROM InvoiceLine GROUP BY TrackId) JOIN (SELECT "
       "TrackId, GenreId FROM Track) USING TrackId GROUP BY GenreId) JOIN (SELECT GenreId, Name "
       "FROM Genre) USING GenreId ORDER BY revenue DESC LIMIT 2",
       {"ALTER TABLE Track UPDATE UnitPrice = 0 WHERE 1",
        "SELECT count() FROM Track SETTINGS max_execution_time = 100000",
        "SELECT * FROM remote('127.0.0.1', system.one)"},
       "clickhouse://pwuser:ch-test-secret@127.0.0.1/Chinook",
       "CLICKHOUSE_PASSWORD",
       "ch-test-secret"});
}

}  // namespace
}  // namespace quarry
