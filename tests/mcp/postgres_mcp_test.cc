// `quarry mcp` serving a real PostgreSQL server (tests/support/pg_server.h) to a client on
// pipes: the instructions and tool descriptions name PostgreSQL and the redacted server, the
// schema lists Chinook's tables, run_sql returns exact values, a write is refused (and the
// tables are unchanged), and a URL with a password is refused before serving.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "live_server.h"
#include "support/pg_server.h"
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

TEST(PostgresMcpTest, AClientListsTheSchemaRunsSqlAndIsRefusedAWrite) {
  const test::PgServer& pg = test::SharedPgServer();
  const auto before = pg.TableChecksums("chinook");
  TempDir tmp;
  const std::vector<std::string> env = {"PGPASSFILE=" + (tmp.path() / "no-pgpass").string()};
  LiveServer server({"--runs-dir", (tmp.path() / "runs").string(), pg.Url("chinook", "reader")},
                    tmp.path(), env);
  server.Send(Request(0, "initialize",
                      {{"protocolVersion", "2025-11-25"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "postgres_mcp_test"}, {"version", "1"}}}}));
  const auto init = server.Response(0, milliseconds(30000));
  ASSERT_TRUE(init.has_value()) << server.Err();
  const std::string instructions = init->message["result"]["instructions"];
  EXPECT_NE(instructions.find("11 table(s) on the PostgreSQL server postgresql://reader@"),
            std::string::npos)
      << instructions;
  EXPECT_NE(instructions.find("(PostgreSQL SQL)"), std::string::npos) << instructions;
  EXPECT_NE(instructions.find("invoice_line"), std::string::npos);
  server.Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});

  server.Send(Request(1, "tools/list"));
  const auto list = server.Response(1, milliseconds(10000));
  ASSERT_TRUE(list.has_value()) << server.Err();
  std::string run_sql_description;
  for (const auto& tool : list->message["result"]["tools"]) {
    if (tool["name"] == "run_sql") run_sql_description = tool["description"];
  }
  EXPECT_NE(run_sql_description.find("in the PostgreSQL dialect"), std::string::npos)
      << run_sql_description;
  EXPECT_NE(run_sql_description.find("read-only transaction"), std::string::npos);

  server.Send(Call(2, "describe_schema", {{"table", "invoice_line"}}));
  const auto card = server.Response(2, milliseconds(30000));
  ASSERT_TRUE(card.has_value()) << server.Err();
  EXPECT_EQ(card->message["result"]["isError"], false);
  const std::string card_text = Text(card->message["result"]);
  EXPECT_NE(card_text.find("unit_price"), std::string::npos) << card_text;
  EXPECT_NE(card_text.find("quantity"), std::string::npos) << card_text;

  server.Send(Call(3, "run_sql",
                   {{"sql",
                     "SELECT g.name AS genre, sum(il.unit_price * il.quantity) AS revenue "
                     "FROM invoice_line il JOIN track t USING (track_id) "
                     "JOIN genre g USING (genre_id) GROUP BY g.name "
                     "ORDER BY revenue DESC LIMIT 2"}}));
  const auto rows = server.Response(3, milliseconds(30000));
  ASSERT_TRUE(rows.has_value()) << server.Err();
  const json& sc = rows->message["result"]["structuredContent"];
  EXPECT_EQ(sc["columns"], json::parse(R"(["genre","revenue"])"));
  EXPECT_EQ(sc["rows"], json::parse(R"([["Rock",826.65],["Latin",382.14]])")) << sc.dump();
  EXPECT_EQ(sc["row_count"], 2);

  server.Send(Call(4, "run_sql", {{"sql", "UPDATE track SET unit_price = 0"}}));
  const auto refused = server.Response(4, milliseconds(30000));
  ASSERT_TRUE(refused.has_value()) << server.Err();
  EXPECT_EQ(refused->message["result"]["isError"], true);
  EXPECT_NE(Text(refused->message["result"]).find("guard_violation"), std::string::npos)
      << Text(refused->message["result"]);

  server.CloseInput();
  EXPECT_EQ(server.Wait(milliseconds(10000)), 0) << server.Err();
  EXPECT_EQ(pg.TableChecksums("chinook"), before);

  // A password in the URL: refused before serving, as a usage error, never echoed.
  std::string with_password = pg.Url("chinook", "pwuser");
  with_password.insert(std::string("postgresql://pwuser").size(), ":pg-test-secret");
  LiveServer bad({with_password}, tmp.path(), env);
  EXPECT_EQ(bad.Wait(milliseconds(10000)), 2) << bad.Err();
  EXPECT_NE(bad.Err().find("PGPASSWORD"), std::string::npos) << bad.Err();
  EXPECT_EQ(bad.Err().find("pg-test-secret"), std::string::npos) << bad.Err();
}

}  // namespace
}  // namespace quarry
