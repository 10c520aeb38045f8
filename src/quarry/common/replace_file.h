// The check before an output file is written by a rename over the path the user named: a rename
// replaces whatever is there, so a device, a FIFO or a socket (as root, /dev/null or /dev/full)
// would become a regular file. Header-only, like the rest of common/.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "quarry/common/common.h"

namespace quarry {

// Ok when `path` is absent (it is created), a regular file or a symbolic link (the rename
// replaces the link, never its target). Errors, kUsage, naming the path: a folder, or anything
// else that is not a regular file.
inline Result<void> CheckReplaceable(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) {
    return Fail(Error::Code::kUsage,
                "cannot write " + path.string() + ": it is a folder; name a file");
  }
  return Fail(Error::Code::kUsage, "cannot write " + path.string() +
                                       ": it is not a regular file (a device, a FIFO or a socket), "
                                       "which writing would replace; name a file");
}

}  // namespace quarry
