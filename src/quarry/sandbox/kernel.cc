// The warm kernel's parent side (see kernel.h): starts the sandboxed runner in kernel mode,
// copies the tables on a background thread and hands them over, then runs calls one at a time
// over length-prefixed JSON frames, restarting the process after a call that ended it.
#include "quarry/sandbox/kernel.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "quarry/sandbox/frames_internal.h"
#include "quarry/sandbox/sandbox_internal.h"

namespace quarry::sandbox {

const std::map<std::string, std::string>& EmbeddedRunner();

using internal::Child;
using internal::ChildSpec;
using internal::Fd;
using internal::Pipe;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace internal;

// Imports (~0.5 s) and tables (a million rows: seconds) before the first call may run.
constexpr int64_t kStartTimeoutMs = 120000;
// RLIMIT_CPU is per process: the hard limit is the whole kernel's budget, and runner.py moves
// the soft limit to "used so far + this call's cpu_seconds" before each call.
constexpr int64_t kKernelCpuSeconds = 3600;

int64_t MsLeft(Clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
}

std::string Text(const json& message, const char* key) { return JsonString(message, key); }

}  // namespace

struct Kernel::State {
  Options options;
  TablesFn tables_fn;
  bool isolated = true;
  std::optional<Error> start_error;

  // The process and its descriptors; all empty when no kernel is alive.
  std::optional<Child> child;
  Fd requests;  // our end of the socket pair
  Fd out, err, results;
  std::string result_buffer;
  bool load_sent = false;               // the table list went out (maybe from the copier)
  bool loaded = false;                  // its "loaded" frame has arrived
  std::vector<std::string> load_notes;  // shown with the next call's result
  std::vector<std::string> tables_loaded;
  std::optional<LastResult> last_sent;
  int64_t next_id = 1;
  std::string lost_reason;  // set when a call ended the kernel; told with the next call
  // The sandbox's threads once the tables are loaded, before any user code: library pools
  // (there are none with OPENBLAS_NUM_THREADS=1, but a library may start some) count here.
  int64_t baseline_threads = 0;

  // The table copy: started once; its result reused by every restart.
  std::thread copier;
  bool copied = false;
  std::vector<TableFile> tables;
  std::vector<std::string> copy_notes;

  ~State() { Stop(); }

  void Stop() {
    JoinCopier();
    EndProcess();
  }

  void JoinCopier() {
    if (copier.joinable()) copier.join();
  }

  void EndProcess() {
    requests.Close();  // EOF on the request socket: a live runner leaves on its own
    child.reset();     // kills the process group and reaps it
    out.Close();
    err.Close();
    results.Close();
    result_buffer.clear();
    load_sent = false;
    loaded = false;
    last_sent.reset();
  }

