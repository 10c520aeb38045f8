// Memory a DuckDB query leaves behind (found by the sanitizer build, issue 10): the engine
// copied each result column's name out of DuckDB and never freed DuckDB's copy, so every query
// leaked its column names. Here, in the normal build, glibc's heap in use must not grow with
// the number of wide queries run; in the sanitizer build LeakSanitizer checks the same at exit
// (mallinfo2 reads nothing there, as ASan has its own allocator).
#include <gtest/gtest.h>
#include <malloc.h>

#include <string>

#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

using quarry::testing::TempDir;

TEST(QueryMemoryTest, WideQueriesDoNotLeakTheirColumnNames) {
  TempDir tmp;
  auto engine = Open({tmp.Write("t.csv", "id,amount\n1,2.5\n2,3.5\n")});
  ASSERT_TRUE(engine) << engine.error().message;
  // 300 columns with 200-byte names: 60 KB of names per query.
  std::string sql = "SELECT ";
  for (int c = 0; c < 300; ++c) {
    if (c > 0) sql += ", ";
    sql += "id AS c" + std::to_string(c) + "_" + std::string(195, 'n');
  }
  sql += " FROM t";
  auto run = [&] {
    auto r = (*engine)->Query(sql, Limits{});
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->columns.size(), 300u);
    EXPECT_EQ(r->columns[299], "c299_" + std::string(195, 'n'));
  };
  for (int i = 0; i < 5; ++i) run();  // caches and arenas settle
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 60; ++i) run();
  const size_t after = mallinfo2().uordblks;
  // Leaking the names would hold 60 x 60 KB = 3.6 MB more.
  EXPECT_LT(after, before + (1u << 20)) << "heap in use grew from " << before << " to " << after;
}

}  // namespace
}  // namespace quarry::engine
