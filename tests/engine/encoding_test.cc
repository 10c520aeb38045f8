// Which 8-bit files are read through a UTF-8 copy (engine/encoding.cc): Windows-1252 is told
// apart from Latin-1 by its bytes 0x80-0x9F, and UTF-8 is never touched (issue 25).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "quarry/engine/engine.h"
#include "quarry/engine/engine_internal.h"
#include "support/test_support.h"

namespace quarry::engine::internal {
namespace {

std::optional<std::string> Detect(const std::string& bytes) {
  quarry::testing::TempDir dir;
  return DetectWindows1252(dir.Write("f.csv", bytes));
}

TEST(EncodingTest, WindowsBytesAreToldApartFromLatin1AndUtf8) {
  EXPECT_EQ(Detect("a,b\nx,caf\xe9 \x96 ok\n"), "CP1252");  // an en dash
  EXPECT_EQ(Detect("a,b\nx,it\x92s\n"), "CP1252");          // a right quote
  EXPECT_EQ(Detect("a,b\nx,\x80"
                   "5\n"),
            "CP1252");  // the euro sign
  // Latin-1 without those bytes is DuckDB's own to read.
  EXPECT_EQ(Detect("a,b\nx,caf\xe9\n"), std::nullopt);
  // UTF-8, with its own bytes in 0x80-0x9F as continuation bytes ('€' is E2 82 AC).
  EXPECT_EQ(Detect("a,b\nx,caf\xc3\xa9 \xe2\x80\x93 \xe2\x82\xac\n"), std::nullopt);
  EXPECT_EQ(Detect("plain ascii\n"), std::nullopt);
  // A byte Windows-1252 leaves undefined beside ones it defines: still Windows-1252 (the copy
  // makes it U+FFFD); alone, it says nothing.
  EXPECT_EQ(Detect("a,b\nx,\x81\x96\n"), "CP1252");
  EXPECT_EQ(Detect("a,b\nx,\x81\n"), std::nullopt);
  // A UTF-8 file with one line pasted from Excel (a fresh-user trial's file).
  EXPECT_EQ(Detect("name,city\nA,M\xc3\xbcnchen\nC,K\xf6ln \x96 Ost\n"), "CP1252");
  // UTF-16 with its byte-order mark is the CSV loader's.
  EXPECT_EQ(Detect(std::string("\xff\xfe"
                               "a\0,\0\x96\0",
                               8)),
            std::nullopt);
}

TEST(EncodingTest, TheCopyIsUtf8AndABadByteIsNamedWithItsOffset) {
  quarry::testing::TempDir dir;
  const auto from = dir.Write("w.csv", "a\n\x93quoted\x94 \x80 \x96\n");
  ASSERT_TRUE(TranscodeToUtf8(from, dir.path() / "u.csv", "CP1252", false).has_value());
  EXPECT_EQ(quarry::testing::ReadFile(dir.path() / "u.csv"),
            "a\n\xe2\x80\x9cquoted\xe2\x80\x9d \xe2\x82\xac \xe2\x80\x93\n");
  // Line by line: UTF-8 lines stay, others are converted, undefined bytes become U+FFFD.
  const auto mixed = dir.Write("m.csv", "name,city\nA,M\xc3\xbcnchen\nC,K\xf6ln \x96 \x81\n");
  auto counts = TranscodeToUtf8(mixed, dir.path() / "mu.csv", "CP1252", true);
  ASSERT_TRUE(counts.has_value()) << counts.error().message;
  EXPECT_EQ(quarry::testing::ReadFile(dir.path() / "mu.csv"),
            "name,city\nA,M\xc3\xbcnchen\nC,K\xc3\xb6ln \xe2\x80\x93 \xef\xbf\xbd\n");
  EXPECT_EQ(counts->utf8_lines, 1);
  EXPECT_EQ(counts->converted_lines, 1);
  EXPECT_EQ(counts->replaced, 1);
  // Named by the user, the file is converted whole and an undefined byte is an error.
  const auto bad = dir.Write("bad.csv", "abc\x81");
  auto r = TranscodeToUtf8(bad, dir.path() / "b.csv", "CP1252", false);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("byte 3 of the file is no Windows-1252 (cp1252) character"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(IconvEncoding("Windows-1252"), "CP1252");
  EXPECT_EQ(IconvEncoding("latin9"), "ISO-8859-15");
  EXPECT_EQ(IconvEncoding("latin-1"), std::nullopt);
}

// A compressed CSV is read through DuckDB's own decompression: its gzip or zstd bytes are no
// evidence of an encoding (a fresh-user trial's sales.csv.gz was taken for Windows-1252, copied
// through iconv as it was, and read as one column of binary noise).
TEST(EncodingTest, ACompressedCsvIsReadAsTheTextInside) {
  quarry::testing::TempDir dir;
  dir.Write("utf8.csv", "region,amount\nN\xc3\xb6rth,10\nSouth,20\n");
  dir.Write("latin.csv", "region,amount\nN\xf6rth,10\nSouth,20\n");
  dir.Write("windows.csv", "region,amount\nN\xf6rth \x96 Ost,10\nSouth,20\n");
  for (const char* f : {"utf8.csv", "latin.csv", "windows.csv"}) {
    const std::string cmd = "gzip -k " + (dir.path() / f).string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  EXPECT_EQ(DetectWindows1252(dir.path() / "windows.csv.gz"), std::nullopt);
  EXPECT_EQ(DetectWindows1252(dir.path() / "windows.csv"), "CP1252");
  OpenOptions options;
  options.use_cache = false;
  const std::vector<std::pair<const char*, const char*>> cases = {{"utf8.csv.gz", "N\xc3\xb6rth"},
                                                                  {"latin.csv.gz", "N\xc3\xb6rth"}};
  for (const auto& [file, north] : cases) {
    auto engine = Open({dir.path() / file}, options);
    ASSERT_TRUE(engine) << file << ": " << engine.error().message;
    auto r = (*engine)->Query(
        "SELECT region, amount FROM " +
            std::string(std::string_view(file).substr(0, std::string_view(file).find('.'))) +
            " ORDER BY amount",
        {});
    ASSERT_TRUE(r) << file << ": " << r.error().message;
    ASSERT_EQ(r->columns, (std::vector<std::string>{"region", "amount"})) << file;
    ASSERT_EQ(r->rows.size(), 2u) << file;
    EXPECT_EQ(r->rows[0][0], std::optional<std::string>(north)) << file;
    EXPECT_EQ(r->rows[1][1], std::optional<std::string>("20")) << file;
  }
  // An encoding named on compressed bytes cannot be converted: said, with the way out.
  auto named = Open({dir.path() / "windows.csv.gz?encoding=cp1252"}, options);
  ASSERT_FALSE(named);
  EXPECT_NE(named.error().message.find("the file is compressed"), std::string::npos)
      << named.error().message;
  EXPECT_NE(named.error().message.find("gunzip -k"), std::string::npos);
}

// A gzip file cut short (a download that stopped) would load as fewer rows without a word from
// DuckDB: it is refused, naming the file and the fix; a damaged one too; whole files, several
// members concatenated included, load.
TEST(EncodingTest, ATruncatedOrDamagedGzipFileIsRefused) {
  quarry::testing::TempDir dir;
  std::string csv = "region,amount\n";
  for (int i = 0; i < 20000; ++i)
    csv += "r" + std::to_string(i % 97) + "," + std::to_string(i) + "\n";
  dir.Write("big.csv", csv);
  dir.Write("more.csv", "x\n1\n");
  dir.Write("tail.csv", "2\n");
  const std::string d = dir.path().string();
  for (const std::string& cmd :
       {"gzip -k " + d + "/big.csv", "gzip -k " + d + "/more.csv", "gzip -k " + d + "/tail.csv",
        "head -c 20000 " + d + "/big.csv.gz > " + d + "/cut.csv.gz",
        "cat " + d + "/more.csv.gz " + d + "/tail.csv.gz > " + d + "/twice.csv.gz",
        "cp " + d + "/big.csv.gz " + d + "/bad.csv.gz && printf 'XXXXXXXX' | dd of=" + d +
            "/bad.csv.gz bs=1 seek=5000 conv=notrunc status=none"}) {
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  OpenOptions options;
  options.use_cache = false;
  auto cut = Open({dir.path() / "cut.csv.gz"}, options);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, Error::Code::kData);
  EXPECT_NE(cut.error().message.find("cut.csv.gz is a truncated gzip file"), std::string::npos)
      << cut.error().message;
  EXPECT_NE(cut.error().message.find("gzip -t cut.csv.gz"), std::string::npos);
  auto bad = Open({dir.path() / "bad.csv.gz"}, options);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.csv.gz is a damaged gzip file"), std::string::npos)
      << bad.error().message;
  // Through the parse cache too: its entry is built only from a file that was checked.
  OpenOptions cached;
  cached.cache_dir = dir.path() / "cache";
  auto cut_cached = Open({dir.path() / "cut.csv.gz"}, cached);
  ASSERT_FALSE(cut_cached);
  EXPECT_NE(cut_cached.error().message.find("truncated"), std::string::npos);

  auto whole = Open({dir.path() / "big.csv.gz"}, options);
  ASSERT_TRUE(whole) << whole.error().message;
  auto n = (*whole)->Query("SELECT count(*), sum(amount) FROM big", {});
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->rows[0][0], std::optional<std::string>("20000"));
  EXPECT_EQ(n->rows[0][1], std::optional<std::string>("199990000"));
  auto twice = Open({dir.path() / "twice.csv.gz"}, options);
  ASSERT_TRUE(twice) << twice.error().message;
  auto rows = (*twice)->Query("SELECT count(*), sum(x) FROM twice", {});
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->rows[0][0], std::optional<std::string>("2"));
  EXPECT_EQ(rows->rows[0][1], std::optional<std::string>("3"));
}

}  // namespace
}  // namespace quarry::engine::internal
