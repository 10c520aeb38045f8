// The loader beyond single files: retries when the sniffer's sample was wrong, errors that name
// the file, per-file options that are wrong, the parse cache (hits, staleness, privacy, the
// lock-down), wide files and the load timeout.
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <sys/file.h>

#include <atomic>
#include <thread>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "support/test_support.h"

namespace quarry::engine {
namespace {

namespace fs = std::filesystem;
using quarry::testing::TempDir;

std::string Cell(const QueryOutcome& r, size_t row = 0, size_t col = 0) {
  if (!r) return "error: " + r.error().message;
  if (r->rows.size() <= row) return "no row";
  return r->rows[row][col].value_or("NULL");
}

const ColumnCard* Column(const Engine& e, const std::string& name) {
  for (const auto& t : e.describe()) {
    for (const auto& c : t.columns) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

class LoaderTest : public ::testing::Test {
 protected:
  // 60,000 integer rows and then 'n/a': past the sniffer's 20,480-row sample.
  fs::path LateMarker() {
    std::string text = "id,v\n";
    for (int i = 1; i <= 60000; ++i)
      text += std::to_string(i) + "," + std::to_string(i % 97) + "\n";
    text += "60001,n/a\n";
    return tmp_.Write("late.csv", text);
  }
  OpenOptions NoCache() {
    OpenOptions o;
    o.use_cache = false;
    return o;
  }
  TempDir tmp_;
};

TEST_F(LoaderTest, ValuePastTheSampleIsRetriedNotRefused) {
  const fs::path file = LateMarker();
  // Opened as a large file would be: the sniffer's sample only, no statistics.
  OpenOptions o = NoCache();
  o.profile = false;
  o.deep_bytes = 0;
  auto e = Open({file}, o);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(Column(**e, "v")->type, "BIGINT");  // what the sample said
  // The first query meets 'n/a': the engine reads every row, keeps v as text, and answers.
  auto r = (*e)->Query("SELECT max(v), count(*) FROM late", {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(Cell(r, 0, 0), "n/a");
  EXPECT_EQ(Cell(r, 0, 1), "60001");
  const ColumnCard* v = Column(**e, "v");
  ASSERT_FALSE(v->notes.empty());
  EXPECT_NE(v->notes[0].find("'n/a' (1 row) looks like a missing-value marker"), std::string::npos)
      << v->notes[0];
  auto total = (*e)->Query("SELECT sum(TRY_CAST(v AS BIGINT)) FROM late", {});
  long long want = 0;
  for (int i = 1; i <= 60000; ++i) want += i % 97;
  EXPECT_EQ(Cell(total), std::to_string(want));
}

TEST_F(LoaderTest, ValuePastTheSampleWithProfilingNeedsNoRetry) {
  auto e = Open({LateMarker()}, NoCache());
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(Column(**e, "v")->type, "VARCHAR");
  EXPECT_EQ((*e)->describe()[0].row_count, 60001);
}

TEST_F(LoaderTest, ErrorsNameTheFileThatFailed) {
  const fs::path good = tmp_.Write("good.csv", "a,b\n1,2\n");
  const fs::path bad = tmp_.Write("bad.csv", "name\nJos\xe9\n");
  // Forced to UTF-8, the Latin-1 file cannot be read; the message must name it, not good.csv.
  auto e = Open({good, fs::path(bad.string() + "?encoding=utf-8")}, NoCache());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Error::Code::kData);
  EXPECT_NE(e.error().message.find("cannot load " + bad.string()), std::string::npos)
      << e.error().message;
  EXPECT_EQ(e.error().message.find("good.csv"), std::string::npos) << e.error().message;
}

TEST_F(LoaderTest, AFileOfBlankLinesIsRefusedAsHoldingNothing) {
  // Read, each would be a column 'column0' of NULL rows that count(*) counts.
  for (const std::string& text :
       {std::string("\n\n\n"), std::string("\xEF\xBB\xBF"), std::string(" \r\n\t\r\n")}) {
    const fs::path blank = tmp_.Write("blank.csv", text);
    auto e = Open({blank}, NoCache());
    ASSERT_FALSE(e) << "'" << text << "'";
    EXPECT_EQ(e.error().code, Error::Code::kData);
    EXPECT_NE(e.error().message.find(blank.string() + " holds only blank lines"), std::string::npos)
        << e.error().message;
  }
  // One line of data after them is a file to read.
  auto e = Open({tmp_.Write("late.csv", "\n\na,b\n1,2\n")}, NoCache());
  ASSERT_TRUE(e) << e.error().message;
}

TEST_F(LoaderTest, BadOptionsAreUsageErrorsNamingTheOption) {
  const fs::path f = tmp_.Write("x.csv", "a\n1\n");
  struct Case {
    std::string suffix, says;
  } cases[] = {{"?delimiter", "has no value"},    {"?colour=red", "unknown CSV option 'colour'"},
               {"?header=maybe", "header=maybe"}, {"?skip=-1", "skip=-1"},
               {"?decimal=;", "decimal=;"},       {"?types=id", "column:TYPE"}};
  for (const auto& c : cases) {
    auto e = Open({fs::path(f.string() + c.suffix)}, NoCache());
    ASSERT_FALSE(e) << c.suffix;
    EXPECT_EQ(e.error().code, Error::Code::kUsage) << c.suffix;
    EXPECT_NE(e.error().message.find(c.says), std::string::npos) << e.error().message;
  }
  const fs::path parquet = tmp_.Write("x.parquet", "PAR1");
  auto p = Open({fs::path(parquet.string() + "?delim=;")}, NoCache());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("apply to CSV/TSV files and workbooks only"), std::string::npos);
}

TEST_F(LoaderTest, APathWithAQuestionMarkIsAFileFirst) {
  const fs::path f = tmp_.Write("what?.csv", "a\n7\n");
  auto e = Open({f}, NoCache());
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(Cell((*e)->Query("SELECT sum(a) FROM what_", {})), "7");
}

class CacheTest : public LoaderTest {
 protected:
  OpenOptions Cached() {
    OpenOptions o;
    o.cache_dir = tmp_.path() / "cache" / "quarry" / "parse";
    return o;
  }
  std::string Sum(const fs::path& file, const OpenOptions& o, std::string* cache = nullptr) {
    auto e = Open({file}, o);
    if (!e) return "error: " + e.error().message;
    if (cache) *cache = CacheUseName((*e)->sources()[0].cache);
    return Cell((*e)->Query("SELECT sum(v) FROM data", {}));
  }
};

TEST_F(CacheTest, EntryIsUsedAndPrivate) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  std::string cache;
  EXPECT_EQ(Sum(file, Cached(), &cache), "3");
  EXPECT_EQ(cache, "miss");
  auto entry = BuildCacheEntry(file, Cached());
  ASSERT_TRUE(entry) << entry.error().message;
  EXPECT_EQ(Sum(file, Cached(), &cache), "3");
  EXPECT_EQ(cache, "hit");
  struct stat st {};
  ASSERT_EQ(::stat(Cached().cache_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // The hit carries what the build computed: the hash, and a profiled card.
  auto e = Open({file}, Cached());
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)->sources()[0].sha256, quarry::testing::Sha256File(file));
  EXPECT_TRUE((*e)->describe()[0].profiled);
  EXPECT_EQ((*e)->describe()[0].row_count, 2);
}

// A stand-in builder: holds the entry's lock file with the progress line a builder writes, so
// that what a waiting command decides depends on that line alone.
class HeldBuild {
 public:
  HeldBuild(const fs::path& file, const OpenOptions& o, const std::string& progress) {
    fs::create_directories(o.cache_dir);
    fs::permissions(o.cache_dir, fs::perms::owner_all, fs::perm_options::replace);
    path_ = o.cache_dir / (*internal::CacheKey(fs::absolute(file), {}) + ".lock");
    fd_ = ::open(path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    EXPECT_EQ(::flock(fd_, LOCK_EX | LOCK_NB), 0);
    EXPECT_EQ(::write(fd_, progress.data(), progress.size()),
              static_cast<ssize_t>(progress.size()));
  }
  void End() {
    if (fd_ < 0) return;
    std::error_code ec;
    fs::remove(path_, ec);
    ::close(fd_);
    fd_ = -1;
  }
  ~HeldBuild() { End(); }

 private:
  fs::path path_;
  int fd_ = -1;
};

std::string NowMs(int64_t seconds_ago) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count() -
                        seconds_ago * 1000);
}

// Whether WaitForCacheBuild was still waiting when `build` ended, `after_ms` from the start.
bool WaitedUntilTheEnd(HeldBuild& build, int after_ms, const fs::path& file, const OpenOptions& o) {
  std::atomic<bool> ended{false};
  std::thread ender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    ended = true;
    build.End();
  });
  auto hit = internal::WaitForCacheBuild(fs::absolute(file), {}, o);
  const bool waited = ended;
  ender.join();
  EXPECT_TRUE(hit.has_value());
  EXPECT_FALSE(hit && hit->has_value());  // the stand-in wrote no entry: the file is read
  return waited;
}