  Result<void> Spawn() {
    const std::optional<std::string> no_ns =
        options.use_namespaces ? NamespaceUnavailableReason()
                               : std::optional<std::string>("namespaces turned off for this run");
    if (no_ns && !options.allow_unisolated) {
      return Fail(Error::Code::kUsage,
                  "run_python cannot isolate Python here (" + *no_ns +
                      "); pass --allow-unisolated to run it with rlimits, seccomp and the Python "
                      "guard only, or use SQL");
    }
    isolated = !no_ns.has_value();
    std::error_code ec;
    fs::create_directories(options.workdir, ec);
    if (!ec && !options.tables_dir.empty()) fs::create_directories(options.tables_dir, ec);
    if (ec)
      return Fail(Error::Code::kInternal,
                  "cannot create the kernel's directories: " + ec.message());
    if (access(kPython, X_OK) != 0) {
      return Fail(Error::Code::kUsage, std::string(kPython) +
                                           " is missing: run scripts/setup.sh (python3 with "
                                           "pandas, numpy and matplotlib)");
    }
    auto filter = SeccompFilter();
    if (!filter) return std::unexpected(filter.error());
    Fd seccomp_fd = std::move(*filter);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      return Fail(Error::Code::kInternal, "socketpair failed");
    }
    Fd mine(pair[0]), theirs(pair[1]);
    Pipe o, e, r;
    for (Pipe* p : {&o, &e, &r}) {
      if (!p->Open()) return Fail(Error::Code::kInternal, "pipe failed");
    }
    Options limits = options;
    limits.cpu_seconds = std::max<int64_t>(kKernelCpuSeconds, options.cpu_seconds);
    std::vector<std::string> argv, env;
    if (isolated) {
      argv = BwrapArgs(FindBwrap(), limits, 4, {"QUARRY_KERNEL=1", GuardEnv()});
    } else {
      argv = {kPython, "-I", "-u", "-c", EmbeddedRunner().at("runner")};
      env = Environment(fs::absolute(options.workdir).string());
      env.push_back("QUARRY_KERNEL=1");
      env.push_back(GuardEnv());
    }
    ChildSpec spec{argv,
                   env,
                   isolated ? fs::path() : options.workdir,
                   {theirs.get(), o.write.get(), e.write.get(), r.write.get(), seccomp_fd.get()},
                   !isolated,
                   limits};
    auto started = Child::Start(spec);
    if (!started) return std::unexpected(started.error());
    child.emplace(std::move(*started));
    requests = std::move(mine);
    out = std::move(o.read);
    err = std::move(e.read);
    results = std::move(r.read);
    for (int fd : {requests.get(), out.get(), err.get(), results.get()}) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return {};
  }

  // The guard is fixed for the kernel's life at its start, out of reach of any request.
  std::string GuardEnv() const {
    return std::string("QUARRY_GUARD=") + (options.python_guard ? "1" : "0");
  }

  std::string LoadFrame() const {
    return Frame({{"kind", "load"}, {"tables", TablesJson(tables, options, isolated)}});
  }

  // Sends the table list unless the copier did (joins it first).
  bool SendLoad(Clock::time_point deadline) {
    JoinCopier();
    if (!copied) CopyTables();
    if (!load_sent) load_sent = Send(LoadFrame(), deadline);
    return load_sent;
  }

  void CopyTables() {
    copied = true;
    if (!tables_fn) {
      tables = options.tables;
      return;
    }
    auto t = tables_fn();
    if (t) {
      tables = std::move(*t);
    } else {
      copy_notes.push_back("the tables could not be copied for Python (" + t.error().message +
                           "); use run_sql");
    }
  }

  // How long one wait may block: with a stop that can come, short enough to see it soon.
  int64_t SliceMs() const { return 100; }  // also the disk quota's accounting period

  // Writes all of `data` to the request socket by the deadline; never blocks past it and never
  // raises SIGPIPE. False when the kernel is gone or stuck.
  bool Send(const std::string& data, Clock::time_point deadline) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = send(requests.get(), data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) return false;
      const int64_t left = MsLeft(deadline);
      if (left <= 0 || options.stop.stop_requested()) return false;
      pollfd p{requests.get(), POLLOUT, 0};
      poll(&p, 1, static_cast<int>(std::min<int64_t>(left, SliceMs())));
    }
    return true;
  }

  // What one wait saw.
  struct Wait {
    std::optional<json> frame;
    bool timed_out = false, flooded = false, ended = false, broken = false, cancelled = false;
    bool over_quota = false;
    size_t out_total = 0, err_total = 0;
  };

  // Reads the kernel's output until a frame arrives (or the deadline, a flood, EOF, junk).
  // stdout and stderr are kept within the caps of `r`; with r == nullptr they are discarded.
  Wait WaitFrame(Clock::time_point deadline, PythonResult* r) {
    Wait w;
    std::string sink_out, sink_err;
    std::string& o = r ? r->stdout_text : sink_out;
    std::string& e = r ? r->stderr_text : sink_err;
    const size_t cap = options.output_cap_bytes;
    std::array<pollfd, 3> fds{
        {{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}, {results.get(), POLLIN, 0}}};
    const int64_t quota_bytes = options.disk_quota_mb << 20;
    auto next_quota_check = Clock::now();
    for (;;) {
      bool broken = false;
      if (auto f = TakeFrame(result_buffer, broken)) {
        w.frame = std::move(f);
        break;
      }
      if (broken) {
        w.broken = true;
        return w;
      }
      if (fds[2].fd < 0) {
        w.ended = true;
        return w;
      }
      if (options.stop.stop_requested()) {
        w.cancelled = true;
        return w;
      }
      const int64_t left = MsLeft(deadline);
      if (left <= 0) {
        w.timed_out = true;
        return w;
      }
      if (poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left, SliceMs()))) < 0 &&
          errno != EINTR) {
        w.ended = true;
        return w;
      }
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        size_t result_total = 0;
        const bool more = i == 0 ? Drain(fds[i].fd, r ? o : sink_out, r ? cap : 0, w.out_total)
                          : i == 1
                              ? Drain(fds[i].fd, r ? e : sink_err, r ? 4 * cap : 0, w.err_total)
                              : Drain(fds[i].fd, result_buffer, 2 * kMaxFrameBytes, result_total);
        if (!more) fds[i].fd = -1;
      }
      if (r && w.out_total + w.err_total > 64 * cap) {
        w.flooded = true;
        return w;
      }
      if (r && options.disk_quota_mb > 0 && Clock::now() >= next_quota_check) {
        next_quota_check = Clock::now() + std::chrono::milliseconds(100);
        if (DirectoryBytes(options.workdir, quota_bytes) > quota_bytes) {
          w.over_quota = true;
          return w;
        }
      }
    }
    // The result frame was written after the code's output: what is left in the pipes belongs
    // to this call. Take it, within the caps.
    for (int i = 0; i < 2; ++i) {
      const int fd = i == 0 ? out.get() : err.get();
      if (fd >= 0)
        Drain(fd, i == 0 ? o : e, r ? (i == 0 ? cap : 4 * cap) : 0,
              i == 0 ? w.out_total : w.err_total);
    }
    return w;
  }

  // Brings a kernel up to the point where it serves calls: spawned, tables loaded.
  Result<void> Ready(PythonResult& r) {
    if (!child) {
      if (auto s = Spawn(); !s) return s;
    }
    if (loaded) return {};
    const auto deadline = Clock::now() + std::chrono::milliseconds(kStartTimeoutMs);
    if (!SendLoad(deadline)) {
      if (options.stop.stop_requested()) return Cancelled();
      return Died(r, "it could not be sent its tables");
    }
    for (;;) {
      Wait w = WaitFrame(deadline, nullptr);
      if (w.cancelled) return Cancelled();
      if (!w.frame) {
        return Died(r, w.timed_out ? "loading the tables took longer than " +
                                         std::to_string(kStartTimeoutMs / 1000) + " s"
                                   : "it ended while loading the tables");
      }
      if (Text(*w.frame, "kind") != "loaded") continue;
      if (StatusOf(*w.frame) != FrameStatus::kOk) {
        const std::string why = Text(*w.frame, "message");
        EndProcess();
        return Fail(Error::Code::kInternal, "the sandboxed Python could not start: " + why);
      }
      loaded = true;
      baseline_threads = ThreadCount(child->pid());
      tables_loaded = Strings(*w.frame, "tables_loaded");
      load_notes = copy_notes;
      for (auto& n : Strings(*w.frame, "notes")) load_notes.push_back(std::move(n));
      return {};
    }
  }

  // A stop was requested: the process goes, and the next call starts a fresh one.
  std::unexpected<Error> Cancelled() {
    EndProcess();
    lost_reason = "the previous call was cancelled";
    return Fail(Error::Code::kCancelled,
                "the Python run was cancelled: the caller asked it to stop");
  }

  // The kernel did not come up: quarry's error, with what the child said on stderr.
  Result<void> Died(PythonResult&, const std::string& why) {
    std::string tail;
    if (err.get() >= 0) {
      size_t total = 0;
      Drain(err.get(), tail, 4000, total);
    }
    EndProcess();
    return Fail(Error::Code::kInternal, "the sandboxed Python kernel did not start: " + why +
                                            (tail.empty() ? "" : ": " + TailLines(tail, 1000)));
  }

  // How the process ended: "killed by SIGXCPU (...)" or "exit code 1". A process that closed
  // its result pipe gets `grace_ms` to exit on its own (so its own status is reported), then
  // is killed.
  std::string EndedHow(PythonResult& r, int64_t grace_ms) {
    std::optional<int> ended = child->WaitFor(grace_ms);
    if (!ended) {
      child->Kill();
      ended = child->Wait();
    }
    const int status = *ended;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const int sig = WIFSIGNALED(status)               ? WTERMSIG(status)
                    : (isolated && r.exit_code > 128) ? r.exit_code - 128
                                                      : 0;
    child.reset();
    return sig ? "killed by " + Signal(sig) : "exit code " + std::to_string(r.exit_code);
  }
};

