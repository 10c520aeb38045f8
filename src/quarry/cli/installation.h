// Where this binary came from and where its bundled files are.
#pragma once

#include <filesystem>
#include <string>

namespace quarry::cli {

// What `quarry --version` prints: the version, the git commit it was built from ("+changes"
// when the tree had uncommitted changes), the build type, and the engine libraries.
std::string VersionText();

// Where the bundled files are (fixtures/offline, fixtures/behaviour, tasks, data): PREFIX/
// share/quarry when this binary is installed as PREFIX/bin/quarry, else the source tree it was
// built from.
std::filesystem::path ShareDir();

}  // namespace quarry::cli
