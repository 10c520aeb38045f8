// Bad input to Open(): each case is a one-line kData/kUsage error naming the file and what to
// do, and nothing is written next to the user's data.
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

#include <duckdb.h>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::testing::TempDir;

class OpenTest : public ::testing::Test {
 protected:
  void ExpectError(const std::filesystem::path& p, const std::string& fragment) {
    const auto before = quarry::testing::DirectoryFingerprint(tmp_.path());
    auto r = Open({p});
    ASSERT_FALSE(r.has_value()) << p;
    EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << "not one line";
    EXPECT_EQ(quarry::testing::DirectoryFingerprint(tmp_.path()), before);
  }
  TempDir tmp_;
};

TEST_F(OpenTest, MissingFile) { ExpectError(tmp_.path() / "nope.csv", "not found"); }

TEST_F(OpenTest, UnsupportedExtension) {
  ExpectError(tmp_.Write("notes.ods", "x"), "unsupported file type");
  ExpectError(tmp_.Write("notes.xlsb", "x"), "(save this workbook as .xlsx and ask again)");
  // A workbook's extension that is no workbook says so, with what to do.
  ExpectError(tmp_.Write("notes.xlsx", "x"), "is not a readable .xlsx workbook");
}

// A folder stands for the data files directly in it, sorted; what is skipped is said.
TEST_F(OpenTest, AFolderExpandsToItsDataFilesAndSaysWhatItSkipped) {
  const auto dir = tmp_.path() / "shop";
  std::filesystem::create_directories(dir / "sub");
  for (const char* name : {"orders.csv", "b.tsv", ".hidden.csv", "README.md"}) {
    std::ofstream(dir / name) << "id\n1\n";
  }
  std::ofstream(dir / "sub" / "deep.csv") << "id\n1\n";
  // Empty files hold no table: skipped and named, and the rest are read.
  std::ofstream(dir / "zero.parquet");
  std::ofstream(dir / "empty.csv");
  const auto file = tmp_.Write("alone.csv", "id\n1\n");
  std::vector<std::string> notes;
  auto paths = ExpandFolders({file, dir}, &notes);
  ASSERT_TRUE(paths) << paths.error().message;
  EXPECT_EQ(*paths, (std::vector<std::filesystem::path>{file, dir / "b.tsv", dir / "orders.csv"}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "folder " + dir.string() +
                          ": reading 2 data file(s); skipped 2 that are not data (README.md, sub); "
                          "skipped 2 empty (empty.csv, zero.parquet)");
  auto engine = Open(*paths);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_EQ((*engine)->describe().size(), 3u);

  std::filesystem::create_directories(tmp_.path() / "empty");
  std::ofstream(tmp_.path() / "empty" / "notes.txt") << "x";
  auto none = ExpandFolders({tmp_.path() / "empty"}, nullptr);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Error::Code::kData);
  EXPECT_NE(none.error().message.find("holds no data file quarry reads (.csv"), std::string::npos);
}

TEST_F(OpenTest, EmptyFile) { ExpectError(tmp_.Write("empty.csv", ""), "is empty"); }

TEST_F(OpenTest, HeaderOnlyCsv) {
  ExpectError(tmp_.Write("header.csv", "a,b,c\n"), "has a header but no rows");
}

TEST_F(OpenTest, DbThatIsNotSqlite) {
  ExpectError(tmp_.Write("fake.db", "this is not a database, just text\n"),
              "is not a SQLite database");
}

TEST_F(OpenTest, Directory) {
  std::filesystem::create_directory(tmp_.path() / "dir.csv");
  ExpectError(tmp_.path() / "dir.csv", "is a directory");
}

TEST_F(OpenTest, UnreadableFile) {
  // Root reads through file modes, so as root the unreadable file is one whose reads fail.
  std::filesystem::path p;
  if (geteuid() == 0) {
    p = tmp_.path() / "locked.csv";
    std::filesystem::create_symlink("/proc/self/mem", p);
  } else {
    p = tmp_.Write("locked.csv", "a\n1\n");
    std::filesystem::permissions(p, std::filesystem::perms::none);
  }
  ExpectError(p, "cannot read");
}

