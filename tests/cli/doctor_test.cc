// `quarry doctor` end to end: the real binary against the stand-in provider on 127.0.0.1 (or a
// closed port), its lines, its exit codes, and what it sent.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/provider_server.h"
#include "support/test_support.h"

namespace quarry {
namespace {

using json = nlohmann::ordered_json;
using testing::ClosedPort;
using testing::ProcessResult;
using testing::ProviderServer;
using testing::RunProcess;
using testing::TempDir;
using testing::TextReply;
using testing::ToolCallReply;

// No model settings leak in from the machine running the tests.
const std::vector<std::string> kModelEnv = {
    "QUARRY_BASE_URL",   "QUARRY_MODEL",       "QUARRY_API_KEY",         "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY", "QUARRY_PROVIDER",    "QUARRY_PRICES",          "QUARRY_STREAM",
    "QUARRY_MAX_TOKENS", "QUARRY_TEMPERATURE", "QUARRY_REQUEST_TIMEOUT", "QUARRY_MAX_TOKENS_PARAM"};

const char* kLlamaCppList = R"({"object": "list", "data": [{"id": "qwen2.5-7b-instruct",
  "object": "model", "created": 1733000000, "owned_by": "llamacpp",
  "meta": {"n_vocab": 152064, "n_ctx_train": 32768, "n_params": 7615616512}}]})";
const char* kVllmList = R"({"object": "list", "data": [
  {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "owned_by": "vllm", "max_model_len": 16384},
  {"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "object": "model", "owned_by": "vllm",
   "max_model_len": 16384}]})";

// A server that takes connections (the kernel completes them) but never reads or answers: a
// hung or overloaded endpoint, for the request timeout.
class SilentServer {
 public:
  SilentServer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(fd_, 8) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentServer() {
    if (fd_ >= 0) close(fd_);
  }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A body past the clients' 8 MiB bound on a reply.
std::string Oversized(const std::string& head, const std::string& tail) {
  return head + std::string((8u << 20) + 1024, 'x') + tail;
}

class DoctorTest : public ::testing::Test {
 protected:
  ProcessResult Doctor(std::vector<std::string> args, std::vector<std::string> env) {
    args.insert(args.begin(), {testing::QuarryBinary().string(), "doctor"});
    return RunProcess(args, cwd_.path(), env, kModelEnv);
  }
  // The stdout line of check `name` ("" when absent).
  static std::string Line(const std::string& out, const std::string& name) {
    size_t from = 0;
    while (from < out.size()) {
      const size_t end = out.find('\n', from);
      const std::string line = out.substr(from, end - from);
      if (line.size() > 6 && line.compare(6, name.size() + 1, name + " ") == 0) return line;
      if (end == std::string::npos) break;
      from = end + 1;
    }
    return "";
  }
  static size_t Posts(const ProviderServer& server) {
    size_t n = 0;
    for (const auto& r : server.requests()) n += r.method == "POST" ? 1 : 0;
    return n;
  }

  TempDir cwd_;  // no .env here
};

TEST_F(DoctorTest, ReachableWithToolSupportUsesTheOnlyListedModel) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({200, {}, ToolCallReply({{"call_1", "quarry_ping", R"({"ok": true})"}}, 180, 12)});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "provider"),
            "ok    provider   openai-compatible (chosen from the base URL's host)");
  EXPECT_EQ(Line(r.out, "endpoint"),
            "ok    endpoint   " + server.base_url() + " (QUARRY_BASE_URL)");
  EXPECT_EQ(Line(r.out, "key"), "ok    key        none (a loopback endpoint needs none)");
  EXPECT_EQ(Line(r.out, "reachable")
                .rfind("ok    reachable  GET " + server.base_url() + "/models: HTTP 200 in ", 0),
            0u)
      << r.out;
  EXPECT_EQ(Line(r.out, "models"), "ok    models     1 listed: qwen2.5-7b-instruct");
  EXPECT_EQ(Line(r.out, "model"),
            "ok    model      qwen2.5-7b-instruct (the only model the server lists)");
  EXPECT_NE(Line(r.out, "context").find("ok    context    32768 tokens (meta.n_ctx_train"),
            std::string::npos)
      << r.out;
  // The cost is said before the probe goes out: unknown for a local model.
  const std::string probe = Line(r.out, "probe");
  EXPECT_EQ(probe.rfind("..    probe      one request with one tool", 0), 0u) << r.out;
  EXPECT_NE(probe.find("at most an unknown cost (no price for qwen2.5-7b-instruct"),
            std::string::npos)
      << probe;
  EXPECT_LT(r.out.find("..    probe"), r.out.find("ok    tools"));
  EXPECT_EQ(Line(r.out, "tools"),
            "ok    tools      the model called quarry_ping (180 + 12 tokens, cost unknown)");
  EXPECT_NE(r.out.find("quarry doctor: ready"), std::string::npos);

  // What the probe sent: the listed model, one tool, the output limit, and no key.
  ASSERT_EQ(Posts(server), 1u);
  const auto post = server.requests().back();
  EXPECT_EQ(post.path, "/v1/chat/completions");
  const json body = post.Json();
  EXPECT_EQ(body["model"], "qwen2.5-7b-instruct");
  ASSERT_EQ(body["tools"].size(), 1u);
  EXPECT_EQ(body["tools"][0]["function"]["name"], "quarry_ping");
  EXPECT_EQ(body["max_tokens"], 256);
  EXPECT_EQ(post.Header("Authorization"), "");
}