TEST_F(CacheTest, AFollowUpWaitsForABuildNearItsEnd) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  // Profiling: the table is written, the rest is short. The command waits until the lock goes.
  HeldBuild build(file, Cached(), "profile -1 " + NowMs(1) + "\n");
  EXPECT_TRUE(WaitedUntilTheEnd(build, 400, file, Cached()));
}

TEST_F(CacheTest, AFollowUpReadsTheFileWhenTheBuildHasFarToGo) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  // 10% of the table after 10 s: 90 s and a profile to go, longer than a scan beside it.
  HeldBuild build(file, Cached(), "table 10.0 " + NowMs(10) + "\n");
  EXPECT_FALSE(WaitedUntilTheEnd(build, 1500, file, Cached()));
  // The same build at 90% after 9 s is waited for.
  HeldBuild late(file, Cached(), "table 90.0 " + NowMs(9) + "\n");
  EXPECT_TRUE(WaitedUntilTheEnd(late, 400, file, Cached()));
  // With no build at all, nothing waits and the open goes on.
  std::string cache;
  EXPECT_EQ(Sum(file, Cached(), &cache), "3");
  EXPECT_EQ(cache, "miss");
}

TEST_F(CacheTest, ASecondBuilderLeavesTheFirstOnesLock) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  HeldBuild build(file, Cached(), "plan -1 " + NowMs(0) + "\n");
  auto second = BuildCacheEntry(file, Cached());
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("is being built"), std::string::npos);
  // Its lock file is still there for a third builder to find held.
  auto third = BuildCacheEntry(file, Cached());
  ASSERT_FALSE(third);
  EXPECT_NE(third.error().message.find("is being built"), std::string::npos);
}