TEST_F(OpenTest, DatabaseMixedWithFiles) {
  auto r = Open({quarry::testing::SourceDir() / "data" / "chinook.sqlite",
                 quarry::testing::SourceDir() / "data" / "sales.csv"});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("the only data source"), std::string::npos);
  // The database is named wherever it stands among the paths.
  auto later = Open({quarry::testing::SourceDir() / "data" / "sales.csv",
                     quarry::testing::SourceDir() / "data" / "chinook.sqlite"});
  ASSERT_FALSE(later.has_value());
  EXPECT_NE(later.error().message.find(
                "use " + (quarry::testing::SourceDir() / "data" / "chinook.sqlite").string() +
                " and the other files"),
            std::string::npos)
      << later.error().message;
}

TEST_F(OpenTest, TsvJsonAndNameCollisions) {
  auto tsv = tmp_.Write("a/orders.tsv", "id\tamount\n1\t2.5\n2\t3.5\n");
  auto json = tmp_.Write("b/orders.jsonl",
                         "{\"id\": 1, \"city\": \"Oslo\"}\n{\"id\": 2, \"city\": \"Lima\"}\n");
  auto r = Open({tsv, json});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ((*r)->describe().size(), 2u);
  EXPECT_EQ((*r)->describe()[0].name, "orders");
  EXPECT_EQ((*r)->describe()[1].name, "orders_2");
  auto q = (*r)->Query(
      "SELECT sum(amount) AS s, max(city) AS c FROM orders JOIN orders_2 USING (id)", Limits{});
  ASSERT_TRUE(q.has_value()) << q.error().message;
  EXPECT_EQ(q->rows[0][0].value_or(""), "6.0");
  EXPECT_EQ(q->rows[0][1].value_or(""), "Oslo");
}

TEST_F(OpenTest, EveryTypeIsRenderedAsText) {
  auto csv = tmp_.Write("events.csv", "id,ts\n1,2025-03-04T13:05:00Z\n2,2025-03-05T08:00:00Z\n");
  auto r = Open({csv});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const auto& ts = (*r)->describe()[0].columns[1];
  EXPECT_EQ(ts.min.value_or("NULL"), "2025-03-04 13:05:00+00");
  auto q = (*r)->Query(
      "SELECT ts, uuid() IS NOT NULL AS u, [id, id + 1] AS l, {'k': id} AS s, "
      "uuid() AS v FROM events ORDER BY id",
      Limits{});
  ASSERT_TRUE(q.has_value()) << q.error().message;
  EXPECT_EQ(q->rows[0][0].value_or("NULL"), "2025-03-04 13:05:00+00");
  EXPECT_EQ(q->rows[0][1].value_or("NULL"), "true");
  EXPECT_EQ(q->rows[1][2].value_or("NULL"), "[2, 3]");
  EXPECT_EQ(q->rows[1][3].value_or("NULL"), "{'k': 2}");
  EXPECT_EQ(q->rows[0][4].value_or("").size(), 36u);
  EXPECT_EQ(q->types[4], "UUID");
  EXPECT_EQ(q->columns[2], "l");
}

TEST_F(OpenTest, RaggedRowsAreKeptNotSkipped) {
  auto ragged = tmp_.Write("ragged.csv", "a,b\n1,2\n3\n4,5,6\n");
  auto r = Open({ragged});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE((*r)->sources()[0].padded);
  EXPECT_EQ((*r)->describe()[0].row_count, 3);
  EXPECT_EQ((*r)->describe()[0].columns[0].name, "a");
  auto q = (*r)->Query("SELECT sum(a) AS s FROM ragged", Limits{});
  ASSERT_TRUE(q.has_value()) << q.error().message;
  EXPECT_EQ(q->rows[0][0].value_or(""), "8");
}

TEST_F(OpenTest, TableNamesFromStems) {
  auto a = tmp_.Write("s.2024.csv", "x\n1\n");
  auto b = tmp_.Write("semi.csv", "x\n2\n");
  auto r = Open({a, b});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ((*r)->describe()[0].name, "s_2024");
  EXPECT_EQ((*r)->describe()[1].name, "semi_table");  // SEMI is a DuckDB keyword
  auto q = (*r)->Query("SELECT s_2024.x + semi_table.x AS s FROM s_2024, semi_table", Limits{});
  ASSERT_TRUE(q.has_value()) << q.error().message;
  EXPECT_EQ(q->rows[0][0].value_or(""), "3");
}