Kernel::Kernel(Options options, TablesFn tables) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  state_->tables_fn = std::move(tables);
}

Kernel::~Kernel() { Shutdown(); }

void Kernel::Shutdown() { state_->Stop(); }

std::optional<pid_t> Kernel::pid() const {
  if (!state_->child) return std::nullopt;
  return state_->child->pid();
}

Result<void> Kernel::Start() {
  State& s = *state_;
  if (s.child || s.copier.joinable() || s.copied) return {};
  if (auto r = s.Spawn(); !r) {
    s.start_error = r.error();
    return r;
  }
  // The copy runs beside the interpreter's imports; the first Run joins it. fork() never
  // happens on this thread (PR_SET_PDEATHSIG follows the forking thread).
  // It sends the table list itself, so pandas loads them before the first call too.
  s.copier = std::thread([&s] {
    s.CopyTables();
    s.load_sent = s.Send(s.LoadFrame(), Clock::now() + std::chrono::milliseconds(kStartTimeoutMs));
  });
  return {};
}

Result<PythonResult> Kernel::Run(const std::string& code, const std::optional<LastResult>& last) {
  State& s = *state_;
  PythonResult r;
  if (!s.lost_reason.empty()) {
    r.state_lost = true;
    r.notes.push_back("the Python state was lost: " + s.lost_reason +
                      ", so this call ran in a fresh Python; variables from earlier calls are "
                      "gone (the tables are loaded again)");
    s.lost_reason.clear();
  }
  if (s.options.stop.stop_requested()) return s.Cancelled();  // the run is over: start nothing
  if (auto ready = s.Ready(r); !ready) return std::unexpected(ready.error());
  r.isolation = s.isolated ? Isolation::kNamespaces : Isolation::kRlimitsOnly;
  r.tables_loaded = s.tables_loaded;
  for (auto& n : s.load_notes) r.notes.push_back(std::move(n));
  s.load_notes.clear();

  // The guard's AST check runs in a fresh sandboxed Python, never in the kernel: earlier calls
  // can rebind what a checker in the kernel would use (collections.deque under ast.walk, say).
  // The kernel keeps only the guard's run-time half (safe_open and the audit hook).
  if (s.options.python_guard) {
    Options check = s.options;
    check.tables.clear();
    check.tables_dir.clear();
    check.last.reset();
    auto checked = CheckPython(code, check);
    if (!checked) {
      if (checked.error().code == Error::Code::kCancelled) return s.Cancelled();
      return std::unexpected(checked.error());
    }
    if (checked->failure != FailureClass::kNone) {
      r.failure = checked->failure;
      r.rule = checked->rule;
      r.message = checked->message;
      return r;
    }
  }
  const int64_t id = s.next_id++;
  json request = {{"kind", "run"},
                  {"id", id},
                  {"code", code},
                  {"allowed_modules", AllowedModules()},
                  {"cpu_seconds", s.options.cpu_seconds}};
  if (last && !(s.last_sent && s.last_sent->columns == last->columns &&
                s.last_sent->types == last->types && s.last_sent->rows == last->rows)) {
    request["last"] = LastJson(last);
    s.last_sent = last;
  }
  const std::set<std::string> images_before = ImageFiles(s.options.workdir);
  const auto call_started = Clock::now();
  const int64_t call_started_unix_s = static_cast<int64_t>(time(nullptr)) - 1;
  const auto deadline = call_started + std::chrono::milliseconds(s.options.timeout_ms);
  const bool sent = s.Send(Frame(request), deadline);
  Kernel::State::Wait w;
  while (sent) {
    w = s.WaitFrame(deadline, &r);
    // A frame of another id is a leftover; the runner answers in order, so skip it.
    if (!w.frame || (w.frame->contains("id") && (*w.frame)["id"] == id)) break;
  }
  if (w.cancelled || (!sent && s.options.stop.stop_requested())) return s.Cancelled();
  r.duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - call_started).count();
  const size_t cap = s.options.output_cap_bytes;
  r.stdout_truncated = w.out_total > r.stdout_text.size();
  if (r.stdout_truncated) {
    r.stdout_text += "\n... (output cut at " + std::to_string(cap) + " bytes of " +
                     (w.flooded ? "more than " : "") + std::to_string(w.out_total) + ")\n";
  }
  r.stderr_text = TailLines(r.stderr_text, cap);
  const std::string reset = "; the Python session was reset, so its variables are lost";
  if (!w.frame) {
    std::string how;
    if (s.child) how = s.EndedHow(r, w.ended ? 2000 : 0);
    s.EndProcess();
    if (w.timed_out || (!sent && MsLeft(deadline) <= 0)) {
      r.failure = FailureClass::kTimeout;
      r.message = "timeout: the code was killed after " + std::to_string(s.options.timeout_ms) +
                  " ms" + reset + "; work on aggregates, avoid Python loops over rows";
      s.lost_reason = "the previous call timed out";
    } else if (w.over_quota) {
      const int removed = RemoveFilesWrittenSince(s.options.workdir, call_started_unix_s);
      r.failure = FailureClass::kRuntimeError;
      r.message = "runtime_error: the code wrote more than " +
                  std::to_string(s.options.disk_quota_mb) +
                  " MB to the work directory (or nested directories more than 64 deep) and was "
                  "stopped; the " +
                  std::to_string(removed) + " file(s) it wrote were removed" + reset +
                  "; write summaries, not copies of the data";
      s.lost_reason = "the previous call went past the work directory's disk quota";
    } else if (w.flooded) {
      r.failure = FailureClass::kRuntimeError;
      r.message = "runtime_error: the code printed more than " + std::to_string(64 * cap) +
                  " bytes and was killed" + reset + "; print summaries";
      s.lost_reason = "the previous call flooded its output";
    } else if (w.broken) {
      r.failure = FailureClass::kRuntimeError;
      r.message =
          "runtime_error: the Python process broke quarry's protocol and was stopped" + reset;
      s.lost_reason = "the previous call broke the kernel's protocol";
    } else {
      r.failure = FailureClass::kRuntimeError;
      r.message = "runtime_error: the Python process ended without a result (" + how + ")" + reset +
                  (r.stderr_text.empty() ? "" : ":\n" + TailLines(r.stderr_text, 2000));
      s.lost_reason = "the previous call ended the Python process (" + how + ")";
    }
  } else {
    const json& res = *w.frame;
    r.rule = Text(res, "rule");
    r.message = Text(res, "message");
    for (auto& n : Strings(res, "notes")) r.notes.push_back(std::move(n));
    switch (StatusOf(res)) {
      case FrameStatus::kOk:
        break;
      case FrameStatus::kSyntaxError:
        r.failure = FailureClass::kSyntaxError;
        break;
      case FrameStatus::kGuardViolation:
        r.failure = FailureClass::kGuardViolation;
        break;
      case FrameStatus::kRuntimeError:
        r.failure = FailureClass::kRuntimeError;
        break;
      case FrameStatus::kInternalError:
        r.failure = FailureClass::kRuntimeError;
        r.message =
            "runtime_error: " + (r.message.empty() ? "the kernel refused the call" : r.message);
        break;
    }
  }
  // Between calls nothing of the user's may run: a thread the code started would outlive the
  // call and act on the work directory while quarry reads or scrubs it. A call that leaves one
  // ends the kernel (killed and gone before the scrub); its own result still stands.
  if (s.child) {
    const int64_t threads = ThreadCount(s.child->pid());
    if (threads > s.baseline_threads) {
      s.EndProcess();
      r.notes.push_back("the code left " + std::to_string(threads - s.baseline_threads) +
                        " thread(s) running after it finished, so the Python session was ended "
                        "(nothing may run between calls) and its variables are lost; let every "
                        "thread finish within the call");
      s.lost_reason = "the previous call left threads running";
    }
  }
  ScrubWorkdir(s.options.workdir);
  if (r.failure == FailureClass::kNone) {
    for (const std::string& tagged : ImageFiles(s.options.workdir)) {
      if (!images_before.contains(tagged)) {
        r.artifacts.push_back(s.options.workdir / tagged.substr(0, tagged.rfind('@')));
      }
    }
    if (r.stdout_text.find_first_not_of(" \n\t") == std::string::npos && r.artifacts.empty()) {
      r.failure = FailureClass::kEmptyResult;
      r.message =
          "empty_result: the code ran but printed nothing and saved no figure; print "
          "the values you need";
    }
  }
  return r;
}

}  // namespace quarry::sandbox
