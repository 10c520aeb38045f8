// Interrupted runs, end to end: the real quarry binary against the stand-in provider, stopped
// by SIGINT or SIGTERM (a clean stop: exit 6, trace.json with stop_reason "interrupted"), by a
// second SIGINT (quit at once), or by SIGKILL (then `quarry trace` and `quarry view` rebuild the
// run from events.jsonl and mark it incomplete).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <duckdb.h>
#include <nlohmann/json.hpp>

#include "quarry/cli/interrupt.h"
#include "quarry/common/scratch.h"
#include "support/provider_server.h"
#include "support/test_support.h"

extern char** environ;

namespace quarry {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::ToolCallReply;
using Clock = std::chrono::steady_clock;

// Runs for far longer than any test waits (the per-query timeout is 60 s).
constexpr const char* kRunaway =
    R"({"sql": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"})";

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// A quarry child with stdout and stderr in files, so a killed child cannot block on a pipe.
class Quarry {
 public:
  Quarry(const ProviderServer& server, const fs::path& cwd, std::vector<std::string> args)
      : cwd_(cwd) {
    std::vector<std::string> argv = {quarry::testing::QuarryBinary().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (kv.starts_with("OPENROUTER_API_KEY=") || kv.starts_with("QUARRY_")) continue;
      env.push_back(kv);
    }
    env.push_back("QUARRY_BASE_URL=" + server.base_url());
    env.push_back("QUARRY_MODEL=stand-in-model");
    env.push_back("QUARRY_API_KEY=sk-interrupt-test-0123456789");
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = (cwd / "stdout.txt").string(), err = (cwd / "stderr.txt").string();
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    started_ = Clock::now();
    if (posix_spawn(&pid_, cargv[0], &actions, nullptr, cargv.data(), cenv.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Quarry() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void Signal(int signal_number) const { kill(pid_, signal_number); }
  // The exit code, or 128 + signal when killed; -1 when it is still running after `limit`.
  int Wait(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  std::string err() const { return quarry::testing::ReadFile(cwd_ / "stderr.txt"); }
  std::string out() const { return quarry::testing::ReadFile(cwd_ / "stdout.txt"); }
  Clock::time_point started() const { return started_; }

 private:
  fs::path cwd_;
  pid_t pid_ = -1;
  bool exited_ = false;
  Clock::time_point started_;
};

std::vector<std::string> AskArgs(const fs::path& runs) {
  return {"ask",
          "--no-python",
          "--timeout-ms",
          "60000",
          "--runs-dir",
          runs.string(),
          "--data",
          (quarry::testing::SourceDir() / "data" / "sales.csv").string(),
          "How many sales rows are there?"};
}

// Waits until `pid` holds `file` open (it is loading it, so its Ctrl-C handler is in place: a
// sanitized quarry takes 0.4 s to reach main, and a fixed sleep raced it under load).
bool WaitUntilOpen(pid_t pid, const fs::path& file, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  const fs::path fds = "/proc/" + std::to_string(pid) + "/fd";
  while (Clock::now() < deadline) {
    std::error_code ec;
    for (fs::directory_iterator it(fds, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code link_ec;
      if (fs::read_symlink(it->path(), link_ec) == file) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Waits until the server has received `n` requests (the run reached that model call).
bool WaitForRequests(const ProviderServer& server, size_t n, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (server.requests().size() >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

fs::path OnlyRun(const fs::path& runs) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(runs, ec)) dirs.push_back(e.path());
  return dirs.size() == 1 ? dirs[0] : fs::path();
}

// Waits until the only run under `runs` has `entry` (the run reached that stage); a slow
// build (sanitizers) may take seconds to open the data first.
bool WaitForRunEntry(const fs::path& runs, const std::string& entry,
                     std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    const fs::path run = OnlyRun(runs);
    if (!run.empty() && fs::exists(run / entry)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

json ReadJson(const fs::path& path) {
  return json::parse(quarry::testing::ReadFile(path), nullptr, false);
}

class InterruptTest : public ::testing::TestWithParam<int> {};

TEST_P(InterruptTest, ASignalDuringARunawayQueryStopsTheRunAndWritesTheTrace) {
  ProviderServer server;
  server.Enqueue({200, {}, ToolCallReply({{"call_1", "run_sql", kRunaway}}, 1000, 40)});
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  Quarry q(server, cwd.path(), AskArgs(runs));
  ASSERT_GT(q.pid(), 0);
  ASSERT_TRUE(WaitForRequests(server, 1, std::chrono::seconds(20)));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the query is now running
  const auto sent = Clock::now();
  q.Signal(GetParam());
  const int code = q.Wait(std::chrono::seconds(10));
  const int64_t stop_ms = MsSince(sent);
  EXPECT_EQ(code, 6) << q.err();
  EXPECT_LT(stop_ms, 2500) << "the run must stop within about a second of the signal";
  EXPECT_NE(q.err().find("stopping"), std::string::npos) << q.err();
  EXPECT_NE(q.out().find("no answer: interrupted"), std::string::npos) << q.out();
  const fs::path run = OnlyRun(runs);
  ASSERT_FALSE(run.empty());
  const json trace = ReadJson(run / "trace.json");
  ASSERT_TRUE(trace.is_object()) << "trace.json must be written on a clean stop";
  EXPECT_EQ(trace["stop_reason"], "interrupted");
  EXPECT_FALSE(trace.contains("incomplete"));
  ASSERT_GE(trace["steps"].size(), 2u);
  EXPECT_EQ(trace["steps"].back()["tool"], "run_sql");
  EXPECT_EQ(trace["steps"].back()["status"], "interrupted");
  EXPECT_EQ(server.requests().size(), 1u) << "no model call after the stop";
  // The last event says how the run ended.
  const std::string events = quarry::testing::ReadFile(run / "events.jsonl");
  EXPECT_NE(events.find(R"({"event":"end","stop_reason":"interrupted"})"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptTest, ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& param_info) {
                           return param_info.param == SIGINT ? "sigint" : "sigterm";
                         });

TEST(InterruptModelTest, CtrlCWhileWaitingOnTheModelAbortsTheRequest) {
  ProviderServer server;
  server.Enqueue({200,
                  {},
                  ToolCallReply({{"call_1", "run_sql", kRunaway}}, 1000, 40),
                  std::chrono::milliseconds(30000)});
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  Quarry q(server, cwd.path(), AskArgs(runs));
  ASSERT_TRUE(WaitForRequests(server, 1, std::chrono::seconds(20)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto sent = Clock::now();
  q.Signal(SIGINT);
  EXPECT_EQ(q.Wait(std::chrono::seconds(10)), 6) << q.err();
  // libcurl's progress callback runs about once a second while a transfer is idle.
  EXPECT_LT(MsSince(sent), 3000);
  const json trace = ReadJson(OnlyRun(runs) / "trace.json");
  ASSERT_TRUE(trace.is_object());
  EXPECT_EQ(trace["stop_reason"], "interrupted");
}

TEST(InterruptOpenTest, ASecondCtrlCQuitsAtOnce) {
  // DuckDB's whole-file CSV sniff checks for no interrupt, so the first Ctrl-C waits for it:
  // time for an impatient second one, which quits at once.
  ProviderServer server;
  quarry::testing::TempDir cwd;
  {
    std::ofstream big(cwd.path() / "big.csv");
    big << "id,region,amount,day\n";
    for (int i = 0; i < 4'000'000; ++i) {
      big << i << ",r" << (i % 97) << "," << (i % 1000) * 0.25 << ",2024-01-" << 10 + i % 18
          << "\n";
    }
  }
  // When the first stop lands outside the sniff (a slow build's start-up), it ends the load at
  // once and there is nothing to quit: that attempt is repeated with a later first Ctrl-C.
  for (const int delay_ms : {600, 1200, 2400, 4000}) {
    Quarry q(server, cwd.path(),
             {"ask", "--no-cache", "--timeout-ms", "120000", "--runs-dir",
              (cwd.path() / "runs").string(), "--data", (cwd.path() / "big.csv").string(),
              "How many rows?"});
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    q.Signal(SIGINT);
    // Two signals sent back to back may merge into one pending signal: the second goes once
    // the first was seen.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (q.err().find("stopping") == std::string::npos && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto second = Clock::now();
    q.Signal(SIGINT);
    const int status = q.Wait(std::chrono::seconds(30));
    if (status == 130) continue;  // the first landed before the handler (a slow start): later
    EXPECT_EQ(status, 6) << q.err();
    if (q.err().find("interrupted twice") == std::string::npos) continue;
    EXPECT_LT(MsSince(second), 1000) << q.err();
    EXPECT_TRUE(server.requests().empty());
    return;
  }
  ADD_FAILURE() << "the first Ctrl-C always ended the load before the second arrived";
}

TEST(InterruptOpenTest, CtrlCWhileProfilingALargeFileStopsTheLoad) {
  // Parquet has no sniffing step: every stage of its load is a DuckDB query, so the stop
  // takes effect within the engine's interrupt check, far sooner than the load would end.
  ProviderServer server;  // never reached: the run stops before any model call
  quarry::testing::TempDir cwd;
  const fs::path big = cwd.path() / "big.parquet";
  {
    duckdb_database db = nullptr;
    duckdb_connection conn = nullptr;
    ASSERT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
    ASSERT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
    duckdb_result result;
    const std::string copy =
        "COPY (SELECT i AS id, 'r' || (i % 97) AS region, (i % 1000) * 0.25 AS amount, "
        "DATE '2024-01-01' + CAST(i % 300 AS INTEGER) AS day FROM range(20000000) t(i)) TO '" +
        big.string() + "' (FORMAT parquet)";
    EXPECT_EQ(duckdb_query(conn, copy.c_str(), &result), DuckDBSuccess)
        << duckdb_result_error(&result);
    duckdb_destroy_result(&result);
    duckdb_disconnect(&conn);
    duckdb_close(&db);
  }
  const fs::path runs = cwd.path() / "runs";
  Quarry q(server, cwd.path(),
           {"ask", "--no-cache", "--timeout-ms", "120000", "--runs-dir", runs.string(), "--data",
            big.string(), "How many rows?"});
  ASSERT_TRUE(WaitUntilOpen(q.pid(), big, std::chrono::seconds(20))) << q.err();
  const auto sent = Clock::now();
  q.Signal(SIGINT);
  EXPECT_EQ(q.Wait(std::chrono::seconds(30)), 6) << q.err();
  // Loading and profiling this file takes about 4 s on an idle 2-core machine.
  EXPECT_LT(MsSince(sent), 1500) << q.err();
  EXPECT_NE(q.err().find("interrupted while opening the data"), std::string::npos) << q.err();
  EXPECT_TRUE(server.requests().empty());
}

TEST(InterruptOpenTest, CtrlCWhileOpeningALargeCsvStopsBeforeAnyModelCall) {
  // DuckDB's whole-file CSV sniff does not check for interrupts, so the stop takes effect
  // when the sniff ends (about 2 s per 100 MB here); no time bound is asserted for it.
  ProviderServer server;
  quarry::testing::TempDir cwd;
  {
    std::ofstream big(cwd.path() / "big.csv");
    big << "id,region,amount,day\n";
    for (int i = 0; i < 1'000'000; ++i) {
      big << i << ",r" << (i % 97) << "," << (i % 1000) * 0.25 << ",2024-01-" << 10 + i % 18
          << "\n";
    }
  }
  const fs::path runs = cwd.path() / "runs";
  // A signal that lands before quarry installed its handler (a sanitized binary takes 0.4 s to
  // reach main) ends it by the signal, 130: that attempt was too early and is repeated later.
  int status = 130;
  for (const int delay_ms : {300, 800, 1500}) {
    Quarry q(server, cwd.path(),
             {"ask", "--no-cache", "--timeout-ms", "120000", "--runs-dir", runs.string(), "--data",
              (cwd.path() / "big.csv").string(), "How many rows?"});
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    q.Signal(SIGINT);
    status = q.Wait(std::chrono::seconds(60));
    if (status == 130) continue;
    EXPECT_EQ(status, 6) << q.err();
    EXPECT_NE(q.err().find("interrupted while opening the data"), std::string::npos) << q.err();
    break;
  }
  EXPECT_NE(status, 130) << "every Ctrl-C landed before quarry could handle it";
  EXPECT_TRUE(server.requests().empty());
  EXPECT_FALSE(fs::exists(runs)) << "nothing was asked, so no run folder";
}

TEST(InterruptOpenTest, CtrlCStopsQuarryPythonAndRemovesTheTableCopies) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const auto script = cwd.Write("loop.py", "print('started', flush=True)\nwhile True:\n    pass\n");
  const fs::path runs = cwd.path() / "runs";
  Quarry q(server, cwd.path(),
           {"python", "--runs-dir", runs.string(), "--timeout-ms", "60000",
            (quarry::testing::SourceDir() / "data" / "sales.csv").string(), script.string()});
  // The table copies exist before the child starts; then give the child time to start.
  ASSERT_TRUE(WaitForRunEntry(runs, "tables", std::chrono::seconds(30))) << q.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const auto sent = Clock::now();
  q.Signal(SIGTERM);
  EXPECT_EQ(q.Wait(std::chrono::seconds(10)), 6) << q.err();
  EXPECT_LT(MsSince(sent), 3000);
  // The copies of the user's data made for the sandbox are gone.
  const fs::path run = OnlyRun(runs);
  ASSERT_FALSE(run.empty());
  EXPECT_FALSE(fs::exists(run / "tables"));
}

// A run whose first stop never finishes (here: one that ignores it): the second Ctrl-C quits at
// once, and the copies of the user's data registered as scratch still go. In a forked child,
// since the quit ends the process.
TEST(InterruptScopeTest, ASecondCtrlCQuitsAndRemovesTheScratchCopies) {
  quarry::testing::TempDir dir;
  const fs::path tables = dir.path() / "run" / "tables";
  fs::create_directories(tables);
  std::ofstream(tables / "Customer.csv") << "CustomerId,Company\n1,x\n";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    const quarry::cli::InterruptScope scope;
    quarry::ScratchDirs::Add(tables);
    [[maybe_unused]] const ssize_t n = write(ready[1], "r", 1);
    while (true) pause();  // a stop that never completes
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  kill(child, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(fs::exists(tables)) << "one Ctrl-C only asks the run to stop";
  const auto second = Clock::now();
  kill(child, SIGINT);
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (waitpid(child, &status, WNOHANG) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (Clock::now() >= deadline) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the second Ctrl-C did not end the process";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 6);
  EXPECT_LT(MsSince(second), 1000);
  EXPECT_FALSE(fs::exists(tables)) << "the copies of the user's data are left behind";
  EXPECT_TRUE(fs::exists(dir.path() / "run")) << "only the registered folder goes";
}

TEST(KilledRunTest, TraceAndViewRebuildAKilledRunFromEventsAndMarkItIncomplete) {
  ProviderServer server;
  server.Enqueue({200, {}, ToolCallReply({{"call_1", "run_sql", kRunaway}}, 1234, 56)});
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  {
    Quarry q(server, cwd.path(), AskArgs(runs));
    ASSERT_TRUE(WaitForRequests(server, 1, std::chrono::seconds(20)));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    q.Signal(SIGKILL);
    EXPECT_EQ(q.Wait(std::chrono::seconds(5)), 128 + SIGKILL);
  }
  const fs::path run = OnlyRun(runs);
  ASSERT_FALSE(run.empty());
  ASSERT_FALSE(fs::exists(run / "trace.json"));
  ASSERT_TRUE(fs::exists(run / "events.jsonl"));
  const std::string id = run.filename().string();

  for (const std::string& which : {std::string("latest"), id}) {
    auto r = quarry::testing::RunProcess(
        {quarry::testing::QuarryBinary().string(), "trace", which, "--runs-dir", runs.string()},
        cwd.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("run " + id), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("How many sales rows are there?"), std::string::npos);
    EXPECT_NE(r.out.find("stop:     incomplete (incomplete: rebuilt from events.jsonl)"),
              std::string::npos)
        << r.out;
    // The model turn that was recorded before the kill, with its tokens.
    EXPECT_NE(r.out.find("tokens 1234+56"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sales.csv"), std::string::npos)
        << "the sources come from the start event";
  }
  auto v = quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "view", id, "--runs-dir", runs.string()},
      cwd.path());
  EXPECT_EQ(v.exit_code, 0) << v.err;
  const std::string html = quarry::testing::ReadFile(run / "trace.html");
  EXPECT_NE(html.find("incomplete"), std::string::npos);
  EXPECT_NE(html.find("How many sales rows are there?"), std::string::npos);
}

}  // namespace
}  // namespace quarry

namespace quarry {
namespace {

// The outside red team: a DuckDB function busy on one row sees no interrupt, so SIGTERM took
// 8 s and more (and the query ran 52 s against a 10 s timeout). Past a 3 s grace the process
// quits as a second Ctrl-C would.
TEST(InterruptOpenTest, WorkThatCannotSeeTheStopIsQuitAfterTheGrace) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  {
    std::ofstream csv(cwd.path() / "sales.csv");
    csv << "region,amount\n";
    for (int i = 0; i < 12; ++i) csv << "r" << i << "," << i << "\n";
  }
  Quarry q(server, cwd.path(),
           {"sql", "--no-cache", "--timeout-ms", "120000", (cwd.path() / "sales.csv").string(),
            "SELECT levenshtein(repeat('a', 30000), repeat('b', 30000) || region) AS d "
            "FROM (SELECT region FROM sales LIMIT 12)"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto sent = Clock::now();
  q.Signal(SIGTERM);
  EXPECT_EQ(q.Wait(std::chrono::seconds(30)), 6) << q.err();
  EXPECT_LT(MsSince(sent), 5000) << q.err();
  EXPECT_NE(q.err().find("quarry: stopping"), std::string::npos) << q.err();
}

}  // namespace
}  // namespace quarry
