// The sandbox's OS plumbing: owned file descriptors, pipes, a child process that is killed by
// process group and reaped when dropped, and the seccomp filter. Only sandbox/ includes this.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/sandbox/sandbox.h"

namespace quarry::sandbox::internal {

inline constexpr const char* kPython = "/usr/bin/python3";
inline constexpr const char* kWorkInside = "/workdir";
inline constexpr const char* kTablesInside = "/tables";

// Shared by the one-shot path (sandbox.cc) and the kernel (kernel.cc).
std::string FindBwrap();
// The runner's table specs, with inside paths when isolated.
nlohmann::ordered_json TablesJson(const std::vector<TableFile>& files, const Options& o,
                                  bool isolated);
nlohmann::ordered_json LastJson(const std::optional<LastResult>& last);
// The hand-built environment (nothing of quarry's is inherited); `home` is the work directory.
std::vector<std::string> Environment(const std::string& home);
// bubblewrap around `python3 -I -c <runner>`, mounting o.workdir, o.tables_dir and o.tables.
std::vector<std::string> BwrapArgs(const std::string& bwrap, const Options& o, int seccomp_fd,
                                   const std::vector<std::string>& extra_env);
// Reads what is available on non-blocking `fd` into `out`, keeping at most `cap` bytes and
// counting all in `total`. Returns false at EOF.
bool Drain(int fd, std::string& out, size_t cap, size_t& total);
std::string Signal(int sig);  // "SIGXCPU (the CPU time limit)", ...
// The tail of `text` within max_bytes, cut at a line start, marked when cut.
std::string TailLines(const std::string& text, size_t max_bytes);
// Regular image files in `dir` (never symlinks) as "name@mtime".
std::set<std::string> ImageFiles(const std::filesystem::path& dir);

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Close();

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
  bool Open();  // O_CLOEXEC on both ends
};

// Writes all of `data`, retrying on EINTR; stops quietly on EPIPE (the child has gone).
void WriteAll(int fd, const std::string& data);

// What to start. fds[0..4] become the child's 0..4 (-1: /dev/null for 0-2, closed for 3-4);
// every other descriptor is closed. An empty env means an empty environment.
struct ChildSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::filesystem::path cwd;  // empty: unchanged
  std::array<int, 5> fds;
  bool load_seccomp = false;  // install the filter from fds[4] in the child itself
  Options limits;             // rlimits applied before exec
  bool apply_rlimits = true;
};

class Child {
 public:
  static Result<Child> Start(const ChildSpec& spec);
  Child(Child&& o) noexcept : pid_(o.pid_), killed_(std::move(o.killed_)) { o.pid_ = -1; }
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  ~Child();
  // SIGKILL to the whole process group and to every descendant (bubblewrap's inner processes
  // are in a session of their own).
  void Kill();
  // The waitpid status; once. After a Kill it also waits (at most 2 s) until every process it
  // killed is gone, so nothing of the sandbox still runs when it returns.
  int Wait();
  // Waits at most `ms` for the child to end on its own: its waitpid status, or nullopt (alive).
  std::optional<int> WaitFor(int64_t ms);
  pid_t pid() const { return pid_; }

 private:
  explicit Child(pid_t pid) : pid_(pid) {}
  void WaitForKilled();
  pid_t pid_ = -1;
  std::vector<pid_t> killed_;
};

// Every process below `root` (children, theirs, ...), from /proc; not `root` itself.
std::vector<pid_t> Descendants(pid_t root);
// The threads of every process below `root`: the sandboxed Python's, for the kernel's check
// that a call left no thread running.
int64_t ThreadCount(pid_t root);

// The seccomp filter. The default is allow, but every syscall of the x86_64 table up to
// kHighestReviewedSyscall was reviewed (tests/sandbox/seccomp_test.cc lists the refused set), and
// every number above it, and the x32 numbers, are refused: a syscall newer than the review is
// never allowed by default. Refused with EPERM: socket families other than AF_UNIX, process
// creation (fork, vfork, clone without CLONE_THREAD), ptrace, mount and the new mount API,
// keyctl, bpf, perf_event_open, unshare, setns, module loading, kexec, device nodes (mknod),
// extended attributes, a setuid/setgid bit in any mode argument (chmod, open, mkdir and their
// relatives); with ENOSYS: clone3 (threads fall back to clone), openat2 (its mode sits in a
// struct a filter cannot read) and every number above the review (fchmodat2 among them).
// Other architectures' calls (int 0x80) kill the process.
inline constexpr uint32_t kHighestReviewedSyscall = 450;  // set_mempolicy_home_node (Linux 6.1)
Result<std::vector<sock_filter>> SeccompProgram();
// The same program in a memfd (for bwrap --seccomp, or to load directly).
Result<Fd> SeccompFilter();

// After a run: clears setuid/setgid bits on every file and directory under the work directory
// and removes device nodes, FIFOs and sockets. The child's uid maps to quarry's, so when quarry
// runs as root a setuid file the child made would be a setuid-root file on the host; the
// seccomp filter refuses to make one, and this is the second layer. It walks by directory
// descriptors (openat, fstatat with AT_SYMLINK_NOFOLLOW, O_NOFOLLOW) and changes a file only
// through a descriptor of that file, never by path: it never follows a symlink, never leaves
// the work directory's file system, and a sandbox that renames or swaps entries meanwhile
// cannot point it at a host file. The directory itself must not be a symlink.
// The disk space (allocated blocks) of the regular files under `dir`, walked as the scrub walks;
// the walk stops once the total passes `stop_above`. Directories nested deeper than the walk
// goes (64 levels) count as past `stop_above`: what cannot be counted is not allowed.
int64_t DirectoryBytes(const std::filesystem::path& dir, int64_t stop_above);
// Removes the regular files under `dir` last written at or after `since_unix_s` (a call stopped
// for the disk quota leaves nothing it wrote), at any depth (directories deeper than 64 levels
// are lifted to the top first; the sandbox must be stopped). Returns how many.
int RemoveFilesWrittenSince(const std::filesystem::path& dir, int64_t since_unix_s);

void ScrubWorkdir(const std::filesystem::path& dir);

}  // namespace quarry::sandbox::internal
