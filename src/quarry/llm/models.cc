// The model list of an endpoint (GET /models) and the only model a local server serves.
#include "quarry/llm/models.h"

#include <algorithm>
#include <chrono>

#include "quarry/common/json.h"
#include "quarry/llm/http_internal.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;

// The version every Anthropic request names (docs.anthropic.com, "Versions").
constexpr const char* kAnthropicVersion = "2023-06-01";
constexpr int64_t kListTimeoutMs = 30000;

// A provider's error text, short and without the key.
std::string ErrorText(const std::string& body, const std::string& key) {
  std::string text = body;
  const json doc = ParseJson(body);
  if (doc.is_object()) {
    auto error = doc.find("error");
    if (error != doc.end() && error->is_string()) text = error->get<std::string>();
    if (error != doc.end() && error->is_object()) {
      auto message = error->find("message");
      if (message != error->end() && message->is_string()) text = message->get<std::string>();
    }
  }
  if (text.empty()) text = "(empty body)";
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  if (key.size() >= 6) {
    const std::string masked = MaskSecret(key);
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
      text.replace(at, key.size(), masked);
      at += masked.size();
    }
  }
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::optional<int64_t> PositiveInt(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  const int64_t value = it->get<int64_t>();
  return value > 0 ? std::optional<int64_t>(value) : std::nullopt;
}

ListedModel ReadEntry(const json& entry) {
  ListedModel model;
  model.id = entry["id"].get<std::string>();
  if (auto owner = entry.find("owned_by"); owner != entry.end() && owner->is_string()) {
    model.owned_by = owner->get<std::string>();
  }
  if (auto meta = entry.find("meta"); meta != entry.end() && meta->is_object()) {
    if (auto n = PositiveInt(*meta, "n_ctx_train")) {
      model.context_length = n;
      model.context_field = "meta.n_ctx_train";
    }
  }
  for (const char* field : {"max_model_len", "context_length", "max_input_tokens"}) {
    if (model.context_length) break;
    if (auto n = PositiveInt(entry, field)) {
      model.context_length = n;
      model.context_field = field;
    }
  }
  return model;
}

}  // namespace

ModelListReply ListModels(const ClientConfig& config) {
  ModelListReply out;
  out.url = RedactUrl(config.base_url + "/models");
  internal::HttpPost request;
  request.url = config.base_url + "/models";
  request.headers = {"Accept: application/json"};
  if (config.provider == Provider::kAnthropic) {
    request.url += "?limit=1000";
    request.headers.push_back(std::string("anthropic-version: ") + kAnthropicVersion);
    if (!config.api_key.empty()) request.headers.push_back("x-api-key: " + config.api_key);
  } else if (!config.api_key.empty()) {
    request.headers.push_back("Authorization: Bearer " + config.api_key);
  }
  request.timeout_ms = std::min(config.request_timeout_ms, kListTimeoutMs);
  request.connect_timeout_ms = config.connect_timeout_ms;

  const auto start = std::chrono::steady_clock::now();
  internal::HttpSession session;
  const internal::HttpReply reply = session.Get(request);
  out.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  out.status = reply.status;
  out.timed_out = reply.timed_out;
  out.too_large = reply.too_large;
  out.timeout_ms = request.timeout_ms;
  if (reply.status == 0) {
    out.network_error =
        reply.too_large ? "the model list is over 8 MiB and was not read" : reply.network_error;
    return out;
  }
  if (reply.status < 200 || reply.status >= 300) {
    out.problem = ErrorText(reply.body, config.api_key);
    return out;
  }
  std::string problem;
  const json doc = ParseJson(reply.body, &problem);
  if (doc.is_discarded()) {
    out.problem = "the reply is " + problem;
    return out;
  }
  const auto data = doc.is_object() ? doc.find("data") : doc.end();
  if (!doc.is_object() || data == doc.end() || !data->is_array()) {
    out.problem = "the reply has no \"data\" list of models";
    return out;
  }
  std::vector<ListedModel> models;
  for (const json& entry : *data) {
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string()) {
      out.problem = "a \"data\" entry has no \"id\"";
      return out;
    }
    models.push_back(ReadEntry(entry));
  }
  out.models = std::move(models);
  return out;
}

std::optional<ListedModel> FindListedModel(const std::vector<ListedModel>& models,
                                           const std::string& model) {
  for (const ListedModel& m : models) {
    if (m.id == model) return m;
  }
  // Anthropic lists dated snapshots only; its aliases name the newest ("-YYYYMMDD").
  for (const ListedModel& m : models) {
    if (m.id.size() == model.size() + 9 && m.id.starts_with(model + "-") &&
        std::all_of(m.id.begin() + static_cast<std::ptrdiff_t>(model.size()) + 1, m.id.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      return m;
    }
  }
  return std::nullopt;
}

Result<std::string> OnlyServedModel(const ClientConfig& config) {
  const ModelListReply reply = ListModels(config);
  const std::string asked =
      "no model is configured and the server at " + RedactUrl(config.base_url);
  if (reply.status == 0) {
    return Fail(Error::Code::kModel, asked + " could not be asked which it serves (" +
                                         reply.network_error +
                                         "): start it, or set QUARRY_MODEL / pass --model");
  }
  if (!reply.models) {
    return Fail(Error::Code::kModel, asked + " gave no model list (GET " + reply.url + ": HTTP " +
                                         std::to_string(reply.status) + ", " + reply.problem +
                                         "): set QUARRY_MODEL or pass --model");
  }
  if (reply.models->empty()) {
    return Fail(Error::Code::kModel, asked +
                                         " lists no models: load one into the server, or "
                                         "set QUARRY_MODEL / pass --model");
  }
  if (reply.models->size() > 1) {
    std::string names;
    for (size_t i = 0; i < reply.models->size() && i < 20; ++i) {
      names += (i ? ", " : "") + (*reply.models)[i].id;
    }
    if (reply.models->size() > 20) names += ", ...";
    return Fail(Error::Code::kUsage, asked + " serves " + std::to_string(reply.models->size()) +
                                         " models (" + names +
                                         "): pick one with --model or QUARRY_MODEL");
  }
  return reply.models->front().id;
}

}  // namespace quarry::llm
