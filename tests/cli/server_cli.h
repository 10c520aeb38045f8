// The fixture the CLI tests on real database servers share (postgres_cli_test.cc,
// mysql_cli_test.cc, clickhouse_cli_test.cc, server_threads_test.cc): quarry run in a fresh
// directory that is also HOME, with no model settings and no client settings of the machine's
// (no ~/.pgpass, ~/.my.cnf, PGPASSWORD, MYSQL_PWD, CLICKHOUSE_PASSWORD), so a password comes only
// from what a test gives.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace quarry::testing {

inline const std::vector<std::string> kServerCliUnset = {"QUARRY_BASE_URL",
                                                         "QUARRY_MODEL",
                                                         "QUARRY_API_KEY",
                                                         "OPENROUTER_API_KEY",
                                                         "QUARRY_FIXTURES",
                                                         "QUARRY_PRICES",
                                                         "ANTHROPIC_API_KEY",
                                                         "QUARRY_PROVIDER",
                                                         "PGPASSWORD",
                                                         "PGSERVICE",
                                                         "PGHOST",
                                                         "PGPORT",
                                                         "PGUSER",
                                                         "PGDATABASE",
                                                         "PGPASSFILE",
                                                         "MYSQL_PWD",
                                                         "MYSQL_HOST",
                                                         "MYSQL_TCP_PORT",
                                                         "CLICKHOUSE_USER",
                                                         "CLICKHOUSE_PASSWORD",
                                                         "XDG_STATE_HOME",
                                                         "http_proxy",
                                                         "HTTP_PROXY"};

class ServerCliTest : public ::testing::Test {
 protected:
  // `quarry ARGS` with `env` added to the fixture's.
  ProcessResult Quarry(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), QuarryBinary().string());
    for (auto& e : Env()) env.push_back(std::move(e));
    return RunProcess(args, cwd_.path(), env, kServerCliUnset);
  }
  // `quarry chat ARGS` with `input` on stdin (not a terminal: no prompt is drawn).
  ProcessResult Chat(const std::vector<std::string>& args, const std::string& input) {
    const std::filesystem::path in = cwd_.Write("stdin.txt", input);
    std::string command = "exec \"$0\" chat";
    for (size_t i = 0; i < args.size(); ++i) command += " \"$" + std::to_string(i + 1) + "\"";
    command += " < " + in.string();
    std::vector<std::string> argv = {"/bin/sh", "-c", command, QuarryBinary().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, cwd_.path(), Env(), kServerCliUnset);
  }
  // Every file under runs/, concatenated: what traces, events and threads hold.
  std::string AllRunFiles() const {
    std::string all;
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(cwd_.path() / "runs", ec)) {
      if (e.is_regular_file()) all += ReadFile(e.path());
    }
    return all;
  }
  std::string Runs() const { return (cwd_.path() / "runs").string(); }
  TempDir cwd_;

 private:
  std::vector<std::string> Env() const {
    return {"HOME=" + cwd_.path().string(), "PGPASSFILE=" + (cwd_.path() / "no-pgpass").string(),
            "XDG_STATE_HOME=" + (cwd_.path() / "state").string(), "NO_COLOR=1"};
  }
};

}  // namespace quarry::testing
