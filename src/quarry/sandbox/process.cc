// Descriptors, pipes, the child process and the seccomp filter (see sandbox_internal.h).
#include <errno.h>
#include <fcntl.h>
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

#include <cstring>
#include <memory>
#include <utility>

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

void Child::Kill() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
  }
}

int Child::Wait() {
  int status = 0;
  if (pid_ <= 0) return status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return status;
}

std::optional<int> Child::WaitFor(int64_t ms) {
  if (pid_ <= 0) return 0;
  for (int64_t waited = 0;; waited += 5) {
    int status = 0;
    const pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      pid_ = -1;
      return status;
    }
    if (got < 0 && errno != EINTR) return std::nullopt;
    if (waited >= ms) return std::nullopt;
    usleep(5000);
  }
}

Result<Fd> SeccompFilter() {
  std::unique_ptr<void, decltype(&seccomp_release)> ctx(seccomp_init(SCMP_ACT_ALLOW),
                                                        seccomp_release);
  if (!ctx) return Fail(Error::Code::kInternal, "seccomp_init failed");
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  int rc = 0;
  for (const char* name :
       {"ptrace", "mount", "umount2", "pivot_root", "chroot", "keyctl", "add_key", "request_key",
        "bpf", "perf_event_open", "unshare", "setns", "kexec_load", "kexec_file_load",
        "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff",
        "process_vm_readv", "process_vm_writev", "userfaultfd", "fork", "vfork",
        "open_by_handle_at", "name_to_handle_at", "acct", "quotactl", "syslog", "io_uring_setup",
        "io_uring_enter", "io_uring_register", "fsopen", "fsmount", "move_mount", "open_tree"}) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr != __NR_SCMP_ERROR) rc |= seccomp_rule_add(ctx.get(), deny, nr, 0);
  }
  rc |= seccomp_rule_add(ctx.get(), deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  // No setuid/setgid files and no device nodes: the child's uid is quarry's on the host.
  // (syscall, index of its mode argument): refused when the mode sets either bit.
  const std::pair<int, unsigned> kModeArgs[] = {{SCMP_SYS(chmod), 1},  {SCMP_SYS(fchmod), 1},
                                                {SCMP_SYS(fchmodat), 2}, {SCMP_SYS(open), 2},
                                                {SCMP_SYS(openat), 3}, {SCMP_SYS(creat), 1}};
  for (const auto& [nr, arg] : kModeArgs) {
    for (const scmp_datum_t bit : {scmp_datum_t{S_ISUID}, scmp_datum_t{S_ISGID}}) {
      const scmp_arg_cmp mode_sets_bit = {arg, SCMP_CMP_MASKED_EQ, bit, bit};
      rc |= seccomp_rule_add_array(ctx.get(), deny, nr, 1, &mode_sets_bit);
    }
  }
  rc |= seccomp_rule_add(ctx.get(), deny, SCMP_SYS(mknod), 0);
  rc |= seccomp_rule_add(ctx.get(), deny, SCMP_SYS(mknodat), 0);
  // fchmodat2 (Linux 6.6, number 452 on x86_64) is newer than this libseccomp's syscall table.
#if defined(__x86_64__)
  rc |= seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), 452, 0);
#endif
  // New processes are refused, threads (CLONE_THREAD) allowed: numpy and pandas use threads.
  rc |= seccomp_rule_add(ctx.get(), deny, SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  rc |= seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0) return Fail(Error::Code::kInternal, "seccomp_rule_add failed");
  const int fd = memfd_create("quarry-seccomp", 0);  // inherited by the child on purpose
  if (fd < 0) return Fail(Error::Code::kInternal, "memfd_create failed");
  Fd out(fd);
  if (seccomp_export_bpf(ctx.get(), fd) != 0) {
    return Fail(Error::Code::kInternal, "seccomp_export_bpf failed");
  }
  lseek(fd, 0, SEEK_SET);
  return out;
}

void ScrubWorkdir(const std::filesystem::path& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (st.st_mode & (S_ISUID | S_ISGID)) {
      chmod(it->path().c_str(), st.st_mode & 0777 & ~static_cast<mode_t>(S_ISUID | S_ISGID));
    }
  }
}

}  // namespace quarry::sandbox::internal
