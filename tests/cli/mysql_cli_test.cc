// quarry above the MySQL-protocol engine on a real MariaDB server
// (tests/support/mariadb_server.h): `sql`, `schema`, the system prompt, `ask --offline` on the
// MySQL fixture, `python` reading the server's tables, a refused write, a writing user warned
// about, and a password that only the environment carries and that never shows.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/mariadb_server.h"
#include "cli/server_cli.h"
#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

class MySqlCliTest : public testing::ServerCliTest {
 protected:
  const test::MariaDbServer& my_ = test::SharedMariaDbServer();
};

TEST_F(MySqlCliTest, SqlSchemaPromptAndOfflineAskAnswerFromTheServer) {
  const std::string url = my_.Url();
  const auto before = my_.TableChecksums("Chinook");
  auto count = Quarry({"sql", "--format", "json", url, "SELECT COUNT(*) AS n FROM Track"});
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(json::parse(count.out)["rows"], json::parse("[[3503]]"));
  EXPECT_EQ(count.err.find("warning"), std::string::npos) << count.err;
  auto money = Quarry({"sql", "--format", "csv", url,
                       "SELECT SUM(UnitPrice * Quantity) AS revenue FROM InvoiceLine"});
  ASSERT_EQ(money.exit_code, 0) << money.err;
  EXPECT_EQ(money.out, "revenue\n2328.60\n");
  auto write = Quarry({"sql", url, "DELETE FROM InvoiceLine"});
  EXPECT_EQ(write.exit_code, 3);
  EXPECT_NE(write.err.find("guard_violation"), std::string::npos) << write.err;
  auto hidden = Quarry({"sql", url, "SELECT 1 /*!50000 , SLEEP(5) */"});
  EXPECT_EQ(hidden.exit_code, 3) << hidden.err;
  auto as_writer = Quarry({"sql", my_.Url("Chinook", "writer"), "SELECT 1"});
  ASSERT_EQ(as_writer.exit_code, 0) << as_writer.err;
  EXPECT_NE(as_writer.err.find("the user writer may write"), std::string::npos) << as_writer.err;

  auto schema = Quarry({"schema", "--format", "json", url});
  ASSERT_EQ(schema.exit_code, 0) << schema.err;
  const json s = json::parse(schema.out);
  EXPECT_EQ(s["dialect"], "mysql");
  ASSERT_EQ(s["sources"].size(), 1u);
  EXPECT_EQ(s["sources"][0]["format"], "mysql");
  EXPECT_EQ(s["tables"].size(), 11u);

  auto prompt = Quarry({"schema", "--prompt", "Which 3 genres bring in the most revenue?", url});
  ASSERT_EQ(prompt.exit_code, 0) << prompt.err;
  const std::string system = json::parse(prompt.out)["messages"][0]["content"];
  EXPECT_NE(system.find("The data is served by MySQL: write SQL in its dialect."),
            std::string::npos)
      << system.substr(0, 600);
  EXPECT_NE(system.find("CAST('abc' AS DECIMAL) gives 0"), std::string::npos);

  auto ask = Quarry({"ask", "--offline", "--format", "json", "--data", url,
                     "Which 3 genres bring in the most revenue?"});
  ASSERT_EQ(ask.exit_code, 0) << ask.out << ask.err;
  const json a = json::parse(ask.out);
  EXPECT_EQ(a["grounded"], true);
  EXPECT_EQ(a["supporting_values"],
            json::parse(R"(["Rock","826.65","Latin","382.14","Metal","261.36"])"));
  EXPECT_EQ(my_.TableChecksums("Chinook"), before);
}

TEST_F(MySqlCliTest, PythonReadsTheServerAndAPasswordIsNeverShown) {
  const fs::path script =
      cwd_.Write("genres.py", "print(len(tables['Track']), sorted(tables['Genre']['Name'])[0])\n");
  auto py = Quarry({"python", my_.Url(), script.string()});
  ASSERT_EQ(py.exit_code, 0) << py.out << py.err;
  EXPECT_EQ(py.out, "3503 Alternative\n");
  const std::string pw_url = my_.Url("Chinook", "pwuser");
  auto no_password = Quarry({"sql", pw_url, "SELECT 1"});
  EXPECT_NE(no_password.exit_code, 0);
  EXPECT_NE(no_password.err.find("MYSQL_PWD"), std::string::npos) << no_password.err;
  auto with = Quarry({"ask", "--offline", "--format", "json", "--data", pw_url,
                      "Which 3 genres bring in the most revenue?"},
                     {"MYSQL_PWD=my-test-secret"});
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err;
  EXPECT_EQ(with.out.find("my-test-secret"), std::string::npos);
  EXPECT_EQ(with.err.find("my-test-secret"), std::string::npos);
  EXPECT_EQ(AllRunFiles().find("my-test-secret"), std::string::npos);
  auto in_url = Quarry({"sql", "mysql://pwuser:my-test-secret@localhost/Chinook", "SELECT 1"});
  EXPECT_EQ(in_url.exit_code, 2) << in_url.err;
  EXPECT_EQ(in_url.err.find("my-test-secret"), std::string::npos) << in_url.err;
}

}  // namespace
}  // namespace quarry
