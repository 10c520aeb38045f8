// `quarry mcp` serving a real MariaDB server (tests/support/mariadb_server.h) to a client on
// pipes: the instructions and tool descriptions name MySQL and the redacted server, the schema
// lists Chinook's tables, run_sql returns exact values, a write and an executable comment that
// hides a call are refused (the tables unchanged), and a URL with a password is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "live_server.h"
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

TEST(MySqlMcpTest, AClientListsTheSchemaRunsSqlAndIsRefusedAWrite) {
  const test::MariaDbServer& my = test::SharedMariaDbServer();
  const auto before = my.TableChecksums("Chinook");
  TempDir tmp;
  const std::vector<std::string> env = {"HOME=" + tmp.path().string()};
  LiveServer server({"--runs-dir", (tmp.path() / "runs").string(), my.Url()}, tmp.path(), env);
  server.Send(Request(0, "initialize",
                      {{"protocolVersion", "2025-11-25"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "mysql_mcp_test"}, {"version", "1"}}}}));
  const auto init = server.Response(0, milliseconds(30000));
  ASSERT_TRUE(init.has_value()) << server.Err();
  const std::string instructions = init->message["result"]["instructions"];
  EXPECT_NE(instructions.find("11 table(s) on the MySQL-protocol server mysql://reader@localhost/"),
            std::string::npos)
      << instructions;
  EXPECT_NE(instructions.find("(MySQL SQL)"), std::string::npos) << instructions;
  server.Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});

  server.Send(Request(1, "tools/list"));
  const auto list = server.Response(1, milliseconds(10000));
  ASSERT_TRUE(list.has_value()) << server.Err();
  std::string run_sql_description;
  for (const auto& tool : list->message["result"]["tools"]) {
    if (tool["name"] == "run_sql") run_sql_description = tool["description"];
  }
  EXPECT_NE(run_sql_description.find("in the MySQL dialect"), std::string::npos)
      << run_sql_description;
  EXPECT_NE(run_sql_description.find("read-only transaction"), std::string::npos);

  server.Send(Call(2, "describe_schema", {{"table", "InvoiceLine"}}));
  const auto card = server.Response(2, milliseconds(30000));
  ASSERT_TRUE(card.has_value()) << server.Err();
  EXPECT_EQ(card->message["result"]["isError"], false);
  const std::string card_text = Text(card->message["result"]);
  EXPECT_NE(card_text.find("UnitPrice DECIMAL(10,2)"), std::string::npos) << card_text;

  server.Send(Call(3, "run_sql",
                   {{"sql",
                     "SELECT g.Name AS genre, SUM(il.UnitPrice * il.Quantity) AS revenue "
                     "FROM InvoiceLine il JOIN Track t USING (TrackId) "
                     "JOIN Genre g USING (GenreId) GROUP BY g.Name "
                     "ORDER BY revenue DESC LIMIT 2"}}));
  const auto rows = server.Response(3, milliseconds(30000));
  ASSERT_TRUE(rows.has_value()) << server.Err();
  const json& sc = rows->message["result"]["structuredContent"];
  EXPECT_EQ(sc["columns"], json::parse(R"(["genre","revenue"])"));
  EXPECT_EQ(sc["rows"], json::parse(R"([["Rock",826.65],["Latin",382.14]])")) << sc.dump();

  int id = 4;
  for (const char* sql : {"UPDATE Track SET UnitPrice = 0", "SELECT 1 /*!50000 , SLEEP(5) */"}) {
    server.Send(Call(id, "run_sql", {{"sql", sql}}));
    const auto refused = server.Response(id++, milliseconds(30000));
    ASSERT_TRUE(refused.has_value()) << server.Err();
    EXPECT_EQ(refused->message["result"]["isError"], true) << sql;
    EXPECT_NE(Text(refused->message["result"]).find("guard_violation"), std::string::npos)
        << Text(refused->message["result"]);
  }

  server.CloseInput();
  EXPECT_EQ(server.Wait(milliseconds(10000)), 0) << server.Err();
  EXPECT_EQ(my.TableChecksums("Chinook"), before);

  LiveServer bad({"mysql://pwuser:my-test-secret@localhost/Chinook"}, tmp.path(), env);
  EXPECT_EQ(bad.Wait(milliseconds(10000)), 2) << bad.Err();
  EXPECT_NE(bad.Err().find("MYSQL_PWD"), std::string::npos) << bad.Err();
  EXPECT_EQ(bad.Err().find("my-test-secret"), std::string::npos) << bad.Err();
}

}  // namespace
}  // namespace quarry
