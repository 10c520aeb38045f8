// Fault injection end to end: the real quarry binary against a stand-in provider on 127.0.0.1
// that misbehaves in one way per test. Each run must end without a crash, with a bounded
// number of requests, a trace.json on disk, and the exit code for what happened (0 answered,
// 4 the provider failed, 5 no grounded answer, budgets included).
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"

extern char** environ;

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::CompletionBody;
using quarry::testing::ErrorBody;
using quarry::testing::ProviderServer;
using quarry::testing::ScriptedCompletion;
using quarry::testing::ScriptedToolCall;
using quarry::testing::ToolCallReply;

constexpr const char* kSql =
    R"({"sql": "SELECT region, round(sum(revenue), 2) AS total FROM sales GROUP BY region ORDER BY total DESC LIMIT 1"})";
constexpr const char* kAnswer =
    R"({"answer": "North sells most: 141794.14.", "supporting_values": ["North", "141794.14"]})";

std::string Call(const std::string& name, const std::string& args) {
  return ToolCallReply({{"call_" + name, name, args}}, 1000, 40);
}

// The two turns of a grounded answer about data/sales.csv.
void EnqueueAnswer(ProviderServer& server) {
  server.Enqueue({200, {}, Call("run_sql", kSql)});
  server.Enqueue({200, {}, Call("final_answer", kAnswer)});
}

struct AskRun {
  int exit_code = -1;
  std::string err;
  json out;    // the --format json document
  json trace;  // runs/<id>/trace.json
  int64_t wall_ms = 0;
};

