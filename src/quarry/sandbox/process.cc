// Descriptors, pipes, the child process and the seccomp filter (see sandbox_internal.h).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "quarry/sandbox/sandbox_internal.h"

namespace quarry::sandbox::internal {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    Close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Fd::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool Pipe::Open() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return false;
  read = Fd(p[0]);
  write = Fd(p[1]);
  return true;
}

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

namespace {

// For RLIMIT_CPU the hard limit sits one second above the soft one, so the process gets
// SIGXCPU (reported as the CPU limit) before the kernel's SIGKILL.
void SetLimit(int resource, rlim_t value) {
  const rlimit l{value, resource == RLIMIT_CPU ? value + 1 : value};
  setrlimit(resource, &l);
}

}  // namespace

Result<Child> Child::Start(const ChildSpec& spec) {
  // Everything the child needs is prepared here: after fork only async-signal-safe calls.
  std::vector<char*> argv, envp;
  for (const auto& s : spec.argv) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  for (const auto& s : spec.env) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  std::vector<sock_filter> program;
  if (spec.load_seccomp) {
    const off_t size = lseek(spec.fds[4], 0, SEEK_END);
    program.resize(static_cast<size_t>(size) / sizeof(sock_filter));
    if (pread(spec.fds[4], program.data(), static_cast<size_t>(size), 0) != size) {
      return Fail(Error::Code::kInternal, "cannot read the seccomp program");
    }
  }
  const sock_fprog fprog{static_cast<unsigned short>(program.size()), program.data()};
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  const Options& lim = spec.limits;

  const pid_t pid = fork();
  if (pid < 0) return Fail(Error::Code::kInternal, std::string("fork failed: ") + strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Lift the sources above 10 first so that dup2 into 0..4 cannot clobber one of them.
    int high[5];
    for (int i = 0; i < 5; ++i) {
      const int src = spec.fds[i] >= 0 ? spec.fds[i] : (i < 3 ? devnull : -1);
      high[i] = src >= 0 ? fcntl(src, F_DUPFD_CLOEXEC, 10) : -1;
    }
    for (int i = 0; i < 5; ++i) {
      if (high[i] >= 0) {
        dup2(high[i], i);  // dup2 clears FD_CLOEXEC on the copy
      } else {
        close(i);
      }
    }
    close_range(5, ~0U, 0);
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) _exit(126);
    if (spec.apply_rlimits) {
      SetLimit(RLIMIT_AS, static_cast<rlim_t>(lim.address_space_mb) << 20);
      SetLimit(RLIMIT_CPU, static_cast<rlim_t>(lim.cpu_seconds));
      SetLimit(RLIMIT_FSIZE, static_cast<rlim_t>(lim.file_size_mb) << 20);
      SetLimit(RLIMIT_NPROC, static_cast<rlim_t>(lim.max_processes));
      SetLimit(RLIMIT_NOFILE, static_cast<rlim_t>(lim.max_open_files));
      SetLimit(RLIMIT_CORE, 0);
    }
    if (spec.load_seccomp) {
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(126);
      if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) _exit(126);
      close(4);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (devnull >= 0) close(devnull);
  return Child(pid);
}

Child::~Child() {
  if (pid_ > 0) {
    Kill();
    Wait();
  }
}

namespace {

// /proc/<pid>/stat's state and parent; false when the process is gone.
bool ProcState(pid_t pid, char& state, pid_t& ppid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  char buf[512];
  const ssize_t n = read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* close_paren = std::strrchr(buf, ')');  // the name may hold spaces and parens
  int parent = 0;
  if (!close_paren || std::sscanf(close_paren + 1, " %c %d", &state, &parent) != 2) return false;
  ppid = parent;
  return true;
}

}  // namespace

std::vector<pid_t> Descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> all;  // pid, parent
  if (DIR* d = opendir("/proc")) {
    while (const dirent* e = readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      char state = 0;
      pid_t ppid = 0;
      if (*end == 0 && pid > 0 && ProcState(static_cast<pid_t>(pid), state, ppid)) {
        all.emplace_back(static_cast<pid_t>(pid), ppid);
      }
    }
    closedir(d);
  }
  std::vector<pid_t> out = {root};
  for (size_t i = 0; i < out.size(); ++i) {
    for (const auto& [pid, ppid] : all) {
      if (ppid == out[i]) out.push_back(pid);
    }
  }
  out.erase(out.begin());
  return out;
}

int64_t ThreadCount(pid_t root) {
  int64_t total = 0;
  for (const pid_t pid : Descendants(root)) {
    const std::string path = "/proc/" + std::to_string(pid) + "/status";
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    char buf[4096];
    const ssize_t n = fd.get() >= 0 ? read(fd.get(), buf, sizeof buf - 1) : -1;
    if (n <= 0) continue;
    buf[n] = 0;
    if (const char* t = std::strstr(buf, "\nThreads:")) total += std::strtol(t + 9, nullptr, 10);
  }
  return total;
}

