// The model list (GET /models) against the stand-in, in each server's own reply shape, and
// the only model a local server serves. The bodies follow what llama.cpp's llama-server,
// vLLM, Ollama, OpenRouter and Anthropic document and send (scripted here).
#include <gtest/gtest.h>

#include <string>

#include "quarry/llm/models.h"
#include "support/provider_server.h"

namespace quarry::llm {
namespace {

using quarry::testing::ClosedPort;
using quarry::testing::ProviderServer;

// llama-server: one entry, its id the --alias (else the GGUF path), and the GGUF's metadata.
const char* kLlamaCppList = R"({"object": "list", "data": [{"id": "qwen2.5-7b-instruct",
  "object": "model", "created": 1733000000, "owned_by": "llamacpp", "meta": {"vocab_type": 2,
  "n_vocab": 152064, "n_ctx_train": 32768, "n_embd": 3584, "n_params": 7615616512,
  "size": 4677120000}}]})";
// vLLM: max_model_len is the context the server was started with.
const char* kVllmList = R"({"object": "list", "data": [{"id": "Qwen/Qwen2.5-7B-Instruct",
  "object": "model", "created": 1733000000, "owned_by": "vllm",
  "root": "Qwen/Qwen2.5-7B-Instruct", "parent": null, "max_model_len": 32768,
  "permission": [{"id": "modelperm-1", "object": "model_permission"}]}]})";
// Ollama's OpenAI-compatible list: every pulled model, no context length.
const char* kOllamaList = R"({"object": "list", "data": [
  {"id": "qwen2.5:7b", "object": "model", "created": 1733000000, "owned_by": "library"},
  {"id": "llama3.2:3b", "object": "model", "created": 1733000001, "owned_by": "library"}]})";
const char* kOpenRouterList = R"({"data": [{"id": "openai/gpt-4o-mini",
  "name": "OpenAI: GPT-4o-mini", "context_length": 128000,
  "pricing": {"prompt": "0.00000015", "completion": "0.0000006"},
  "top_provider": {"context_length": 128000, "max_completion_tokens": 16384},
  "supported_parameters": ["tools", "tool_choice"]}]})";
const char* kAnthropicList = R"({"data": [{"type": "model", "id": "claude-haiku-4-5-20251001",
  "display_name": "Claude Haiku 4.5", "created_at": "2025-10-15T00:00:00Z",
  "max_input_tokens": 200000}, {"type": "model", "id": "claude-sonnet-4-5-20250929",
  "display_name": "Claude Sonnet 4.5", "created_at": "2025-09-29T00:00:00Z"}],
  "has_more": false, "first_id": "claude-haiku-4-5-20251001",
  "last_id": "claude-sonnet-4-5-20250929"})";

ClientConfig Config(const std::string& base_url, const std::string& provider = "openai-compatible",
                    const std::string& key = "") {
  ClientConfig config;
  config.base_url = base_url;
  config.provider = *ParseProvider(provider);
  config.api_key = key;
  config.connect_timeout_ms = 5000;
  return config;
}

TEST(ModelsTest, LlamaCppListGivesTheTrainedContext) {
  ProviderServer server;
  server.ServeModels(kLlamaCppList);
  const ModelListReply reply = ListModels(Config(server.base_url()));
  EXPECT_EQ(reply.status, 200);
  ASSERT_TRUE(reply.models) << reply.problem;
  ASSERT_EQ(reply.models->size(), 1u);
  EXPECT_EQ(reply.models->front().id, "qwen2.5-7b-instruct");
  EXPECT_EQ(reply.models->front().owned_by, "llamacpp");
  EXPECT_EQ(reply.models->front().context_length, 32768);
  EXPECT_EQ(reply.models->front().context_field, "meta.n_ctx_train");

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].path, "/v1/models");
  EXPECT_EQ(requests[0].Header("Authorization"), "") << "no key, no Authorization header";
}

TEST(ModelsTest, VllmOpenRouterAndOllamaShapes) {
  ProviderServer vllm;
  vllm.ServeModels(kVllmList);
  const ModelListReply v = ListModels(Config(vllm.base_url(), "openai-compatible", "token-abc123"));
  ASSERT_TRUE(v.models) << v.problem;
  EXPECT_EQ(v.models->front().context_length, 32768);
  EXPECT_EQ(v.models->front().context_field, "max_model_len");
  EXPECT_EQ(vllm.requests()[0].Header("Authorization"), "Bearer token-abc123");

  ProviderServer router;
  router.ServeModels(kOpenRouterList);
  const ModelListReply r = ListModels(Config(router.base_url(), "openrouter", "sk-or-v1-test00"));
  ASSERT_TRUE(r.models) << r.problem;
  EXPECT_EQ(r.models->front().context_length, 128000);
  EXPECT_EQ(r.models->front().context_field, "context_length");

  ProviderServer ollama;
  ollama.ServeModels(kOllamaList);
  const ModelListReply o = ListModels(Config(ollama.base_url()));
  ASSERT_TRUE(o.models) << o.problem;
  ASSERT_EQ(o.models->size(), 2u);
  EXPECT_EQ((*o.models)[1].id, "llama3.2:3b");
  EXPECT_FALSE((*o.models)[0].context_length) << "Ollama's list reports no context length";
}

