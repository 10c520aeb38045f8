// Directories where quarry writes the user's data (runs/, the parse cache): opened as a
// directory fd and refused when another account could plant files or links in them. Shared by
// trace (run directories) and engine (the parse cache). Header-only; POSIX.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quarry/common/common.h"

namespace quarry {

// A file descriptor owned from birth; closed on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Whether `gid` is the effective user's own private group: the primary group, named as the user,
// with no other listed members. Debian gives each user one (USERGROUPS_ENAB) and then a umask of
// 002, so a fresh clone's runs/ is group-writable by that group, which only the user is in.
inline bool OwnPrivateGroup(gid_t gid) {
  if (gid != ::getegid()) return false;
  std::vector<char> user_buf(16384), group_buf(16384);
  passwd pw{};
  passwd* user = nullptr;
  group gr{};
  group* grp = nullptr;
  if (::getpwuid_r(::geteuid(), &pw, user_buf.data(), user_buf.size(), &user) != 0 || !user ||
      ::getgrgid_r(gid, &gr, group_buf.data(), group_buf.size(), &grp) != 0 || !grp) {
    return false;
  }
  const std::string_view name = user->pw_name;
  if (name != grp->gr_name) return false;
  for (char** member = grp->gr_mem; member && *member; ++member) {
    if (name != *member) return false;
  }
  return true;
}

// Why `st` (a directory's, or a file's in one) is not private to the effective user, or "".
// Private: owned by the effective uid and writable by neither others nor a group (other than
// the user's own private group, OwnPrivateGroup). A sticky bit
// does not make a shared directory acceptable: others could still add entries that quarry would
// list or read back (`quarry view latest`, a cache entry).
inline std::string NotPrivateReason(const struct stat& st) {
  if (st.st_uid != ::geteuid()) {
    return "it belongs to uid " + std::to_string(st.st_uid) + ", not to you (uid " +
           std::to_string(::geteuid()) + ")";
  }
  if ((st.st_mode & S_IWOTH) != 0 || ((st.st_mode & S_IWGRP) != 0 && !OwnPrivateGroup(st.st_gid))) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("other users can write it (mode ") + mode + ")";
  }
  return "";
}

// Opens `dir` (creating it, and missing parents, with mode 0700 when absent) as a directory fd
// and checks that it is private (NotPrivateReason). `what` names it in messages ("the runs
// directory"); `elsewhere` is the flag that picks another one ("--runs-dir").
// Errors: kUsage naming the directory, the reason and what to do (also when it cannot be
// created or opened: a file in its place, no permission).
inline Result<UniqueFd> OpenPrivateDir(const std::filesystem::path& dir, std::string_view what,
                                       std::string_view elsewhere) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    // Parents as the umask says; the directory itself private. EEXIST: a racing creator, whose
    // result is checked below like any existing directory.
    if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Fail(Error::Code::kUsage, "cannot create " + std::string(what) + " " + dir.string() +
                                           ": " + std::strerror(errno) + "; pass " +
                                           std::string(elsewhere) +
                                           " with a directory you can write");
    }
  }
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    // A file where the directory belongs, or one that cannot be entered: the user's path.
    return Fail(Error::Code::kUsage, "cannot open " + std::string(what) + " " + dir.string() +
                                         ": " + std::strerror(errno) + "; pass " +
                                         std::string(elsewhere) + " with a directory");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Fail(Error::Code::kInternal,
                "cannot stat " + dir.string() + ": " + std::strerror(errno));
  }
  if (const std::string why = NotPrivateReason(st); !why.empty()) {
    return Fail(Error::Code::kUsage,
                "refusing " + std::string(what) + " " + dir.string() + ": " + why +
                    ", so another account could plant files or links there that quarry would "
                    "write through or read back; run `chmod 700 " +
                    dir.string() + "` if it is yours, or pass " + std::string(elsewhere) +
                    " with a directory only you can write");
  }
  return fd;
}

}  // namespace quarry