TEST_F(CacheTest, StaleEntryIsNeverTrusted) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  ASSERT_TRUE(BuildCacheEntry(file, Cached()));
  struct stat before {};
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  // Same size, same mtime, other content: only the ctime (which nobody can set) changes.
  {
    std::ofstream out(file, std::ios::trunc);
    out << "k,v\na,5\nb,2\n";
  }
  struct utimbuf times {
    before.st_atime, before.st_mtime
  };
  ASSERT_EQ(::utime(file.c_str(), &times), 0);
  std::string cache;
  EXPECT_EQ(Sum(file, Cached(), &cache), "7");
  EXPECT_EQ(cache, "miss");
}

TEST_F(CacheTest, CorruptEntryIsSkipped) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  auto entry = BuildCacheEntry(file, Cached());
  ASSERT_TRUE(entry);
  {
    std::ofstream out(*entry, std::ios::trunc);
    out << "not a database";
  }
  std::string cache;
  EXPECT_EQ(Sum(file, Cached(), &cache), "3");
  EXPECT_EQ(cache, "miss");
}

TEST_F(CacheTest, ACacheDirOthersCanWriteIsRefusedWithWhatToDo) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  for (const unsigned mode : {0777u, 0770u, 01777u}) {
    OpenOptions o = Cached();
    o.cache_dir = tmp_.path() / ("shared-" + std::to_string(mode));
    fs::create_directories(o.cache_dir);
    ASSERT_EQ(::chmod(o.cache_dir.c_str(), mode), 0);
    if ((mode & 0020u) && !(mode & 0002u)) {  // a group others share, not the user's own
      if (::geteuid() != 0) continue;
      ASSERT_EQ(::chown(o.cache_dir.c_str(), static_cast<uid_t>(-1), 65534), 0);
    }
    const std::string sum = Sum(file, o);
    EXPECT_NE(sum.find("refusing the parse cache directory " + o.cache_dir.string()),
              std::string::npos)
        << sum;
    EXPECT_NE(sum.find("--cache-dir"), std::string::npos) << sum;
    auto built = BuildCacheEntry(file, o);
    ASSERT_FALSE(built);
    EXPECT_EQ(built.error().code, Error::Code::kUsage);
    EXPECT_TRUE(fs::is_empty(o.cache_dir));
    // --no-cache, as the message says, still answers.
    o.use_cache = false;
    EXPECT_EQ(Sum(file, o), "3");
  }
}

