// Directories that hold copies of the user's data only while an operation runs (the sandbox's
// table copies), registered so that a process that has to quit at once (a second Ctrl-C) still
// removes them. Header-only; thread-safe.
#pragma once

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <vector>

namespace quarry {

class ScratchDirs {
 public:
  static void Add(const std::filesystem::path& dir) {
    const std::lock_guard lock(Mutex());
    Dirs().push_back(dir);
  }
  // Forgets `dir` (once per Add); the caller removes it.
  static void Forget(const std::filesystem::path& dir) {
    const std::lock_guard lock(Mutex());
    auto& dirs = Dirs();
    if (auto it = std::find(dirs.begin(), dirs.end(), dir); it != dirs.end()) dirs.erase(it);
  }
  // Removes every registered directory. For the quit-at-once path; not from a signal handler.
  static void RemoveAll() {
    const std::lock_guard lock(Mutex());
    for (const auto& dir : Dirs()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
    Dirs().clear();
  }

 private:
  static std::mutex& Mutex() {
    static std::mutex mutex;
    return mutex;
  }
  static std::vector<std::filesystem::path>& Dirs() {
    static std::vector<std::filesystem::path> dirs;
    return dirs;
  }
};

}  // namespace quarry
