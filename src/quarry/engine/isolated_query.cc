// The query process of isolated_query.h. Parent and child talk over a socket pair (send() with
// MSG_NOSIGNAL: a dead child is an error, not a SIGPIPE) in frames: a byte for the kind ('Q'
// query, 'P' progress, 'R' result), a 4-byte length, the payload. Integers are written in host
// order: both ends are the same binary.
#include "quarry/engine/isolated_query.h"

#include <dirent.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void I64(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void F64(double v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void Str(std::string_view s) {
    I64(static_cast<int64_t>(s.size()));
    out_.append(s);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Reads what Writer wrote; any short or malformed field makes ok() false.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  uint8_t U8() {
    if (!Need(1)) return 0;
    return static_cast<uint8_t>(in_[pos_++]);
  }
  int64_t I64() {
    int64_t v = 0;
    if (!Need(sizeof v)) return 0;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  double F64() {
    double v = 0;
    if (!Need(sizeof v)) return 0;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string Str() {
    const int64_t n = I64();
    if (n < 0 || !Need(static_cast<size_t>(n))) return {};
    std::string s(in_.substr(pos_, static_cast<size_t>(n)));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  // A count of items that each take at least one byte: never more than what is left.
  size_t Count() {
    const int64_t n = I64();
    if (n < 0 || static_cast<size_t>(n) > in_.size() - pos_) {
      ok_ = false;
      return 0;
    }
    return static_cast<size_t>(n);
  }

 private:
  bool Need(size_t n) {
    if (!ok_ || in_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

std::string EncodeOutcome(const QueryOutcome& outcome) {
  Writer w;
  if (!outcome) {
    const QueryFailure& f = outcome.error();
    w.U8(0);
    w.U8(static_cast<uint8_t>(f.failure_class));
    w.Str(f.rule);
    w.Str(f.message);
    w.U8(static_cast<uint8_t>(f.code));
    return std::move(w.bytes());
  }
  const ResultTable& t = *outcome;
  w.U8(1);
  w.I64(static_cast<int64_t>(t.columns.size()));
  for (const auto& c : t.columns) w.Str(c);
  w.I64(static_cast<int64_t>(t.types.size()));
  for (const auto& c : t.types) w.Str(c);
  w.I64(static_cast<int64_t>(t.rows.size()));
  for (size_t r = 0; r < t.rows.size(); ++r) {
    w.I64(static_cast<int64_t>(t.rows[r].size()));
    for (size_t c = 0; c < t.rows[r].size(); ++c) {
      const auto& cell = t.rows[r][c];
      const CellKind kind =
          r < t.kinds.size() && c < t.kinds[r].size() ? t.kinds[r][c] : CellKind::kText;
      w.U8(static_cast<uint8_t>(kind));
      w.U8(cell ? 1 : 0);
      if (cell) w.Str(*cell);
    }
  }
  w.I64(t.row_count);
  return std::move(w.bytes());
}

std::optional<QueryOutcome> DecodeOutcome(std::string_view bytes) {
  Reader r(bytes);
  const uint8_t ok = r.U8();
  if (ok == 0) {
    QueryFailure f;
    const uint8_t cls = r.U8();
    if (cls > static_cast<uint8_t>(FailureClass::kBadArguments)) return std::nullopt;
    f.failure_class = static_cast<FailureClass>(cls);
    f.rule = r.Str();
    f.message = r.Str();
    const uint8_t code = r.U8();
    if (code > static_cast<uint8_t>(Error::Code::kCancelled)) return std::nullopt;
    f.code = static_cast<Error::Code>(code);
    if (!r.ok()) return std::nullopt;
    return QueryOutcome(std::unexpected(std::move(f)));
  }
  if (ok != 1) return std::nullopt;
  ResultTable t;
  for (size_t n = r.Count(); n > 0 && r.ok(); --n) t.columns.push_back(r.Str());
  for (size_t n = r.Count(); n > 0 && r.ok(); --n) t.types.push_back(r.Str());
  for (size_t rows = r.Count(); rows > 0 && r.ok(); --rows) {
    std::vector<std::optional<std::string>> row;
    std::vector<CellKind> kinds;
    for (size_t cols = r.Count(); cols > 0 && r.ok(); --cols) {
      const uint8_t kind = r.U8();
      if (kind > static_cast<uint8_t>(CellKind::kBlob)) return std::nullopt;
      kinds.push_back(static_cast<CellKind>(kind));
      if (r.U8()) {
        row.emplace_back(r.Str());
      } else {
        row.emplace_back(std::nullopt);
      }
    }
    t.rows.push_back(std::move(row));
    t.kinds.push_back(std::move(kinds));
  }
  t.row_count = r.I64();
  if (!r.ok()) return std::nullopt;
  return QueryOutcome(std::move(t));
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool SendFrame(int fd, char kind, std::string_view payload) {
  std::string frame(1, kind);
  const auto size = static_cast<uint32_t>(payload.size());
  frame.append(reinterpret_cast<const char*>(&size), sizeof size);
  frame.append(payload);
  return SendAll(fd, frame);
}

// Takes one whole frame off the front of `buffer`, if there is one.
std::optional<std::pair<char, std::string>> TakeFrame(std::string& buffer) {
  if (buffer.size() < 5) return std::nullopt;
  uint32_t size = 0;
  std::memcpy(&size, buffer.data() + 1, sizeof size);
  if (buffer.size() < 5 + static_cast<size_t>(size)) return std::nullopt;
  std::pair<char, std::string> frame{buffer[0], buffer.substr(5, size)};
  buffer.erase(0, 5 + static_cast<size_t>(size));
  return frame;
}

// The child keeps no pipe or socket but its own: a copy of the MCP client's stdout pipe or a
// sandbox kernel's pipe would keep the other end from seeing EOF while the query runs.
// Regular files stay open: they are the engine's (a .duckdb file, spill files).
void CloseForeignChannels(int keep) {
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    if (null_fd > STDERR_FILENO) close(null_fd);
  }
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  std::vector<int> close_fds;
  const int dir_fd = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    const int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dir_fd || fd == keep || fd <= STDERR_FILENO) continue;
    struct stat st {};
    if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
      close_fds.push_back(fd);
  }
  closedir(dir);
  for (int fd : close_fds) close(fd);
}

// The child: queries in, outcomes out, until the parent closes its end.
[[noreturn]] void ServeQueries(int fd, pid_t parent, const std::function<void()>& setup,
                               const QueryProcess::Serve& serve) {
  // The parent (its Ctrl-C handler) decides; the child is only ever killed.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  CloseForeignChannels(fd);
  if (setup) setup();
  if (!SendFrame(fd, 'S', {})) _exit(0);  // started (QueryProcess::Spawn waits for it)
  const ProgressFn report = [fd](const std::string& what, double percent) {
    Writer w;
    w.F64(percent);
    w.Str(what);
    SendFrame(fd, 'P', w.bytes());
  };
  std::string buffer;
  char chunk[65536];
  while (true) {
    auto frame = TakeFrame(buffer);
    if (!frame) {
      const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);
      buffer.append(chunk, static_cast<size_t>(n));
      continue;
    }
    Reader r(frame->second);
    IsolatedQuery query;
    query.sql = r.Str();
    query.timeout_ms = r.I64();
    query.max_rows = static_cast<int>(r.I64());
    if (frame->first != 'Q' || !r.ok()) _exit(2);
    QueryOutcome outcome = std::unexpected(QueryFailure{});
    try {
      outcome = serve(query, report);
    } catch (const std::exception& e) {
      outcome = std::unexpected(QueryFailure{FailureClass::kRuntimeError, "",
                                             std::string("the engine failed: ") + e.what()});
    }
    if (!SendFrame(fd, 'R', EncodeOutcome(outcome))) _exit(0);
  }
}

// SQLite's process-wide locks that a child's query takes: the main one (sqlite3_vfs_find, in
// every open), the unix VFS's (file locks, temporary files), the page cache's (its shared group
// and its buffer), the allocator's (every malloc, since the hard heap limit needs memory
// statistics) and the random generator's. Another thread (the thread store, RankTables, the
// copy for Python) holding one at fork() would leave it held forever in the child, which then
// hung until it was killed (a live run's first query timed out so; a test's child opening a
// database did, until the main and page cache locks were held too). Taken in SQLite's own
// nesting order (outermost first: the main lock around initialisation, the allocator's
// innermost), released on both sides of fork().
class SqliteQuiet {
 public:
  SqliteQuiet() {
    sqlite3_initialize();
    for (int id : {SQLITE_MUTEX_STATIC_MAIN, SQLITE_MUTEX_STATIC_VFS1, SQLITE_MUTEX_STATIC_LRU,
                   SQLITE_MUTEX_STATIC_PMEM, SQLITE_MUTEX_STATIC_MEM, SQLITE_MUTEX_STATIC_PRNG}) {
      if (sqlite3_mutex* m = sqlite3_mutex_alloc(id)) {
        sqlite3_mutex_enter(m);
        held_.push_back(m);
      }
    }
  }
  void Release() {
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) sqlite3_mutex_leave(*it);
    held_.clear();
  }
  ~SqliteQuiet() { Release(); }

 private:
  std::vector<sqlite3_mutex*> held_;
};

#if defined(QUARRY_ASAN_FORK_LOCKS)
}  // namespace
}  // namespace quarry::engine::internal
// GCC 12's AddressSanitizer runtime takes none of its own locks across fork() (LLVM's has since
// llvm-project#75290): a fork while another thread was in malloc left the child waiting for
// ever on the allocator's lock (an MCP chart query, and the query after a cancel, waited out
// their 10 s timeouts). These are the runtime's lock functions, the ones LLVM's fork handler
// takes; they are linked from the static runtime (-static-libasan, the QUARRY_SANITIZE build).
namespace __asan {
void asan_mz_force_lock();
void asan_mz_force_unlock();
}  // namespace __asan
namespace __lsan {
void LockThreadRegistry();
void UnlockThreadRegistry();
}  // namespace __lsan
namespace __sanitizer {
void StackDepotLockAll();
void StackDepotUnlockAll();
}  // namespace __sanitizer
namespace quarry::engine::internal {
namespace {
// Held from just before fork() to just after, on both sides; nothing between allocates.
class SanitizerQuiet {
 public:
  SanitizerQuiet() {
    __lsan::LockThreadRegistry();
    __asan::asan_mz_force_lock();
    __sanitizer::StackDepotLockAll();
  }
  void Release() {
    if (released_) return;
    released_ = true;
    __sanitizer::StackDepotUnlockAll();
    __asan::asan_mz_force_unlock();
    __lsan::UnlockThreadRegistry();
  }
  ~SanitizerQuiet() { Release(); }