TEST_F(CacheTest, ACacheDirOfAnotherUidIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown to another uid";
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  OpenOptions o = Cached();
  fs::create_directories(o.cache_dir);
  ASSERT_EQ(::chown(o.cache_dir.c_str(), 65534, 65534), 0);
  const std::string sum = Sum(file, o);
  EXPECT_NE(sum.find("belongs to uid 65534"), std::string::npos) << sum;
}

// The red team's poisoning: an entry under the key anyone can compute from stat, holding other
// rows and a made-up hash. Forged files of another uid, files others can write and links are
// all a miss: the real file is read, and its real hash is what the trace gets.
TEST_F(CacheTest, AForgedEntryIsNeverTrusted) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  const fs::path forged_src = tmp_.Write("forged.csv", "k,v\nNorth,1000000\n");
  OpenOptions forge = Cached();
  forge.cache_dir = tmp_.path() / "forge";
  auto forged = BuildCacheEntry(forged_src, forge);
  ASSERT_TRUE(forged) << forged.error().message;
  auto entry = BuildCacheEntry(file, Cached());
  ASSERT_TRUE(entry) << entry.error().message;
  const fs::path meta = fs::path(*entry).replace_extension(".json");
  // Both files of a fresh entry are the user's alone.
  struct stat st {};
  ASSERT_EQ(::stat(entry->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(meta.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string real_meta = quarry::testing::ReadFile(meta);
  const std::string real_sha = quarry::testing::Sha256File(file);
  std::string fake_meta = real_meta;
  fake_meta.replace(fake_meta.find(real_sha), real_sha.size(), std::string(64, 'f'));
  auto plant = [&](bool with_link) {
    fs::remove(*entry);
    fs::remove(meta);
    if (with_link) {
      fs::create_symlink(*forged, *entry);
    } else {
      fs::copy_file(*forged, *entry);
    }
    std::ofstream(meta) << fake_meta;
  };
  auto expect_real = [&](const std::string& what) {
    std::string cache;
    EXPECT_EQ(Sum(file, Cached(), &cache), "3") << what;
    EXPECT_EQ(cache, "miss") << what;
    auto e = Open({file}, Cached());
    ASSERT_TRUE(e) << what;
    EXPECT_EQ((*e)->sources()[0].sha256, real_sha) << what;
  };
  if (::geteuid() == 0) {
    plant(false);
    ASSERT_EQ(::chown(entry->c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chown(meta.c_str(), 65534, 65534), 0);
    expect_real("files of another uid");
    plant(false);
    ASSERT_EQ(::chown(meta.c_str(), 65534, 65534), 0);
    expect_real("an index of another uid");
  }
  plant(false);
  ASSERT_EQ(::chmod(entry->c_str(), 0666), 0);
  expect_real("an entry others can write");
  plant(false);
  ASSERT_EQ(::chmod(meta.c_str(), 0620), 0);
  // A group others share; the user's own private group is the user's (OwnPrivateGroup).
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(meta.c_str(), static_cast<uid_t>(-1), 65534), 0);
    expect_real("an index the group can write");
  }
  plant(true);
  ASSERT_EQ(::chmod(meta.c_str(), 0600), 0);
  expect_real("an entry that is a link");
  // A rebuild replaces what was planted, and the entry is used again.
  ASSERT_TRUE(BuildCacheEntry(file, Cached()));
  std::string cache;
  EXPECT_EQ(Sum(file, Cached(), &cache), "3");
  EXPECT_EQ(cache, "hit");
}

TEST_F(CacheTest, TheDefaultCacheDirLeftOpenByAnOlderQuarryIsMadePrivate) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\nb,2\n");
  const fs::path xdg = tmp_.path() / "xdg";
  const fs::path dir = xdg / "quarry" / "parse";
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", xdg.c_str(), 1);
  OpenOptions o;
  auto built = BuildCacheEntry(file, o);
  std::string cache;
  const std::string sum = Sum(file, o, &cache);
  if (old) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_EQ(sum, "3");
  EXPECT_EQ(cache, "hit");
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(CacheTest, NoCacheLeavesNoTrace) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\n");
  OpenOptions o = Cached();
  o.use_cache = false;
  EXPECT_EQ(Sum(file, o), "1");
  EXPECT_FALSE(fs::exists(o.cache_dir));
}