TEST_F(DoctorTest, UnreachableSaysToStartTheServer) {
  ClosedPort closed;
  const ProcessResult r =
      Doctor({}, {"QUARRY_BASE_URL=" + closed.base_url(), "QUARRY_MODEL=qwen2.5:7b"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "reachable");
  EXPECT_EQ(
      line.rfind("fail  reachable  cannot connect: GET " + closed.base_url() + "/models: ", 0), 0u)
      << r.out;
  EXPECT_NE(line.find("Fix: start the server"), std::string::npos) << line;
  EXPECT_NE(line.find("QUARRY_BASE_URL"), std::string::npos) << line;
  EXPECT_EQ(Line(r.out, "tools"), "") << "nothing is probed past a failed connection";
  EXPECT_NE(r.out.find("quarry doctor: 1 problem (exit 4)"), std::string::npos) << r.out;
}

// A base URL can carry a user name and password: doctor and the run it checks never show them.
TEST_F(DoctorTest, CredentialsInTheBaseUrlAreNeverShown) {
  ClosedPort closed;
  const std::string url =
      "http://alice:FAKEPASSWD5555@127.0.0.1:" + std::to_string(closed.port()) + "/v1";
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + url, "QUARRY_MODEL=m"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(Line(r.out, "endpoint").find("http://***@127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_NE(Line(r.out, "reachable").find("GET http://***@127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_EQ((r.out + r.err).find("FAKEPASSWD5555"), std::string::npos) << r.out << r.err;
  const ProcessResult as_json =
      Doctor({"--format", "json"}, {"QUARRY_BASE_URL=" + url, "QUARRY_MODEL=m"});
  EXPECT_EQ((as_json.out + as_json.err).find("FAKEPASSWD5555"), std::string::npos) << as_json.out;
}

TEST_F(DoctorTest, ModelMissingFromTheListIsAFailure) {
  ProviderServer server;
  server.ServeModels(kVllmList);
  const ProcessResult r =
      Doctor({"--model", "Qwen/Qwen2.5-14B-Instruct"}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "model"),
            "fail  model      Qwen/Qwen2.5-14B-Instruct (--model) is not in the server's list. "
            "Fix: pick a listed model with --model or QUARRY_MODEL");
  EXPECT_EQ(Line(r.out, "models"),
            "ok    models     2 listed: Qwen/Qwen2.5-7B-Instruct, Qwen/Qwen2.5-Coder-7B-Instruct");
  EXPECT_EQ(Posts(server), 0u) << "no probe for a model the server does not serve";
}

TEST_F(DoctorTest, TextInsteadOfAToolCallMeansNoToolSupport) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({200, {}, TextReply("I will call quarry_ping now: {\"ok\": true}", 150, 14)});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "tools");
  EXPECT_EQ(line.rfind("fail  tools      no tool call came back: the model answered with text "
                       "(\"I will call quarry_ping now",
                       0),
            0u)
      << r.out;
  EXPECT_NE(line.find("start llama-server with --jinja"), std::string::npos) << line;
  EXPECT_NE(line.find("--enable-auto-tool-choice --tool-call-parser hermes"), std::string::npos);
}