 private:
  bool released_ = false;
};
#else
struct SanitizerQuiet {
  void Release() {}
};
#endif

QueryFailure ChildFailure(const std::string& what) {
  return QueryFailure{FailureClass::kRuntimeError, "",
                      "the query stopped without a result: " + what};
}

// A child forked while another thread held a lock the child then takes hangs before it serves
// anything. The locks quarry knows of are held across fork() (ForkGate, SqliteQuiet,
// SanitizerQuiet); for any other library's, a new child says when it has started, and one
// that does not within its bound is killed and forked again.
constexpr int64_t kStartBoundsMs[] = {500, 2000, 30000};

std::string ExitDescription(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "its process was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")" +
           (sig == SIGKILL ? ", often the system running out of memory: simplify it or aggregate "
                             "earlier"
                           : "");
  }
  return "its process exited with status " + std::to_string(WEXITSTATUS(status)) +
         " before answering";
}

}  // namespace

std::shared_mutex& ForkGate() {
  static std::shared_mutex gate;
  return gate;
}

QueryProcess::QueryProcess(std::function<void()> setup, Serve serve)
    : setup_(std::move(setup)), serve_(std::move(serve)) {}

QueryProcess::~QueryProcess() { Reset(); }

void QueryProcess::Reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = 0;
}

