// Implementation of the shared test helpers (see test_support.h).
#include "support/test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sqlite3.h>

extern char** environ;

namespace quarry::testing {
namespace fs = std::filesystem;

fs::path SourceDir() { return fs::path(QUARRY_SOURCE_DIR); }

std::vector<HostileStatement> ReadHostileCorpus(const fs::path& file) {
  std::ifstream in(file);
  if (!in) ADD_FAILURE() << "cannot read " << file;
  std::vector<HostileStatement> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t a = line.find(" | ");
    const size_t b = line.find(" | ", a + 3);
    if (a == std::string::npos || b == std::string::npos) {
      ADD_FAILURE() << "malformed corpus line: " << line;
      continue;
    }
    std::string sql = line.substr(b + 3);
    for (size_t at = sql.find("\\n"); at != std::string::npos; at = sql.find("\\n", at + 1)) {
      sql.replace(at, 2, "\n");
    }
    HostileStatement h{line.substr(0, a), line.substr(a + 3, b - a - 3), sql};
    if (h.server != "refused" && h.server != "defused" && h.server != "allowed") {
      ADD_FAILURE() << "corpus line with an unknown outcome: " << line;
    }
    out.push_back(std::move(h));
  }
  return out;
}
fs::path QuarryBinary() { return fs::path(QUARRY_BINARY); }

TempDir::TempDir() {
  std::random_device rd;
  for (int i = 0; i < 100; ++i) {
    fs::path p = fs::temp_directory_path() / ("quarry-test-" + std::to_string(rd()));
    if (fs::create_directory(p)) {
      path_ = p;
      return;
    }
  }
  throw std::runtime_error("cannot create a temp dir");
}

bool SandboxRequired() {
  const char* v = std::getenv("QUARRY_REQUIRE_SANDBOX");
  return v != nullptr && std::string_view(v) == "1";
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

fs::path TempDir::Write(const std::string& name, const std::string& content) const {
  fs::path p = path_ / name;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << content;
  return p;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Sha256File(const fs::path& path) {
  std::string bytes = ReadFile(path);
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md.data(), &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

std::vector<std::string> DirectoryFingerprint(const fs::path& dir) {
  std::vector<std::string> rows;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string rel = fs::relative(e.path(), dir).string();
    rows.push_back(e.is_regular_file() ? rel + " " + Sha256File(e.path()) : rel + "/");
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

ProcessResult RunProcess(const std::vector<std::string>& argv, const fs::path& cwd,
                         const std::vector<std::string>& extra_env,
                         const std::vector<std::string>& unset_env) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    // The providers' own SDK variables choose a provider (settings.cc): one the developer has
    // set must not send a test's request to a real provider. A test that wants one passes it.
    // So may the developer's config file (its default profile), unless a test gives its own.
    bool drop = key == "OPENAI_API_KEY" || key == "OPENAI_BASE_URL" ||
                key == "ANTHROPIC_BASE_URL" || key == "QUARRY_PROFILE" || key == "QUARRY_CONFIG";
    for (const auto& u : unset_env) drop = drop || key == u;
    for (const auto& x : extra_env) drop = drop || key == x.substr(0, x.find('='));
    if (!drop) env_strings.push_back(kv);
  }
  bool own_config = false;
  for (const auto& x : extra_env) {
    const std::string key = x.substr(0, x.find('='));
    own_config = own_config || key == "QUARRY_CONFIG" || key == "XDG_CONFIG_HOME" || key == "HOME";
  }
  if (!own_config) env_strings.push_back("XDG_CONFIG_HOME=/nonexistent/quarry-test");
  for (const auto& x : extra_env) env_strings.push_back(x);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (chdir(cwd.c_str()) != 0) _exit(127);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult r;
  std::array<pollfd, 2> fds{{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

void MakeSqlite(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

}  // namespace quarry::testing
