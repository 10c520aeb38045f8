// The README's provider recipes, one test each: the environment exactly as the recipe sets it
// is resolved, then the request the client sends is checked on the stand-in (path, headers,
// model, key) and a reply in that server's own shape is read. The stand-in takes the place of
// the recipe's host and port; everything else is the recipe's. Keep the environments here in
// step with the README's "Model providers" recipes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "quarry/llm/llm.h"
#include "quarry/llm/models.h"
#include "support/provider_server.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;
using quarry::testing::ProviderServer;
using quarry::testing::RecordedRequest;
using Env = std::map<std::string, std::string>;

Result<ClientConfig> Resolve(const Env& env) {
  return ResolveConfig(Settings{},
                       [env](const char* name) -> std::optional<std::string> {
                         auto it = env.find(name);
                         return it == env.end() ? std::nullopt
                                                : std::optional<std::string>(it->second);
                       },
                       {});
}

// The recipe's endpoint replaced by the stand-in's; nothing else changes.
ClientConfig OnStandIn(ClientConfig config, const ProviderServer& server) {
  config.base_url = server.base_url();
  config.connect_timeout_ms = 5000;
  config.request_timeout_ms = 10000;
  config.sleep = [](std::chrono::milliseconds) {};
  return config;
}

Request AskWithTool() {
  Request request;
  request.messages = {{Role::kSystem, "You are a data analyst.", {}, ""},
                      {Role::kUser, "Which region sells most?", {}, ""}};
  request.tools = {{"run_sql", "Run one read-only SQL query.",
                    json::parse(R"({"type": "object", "properties": {"sql": {"type": "string"}},
                                    "required": ["sql"]})")}};
  return request;
}

// The one chat request the stand-in got, checked for what every OpenAI-compatible recipe sends.
RecordedRequest ChatRequest(const ProviderServer& server, const std::string& model) {
  RecordedRequest chat;
  for (const RecordedRequest& r : server.requests()) {
    if (r.method == "POST") chat = r;
  }
  EXPECT_EQ(chat.path, "/v1/chat/completions");
  const json body = chat.Json();
  EXPECT_EQ(body.value("model", ""), model);
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "run_sql");
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_EQ(body["messages"][1]["content"], "Which region sells most?");
  return chat;
}

const char* kSql = "SELECT region, SUM(revenue) AS total FROM sales GROUP BY region";

void ExpectToolTurn(const Result<Turn>& turn, int64_t prompt_tokens, int64_t output_tokens) {
  ASSERT_TRUE(turn) << turn.error().message;
  ASSERT_EQ(turn->tool_calls.size(), 1u);
  EXPECT_EQ(turn->tool_calls[0].name, "run_sql");
  EXPECT_EQ(json::parse(turn->tool_calls[0].arguments_json)["sql"], kSql);
  EXPECT_FALSE(turn->tool_calls[0].id.empty());
  EXPECT_EQ(turn->usage.input_tokens, prompt_tokens);
  EXPECT_EQ(turn->usage.output_tokens, output_tokens);
}

// A reply body as the server writes it, with @ARGUMENTS@ standing for the call's arguments
// (a JSON string holding JSON, as every OpenAI-compatible server sends them).
std::string Reply(std::string body) {
  const std::string arguments = json(json({{"sql", kSql}}).dump()).dump();
  const size_t at = body.find("@ARGUMENTS@");
  if (at != std::string::npos) body.replace(at, 11, arguments);
  return body;
}

TEST(RecipesTest, LlamaServerWithJinja) {
  // README: llama-server -hf bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M --jinja -c 16384
  //           --alias qwen2.5-7b-instruct --port 8080
  //         export QUARRY_BASE_URL=http://127.0.0.1:8080/v1
  Result<ClientConfig> config = Resolve({{"QUARRY_BASE_URL", "http://127.0.0.1:8080/v1"}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), "openai-compatible");
  EXPECT_EQ(config->base_url, "http://127.0.0.1:8080/v1");
  EXPECT_EQ(config->model, "") << "no QUARRY_MODEL: the server's only model";
  EXPECT_EQ(config->api_key, "");

  ProviderServer server;
  server.ServeModels(R"({"object": "list", "data": [{"id": "qwen2.5-7b-instruct",
      "object": "model", "created": 1733000000, "owned_by": "llamacpp",
      "meta": {"vocab_type": 2, "n_vocab": 152064, "n_ctx_train": 32768, "n_embd": 3584,
               "n_params": 7615616512, "size": 4677120000}}]})");
  ClientConfig live = OnStandIn(*config, server);
  Result<std::string> model = OnlyServedModel(live);
  ASSERT_TRUE(model) << model.error().message;
  live.model = *model;
  // llama-server's reply: content null beside the calls, its own call ids, and timings.
  server.Enqueue({200, {}, Reply(R"({"choices": [{"finish_reason": "tool_calls", "index": 0,
      "message": {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
        "function": {"name": "run_sql", "arguments": @ARGUMENTS@},
        "id": "Jx0kGHkS5t1pXyJ4aVbW7mQ3cN8dR2eF"}]}}],
    "created": 1733000000, "model": "qwen2.5-7b-instruct", "system_fingerprint": "b5000-1a2b3c4d",
    "object": "chat.completion",
    "usage": {"completion_tokens": 31, "prompt_tokens": 412, "total_tokens": 443},
    "id": "chatcmpl-llamacpp1",
    "timings": {"prompt_n": 412, "prompt_ms": 350.2, "predicted_n": 31,
                "predicted_ms": 800.1}})")});
  Result<Turn> turn = MakeLiveClient(live)->Complete(AskWithTool());
  ExpectToolTurn(turn, 412, 31);
  EXPECT_FALSE(turn->cost_known) << "a local model has no price";
  const RecordedRequest chat = ChatRequest(server, "qwen2.5-7b-instruct");
  EXPECT_EQ(chat.Header("Authorization"), "") << "no key is sent to a local server";
  EXPECT_EQ(server.requests().front().method, "GET") << "the model list was asked first";
}

