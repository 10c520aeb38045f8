#include "quarry/cli/interrupt.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "quarry/cli/cli.h"
#include "quarry/common/scratch.h"

namespace quarry::cli {
namespace {

// The handler may only do async-signal-safe things: it records the signal and writes one byte
// to a pipe that the watcher thread reads. The watcher requests the stop on the first byte; on
// the second it removes the copies of the user's data (ScratchDirs) and quits. A third signal
// quits from the handler itself, should the watcher be stuck.
int g_pipe[2] = {-1, -1};
constexpr std::chrono::seconds kStopGrace{3};
// A signal writes kSignalByte; the scope's end writes kWakeByte, so that the watcher leaves its
// poll at once rather than at the slice's end (a 100 ms slice was half of `quarry sql`'s time).
constexpr char kSignalByte = 1;
constexpr char kWakeByte = 0;
std::atomic<int> g_signal{0};
std::atomic<int> g_count{0};
struct sigaction g_old_int {
}, g_old_term{};

void OnSignal(int signal_number) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, signal_number);
  if (g_count.fetch_add(1) >= 2) {
    static const char kMessage[] = "\nquarry: quit\n";
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    _exit(kExitInterrupted);
  }
  const char byte = kSignalByte;
  [[maybe_unused]] const ssize_t n = write(g_pipe[1], &byte, 1);
}

}  // namespace

InterruptScope::InterruptScope() {
  g_signal = 0;
  g_count = 0;
  if (pipe2(g_pipe, O_CLOEXEC) != 0) return;  // no pipe: signals keep their default action
  watcher_ = std::jthread([this](std::stop_token self) {
    pollfd fd{g_pipe[0], POLLIN, 0};
    int seen = 0;
    std::chrono::steady_clock::time_point quit_at;
    while (!self.stop_requested()) {
      // Some work cannot see a stop (a DuckDB function busy on one row, SQLite inside one step,
      // DuckDB's CSV sniff): past the grace the process quits as a second Ctrl-C would, so a
      // stop never waits on the engine (issue 22: SIGTERM took 8 s and more).
      if (seen == 1 && std::chrono::steady_clock::now() >= quit_at) {
        static const char kMessage[] =
            "\nquarry: the work did not stop within 3 s: quit at once (a run's trace.json is not "
            "written)\n";
        [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
        ScratchDirs::RemoveAll();
        _exit(kExitInterrupted);
      }
      if (poll(&fd, 1, 100) <= 0) continue;
      char byte;
      if (read(g_pipe[0], &byte, 1) != 1) continue;
      if (byte == kWakeByte) continue;  // the scope is ending: the loop's test sees the stop
      if (++seen == 1) {
        static const char kMessage[] = "\nquarry: stopping (Ctrl-C again to quit at once)\n";
        [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
        source_.request_stop();
        quit_at = std::chrono::steady_clock::now() + kStopGrace;
        continue;
      }
      // The user will not wait for a clean stop; the copies of their data still go.
      static const char kMessage[] =
          "\nquarry: interrupted twice: quit at once (a run's trace.json is not written)\n";
      [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
      ScratchDirs::RemoveAll();
      _exit(kExitInterrupted);
    }
  });
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
}

InterruptScope::~InterruptScope() {
  if (g_pipe[0] < 0) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  watcher_.request_stop();
  const char byte = kWakeByte;
  [[maybe_unused]] const ssize_t n = write(g_pipe[1], &byte, 1);
  if (watcher_.joinable()) watcher_.join();
  close(g_pipe[0]);
  close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
}

int InterruptScope::signal_number() const { return g_signal.load(); }

}  // namespace quarry::cli
