// The warm kernel through its public face, against real sandboxed children: state persists
// between calls, a call that times out or ends Python yields a fresh kernel that says so, the
// guard still checks every call without costing the state, output is capped per call, the
// escape corpus holds against the kernel, and no process outlives it or an agent run.
#include "quarry/sandbox/kernel.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "quarry/agent/agent.h"
#include "quarry/engine/engine.h"
#include "support/test_support.h"

namespace quarry::sandbox {
namespace {

namespace fs = std::filesystem;

// Processes whose parent is this test process (bubblewrap is the kernel's group leader).
std::set<pid_t> Children() {
  std::set<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid()) {
      out.insert(std::stoi(name));
    }
  }
  return out;
}

class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QUARRY_SKIP_WITHOUT_SANDBOX(NamespaceUnavailableReason());
    options_.workdir = dir_.path() / "workdir";
    options_.timeout_ms = 20000;
    TableFile sales;
    sales.name = "sales";
    sales.host_path = quarry::testing::SourceDir() / "data" / "sales.csv";
    sales.format = "csv";
    options_.tables = {sales};
  }
  PythonResult Call(Kernel& k, const std::string& code) {
    auto r = k.Run(code, std::nullopt);
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r.value_or(PythonResult{});
  }
  quarry::testing::TempDir dir_;
  Options options_;
};

TEST_F(KernelTest, VariablesPersistBetweenCalls) {
  Kernel k(options_);
  ASSERT_TRUE(k.Start().has_value());
  auto first = Call(k, "x = 41\nprint('set')");
  EXPECT_EQ(first.failure, FailureClass::kNone) << first.message;
  EXPECT_EQ(first.tables_loaded, std::vector<std::string>{"sales"});
  auto second =
      Call(k, "print(x + 1)\nprint(round(df.groupby('region')['revenue'].sum().max(), 2))");
  EXPECT_EQ(second.failure, FailureClass::kNone) << second.message;
  EXPECT_EQ(second.stdout_text, "42\n141794.14\n");
  EXPECT_FALSE(second.state_lost);
  // Each call's output is its own: nothing of the first call's reaches the second.
  EXPECT_EQ(second.stdout_text.find("set"), std::string::npos);
}

TEST_F(KernelTest, TimeoutGivesAFreshKernelThatSaysSo) {
  options_.timeout_ms = 3000;
  Kernel k(options_);
  ASSERT_TRUE(k.Start().has_value());
  EXPECT_EQ(Call(k, "x = 41\nprint(x)").stdout_text, "41\n");
  const auto first_pid = k.pid();
  auto timed = Call(k, "while True:\n    pass\n");
  EXPECT_EQ(timed.failure, FailureClass::kTimeout) << timed.message;
  EXPECT_NE(timed.message.find("variables are lost"), std::string::npos) << timed.message;
  auto fresh = Call(k, "print(x)");
  EXPECT_TRUE(fresh.state_lost);
  EXPECT_EQ(fresh.failure, FailureClass::kRuntimeError);
  EXPECT_NE(fresh.message.find("NameError: name 'x' is not defined"), std::string::npos)
      << fresh.message;
  const std::string seen = RenderObservation(fresh);
  EXPECT_NE(seen.find("the Python state was lost: the previous call timed out"), std::string::npos)
      << seen;
  EXPECT_NE(k.pid(), first_pid);
  // The note is said once; the new kernel's state then persists as before.
  auto after = Call(k, "x = 1\nprint(x + 1)");
  EXPECT_FALSE(after.state_lost);
  EXPECT_EQ(after.stdout_text, "2\n");
}

TEST_F(KernelTest, AKernelThatDiesIsReplaced) {
  options_.python_guard = false;  // os._exit is only reachable with the guard off
  Kernel k(options_);
  Call(k, "x = 1\nprint(x)");
  auto died = Call(k, "import os\nos._exit(3)");
  EXPECT_EQ(died.failure, FailureClass::kRuntimeError);
  EXPECT_NE(died.message.find("exit code 3"), std::string::npos) << died.message;
  auto next = Call(k, "print('x' in dir())");
  EXPECT_TRUE(next.state_lost);
  EXPECT_EQ(next.stdout_text, "False\n");
  EXPECT_NE(next.notes.front().find("ended the Python process (exit code 3)"), std::string::npos);
}