AskRun Ask(const ProviderServer& server, std::vector<std::string> extra_args = {},
           std::vector<std::string> extra_env = {}, const std::string& model = "stand-in-model") {
  quarry::testing::TempDir cwd;
  std::vector<std::string> argv = {quarry::testing::QuarryBinary().string(),
                                   "ask",
                                   "--format",
                                   "json",
                                   "--no-python",
                                   "--data",
                                   (quarry::testing::SourceDir() / "data" / "sales.csv").string(),
                                   "Which region sells most?"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  extra_env.push_back("QUARRY_BASE_URL=" + server.base_url());
  extra_env.push_back("QUARRY_MODEL=" + model);
  extra_env.push_back("QUARRY_API_KEY=sk-fault-injection-0123456789");
  const auto start = std::chrono::steady_clock::now();
  auto r = quarry::testing::RunProcess(
      argv, cwd.path(), extra_env,
      {"OPENROUTER_API_KEY", "QUARRY_PRICES", "QUARRY_REQUEST_TIMEOUT", "QUARRY_MAX_TOKENS",
       "QUARRY_TEMPERATURE", "QUARRY_MAX_TOKENS_PARAM", "QUARRY_EMBEDDINGS_URL"});
  AskRun run;
  run.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  run.exit_code = r.exit_code;
  run.err = r.err;
  run.out = json::parse(r.out, nullptr, false);
  if (run.out.is_object() && run.out.contains("trace")) {
    const std::filesystem::path path = cwd.path() / run.out["trace"].get<std::string>();
    run.trace = json::parse(quarry::testing::ReadFile(path), nullptr, false);
  }
  return run;
}

std::string Notes(const json& trace) {
  std::string all;
  for (const auto& n : trace.value("notes", json::array())) all += n.get<std::string>() + "\n";
  return all;
}

// The n-th step of a kind ("model", "tool"); an empty object when there is none.
json StepOf(const json& trace, const std::string& kind, size_t n = 0) {
  for (const auto& step : trace.value("steps", json::array())) {
    if (step.value("kind", "") == kind && n-- == 0) return step;
  }
  return json::object();
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// Exit 4, one stop reason, and the trace on disk says why.
void ExpectModelError(const AskRun& run, const std::string& why) {
  EXPECT_EQ(run.exit_code, 4) << run.err;
  ASSERT_TRUE(run.trace.is_object()) << "trace.json must be written: " << run.err;
  EXPECT_EQ(run.trace.value("stop_reason", ""), "model_error");
  EXPECT_TRUE(Contains(Notes(run.trace), why));
}

TEST(ProviderFaultsCliTest, RateLimitWithRetryAfterIsWaitedOutThenAnswered) {
  ProviderServer server;
  server.Enqueue({429, {{"Retry-After", "1"}}, ErrorBody("rate limited", 429)});
  EnqueueAnswer(server);
  const AskRun run = Ask(server);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_GE(run.wall_ms, 1000);
  EXPECT_TRUE(Contains(Notes(run.trace), "retried: HTTP 429: rate limited; waited 1000 ms"));
  EXPECT_TRUE(Contains(run.err,
                       "quarry: model: HTTP 429: rate limited; resending in 1000 ms "
                       "(attempt 2 of 4)"));
  EXPECT_EQ(StepOf(run.trace, "model").value("attempts", 0), 2);
}

TEST(ProviderFaultsCliTest, RateLimitWithoutRetryAfterStopsAfterFourAttempts) {
  ProviderServer server;
  for (int i = 0; i < 6; ++i) server.Enqueue({429, {}, ErrorBody("slow down", 429)});
  const AskRun run = Ask(server);
  ExpectModelError(run, "failed (after 4 attempts): HTTP 429: slow down");
  EXPECT_EQ(server.requests().size(), 4u);
  EXPECT_EQ(server.pending(), 2u);
}

TEST(ProviderFaultsCliTest, ServerErrorIsRetriedThenAnswered) {
  ProviderServer server;
  server.Enqueue({502, {}, ErrorBody("bad gateway", 502)});
  EnqueueAnswer(server);
  const AskRun run = Ask(server);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_TRUE(Contains(Notes(run.trace), "retried: HTTP 502: bad gateway"));
}

TEST(ProviderFaultsCliTest, ConnectionDroppedMidBodyIsRetriedThenAnswered) {
  ProviderServer server;
  const std::string first = Call("run_sql", kSql);
  server.Enqueue({200, {}, first, {}, first.size() / 3});
  EnqueueAnswer(server);
  const AskRun run = Ask(server);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_TRUE(Contains(Notes(run.trace), "retried: network error"));
}

TEST(ProviderFaultsCliTest, TruncatedBodyIsAModelError) {
  ProviderServer server;
  const std::string whole = Call("run_sql", kSql);
  server.Enqueue({200, {}, whole.substr(0, whole.size() / 2)});
  const AskRun run = Ask(server);
  ExpectModelError(run, "reply refused, not valid JSON");
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderFaultsCliTest, InvalidJsonIsAModelError) {
  ProviderServer server;
  server.Enqueue({200, {}, "<html><body>502 Bad Gateway</body></html>"});
  const AskRun run = Ask(server);
  ExpectModelError(run, "reply refused, not valid JSON: <html>");
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderFaultsCliTest, EmptyChoicesIsAModelError) {
  ProviderServer server;
  server.Enqueue({200, {}, R"({"id": "x", "choices": [], "usage": {"prompt_tokens": 5}})"});
  const AskRun run = Ask(server);
  ExpectModelError(run, "reply has no choices");
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderFaultsCliTest, UnknownToolIsToldToTheModelWhichRepairs) {
  ProviderServer server;
  server.Enqueue({200, {}, Call("drop_table", R"({"table": "sales"})")});
  EnqueueAnswer(server);
  const AskRun run = Ask(server);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.requests().size(), 3u);
  const json step = StepOf(run.trace, "tool");
  EXPECT_EQ(step.value("tool", ""), "drop_table");
  EXPECT_EQ(step.value("failure_class", ""), "bad_arguments");
  EXPECT_TRUE(Contains(step.value("observation", ""), "there is no tool named 'drop_table'"));
  EXPECT_EQ(run.trace.value("totals", json::object()).value("repair_successes", 0), 1);
}

TEST(ProviderFaultsCliTest, TenMegabyteReplyIsNotRead) {
  ProviderServer server;
  server.Enqueue({200, {}, quarry::testing::TextReply(std::string(10u << 20, 'y'))});
  const AskRun run = Ask(server);
  ExpectModelError(run, "larger than 8 MiB and was not read");
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderFaultsCliTest, DeeplyNestedArgumentsNeverCrash) {
  // An arguments object 100,000 levels deep: the reply is refused, the trace still written.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string reply =
      R"({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": )"
      R"("assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", )"
      R"("function": {"name": "run_sql", "arguments": {"sql": )" +
      deep + "}}}]}}]}";
  {
    ProviderServer server;
    server.Enqueue({200, {}, reply});
    const AskRun run = Ask(server);
    ExpectModelError(run, "nested more than 256 levels");
    EXPECT_EQ(server.requests().size(), 1u);
  }
  // 200 levels (within the bound): bad_arguments for that call, and the model repairs.
  const std::string nested = std::string(200, '[') + std::string(200, ']');
  ProviderServer server;
  server.Enqueue({200,
                  {},
                  R"({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": )"
                  R"("assistant", "content": null, "tool_calls": [{"id": "c1", "type": )"
                  R"("function", "function": {"name": "run_sql", "arguments": {"sql": )" +
                      nested + "}}}]}}]}"});
  EnqueueAnswer(server);
  const AskRun run = Ask(server);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(StepOf(run.trace, "tool").value("failure_class", ""), "bad_arguments");
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(ProviderFaultsCliTest, ContextLengthIsNotRetried) {
  ProviderServer server;
  server.Enqueue({429, {}, ErrorBody("prompt is too long: 210000 tokens > 200000 maximum", 429)});
  server.Enqueue({429, {}, ErrorBody("prompt is too long: 210000 tokens > 200000 maximum", 429)});
  const AskRun run = Ask(server);
  ExpectModelError(run, "the request is too large for the model (prompt: ~");
  EXPECT_TRUE(Contains(Notes(run.trace), "tokens estimated"));
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProviderFaultsCliTest, TimeoutIsConfigurableAndNotResent) {
  ProviderServer server;
  server.Enqueue({200, {}, Call("run_sql", kSql), std::chrono::milliseconds(6000)});
  const AskRun run = Ask(server, {"--request-timeout", "0.5"});
  ExpectModelError(run, "no reply within the request timeout of 0.5 s");
  EXPECT_TRUE(Contains(Notes(run.trace), "not resent"));
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_LT(run.wall_ms, 5000);
  // stderr is a pipe here: no "waiting" line.
  EXPECT_EQ(run.err.find("waiting for the model"), std::string::npos) << run.err;

  ProviderServer env_server;
  env_server.Enqueue({200, {}, Call("run_sql", kSql), std::chrono::milliseconds(6000)});
  const AskRun from_env = Ask(env_server, {}, {"QUARRY_REQUEST_TIMEOUT=0.4"});
  ExpectModelError(from_env, "no reply within the request timeout of 0.4 s");
}

