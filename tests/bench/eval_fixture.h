// The eval tests' small benchmark (tests/bench/eval_fixture/): its Spider or BIRD folder copied
// to a temporary directory, with each database built from its committed SQL text.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace quarry::bench {

inline std::filesystem::path EvalFixtureDir() {
  return quarry::testing::SourceDir() / "tests" / "bench" / "eval_fixture";
}

// Copies eval_fixture/<which>/ (spider or bird) into `to` and builds <databases>/<db>/<db>.sqlite
// for both databases. Fails the test fatally when SQLite refuses the SQL.
inline void BuildEvalFixture(const std::string& which, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  fs::create_directories(to);
  fs::copy(EvalFixtureDir() / which, to, fs::copy_options::recursive);
  const std::string databases = which == "bird" ? "dev_databases" : "database";
  for (const char* db : {"singers", "shop"}) {
    const fs::path dir = to / databases / db;
    fs::create_directories(dir);
    ASSERT_NO_FATAL_FAILURE(quarry::testing::MakeSqlite(
        dir / (std::string(db) + ".sqlite"),
        quarry::testing::ReadFile(EvalFixtureDir() / "sql" / (std::string(db) + ".sql"))));
  }
}

}  // namespace quarry::bench
