// What the chat tests share: `quarry chat` under a pseudo-terminal (PtyQuarry), its
// environment with the stand-in provider as the model, and scripted turns over data/sales.csv.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"

extern char** environ;

namespace quarry::chat_test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::ToolCallReply;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline constexpr const char* kMost =
    R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC LIMIT 1"})";
inline constexpr const char* kMostAnswer =
    R"({"answer": "North sells most: 141794.14.", "supporting_values": ["North", "141794.14"]})";
inline constexpr const char* kLeast =
    R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total ASC LIMIT 1"})";
inline constexpr const char* kLeastAnswer =
    R"({"answer": "Central sells least: 58576.15.", "supporting_values": ["Central", "58576.15"]})";
inline constexpr const char* kCount = R"({"sql": "SELECT count(*) AS n FROM sales"})";
inline constexpr const char* kCountAnswer =
    R"({"answer": "There are 2065 sales rows.", "supporting_values": ["2065"]})";
inline constexpr const char* kRunaway =
    R"({"sql": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"})";

inline void EnqueueTurn(ProviderServer& server, const char* sql, const char* answer) {
  server.Enqueue({200, {}, ToolCallReply({{"call_sql", "run_sql", sql}})});
  server.Enqueue({200, {}, ToolCallReply({{"call_answer", "final_answer", answer}})});
}

inline fs::path Sales() { return quarry::testing::SourceDir() / "data" / "sales.csv"; }

// This process's environment without model settings, plus the stand-in's and a private state
// directory (the chat history and default threads go there).
inline std::vector<std::string> ChildEnv(const ProviderServer& server, const fs::path& state) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.starts_with("OPENROUTER_API_KEY=") || kv.starts_with("QUARRY_") ||
        kv.starts_with("TERM=") || kv.starts_with("XDG_STATE_HOME=")) {
      continue;
    }
    env.push_back(kv);
  }
  env.push_back("QUARRY_BASE_URL=" + server.base_url());
  env.push_back("QUARRY_MODEL=stand-in-model");
  env.push_back("QUARRY_API_KEY=sk-chat-test-0123456789");
  env.push_back("XDG_STATE_HOME=" + state.string());
  env.push_back("NO_COLOR=1");
  env.push_back("TERM=xterm");
  return env;
}

inline std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The quarry binary on the slave side of a pseudo-terminal, as a user's shell would run it.
class PtyQuarry {
 public:
  PtyQuarry(std::vector<std::string> args, const fs::path& cwd, std::vector<std::string> env) {
    args.insert(args.begin(), quarry::testing::QuarryBinary().string());
    std::vector<char*> argv = CStrings(args), envp = CStrings(env);
    const std::string dir = cwd.string();
    winsize size{30, 120, 0, 0};
    pid_ = forkpty(&master_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      // Only async-signal-safe calls after fork: the test has threads (the stand-in server).
      if (chdir(dir.c_str()) != 0) _exit(126);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (master_ >= 0) fcntl(master_, F_SETFL, O_NONBLOCK);
  }
  ~PtyQuarry() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  bool started() const { return pid_ > 0 && master_ >= 0; }
  void Type(const std::string& keys) {
    [[maybe_unused]] const ssize_t n = write(master_, keys.data(), keys.size());
  }
  // Reads until `text` appears after what earlier waits consumed; then consumes through it.
  bool WaitFor(const std::string& text, std::chrono::milliseconds limit = 30s) {
    const auto deadline = Clock::now() + limit;
    while (true) {
      if (const size_t at = output_.find(text, cursor_); at != std::string::npos) {
        cursor_ = at + text.size();
        return true;
      }
      if (Clock::now() > deadline) return false;
      Pump(50);
    }
  }
  // The exit code, or -1 when still running after `limit`.
  int Wait(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      Pump(20);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        Pump(0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  const std::string& output() const { return output_; }
  std::string rest() const { return output_.substr(cursor_); }

 private:
  void Pump(int timeout_ms) {
    pollfd fd{master_, POLLIN, 0};
    if (poll(&fd, 1, timeout_ms) <= 0) return;
    char buf[4096];
    while (true) {
      const ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) break;  // EAGAIN, or EIO once the child closed the terminal
      output_.append(buf, static_cast<size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int master_ = -1;
  bool exited_ = false;
  std::string output_;
  size_t cursor_ = 0;
};

inline bool WaitForRequests(const ProviderServer& server, size_t n,
                            std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (server.requests().size() >= n) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

inline json ShowThread(const ProviderServer& server, const fs::path& cwd, const fs::path& runs,
                       const std::string& name) {
  auto r = quarry::testing::RunProcess({quarry::testing::QuarryBinary().string(), "threads", "show",
                                        name, "--runs-dir", runs.string(), "--format", "json"},
                                       cwd, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out, nullptr, false);
}

}  // namespace quarry::chat_test