std::optional<QueryFailure> QueryProcess::Spawn(const StopToken& stop) {
  for (const int64_t bound_ms : kStartBoundsMs) {
    if (auto failed = Fork()) return failed;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(bound_ms);
    std::string buffer;
    char chunk[64];
    while (std::chrono::steady_clock::now() < until) {
      if (stop.stop_requested()) {
        Reset();
        return CancelledFailure();
      }
      pollfd p{fd_, POLLIN, 0};
      const int ready = poll(&p, 1, 50);
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {  // it ended before it started: its setup failed
        int status = 0;
        close(fd_);
        fd_ = -1;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        pid_ = 0;
        return ChildFailure(ExitDescription(status));
      }
      buffer.append(chunk, static_cast<size_t>(n));
      if (auto frame = TakeFrame(buffer); frame && frame->first == 'S' && buffer.empty()) {
        return std::nullopt;
      }
    }
    Reset();  // hung (or out of step): another fork
  }
  return ChildFailure("its process did not start within " +
                      std::to_string(kStartBoundsMs[std::size(kStartBoundsMs) - 1] / 1000) +
                      " s, three times");
}

std::optional<QueryFailure> QueryProcess::Fork() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return ChildFailure(std::string("no socket for its process: ") + strerror(errno));
  }
  // Signals stay blocked across fork, so none reaches the child before it ignores them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  const pid_t parent = getpid();
  pid_t pid;
  int fork_errno;
  {
    // No other thread may be inside an engine library at fork(): see ForkGate and SqliteQuiet.
    std::unique_lock gate(ForkGate());
    SqliteQuiet quiet;
    SanitizerQuiet sanitizer;
    pid = fork();
    fork_errno = errno;
    sanitizer.Release();
    quiet.Release();
    if (pid == 0) {
      close(fds[0]);
      gate.release();  // its owner is not in this process; nobody here takes it again
      ServeQueries(fds[1], parent, setup_, serve_);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return ChildFailure(std::string("cannot start its process: ") + strerror(fork_errno) +
                        " (the system is out of processes or memory)");
  }
  pid_ = pid;
  fd_ = fds[0];
  return std::nullopt;
}