void Child::Kill() {
  if (pid_ <= 0) return;
  // bubblewrap's inner processes run in a session of their own (--new-session), out of reach
  // of the group kill: each is killed by pid too, and Wait() waits for them to be gone.
  for (const pid_t pid : Descendants(pid_)) {
    if (std::find(killed_.begin(), killed_.end(), pid) == killed_.end()) killed_.push_back(pid);
    kill(pid, SIGKILL);
  }
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
}

int Child::Wait() {
  int status = 0;
  if (pid_ <= 0) return status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  WaitForKilled();
  return status;
}

void Child::WaitForKilled() {
  // Reaped by the pid namespace's init or the host's, not by us: gone or a zombie is enough.
  for (int waited_ms = 0; !killed_.empty() && waited_ms < 2000; waited_ms += 2) {
    std::erase_if(killed_, [](pid_t pid) {
      char state = 0;
      pid_t ppid = 0;
      return !ProcState(pid, state, ppid) || state == 'Z' || state == 'X';
    });
    if (!killed_.empty()) usleep(2000);
  }
  killed_.clear();
}

std::optional<int> Child::WaitFor(int64_t ms) {
  if (pid_ <= 0) return 0;
  for (int64_t waited = 0;; waited += 5) {
    int status = 0;
    const pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      pid_ = -1;
      WaitForKilled();
      return status;
    }
    if (got < 0 && errno != EINTR) return std::nullopt;
    if (waited >= ms) return std::nullopt;
    usleep(5000);
  }
}

Result<std::vector<sock_filter>> SeccompProgram() {
  std::unique_ptr<void, decltype(&seccomp_release)> ctx(seccomp_init(SCMP_ACT_ALLOW),
                                                        seccomp_release);
  if (!ctx) return Fail(Error::Code::kInternal, "seccomp_init failed");
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  // ENOSYS, as an older kernel would answer: libc and Python fall back to the older call.
  const uint32_t absent = SCMP_ACT_ERRNO(ENOSYS);
  int rc = 0;
  for (const char* name :
       {"ptrace", "mount", "umount2", "pivot_root", "chroot", "keyctl", "add_key", "request_key",
        "bpf", "perf_event_open", "unshare", "setns", "kexec_load", "kexec_file_load",
        "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff",
        "process_vm_readv", "process_vm_writev", "userfaultfd", "fork", "vfork",
        "open_by_handle_at", "name_to_handle_at", "acct", "quotactl", "quotactl_fd", "syslog",
        "io_uring_setup", "io_uring_enter", "io_uring_register", "fsopen", "fsmount", "fsconfig",
        "fspick", "move_mount", "open_tree", "mount_setattr", "mknod", "mknodat",
        // Extended attributes carry file capabilities and ACLs: nothing the analysis needs.
        "setxattr", "lsetxattr", "fsetxattr", "settimeofday", "clock_settime", "adjtimex",
        "clock_adjtime", "sethostname", "setdomainname", "iopl", "ioperm", "vhangup",
        "lookup_dcookie", "uselib", "personality", "kcmp", "pidfd_getfd"}) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
      return Fail(Error::Code::kInternal, std::string("seccomp: unknown syscall ") + name);
    }
    rc |= seccomp_rule_add(ctx.get(), deny, nr, 0);
  }
  // openat2 carries its mode inside struct open_how, which a filter cannot read: refused whole.
  rc |= seccomp_rule_add(ctx.get(), absent, SCMP_SYS(openat2), 0);
  rc |= seccomp_rule_add(ctx.get(), deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  // No setuid/setgid files or directories: the child's uid is quarry's on the host.
  // (syscall, index of its mode argument): refused when the mode sets either bit. Every
  // syscall that takes a mode is here; those whose mode a filter cannot see are refused above,
  // and the numbers above kHighestReviewedSyscall (fchmodat2 among them) by the prefix.
  const std::pair<int, unsigned> kModeArgs[] = {{SCMP_SYS(chmod), 1},    {SCMP_SYS(fchmod), 1},
                                                {SCMP_SYS(fchmodat), 2}, {SCMP_SYS(open), 2},
                                                {SCMP_SYS(openat), 3},   {SCMP_SYS(creat), 1},
                                                {SCMP_SYS(mkdir), 1},    {SCMP_SYS(mkdirat), 2}};
  for (const auto& [nr, arg] : kModeArgs) {
    for (const scmp_datum_t bit : {scmp_datum_t{S_ISUID}, scmp_datum_t{S_ISGID}}) {
      const scmp_arg_cmp mode_sets_bit = {arg, SCMP_CMP_MASKED_EQ, bit, bit};
      rc |= seccomp_rule_add_array(ctx.get(), deny, nr, 1, &mode_sets_bit);
    }
  }
  // New processes are refused, threads (CLONE_THREAD) allowed: numpy and pandas use threads.
  rc |= seccomp_rule_add(ctx.get(), deny, SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  rc |= seccomp_rule_add(ctx.get(), absent, SCMP_SYS(clone3), 0);
  if (rc != 0) return Fail(Error::Code::kInternal, "seccomp_rule_add failed");
  const int fd = memfd_create("quarry-seccomp-build", MFD_CLOEXEC);
  if (fd < 0) return Fail(Error::Code::kInternal, "memfd_create failed");
  Fd tmp(fd);
  if (seccomp_export_bpf(ctx.get(), fd) != 0) {
    return Fail(Error::Code::kInternal, "seccomp_export_bpf failed");
  }
  const off_t size = lseek(fd, 0, SEEK_END);
  std::vector<sock_filter> generated(static_cast<size_t>(size) / sizeof(sock_filter));
  if (size <= 0 || pread(fd, generated.data(), static_cast<size_t>(size), 0) != size) {
    return Fail(Error::Code::kInternal, "cannot read the exported seccomp program");
  }
  std::vector<sock_filter> program;
#if defined(__x86_64__)
  // A prefix before libseccomp's program, which starts over by loading the architecture (BPF
  // jumps are relative, so its own offsets still hold). On x86_64 it refuses the x32 numbers
  // and every number above the reviewed table: a syscall newer than this review (openat2 was
  // one, fchmodat2 another) is refused until someone reviews it, rather than allowed.
  constexpr uint32_t kX32Bit = 0x40000000;
  program = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 6),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, kHighestReviewedSyscall, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JA | BPF_K, 2, 0, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
  };