TEST_F(KernelTest, GuardViolationKeepsTheState) {
  Kernel k(options_);
  Call(k, "x = 41\nprint(x)");
  auto refused = Call(k, "import os\nos.system('id')");
  EXPECT_EQ(refused.failure, FailureClass::kGuardViolation);
  EXPECT_EQ(refused.rule, "import_allowlist");
  auto syntax = Call(k, "print(x +)");
  EXPECT_EQ(syntax.failure, FailureClass::kSyntaxError);
  auto after = Call(k, "print(x + 1)");
  EXPECT_FALSE(after.state_lost);
  EXPECT_EQ(after.stdout_text, "42\n");
}

TEST_F(KernelTest, OutputIsCappedPerCall) {
  options_.output_cap_bytes = 1000;
  Kernel k(options_);
  auto big = Call(k, "y = 7\nprint('a' * 5000)");
  EXPECT_TRUE(big.stdout_truncated);
  EXPECT_LT(big.stdout_text.size(), 1200u);
  EXPECT_NE(big.stdout_text.find("output cut at 1000 bytes of 5001"), std::string::npos);
  auto small = Call(k, "print(y)");  // the cap is per call, not per kernel
  EXPECT_EQ(small.stdout_text, "7\n");
  EXPECT_FALSE(small.stdout_truncated);
  auto flood = Call(k, "for _ in range(10000):\n    print('z' * 1000)\n");
  EXPECT_EQ(flood.failure, FailureClass::kRuntimeError) << flood.message;
  EXPECT_LT(flood.stdout_text.size(), 1200u);
  EXPECT_TRUE(Call(k, "print(1)").state_lost);
}

TEST_F(KernelTest, FiguresAreCollectedPerCall) {
  Kernel k(options_);
  auto first = Call(k, "df.groupby('region')['revenue'].sum().plot.bar()\nplt.savefig('a.png')\n");
  ASSERT_EQ(first.artifacts.size(), 1u) << first.message;
  EXPECT_EQ(first.artifacts[0].filename(), "a.png");
  auto second = Call(k, "plt.savefig('b.png')\nprint('saved')");
  ASSERT_EQ(second.artifacts.size(), 1u);  // a.png is not collected again
  EXPECT_EQ(second.artifacts[0].filename(), "b.png");
}

TEST_F(KernelTest, LastFollowsTheLatestSqlResult) {
  Kernel k(options_);
  LastResult last{{"n"}, {"BIGINT"}, {{std::string("5")}}};
  auto r = k.Run("print(int(last['n'].sum()) * 2)", last);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stdout_text, "10\n");
  last.rows = {{std::string("6")}};
  r = k.Run("print(int(last['n'].sum()) * 2)", last);
  EXPECT_EQ(r->stdout_text, "12\n");
}

