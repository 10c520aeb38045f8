// What this binary knows about where it came from: the version text, and the directory of the
// files it bundles (offline recordings, the task and behaviour suites, sample data). The commit
// comes from a header regenerated at every build (cmake/build_info.cmake); this file alone
// includes it, so a new commit recompiles only it.
#include <system_error>

#include "quarry/cli/installation.h"
#include "quarry/engine/versions.h"
#include "quarry_build_info.h"

namespace quarry::cli {

std::string VersionText() {
  return std::string("quarry ") + QUARRY_VERSION + " (commit " + QUARRY_GIT_COMMIT + ", " +
         QUARRY_BUILD_TYPE + " build)\n" + engine::LibraryVersions();
}

std::filesystem::path ShareDir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // Installed: PREFIX/bin/quarry beside PREFIX/share/quarry (cmake --install, the package).
    const fs::path installed = exe.parent_path().parent_path() / "share" / "quarry";
    if (fs::is_directory(installed / "fixtures", ec)) return installed;
  }
  return QUARRY_SOURCE_DIR;
}

}  // namespace quarry::cli