#endif
  program.insert(program.end(), generated.begin(), generated.end());
  return program;
}

Result<Fd> SeccompFilter() {
  auto program = SeccompProgram();
  if (!program) return std::unexpected(program.error());
  const int fd = memfd_create("quarry-seccomp", 0);  // inherited by the child on purpose
  if (fd < 0) return Fail(Error::Code::kInternal, "memfd_create failed");
  Fd out(fd);
  const std::string_view bytes(reinterpret_cast<const char*>(program->data()),
                               program->size() * sizeof(sock_filter));
  WriteAll(fd, std::string(bytes));
  lseek(fd, 0, SEEK_SET);
  return out;
}

namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

// Deeper than this a walk does not descend (each level holds a descriptor): a directory found
// there is lifted to the work directory's top level first (LiftDeepDirectories), so the quota,
// the removal and the scrub still see everything below it, however deep the sandbox nested it.
constexpr int kMaxWalkDepth = 64;

// Moves every directory at depth kMaxWalkDepth + 1 under `dir` to the top level (`root`), under
// a fresh name, by descriptors and never through a link. Returns how many it moved.
int LiftOnce(int root, int dir, dev_t device, int depth, int& serial) {
  const int listing = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (listing < 0) return 0;
  std::unique_ptr<DIR, DirCloser> d(fdopendir(listing));
  if (!d) {
    close(listing);
    return 0;
  }
  // A duplicate shares the directory's offset: a walk before this one left it at the end.
  rewinddir(d.get());
  std::vector<std::string> subdirs;
  while (const dirent* e = readdir(d.get())) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    struct stat st {};
    if (fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
        st.st_dev == device) {
      subdirs.emplace_back(e->d_name);
    }
  }
  int moved = 0;
  for (const std::string& name : subdirs) {
    if (depth + 1 > kMaxWalkDepth) {
      for (int tries = 0; tries < 1000; ++tries) {
        const std::string to = ".quarry-deep-" + std::to_string(serial++);
        if (renameat2(dir, name.c_str(), root, to.c_str(), RENAME_NOREPLACE) == 0) {
          ++moved;
          break;
        }
        if (errno != EEXIST) break;
      }
      continue;
    }
    Fd sub(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat now {};
    if (sub.get() >= 0 && fstat(sub.get(), &now) == 0 && now.st_dev == device) {
      moved += LiftOnce(root, sub.get(), device, depth + 1, serial);
    }
  }
  return moved;
}

// Repeats LiftOnce until nothing is deeper than kMaxWalkDepth (each pass lifts a whole band of
// kMaxWalkDepth levels); bounded, so a tree built to defeat it still ends. Only called when the
// sandbox is stopped or idle between calls.
void LiftDeepDirectories(int root, dev_t device) {
  int serial = 0;
  for (int pass = 0; pass < 100000 && LiftOnce(root, root, device, 0, serial) > 0; ++pass) {
  }
}