TEST(RecipesTest, OllamaOpenAiEndpoint) {
  // README: ollama pull qwen2.5:7b; OLLAMA_CONTEXT_LENGTH=16384 ollama serve
  //         export QUARRY_BASE_URL=http://localhost:11434/v1 QUARRY_MODEL=qwen2.5:7b
  Result<ClientConfig> config =
      Resolve({{"QUARRY_BASE_URL", "http://localhost:11434/v1"}, {"QUARRY_MODEL", "qwen2.5:7b"}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), "openai-compatible");
  EXPECT_EQ(config->model, "qwen2.5:7b");
  EXPECT_EQ(config->api_key, "");

  ProviderServer server;
  // Ollama: the calls carry an index, content is "" and the fingerprint is fp_ollama.
  server.Enqueue({200, {}, Reply(R"({"id": "chatcmpl-123", "object": "chat.completion",
    "created": 1733000000, "model": "qwen2.5:7b", "system_fingerprint": "fp_ollama",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "",
      "tool_calls": [{"id": "call_x1y2z3ab", "index": 0, "type": "function",
                      "function": {"name": "run_sql", "arguments": @ARGUMENTS@}}]},
      "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 398, "completion_tokens": 28, "total_tokens": 426}})")});
  Result<Turn> turn = MakeLiveClient(OnStandIn(*config, server))->Complete(AskWithTool());
  ExpectToolTurn(turn, 398, 28);
  EXPECT_EQ(ChatRequest(server, "qwen2.5:7b").Header("Authorization"), "");
}

TEST(RecipesTest, VllmWithHermesToolParser) {
  // README: vllm serve Qwen/Qwen2.5-7B-Instruct --enable-auto-tool-choice
  //           --tool-call-parser hermes --max-model-len 16384 --port 8000
  //         export QUARRY_BASE_URL=http://127.0.0.1:8000/v1
  Result<ClientConfig> config = Resolve({{"QUARRY_BASE_URL", "http://127.0.0.1:8000/v1"}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->model, "");

  ProviderServer server;
  server.ServeModels(R"({"object": "list", "data": [{"id": "Qwen/Qwen2.5-7B-Instruct",
      "object": "model", "created": 1733000000, "owned_by": "vllm",
      "root": "Qwen/Qwen2.5-7B-Instruct", "parent": null, "max_model_len": 16384,
      "permission": []}]})");
  ClientConfig live = OnStandIn(*config, server);
  const ModelListReply list = ListModels(live);
  ASSERT_TRUE(list.models);
  EXPECT_EQ(list.models->front().context_length, 16384);
  Result<std::string> model = OnlyServedModel(live);
  ASSERT_TRUE(model) << model.error().message;
  live.model = *model;
  // vLLM: reasoning_content and stop_reason beside the OpenAI fields, tool ids of its own.
  server.Enqueue({200, {}, Reply(R"({"id": "chatcmpl-9f2c", "object": "chat.completion",
    "created": 1733000000, "model": "Qwen/Qwen2.5-7B-Instruct",
    "choices": [{"index": 0, "message": {"role": "assistant", "reasoning_content": null,
      "content": null, "tool_calls": [{"id": "chatcmpl-tool-4b8e1f", "type": "function",
        "function": {"name": "run_sql", "arguments": @ARGUMENTS@}}]},
      "logprobs": null, "finish_reason": "tool_calls", "stop_reason": null}],
    "usage": {"prompt_tokens": 420, "total_tokens": 450, "completion_tokens": 30,
              "prompt_tokens_details": null},
    "prompt_logprobs": null})")});
  Result<Turn> turn = MakeLiveClient(live)->Complete(AskWithTool());
  ExpectToolTurn(turn, 420, 30);
  ChatRequest(server, "Qwen/Qwen2.5-7B-Instruct");
}

