// The process and file plumbing the tests' real servers share (pg_server.cc, mariadb_server.cc):
// a server started as a non-root child that dies with its test process, a template directory
// built once per machine under a file lock, and the small helpers around them. Every failure
// throws std::runtime_error starting with `what` ("test PostgreSQL server: ...").
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quarry::test::internal {

// Who the server runs as: as root, the first of `names` that exists (servers refuse root).
struct ServerUser {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
};
ServerUser PickServerUser(std::string_view what, const std::vector<std::string>& names,
                          std::string_view fix);

[[noreturn]] void FailServer(std::string_view what, const std::string& message);

void ChownTree(std::string_view what, const std::filesystem::path& dir, const ServerUser& user);

// The last 3,000 bytes of a log.
std::string LogTail(const std::filesystem::path& log);

// Runs argv as a direct child (as the server user when we are root), in `cwd`, its output
// appended to `log`, with LC_ALL=C, TZ=UTC and PATH=/usr/bin:/bin (plus `env`). The child gets
// SIGQUIT when this thread dies (PR_SET_PDEATHSIG, set after setuid because a credential change
// clears it), so a crashed test process takes its server along.
pid_t Spawn(std::string_view what, const std::vector<std::string>& argv,
            const std::filesystem::path& cwd, const std::filesystem::path& log,
            const ServerUser& user, const std::vector<std::string>& env = {});

// Waits up to `timeout` for `pid`; its wait status, or nullopt while it still runs.
std::optional<int> WaitFor(pid_t pid, std::chrono::milliseconds timeout);
// `signal`, then SIGKILL after 20 s, and reaped.
void StopServer(pid_t pid, int signal);

uint64_t Fnv1a(std::string_view text);
std::string Euid();
// A directory in the shared temp dir that must be ours (another user could plant the name).
void EnsureOwnDir(std::string_view what, const std::filesystem::path& dir, mode_t mode);
// Private dirs `<temp>/<prefix><pid>-...` of test processes that died are removed.
void SweepStaleRuns(const std::string& prefix);
int FreeLoopbackPort(std::string_view what);
std::string PercentEncode(std::string_view text);

class FileLock {
 public:
  FileLock(std::string_view what, const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// The template `<root>/template`, built by `build(scratch)` when missing. Several test
// processes start at once: the first builds under the lock into a scratch dir (owned by
// `user`) and renames `scratch/data` into place, so a half-built template is never seen; the
// others wait on the lock and reuse it. `ready` names a file every whole template holds.
std::filesystem::path EnsureTemplate(
    std::string_view what, const std::filesystem::path& root, std::string_view ready,
    const ServerUser& user, const std::function<void(const std::filesystem::path&)>& build);

}  // namespace quarry::test::internal
