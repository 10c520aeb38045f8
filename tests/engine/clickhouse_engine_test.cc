// The ClickHouse engine against a real ClickHouse 18.16 over HTTP (tests/support/
// clickhouse_server.h): URLs and where passwords come from, the guard in its layers (the hostile
// corpus tests/engine/clickhouse_hostile.txt refused by the text rules, and sent past them,
// refused or defused by readonly=1 and the limits, with every table's checksum unchanged),
// timeouts and stops that reach the server (KILL QUERY), a user whose profile refuses settings,
// cards (system.tables, system.columns, system.parts; a Distributed table over two shards),
// exact values and the export for Python.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <stop_token>
#include <thread>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "engine/engine_lookup.h"
#include "support/clickhouse_server.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::test::SharedClickHouseServer;

std::vector<quarry::testing::HostileStatement> Corpus() {
  return quarry::testing::ReadHostileCorpus(quarry::testing::SourceDir() /
                                            "tests/engine/clickhouse_hostile.txt");
}

int64_t Millis(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

// No query but this check's own is still running on the server.
void ExpectNothingRunning(const test::ClickHouseServer& ch) {
  std::vector<std::vector<std::optional<std::string>>> left;
  for (int i = 0; i < 40; ++i) {
    left = ch.Rows("SELECT query FROM system.processes WHERE query NOT LIKE '%system.processes%'");
    if (left.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "still running on the server: " << left[0][0].value_or("");
}

TEST(ClickHouseSpec, UrlsPasswordsAndRedaction) {
  EXPECT_TRUE(IsServerSpec("clickhouse://reader@db:8123/shop"));
  EXPECT_TRUE(IsServerSpec("ClickHouse+HTTPS://reader@db/shop"));
  EXPECT_EQ(ServerDialect("clickhouse+http://db/shop"), Dialect::kClickHouse);
  EXPECT_FALSE(IsServerSpec("clickhouse.csv"));
  for (const char* bad :
       {"clickhouse://reader:hunter2@db/shop", "clickhouse://reader@db/shop?password=hunter2"}) {
    auto opened = Open({bad}, NoProfile());
    ASSERT_FALSE(opened.has_value()) << bad;
    EXPECT_EQ(opened.error().code, Error::Code::kUsage);
    EXPECT_NE(opened.error().message.find("CLICKHOUSE_PASSWORD"), std::string::npos);
    EXPECT_EQ(opened.error().message.find("hunter2"), std::string::npos) << opened.error().message;
  }
  auto unknown = Open({"clickhouse://reader@db/shop?compress=1"}, NoProfile());
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("'compress'"), std::string::npos)
      << unknown.error().message;
  auto bad_port = Open({"clickhouse://reader@db:99999/shop"}, NoProfile());
  ASSERT_FALSE(bad_port.has_value());
  EXPECT_NE(bad_port.error().message.find("port"), std::string::npos);
  // The user and database default as clickhouse-client's do; the port is HTTP's.
  EXPECT_EQ(internal::RedactServerSpec("clickhouse://127.0.0.1"),
            "clickhouse://default@127.0.0.1/default");
  EXPECT_EQ(internal::RedactServerSpec("clickhouse+https://r@h:8443/db"),
            "clickhouse+https://r@h:8443/db");
  EXPECT_EQ(internal::RedactServerSpec("clickhouse://r:secret@h/db"), "clickhouse://…");
  // What no server URL holds: a fragment (what follows '#' is not repeated), a parameter twice,
  // a scheme quarry does not read (not taken for a missing file).
  auto fragment = Open({"clickhouse://reader@db/shop#hunter2"}, NoProfile());
  ASSERT_FALSE(fragment.has_value());
  EXPECT_EQ(fragment.error().code, Error::Code::kUsage);
  EXPECT_EQ(fragment.error().message.find("hunter2"), std::string::npos);
  auto twice = Open({"mysql://reader@localhost/shop?socket=/a&socket=/b"}, NoProfile());
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().message.find("'socket' is given twice"), std::string::npos)
      << twice.error().message;
  auto scheme = Open({"clickhouse+ftp://db/shop"}, NoProfile());
  ASSERT_FALSE(scheme.has_value());
  EXPECT_EQ(scheme.error().code, Error::Code::kUsage);
  EXPECT_NE(scheme.error().message.find("does not read clickhouse+ftp:// URLs"), std::string::npos)
      << scheme.error().message;
  // Nothing listens on port 1: a clear error naming the server, not a crash.
  auto down = Open({"clickhouse://reader@127.0.0.1:1/db"}, NoProfile());
  ASSERT_FALSE(down.has_value());
  EXPECT_EQ(down.error().code, Error::Code::kData);
  EXPECT_NE(down.error().message.find("clickhouse://reader@127.0.0.1:1/db"), std::string::npos)
      << down.error().message;
}

TEST(ClickHouseSpec, PasswordComesFromTheEnvironmentAndIsNeverShown) {
  const auto& ch = SharedClickHouseServer();
  ::unsetenv("CLICKHOUSE_PASSWORD");
  auto none = Open({ch.Url("Chinook", "pwuser")}, NoProfile());
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("CLICKHOUSE_PASSWORD"), std::string::npos)
      << none.error().message;
  ::setenv("CLICKHOUSE_PASSWORD", "ch-test-secret", 1);
  auto opened = Open({ch.Url("Chinook", "pwuser")}, NoProfile());
  ::unsetenv("CLICKHOUSE_PASSWORD");
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  auto counted = (*opened)->Query("SELECT count() FROM Track", Limits{});
  ASSERT_TRUE(counted.has_value()) << counted.error().message;
  EXPECT_EQ(counted->rows[0][0], "3503");
  for (const auto& s : (*opened)->sources()) {
    EXPECT_EQ(s.path.find("ch-test-secret"), std::string::npos);
    for (const auto& n : s.notes) EXPECT_EQ(n.find("ch-test-secret"), std::string::npos);
  }
}

