// The model list of an endpoint: GET {base_url}/models, as OpenAI, OpenRouter, Anthropic,
// llama.cpp's llama-server, Ollama and vLLM serve it. Used to pick the only model a local
// server serves when none is configured, and by `quarry doctor`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quarry/llm/llm.h"

namespace quarry::llm {

// One entry of a model list. `context_length` is the context window in tokens where the list
// reports one: llama.cpp's meta.n_ctx_train (the model's trained context; the server's
// --ctx-size may be smaller), vLLM's max_model_len, OpenRouter's context_length, Anthropic's
// max_input_tokens. `context_field` names the field it came from.
struct ListedModel {
  std::string id;
  std::string owned_by;  // "llamacpp", "vllm", "library" (Ollama), ... ("" when absent)
  std::optional<int64_t> context_length;
  std::string context_field;
};

// What GET {base_url}/models gave. status 0: no HTTP reply was read (network_error says why);
// then timed_out or too_large say which kind of failure it was, neither meaning that no
// connection could be made (or kept).
struct ModelListReply {
  std::string url;
  long status = 0;
  std::string network_error;
  // No reply within timeout_ms (or no connection within the connect timeout).
  bool timed_out = false;
  bool too_large = false;  // the server answered, but with a body over 8 MiB, which was not read
  int64_t timeout_ms = 0;  // the bound on the whole exchange
  int64_t latency_ms = 0;
  // Set for a 2xx reply whose body is a model list ({"data": [{"id": ...}, ...]}).
  std::optional<std::vector<ListedModel>> models;
  // What went wrong otherwise: the provider's error message for a non-2xx reply, or why a 2xx
  // body is not a model list. Never holds the key.
  std::string problem;
};

// GET {config.base_url}/models with the provider's headers: Authorization: Bearer <key> for
// OpenAI-compatible endpoints (none without a key), x-api-key and anthropic-version for
// Anthropic (with ?limit=1000, its list being paged). Redirects are not followed; the
// connect timeout is config.connect_timeout_ms, the whole exchange at most 30 s (or
// config.request_timeout_ms when shorter). Never fails: the reply says what happened.
ModelListReply ListModels(const ClientConfig& config);

// Whether `model` is in `models`: the same id, or (Anthropic) an alias whose dated snapshot
// is listed ("claude-haiku-4-5" for "claude-haiku-4-5-20251001"). The matching entry.
std::optional<ListedModel> FindListedModel(const std::vector<ListedModel>& models,
                                           const std::string& model);

// The model a server serves when it lists exactly one, for a configuration without a model.
// Errors: kModel when the list cannot be had (the server unreachable, an HTTP error, a body
// that is no model list) or is empty; kUsage when it lists several (the message names them
// and says to pick one with --model or QUARRY_MODEL).
Result<std::string> OnlyServedModel(const ClientConfig& config);

}  // namespace quarry::llm
