// The pieces both live clients share (see client_internal.h).
#include "quarry/llm/client_internal.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "quarry/common/json.h"

namespace quarry::llm::internal {

using json = nlohmann::ordered_json;

namespace {
constexpr size_t kSnippetChars = 300;
}  // namespace

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string Snippet(std::string_view text) {
  std::string out(text.substr(0, kSnippetChars));
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (text.size() > kSnippetChars) out += "...";
  return out;
}

const json* ObjectField(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

int64_t IntField(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return 0;
  if (it->is_number_float()) {  // a float outside int64 range would be undefined to convert
    double value = it->get<double>();
    return value > -9e18 && value < 9e18 ? static_cast<int64_t>(value) : 0;
  }
  return it->get<int64_t>();
}

int64_t CountField(const json& object, const char* key) {
  return std::max<int64_t>(0, IntField(object, key));
}

bool SaysTooLarge(const std::string& body) {
  const std::string text = Lower(body);
  for (const char* marker :
       {"context length", "context_length", "context window", "maximum context",
        "request too large", "too large for", "prompt is too long", "prompt too long",
        "exceeds the available context", "input is too long", "reduce the length"}) {
    if (text.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::string ScrubSecret(std::string text, const std::string& key) {
  if (key.size() < 6 || text.size() < 6) return text;
  // Every stretch of `text` made of pieces of the key at least kPiece long is masked, not only
  // the whole key: an error body cut at 300 bytes, or a server that echoes most of the key,
  // would otherwise show 20 of its 25 characters.
  const size_t piece = std::min<size_t>(8, key.size());
  std::unordered_set<std::string_view> pieces;
  for (size_t i = 0; i + piece <= key.size(); ++i)
    pieces.insert(std::string_view(key).substr(i, piece));
  std::vector<bool> secret(text.size(), false);
  bool any = false;
  for (size_t i = 0; i + piece <= text.size(); ++i) {
    if (pieces.count(std::string_view(text).substr(i, piece)) > 0) {
      std::fill(secret.begin() + static_cast<std::ptrdiff_t>(i),
                secret.begin() + static_cast<std::ptrdiff_t>(i + piece), true);
      any = true;
    }
  }
  if (!any) return text;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (!secret[i]) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && secret[end]) ++end;
    out += std::string_view(text).substr(i, end - i) == key ? MaskSecret(key) : "****";
    i = end;
  }
  return out;
}

void ScrubTurn(Turn& turn, const std::string& key) {
  turn.content = ScrubSecret(std::move(turn.content), key);
  for (ToolCall& call : turn.tool_calls) {
    call.arguments_json = ScrubSecret(std::move(call.arguments_json), key);
  }
}

void WaitBetweenAttempts(const ClientConfig& config, std::chrono::milliseconds delay,
                         const StopToken& stop) {
  if (config.sleep) {
    config.sleep(delay);
    return;
  }
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, stop, delay, [] { return false; });
}

std::string TimeoutFailure(int64_t timeout_ms, const std::string& network_error) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout_ms) / 1000.0);
  return std::string("no reply within the request timeout of ") + seconds +
         " s (--request-timeout or QUARRY_REQUEST_TIMEOUT; a slow local model may need "
         "more); not resent: " +
         network_error;
}

std::string TooLargeMessage(const std::string& where, const Request& request, size_t body_bytes,
                            const std::string& failure) {
  std::string size =
      request.prompt_tokens_estimate > 0
          ? "~" + std::to_string(request.prompt_tokens_estimate) + " tokens estimated, "
          : std::string();
  size += std::to_string(body_bytes) + " bytes of JSON in " +
          std::to_string(request.messages.size()) + " messages";
  return where + " failed: the request is too large for the model (prompt: " + size +
         "); not resent: " + failure;
}

int64_t RetryDelayMs(const ClientConfig& config, const HttpReply& reply, int attempt,
                     std::mt19937_64& rng) {
  std::optional<int64_t> asked =
      ServerRetryDelayMs(reply.retry_after, reply.retry_after_ms, std::time(nullptr));
  return asked ? std::min(*asked, config.retry.max_delay_ms)
               : BackoffDelayMs(config.retry, attempt, rng);
}

void NoteRetry(const ClientConfig& config, const std::string& failure, int64_t delay_ms,
               int attempt, int max_attempts, std::vector<std::string>& retried) {
  retried.push_back(
      ScrubSecret(failure + "; waited " + std::to_string(delay_ms) + " ms", config.api_key));
  if (config.on_retry) {
    config.on_retry(ScrubSecret(failure + "; resending in " + std::to_string(delay_ms) +
                                    " ms (attempt " + std::to_string(attempt + 1) + " of " +
                                    std::to_string(max_attempts) + ")",
                                config.api_key));
  }
}

uint64_t JitterSeed(const ClientConfig& config) {
  return config.jitter_seed != 0
             ? config.jitter_seed
             : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

namespace {

std::optional<unsigned> HexUnit(std::string_view text, size_t at) {
  if (at + 4 > text.size()) return std::nullopt;
  unsigned value = 0;
  for (size_t i = at; i < at + 4; ++i) {
    const char c = text[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return std::nullopt;
    value = value * 16 + static_cast<unsigned>(digit);
  }
  return value;
}

// `text` with each \u escape of an unpaired surrogate replaced by \ufffd.
std::string WithoutLoneSurrogates(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    const std::optional<unsigned> unit = text[i + 1] == 'u' ? HexUnit(text, i + 2) : std::nullopt;
    if (!unit || *unit < 0xD800 || *unit > 0xDFFF) {  // any other escape: copied whole
      out.append(text.substr(i, 2));
      ++i;
      continue;
    }
    const bool high = *unit <= 0xDBFF;
    const std::optional<unsigned> next =
        high && i + 7 < text.size() && text[i + 6] == '\\' && text[i + 7] == 'u'
            ? HexUnit(text, i + 8)
            : std::nullopt;
    if (high && next && *next >= 0xDC00 && *next <= 0xDFFF) {  // a whole pair
      out.append(text.substr(i, 12));
      i += 11;
      continue;
    }
    out += "\\ufffd";
    i += 5;
  }
  return out;
}

}  // namespace

nlohmann::ordered_json ParseProviderJson(std::string_view text, std::string* problem) {
  nlohmann::ordered_json doc = ParseJson(text, problem);
  if (!doc.is_discarded() || text.find("\\u") == std::string_view::npos) return doc;
  nlohmann::ordered_json repaired = ParseJson(WithoutLoneSurrogates(text));
  return repaired.is_discarded() ? doc : repaired;
}

bool BlankEventData(std::string_view data) {
  return data.find_first_not_of(" \t") == std::string_view::npos;
}

std::optional<double> MaxCallCostUsd(const ClientConfig& config, int64_t prompt_tokens,
                                     int64_t output_limit) {
  const std::optional<Price> price = config.prices.Find(config.model);
  if (!price) return std::nullopt;
  const double prompt_price = std::max(price->input_per_mtok, price->cache_write_per_mtok);
  return (static_cast<double>(prompt_tokens) * prompt_price +
          static_cast<double>(output_limit) * price->output_per_mtok) /
         1e6;
}

}  // namespace quarry::llm::internal