TEST(RecipesTest, OpenRouter) {
  // README: export OPENROUTER_API_KEY=sk-or-...
  const std::string key = "sk-or-v1-recipe-key-00000000";
  Result<ClientConfig> config = Resolve({{"OPENROUTER_API_KEY", key}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), "openrouter");
  EXPECT_EQ(config->base_url, "https://openrouter.ai/api/v1");
  EXPECT_EQ(config->model, "openai/gpt-4o-mini");
  EXPECT_EQ(config->api_key, key);

  ProviderServer server;
  server.Enqueue({200, {}, Reply(R"({"id": "gen-1733000000-abc", "provider": "OpenAI",
    "model": "openai/gpt-4o-mini", "object": "chat.completion", "created": 1733000000,
    "choices": [{"logprobs": null, "finish_reason": "tool_calls",
      "native_finish_reason": "tool_calls", "index": 0,
      "message": {"role": "assistant", "content": "", "refusal": null, "reasoning": null,
        "tool_calls": [{"id": "call_abc123", "index": 0, "type": "function",
                        "function": {"name": "run_sql", "arguments": @ARGUMENTS@}}]}}],
    "usage": {"prompt_tokens": 420, "completion_tokens": 25, "total_tokens": 445,
              "cost": 0.000078, "prompt_tokens_details": {"cached_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 0}}})")});
  Result<Turn> turn = MakeLiveClient(OnStandIn(*config, server))->Complete(AskWithTool());
  ExpectToolTurn(turn, 420, 25);
  EXPECT_TRUE(turn->cost_reported);
  EXPECT_DOUBLE_EQ(turn->cost_usd, 0.000078);
  const RecordedRequest chat = ChatRequest(server, "openai/gpt-4o-mini");
  EXPECT_EQ(chat.Header("Authorization"), "Bearer " + key);
  EXPECT_EQ(chat.Header("X-Title"), "quarry");
}

TEST(RecipesTest, OpenAi) {
  // README: export QUARRY_BASE_URL=https://api.openai.com/v1 QUARRY_API_KEY=sk-...
  const std::string key = "sk-proj-recipe-key-000000000";
  Result<ClientConfig> config =
      Resolve({{"QUARRY_BASE_URL", "https://api.openai.com/v1"}, {"QUARRY_API_KEY", key}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), "openai-compatible");
  EXPECT_EQ(config->model, "gpt-4o-mini");
  EXPECT_EQ(config->api_key, key);

  ProviderServer server;
  server.Enqueue({200, {}, Reply(R"({"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    "object": "chat.completion", "created": 1733000000, "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
      "tool_calls": [{"id": "call_Q8bX2", "type": "function",
                      "function": {"name": "run_sql", "arguments": @ARGUMENTS@}}],
      "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 2400, "completion_tokens": 25, "total_tokens": 2425,
      "prompt_tokens_details": {"cached_tokens": 2048, "audio_tokens": 0},
      "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
        "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
    "service_tier": "default", "system_fingerprint": "fp_0ba0d124f1"})")});
  Result<Turn> turn = MakeLiveClient(OnStandIn(*config, server))->Complete(AskWithTool());
  ExpectToolTurn(turn, 2400, 25);
  EXPECT_EQ(turn->usage.cached_tokens, 2048);
  // gpt-4o-mini: 0.15 in, 0.075 cached, 0.60 out per million tokens.
  EXPECT_NEAR(turn->cost_usd, (352 * 0.15 + 2048 * 0.075 + 25 * 0.60) / 1e6, 1e-12);
  EXPECT_EQ(ChatRequest(server, "gpt-4o-mini").Header("Authorization"), "Bearer " + key);
}

TEST(RecipesTest, Anthropic) {
  // README: export ANTHROPIC_API_KEY=sk-ant-...
  const std::string key = "sk-ant-api03-recipe-key-00000";
  Result<ClientConfig> config = Resolve({{"ANTHROPIC_API_KEY", key}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), "anthropic");
  EXPECT_EQ(config->base_url, "https://api.anthropic.com/v1");
  EXPECT_EQ(config->model, "claude-haiku-4-5");
  EXPECT_EQ(config->api_key, key);
  EXPECT_EQ(ProviderName(MakeLiveClient(*config)->provider()), "anthropic");

  // The model list `quarry doctor` reads: Anthropic's headers, its aliases matched.
  ProviderServer server;
  server.ServeModels(R"({"data": [{"type": "model", "id": "claude-haiku-4-5-20251001",
      "display_name": "Claude Haiku 4.5", "created_at": "2025-10-15T00:00:00Z"}],
      "has_more": false, "first_id": "claude-haiku-4-5-20251001",
      "last_id": "claude-haiku-4-5-20251001"})");
  const ModelListReply list = ListModels(OnStandIn(*config, server));
  ASSERT_TRUE(list.models) << list.problem;
  EXPECT_TRUE(FindListedModel(*list.models, config->model));
  const RecordedRequest get = server.requests().front();
  EXPECT_EQ(get.path, "/v1/models");
  EXPECT_EQ(get.Header("x-api-key"), key);
  EXPECT_EQ(get.Header("anthropic-version"), "2023-06-01");
}

}  // namespace
}  // namespace quarry::llm
