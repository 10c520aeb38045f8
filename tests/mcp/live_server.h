// A `quarry mcp` child driven over pipes as a live MCP client would drive it: every line the
// server writes is kept with the time it arrived. Shared by the live MCP tests.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

extern char** environ;

namespace quarry::testing {

namespace mcp_live {
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

// One `quarry mcp` (or `command`: `quarry serve`) child with its stdin and stdout on pipes;
// every line it writes is kept with the time it arrived. stderr is collected for failure messages.
class LiveServer {
 public:
  LiveServer(const std::vector<std::string>& args, const fs::path& cwd,
             const std::vector<std::string>& env = {}, const std::string& command = "mcp") {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe failed");
    }
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
      const std::string kv(*e);
      // No model settings leak in from the machine running the tests.
      if (kv.starts_with("QUARRY_") || kv.starts_with("OPENROUTER_")) continue;
      env_strings.push_back(kv);
    }
    for (const auto& e : env) {  // replaces the variable of that name
      const std::string key = e.substr(0, e.find('=') + 1);
      std::erase_if(env_strings, [&](const std::string& kv) { return kv.starts_with(key); });
      env_strings.push_back(e);
    }
    std::vector<std::string> argv = {QuarryBinary().string(), command};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env_strings) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      if (chdir(cwd.c_str()) != 0) _exit(127);
      execve(cargv[0], cargv.data(), cenv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    in_ = in[1];
    reader_ = std::thread([this, out_fd = out[0], err_fd = err[0]] { Read(out_fd, err_fd); });
  }
  ~LiveServer() {
    CloseInput();
    if (pid_ > 0 && !exit_code_) {
      kill(pid_, SIGKILL);
      Wait(milliseconds(5000));
    }
    if (reader_.joinable()) reader_.join();
  }

  void Send(const json& message) {
    const std::string line = message.dump() + "\n";
    ASSERT_EQ(write(in_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  void Signal(int signal_number) const { kill(pid_, signal_number); }
  void CloseInput() {
    if (in_ >= 0) close(in_);
    in_ = -1;
  }

  struct Line {
    json message;  // discarded when the line is not JSON
    Clock::time_point at;
    std::string text;
  };
  // The first line written, as text, waiting at most `timeout` ("" when none came).
  std::string FirstLine(milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !lines_.empty(); });
    return lines_.empty() ? "" : lines_.front().text;
  }
  // The first message with this id (a response), waiting at most `timeout`.
  std::optional<Line> Response(const json& id, milliseconds timeout) {
    return WaitFor([&](const json& m) { return m.contains("id") && m["id"] == id; }, timeout);
  }
  std::optional<Line> WaitFor(const std::function<bool(const json&)>& match, milliseconds timeout) {
    std::unique_lock lock(mu_);
    std::optional<Line> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const Line& l : lines_) {
        if (match(l.message)) {
          found = l;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<Line> Lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::string Err() {
    std::lock_guard lock(mu_);
    return err_;
  }
  size_t LongestLineBytes() {
    std::lock_guard lock(mu_);
    return longest_line_;
  }
  // Waits for the process to exit; its exit code, or nullopt when it did not in time.
  std::optional<int> Wait(milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    while (!exit_code_ && Clock::now() < until) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        // What it wrote before exiting is read before Err() is asked for it: the pipes close
        // at its exit, which ends the reader.
        std::unique_lock lock(mu_);
        cv_.wait_until(lock, std::max(until, Clock::now() + milliseconds(2000)),
                       [&] { return read_all_; });
        break;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return exit_code_;
  }

 private:
  void Read(int out_fd, int err_fd) {
    std::array<pollfd, 2> fds{{{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}}};
    std::string pending;
    char buf[65536];
    int open_fds = 2;
    while (open_fds > 0) {
      if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
          continue;
        }
        std::lock_guard lock(mu_);
        if (i == 1) {
          err_.append(buf, static_cast<size_t>(n));
          continue;
        }
        pending.append(buf, static_cast<size_t>(n));
        for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
          const std::string line = pending.substr(0, end);
          pending.erase(0, end + 1);
          longest_line_ = std::max(longest_line_, line.size());
          lines_.push_back({json::parse(line, nullptr, false), Clock::now(), line});
        }
        cv_.notify_all();
      }
    }
    std::lock_guard lock(mu_);
    read_all_ = true;
    cv_.notify_all();
  }

  pid_t pid_ = -1;
  int in_ = -1;
  std::optional<int> exit_code_;
  bool read_all_ = false;  // both pipes closed
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Line> lines_;
  size_t longest_line_ = 0;
  std::string err_;
};

inline json Request(const json& id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}
inline json Ping(const json& id) { return Request(id, "ping"); }
inline json Call(const json& id, const std::string& tool, const json& arguments,
                 json meta = nullptr) {
  json params = {{"name", tool}, {"arguments", arguments}};
  if (!meta.is_null()) params["_meta"] = std::move(meta);
  return Request(id, "tools/call", std::move(params));
}
inline json Cancel(const json& id) {
  return {{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", id}, {"reason", "the test gave up on it"}}}};
}

}  // namespace mcp_live

using mcp_live::Call;
using mcp_live::Cancel;
using mcp_live::LiveServer;
using mcp_live::Ping;
using mcp_live::Request;

}  // namespace quarry::testing
