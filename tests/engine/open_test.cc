// Bad input to Open(): each case is a one-line kData/kUsage error naming the file and what to
// do, and nothing is written next to the user's data.
#include <gtest/gtest.h>
#include <unistd.h>

#include "quarry/engine/engine.h"
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
  ExpectError(tmp_.Write("notes.xlsx", "x"), "unsupported file type");
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
  EXPECT_NE(r.error().message.find("only --data source"), std::string::npos);
}

TEST_F(OpenTest, TsvJsonAndNameCollisions) {
  auto tsv = tmp_.Write("a/orders.tsv", "id\tamount\n1\t2.5\n2\t3.5\n");
  auto json = tmp_.Write("b/orders.jsonl", "{\"id\": 1, \"city\": \"Oslo\"}\n{\"id\": 2, \"city\": \"Lima\"}\n");
  auto r = Open({tsv, json});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ((*r)->describe().size(), 2u);
  EXPECT_EQ((*r)->describe()[0].name, "orders");
  EXPECT_EQ((*r)->describe()[1].name, "orders_2");
  auto q = (*r)->Query("SELECT sum(amount) AS s, max(city) AS c FROM orders JOIN orders_2 USING (id)",
                       Limits{});
  ASSERT_TRUE(q.has_value()) << q.error().message;
  EXPECT_EQ(q->rows[0][0].value_or(""), "6.0");
  EXPECT_EQ(q->rows[0][1].value_or(""), "Oslo");
}

}  // namespace
}  // namespace quarry::engine