TEST(ModelsTest, AnthropicListUsesItsHeadersAndMatchesAliases) {
  ProviderServer server;
  server.ServeModels(kAnthropicList);
  const ModelListReply reply =
      ListModels(Config(server.base_url(), "anthropic", "sk-ant-api03-testkey0000"));
  ASSERT_TRUE(reply.models) << reply.problem;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/models");
  EXPECT_EQ(requests[0].Header("x-api-key"), "sk-ant-api03-testkey0000");
  EXPECT_EQ(requests[0].Header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(requests[0].Header("Authorization"), "") << "Anthropic takes x-api-key only";

  const auto haiku = FindListedModel(*reply.models, "claude-haiku-4-5");
  ASSERT_TRUE(haiku) << "the alias names its dated snapshot";
  EXPECT_EQ(haiku->id, "claude-haiku-4-5-20251001");
  EXPECT_EQ(haiku->context_length, 200000);
  EXPECT_TRUE(FindListedModel(*reply.models, "claude-sonnet-4-5-20250929"));
  EXPECT_FALSE(FindListedModel(*reply.models, "claude-haiku-4"))
      << "a prefix that is not alias + date does not match";
  EXPECT_FALSE(FindListedModel(*reply.models, "claude-opus-4-5"));
}

TEST(ModelsTest, FailuresSayWhatHappened) {
  ClosedPort closed;
  const ModelListReply refused = ListModels(Config(closed.base_url()));
  EXPECT_EQ(refused.status, 0);
  EXPECT_FALSE(refused.network_error.empty());
  EXPECT_FALSE(refused.models);

  ProviderServer none;  // no list served: 404
  const ModelListReply missing = ListModels(Config(none.base_url()));
  EXPECT_EQ(missing.status, 404);
  EXPECT_FALSE(missing.models);

  ProviderServer refusing;
  refusing.ServeModels(R"({"error": {"message": "Incorrect API key sk-secret-key-0000000000"}})",
                       401);
  const ModelListReply denied =
      ListModels(Config(refusing.base_url(), "openai-compatible", "sk-secret-key-0000000000"));
  EXPECT_EQ(denied.status, 401);
  EXPECT_NE(denied.problem.find("Incorrect API key"), std::string::npos) << denied.problem;
  EXPECT_EQ(denied.problem.find("sk-secret-key-0000000000"), std::string::npos)
      << "the key is masked: " << denied.problem;

  ProviderServer odd;
  odd.ServeModels(R"({"models": ["a"]})");
  const ModelListReply not_a_list = ListModels(Config(odd.base_url()));
  EXPECT_FALSE(not_a_list.models);
  EXPECT_NE(not_a_list.problem.find("\"data\""), std::string::npos) << not_a_list.problem;
}

TEST(ModelsTest, OnlyServedModel) {
  ProviderServer one;
  one.ServeModels(kLlamaCppList);
  Result<std::string> model = OnlyServedModel(Config(one.base_url()));
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(*model, "qwen2.5-7b-instruct");

  ProviderServer several;
  several.ServeModels(kOllamaList);
  Result<std::string> pick = OnlyServedModel(Config(several.base_url()));
  ASSERT_FALSE(pick);
  EXPECT_EQ(pick.error().code, Error::Code::kUsage);
  EXPECT_NE(pick.error().message.find("serves 2 models (qwen2.5:7b, llama3.2:3b)"),
            std::string::npos)
      << pick.error().message;
  EXPECT_NE(pick.error().message.find("pick one with --model or QUARRY_MODEL"), std::string::npos);

  ProviderServer empty;
  empty.ServeModels(R"({"object": "list", "data": []})");
  Result<std::string> nothing = OnlyServedModel(Config(empty.base_url()));
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code, Error::Code::kModel);
  EXPECT_NE(nothing.error().message.find("lists no models"), std::string::npos);

  ClosedPort closed;
  Result<std::string> down = OnlyServedModel(Config(closed.base_url()));
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().code, Error::Code::kModel);
  EXPECT_NE(down.error().message.find("could not be asked which it serves"), std::string::npos)
      << down.error().message;
  EXPECT_NE(down.error().message.find("start it, or set QUARRY_MODEL"), std::string::npos);
}

}  // namespace
}  // namespace quarry::llm
