// The seccomp filter against the kernel's whole x86_64 syscall table: a small BPF interpreter
// runs the exported program on every syscall number, so the refused set is listed here and any
// change to it (a syscall allowed or refused anew) shows up as a failing test.
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "quarry/sandbox/sandbox_internal.h"

namespace quarry::sandbox::internal {
namespace {

// What the program returns for one syscall (seccomp's classic BPF, the subset libseccomp
// emits); a program that leaves the subset fails the test rather than guessing.
uint32_t Evaluate(const std::vector<sock_filter>& program, const seccomp_data& data) {
  uint32_t a = 0, x = 0;
  std::array<uint32_t, BPF_MEMWORDS> mem{};
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& f = program[pc];
    const uint32_t src = BPF_SRC(f.code) == BPF_X ? x : f.k;
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
        if (BPF_MODE(f.code) == BPF_ABS && f.k + 4 <= sizeof data) {
          std::memcpy(&a, reinterpret_cast<const char*>(&data) + f.k, 4);
        } else if (BPF_MODE(f.code) == BPF_MEM) {
          a = mem.at(f.k);
        } else if (BPF_MODE(f.code) == BPF_IMM) {
          a = f.k;
        } else {
          ADD_FAILURE() << "unsupported load at " << pc;
          return 0;
        }
        break;
      case BPF_LDX:
        x = BPF_MODE(f.code) == BPF_MEM ? mem.at(f.k) : f.k;
        break;
      case BPF_ST:
        mem.at(f.k) = a;
        break;
      case BPF_STX:
        mem.at(f.k) = x;
        break;
      case BPF_ALU:
        switch (BPF_OP(f.code)) {
          case BPF_AND:
            a &= src;
            break;
          case BPF_OR:
            a |= src;
            break;
          default:
            ADD_FAILURE() << "unsupported alu op at " << pc;
            return 0;
        }
        break;
      case BPF_MISC:
        (BPF_MISCOP(f.code) == BPF_TAX) ? x = a : a = x;
        break;
      case BPF_RET:
        return BPF_RVAL(f.code) == BPF_A ? a : f.k;
      case BPF_JMP: {
        if (BPF_OP(f.code) == BPF_JA) {
          pc += f.k;
          break;
        }
        bool taken = false;
        switch (BPF_OP(f.code)) {
          case BPF_JEQ:
            taken = a == src;
            break;
          case BPF_JGT:
            taken = a > src;
            break;
          case BPF_JGE:
            taken = a >= src;
            break;
          case BPF_JSET:
            taken = (a & src) != 0;
            break;
          default:
            ADD_FAILURE() << "unsupported jump at " << pc;
            return 0;
        }
        pc += taken ? f.jt : f.jf;
        break;
      }
      default:
        ADD_FAILURE() << "unsupported class at " << pc;
        return 0;
    }
  }
  ADD_FAILURE() << "the program fell off its end";
  return 0;
}

// name -> number, from the kernel headers this was built with.
std::map<std::string, int> SyscallTable() {
  std::map<std::string, int> out;
  std::ifstream in("/usr/include/x86_64-linux-gnu/asm/unistd_64.h");
  const std::regex define(R"(#define __NR_(\w+) (\d+))");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, define)) out[m[1]] = std::stoi(m[2]);
  }
  return out;
}

class SeccompTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = SeccompProgram();
    ASSERT_TRUE(p.has_value()) << p.error().message;
    program_ = std::move(*p);
  }
  uint32_t Action(int nr, std::array<uint64_t, 6> args = {}) const {
    seccomp_data d{};
    d.nr = nr;
    d.arch = AUDIT_ARCH_X86_64;
    for (size_t i = 0; i < 6; ++i) d.args[i] = args[i];
    return Evaluate(program_, d);
  }
  std::vector<sock_filter> program_;
};

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;

