// `quarry chat`, end to end: the real binary under a pseudo-terminal (forkpty), typed at as a
// user would (questions, a follow-up, /sql, Ctrl-C at the prompt and during a runaway query,
// Ctrl-D), and with questions piped into stdin; the stand-in provider scripts the model and
// records what it was sent.
#include <fcntl.h>
#include <fstream>

#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli/chat_support.h"
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
using namespace std::chrono_literals;
using namespace quarry::chat_test;

TEST(ChatPtyTest, QuestionsFollowUpSqlCtrlCAndCtrlDAtATerminal) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs", state = cwd.path() / "state";
  PtyQuarry chat({"chat", "--no-python", "--timeout-ms", "60000", "--runs-dir", runs.string(),
                  "--thread", "pty", "--data", Sales().string()},
                 cwd.path(), ChildEnv(server, state));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.WaitFor("thread: pty (new)")) << chat.output();
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.output();

  // A question, answered with its SQL, steps shown live.
  EnqueueTurn(server, kMost, kMostAnswer);
  chat.Type("Which region sells most?\r");
  ASSERT_TRUE(chat.WaitFor("run_sql")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("North sells most: 141794.14.")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.rest();

  chat.Type("/sql\r");
  ASSERT_TRUE(chat.WaitFor("ORDER BY total DESC LIMIT 1;")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> "));

  // A follow-up: the provider is sent the earlier turn.
  EnqueueTurn(server, kLeast, kLeastAnswer);
  chat.Type("And which sells least?\r");
  ASSERT_TRUE(chat.WaitFor("Central sells least: 58576.15.")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> "));
  ASSERT_EQ(server.requests().size(), 4u);
  const json follow_up = server.requests()[2].Json()["messages"];
  ASSERT_EQ(follow_up.size(), 4u) << follow_up.dump(1);
  EXPECT_NE(
      follow_up[1]["content"].get<std::string>().find("Earlier question: Which region sells most?"),
      std::string::npos);
  EXPECT_NE(follow_up[2]["content"].get<std::string>().find("Answer: North sells most: 141794.14."),
            std::string::npos);
  EXPECT_EQ(follow_up[3]["content"], "And which sells least?");

  // Ctrl-C at the prompt drops the line typed so far.
  chat.Type("half a question");
  ASSERT_TRUE(chat.WaitFor("half a question"));
  chat.Type("\x03");
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.rest();
  chat.Type("/help\r");
  ASSERT_TRUE(chat.WaitFor("/quit   leave (so does Ctrl-D)")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> "));
  EXPECT_EQ(server.requests().size(), 4u) << "the dropped line was never asked";

  // Ctrl-C during a runaway query stops that question; the chat goes on.
  server.Enqueue({200, {}, ToolCallReply({{"call_loop", "run_sql", kRunaway}})});
  chat.Type("How many rows does the recursion reach?\r");
  ASSERT_TRUE(WaitForRequests(server, 5, 20s));
  std::this_thread::sleep_for(700ms);  // the query is running
  const auto sent = Clock::now();
  chat.Type("\x03");
  ASSERT_TRUE(chat.WaitFor("no answer: interrupted", 10s)) << chat.rest();
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent).count(),
            2500);
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.rest();
  EXPECT_EQ(server.requests().size(), 5u) << "no model call after the stop";

  EnqueueTurn(server, kCount, kCountAnswer);
  chat.Type("How many sales rows are there?\r");
  ASSERT_TRUE(chat.WaitFor("There are 2065 sales rows.")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> "));

  // Ctrl-D on an empty line leaves with 0.
  chat.Type("\x04");
  EXPECT_EQ(chat.Wait(10s), 0) << chat.output().substr(
      chat.output().size() > 600 ? chat.output().size() - 600 : 0);

  const json thread = ShowThread(server, cwd.path(), runs, "pty");
  ASSERT_EQ(thread["turns"].size(), 4u) << thread.dump(1);
  EXPECT_EQ(thread["turns"][0]["status"], "answered");
  EXPECT_EQ(thread["turns"][1]["status"], "answered");
  EXPECT_EQ(thread["turns"][2]["status"], "interrupted");
  EXPECT_EQ(thread["turns"][3]["status"], "answered");
  EXPECT_EQ(thread["turns"][3]["answer"], "There are 2065 sales rows.");
  // The line history, private to the user.
  const fs::path history = state / "quarry" / "chat_history";
  // libedit's format: a header line, then each line with blanks escaped by vis(3).
  const std::string lines = quarry::testing::ReadFile(history);
  EXPECT_TRUE(lines.starts_with("_HiStOrY_V2_\n")) << lines;
  EXPECT_NE(lines.find("Which\\040region\\040sells\\040most?\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("/sql\n"), std::string::npos) << lines;
  EXPECT_EQ(lines.find("half"), std::string::npos) << "a dropped line is not kept";
  struct stat st {};
  ASSERT_EQ(stat(history.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(ChatPtyTest, TheModelsQuestionIsAnsweredAtTheReplyPromptAndTheRunGoesOn) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  PtyQuarry chat({"chat", "--no-python", "--runs-dir", runs.string(), "--thread", "asks", "--data",
                  Sales().string()},
                 cwd.path(), ChildEnv(server, cwd.path() / "state"));
  ASSERT_TRUE(chat.started());
  ASSERT_TRUE(chat.WaitFor("quarry> ")) << chat.output();
  server.Enqueue({200,
                  {},
                  ToolCallReply({{"call_ask", "ask_user",
                                  R"({"question": "Top region by revenue or by orders?",
                                               "choices": ["by revenue", "by orders"]})"}})});
  chat.Type("Which is the top region?\r");
  ASSERT_TRUE(WaitForRequests(server, 1, 20s));
  bool offered = false;
  const json first = server.requests()[0].Json();
  for (const json& tool : first["tools"]) {
    offered = offered || tool["function"]["name"] == "ask_user";
  }
  ASSERT_TRUE(offered) << "the agent loop offers ask_user";
  ASSERT_TRUE(chat.WaitFor("quarry needs a clarification: Top region by revenue or by orders?"))
      << chat.rest();
  ASSERT_TRUE(chat.WaitFor("  2. by orders")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("reply> ")) << chat.rest();
  EnqueueTurn(
      server,
      R"({"sql": "SELECT region, count(*) AS orders FROM sales GROUP BY region ORDER BY orders DESC LIMIT 1"})",
      R"({"answer": "North has the most orders: 565.", "supporting_values": ["North", "565"]})");
  chat.Type("2\r");
  ASSERT_TRUE(chat.WaitFor("North has the most orders: 565.")) << chat.rest();
  ASSERT_TRUE(chat.WaitFor("quarry> "));
  // The same run went on: the reply came back as the ask_user call's result.
  ASSERT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(server.requests()[1].Json()["messages"].back()["content"],
            "the user replied: by orders");
  chat.Type("\x04");
  EXPECT_EQ(chat.Wait(10s), 0);
  const json thread = ShowThread(server, cwd.path(), runs, "asks");
  ASSERT_EQ(thread["turns"].size(), 1u);
  EXPECT_EQ(thread["turns"][0]["status"], "answered");
  ASSERT_EQ(thread["turns"][0]["clarifications"].size(), 1u);
  EXPECT_EQ(thread["turns"][0]["clarifications"][0]["reply"], "by orders");
}

// quarry chat with stdin from a file; stdout and stderr to files.
quarry::testing::ProcessResult ChatFromFile(const ProviderServer& server, const fs::path& cwd,
                                            std::vector<std::string> args,
                                            const std::string& input) {
  const fs::path in = cwd / "stdin.txt", out = cwd / "stdout.txt", err = cwd / "stderr.txt";
  {
    FILE* f = fopen(in.c_str(), "w");
    fwrite(input.data(), 1, input.size(), f);
    fclose(f);
  }
  args.insert(args.begin(), {quarry::testing::QuarryBinary().string(), "chat"});
  std::vector<std::string> env = ChildEnv(server, cwd / "state");
  std::vector<char*> argv = CStrings(args), envp = CStrings(env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = -1;
  quarry::testing::ProcessResult r;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  r.out = quarry::testing::ReadFile(out);
  r.err = quarry::testing::ReadFile(err);
  return r;
}

TEST(ChatPipeTest, QuestionsPipedInContinueAThreadThatAskStarted) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  EnqueueTurn(server, kMost, kMostAnswer);
  auto ask = quarry::testing::RunProcess(
      {quarry::testing::QuarryBinary().string(), "ask", "--no-python", "--runs-dir", runs.string(),
       "--thread", "piped", "--data", Sales().string(), "Which region sells most?"},
      cwd.path(),
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
       "QUARRY_API_KEY=sk-chat-test-0123456789"},
      {"OPENROUTER_API_KEY", "QUARRY_PRICES"});
  ASSERT_EQ(ask.exit_code, 0) << ask.err;

  EnqueueTurn(server, kLeast, kLeastAnswer);
  EnqueueTurn(server, kCount, kCountAnswer);
  auto r = ChatFromFile(
      server, cwd.path(),
      {"--no-python", "--runs-dir", runs.string(), "--thread", "piped", "--data", Sales().string()},
      "And which sells least?\n/sql\nHow many sales rows are there?\n/bogus\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("thread: piped (1 earlier turn)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("quarry> "), std::string::npos) << "no prompt without a terminal";
  const size_t q1 = r.out.find("> And which sells least?\n");
  const size_t a1 = r.out.find("Central sells least: 58576.15.");
  const size_t sql = r.out.find(
      "> /sql\nSELECT region, round(sum(revenue), 2) AS total FROM sales "
      "GROUP BY region ORDER BY total ASC LIMIT 1;\n");
  const size_t q2 = r.out.find("> How many sales rows are there?\n");
  const size_t a2 = r.out.find("There are 2065 sales rows.");
  ASSERT_NE(q1, std::string::npos) << r.out;
  ASSERT_NE(a1, std::string::npos) << r.out;
  ASSERT_NE(sql, std::string::npos) << r.out;
  ASSERT_NE(q2, std::string::npos) << r.out;
  ASSERT_NE(a2, std::string::npos) << r.out;
  EXPECT_TRUE(q1 < a1 && a1 < sql && sql < q2 && q2 < a2) << r.out;
  EXPECT_NE(r.out.find("unknown command /bogus: /help lists them"), std::string::npos);
  // Steps went to stderr as they happened.
  EXPECT_NE(r.err.find("run_sql"), std::string::npos) << r.err;
  // The stand-in model has no price: said once in the session, not after each of its 2 turns.
  size_t priceless = 0;
  for (size_t at = r.err.find("no cost for model"); at != std::string::npos;
       at = r.err.find("no cost for model", at + 1)) {
    ++priceless;
  }
  EXPECT_EQ(priceless, 1u) << r.err;

  // The chat's first question saw ask's turn; its second saw both.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_EQ(requests[2].Json()["messages"].size(), 4u);
  const json third = requests[4].Json()["messages"];
  ASSERT_EQ(third.size(), 6u) << third.dump(1);
  EXPECT_NE(
      third[1]["content"].get<std::string>().find("Earlier question: Which region sells most?"),
      std::string::npos);
  EXPECT_EQ(third[3]["content"], "Earlier question: And which sells least?");
  EXPECT_EQ(third[5]["content"], "How many sales rows are there?");
  const json thread = ShowThread(server, cwd.path(), runs, "piped");
  ASSERT_EQ(thread["turns"].size(), 3u);
  EXPECT_EQ(thread["turns"][2]["question"], "How many sales rows are there?");
}

// A model turn that asks the user "Gross or net revenue?" with two choices.
void EnqueueGrossOrNet(ProviderServer& server) {
  server.Enqueue({200,
                  {},
                  ToolCallReply({{"call_ask", "ask_user",
                                  R"({"question": "Gross or net revenue?",
                                                "choices": ["gross", "net"]})"}})});
}

TEST(ChatPipeTest, AtTheReplyPromptCommandsAndSlipsAreNotRepliesAndQuitLeavesTheTurnWaiting) {
  ProviderServer server;
  EnqueueGrossOrNet(server);
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  auto r = ChatFromFile(
      server, cwd.path(),
      {"--no-python", "--runs-dir", runs.string(), "--thread", "slips", "--data", Sales().string()},
      "Which region sells most?\n/sql\n9\n/quit\nWhich region sells least?\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("a reply is not a command: type the reply (a number picks a choice), or "
                       "/quit to leave with the turn waiting"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("9 is not one of the choices (1 to 2): type a number from 1 to 2, or the "
                       "reply in words"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the turn waits on a reply: continue it with quarry chat --thread slips"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("sells least"), std::string::npos) << "the chat left at /quit";
  EXPECT_EQ(server.requests().size(), 1u) << "no command or slip reached the model";
  const json thread = ShowThread(server, cwd.path(), runs, "slips");
  ASSERT_EQ(thread["turns"].size(), 1u);
  EXPECT_EQ(thread["turns"][0]["status"], "clarification_needed");
}

// Input that ends at the reply prompt: the question was shown once, while the run waited, and
// the chat says how the turn goes on; the run's end does not show it a second time.
TEST(ChatPipeTest, InputEndingAtTheReplyPromptShowsTheQuestionOnce) {
  ProviderServer server;
  EnqueueGrossOrNet(server);
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  auto r = ChatFromFile(
      server, cwd.path(),
      {"--no-python", "--runs-dir", runs.string(), "--thread", "ended", "--data", Sales().string()},
      "Which region sells most?\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  size_t shown = 0;
  for (size_t at = r.out.find("Gross or net revenue?"); at != std::string::npos;
       at = r.out.find("Gross or net revenue?", at + 1)) {
    ++shown;
  }
  EXPECT_EQ(shown, 1u) << r.out;
  EXPECT_NE(r.out.find("the turn waits on a reply: continue it with quarry chat --thread ended"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("type your reply (a number picks a choice)\n\n"), std::string::npos)
      << "no prompt to type after the input ended: " << r.out;
  EXPECT_NE(r.out.find("trace: "), std::string::npos) << r.out;
  const json thread = ShowThread(server, cwd.path(), runs, "ended");
  ASSERT_EQ(thread["turns"].size(), 1u);
  EXPECT_EQ(thread["turns"][0]["status"], "clarification_needed");
}

TEST(ChatPipeTest, ABrokenThreadsFileEndsTheChatBeforeAnyQuestion) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  fs::create_directories(runs);
  std::ofstream(runs / "threads.sqlite3") << "not a database, just bytes";
  auto r = ChatFromFile(server, cwd.path(),
                        {"--no-python", "--runs-dir", runs.string(), "--data", Sales().string()},
                        "Which region sells most?\n");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("threads.sqlite3"), std::string::npos) << r.err;
  EXPECT_TRUE(server.requests().empty());
}

TEST(ChatPipeTest, AChatOnAThreadThatWaitsShowsTheQuestionAndTakesTheReply) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  EnqueueTurn(server, kMost, kMostAnswer);
  auto ask = ChatFromFile(
      server, cwd.path(),
      {"--no-python", "--runs-dir", runs.string(), "--thread", "waits", "--data", Sales().string()},
      "Which region sells most?\n");
  ASSERT_EQ(ask.exit_code, 0) << ask.err;
  // As a run that ended on a clarification leaves its turn.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((runs / "threads.sqlite3").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE turns SET status = 'clarification_needed', answer = '', "
                         "clarifications = '[{\"question\": \"Gross or net revenue?\", "
                         "\"choices\": [\"gross\", \"net\"], \"reply\": \"\"}]'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EnqueueTurn(server, kMost, kMostAnswer);
  auto r = ChatFromFile(
      server, cwd.path(),
      {"--no-python", "--runs-dir", runs.string(), "--thread", "waits", "--data", Sales().string()},
      "1\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("thread: waits (1 earlier turn)\nturn 1 (\"Which region sells most?\") "
                       "waits on a reply:\nquarry needs a clarification: Gross or net revenue?\n"
                       "  1. gross\n  2. net\ntype your reply (a number picks a choice)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("North sells most: 141794.14."), std::string::npos) << r.out;
  const json thread = ShowThread(server, cwd.path(), runs, "waits");
  ASSERT_EQ(thread["turns"].size(), 1u);
  EXPECT_EQ(thread["turns"][0]["status"], "answered");
  EXPECT_EQ(thread["turns"][0]["clarifications"][0]["reply"], "gross");
  const json messages = server.requests()[2].Json()["messages"];
  ASSERT_GE(messages.size(), 4u) << messages.dump();
  EXPECT_EQ(messages[messages.size() - 3]["content"], "Which region sells most?");
  EXPECT_EQ(messages.back()["content"], "the user replied: gross");
}

TEST(ChatPipeTest, WithoutThreadAChatNamesANewOneAndSlashNewStartsAnother) {
  ProviderServer server;
  quarry::testing::TempDir cwd;
  const fs::path runs = cwd.path() / "runs";
  EnqueueTurn(server, kMost, kMostAnswer);
  EnqueueTurn(server, kLeast, kLeastAnswer);
  auto r = ChatFromFile(server, cwd.path(),
                        {"--no-python", "--runs-dir", runs.string(), "--data", Sales().string()},
                        "Which region sells most?\n/trace\n/view\n/new\nAnd which sells least?\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // /trace summarises the last run; /view writes its page beside the trace.
  EXPECT_NE(r.out.find("> /trace\n"), std::string::npos);
  EXPECT_NE(r.out.find("question: Which region sells most?"), std::string::npos) << r.out;
  const std::regex page("> /view\n(/[^\n]*/trace\\.html)\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, page)) << r.out;
  EXPECT_TRUE(fs::exists(m[1].str()));
  const std::regex named("thread: (chat-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}) \\(new");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), named);
       it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1]);
  }
  ASSERT_EQ(names.size(), 2u) << r.out;
  EXPECT_NE(names[0], names[1]);
  // After /new the question goes without history.
  ASSERT_EQ(server.requests().size(), 4u);
  EXPECT_EQ(server.requests()[2].Json()["messages"].size(), 2u);
  for (const std::string& name : names) {
    const json thread = ShowThread(server, cwd.path(), runs, name);
    EXPECT_EQ(thread["turns"].size(), 1u) << name;
  }
}

}  // namespace
}  // namespace quarry
