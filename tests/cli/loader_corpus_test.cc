// The loader corpus: messy files of every kind issue 8 names (and more of each kind), each with
// the columns, types, row count, loader notes and one aggregate a correct reading gives,
// checked through `quarry sql --format json` as a user would run it: once straight from the
// file and once from the parse cache, which must agree.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::RunProcess;
using quarry::testing::SourceDir;
using quarry::testing::TempDir;

const fs::path kCorpus = SourceDir() / "tests" / "cli" / "loader_corpus";

std::vector<std::string> Cases() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kCorpus)) {
    if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class LoaderCorpusTest : public ::testing::TestWithParam<std::string> {
 protected:
  testing::ProcessResult Sql(const std::string& spec, const std::string& sql, bool cache) {
    std::vector<std::string> args = {
        quarry::testing::QuarryBinary().string(), "sql", "--format", "json", spec, sql};
    if (!cache) args.push_back("--no-cache");
    return RunProcess(args, home_.path(), {"XDG_CACHE_HOME=" + (home_.path() / "cache").string()});
  }
  TempDir home_;
};

void CheckCase(const json& want, const testing::ProcessResult& all,
               const testing::ProcessResult& answer, const std::string& how) {
  ASSERT_EQ(all.exit_code, 0) << how << ": " << all.err;
  const json got = json::parse(all.out);
  std::vector<std::pair<std::string, std::string>> columns;
  for (size_t i = 0; i < got["columns"].size(); ++i) {
    columns.emplace_back(got["columns"][i].get<std::string>(), got["types"][i].get<std::string>());
  }
  std::vector<std::pair<std::string, std::string>> expected;
  for (const auto& c : want["columns"]) expected.emplace_back(c[0], c[1]);
  EXPECT_EQ(columns, expected) << how;
  EXPECT_EQ(got["row_count"].get<int64_t>(), want["row_count"].get<int64_t>()) << how;
  for (const auto& note : want["notes"]) {
    EXPECT_NE(all.err.find(note.get<std::string>()), std::string::npos)
        << how << ": note '" << note.get<std::string>() << "' missing from: " << all.err;
  }
  // What a check must not cry wolf about in this file.
  for (const auto& note : want.value("absent_notes", json::array())) {
    EXPECT_EQ(all.err.find(note.get<std::string>()), std::string::npos)
        << how << ": note '" << note.get<std::string>() << "' said in: " << all.err;
  }
  if (want.value("no_notes", false)) {
    EXPECT_EQ(all.err.find("note:"), std::string::npos) << how << ": " << all.err;
  }
  ASSERT_EQ(answer.exit_code, 0) << how << ": " << answer.err;
  const json a = json::parse(answer.out);
  ASSERT_EQ(a["rows"].size(), 1u) << how;
  const json& cell = a["rows"][0][0];
  const double value = cell.is_string() ? std::stod(cell.get<std::string>()) : cell.get<double>();
  EXPECT_NEAR(value, want["answer"].get<double>(), 1e-9) << how;
}

TEST_P(LoaderCorpusTest, ReadsTheFileRight) {
  const fs::path dir = kCorpus / GetParam();
  const json want = json::parse(quarry::testing::ReadFile(dir / "expected.json"));
  // A copy in a private directory: nothing may be written next to the user's file.
  const fs::path file = home_.path() / "data" / want["file"].get<std::string>();
  fs::create_directories(file.parent_path());
  fs::copy_file(dir / want["file"].get<std::string>(), file);
  const auto before = quarry::testing::DirectoryFingerprint(file.parent_path());
  const std::string spec = file.string() + want.value("options", "");
  const std::string table = file.stem().string();
  const std::string query = want["query"].get<std::string>();

  CheckCase(want, Sql(spec, "SELECT * FROM " + table, false), Sql(spec, query, false), "file");

  // The same table from a parse-cache entry: same columns, rows, notes and answer.
  auto built = RunProcess({quarry::testing::QuarryBinary().string(), "cache", "build", spec},
                          home_.path(), {"XDG_CACHE_HOME=" + (home_.path() / "cache").string()});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  CheckCase(want, Sql(spec, "SELECT * FROM " + table, true), Sql(spec, query, true), "cache");
  EXPECT_EQ(quarry::testing::DirectoryFingerprint(file.parent_path()), before);
}

INSTANTIATE_TEST_SUITE_P(Corpus, LoaderCorpusTest, ::testing::ValuesIn(Cases()),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace quarry