TEST_F(DoctorTest, ServerErrorNamingJinjaSaysToAddIt) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({500, {}, testing::ErrorBody("tools param requires --jinja flag", 500)});
  server.Enqueue({500, {}, testing::ErrorBody("tools param requires --jinja flag", 500)});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "tools");
  EXPECT_NE(line.find("the probe request failed"), std::string::npos) << r.out;
  EXPECT_NE(line.find("Fix: start llama-server with --jinja"), std::string::npos) << line;
}

TEST_F(DoctorTest, SeveralListedModelsAndNoneChosen) {
  ProviderServer server;
  server.ServeModels(kVllmList);
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "model"),
            "fail  model      none configured, and the server lists 2 (Qwen/Qwen2.5-7B-Instruct, "
            "Qwen/Qwen2.5-Coder-7B-Instruct). Fix: pick one with --model or QUARRY_MODEL");
  EXPECT_EQ(Posts(server), 0u);
}

TEST_F(DoctorTest, NoProbeAndJsonWithAPricedModel) {
  ProviderServer server;
  server.ServeModels(R"({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model",
      "owned_by": "system"}]})");
  const ProcessResult r =
      Doctor({"--no-probe", "--format", "json"},
             {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=gpt-4o-mini",
              "QUARRY_API_KEY=sk-local-test-key-0123456789"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["exit_code"], 0);
  EXPECT_EQ(doc["config"]["model"], "gpt-4o-mini");
  EXPECT_EQ(doc["config"]["api_key"], "sk-l...6789") << "the key is masked";
  EXPECT_EQ(doc["config"]["origins"]["api_key"], "QUARRY_API_KEY");
  EXPECT_EQ(doc["config"]["origins"]["model"], "QUARRY_MODEL");
  EXPECT_TRUE(doc["probe_max_cost_usd"].is_null());
  ASSERT_TRUE(doc["checks"].is_array());
  EXPECT_EQ(doc["checks"].back()["check"], "tools");
  EXPECT_EQ(doc["checks"].back()["status"], "skip");
  EXPECT_EQ(r.out.find("sk-local-test-key-0123456789"), std::string::npos);
  EXPECT_EQ(Posts(server), 0u) << "--no-probe sends no model request";
  EXPECT_EQ(server.requests().front().Header("Authorization"),
            "Bearer sk-local-test-key-0123456789");
}

TEST_F(DoctorTest, ProbeCostIsShownFromThePriceTable) {
  ProviderServer server;
  server.ServeModels(R"({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})");
  server.Enqueue({200, {}, ToolCallReply({{"call_1", "quarry_ping", R"({"ok": true})"}}, 90, 8)});
  const ProcessResult r = Doctor(
      {"--format", "json"}, {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=gpt-4o-mini"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = json::parse(r.out);
  // 256 output tokens at 0.60 USD per million, plus about 150 prompt tokens at 0.15.
  const double cost = doc["probe_max_cost_usd"].get<double>();
  EXPECT_GT(cost, 256 * 0.60 / 1e6);
  EXPECT_LT(cost, (256 * 0.60 + 400 * 0.15) / 1e6);
  EXPECT_NE(r.err.find("probe: at most $0.0001"), std::string::npos)
      << "said on stderr before the request: " << r.err;
  EXPECT_EQ(doc["checks"].back()["status"], "ok");
}

TEST_F(DoctorTest, AnthropicListWithItsHeadersAndAliases) {
  ProviderServer server;
  server.ServeModels(R"({"data": [{"type": "model", "id": "claude-haiku-4-5-20251001",
      "display_name": "Claude Haiku 4.5", "created_at": "2025-10-15T00:00:00Z"}],
      "has_more": false})");
  const ProcessResult r = Doctor(
      {"--provider", "anthropic", "--no-probe"},
      {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=claude-haiku-4-5",
       "QUARRY_API_KEY=sk-ant-proxy-key-000000", "ANTHROPIC_API_KEY=sk-ant-real-key-111111"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "provider"), "ok    provider   anthropic (--provider)");
  EXPECT_EQ(Line(r.out, "model"),
            "ok    model      claude-haiku-4-5 (QUARRY_MODEL), listed as "
            "claude-haiku-4-5-20251001");
  const auto get = server.requests().front();
  EXPECT_EQ(get.Header("x-api-key"), "sk-ant-proxy-key-000000")
      << "ANTHROPIC_API_KEY goes to api.anthropic.com only";
  EXPECT_EQ(get.Header("anthropic-version"), "2023-06-01");
}

