// .env.example lists every setting quarry reads from the environment, and nothing it does not:
// the names are taken from the sources (each read is a string literal "QUARRY_..." or
// "..._API_KEY" or "..._BASE_URL" handed to a lookup), so a new setting without a line fails
// here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "support/test_support.h"

namespace quarry {
namespace {

namespace fs = std::filesystem;

// Set by quarry itself for its sandbox child, not by the user.
const std::set<std::string> kInternal = {"QUARRY_KERNEL"};

std::set<std::string> NamesReadBySources() {
  const std::regex literal(R"re("((QUARRY_[A-Z0-9_]+)|([A-Z]+_(API_KEY|BASE_URL)))")re");
  std::set<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(testing::SourceDir() / "src")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    const std::string text = testing::ReadFile(entry.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), literal);
         it != std::sregex_iterator(); ++it) {
      if (!kInternal.contains((*it)[1].str())) names.insert((*it)[1].str());
    }
  }
  return names;
}

// Names set on a line of .env.example, commented out ("# NAME=") or not.
std::set<std::string> NamesInExample() {
  const std::regex line(R"(^#?\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=)");
  std::set<std::string> names;
  std::istringstream in(testing::ReadFile(testing::SourceDir() / ".env.example"));
  std::string text;
  std::smatch match;
  while (std::getline(in, text)) {
    if (std::regex_search(text, match, line)) names.insert(match[1].str());
  }
  return names;
}

TEST(EnvExampleTest, ListsEverySettingTheSourcesRead) {
  const std::set<std::string> read = NamesReadBySources();
  const std::set<std::string> listed = NamesInExample();
  // The scan itself works: the settings every configuration uses are found.
  for (const char* known : {"QUARRY_BASE_URL", "QUARRY_MODEL", "QUARRY_API_KEY",
                            "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "QUARRY_PROVIDER"}) {
    EXPECT_TRUE(read.contains(known)) << known << " not found in the sources";
  }
  for (const std::string& name : read) {
    EXPECT_TRUE(listed.contains(name)) << name << " is read by quarry but not in .env.example";
  }
  for (const std::string& name : listed) {
    EXPECT_TRUE(read.contains(name)) << name << " is in .env.example but quarry never reads it";
  }
}

TEST(EnvExampleTest, HoldsNoKeys) {
  const std::string text = testing::ReadFile(testing::SourceDir() / ".env.example");
  // Only placeholders: no value that looks like a real secret.
  EXPECT_FALSE(std::regex_search(text, std::regex(R"(sk-[A-Za-z0-9_-]{20,})"))) << text;
  const std::regex assignment(R"(^\s*(?:export\s+)?[A-Z][A-Z0-9_]*=)");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_FALSE(std::regex_search(line, assignment))
        << "every setting is commented out, so copying the file changes nothing: " << line;
  }
}

}  // namespace
}  // namespace quarry
