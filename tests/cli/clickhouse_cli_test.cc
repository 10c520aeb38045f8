// quarry above the ClickHouse engine on a real ClickHouse 18.16 (tests/support/
// clickhouse_server.h): `sql`, `schema`, the system prompt, `ask --offline` on the ClickHouse
// fixture (scripted), `python` reading the server's tables over the Distributed table, refused
// writes and SETTINGS, and a password that only the environment carries and that never shows.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/clickhouse_server.h"
#include "cli/server_cli.h"
#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

class ClickHouseCliTest : public testing::ServerCliTest {
 protected:
  const test::ClickHouseServer& ch_ = test::SharedClickHouseServer();
};

TEST_F(ClickHouseCliTest, SqlSchemaPromptAndOfflineAskAnswerFromTheServer) {
  const std::string url = ch_.Url();
  const auto before = ch_.TableChecksums("Chinook");
  auto count = Quarry({"sql", "--format", "json", url, "SELECT count() AS n FROM Track"});
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(json::parse(count.out)["rows"], json::parse("[[3503]]"));
  EXPECT_EQ(count.err.find("warning"), std::string::npos) << count.err;
  auto money = Quarry({"sql", "--format", "csv", ch_.Url("ChinookSharded"),
                       "SELECT sum(UnitPrice * Quantity) AS revenue FROM InvoiceLine"});
  ASSERT_EQ(money.exit_code, 0) << money.err;
  EXPECT_EQ(money.out, "revenue\n2328.60\n");
  for (const char* refused : {"ALTER TABLE InvoiceLine DELETE WHERE 1",
                              "SELECT count() FROM Track SETTINGS max_execution_time = 100000",
                              "SELECT * FROM url('http://127.0.0.1:1/', 'TSV', 'a String')"}) {
    auto r = Quarry({"sql", url, refused});
    EXPECT_EQ(r.exit_code, 3) << refused << ": " << r.err;
    EXPECT_NE(r.err.find("guard_violation"), std::string::npos) << r.err;
  }
  auto as_default = Quarry({"sql", ch_.Url("Chinook", "default"), "SELECT 1"});
  ASSERT_EQ(as_default.exit_code, 0) << as_default.err;
  EXPECT_NE(as_default.err.find("the user default may write"), std::string::npos) << as_default.err;

  auto schema = Quarry({"schema", "--format", "json", ch_.Url("ChinookSharded")});
  ASSERT_EQ(schema.exit_code, 0) << schema.err;
  const json s = json::parse(schema.out);
  EXPECT_EQ(s["dialect"], "clickhouse");
  ASSERT_EQ(s["sources"].size(), 1u);
  EXPECT_EQ(s["sources"][0]["format"], "clickhouse");
  EXPECT_EQ(s["tables"].size(), 11u);
  EXPECT_NE(schema.out.find("a Distributed table"), std::string::npos);

  auto prompt = Quarry({"schema", "--prompt", "Which 3 genres bring in the most revenue?", url});
  ASSERT_EQ(prompt.exit_code, 0) << prompt.err;
  const std::string system = json::parse(prompt.out)["messages"][0]["content"];
  EXPECT_NE(system.find("The data is served by ClickHouse: write SQL in its dialect."),
            std::string::npos)
      << system.substr(0, 600);
  EXPECT_NE(system.find("GLOBAL IN"), std::string::npos);

  auto ask = Quarry({"ask", "--offline", "--format", "json", "--data", url,
                     "Which 3 genres bring in the most revenue?"});
  ASSERT_EQ(ask.exit_code, 0) << ask.out << ask.err;
  const json a = json::parse(ask.out);
  EXPECT_EQ(a["grounded"], true);
  EXPECT_EQ(a["supporting_values"],
            json::parse(R"(["Rock","826.65","Latin","382.14","Metal","261.36"])"));
  EXPECT_EQ(ch_.TableChecksums("Chinook"), before);
}

TEST_F(ClickHouseCliTest, PythonReadsTheServerAndAPasswordIsNeverShown) {
  const fs::path script = cwd_.Write(
      "lines.py", "print(len(tables['InvoiceLine']), sorted(tables['Genre']['Name'])[0])\n");
  auto py = Quarry({"python", ch_.Url("ChinookSharded"), script.string()});
  ASSERT_EQ(py.exit_code, 0) << py.out << py.err;
  EXPECT_EQ(py.out, "2240 Alternative\n");
  const std::string pw_url = ch_.Url("Chinook", "pwuser");
  auto no_password = Quarry({"sql", pw_url, "SELECT 1"});
  EXPECT_NE(no_password.exit_code, 0);
  EXPECT_NE(no_password.err.find("CLICKHOUSE_PASSWORD"), std::string::npos) << no_password.err;
  auto with = Quarry({"ask", "--offline", "--format", "json", "--data", pw_url,
                      "Which 3 genres bring in the most revenue?"},
                     {"CLICKHOUSE_PASSWORD=ch-test-secret"});
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err;
  EXPECT_EQ(with.out.find("ch-test-secret"), std::string::npos);
  EXPECT_EQ(with.err.find("ch-test-secret"), std::string::npos);
  EXPECT_EQ(AllRunFiles().find("ch-test-secret"), std::string::npos);
  auto in_url = Quarry({"sql", "clickhouse://pwuser:ch-test-secret@127.0.0.1/Chinook", "SELECT 1"});
  EXPECT_EQ(in_url.exit_code, 2) << in_url.err;
  EXPECT_EQ(in_url.err.find("ch-test-secret"), std::string::npos) << in_url.err;
}

}  // namespace
}  // namespace quarry