TEST_F(CacheTest, LockDownHoldsOnACachedTable) {
  const fs::path file = tmp_.Write("data.csv", "k,v\na,1\n");
  const fs::path secret = tmp_.Write("secret.csv", "s\nhidden\n");
  ASSERT_TRUE(BuildCacheEntry(file, Cached()));
  auto e = Open({file}, Cached());
  ASSERT_TRUE(e);
  ASSERT_EQ(CacheUseName((*e)->sources()[0].cache), "hit");
  for (const std::string& sql : {"SELECT * FROM read_csv('" + secret.string() + "')",
                                 "ATTACH '" + (tmp_.path() / "x.duckdb").string() + "' AS x",
                                 std::string("CREATE TABLE quarry_cache_0.t AS SELECT 1"),
                                 std::string("SET enable_external_access = true")}) {
    auto r = (*e)->Query(sql, {});
    EXPECT_FALSE(r) << sql;
  }
  EXPECT_FALSE(fs::exists(tmp_.path() / "x.duckdb"));
}

TEST_F(LoaderTest, WideFileOpensAndItsCardIsSummarised) {
  std::string header, row;
  for (int i = 0; i < 1000; ++i) {
    header += (i ? "," : "") + std::string("c") + std::to_string(i);
    row += (i ? "," : "") + std::to_string(i);
  }
  std::string text = header + "\n";
  for (int r = 0; r < 50; ++r) text += row + "\n";
  auto e = Open({tmp_.Write("wide.csv", text)}, NoCache());
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ((*e)->describe()[0].columns.size(), 1000u);
  EXPECT_EQ((*e)->describe()[0].columns[999].max.value_or(""), "999");
  const std::string card = RenderCards((*e)->describe(), kCardColumns);
  EXPECT_NE(card.find("960 more columns"), std::string::npos);
  EXPECT_EQ(card.find("c999 BIGINT,"), std::string::npos);
  const std::string one = RenderCards((*e)->describe(), kCardColumns, {"c999"});
  EXPECT_NE(one.find("  c999 BIGINT, only 999\n"), std::string::npos) << one;
  EXPECT_EQ(one.find("c0 "), std::string::npos);
}

