// A sharded MariaDB: two more servers each hold half of Chinook's InvoiceLine, and the Spider
// storage engine on a third presents them as one partitioned table in the database `sharded`
// (the other Chinook tables copied beside it). quarry answers over it exactly as over the flat
// Chinook, and a timeout and a stop reach the query that runs on the shards.
#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <thread>

#include "quarry/common/json.h"
#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "support/mariadb_server.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::test::OwnedMariaDbServer;

// Queries in the MySQL dialect whose answers must not depend on where InvoiceLine's rows live.
constexpr const char* kQueries[] = {
    "SELECT COUNT(*), SUM(UnitPrice * Quantity) FROM InvoiceLine",
    "SELECT g.Name, SUM(il.UnitPrice * il.Quantity) AS revenue FROM InvoiceLine il JOIN Track t "
    "ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.Name ORDER BY "
    "revenue DESC, g.Name LIMIT 5",
    "SELECT c.Country, COUNT(DISTINCT i.InvoiceId) FROM Customer c JOIN Invoice i ON "
    "i.CustomerId = c.CustomerId JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId GROUP BY "
    "c.Country ORDER BY 2 DESC, 1 LIMIT 5",
    "SELECT InvoiceId, COUNT(*) AS n FROM InvoiceLine GROUP BY InvoiceId ORDER BY n DESC, "
    "InvoiceId LIMIT 3",
    "SELECT MIN(InvoiceLineId), MAX(InvoiceLineId), AVG(Quantity) FROM InvoiceLine",
    "SELECT YEAR(i.InvoiceDate), SUM(il.UnitPrice * il.Quantity) FROM Invoice i JOIN InvoiceLine "
    "il "
    "ON il.InvoiceId = i.InvoiceId GROUP BY 1 ORDER BY 1",
};

class SpiderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shard1_ = new OwnedMariaDbServer();
    shard2_ = new OwnedMariaDbServer();
    main_ = new OwnedMariaDbServer();
    shard1_->server().Exec("Chinook", "DELETE FROM InvoiceLine WHERE InvoiceLineId >= 1121");
    shard2_->server().Exec("Chinook", "DELETE FROM InvoiceLine WHERE InvoiceLineId < 1121");
    const auto& m = main_->server();
    m.Exec("", "INSTALL SONAME 'ha_spider'");
    std::string setup = "CREATE DATABASE sharded;";
    for (const char* t : {"Album", "Artist", "Customer", "Employee", "Genre", "Invoice",
                          "MediaType", "Playlist", "PlaylistTrack", "Track"}) {
      setup += std::string("CREATE TABLE sharded.") + t + " LIKE Chinook." + t +
               "; INSERT INTO sharded." + t + " SELECT * FROM Chinook." + t + ";";
    }
    setup += "CREATE SERVER shard1 FOREIGN DATA WRAPPER mysql OPTIONS (SOCKET '" +
             shard1_->server().socket + "', DATABASE 'Chinook', USER 'root');";
    setup += "CREATE SERVER shard2 FOREIGN DATA WRAPPER mysql OPTIONS (SOCKET '" +
             shard2_->server().socket + "', DATABASE 'Chinook', USER 'root');";
    setup +=
        "CREATE TABLE sharded.InvoiceLine (InvoiceLineId INT NOT NULL, InvoiceId INT NOT NULL, "
        "TrackId INT NOT NULL, UnitPrice DECIMAL(10,2) NOT NULL, Quantity INT NOT NULL, "
        "PRIMARY KEY (InvoiceLineId)) ENGINE=SPIDER COMMENT='wrapper \"mysql\", table "
        "\"InvoiceLine\"' PARTITION BY RANGE (InvoiceLineId) (PARTITION p0 VALUES LESS THAN "
        "(1121) COMMENT = 'srv \"shard1\"', PARTITION p1 VALUES LESS THAN MAXVALUE COMMENT = "
        "'srv \"shard2\"');";
    setup += "GRANT SELECT, SHOW VIEW ON sharded.* TO reader@localhost;";
    m.Exec("", setup);
  }
  static void TearDownTestSuite() {
    delete main_;
    delete shard1_;
    delete shard2_;
  }
  static OwnedMariaDbServer* shard1_;
  static OwnedMariaDbServer* shard2_;
  static OwnedMariaDbServer* main_;
};
OwnedMariaDbServer* SpiderTest::shard1_ = nullptr;
OwnedMariaDbServer* SpiderTest::shard2_ = nullptr;
OwnedMariaDbServer* SpiderTest::main_ = nullptr;

