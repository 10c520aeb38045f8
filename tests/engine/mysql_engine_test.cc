// The MySQL-protocol engine against a real MariaDB 10.11 (tests/support/mariadb_server.h): URLs
// and where passwords come from, the guard in its layers (the hostile corpus
// tests/engine/mysql_hostile.txt refused by the text rules, and sent past them, refused or
// defused by the server's own layers, with every table's checksum unchanged), timeouts and stops
// that reach the server, cards, exact values and the export for Python.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <stop_token>
#include <thread>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "engine/engine_lookup.h"
#include "support/mariadb_server.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::test::SharedMariaDbServer;

std::vector<quarry::testing::HostileStatement> Corpus() {
  return quarry::testing::ReadHostileCorpus(quarry::testing::SourceDir() /
                                            "tests/engine/mysql_hostile.txt");
}

TEST(MySqlSpec, UrlsPasswordsAndRedaction) {
  EXPECT_TRUE(IsServerSpec("mysql://reader@db:3306/shop"));
  EXPECT_TRUE(IsServerSpec("MariaDB://reader@db/shop"));
  EXPECT_FALSE(IsServerSpec("mysql.csv"));
  for (const char* bad :
       {"mysql://reader:hunter2@db/shop", "mysql://reader@db/shop?password=hunter2"}) {
    auto opened = Open({bad}, NoProfile());
    ASSERT_FALSE(opened.has_value()) << bad;
    EXPECT_EQ(opened.error().code, Error::Code::kUsage);
    EXPECT_NE(opened.error().message.find("MYSQL_PWD"), std::string::npos);
    EXPECT_EQ(opened.error().message.find("hunter2"), std::string::npos) << opened.error().message;
  }
  auto no_db = Open({"mysql://reader@db:3306"}, NoProfile());
  ASSERT_FALSE(no_db.has_value());
  EXPECT_NE(no_db.error().message.find("names no database"), std::string::npos);
  auto unknown = Open({"mysql://reader@db/shop?sslmode=off"}, NoProfile());
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("'sslmode'"), std::string::npos)
      << unknown.error().message;
  EXPECT_EQ(internal::RedactServerSpec("mysql://reader@127.0.0.1:3307/shop"),
            "mysql://reader@127.0.0.1:3307/shop");
  EXPECT_EQ(internal::RedactServerSpec("mysql://reader:secret@h/shop"), "mysql://…");
  EXPECT_EQ(CheckQueryText("SELECT 1", Dialect::kMySQL, {}), std::nullopt);
}

TEST(MySqlGuard, TextRulesRefuseTheCorpusAndPassHonestQueries) {
  const auto corpus = Corpus();
  ASSERT_GE(corpus.size(), 65u);
  for (const quarry::testing::HostileStatement& h : corpus) {
    const auto v = CheckQueryText(h.sql, Dialect::kMySQL, {"Genre"});
    ASSERT_TRUE(v.has_value()) << "passed the guard: " << h.sql;
    EXPECT_EQ(v->failure_class, FailureClass::kGuardViolation) << h.sql;
    EXPECT_EQ(v->rule, h.rule) << h.sql << "\n" << v->message;
  }
  // What reads like a trick but is one honest query: MySQL's own comment and escape rules.
  for (const char* honest :
       {"SELECT 1--1", "SELECT '\\'; DELETE FROM Genre; -- '", "SELECT \"a\\\"; DELETE\"",
        "SELECT 'it''s'", "SELECT `Name` FROM `Genre` WHERE `Name` = \"Rock\"",
        "SELECT 1 /* a plain comment; DELETE */", "SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1",
        "SELECT REPLACE(Name, 'a', 'b') FROM Genre", "SELECT Name FROM Genre WHERE Name LIKE '%#%'",
        "SELECT 1 # DELETE FROM Genre", "SELECT 1 -- ; DELETE FROM Genre",
        "WITH g AS (SELECT * FROM Genre) SELECT COUNT(*) FROM g", "(SELECT 1)"}) {
    EXPECT_EQ(CheckQueryText(honest, Dialect::kMySQL, {"Genre"}), std::nullopt) << honest;
  }
  // Executable comments the guard cannot read the way both servers do are refused unread.
  for (const char* unread : {"SELECT 1 /*!5000 , 2 */", "SELECT 1 /*!500000 , 2 */",
                             "SELECT 1 /*! /* nested */ 2 */", "SELECT 1 /*! 2"}) {
    const auto v = CheckQueryText(unread, Dialect::kMySQL, {"Genre"});
    ASSERT_TRUE(v.has_value()) << unread;
    EXPECT_EQ(v->failure_class, FailureClass::kSyntaxError) << unread;
  }
}

