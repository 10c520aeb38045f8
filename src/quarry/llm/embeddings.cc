// Embeddings from an OpenAI-compatible /v1/embeddings endpoint, over the same libcurl transport
// as the chat client (http.cc). The agent ranks schema cards with them.
#include "quarry/llm/http_internal.h"
#include "quarry/common/text.h"
#include "quarry/common/json.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;

Error EmbedError(const EmbeddingsConfig& config, const std::string& what) {
  return Error{Error::Code::kModel, "embeddings at " + RedactUrl(config.url) + ": " + what};
}

std::string ServerMessage(const std::string& body) {
  const json doc = ParseJson(body);
  if (doc.is_object() && doc.contains("error")) {
    const json& e = doc["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      const std::string message = e["message"].get<std::string>();
      return message.substr(0, Utf8Prefix(message, 300));
    }
    if (e.is_string()) return e.get<std::string>().substr(0, 300);
  }
  return body.substr(0, 300);
}

}  // namespace

Result<std::vector<std::vector<double>>> Embed(const EmbeddingsConfig& config,
                                               const std::vector<std::string>& texts) {
  std::vector<std::vector<double>> out;
  internal::HttpSession session;
  std::vector<std::string> headers = {"Content-Type: application/json", "Accept: application/json"};
  if (!config.api_key.empty()) headers.push_back("Authorization: Bearer " + config.api_key);
  const size_t batch = std::max<size_t>(config.batch, 1);
  for (size_t start = 0; start < texts.size(); start += batch) {
    const size_t end = std::min(texts.size(), start + batch);
    json body = {
        {"input", std::vector<std::string>(texts.begin() + static_cast<std::ptrdiff_t>(start),
                                           texts.begin() + static_cast<std::ptrdiff_t>(end))}};
    if (!config.model.empty()) body["model"] = config.model;
    body["encoding_format"] = "float";
    internal::HttpPost post;
    post.url = config.url;
    post.headers = headers;
    post.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    post.timeout_ms = config.timeout_ms;
    post.connect_timeout_ms = config.connect_timeout_ms;
    post.max_reply_bytes = size_t{256} << 20;  // 64 inputs of 4096 dimensions is ~5 MiB of JSON
    post.stop = config.stop;
    const internal::HttpReply reply = session.Post(post);
    if (reply.cancelled || config.stop.stop_requested()) {
      return Fail(Error::Code::kCancelled,
                  "embeddings at " + RedactUrl(config.url) + ": stopped, as the run was asked to");
    }
    if (reply.status == 0) {
      return std::unexpected(
          EmbedError(config, reply.timed_out ? "timed out" : reply.network_error));
    }
    if (reply.status != 200) {
      return std::unexpected(EmbedError(
          config, "HTTP " + std::to_string(reply.status) + ": " + ServerMessage(reply.body)));
    }
    const json doc = ParseJson(reply.body);
    if (!doc.is_object() || !doc.contains("data") || !doc["data"].is_array() ||
        doc["data"].size() != end - start) {
      return std::unexpected(EmbedError(config, "the reply does not hold one embedding per input"));
    }
    std::vector<std::vector<double>> vectors(end - start);
    for (size_t i = 0; i < doc["data"].size(); ++i) {
      const json& item = doc["data"][i];
      const size_t index =
          item.is_object() && item.contains("index") && item["index"].is_number_unsigned()
              ? item["index"].get<size_t>()
              : i;
      if (!item.is_object() || !item.contains("embedding") || !item["embedding"].is_array() ||
          index >= vectors.size()) {
        return std::unexpected(EmbedError(config, "malformed embedding " + std::to_string(i)));
      }
      for (const json& v : item["embedding"]) {
        if (!v.is_number())
          return std::unexpected(EmbedError(config, "an embedding holds a non-number"));
        vectors[index].push_back(v.get<double>());
      }
    }
    const size_t dimensions = out.empty() ? vectors.front().size() : out.front().size();
    for (auto& v : vectors) {
      if (v.empty() || v.size() != dimensions) {
        return std::unexpected(EmbedError(config, "embeddings of different lengths"));
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace quarry::llm