TEST(ClickHouseGuard, TextRulesRefuseTheCorpusAndPassHonestQueries) {
  const auto corpus = Corpus();
  ASSERT_GE(corpus.size(), 60u);
  for (const auto& h : corpus) {
    const auto v = CheckQueryText(h.sql, Dialect::kClickHouse, {"Genre"});
    ASSERT_TRUE(v.has_value()) << "passed the guard: " << h.sql;
    EXPECT_EQ(v->failure_class, FailureClass::kGuardViolation) << h.sql;
    EXPECT_EQ(v->rule, h.rule) << h.sql << "\n" << v->message;
  }
  // What reads like a trick but is one honest query, by ClickHouse's own rules.
  for (const char* honest :
       {"SELECT 1--1", "SELECT '\\'; DROP TABLE Genre; -- '", "SELECT 'it''s', 'a;b'",
        "SELECT `Name`, \"GenreId\" FROM Genre", "SELECT 1 /* a plain comment; DROP */",
        "SELECT format, settings FROM t", "SELECT formatDateTime(now(), '%Y')",
        "SELECT Name FROM Genre WHERE Name LIKE '%url(%'", "SELECT '# not a comment'",
        "SELECT toStartOfMonth(InvoiceDate) AS m, sum(Total) FROM Invoice GROUP BY m ORDER BY m",
        "SELECT count() FROM InvoiceLine WHERE TrackId GLOBAL IN (SELECT TrackId FROM Track)",
        "WITH 2 AS k SELECT k * 2", "(SELECT 1)", "SELECT arrayJoin([1, 2, 3])",
        "SELECT $$a 'quoted' ; text$$", "SELECT 1 # DROP TABLE Genre"}) {
    EXPECT_EQ(CheckQueryText(honest, Dialect::kClickHouse, {"Genre"}), std::nullopt) << honest;
  }
  // A block comment that opens another is read differently by servers that nest them: refused
  // unread, as an unclosed one is.
  for (const char* unread : {"SELECT 1 /* a /* b */ ; DROP TABLE Genre */", "SELECT 1 /* open",
                             "SELECT $x$ never closed"}) {
    const auto v = CheckQueryText(unread, Dialect::kClickHouse, {"Genre"});
    ASSERT_TRUE(v.has_value()) << unread;
    EXPECT_EQ(v->failure_class, FailureClass::kSyntaxError) << unread;
  }
}

