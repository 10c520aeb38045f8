// Shared test helpers: paths into the repo, temporary directories that clean up, file hashes
// (to prove the user's data was never written), and running the real quarry binary.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace quarry::testing {

// The repository root (data/, fixtures/, node_modules/ live there).
std::filesystem::path SourceDir();
// The built quarry executable.
std::filesystem::path QuarryBinary();

// Whether QUARRY_REQUIRE_SANDBOX=1 (.ci/run sets it): where the sandbox must run, a test that
// needs it fails instead of skipping, since a skipped escape test proves nothing.
bool SandboxRequired();

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Writes `content` to path()/name and returns the full path.
  std::filesystem::path Write(const std::string& name, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

// A guard's hostile corpus (tests/engine/*_hostile.txt): one statement a line,
// "RULE | SERVER | SQL" ("\n" in SQL is a line break; '#' lines are comments). RULE is the guard
// rule that refuses it; SERVER says what the server's own layers do with the guard bypassed:
// "refused", "defused" (it runs, and nothing it did outlives the query, or it only waits until
// the time limit ends it), or "allowed" (only the guard stops it; the docs say so).
struct HostileStatement {
  std::string rule;
  std::string server;
  std::string sql;
  bool refused() const { return server == "refused"; }
};
// ADD_FAILUREs on a malformed line or an unknown SERVER word.
std::vector<HostileStatement> ReadHostileCorpus(const std::filesystem::path& file);

// Hex SHA-256 of a file's bytes; throws std::runtime_error when unreadable.
std::string Sha256File(const std::filesystem::path& path);
// Names and hashes of every file in a directory (recursive), sorted: equal before and after
// means nothing was written, created or deleted there.
std::vector<std::string> DirectoryFingerprint(const std::filesystem::path& dir);

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs argv with the extra environment entries ("KEY=VALUE") added to a copy of this
// process's, in `cwd`, and collects stdout and stderr.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                         const std::vector<std::string>& extra_env = {},
                         const std::vector<std::string>& unset_env = {});

std::string ReadFile(const std::filesystem::path& path);

// Writes a SQLite database at `path` from `sql`; the calling test fails (fatally) when SQLite
// refuses it. Call through ASSERT_NO_FATAL_FAILURE when later steps need the file.
void MakeSqlite(const std::filesystem::path& path, const std::string& sql);

}  // namespace quarry::testing

// Skips the test (or, under QUARRY_REQUIRE_SANDBOX=1, fails it) when `why_not` holds the reason
// the sandbox cannot run here (sandbox::NamespaceUnavailableReason()). Use it where GTEST_SKIP
// could go: a test body or SetUp.
#define QUARRY_SKIP_WITHOUT_SANDBOX(why_not)                                        \
  if (const std::optional<std::string> quarry_why_not_ = (why_not)) {               \
    if (::quarry::testing::SandboxRequired()) {                                     \
      GTEST_FAIL() << "QUARRY_REQUIRE_SANDBOX=1, but the sandbox cannot run here: " \
                   << *quarry_why_not_;                                             \
    }                                                                               \
    GTEST_SKIP() << "no sandbox here: " << *quarry_why_not_;                        \
  }