TEST_F(OpenTest, DuckDbDatabaseWithSchemas) {
  const auto path = tmp_.path() / "warehouse.duckdb";
  {
    duckdb_database db;
    duckdb_connection conn;
    ASSERT_EQ(duckdb_open(path.c_str(), &db), DuckDBSuccess);
    ASSERT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
    for (const char* sql : {"CREATE SCHEMA other", "CREATE TABLE other.t AS SELECT 41 AS a",
                            "CREATE TABLE m AS SELECT 1 AS b"}) {
      ASSERT_EQ(duckdb_query(conn, sql, nullptr), DuckDBSuccess) << sql;
    }
    duckdb_disconnect(&conn);
    duckdb_close(&db);
  }
  const std::string before = quarry::testing::Sha256File(path);
  {
    auto r = Open({path});
    ASSERT_TRUE(r.has_value()) << r.error().message;
    ASSERT_EQ((*r)->describe().size(), 2u);
    EXPECT_EQ((*r)->describe()[0].name, "m");
    EXPECT_EQ((*r)->describe()[1].name, "other.t");
    auto q = (*r)->Query("SELECT a + b AS s FROM other.t, m", Limits{});
    ASSERT_TRUE(q.has_value()) << q.error().message;
    EXPECT_EQ(q->rows[0][0].value_or(""), "42");
    auto w = (*r)->Query("SELECT * FROM m; DROP TABLE m", Limits{});
    EXPECT_FALSE(w.has_value());
  }
  EXPECT_EQ(quarry::testing::Sha256File(path), before);
}

TEST_F(OpenTest, SqliteInWalModeGetsNoNewFiles) {
  const auto path = tmp_.path() / "w.sqlite";
  std::filesystem::copy_file(quarry::testing::SourceDir() / "data" / "chinook.sqlite", path);
  const auto before = quarry::testing::DirectoryFingerprint(tmp_.path());
  auto r = Open({path});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto q = (*r)->Query("SELECT count(*) FROM Genre", Limits{});
  ASSERT_TRUE(q.has_value());
  r->reset();
  EXPECT_EQ(quarry::testing::DirectoryFingerprint(tmp_.path()), before);
}

}  // namespace
}  // namespace quarry::engine

namespace quarry::engine {
namespace {

// What --data takes for a server: both URL schemes in any case, and libpq's keyword/value form
// when its first word is a libpq keyword (and no file has that name).
TEST(IsServerSpecTest, UrlsAndLibpqKeywordStringsButNotFiles) {
  for (const char* spec : {"postgresql://reader@db/shop", "postgres://db/shop", "POSTGRESQL://db/x",
                           "Postgres://db/x", "service=warehouse", "host=/tmp user=reader",
                           "  dbname = shop", "sslmode=require host=db"}) {
    EXPECT_TRUE(IsServerSpec(spec)) << spec;
  }
  for (const char* spec : {"data.csv", "postgresql:/db", "http://db/x", "colour=red", "=x", "",
                           "host", "Host=db", "data/host=1.csv"}) {
    EXPECT_FALSE(IsServerSpec(spec)) << spec;
  }
}

// The names traces and `quarry data --format json` hold: each format and cache use keeps its
// name both ways, and the extension decides the format past .gz.
TEST(SourceFormatNamesTest, EveryFormatKeepsItsName) {
  for (SourceFormat f : {SourceFormat::kCsv, SourceFormat::kTsv, SourceFormat::kParquet,
                         SourceFormat::kJson, SourceFormat::kXlsx, SourceFormat::kXls,
                         SourceFormat::kSqlite, SourceFormat::kDuckDb, SourceFormat::kPostgreSql}) {
    EXPECT_EQ(ParseSourceFormat(SourceFormatName(f)), f) << SourceFormatName(f);
  }
  EXPECT_FALSE(ParseSourceFormat("db")) << "'.db' is decided by the file's header, never named";
  EXPECT_EQ(CacheUseName(CacheUse::kNone), "");
  EXPECT_EQ(CacheUseName(CacheUse::kHit), "hit");
  EXPECT_EQ(CacheUseName(CacheUse::kMiss), "miss");
  EXPECT_EQ(internal::FormatOf("Sales.CSV.gz"), SourceFormat::kCsv);
  EXPECT_EQ(internal::FormatOf("x.tab"), SourceFormat::kTsv);
  EXPECT_EQ(internal::DataExtension("shop.DB.zst"), ".db");
  EXPECT_FALSE(internal::FormatOf("book.ods"));
}

}  // namespace
}  // namespace quarry::engine