TEST(MySqlGuard, HostileCorpusRefusedTwiceDatabaseUnchanged) {
  const auto& my = SharedMariaDbServer();
  const auto before = my.TableChecksums("Chinook");
  ASSERT_EQ(before.size(), 11u);
  // Past the guard as the user who may write: the server's layers must hold on their own.
  auto opened = Open({my.Url("Chinook", "writer")}, NoProfile());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Engine& engine = **opened;
  int refused_by_server = 0;
  for (const quarry::testing::HostileStatement& h : Corpus()) {
    auto guarded = engine.Query(h.sql, Limits{});
    ASSERT_FALSE(guarded.has_value()) << "ran: " << h.sql;
    EXPECT_EQ(guarded.error().rule, h.rule) << h.sql;
    auto past = internal::QueryMySqlPastTextGuard(engine, h.sql, Limits{1000, 10, {}});
    if (h.refused()) {
      EXPECT_FALSE(past.has_value()) << "the server ran: " << h.sql;
      refused_by_server += past.has_value() ? 0 : 1;
    }
    // Whatever happened, the session is back to quarry's: read-only, no variable, no lock.
    auto state = engine.Query(
        "SELECT @@SESSION.tx_read_only, @stolen, @@SESSION.time_zone, "
        "@@character_set_client",
        Limits{});
    ASSERT_TRUE(state.has_value()) << h.sql << ": " << state.error().message;
    EXPECT_EQ(state->rows[0][0], "1") << h.sql;
    EXPECT_EQ(state->rows[0][1], std::nullopt) << h.sql;
    EXPECT_EQ(state->rows[0][2], "+00:00") << h.sql;
    EXPECT_EQ(state->rows[0][3], "utf8mb4") << h.sql;
  }
  EXPECT_GE(refused_by_server, 44);
  EXPECT_EQ(my.TableChecksums("Chinook"), before);
  EXPECT_EQ(my.Rows("Chinook", "SELECT IS_FREE_LOCK('quarry-held')")[0][0], "1");
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists("/tmp/quarry-stolen.csv", ec));
  EXPECT_FALSE(std::filesystem::exists("/tmp/quarry-stolen.bin", ec));
}

// SLEEP(30) and a heavy BENCHMARK run 30 s or more unstopped; a bound of 10 s proves the stop
// without timing the machine.
constexpr int64_t kFarUnderTheUnstoppedRunMs = 10000;

TEST(MySqlGuard, TimeoutAndStopReachTheServer) {
  const auto& my = SharedMariaDbServer();
  auto opened = Open({my.Url()}, NoProfile());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Engine& engine = **opened;
  const std::string heavy = "SELECT BENCHMARK(5000000000, MD5('x'))";
  for (const std::string& sql : {std::string("SELECT SLEEP(30)"), heavy}) {
    const auto start = std::chrono::steady_clock::now();
    auto slow = internal::QueryMySqlPastTextGuard(engine, sql, Limits{300, 10, {}});
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    // SLEEP cut short by the time limit returns 1 rather than failing: either way, not 30 s.
    if (!slow.has_value()) {
      EXPECT_EQ(slow.error().failure_class, FailureClass::kTimeout) << slow.error().message;
    }
    EXPECT_LT(ms, kFarUnderTheUnstoppedRunMs) << sql;
    auto next = engine.Query("SELECT COUNT(*) FROM Track", Limits{});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ(next->rows[0][0], "3503");
  }
  for (const std::string& sql : {std::string("SELECT SLEEP(30)"), heavy}) {
    std::stop_source stop;
    std::jthread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop.request_stop();
    });
    const auto start = std::chrono::steady_clock::now();
    auto stopped =
        internal::QueryMySqlPastTextGuard(engine, sql, Limits{60000, 10, stop.get_token()});
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    ASSERT_FALSE(stopped.has_value()) << sql;
    EXPECT_EQ(stopped.error().code, Error::Code::kCancelled) << stopped.error().message;
    EXPECT_LT(ms, kFarUnderTheUnstoppedRunMs) << sql;
    // The server really stopped it: no session still runs it.
    EXPECT_EQ(my.Rows("Chinook",
                      "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE "
                      "'%BENCHMARK(5000000000%' AND ID <> CONNECTION_ID()")[0][0],
              "0");
    auto next = engine.Query("SELECT COUNT(*) FROM Genre", Limits{});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ(next->rows[0][0], "25");
  }
}

