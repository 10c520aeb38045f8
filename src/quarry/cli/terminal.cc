// Colour and the pager (terminal.h). The pager is `sh -c COMMAND` fed on a pipe, as git runs
// its pager, so PAGER="less -R" and the like work as they do for other tools.
#include "quarry/cli/terminal.h"
#include "quarry/common/exit_codes.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

extern char** environ;

namespace quarry::cli {
namespace {

std::atomic<ColorMode> g_color{ColorMode::kAuto};
std::atomic<bool> g_pager{true};

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) return true;  // the reader went away (| head): its choice
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Whether `text` is taller or wider than the terminal on stdout.
bool Overflows(const std::string& text) {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0) return false;
  size_t lines = 0, width = 0, widest = 0;
  for (unsigned char c : text) {
    if (c == '\n') {
      ++lines;
      widest = std::max(widest, width);
      width = 0;
    } else if ((c & 0xC0) != 0x80) {  // count characters, not UTF-8 continuation bytes
      ++width;
    }
  }
  widest = std::max(widest, width);
  return lines >= ws.ws_row || (ws.ws_col > 0 && widest > ws.ws_col);
}

}  // namespace

void SetColorMode(ColorMode mode) { g_color = mode; }
ColorMode GetColorMode() { return g_color; }
void SetPagerEnabled(bool enabled) { g_pager = enabled; }

std::string PagerCommand() {
  for (const char* name : {"QUARRY_PAGER", "PAGER"}) {
    if (const char* value = std::getenv(name)) {
      const std::string command = value;
      // Blank is empty: no pager.
      return command.find_first_not_of(" \t\n") == std::string::npos ? "" : command;
    }
  }
  return "less -S -R -F -X";
}

bool PageOrPrint(const std::string& text) {
  std::cout.flush();
  const std::string command = PagerCommand();
  if (!g_pager || command.empty() || command == "cat" || !isatty(STDOUT_FILENO) ||
      !isatty(STDIN_FILENO) || !Overflows(text)) {
    return WriteAll(STDOUT_FILENO, text.data(), text.size());
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return WriteAll(STDOUT_FILENO, text.data(), text.size());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  // quarry ignores SIGPIPE (main); the pager gets the signals' defaults back.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, "/bin/sh", &actions, &attributes, const_cast<char* const*>(argv), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[0]);
  if (spawned != 0) {
    close(fds[1]);
    return WriteAll(STDOUT_FILENO, text.data(), text.size());
  }
  // A pager quit before the end closes the pipe: that is the reader's choice, not an error,
  // and must not kill quarry with SIGPIPE.
  // The pager owns the terminal until it ends, and Ctrl-C there is its own (less stops a
  // search with it): quarry ignores both signals meanwhile; the pager was started without.
  struct sigaction ignore {
  }, old_pipe{}, old_int{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe);
  sigaction(SIGINT, &ignore, &old_int);
  WriteAll(fds[1], text.data(), text.size());
  close(fds[1]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  // A pager that failed (not found: 127; or any failure) may have shown nothing: the text is
  // printed straight after saying so, rather than lost.
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << "quarry: the pager (" << command << ") "
              << (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                    : std::string("was killed"))
              << "; printing straight (--no-pager, or set QUARRY_PAGER)\n";
    return WriteAll(STDOUT_FILENO, text.data(), text.size());
  }
  return true;
}

int FinishOutput(int code) {
  errno = 0;
  std::cout.flush();
  if (std::cout.good() || errno == EPIPE) return code;
  // The write that failed may be long past (a JSON or CSV result streamed into `| head`), and
  // errno with it: a pipe whose reader has gone polls as an error.
  pollfd out{STDOUT_FILENO, POLLOUT, 0};
  if (::poll(&out, 1, 0) == 1 && (out.revents & POLLERR) != 0) return code;
  std::cerr << "quarry: the output could not be written"
            << (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
  return code == 0 ? kExitData : code;
}

}  // namespace quarry::cli