TEST_F(SpiderTest, TheShardedTableAnswersAsTheFlatOne) {
  const auto& m = main_->server();
  EXPECT_EQ(shard1_->server().Rows("Chinook", "SELECT COUNT(*) FROM InvoiceLine")[0][0], "1120");
  EXPECT_EQ(shard2_->server().Rows("Chinook", "SELECT COUNT(*) FROM InvoiceLine")[0][0], "1120");
  auto flat = Open({m.Url("Chinook")});
  ASSERT_TRUE(flat.has_value()) << flat.error().message;
  auto sharded = Open({m.Url("sharded")});
  ASSERT_TRUE(sharded.has_value()) << sharded.error().message;
  const TableCard* card = nullptr;
  for (const auto& c : (*sharded)->describe()) {
    if (c.name == "InvoiceLine") card = &c;
  }
  ASSERT_NE(card, nullptr);
  EXPECT_EQ(card->row_count, 2240);
  ASSERT_FALSE(card->notes.empty());
  EXPECT_NE(card->notes[0].find("a Spider table"), std::string::npos);
  // The equivalence queries (tasks/postgres/equivalence.json, which pins the flat answers to
  // SQLite's), then queries that lean on InvoiceLine.
  std::vector<std::string> queries(std::begin(kQueries), std::end(kQueries));
  const auto doc = ParseJson(quarry::testing::ReadFile(quarry::testing::SourceDir() / "tasks" /
                                                       "postgres" / "equivalence.json"));
  ASSERT_FALSE(doc.is_discarded());
  for (const auto& q : doc["queries"]) queries.push_back(q["mysql"].get<std::string>());
  ASSERT_GE(queries.size(), 30u);
  for (const std::string& sql : queries) {
    Limits limits;
    limits.max_rows = 10000;
    auto a = (*flat)->Query(sql, limits);
    auto b = (*sharded)->Query(sql, limits);
    ASSERT_TRUE(a.has_value()) << sql << ": " << a.error().message;
    ASSERT_TRUE(b.has_value()) << sql << ": " << b.error().message;
    EXPECT_EQ(a->rows, b->rows) << sql;
    EXPECT_EQ(a->kinds, b->kinds) << sql;
  }
  auto total = (*sharded)->Query(kQueries[0], Limits{});
  ASSERT_TRUE(total.has_value());
  EXPECT_EQ(total->rows[0][1], "2328.60");
  auto write = internal::QueryMySqlPastTextGuard(**sharded, "DELETE FROM InvoiceLine", Limits{});
  EXPECT_FALSE(write.has_value());
  EXPECT_EQ(shard1_->server().Rows("Chinook", "SELECT COUNT(*) FROM InvoiceLine")[0][0], "1120");
}

TEST_F(SpiderTest, ATimeoutAndAStopReachTheShards) {
  const auto& m = main_->server();
  OpenOptions options;
  options.profile = false;
  auto sharded = Open({m.Url("sharded")}, options);
  ASSERT_TRUE(sharded.has_value()) << sharded.error().message;
  // 2240^3 rows counted through the shards: hours unstopped.
  const std::string heavy =
      "SELECT COUNT(*) FROM InvoiceLine a JOIN InvoiceLine b JOIN InvoiceLine c WHERE a.Quantity "
      "+ b.Quantity + c.Quantity > 0";
  const auto start = std::chrono::steady_clock::now();
  auto slow = (*sharded)->Query(heavy, Limits{500, 10, {}});
  ASSERT_FALSE(slow.has_value());
  EXPECT_EQ(slow.error().failure_class, FailureClass::kTimeout) << slow.error().message;
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  auto stopped = (*sharded)->Query(heavy, Limits{60000, 10, stop.get_token()});
  ASSERT_FALSE(stopped.has_value());
  EXPECT_EQ(stopped.error().code, Error::Code::kCancelled) << stopped.error().message;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_LT(ms, 20000);
  // Nothing still runs on the main server, and the shards' part ends with it.
  const std::string running =
      "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND ID <> "
      "CONNECTION_ID() AND INFO LIKE '%InvoiceLine%'";
  std::string left_main, left1, left2;
  for (int i = 0; i < 50; ++i) {
    left_main = m.Rows("Chinook", running)[0][0].value_or("?");
    left1 = shard1_->server().Rows("Chinook", running)[0][0].value_or("?");
    left2 = shard2_->server().Rows("Chinook", running)[0][0].value_or("?");
    if (left_main == "0" && left1 == "0" && left2 == "0") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(left_main, "0");
  EXPECT_EQ(left1, "0");
  EXPECT_EQ(left2, "0");
  auto next = (*sharded)->Query("SELECT COUNT(*) FROM InvoiceLine", Limits{});
  ASSERT_TRUE(next.has_value()) << next.error().message;
  EXPECT_EQ(next->rows[0][0], "2240");
}

}  // namespace
}  // namespace quarry::engine