TEST(MySqlEngine, ChinookCardsAndAnswersLikeSqlite) {
  const auto& my = SharedMariaDbServer();
  auto opened = Open({my.Url()});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Engine& engine = **opened;
  EXPECT_EQ(engine.dialect(), Dialect::kMySQL);
  ASSERT_EQ(engine.sources().size(), 1u);
  EXPECT_EQ(engine.sources()[0].format, SourceFormat::kMySql);
  EXPECT_EQ(engine.sources()[0].path.rfind("mysql://reader@localhost/Chinook?socket=", 0), 0u);
  EXPECT_TRUE(engine.sources()[0].notes.empty());  // reader may not write
  ASSERT_EQ(engine.describe().size(), 11u);
  const TableCard* track = Card(engine, "Track");
  ASSERT_NE(track, nullptr);
  EXPECT_EQ(track->row_count, 3503);
  EXPECT_FALSE(track->estimated);
  const ColumnCard* price = Column(*track, "UnitPrice");
  ASSERT_NE(price, nullptr);
  EXPECT_EQ(price->type, "DECIMAL(10,2) NOT NULL");
  EXPECT_EQ(price->min, "0.99");
  EXPECT_EQ(price->max, "1.99");
  EXPECT_EQ(price->distinct_count, 2);
  const ColumnCard* id = Column(*track, "TrackId");
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->type, "INT PRIMARY KEY");
  bool album_key = false;
  for (const auto& fk : track->foreign_keys) {
    album_key = album_key ||
                (fk.column == "AlbumId" && fk.ref_table == "Album" && fk.ref_column == "AlbumId");
  }
  EXPECT_TRUE(album_key);
  // The same figures as SQLite's Chinook, exact decimals included.
  auto total = engine.Query("SELECT SUM(Total), COUNT(*) FROM Invoice", Limits{});
  ASSERT_TRUE(total.has_value()) << total.error().message;
  EXPECT_EQ(total->rows[0][0], "2328.60");
  EXPECT_EQ(total->kinds[0][0], CellKind::kDecimal);
  EXPECT_EQ(total->rows[0][1], "412");
  EXPECT_EQ(total->kinds[0][1], CellKind::kInteger);
  auto missing = engine.Query("SELECT Titel FROM Album", Limits{});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("Title"), std::string::npos) << missing.error().message;
  auto no_table = engine.Query("SELECT * FROM Tracks", Limits{});
  ASSERT_FALSE(no_table.has_value());
  EXPECT_NE(no_table.error().message.find("Track"), std::string::npos);
  auto syntax = engine.Query("SELECT FROM Track", Limits{});
  ASSERT_FALSE(syntax.has_value());
  EXPECT_EQ(syntax.error().failure_class, FailureClass::kSyntaxError);
  auto capped = engine.Query("SELECT TrackId FROM Track ORDER BY TrackId", Limits{10000, 5, {}});
  ASSERT_TRUE(capped.has_value());
  EXPECT_EQ(capped->rows.size(), 5u);
  EXPECT_EQ(capped->row_count, 3503);
}

