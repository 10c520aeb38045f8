// The model's streamed reply shown live: LiveText's rendering (indent, one line per tool call,
// escapes, the argument preview's cut), then the real quarry binary against a stand-in that
// streams, once with stderr on a pseudo-terminal (the text appears) and once piped (it does
// not), and --no-stream / QUARRY_STREAM=0 (whole replies, nothing live).
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/live_text.h"
#include "quarry/cli/terminal.h"
#include "support/provider_server.h"
#include "support/stream_replies.h"
#include "support/test_support.h"

extern char** environ;

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using Kind = llm::StreamDelta::Kind;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedCompletion;
using quarry::testing::StreamedResponse;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// `text` without its colour codes (ESC [ digits m), with the terminal's CR LF as LF: what a
// reader sees.
std::string Plain(const std::string& text) {
  static const std::regex kSgr("\x1b\\[[0-9;]*m");
  static const std::regex kCrLf("\r\n");
  return std::regex_replace(std::regex_replace(text, kSgr, ""), kCrLf, "\n");
}

std::string Render(const std::vector<llm::StreamDelta>& deltas, bool color = false) {
  std::ostringstream out;
  cli::LiveText display(out, color);
  for (const auto& d : deltas) display.Show(d);
  display.End();
  return out.str();
}

TEST(LiveTextTest, TextIsIndentedAndEachToolCallGetsOneLine) {
  const std::string shown = Render({{Kind::kText, "Let me ", 0},
                                    {Kind::kText, "check.\nThen", 0},
                                    {Kind::kText, " sum it.", 0},
                                    {Kind::kToolCall, "run_sql", 0},
                                    {Kind::kToolArguments, "{\"sql\":\n  \"SELECT", 0},
                                    {Kind::kToolArguments, " 1\"}", 0},
                                    {Kind::kToolCall, "final_answer", 1},
                                    {Kind::kToolArguments, "{}", 1}});
  EXPECT_EQ(shown,
            "  Let me check.\n  Then sum it.\n"
            "  \u2192 run_sql {\"sql\": \"SELECT 1\"}\n"
            "  \u2192 final_answer {}\n");
}

TEST(LiveTextTest, DimmedOnAColourTerminal) {
  EXPECT_EQ(Render({{Kind::kText, "hi", 0}}, /*color=*/true), "\033[2m  hi\033[0m\n");
}