#if defined(__x86_64__)
TEST_F(SeccompTest, TheRefusedSetOverTheWholeSyscallTableIsExactlyTheReviewedOne) {
  const std::map<std::string, int> table = SyscallTable();
  ASSERT_GT(table.size(), 300u) << "the kernel headers are missing";
  // With every argument zero. socket(0) and clone(0) are here because their zero arguments
  // are a non-AF_UNIX family and a clone without CLONE_THREAD.
  const std::map<std::string, uint32_t> expected = {{"acct", kEperm},
                                                    {"add_key", kEperm},
                                                    {"adjtimex", kEperm},
                                                    {"bpf", kEperm},
                                                    {"chroot", kEperm},
                                                    {"clock_adjtime", kEperm},
                                                    {"clock_settime", kEperm},
                                                    {"clone", kEperm},
                                                    {"clone3", kEnosys},
                                                    {"delete_module", kEperm},
                                                    {"finit_module", kEperm},
                                                    {"fork", kEperm},
                                                    {"fsconfig", kEperm},
                                                    {"fsetxattr", kEperm},
                                                    {"fsmount", kEperm},
                                                    {"fsopen", kEperm},
                                                    {"fspick", kEperm},
                                                    {"init_module", kEperm},
                                                    {"io_uring_enter", kEperm},
                                                    {"io_uring_register", kEperm},
                                                    {"io_uring_setup", kEperm},
                                                    {"ioperm", kEperm},
                                                    {"iopl", kEperm},
                                                    {"kcmp", kEperm},
                                                    {"kexec_file_load", kEperm},
                                                    {"kexec_load", kEperm},
                                                    {"keyctl", kEperm},
                                                    {"lookup_dcookie", kEperm},
                                                    {"lsetxattr", kEperm},
                                                    {"mknod", kEperm},
                                                    {"mknodat", kEperm},
                                                    {"mount", kEperm},
                                                    {"mount_setattr", kEperm},
                                                    {"move_mount", kEperm},
                                                    {"name_to_handle_at", kEperm},
                                                    {"open_by_handle_at", kEperm},
                                                    {"open_tree", kEperm},
                                                    {"openat2", kEnosys},
                                                    {"perf_event_open", kEperm},
                                                    {"personality", kEperm},
                                                    {"pidfd_getfd", kEperm},
                                                    {"pivot_root", kEperm},
                                                    {"process_vm_readv", kEperm},
                                                    {"process_vm_writev", kEperm},
                                                    {"ptrace", kEperm},
                                                    {"quotactl", kEperm},
                                                    {"quotactl_fd", kEperm},
                                                    {"reboot", kEperm},
                                                    {"request_key", kEperm},
                                                    {"setdomainname", kEperm},
                                                    {"sethostname", kEperm},
                                                    {"setns", kEperm},
                                                    {"settimeofday", kEperm},
                                                    {"setxattr", kEperm},
                                                    {"socket", kEperm},
                                                    {"swapoff", kEperm},
                                                    {"swapon", kEperm},
                                                    {"syslog", kEperm},
                                                    {"umount2", kEperm},
                                                    {"unshare", kEperm},
                                                    {"uselib", kEperm},
                                                    {"userfaultfd", kEperm},
                                                    {"vfork", kEperm},
                                                    {"vhangup", kEperm}};
  std::map<std::string, uint32_t> refused;
  for (const auto& [name, nr] : table) {
    if (static_cast<uint32_t>(nr) > kHighestReviewedSyscall) {
      EXPECT_EQ(Action(nr), kEnosys) << name << " is newer than the review and must be refused";
      continue;
    }
    if (const uint32_t action = Action(nr); action != kAllow) refused[name] = action;
  }
  EXPECT_EQ(refused, expected);
}

TEST_F(SeccompTest, EveryNumberAboveTheReviewAndEveryX32NumberIsRefused) {
  for (uint32_t nr = kHighestReviewedSyscall + 1; nr < 2048; ++nr) {
    ASSERT_EQ(Action(static_cast<int>(nr)), kEnosys) << nr;
  }
  EXPECT_EQ(Action(437), kEnosys);              // openat2
  EXPECT_EQ(Action(452), kEnosys);              // fchmodat2
  EXPECT_EQ(Action(463), kEnosys);              // setxattrat
  EXPECT_EQ(Action(0x40000000 | 2), kEperm);    // x32 open
  EXPECT_EQ(Action(0x40000000 | 257), kEperm);  // x32 openat
  seccomp_data i386{};
  i386.nr = 5;  // open on i386
  i386.arch = AUDIT_ARCH_I386;
  const uint32_t action = Evaluate(program_, i386);
  EXPECT_TRUE((action & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_PROCESS ||
              (action & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_THREAD)
      << std::hex << action;
}

TEST_F(SeccompTest, EveryModeArgumentIsCheckedForSetuidAndSetgid) {
  // (syscall number, index of the mode argument)
  const std::vector<std::pair<int, size_t>> mode_args = {{90, 1},  {91, 1}, {268, 2}, {2, 2},
                                                         {257, 3}, {85, 1}, {83, 1},  {258, 2}};
  for (const auto& [nr, arg] : mode_args) {
    for (const uint64_t mode : {04777ull, 02755ull, 06000ull, 0x100000000ull | 04000ull}) {
      std::array<uint64_t, 6> args{};
      args[arg] = mode;
      if (nr == 2 || nr == 257) args[arg - 1] = O_CREAT | O_WRONLY;
      EXPECT_EQ(Action(nr, args), kEperm) << "syscall " << nr << " mode " << std::oct << mode;
    }
    std::array<uint64_t, 6> plain{};
    plain[arg] = 0777;
    EXPECT_EQ(Action(nr, plain), kAllow) << "syscall " << nr << " with a plain mode";
  }
}

TEST_F(SeccompTest, ThreadsAndUnixSocketsStayAllowed) {
  EXPECT_EQ(Action(56, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD}), kAllow);
  EXPECT_EQ(Action(56, {CLONE_VM | SIGCHLD}), kEperm);  // a process
  EXPECT_EQ(Action(41, {AF_UNIX, SOCK_STREAM}), kAllow);
  EXPECT_EQ(Action(41, {AF_INET, SOCK_STREAM}), kEperm);
  EXPECT_EQ(Action(41, {AF_NETLINK, SOCK_RAW}), kEperm);
}
#endif

}  // namespace
}  // namespace quarry::sandbox::internal
