// `quarry doctor` end to end: the real binary against the stand-in provider on 127.0.0.1 (or a
// closed port), its lines, its exit codes, and what it sent.
#include <gtest/gtest.h>

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
    "QUARRY_BASE_URL", "QUARRY_MODEL",       "QUARRY_API_KEY",  "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY", "QUARRY_PROVIDER",  "QUARRY_PRICES",   "QUARRY_STREAM",
    "QUARRY_MAX_TOKENS", "QUARRY_TEMPERATURE", "QUARRY_REQUEST_TIMEOUT",
    "QUARRY_MAX_TOKENS_PARAM"};

const char* kLlamaCppList = R"({"object": "list", "data": [{"id": "qwen2.5-7b-instruct",
  "object": "model", "created": 1733000000, "owned_by": "llamacpp",
  "meta": {"n_vocab": 152064, "n_ctx_train": 32768, "n_params": 7615616512}}]})";
const char* kVllmList = R"({"object": "list", "data": [
  {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "owned_by": "vllm", "max_model_len": 16384},
  {"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "object": "model", "owned_by": "vllm",
   "max_model_len": 16384}]})";

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
  EXPECT_EQ(Line(r.out, "reachable").rfind("ok    reachable  GET " + server.base_url() +
                                               "/models: HTTP 200 in ",
                                           0),
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
  EXPECT_EQ(line.rfind("fail  reachable  cannot connect: GET " + closed.base_url() + "/models: ",
                       0),
            0u)
      << r.out;
  EXPECT_NE(line.find("Fix: start the server"), std::string::npos) << line;
  EXPECT_NE(line.find("QUARRY_BASE_URL"), std::string::npos) << line;
  EXPECT_EQ(Line(r.out, "tools"), "") << "nothing is probed past a failed connection";
  EXPECT_NE(r.out.find("quarry doctor: 1 problem (exit 4)"), std::string::npos) << r.out;
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
  const ProcessResult r = Doctor({"--no-probe", "--format", "json"},
                                 {"QUARRY_BASE_URL=" + server.base_url(),
                                  "QUARRY_MODEL=gpt-4o-mini",
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
  const ProcessResult r = Doctor({"--format", "json"}, {"QUARRY_BASE_URL=" + server.base_url(),
                                                        "QUARRY_MODEL=gpt-4o-mini"});
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
  const ProcessResult r =
      Doctor({"--provider", "anthropic", "--no-probe"},
             {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=claude-haiku-4-5",
              "QUARRY_API_KEY=sk-ant-proxy-key-000000",
              "ANTHROPIC_API_KEY=sk-ant-real-key-111111"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Line(r.out, "provider"), "ok    provider   anthropic (--provider)");
  EXPECT_EQ(Line(r.out, "model"), "ok    model      claude-haiku-4-5 (QUARRY_MODEL), listed as "
                                  "claude-haiku-4-5-20251001");
  const auto get = server.requests().front();
  EXPECT_EQ(get.Header("x-api-key"), "sk-ant-proxy-key-000000")
      << "ANTHROPIC_API_KEY goes to api.anthropic.com only";
  EXPECT_EQ(get.Header("anthropic-version"), "2023-06-01");
}

TEST_F(DoctorTest, RefusedKeySaysWhichVariableToCheck) {
  ProviderServer server;
  server.ServeModels(testing::ErrorBody("Invalid API key", 401), 401);
  const ProcessResult r =
      Doctor({}, {"QUARRY_BASE_URL=" + server.base_url(), "QUARRY_MODEL=m",
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

}  // namespace
}  // namespace quarry