// The escape corpus (escape_test.cc) against the kernel path, with the guard off so the
// operating system's isolation is what holds.
TEST_F(KernelTest, EscapeCorpusHoldsAgainstTheKernel) {
  options_.python_guard = false;
  options_.timeout_ms = 20000;
  const fs::path marker = fs::path("/tmp") / ("quarry-kernel-escape-" + std::to_string(getpid()));
  fs::remove(marker);
  const std::string touch = "'touch " + marker.string() + "'";
  setenv("QUARRY_API_KEY", "sk-canary-kernel-0123456789", 1);
  Kernel k(options_);
  auto env = Call(k, "import os\nprint(sorted(os.environ.items()))");
  unsetenv("QUARRY_API_KEY");
  EXPECT_EQ(env.stdout_text.find("canary"), std::string::npos);
  EXPECT_NE(env.stdout_text.find("('HOME', '/workdir')"), std::string::npos) << env.stdout_text;

  auto secrets =
      Call(k, "import os\nprint(os.path.exists('/etc/shadow'), os.path.exists('/root'))");
  EXPECT_EQ(secrets.stdout_text, "False False\n");
  auto pids = Call(k, "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))");
  EXPECT_EQ(pids.stdout_text, "[1, 2]\n");  // a PID namespace of its own, also for the kernel

  auto spawn = Call(
      k,
      "import subprocess\ntry:\n    subprocess.run(['id'])\nexcept Exception as e:\n"
      "    print('subprocess', type(e).__name__)\nprint('system', os.system(" +
          touch +
          "))\n"
          "try:\n    os.fork()\nexcept Exception as e:\n    print('fork', type(e).__name__)\n");
  EXPECT_NE(spawn.stdout_text.find("subprocess PermissionError"), std::string::npos)
      << spawn.stdout_text;
  EXPECT_NE(spawn.stdout_text.find("fork PermissionError"), std::string::npos);
  EXPECT_EQ(spawn.stdout_text.find("system 0"), std::string::npos);

  auto net =
      Call(k,
           "import socket\ntry:\n    socket.socket(socket.AF_INET).connect(('127.0.0.1', 9))\n"
           "except Exception as e:\n    print(type(e).__name__)\n");
  EXPECT_EQ(net.stdout_text, "PermissionError\n");
  auto writes =
      Call(k, "for p in ['/usr/x', '/data/x', '" + marker.string() +
                  "']:\n"
                  "    try:\n        open(p, 'w').write('x')\n        print(p, 'written')\n"
                  "    except Exception as e:\n        print(p, type(e).__name__)\n");
  EXPECT_EQ(writes.stdout_text.find("/usr/x written"), std::string::npos) << writes.stdout_text;
  EXPECT_FALSE(fs::exists("/usr/x"));

  auto ctypes = Call(k,
                     "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                     "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n");
  EXPECT_EQ(ctypes.stdout_text, "unshare -1 1\n");
  // The kernel's fds: stdin is /dev/null, so user code cannot read the next request.
  auto stdin_read = Call(k, "import sys\nprint(repr(sys.stdin.read()))");
  EXPECT_EQ(stdin_read.stdout_text, "''\n");

  // bytes(n) is calloc'd and never touched, so the address-space limit is met in well under a
  // second; bytearray(n) zero-fills 4 GB first (16 s idle, past the 20 s limit under CI's load).
  auto memory = Call(k, "blocks = []\nwhile True:\n    blocks.append(bytes(256 << 20))\n");
  EXPECT_EQ(memory.failure, FailureClass::kRuntimeError);
  EXPECT_NE(memory.message.find("MemoryError"), std::string::npos) << memory.message;
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(KernelTest, JunkOnTheProtocolDescriptorsCannotForgeOrHang) {
  options_.python_guard = false;
  options_.timeout_ms = 5000;
  Kernel k(options_);
  // The result pipe moved off fd 3; writing junk to every fd the code can find must end in a
  // clean failure (or nothing), never a forged status or a hung parent.
  auto r = Call(k,
                "import os\nfor fd in range(3, 40):\n    try:\n"
                "        os.write(fd, b'99999999999\\n{\"status\": \"ok\"}')\n    except "
                "OSError:\n        pass\n"
                "print('done')\n");
  EXPECT_NE(r.failure, FailureClass::kNone) << r.stdout_text;
  auto next = Call(k, "print(1 + 1)");
  EXPECT_EQ(next.stdout_text, "2\n");
  EXPECT_TRUE(next.state_lost);
}

TEST_F(KernelTest, WithoutNamespacesItRefusesOrSaysSo) {
  options_.use_namespaces = false;
  Kernel refused(options_);
  auto error = refused.Run("print(1)", std::nullopt);
  ASSERT_FALSE(error.has_value());
  EXPECT_EQ(error.error().code, Error::Code::kUsage);
  EXPECT_NE(error.error().message.find("--allow-unisolated"), std::string::npos);

  options_.allow_unisolated = true;
  Kernel fallback(options_);
  Call(fallback, "x = 20");
  auto r = Call(fallback, "print(x * 2)");
  EXPECT_EQ(r.stdout_text, "40\n");
  EXPECT_EQ(r.isolation, Isolation::kRlimitsOnly);
}

// issue 22: a thread the code started outlived the call and raced quarry's scrub of the work
// directory. A call that leaves a thread running ends the kernel, which is gone before the scrub.
TEST_F(KernelTest, ACallThatLeavesAThreadRunningEndsTheKernel) {
  options_.python_guard = false;  // the guard refuses `threading`; the kernel must hold alone
  Kernel k(options_);
  auto started = Call(k,
                      "import threading, time\nx = 1\n"
                      "def spin():\n    while True:\n        open('tick', 'w').close()\n"
                      "        time.sleep(0.001)\n"
                      "threading.Thread(target=spin, daemon=True).start()\nprint('started')");
  EXPECT_EQ(started.failure, FailureClass::kNone) << started.message;
  EXPECT_EQ(started.stdout_text, "started\n");
  ASSERT_FALSE(started.notes.empty());
  EXPECT_NE(started.notes.back().find("left 1 thread(s) running"), std::string::npos)
      << started.notes.back();
  EXPECT_FALSE(k.pid().has_value()) << "the kernel still runs";
  const fs::path tick = options_.workdir / "tick";
  fs::remove(tick);
  usleep(50000);
  EXPECT_FALSE(fs::exists(tick)) << "the thread still writes to the work directory";
  auto next = Call(k, "print('x' in globals())");
  EXPECT_TRUE(next.state_lost);
  EXPECT_EQ(next.stdout_text, "False\n");
  // An honest call (numpy, pandas, a figure) leaves no thread: the state stays.
  auto honest = Call(k,
                     "import numpy as np, matplotlib.pyplot as plt\ny = float(np.linalg.inv("
                     "np.eye(3)).sum())\nplt.plot([1, 2]); plt.savefig('f.png')\nprint(y)");
  auto after = Call(k, "print(y)");
  EXPECT_FALSE(after.state_lost) << honest.message;
  EXPECT_EQ(after.stdout_text, "3.0\n");
}

// issue 22: rebinding what the kernel's own code uses (json.loads read the guard off every later
// request; collections.deque is what ast.walk walks with) must not switch the guard off.
TEST_F(KernelTest, RebindingSharedModulesCannotTurnTheGuardOff) {
  Kernel k(options_);
  auto rebind = Call(k,
                     "import json, collections\n"
                     "real = json.loads\n"
                     "json.loads = lambda s, *a, **k: dict(real(s), guard=False)\n"
                     "class Empty:\n    def __init__(self, *a): pass\n"
                     "    def __bool__(self): return False\n"
                     "collections.deque = Empty\nprint('rebound')");
  EXPECT_EQ(rebind.stdout_text, "rebound\n") << rebind.message;
  auto attack = Call(k, "import os\nprint(os.getpid())");
  EXPECT_EQ(attack.failure, FailureClass::kGuardViolation) << attack.stdout_text;
  EXPECT_EQ(attack.rule, "import_allowlist");
  auto still = Call(k, "print(real is not None)");
  EXPECT_EQ(still.stdout_text, "True\n") << "the state was lost: " << still.message;
}

// issue 22: RLIMIT_FSIZE is per file; one call wrote 321 MB in many files. The work directory
// has a quota over all its files, on both paths; the stopped call's files are removed.
TEST_F(KernelTest, TheWorkDirectoryHasADiskQuotaOverAllItsFiles) {
  options_.disk_quota_mb = 100;
  options_.python_guard = false;  // raw writes, as a guard bypass would make them
  const std::string code =
      "import time\nfor i in range(8):\n    with open('big%d.bin' % i, 'wb') as f:\n"
      "        f.write(b'1' * (40 << 20))\n    time.sleep(0.2)\nprint('wrote all')";
  auto one_shot = RunPython(code, options_);
  ASSERT_TRUE(one_shot.has_value()) << one_shot.error().message;
  EXPECT_EQ(one_shot->failure, FailureClass::kRuntimeError) << one_shot->stdout_text;
  EXPECT_NE(one_shot->message.find("more than 100 MB"), std::string::npos) << one_shot->message;
  EXPECT_EQ(one_shot->stdout_text.find("wrote all"), std::string::npos);
  Kernel k(options_);
  auto r = Call(k, code);
  EXPECT_EQ(r.failure, FailureClass::kRuntimeError);
  EXPECT_NE(r.message.find("more than 100 MB"), std::string::npos) << r.message;
  int64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(options_.workdir)) {
    if (e.is_regular_file()) total += static_cast<int64_t>(e.file_size());
  }
  EXPECT_LT(total, 100 << 20) << "the stopped call's files stayed";
  auto after = Call(k, "print('still works')");
  EXPECT_EQ(after.stdout_text, "still works\n") << after.message;
}

TEST_F(KernelTest, ShutdownLeavesNoProcess) {
  const std::set<pid_t> before = Children();
  {
    Kernel k(options_);
    ASSERT_TRUE(k.Start().has_value());
    Call(k, "print(1)");
    ASSERT_TRUE(k.pid().has_value());
    EXPECT_TRUE(Children().contains(*k.pid()));
  }
  EXPECT_EQ(Children(), before);
}

// A scripted model: two run_python calls that share a variable, then the answer.
class ScriptedClient : public llm::Client {
 public:
  explicit ScriptedClient(std::vector<llm::Turn> turns) : turns_(std::move(turns)) {}
  Result<llm::Turn> Complete(const llm::Request&) override {
    if (next_ >= turns_.size()) return Fail(Error::Code::kModel, "script exhausted");
    during_.push_back(Children().size());
    return turns_[next_++];
  }
  llm::Provider provider() const override { return llm::Provider::kReplay; }
  std::string model() const override { return "scripted"; }
  std::vector<size_t> during_;

 private:
  std::vector<llm::Turn> turns_;
  size_t next_ = 0;
};

llm::Turn ToolTurn(const std::string& name, const nlohmann::ordered_json& args) {
  llm::Turn t;
  t.tool_calls = {{"call-" + name, name, args.dump()}};
  return t;
}

TEST_F(KernelTest, AnAgentRunSharesOneKernelAndLeavesNoProcess) {
  auto engine = engine::Open({quarry::testing::SourceDir() / "data" / "sales.csv"});
  ASSERT_TRUE(engine.has_value());
  ScriptedClient client(
      {ToolTurn("run_python", {{"code", "x = 41\nprint('stored')"}}),
       ToolTurn("run_python", {{"code", "print(x + 1)"}}),
       ToolTurn("final_answer", {{"answer", "42"}, {"supporting_values", {"42"}}})});
  agent::Config config;
  config.sandbox.workdir = dir_.path() / "run" / "workdir";
  // The engine's query process (isolated_query.h) is forked at its first query and lives as
  // long as the engine: the run's scan of the data at open would start it, so it is started
  // here and counted in `before`. Only the kernel must be gone after the run.
  ASSERT_TRUE((*engine)->Query("SELECT 1", {}).has_value());
  const std::set<pid_t> before = Children();
  ASSERT_EQ(before.size(), 1u);
  agent::RunInput input;
  input.question = "what is x + 1?";
  input.run_id = "run1";
  const trace::Trace t = agent::Run(input, **engine, client, config, nullptr, nullptr);
  EXPECT_EQ(t.stop_reason, trace::StopReason::kAnswered);
  ASSERT_GE(t.steps.size(), 4u);
  EXPECT_NE(t.steps[3].observation.find("\n42\n"), std::string::npos) << t.steps[3].observation;
  // The kernel ran during the run (a child besides those before) and is gone after it, with
  // the run's copies of the tables.
  ASSERT_FALSE(client.during_.empty());
  EXPECT_GT(client.during_.back(), before.size());
  EXPECT_EQ(Children(), before);
  EXPECT_FALSE(fs::exists(dir_.path() / "run" / "tables"));
}

}  // namespace
}  // namespace quarry::sandbox