QueryOutcome QueryProcess::Run(std::string_view sql, const Limits& limits,
                               const ProgressFn& progress) {
  if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
  Writer request;
  request.Str(sql);
  request.I64(limits.timeout_ms);
  request.I64(limits.max_rows);
  // A child that died while idle (its forking thread ended) is replaced once.
  bool sent = false;
  for (int attempt = 0; attempt < 2 && !sent; ++attempt) {
    if (pid_ == 0) {
      if (auto failed = Spawn(limits.stop)) return std::unexpected(*failed);
    }
    sent = SendFrame(fd_, 'Q', request.bytes());
    if (!sent) Reset();
  }
  if (!sent) return std::unexpected(ChildFailure("its process did not take the query"));
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (limits.timeout_ms > 0) {
    deadline = start + std::chrono::milliseconds(limits.timeout_ms + kIsolatedGraceMs);
  }
  std::string buffer;
  std::optional<QueryOutcome> outcome;
  std::optional<QueryFailure> ended;  // the parent ended it
  std::string reported;               // what the last progress report was about, until it ended
  char chunk[65536];
  while (!outcome) {
    if (limits.stop.stop_requested()) {
      ended = CancelledFailure();
      break;
    }
    if (deadline && std::chrono::steady_clock::now() >= *deadline) {
      ended = TimeoutFailure(limits.timeout_ms);
      break;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, 50);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // the child died
    buffer.append(chunk, static_cast<size_t>(n));
    while (auto frame = TakeFrame(buffer)) {
      if (frame->first == 'P' && progress) {
        Reader r(frame->second);
        const double percent = r.F64();
        const std::string what = r.Str();
        if (r.ok()) {
          progress(what, percent);
          reported = percent >= 0 ? what : "";
        }
      } else if (frame->first == 'R') {
        outcome = DecodeOutcome(frame->second);
        if (!outcome) outcome = std::unexpected(ChildFailure("its answer could not be read"));
        break;
      }
    }
  }
  if (!reported.empty()) progress(reported, -1.0);
  if (outcome && buffer.empty()) return *outcome;
  // Killed by us, dead, or out of step: this child serves no more queries.
  int status = 0;
  if (ended) kill(pid_, SIGKILL);
  close(fd_);
  fd_ = -1;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = 0;
  if (ended) return std::unexpected(*ended);
  if (outcome) return *outcome;
  return std::unexpected(ChildFailure(ExitDescription(status)));
}

}  // namespace quarry::engine::internal