TEST(ClickHouseGuard, HostileCorpusRefusedTwiceDataUnchanged) {
  const auto& ch = SharedClickHouseServer();
  std::map<std::string, std::map<std::string, std::string>> before;
  for (const char* db : {"Chinook", "ChinookSharded", "shard1", "shard2"}) {
    before[db] = ch.TableChecksums(db);
  }
  ASSERT_EQ(before["Chinook"].size(), 11u);
  ASSERT_EQ(before["ChinookSharded"].size(), 11u);
  const auto databases = ch.Rows("SELECT name FROM system.databases ORDER BY name");
  // Past the guard twice: as the recommended user (its profile has readonly=1), and as one who
  // may write, whose queries carry readonly=1.
  for (const char* user : {"reader", "default"}) {
    SCOPED_TRACE(user);
    auto opened = Open({ch.Url("Chinook", user)}, NoProfile());
    ASSERT_TRUE(opened.has_value()) << opened.error().message;
    Engine& engine = **opened;
    int refused_by_server = 0, allowed = 0, refused_listed = 0;
    for (const auto& h : Corpus()) {
      refused_listed += h.refused() ? 1 : 0;
      auto guarded = engine.Query(h.sql, Limits{});
      ASSERT_FALSE(guarded.has_value()) << "ran: " << h.sql;
      EXPECT_EQ(guarded.error().rule, h.rule) << h.sql;
      const auto start = std::chrono::steady_clock::now();
      auto past = internal::QueryClickHousePastTextGuard(engine, h.sql, Limits{2000, 10, {}});
      if (h.refused()) {
        EXPECT_FALSE(past.has_value()) << "the server ran: " << h.sql;
        refused_by_server += past.has_value() ? 0 : 1;
      } else if (h.server == "defused") {
        // It read, or waited: ended by itself or by the time limit, well before 10 s.
        if (!past.has_value()) {
          EXPECT_EQ(past.error().failure_class, FailureClass::kTimeout)
              << h.sql << ": " << past.error().message;
        }
        EXPECT_LT(Millis(start), 10000) << h.sql;
      } else {
        ++allowed;
      }
    }
    EXPECT_EQ(refused_by_server, refused_listed);
    EXPECT_GE(refused_listed, 59);
    EXPECT_EQ(allowed, 1);
  }
  for (const char* db : {"Chinook", "ChinookSharded", "shard1", "shard2"}) {
    EXPECT_EQ(ch.TableChecksums(db), before[db]) << db;
  }
  EXPECT_EQ(ch.Rows("SELECT name FROM system.databases ORDER BY name"), databases);
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists("/tmp/quarry-stolen.tsv", ec));
  ExpectNothingRunning(ch);
}

// An unstopped count over system.numbers runs for hours; 10 s proves the stop without timing
// the machine.
constexpr int64_t kFarUnderTheUnstoppedRunMs = 10000;
constexpr const char* kEndless = "SELECT count() FROM system.numbers";

TEST(ClickHouseEngine, TimeoutAndStopEndTheQueryOnTheServer) {
  const auto& ch = SharedClickHouseServer();
  auto opened = Open({ch.Url()}, NoProfile());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Engine& engine = **opened;
  auto start = std::chrono::steady_clock::now();
  auto slow = engine.Query(kEndless, Limits{500, 10, {}});
  ASSERT_FALSE(slow.has_value());
  EXPECT_EQ(slow.error().failure_class, FailureClass::kTimeout) << slow.error().message;
  EXPECT_LT(Millis(start), kFarUnderTheUnstoppedRunMs);
  ExpectNothingRunning(ch);

  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  start = std::chrono::steady_clock::now();
  auto stopped = engine.Query(kEndless, Limits{60000, 10, stop.get_token()});
  ASSERT_FALSE(stopped.has_value());
  EXPECT_EQ(stopped.error().code, Error::Code::kCancelled) << stopped.error().message;
  EXPECT_LT(Millis(start), kFarUnderTheUnstoppedRunMs);
  ExpectNothingRunning(ch);
  auto next = engine.Query("SELECT count() FROM Track", Limits{});
  ASSERT_TRUE(next.has_value()) << next.error().message;
  EXPECT_EQ(next->rows[0][0], "3503");
}

