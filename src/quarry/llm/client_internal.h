// What the two live clients (openai_client.cc, anthropic_client.cc) share: provider JSON read
// without throwing, error text made short and key-free, and the pieces of the retry loop (the
// wait between attempts, the lines that say what was retried). Included only by llm/.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/common/text.h"
#include "quarry/llm/http_internal.h"
#include "quarry/llm/llm.h"

namespace quarry::llm::internal {

// Serialised compactly with invalid UTF-8 replaced (model text can be anything).
std::string Dump(const nlohmann::ordered_json& value);

// One readable line of at most 300 characters ("..." when cut): error bodies can be HTML from
// a proxy or megabytes long.
std::string Snippet(std::string_view text);

// nlohmann's value() throws on a type mismatch; provider JSON must never throw. nullptr /
// 0 when the field is absent or of another type.
const nlohmann::ordered_json* ObjectField(const nlohmann::ordered_json& object, const char* key);
int64_t IntField(const nlohmann::ordered_json& object, const char* key);
// A token count: never negative (a broken endpoint's negative count would lower totals).
int64_t CountField(const nlohmann::ordered_json& object, const char* key);

// The provider says the prompt does not fit the model (OpenAI's context_length_exceeded and
// its TPM "Request too large", OpenRouter, llama.cpp, vLLM, Anthropic's "prompt is too long"):
// no resend can succeed. Transient token-rate limits ("Rate limit reached ... tokens per
// min") are not matched.
bool SaysTooLarge(const std::string& body);

// `text` with every occurrence of `key` replaced by MaskSecret(key), and any other stretch made
// of pieces of it at least 8 characters long (a key cut by a truncated error body, or echoed
// in part) by "****": error text can echo what was sent (some servers quote the credential
// header). Keys shorter than 6 characters are not searched for (they would mask ordinary
// words).
std::string ScrubSecret(std::string text, const std::string& key);

// A reply's text and tool call arguments scrubbed of `key` (ScrubSecret): a server that puts
// the key into a reply must not get it into the trace, the answer or the terminal.
void ScrubTurn(Turn& turn, const std::string& key);

// Waits `delay` with config.sleep when set, else on a condition variable that a stop request
// ends early.
void WaitBetweenAttempts(const ClientConfig& config, std::chrono::milliseconds delay,
                         const StopToken& stop);

// The failure line for a request that timed out (never resent: the timeout is the user's
// bound on the wait).
std::string TimeoutFailure(int64_t timeout_ms, const std::string& network_error);

// "<where> failed: the request is too large for the model (prompt: ~N tokens estimated, B
// bytes of JSON in M messages); not resent: <failure>".
std::string TooLargeMessage(const std::string& where, const Request& request, size_t body_bytes,
                            const std::string& failure);

// How long to wait before attempt `attempt + 1`: the server's Retry-After (capped at
// config.retry.max_delay_ms), else BackoffDelayMs.
int64_t RetryDelayMs(const ClientConfig& config, const HttpReply& reply, int attempt,
                     std::mt19937_64& rng);

// Records a retried failure: "<failure>; waited N ms" into `retried` (for the trace) and
// "<failure>; resending in N ms (attempt a of m)" to config.on_retry, both key-free.
void NoteRetry(const ClientConfig& config, const std::string& failure, int64_t delay_ms,
               int attempt, int max_attempts, std::vector<std::string>& retried);

// A provider's JSON text parsed as ParseJson does, except that a \u escape of an unpaired
// UTF-16 surrogate (a server that cut an emoji's pair across two stream chunks) reads as
// U+FFFD instead of failing the whole reply. Discarded when the text is not JSON otherwise.
nlohmann::ordered_json ParseProviderJson(std::string_view text, std::string* problem = nullptr);

// True when a streamed event carries no data at all (`data:` alone, or only spaces): such an
// event holds no chunk and is skipped.
bool BlankEventData(std::string_view data);

// The jitter generator's seed: config.jitter_seed, or the clock when it is 0.
uint64_t JitterSeed(const ClientConfig& config);

// The most one call can cost, in USD: every prompt token at the higher of the input and
// cache-write prices (a token may be billed as a write, 1.25x on Anthropic) plus the whole
// output limit at the output price. nullopt when the model has no price.
std::optional<double> MaxCallCostUsd(const ClientConfig& config, int64_t prompt_tokens,
                                     int64_t output_limit);

}  // namespace quarry::llm::internal