// One directory, through its descriptor: names are looked up relative to `dir` without
// following links, and every change acts on a descriptor of the object itself, so a rename or
// symlink swapped in by the sandbox meanwhile can redirect nothing outside the work directory.
void ScrubDirectory(int dir, dev_t device, int depth) {
  if (depth > kMaxWalkDepth) return;
  const int listing = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (listing < 0) return;
  std::unique_ptr<DIR, DirCloser> d(fdopendir(listing));
  if (!d) {
    close(listing);
    return;
  }
  // A duplicate shares the directory's offset: a walk before this one left it at the end.
  rewinddir(d.get());
  constexpr mode_t kSetId = S_ISUID | S_ISGID;
  while (const dirent* e = readdir(d.get())) {
    const char* name = e->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    struct stat st {};
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode)) continue;  // a link is left as it is and never followed
    if (S_ISDIR(st.st_mode)) {
      Fd sub(openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      struct stat now {};
      // Another file system under the work directory is not ours to walk.
      if (sub.get() < 0 || fstat(sub.get(), &now) != 0 || !S_ISDIR(now.st_mode) ||
          now.st_dev != device) {
        continue;
      }
      if (now.st_mode & kSetId) fchmod(sub.get(), now.st_mode & 0777);
      ScrubDirectory(sub.get(), device, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      if (!(st.st_mode & kSetId)) continue;
      // O_NONBLOCK: a FIFO swapped in under this name must not hang the open.
      Fd f(openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
      struct stat now {};
      if (f.get() >= 0 && fstat(f.get(), &now) == 0 && S_ISREG(now.st_mode) &&
          now.st_dev == device) {
        fchmod(f.get(), now.st_mode & 0777);
      }
    } else {
      // A device node, FIFO or socket: nothing an analysis hands back, and a FIFO would hang
      // whatever opens it later. unlinkat never follows a link: at worst a link goes.
      unlinkat(dir, name, 0);
    }
  }
}

}  // namespace

namespace {

// Calls `visit(dir_fd, name, st)` for every regular file under `dir`, by descriptors and never
// through a link or onto another file system (as the scrub walks); stops when it returns false.
template <typename Visit>
bool WalkFiles(int dir, dev_t device, int depth, Visit& visit, bool& too_deep) {
  if (depth > kMaxWalkDepth) {
    too_deep = true;
    return true;
  }
  const int listing = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (listing < 0) return true;
  std::unique_ptr<DIR, DirCloser> d(fdopendir(listing));
  if (!d) {
    close(listing);
    return true;
  }
  // A duplicate shares the directory's offset: a walk before this one left it at the end.
  rewinddir(d.get());
  while (const dirent* e = readdir(d.get())) {
    const char* name = e->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    struct stat st {};
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != device) continue;
    if (S_ISDIR(st.st_mode)) {
      Fd sub(openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.get() >= 0 && !WalkFiles(sub.get(), device, depth + 1, visit, too_deep)) {
        return false;
      }
    } else if (S_ISREG(st.st_mode) && !visit(dir, name, st)) {
      return false;
    }
  }
  return true;
}

// Returns false when part of the tree lay deeper than kMaxWalkDepth and was not visited.
// `lift`: first lift such directories to the top (the sandbox must be stopped or idle).
template <typename Visit>
bool ForEachFile(const std::filesystem::path& dir, bool lift, Visit visit) {
  Fd root(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (root.get() < 0 || fstat(root.get(), &st) != 0) return true;
  if (lift) LiftDeepDirectories(root.get(), st.st_dev);
  bool too_deep = false;
  WalkFiles(root.get(), st.st_dev, 0, visit, too_deep);
  return !too_deep;
}

}  // namespace

int64_t DirectoryBytes(const std::filesystem::path& dir, int64_t stop_above) {
  int64_t total = 0;
  const bool whole = ForEachFile(dir, /*lift=*/false, [&](int, const char*, const struct stat& st) {
    total += static_cast<int64_t>(st.st_blocks) * 512;
    return total <= stop_above;
  });
  // What lies deeper than the walk goes cannot be counted, so it counts as past the quota.
  return whole ? total : std::max(total, stop_above + 1);
}

int RemoveFilesWrittenSince(const std::filesystem::path& dir, int64_t since_unix_s) {
  int removed = 0;
  ForEachFile(dir, /*lift=*/true, [&](int parent, const char* name, const struct stat& st) {
    if (st.st_mtim.tv_sec >= since_unix_s && unlinkat(parent, name, 0) == 0) ++removed;
    return true;
  });
  return removed;
}

void ScrubWorkdir(const std::filesystem::path& dir) {
  Fd root(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (root.get() < 0 || fstat(root.get(), &st) != 0) return;
  LiftDeepDirectories(root.get(), st.st_dev);
  ScrubDirectory(root.get(), st.st_dev, 0);
}

}  // namespace quarry::sandbox::internal
