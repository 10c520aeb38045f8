// The test servers' shared process and file plumbing (server_process.h).
#include "support/server_process.h"

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace quarry::test::internal {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

void FailServer(std::string_view what, const std::string& message) {
  throw std::runtime_error(std::string(what) + ": " + message);
}

ServerUser PickServerUser(std::string_view what, const std::vector<std::string>& names,
                          std::string_view fix) {
  if (::geteuid() != 0) return {};
  for (const auto& name : names) {
    if (const passwd* pw = ::getpwnam(name.c_str())) return {true, pw->pw_uid, pw->pw_gid};
  }
  FailServer(what,
             "running as root, but there is no user to run the server as; " + std::string(fix));
}

void ChownTree(std::string_view what, const fs::path& dir, const ServerUser& user) {
  if (!user.drop) return;
  if (::lchown(dir.c_str(), user.uid, user.gid) != 0) {
    FailServer(what, "cannot chown " + dir.string() + ": " + std::strerror(errno));
  }
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (::lchown(entry.path().c_str(), user.uid, user.gid) != 0) {
      FailServer(what, "cannot chown " + entry.path().string() + ": " + std::strerror(errno));
    }
  }
}

std::string LogTail(const fs::path& log) {
  std::ifstream in(log, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  constexpr size_t kTail = 3000;
  return all.size() > kTail ? "..." + all.substr(all.size() - kTail) : all;
}

namespace {
void WriteChildError(const char* what) {
  ssize_t ignored = ::write(2, what, std::strlen(what));
  (void)ignored;
}
}  // namespace

pid_t Spawn(std::string_view what, const std::vector<std::string>& argv, const fs::path& cwd,
            const fs::path& log, const ServerUser& user, const std::vector<std::string>& env) {
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_text = {"LC_ALL=C", "TZ=UTC", "PATH=/usr/bin:/bin:/usr/sbin"};
  env_text.insert(env_text.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string cwd_text = cwd.string();
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) FailServer(what, "cannot open " + log.string() + ": " + std::strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on: the test process may have threads.
    ::setpgid(0, 0);
    if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) {
      ::_exit(126);
    }
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    if (user.drop &&
        (::setgroups(0, nullptr) != 0 || ::setgid(user.gid) != 0 || ::setuid(user.uid) != 0)) {
      WriteChildError("test server: cannot switch to the server user\n");
      ::_exit(126);
    }
    if (::prctl(PR_SET_PDEATHSIG, SIGQUIT) != 0 || ::getppid() != parent) ::_exit(126);
    if (::chdir(cwd_text.c_str()) != 0) {
      WriteChildError("test server: the server user cannot enter its directory\n");
      ::_exit(126);
    }
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(args[0], args.data(), envp.data());
    WriteChildError("test server: exec failed\n");
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) FailServer(what, std::string("fork failed: ") + std::strerror(fork_errno));
  return pid;
}

std::optional<int> WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return -1;  // not our child any more: treat as gone
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

void StopServer(pid_t pid, int signal) {
  if (pid <= 0) return;
  ::kill(pid, signal);
  if (!WaitFor(pid, 20s)) {
    ::kill(pid, SIGKILL);
    WaitFor(pid, 5s);
  }
}

uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

std::string Euid() { return std::to_string(::geteuid()); }

void EnsureOwnDir(std::string_view what, const fs::path& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    FailServer(what, "cannot create " + dir.string() + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    FailServer(what,
               dir.string() + " is not a directory owned by this user; remove it and run again");
  }
}

void SweepStaleRuns(const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    pid_t pid = std::atoi(name.c_str() + prefix.size());
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

int FreeLoopbackPort(std::string_view what) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) FailServer(what, std::string("socket failed: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  if (port < 0) FailServer(what, "no free port on 127.0.0.1");
  return port;
}

std::string PercentEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

FileLock::FileLock(std::string_view what, const fs::path& path)
    : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
  if (fd_ < 0)
    FailServer(what, "cannot open the lock " + path.string() + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR)
      FailServer(what, "cannot lock " + path.string() + ": " + std::strerror(errno));
  }
}

FileLock::~FileLock() { ::close(fd_); }

fs::path EnsureTemplate(std::string_view what, const fs::path& root, std::string_view ready,
                        const ServerUser& user, const std::function<void(const fs::path&)>& build) {
  EnsureOwnDir(what, root, 0755);  // the server user must traverse it
  const fs::path tmpl = root / "template";
  if (fs::exists(tmpl / ready)) return tmpl;
  FileLock lock(what, root / "lock");
  if (fs::exists(tmpl / ready)) return tmpl;
  // Under the lock nobody else builds: scratch dirs of builders that died go.
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.path().filename().string().rfind("build-", 0) == 0) fs::remove_all(entry.path());
  }
  const fs::path scratch = root / ("build-" + std::to_string(::getpid()));
  fs::create_directory(scratch);
  fs::permissions(scratch, fs::perms::owner_all);
  ChownTree(what, scratch, user);
  build(scratch);
  ::sync();  // the server ran without syncing; the template outlives it
  fs::rename(scratch / "data", tmpl);
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  return tmpl;
}

}  // namespace quarry::test::internal