// Bidirectional controls reorder the rest of the line (a tool name could read as another):
// shown as escapes, also when one arrives split across two pieces.
TEST(LiveTextTest, BidiControlsAreShownEscaped) {
  EXPECT_EQ(cli::TerminalText("a\xE2\x80\xAE b \xE2\x81\xA6"
                              "c\xE2\x80\x8F \xE2\x80\x94 \xE2\x80\xA9"),
            "a\\u202e b \\u2066c\\u200f \xE2\x80\x94 \xE2\x80\xA9");  // dashes stay
  const std::string shown = Render({{Kind::kText, "x\xE2\x80", 0}, {Kind::kText, "\xAE y", 0}});
  EXPECT_NE(shown.find("x\\u202e y"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\xE2\x80\xAE"), std::string::npos) << shown;
}

TEST(LiveTextTest, EscapeSequencesFromTheModelAreShownNotSent) {
  // ESC (clear screen), a BEL-terminated title, and a C1 CSI (U+009B) split across two pieces.
  const std::string shown = Render({{Kind::kText, "a\x1b[2J\x1b]0;pwned\x07 b\xC2", 0},
                                    {Kind::kText,
                                     "\x9B"
                                     "31m c \xC3\xA9",
                                     0},
                                    {Kind::kToolCall, "run_sql\x1b[1A", 0},
                                    {Kind::kToolArguments, "{\"x\": \"\x1b[K\xC2", 0},
                                    {Kind::kToolArguments, "\x85\"}", 0}});
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x07'), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\xC2\x9B"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\xC2\x85"), std::string::npos) << shown;
  EXPECT_TRUE(Contains(shown, "a\\x1b[2J\\x1b]0;pwned\\x07 b\\u009b31m c \xC3\xA9"));
  EXPECT_TRUE(Contains(shown, "run_sql\\x1b[1A {\"x\": \"\\x1b[K\\u0085\"}"));
}

TEST(LiveTextTest, LongArgumentsAreCutAfterAHundredCharacters) {
  const std::string sql(300, 'S');
  const std::string shown = Render({{Kind::kToolCall, "run_sql", 0},
                                    {Kind::kToolArguments, sql.substr(0, 150), 0},
                                    {Kind::kToolArguments, sql.substr(150), 0}});
  EXPECT_EQ(shown, "  \u2192 run_sql " + std::string(100, 'S') + "\u2026\n");
}

// What to type once the output (since the last typing) shows `prompt`.
struct Typing {
  std::string prompt;
  std::string keys;
};

// Runs `argv` in `cwd` with stdin, stdout and stderr on a pseudo-terminal, typing `typing` in
// order at its prompts; returns everything written to the terminal and the exit code (-1 when
// it had not exited within a minute; it is then killed).
std::pair<std::string, int> RunOnTerminal(const std::vector<std::string>& argv,
                                          const std::filesystem::path& cwd,
                                          const std::vector<std::string>& extra_env,
                                          const std::vector<Typing>& typing = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("NO_COLOR=") || entry.starts_with("QUARRY_") ||
        entry.starts_with("OPENROUTER_API_KEY=") || entry.starts_with("TERM=")) {
      continue;
    }
    env_strings.emplace_back(*e);
  }
  env_strings.push_back("TERM=xterm");
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp, args;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string dir = cwd.string();
  int master = -1;
  winsize size{30, 160, 0, 0};
  const pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) return {"forkpty failed", -1};
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  std::string output;
  size_t typed = 0, cursor = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buffer[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    if (typed < typing.size()) {
      const size_t at = output.find(typing[typed].prompt, cursor);
      if (at != std::string::npos) {
        cursor = at + typing[typed].prompt.size();
        const std::string& keys = typing[typed++].keys;
        [[maybe_unused]] const ssize_t n = write(master, keys.data(), keys.size());
      }
    }
    pollfd fd{master, POLLIN, 0};
    if (poll(&fd, 1, 50) <= 0) continue;
    const ssize_t n = read(master, buffer, sizeof buffer);
    if (n > 0) {
      output.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the child has exited and the terminal is gone
    }
  }
  close(master);
  int status = 0;
  pid_t reaped = 0;
  for (int i = 0; i < 100 && (reaped = waitpid(pid, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (reaped != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return {output, -1};
  }
  return {output, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

constexpr const char* kSql =
    R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC LIMIT 1"})";
constexpr const char* kAnswer =
    R"({"answer": "North sells most: 141794.14.", "supporting_values": ["North", "141794.14"]})";

// Two streamed turns: text (with an escape sequence a hostile reply might send) and a query,
// then the answer.
void EnqueueStreamedAnswer(ProviderServer& server) {
  ScriptedCompletion query;
  query.content = "Let me sum revenue by region.\x1b]0;pwned\x07";
  query.tool_calls = {{"call_1", "run_sql", kSql}};
  query.prompt_tokens = 1000;
  query.completion_tokens = 40;
  server.Enqueue(StreamedResponse(query));
  ScriptedCompletion answer;
  answer.tool_calls = {{"call_2", "final_answer", kAnswer}};
  answer.prompt_tokens = 1100;
  answer.completion_tokens = 30;
  server.Enqueue(StreamedResponse(answer));
}

std::vector<std::string> AskArgs(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {quarry::testing::QuarryBinary().string(), "ask", "--no-python",
                                   "--data",
                                   (quarry::testing::SourceDir() / "data" / "sales.csv").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("Which region sells most?");
  return args;
}

std::vector<std::string> ModelEnv(const ProviderServer& server) {
  return {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
          "QUARRY_API_KEY=sk-live-text-0123456789"};
}

TEST(LiveTextCliTest, StreamedTextAndToolCallsAppearLiveOnATerminal) {
  ProviderServer server;
  EnqueueStreamedAnswer(server);
  quarry::testing::TempDir cwd;
  const auto [raw, exit_code] = RunOnTerminal(AskArgs(), cwd.path(), ModelEnv(server));
  ASSERT_EQ(exit_code, 0) << raw;
  // Dimmed text, indented; the escape sequence from the reply shown as text, never sent.
  EXPECT_TRUE(Contains(raw, "\033[2m  Let me "));
  const std::string output = Plain(raw);
  EXPECT_TRUE(Contains(output, "\n  Let me sum revenue by region.\\x1b]0;pwned\\x07\n"));
  EXPECT_EQ(output.find('\x1b'), std::string::npos) << "only colour codes are sent";
  // One line per tool call, its arguments previewed, then the step line on a line of its own.
  const size_t text = output.find("Let me sum");
  const size_t call = output.find("\n  \u2192 run_sql {\"sql\": \"SELECT region, round(");
  const size_t step = output.find("\n  [ 2] model ");
  const size_t answer = output.find("\n  \u2192 final_answer {\"answer\": \"North");
  ASSERT_NE(call, std::string::npos) << output;
  ASSERT_NE(step, std::string::npos) << output;
  ASSERT_NE(answer, std::string::npos) << output;
  EXPECT_LT(text, call);
  EXPECT_LT(call, step);
  EXPECT_LT(step, answer);
  EXPECT_TRUE(Contains(output, "ORDER BY total DE\u2026\n  [ 2] model ")) << "cut at 100";
  EXPECT_TRUE(Contains(output, "North sells most: 141794.14."));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].Json()["stream"], true);
}

TEST(LiveTextCliTest, PipedStderrGetsNoLiveText) {
  ProviderServer server;
  EnqueueStreamedAnswer(server);
  quarry::testing::TempDir cwd;
  const auto r =
      quarry::testing::RunProcess(AskArgs(), cwd.path(), ModelEnv(server), {"QUARRY_STREAM"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("Let me sum"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\u2192"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_TRUE(Contains(r.err, "[ 2] model "));
  EXPECT_TRUE(Contains(r.out, "North sells most: 141794.14."));
  EXPECT_EQ(server.requests().at(0).Json()["stream"], true) << "streamed all the same";
}

TEST(LiveTextCliTest, NoStreamAsksForWholeRepliesAndShowsNothingLive) {
  for (const bool by_flag : {true, false}) {
    ProviderServer server;
    server.Enqueue({200, {}, quarry::testing::ToolCallReply({{"call_1", "run_sql", kSql}})});
    server.Enqueue(
        {200, {}, quarry::testing::ToolCallReply({{"call_2", "final_answer", kAnswer}})});
    quarry::testing::TempDir cwd;
    std::vector<std::string> env = ModelEnv(server);
    if (!by_flag) env.push_back("QUARRY_STREAM=0");
    const auto [output, exit_code] = RunOnTerminal(
        AskArgs(by_flag ? std::vector<std::string>{"--no-stream"} : std::vector<std::string>{}),
        cwd.path(), env);
    ASSERT_EQ(exit_code, 0) << output;
    EXPECT_EQ(output.find("\u2192"), std::string::npos) << output;
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_FALSE(requests[0].Json().contains("stream")) << (by_flag ? "--no-stream" : "env");
    EXPECT_FALSE(requests[0].Json().contains("stream_options"));
  }
}

TEST(LiveTextCliTest, ChatShowsTheStreamedTextToo) {
  ProviderServer server;
  EnqueueStreamedAnswer(server);
  quarry::testing::TempDir cwd;
  std::vector<std::string> env = ModelEnv(server);
  env.push_back("XDG_STATE_HOME=" + (cwd.path() / "state").string());
  const auto [output, exit_code] = RunOnTerminal(
      {quarry::testing::QuarryBinary().string(), "chat", "--no-python", "--runs-dir",
       (cwd.path() / "runs").string(), "--data",
       (quarry::testing::SourceDir() / "data" / "sales.csv").string()},
      cwd.path(), env, {{"quarry> ", "Which region sells most?\r"}, {"quarry> ", "\x04"}});
  ASSERT_EQ(exit_code, 0) << output;
  const std::string plain = Plain(output);
  const size_t text = plain.find("\n  Let me sum revenue by region.");
  const size_t call = plain.find("\n  \u2192 run_sql {");
  const size_t step = plain.find("] model ");
  ASSERT_NE(text, std::string::npos) << output;
  ASSERT_NE(call, std::string::npos) << output;
  EXPECT_LT(text, call);
  EXPECT_LT(call, step);
  EXPECT_TRUE(Contains(output, "North sells most: 141794.14."));
  EXPECT_EQ(server.requests().size(), 2u);
}

// Long output on a terminal goes through the pager (QUARRY_PAGER here, a shell command as
// PAGER is); short output, --no-pager and a pipe print straight; a pager quit early (head)
// ends quarry quietly, not by SIGPIPE.
TEST(PagerCliTest, LongTablesOnATerminalGoThroughThePager) {
  quarry::testing::TempDir cwd;
  std::string csv = "n,label\n";
  for (int i = 1; i <= 5000; ++i)
    csv += std::to_string(i) + ",row number " + std::to_string(i) + "\n";
  const auto data = cwd.Write("long.csv", csv);
  const auto paged = cwd.path() / "paged.txt";
  const std::string pager = "QUARRY_PAGER=cat > " + paged.string();
  auto sql = [&](const std::string& query, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {quarry::testing::QuarryBinary().string(), "sql", "--no-cache",
                                     data.string(), query};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  };

  const auto [out, code] =
      RunOnTerminal(sql("SELECT * FROM long ORDER BY n LIMIT 100"), cwd.path(), {pager});
  EXPECT_EQ(code, 0) << out;
  const std::string text = quarry::testing::ReadFile(paged);
  EXPECT_NE(text.find("(100 rows)"), std::string::npos) << text;
  EXPECT_NE(text.find("100 | row number 100"), std::string::npos) << text;
  EXPECT_EQ(out.find("row number 100"), std::string::npos) << "printed as well as paged: " << out;

  std::filesystem::remove(paged);
  const auto [straight, straight_code] = RunOnTerminal(
      sql("SELECT * FROM long ORDER BY n LIMIT 100", {"--no-pager"}), cwd.path(), {pager});
  EXPECT_EQ(straight_code, 0) << straight;
  EXPECT_NE(straight.find("(100 rows)"), std::string::npos) << straight;
  EXPECT_FALSE(std::filesystem::exists(paged)) << "--no-pager still paged";

  const auto [fits, fits_code] =
      RunOnTerminal(sql("SELECT * FROM long ORDER BY n LIMIT 3"), cwd.path(), {pager});
  EXPECT_EQ(fits_code, 0) << fits;
  EXPECT_NE(fits.find("(3 rows)"), std::string::npos) << fits;
  EXPECT_FALSE(std::filesystem::exists(paged)) << "three rows fit the terminal";

  // A pipe is no terminal: straight, whatever the length.
  const quarry::testing::ProcessResult piped = quarry::testing::RunProcess(
      sql("SELECT * FROM long ORDER BY n LIMIT 100"), cwd.path(), {pager});
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.out.find("(100 rows)"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(paged));

  // A pager that cannot start, or fails, is said, and the table printed straight.
  for (const char* bad : {"QUARRY_PAGER=no-such-pager-xyz", "QUARRY_PAGER=exit 3"}) {
    const auto [lost, lost_code] =
        RunOnTerminal(sql("SELECT * FROM long ORDER BY n LIMIT 100"), cwd.path(), {bad});
    EXPECT_EQ(lost_code, 0) << bad << ": " << lost;
    EXPECT_NE(lost.find("printing straight"), std::string::npos) << bad << ": " << lost;
    EXPECT_NE(lost.find("(100 rows)"), std::string::npos) << bad << ": " << lost;
  }
  // stdout into `head`, no pager: the closed pipe ends the output, not quarry (no SIGPIPE, 141).
  const quarry::testing::ProcessResult head = quarry::testing::RunProcess(
      {"/bin/bash", "-c",
       "\"$0\" sql --no-cache \"$1\" 'SELECT * FROM long' --max-rows 5000 | head -c 10 "
       ">/dev/null; echo \"status ${PIPESTATUS[0]}\"",
       quarry::testing::QuarryBinary().string(), data.string()},
      cwd.path(), {});
  EXPECT_EQ(head.out, "status 0\n") << head.err;
  // The same for JSON and CSV, whose failed write lies far behind the end of the output (a
  // fresh-user trial saw exit 3 and "could not be written").
  for (const char* format : {"json", "csv"}) {
    const quarry::testing::ProcessResult into_head = quarry::testing::RunProcess(
        {"/bin/bash", "-c",
         "\"$0\" sql --no-cache --format \"$2\" \"$1\" 'SELECT * FROM long' --max-rows 5000 | "
         "head -c 10 >/dev/null; echo \"status ${PIPESTATUS[0]}\"",
         quarry::testing::QuarryBinary().string(), data.string(), format},
        cwd.path(), {});
    EXPECT_EQ(into_head.out, "status 0\n") << format << ": " << into_head.err;
    EXPECT_EQ(into_head.err.find("could not be written"), std::string::npos)
        << format << ": " << into_head.err;
  }
  // A full disk is still an error.
  const quarry::testing::ProcessResult full = quarry::testing::RunProcess(
      {"/bin/bash", "-c",
       "\"$0\" sql --no-cache --format json \"$1\" 'SELECT * FROM long' >/dev/full",
       quarry::testing::QuarryBinary().string(), data.string()},
      cwd.path(), {});
  EXPECT_EQ(full.exit_code, 3) << full.err;
  EXPECT_NE(full.err.find("the output could not be written"), std::string::npos) << full.err;

  // 5000 rows into a pager that reads ten bytes and quits.
  const auto [quit, quit_code] =
      RunOnTerminal(sql("SELECT * FROM long ORDER BY n", {"--max-rows", "5000"}), cwd.path(),
                    {"QUARRY_PAGER=head -c 10 >/dev/null"});
  EXPECT_EQ(quit_code, 0) << quit;
}

// --color beats NO_COLOR and the terminal test; auto keeps them.
TEST(PagerCliTest, ColorFlagDecidesOverNoColorAndTheTerminal) {
  const std::string plain = "quarry: model: resent";
  setenv("NO_COLOR", "1", 1);
  cli::SetColorMode(cli::ColorMode::kAlways);
  EXPECT_EQ(cli::Paint(plain, "33"), "\033[33m" + plain + "\033[0m");
  cli::SetColorMode(cli::ColorMode::kNever);
  EXPECT_EQ(cli::Paint(plain, "33"), plain);
  cli::SetColorMode(cli::ColorMode::kAuto);
  EXPECT_EQ(cli::Paint(plain, "33"), plain) << "NO_COLOR is set";
  unsetenv("NO_COLOR");
  EXPECT_EQ(cli::Paint(plain, "33"), plain) << "stderr is no terminal here";
}

}  // namespace
}  // namespace quarry