TEST_F(LoaderTest, LoadingIsBoundedByTheTimeout) {
  std::string text = "a,b,c\n";
  for (int i = 0; i < 400000; ++i)
    text += std::to_string(i) + ",x" + std::to_string(i % 13) + ",1.5\n";
  OpenOptions o = NoCache();
  o.timeout_ms = 1;
  auto e = Open({tmp_.Write("slow.csv", text)}, o);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("raise --timeout-ms"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("slow.csv"), std::string::npos) << e.error().message;
}

}  // namespace
}  // namespace quarry::engine

namespace quarry::engine {
namespace {

TEST_F(LoaderTest, StrayQuoteFarIntoAQuotedFileIsRead) {
  // Quoted fields early make the sniffer pick '"'; row 20,000 has a bare quote mid-field.
  std::string text = "id,name,v\n";
  int64_t sum = 0;
  for (int i = 1; i <= 30000; ++i) {
    if (i == 20000) {
      text += std::to_string(i) + ",the 5\" pipe," + std::to_string(i % 7) + "\n";
    } else if (i % 10 == 0) {
      text += std::to_string(i) + ",\"name, " + std::to_string(i) + "\"," + std::to_string(i % 7) +
              "\n";
    } else {
      text += std::to_string(i) + ",name" + std::to_string(i) + "," + std::to_string(i % 7) + "\n";
    }
    sum += i % 7;
  }
  auto e = Open({tmp_.Write("quotes.csv", text)}, NoCache());
  ASSERT_TRUE(e) << e.error().message;
  auto r = (*e)->Query(
      "SELECT count(*), sum(v), count(*) FILTER (WHERE name = 'name, 10') FROM quotes", {});
  EXPECT_EQ(Cell(r, 0, 0), "30000");
  EXPECT_EQ(Cell(r, 0, 1), std::to_string(sum));
  EXPECT_EQ(Cell(r, 0, 2), "1");
}

TEST_F(LoaderTest, NulByteDoesNotMakeTheFileUnreadable) {
  std::string text = "id,v\n1,10\n";
  text += std::string("2,a") + '\0' + "b\n3,30\n";
  auto e = Open({tmp_.Write("nul.csv", text)}, NoCache());
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(Cell((*e)->Query("SELECT count(*) FROM nul", {})), "3");
}

}  // namespace
}  // namespace quarry::engine

namespace quarry::engine {
namespace {

TEST_F(LoaderTest, LateDateOutsideTheSampleFormatIsRetried) {
  // Month-first dates for 30,000 rows, then a day-first one the sample never saw.
  std::string text = "when,amount\n";
  for (int i = 1; i <= 30000; ++i) {
    char d[16];
    std::snprintf(d, sizeof d, "%02d/%02d/2021", i % 12 + 1, i % 28 + 1);
    text += std::string(d) + "," + std::to_string(i % 7) + "\n";
  }
  text += "25/12/2021,1\n";
  OpenOptions o = NoCache();
  o.profile = false;
  o.deep_bytes = 0;
  auto e = Open({tmp_.Write("dates.csv", text)}, o);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(Column(**e, "when")->type, "DATE");
  auto r = (*e)->Query("SELECT count(*), max(\"when\") FROM dates", {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(Cell(r, 0, 0), "30001");
  EXPECT_EQ(Cell(r, 0, 1), "25/12/2021");  // text now: the file holds no single date format
  EXPECT_EQ(Column(**e, "when")->type, "VARCHAR");
  const auto& notes = (*e)->describe()[0].notes;
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("every row was checked"), std::string::npos) << notes[0];
}

TEST_F(LoaderTest, Utf16BigEndianIsRefusedClearly) {
  std::string text = "\xFE\xFF";
  for (char c : std::string("a,b\n1,2\n")) text += std::string(1, '\0') + c;
  auto e = Open({tmp_.Write("be.csv", text)}, NoCache());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("UTF-16 big-endian"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("be.csv"), std::string::npos) << e.error().message;
}

}  // namespace
}  // namespace quarry::engine