TEST(MySqlEngine, AnalyzedTablesTakeTheServersStatisticsOthersASample) {
  const auto& my = SharedMariaDbServer();
  auto opened = Open({my.Url("quarry_types")});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  // reader may read mysql.column_stats: the analyzed table is described without being read.
  const TableCard* analyzed = Card(**opened, "analyzed");
  ASSERT_NE(analyzed, nullptr);
  EXPECT_TRUE(analyzed->estimated);
  EXPECT_GT(analyzed->row_count, 15000);
  EXPECT_LT(analyzed->row_count, 25000);
  ASSERT_FALSE(analyzed->notes.empty());
  EXPECT_NE(analyzed->notes[0].find("mysql.column_stats"), std::string::npos) << analyzed->notes[0];
  const ColumnCard* id = Column(*analyzed, "id");
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->min, "1");
  EXPECT_EQ(id->max, "20000");  // the whole table's, which a sample of 10,000 would not see
  EXPECT_TRUE(id->distinct_approx);
  const ColumnCard* amount = Column(*analyzed, "amount");
  ASSERT_NE(amount, nullptr);
  const auto rows = static_cast<double>(analyzed->row_count);
  EXPECT_NEAR(static_cast<double>(amount->null_count), 0.1 * rows, 0.02 * rows);
  const ColumnCard* grp = Column(*analyzed, "grp");
  ASSERT_NE(grp, nullptr);
  EXPECT_EQ(grp->distinct_count, 7);
  // Without statistics the sample describes it, and the index's cardinality gives the distinct
  // count the first 10,000 rows could only floor.
  const TableCard* sampled = Card(**opened, "unanalyzed");
  ASSERT_NE(sampled, nullptr);
  ASSERT_FALSE(sampled->notes.empty());
  EXPECT_NE(sampled->notes[0].find("from the first 10000 rows only"), std::string::npos)
      << sampled->notes[0];
  const ColumnCard* sampled_id = Column(*sampled, "id");
  ASSERT_NE(sampled_id, nullptr);
  EXPECT_EQ(sampled_id->max, "10000");
  EXPECT_TRUE(sampled_id->distinct_approx);
  EXPECT_GT(sampled_id->distinct_count, 15000);
  // A user without SELECT on mysql.column_stats gets the sample for both.
  auto writer = Open({my.Url("quarry_types", "writer")});
  ASSERT_TRUE(writer.has_value()) << writer.error().message;
  const TableCard* as_writer = Card(**writer, "analyzed");
  ASSERT_NE(as_writer, nullptr);
  ASSERT_FALSE(as_writer->notes.empty());
  EXPECT_NE(as_writer->notes[0].find("from the first 10000 rows only"), std::string::npos);
}