TEST(ClickHouseEngine, EveryProfileIsStoppedAndTheRiskyOnesAreSaid) {
  const auto& ch = SharedClickHouseServer();
  // user -> what the source note says ("" for none): readonly=1 with a time limit is the
  // recommended profile; readonly=1 without one, readonly=2 and a user who may write are said.
  const std::vector<std::pair<std::string, std::string>> users = {
      {"reader", ""},
      {"bareuser", "no max_execution_time"},
      {"twouser", "readonly=2"},
      {"default", "may write"}};
  for (const auto& [user, said] : users) {
    SCOPED_TRACE(user);
    auto opened = Open({ch.Url("Chinook", user)}, NoProfile());
    ASSERT_TRUE(opened.has_value()) << opened.error().message;
    Engine& engine = **opened;
    ASSERT_EQ(engine.sources().size(), 1u);
    const auto& notes = engine.sources()[0].notes;
    if (said.empty()) {
      EXPECT_TRUE(notes.empty()) << notes[0];
    } else {
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_NE(notes[0].find(said), std::string::npos) << notes[0];
    }
    auto counted = engine.Query("SELECT count() FROM Track", Limits{});
    ASSERT_TRUE(counted.has_value()) << counted.error().message;
    EXPECT_EQ(counted->rows[0][0], "3503");
    // Whether the limits reach the server or not, the query ends (KILL QUERY at the latest).
    const auto start = std::chrono::steady_clock::now();
    auto slow = engine.Query(kEndless, Limits{500, 10, {}});
    ASSERT_FALSE(slow.has_value());
    EXPECT_EQ(slow.error().failure_class, FailureClass::kTimeout) << slow.error().message;
    EXPECT_LT(Millis(start), kFarUnderTheUnstoppedRunMs);
    ExpectNothingRunning(ch);
    auto write = internal::QueryClickHousePastTextGuard(engine, "DROP TABLE Genre", Limits{});
    EXPECT_FALSE(write.has_value());
  }
}

TEST(ClickHouseEngine, CardsFromTheSystemTablesAndTheDistributedTable) {
  const auto& ch = SharedClickHouseServer();
  auto flat = Open({ch.Url()});
  ASSERT_TRUE(flat.has_value()) << flat.error().message;
  EXPECT_EQ((*flat)->dialect(), Dialect::kClickHouse);
  EXPECT_EQ((*flat)->describe().size(), 11u);
  const TableCard* track = Card(**flat, "Track");
  ASSERT_NE(track, nullptr);
  EXPECT_EQ(track->row_count, 3503);
  EXPECT_FALSE(track->estimated);
  const TableCard* invoice = Card(**flat, "Invoice");
  ASSERT_NE(invoice, nullptr);
  for (const auto& col : invoice->columns) {
    if (col.name == "Total") {
      EXPECT_EQ(col.type, "Decimal(10, 2)");
      EXPECT_EQ(col.min, "0.99");
      EXPECT_EQ(col.max, "25.86");
    }
    if (col.name == "BillingState") {
      EXPECT_EQ(col.type, "Nullable(String)");
      EXPECT_EQ(col.null_count, 202);
    }
    if (col.name == "InvoiceDate") {
      EXPECT_EQ(col.min, "2021-01-01 00:00:00");
    }
  }
  auto sharded = Open({ch.Url("ChinookSharded")});
  ASSERT_TRUE(sharded.has_value()) << sharded.error().message;
  const TableCard* lines = Card(**sharded, "InvoiceLine");
  ASSERT_NE(lines, nullptr);
  EXPECT_EQ(lines->row_count, 2240);
  ASSERT_FALSE(lines->notes.empty());
  EXPECT_NE(lines->notes[0].find("Distributed"), std::string::npos) << lines->notes[0];
  // The shards answer together what the flat table answers alone.
  const std::string sql =
      "SELECT count(), sum(UnitPrice * Quantity), uniqExact(InvoiceId) FROM InvoiceLine";
  auto a = (*flat)->Query(sql, Limits{});
  auto b = (*sharded)->Query(sql, Limits{});
  ASSERT_TRUE(a.has_value()) << a.error().message;
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(a->rows, b->rows);
  EXPECT_EQ(b->rows[0][0], "2240");
  EXPECT_EQ(b->rows[0][2], "412");
  // An error names the problem and the way out.
  auto missing = (*flat)->Query("SELECT Nme FROM Genre", Limits{});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("Name"), std::string::npos) << missing.error().message;
  auto no_table = (*flat)->Query("SELECT * FROM Genres", Limits{});
  ASSERT_FALSE(no_table.has_value());
  EXPECT_NE(no_table.error().message.find("Genre"), std::string::npos) << no_table.error().message;
  auto syntax = (*flat)->Query("SELECT FROM WHERE", Limits{});
  ASSERT_FALSE(syntax.has_value());
  EXPECT_EQ(syntax.error().failure_class, FailureClass::kSyntaxError);
}

