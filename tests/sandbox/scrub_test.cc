// ScrubWorkdir against a work directory that fights back: the sandbox (here a thread) swaps a
// setuid file and a symlink to a host file while the scrub runs, links directories out of the
// work directory, and leaves FIFOs. No host file may change mode, and nothing may hang.
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "quarry/sandbox/sandbox_internal.h"
#include "support/test_support.h"

namespace quarry::sandbox::internal {
namespace {

namespace fs = std::filesystem;

mode_t ModeOf(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

void MakeFile(const fs::path& p, mode_t mode) {
  const int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << p;
  close(fd);
  ASSERT_EQ(chmod(p.c_str(), mode), 0);
}

TEST(ScrubTest, ClearsSetIdBitsAndRemovesSpecialFiles) {
  quarry::testing::TempDir dir;
  const fs::path work = dir.path() / "work";
  fs::create_directories(work / "sub");
  MakeFile(work / "suid", 04755);
  MakeFile(work / "sub" / "sgid", 02755);
  ASSERT_EQ(chmod((work / "sub").c_str(), 02755), 0);
  ASSERT_EQ(mkfifo((work / "pipe").c_str(), 0644), 0);
  ScrubWorkdir(work);
  EXPECT_EQ(ModeOf(work / "suid"), 0755u);
  EXPECT_EQ(ModeOf(work / "sub" / "sgid"), 0755u);
  EXPECT_EQ(ModeOf(work / "sub"), 0755u);
  EXPECT_FALSE(fs::exists(fs::symlink_status(work / "pipe")));
}

TEST(ScrubTest, NeverFollowsALinkedFileOrDirectoryOutOfTheWorkDirectory) {
  quarry::testing::TempDir dir;
  const fs::path work = dir.path() / "work", host = dir.path() / "host";
  fs::create_directories(work);
  fs::create_directories(host);
  MakeFile(host / "secret", 04600);
  ASSERT_EQ(mkfifo((host / "fifo").c_str(), 0600), 0);
  fs::create_symlink(host / "secret", work / "link");
  fs::create_directory_symlink(host, work / "dirlink");
  ScrubWorkdir(work);
  EXPECT_EQ(ModeOf(host / "secret"), 04600u) << "the scrub followed a link to a host file";
  EXPECT_TRUE(fs::exists(fs::symlink_status(host / "fifo"))) << "the scrub walked a linked dir";
  EXPECT_TRUE(fs::is_symlink(work / "link"));
}

// The red team's race (issue 22): a setuid file and a symlink to a host file swapped with
// renameat2(RENAME_EXCHANGE) in a loop while the scrub runs. The old scrub (lstat, then chmod
// by path) set the host file to 0777 within a few hundred rounds (1371 at most in five trials).
TEST(ScrubTest, ARenameExchangeRaceCannotRedirectTheChmod) {
  quarry::testing::TempDir dir;
  const fs::path work = dir.path() / "work", host = dir.path() / "host-secret";
  fs::create_directories(work);
  MakeFile(host, 0600);
  const fs::path a = work / "a", b = work / "b";
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop.load()) {
      syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
    }
  });
  for (int round = 0; round < 10000; ++round) {
    // Both names exist in every round: one is a setuid file, the other a link to the host file.
    unlink(a.c_str());
    unlink(b.c_str());
    const int fd = open(a.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) {
      fchmod(fd, 04777);
      close(fd);
    }
    symlink(host.c_str(), b.c_str());
    ScrubWorkdir(work);
    if (ModeOf(host) != 0600) break;
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(ModeOf(host), 0600u) << "the host file's mode was changed through the work directory";
}

}  // namespace
}  // namespace quarry::sandbox::internal

namespace quarry::sandbox::internal {
namespace {

// The outside red team nested 73 directories and wrote 601 MB below them: the walk stopped at
// depth 64, so the quota never counted the files and nothing removed them. What lies deeper
// than the walk now counts as past the quota, and the removal and the scrub reach it.
TEST(ScrubTest, FilesNestedDeeperThanTheWalkAreCountedRemovedAndScrubbed) {
  quarry::testing::TempDir dir;
  const fs::path work = dir.path() / "work";
  fs::path deep = work;
  for (int i = 0; i < 150; ++i) deep /= "d";
  fs::create_directories(deep);
  {
    const int fd = open((deep / "big.csv").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 4; ++i) ASSERT_EQ(write(fd, block.data(), block.size()), 1 << 20);
    close(fd);
  }
  MakeFile(deep / "suid", 04755);
  MakeFile(work / "figure.png", 0644);

  // Counted as past any quota, though the shallow part holds nothing.
  EXPECT_GT(DirectoryBytes(work, 8 << 20), 8 << 20);
  // A shallow tree of the same size is counted as it is.
  quarry::testing::TempDir shallow;
  fs::create_directories(shallow.path() / "a");
  MakeFile(shallow.path() / "a" / "f", 0644);
  EXPECT_LE(DirectoryBytes(shallow.path(), 8 << 20), 8 << 20);

  ScrubWorkdir(work);
  // Everything is still there, lifted within the work directory, and the setuid bit is gone.
  int suid = 0, big = 0;
  for (auto it = fs::recursive_directory_iterator(work); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->path().filename() == "suid") {
      ++suid;
      EXPECT_EQ(ModeOf(it->path()), 0755) << it->path();
    }
    if (it->path().filename() == "big.csv") ++big;
  }
  EXPECT_EQ(suid, 1);
  EXPECT_EQ(big, 1);

  EXPECT_EQ(RemoveFilesWrittenSince(work, 0), 3);  // big.csv, suid, figure.png
  EXPECT_LE(DirectoryBytes(work, 8 << 20), 64 << 10);
}

}  // namespace
}  // namespace quarry::sandbox::internal