TEST(ProviderFaultsCliTest, BadRequestSettingIsAUsageError) {
  ProviderServer server;
  const AskRun run = Ask(server, {"--max-tokens", "lots"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Contains(run.err, "--max-tokens \"lots\": expected a whole number of tokens"));
  EXPECT_EQ(server.requests().size(), 0u);
}

TEST(ProviderFaultsCliTest, SamplingSettingsReachTheRequest) {
  ProviderServer server;
  EnqueueAnswer(server);
  const AskRun run = Ask(server, {"--max-tokens", "512", "--temperature", "default",
                                  "--max-tokens-param", "max_completion_tokens"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const json body = server.requests().at(0).Json();
  EXPECT_EQ(body["max_completion_tokens"], 512);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));

  ProviderServer env_server;
  EnqueueAnswer(env_server);
  const AskRun from_env = Ask(env_server, {}, {"QUARRY_TEMPERATURE=0.3", "QUARRY_MAX_TOKENS=99"});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  const json env_body = env_server.requests().at(0).Json();
  EXPECT_EQ(env_body["temperature"], 0.3);
  EXPECT_EQ(env_body["max_tokens"], 99);
}

TEST(ProviderFaultsCliTest, CostBudgetStopsBeforeACallThatCouldCrossIt) {
  // gpt-4o-mini's list price: $0.15 in, $0.60 out per million. With 100,000 output tokens
  // allowed, a call may cost ~$0.06; the first one reports $0.02, so a second would risk
  // $0.02 + ~$0.06 > $0.07 and is not made.
  ProviderServer server;
  ScriptedCompletion first;
  first.tool_calls = {{"call_1", "run_sql", kSql}};
  first.prompt_tokens = 3000;
  first.completion_tokens = 40;
  first.cost_usd = 0.02;
  server.Enqueue({200, {}, CompletionBody(first)});
  server.Enqueue({200, {}, Call("final_answer", kAnswer)});
  const AskRun run =
      Ask(server, {"--max-cost", "0.07", "--max-tokens", "100000"}, {}, "openai/gpt-4o-mini");
  EXPECT_EQ(run.exit_code, 5) << run.err;
  ASSERT_TRUE(run.trace.is_object());
  EXPECT_EQ(run.trace.value("stop_reason", ""), "cost_budget_exhausted");
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_LE(run.trace.value("totals", json::object()).value("cost_usd", 1.0), 0.07);
  EXPECT_TRUE(Contains(Notes(run.trace), "stopped before model turn 2: it could cost up to $0.06"));

  // A budget below even the first call's bound makes no call at all.
  ProviderServer none;
  const AskRun zero =
      Ask(none, {"--max-cost", "0.001", "--max-tokens", "100000"}, {}, "openai/gpt-4o-mini");
  EXPECT_EQ(zero.exit_code, 5) << zero.err;
  EXPECT_EQ(zero.trace.value("stop_reason", ""), "cost_budget_exhausted");
  EXPECT_EQ(none.requests().size(), 0u);
}

TEST(ProviderFaultsCliTest, ReplyCutOffAtTheLimitIsReportedAsThat) {
  ProviderServer server;
  ScriptedCompletion cut;
  cut.tool_calls = {{"call_cut", "run_sql", R"({"sql": "SELECT region, round(sum(rev)"}};
  cut.finish_reason = "length";
  server.Enqueue({200, {}, CompletionBody(cut)});
  EnqueueAnswer(server);
  const AskRun run = Ask(server);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const std::string observation = StepOf(run.trace, "tool").value("observation", "");
  EXPECT_TRUE(Contains(observation, "cut off at the output token limit (finish_reason: length)"));
  EXPECT_EQ(observation.find("not valid JSON"), std::string::npos);
  EXPECT_TRUE(Contains(Notes(run.trace), "model turn 1 was cut off at the output token limit"));
}

// Runs `argv` in `cwd` with stdin, stdout and stderr on a pseudo-terminal; returns everything
// written to it and the exit code.
std::pair<std::string, int> RunOnTerminal(const std::vector<std::string>& argv,
                                          const std::filesystem::path& cwd,
                                          const std::vector<std::string>& extra_env) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  env_strings.push_back("NO_COLOR=1");
  std::vector<char*> envp, args;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string dir = cwd.string();
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return {"forkpty failed", -1};
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  std::string output;
  char buffer[4096];
  for (;;) {
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
  waitpid(pid, &status, 0);
  return {output, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(ProviderFaultsCliTest, WaitingForTheModelIsShownOnATerminal) {
  ProviderServer server;
  server.Enqueue({200, {}, Call("run_sql", kSql), std::chrono::milliseconds(2500)});
  server.Enqueue({200, {}, Call("final_answer", kAnswer)});
  quarry::testing::TempDir cwd;
  const auto [output, exit_code] = RunOnTerminal(
      {quarry::testing::QuarryBinary().string(), "ask", "--no-python", "--data",
       (quarry::testing::SourceDir() / "data" / "sales.csv").string(), "Which region sells most?"},
      cwd.path(),
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=stand-in-model",
       "QUARRY_API_KEY=sk-fault-injection-0123456789"});
  EXPECT_EQ(exit_code, 0) << output;
  EXPECT_TRUE(Contains(output, "\r  waiting for the model: 1 s"));
  EXPECT_TRUE(Contains(output, "\r  waiting for the model: 2 s"));
  EXPECT_EQ(output.find("waiting for the model: 3 s"), std::string::npos);
  // The line is erased before the step is printed.
  EXPECT_TRUE(Contains(output, "2 s\r\033[K"));
  EXPECT_EQ(server.requests().size(), 2u);
}

}  // namespace
}  // namespace quarry