TEST_F(DoctorTest, RefusedKeySaysWhichVariableToCheck) {
  ProviderServer server;
  server.ServeModels(testing::ErrorBody("Invalid API key", 401), 401);
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=m",
                                      "QUARRY_API_KEY=sk-wrong-key-0000000000"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "models"),
            "fail  models     the key was refused (HTTP 401: Invalid API key). Fix: check "
            "QUARRY_API_KEY: it must be a key for " +
                server.base_url());
  EXPECT_EQ(Line(r.out, "key"), "ok    key        sk-w...0000 (QUARRY_API_KEY)");
  EXPECT_EQ(r.out.find("sk-wrong-key-0000000000"), std::string::npos);
}

TEST_F(DoctorTest, NothingConfiguredIsAUsageError) {
  const ProcessResult r = Doctor({}, {});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "settings").rfind("fail  settings   no model endpoint configured", 0), 0u)
      << r.out;
  EXPECT_NE(Line(r.out, "settings").find(".env.example"), std::string::npos);
}

// A probe reply that is no well-formed call to the offered tool fails the tools check.
TEST_F(DoctorTest, ToolCallWithoutAFunctionNameFails) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({200,
                  {},
                  R"({"choices":[{"message":{"tool_calls":[{"function":{"name":7,)"
                  R"("arguments":null}}]}}]})"});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "tools"),
            "fail  tools      a malformed tool call came back: it names no function (\"name\" is "
            "missing or not a string; 0 + 0 tokens, cost unknown). Fix: the server's tool-call "
            "parsing does not fit this model: on vLLM pick the --tool-call-parser its docs name "
            "for the model; on llama-server use --jinja with the model's own chat template; else "
            "pick a model that calls tools (e.g. qwen2.5:7b)")
      << r.out;
  EXPECT_EQ(r.out.find("quarry doctor: ready"), std::string::npos);
  EXPECT_NE(r.out.find("quarry doctor: 1 problem (exit 4)"), std::string::npos) << r.out;
}

TEST_F(DoctorTest, CallToAToolNotOfferedFails) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({200, {}, ToolCallReply({{"call_1", "drop_tables", R"({"ok": true})"}}, 50, 9)});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "tools"),
            "fail  tools      the model called drop_tables, a tool it was not offered (only "
            "quarry_ping was; 50 + 9 tokens, cost unknown). Fix: the model does not keep to the "
            "tools it is given: pick a model that calls tools (e.g. qwen2.5:7b), and check that "
            "the server passes the request's tools to it (llama-server --jinja)")
      << r.out;
  EXPECT_EQ(r.out.find("quarry doctor: ready"), std::string::npos);
}

TEST_F(DoctorTest, ArgumentsThatAreNotAJsonObjectFail) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({200, {}, ToolCallReply({{"call_1", "quarry_ping", "{not json"}}, 50, 9)});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "tools");
  EXPECT_EQ(line.rfind("fail  tools      the model called quarry_ping with arguments that are "
                       "not a JSON object (\"{not json\": not valid JSON; 50 + 9 tokens",
                       0),
            0u)
      << r.out;
  EXPECT_NE(line.find("Fix: the server's tool-call parsing does not fit this model"),
            std::string::npos)
      << line;
  EXPECT_EQ(r.out.find("quarry doctor: ready"), std::string::npos);

  // A JSON value that is not an object is no arguments object either.
  ProviderServer array_server;
  array_server.ServeModels(kLlamaCppList);
  array_server.Enqueue({200, {}, ToolCallReply({{"call_1", "quarry_ping", "[true]"}}, 50, 9)});
  const ProcessResult a = Doctor({}, {"QUARRY_BASE_URL=" + array_server.base_url()});
  EXPECT_EQ(a.exit_code, 4) << a.out << a.err;
  EXPECT_NE(Line(a.out, "tools").find("(\"[true]\": not a JSON object;"), std::string::npos)
      << a.out;
}