TEST(ClickHouseEngine, ValuesComeBackExact) {
  const auto& ch = SharedClickHouseServer();
  auto opened = Open({ch.Url("quarry_types")});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  auto r = (*opened)->Query(
      "SELECT id, amount, big, neg, ratio, taken, born, code, size, tags, note FROM measures "
      "ORDER BY id",
      Limits{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->row_count, 4);
  const auto& row1 = r->rows[0];
  EXPECT_EQ(row1[1], "1234567890123456789012345678.0123456789");
  EXPECT_EQ(r->kinds[0][1], CellKind::kDecimal);
  EXPECT_EQ(row1[2], "18446744073709551615");
  EXPECT_EQ(r->kinds[0][2], CellKind::kInteger);
  EXPECT_EQ(row1[3], "-9223372036854775808");
  EXPECT_EQ(row1[4], "0.1");
  EXPECT_EQ(r->kinds[0][4], CellKind::kReal);
  EXPECT_EQ(row1[5], "2024-03-01 12:34:56");
  EXPECT_EQ(row1[6], "2024-02-29");
  // A FixedString pads with NUL: bytes, not text.
  EXPECT_EQ(r->kinds[0][7], CellKind::kBlob);
  EXPECT_EQ(BlobBytes(*row1[7]), std::string("ab\0\0", 4));
  EXPECT_EQ(row1[8], "M");
  EXPECT_EQ(row1[9], "['a','b\\'c']");
  EXPECT_EQ(row1[10], "café ☕");
  EXPECT_EQ(r->types[1], "Nullable(Decimal(38, 10))");
  EXPECT_EQ(r->rows[1][1], "0.0000000001");
  EXPECT_EQ(r->rows[1][4], "inf");
  EXPECT_EQ(r->rows[1][10], "tab\there\nline\\end");
  EXPECT_EQ(r->rows[2][1], std::nullopt);
  EXPECT_EQ(r->kinds[2][1], CellKind::kNull);
  EXPECT_EQ(r->kinds[2][10], CellKind::kBlob);
  EXPECT_EQ(BlobBytes(*r->rows[2][10]), "\xff\xfe");
  EXPECT_EQ(r->rows[3][4], "nan");
  EXPECT_EQ(r->rows[3][1], "-0.5000000000");
  // The row cap keeps the first rows and counts them all.
  auto capped = (*opened)->Query("SELECT id FROM measures ORDER BY id", Limits{10000, 2, {}});
  ASSERT_TRUE(capped.has_value());
  EXPECT_EQ(capped->rows.size(), 2u);
  EXPECT_EQ(capped->row_count, 4);
}

TEST(ClickHouseEngine, ExportForPythonKeepsValuesAndNulls) {
  const auto& ch = SharedClickHouseServer();
  auto opened = Open({ch.Url("quarry_types")}, NoProfile());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  quarry::testing::TempDir dir;
  auto exported = ExportTables(**opened, dir.path(), 1000);
  ASSERT_TRUE(exported.has_value()) << exported.error().message;
  ASSERT_EQ(exported->size(), 1u);
  EXPECT_EQ((*exported)[0].rows_written, 4);
  std::ifstream in((*exported)[0].path);
  const std::string csv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(csv.find("1234567890123456789012345678.0123456789"), std::string::npos) << csv;
  EXPECT_NE(csv.find(std::string(kExportNull)), std::string::npos);
  EXPECT_NE(csv.find("\"café ☕\""), std::string::npos);
}

}  // namespace
}  // namespace quarry::engine