TEST(MySqlEngine, ValuesExactZeroDatesNoted) {
  const auto& my = SharedMariaDbServer();
  auto opened = Open({my.Url("quarry_types")});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Engine& engine = **opened;
  auto r = engine.Query(
      "SELECT amount, big, ratio, taken, stamped, flags, doc, size, tags, raw, born, note "
      "FROM measures ORDER BY id",
      Limits{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->rows.size(), 4u);
  const auto& exact = r->rows[0];
  EXPECT_EQ(exact[0], "12345678901234567890.0123456789");
  EXPECT_EQ(r->kinds[0][0], CellKind::kDecimal);
  EXPECT_EQ(r->types[0], "DECIMAL(30,10)");
  EXPECT_EQ(exact[1], "18446744073709551615");
  EXPECT_EQ(r->kinds[0][1], CellKind::kInteger);
  EXPECT_EQ(r->types[1], "BIGINT UNSIGNED");
  EXPECT_EQ(exact[2], "0.1");
  EXPECT_EQ(r->kinds[0][2], CellKind::kReal);
  EXPECT_EQ(exact[3], "2024-03-01 12:34:56.789012");
  EXPECT_EQ(exact[4], "2024-03-01 12:34:56.789");  // UTC: the session's time zone
  EXPECT_EQ(exact[5], "165");                      // b'10100101'
  EXPECT_EQ(r->kinds[0][5], CellKind::kInteger);
  EXPECT_EQ(exact[6], "{\"k\": [1, 2.5, \"x\"]}");
  EXPECT_EQ(exact[7], "M");
  EXPECT_EQ(exact[8], "red,blue");
  EXPECT_EQ(exact[9], "\\xDE\\xAD\\xBE\\xEF");
  EXPECT_EQ(r->kinds[0][9], CellKind::kBlob);
  EXPECT_EQ(exact[10], "2024-02-29");
  EXPECT_EQ(exact[11], "café ☕");
  const auto& zero = r->rows[1];
  EXPECT_EQ(zero[1], "0");
  EXPECT_EQ(zero[2], "-1.5e+300");
  EXPECT_EQ(zero[3], "0000-00-00 00:00:00.000000");  // the server's "no date", never a wrong date
  EXPECT_EQ(zero[10], "0000-00-00");
  EXPECT_EQ(zero[9], "");
  EXPECT_EQ(r->rows[3][1], "9223372036854775808");
  EXPECT_EQ(r->rows[3][10], "2024-05-00");
  const TableCard* card = Card(engine, "measures");
  ASSERT_NE(card, nullptr);
  EXPECT_EQ(card->row_count, 4);
  const ColumnCard* born = Column(*card, "born");
  ASSERT_NE(born, nullptr);
  EXPECT_EQ(born->min, "2024-02-29");
  EXPECT_EQ(born->max, "2024-05-00");
  std::string notes;
  for (const auto& n : born->notes) notes += n + "\n";
  EXPECT_NE(notes.find("1 rows hold the zero date '0000-00-00'"), std::string::npos) << notes;
  EXPECT_NE(notes.find("zero month or day"), std::string::npos) << notes;
  const ColumnCard* stamped = Column(*card, "stamped");
  ASSERT_NE(stamped, nullptr);
  ASSERT_FALSE(stamped->notes.empty());
  EXPECT_NE(stamped->notes[0].find("UTC"), std::string::npos);
  const ColumnCard* size = Column(*card, "size");
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(size->type, "ENUM('S','M','L')");
}

TEST(MySqlEngine, PasswordFromTheEnvironmentAndAWritingUserNoted) {
  const auto& my = SharedMariaDbServer();
  ::unsetenv("MYSQL_PWD");
  auto refused = Open({my.Url("Chinook", "pwuser")}, NoProfile());
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("MYSQL_PWD"), std::string::npos)
      << refused.error().message;
  ::setenv("MYSQL_PWD", "my-test-secret", 1);
  auto opened = Open({my.Url("Chinook", "pwuser")}, NoProfile());
  ::unsetenv("MYSQL_PWD");
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  EXPECT_EQ(opened->get()->sources()[0].path.find("my-test-secret"), std::string::npos);
  auto writer = Open({my.Url("Chinook", "writer")}, NoProfile());
  ASSERT_TRUE(writer.has_value()) << writer.error().message;
  ASSERT_EQ(writer->get()->sources()[0].notes.size(), 1u);
  EXPECT_NE(writer->get()->sources()[0].notes[0].find("the user writer may write"),
            std::string::npos)
      << writer->get()->sources()[0].notes[0];
}

TEST(MySqlEngine, ExportForPythonIsEveryTableWithTrueCounts) {
  const auto& my = SharedMariaDbServer();
  auto opened = Open({my.Url()}, NoProfile());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  const quarry::testing::TempDir dir;
  auto exported = ExportTables(**opened, dir.path(), 1000);
  ASSERT_TRUE(exported.has_value()) << exported.error().message;
  ASSERT_EQ(exported->size(), 11u);
  for (const auto& e : *exported) {
    if (e.table == "Track") {
      EXPECT_EQ(e.rows_written, 1000);
      EXPECT_EQ(e.row_count, 3503);
    }
    if (e.table == "Genre") {
      EXPECT_EQ(e.rows_written, 25);
      std::ifstream in(e.path);
      std::string header, first;
      std::getline(in, header);
      std::getline(in, first);
      EXPECT_EQ(header, "\"GenreId\",\"Name\"");
      EXPECT_EQ(first, "1,\"Rock\"");
    }
  }
}

}  // namespace
}  // namespace quarry::engine