// A model list over 8 MiB: the server was reached; with a model configured doctor goes on.
TEST_F(DoctorTest, OversizedModelListIsNoConnectionFailure) {
  ProviderServer server;
  server.ServeModels(Oversized(R"({"object": "list", "data": [{"id": "m", "pad": ")", R"("}]})"));
  server.Enqueue({200, {}, ToolCallReply({{"call_1", "quarry_ping", R"({"ok": true})"}}, 60, 7)});
  const ProcessResult r = Doctor({"--model", "m"}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(
      Line(r.out, "reachable")
          .rfind("ok    reachable  GET " + server.base_url() + "/models: a reply came in ", 0),
      0u)
      << r.out;
  EXPECT_EQ(Line(r.out, "models"),
            "warn  models     no model list: the reply to GET " + server.base_url() +
                "/models is over 8 MiB and was not read. Fix: a model list is a few KiB: check "
                "that QUARRY_BASE_URL points at an OpenAI-compatible API root ending in /v1 "
                "(llama-server, vLLM and Ollama serve one at http://HOST:PORT/v1), not a web "
                "page or a file server");
  EXPECT_EQ(Line(r.out, "model"), "warn  model      m (--model), not checked: no list");
  EXPECT_EQ(r.out.find("cannot connect"), std::string::npos) << r.out;
  EXPECT_EQ(Line(r.out, "tools"),
            "ok    tools      the model called quarry_ping (60 + 7 tokens, "
            "cost unknown)");

  // Without a model there is nothing to go on with: a models failure, not a connection one.
  const ProcessResult n = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(n.exit_code, 4) << n.out << n.err;
  EXPECT_EQ(Line(n.out, "reachable").rfind("ok    reachable", 0), 0u) << n.out;
  const std::string models = Line(n.out, "models");
  EXPECT_EQ(models.rfind("fail  models     no model list: the reply to GET " + server.base_url() +
                             "/models is over 8 MiB and was not read. Fix: set QUARRY_MODEL or "
                             "pass --model; a model list is a few KiB",
                         0),
            0u)
      << n.out;
  EXPECT_EQ(Posts(server), 1u) << "only the run with --model probes";
}

TEST_F(DoctorTest, TimedOutModelListSaysSoAndNamesTheTimeout) {
  SilentServer silent;
  const ProcessResult r = Doctor({"--request-timeout", "1"},
                                 {"QUARRY_BASE_URL=" + silent.base_url(), "QUARRY_MODEL=m"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "reachable");
  EXPECT_EQ(line.rfind("fail  reachable  timed out: GET " + silent.base_url() +
                           "/models: no reply within 1 s (",
                       0),
            0u)
      << r.out;
  EXPECT_NE(line.find("Fix: if the server is busy or still loading a model, wait or raise "
                      "--request-timeout (QUARRY_REQUEST_TIMEOUT; the model list waits 30 s at "
                      "most); else check that QUARRY_BASE_URL is the endpoint you meant"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("cannot connect"), std::string::npos) << line;
  EXPECT_EQ(Line(r.out, "tools"), "");
}

TEST_F(DoctorTest, HtmlProbeReplyIsNoChatCompletion) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  testing::ScriptedResponse html;
  html.body = "<!doctype html><html><body><h1>Open WebUI</h1></body></html>";
  html.content_type = "text/html";
  server.Enqueue(html);
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "tools");
  EXPECT_EQ(line.rfind("fail  tools      the probe request failed: ", 0), 0u) << r.out;
  EXPECT_NE(line.find("reply refused, not valid JSON: <!doctype html>"), std::string::npos) << line;
  EXPECT_NE(line.find("Fix: the reply is not a chat completion: check that QUARRY_BASE_URL "
                      "points at an OpenAI-compatible API root ending in /v1 (llama-server, vLLM "
                      "and Ollama serve one at http://HOST:PORT/v1), not a web UI or another API"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("--jinja"), std::string::npos) << line;
  EXPECT_EQ(Posts(server), 1u) << "not resent";
}

TEST_F(DoctorTest, OversizedProbeReplyIsNoChatCompletion) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({200, {}, Oversized("<html><body>", "</body></html>")});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "tools");
  EXPECT_NE(line.find("the reply is larger than 8 MiB and was not read"), std::string::npos)
      << r.out;
  EXPECT_NE(line.find("Fix: a chat completion is a few KiB, so this is not one: check that "
                      "QUARRY_BASE_URL points at an OpenAI-compatible API root ending in /v1"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("--jinja"), std::string::npos) << line;
}

TEST_F(DoctorTest, EmptyChoicesSaysTheServerGaveNoMessage) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  server.Enqueue({200, {}, R"({"choices":[]})"});
  const ProcessResult r = Doctor({}, {"QUARRY_BASE_URL=" + server.base_url()});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const std::string line = Line(r.out, "tools");
  EXPECT_NE(line.find("the probe request failed: "), std::string::npos) << r.out;
  EXPECT_NE(line.find("reply has no choices (an empty \"choices\" list): {\"choices\":[]}"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("Fix: the server answered but gave no message: try again, and look in the "
                      "server's log for why (a model that crashed or ran out of memory, a "
                      "filter, a proxy in between)"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("--jinja"), std::string::npos) << line;
}

// A profile of the config file (XDG_CONFIG_HOME here) chooses the endpoint and the model;
// doctor says which profile, why, and that each setting came from it; --profile picks
// another, and the environment still beats the file.
TEST_F(DoctorTest, AConfigProfileIsUsedAndNamed) {
  ProviderServer server;
  server.ServeModels(kVllmList);
  TempDir config;
  const auto file = config.Write(
      "quarry/config.toml",
      "default_profile = \"local\"\n\n[profiles.local]\nbase_url = \"" + server.base_url() +
          "\"\nmodel = \"Qwen/Qwen2.5-7B-Instruct\"\n\n"
          "[profiles.coder]\nbase_url = \"" +
          server.base_url() + "\"\nmodel = \"Qwen/Qwen2.5-Coder-7B-Instruct\"\n");
  const std::string xdg = "XDG_CONFIG_HOME=" + config.path().string();
  const ProcessResult r = Doctor({"--no-probe"}, {xdg});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "profile"),
            "ok    profile    \"local\" of " + file.string() +
                " (default_profile); the command line, the environment and ./.env come before "
                "it");
  EXPECT_EQ(Line(r.out, "endpoint"), "ok    endpoint   " + server.base_url() +
                                         " (base_url in profile \"local\" of " + file.string() +
                                         ")");
  EXPECT_EQ(Line(r.out, "model"),
            "ok    model      Qwen/Qwen2.5-7B-Instruct (model in profile \"local\" of " +
                file.string() + "), listed");

  const ProcessResult coder = Doctor({"--no-probe", "--profile", "coder"}, {xdg});
  EXPECT_EQ(coder.exit_code, 0) << coder.out << coder.err;
  EXPECT_NE(Line(coder.out, "model").find("Qwen/Qwen2.5-Coder-7B-Instruct"), std::string::npos)
      << coder.out;
  const ProcessResult env =
      Doctor({"--no-probe"}, {xdg, "QUARRY_MODEL=Qwen/Qwen2.5-Coder-7B-Instruct"});
  EXPECT_EQ(Line(env.out, "model"),
            "ok    model      Qwen/Qwen2.5-Coder-7B-Instruct (QUARRY_MODEL), listed");

  const ProcessResult missing = Doctor({"--no-probe", "--profile", "cloud"}, {xdg});
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_NE(missing.out.find("no profile \"cloud\" (--profile); it has coder, local"),
            std::string::npos)
      << missing.out;
  EXPECT_NE(missing.out.find("Fix: see \"Profiles: the config file\" in docs/models.md"),
            std::string::npos)
      << missing.out;

  // The MCP server says so at its start, not at the first ask_database: its client may never
  // show a tool error to the user who typed the profile's name.
  const ProcessResult mcp =
      RunProcess({testing::QuarryBinary().string(), "mcp", "--profile", "cloud",
                  (testing::SourceDir() / "data/sales.csv").string()},
                 cwd_.path(), {xdg}, kModelEnv);
  EXPECT_EQ(mcp.exit_code, 2) << mcp.out << mcp.err;
  EXPECT_NE(mcp.err.find("no profile \"cloud\" (--profile); it has coder, local"),
            std::string::npos)
      << mcp.err;
  EXPECT_EQ(mcp.out, "");
}

}  // namespace
}  // namespace quarry
