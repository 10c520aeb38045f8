// The model layer: a Client takes the conversation and the tool schemas and returns the
// assistant's turn with usage, cost and latency. Provider JSON stays inside this module; the
// agent sees only these structs. Implementations: OpenAI-compatible Chat Completions over
// libcurl (OpenRouter, OpenAI, llama.cpp, Ollama, vLLM), Anthropic's Messages API, and a replay
// client for fixtures. Both live clients stream (server-sent events) unless told not to.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "quarry/common/common.h"

namespace quarry::llm {

// One tool call the model asked for. `arguments_json` is the raw text the model produced; it
// may be invalid JSON, which the agent reports back as bad_arguments.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;
};

enum class Role { kSystem, kUser, kAssistant, kTool };

// Who serves the model. Names: "openai-compatible" (Chat Completions: OpenAI, llama.cpp,
// Ollama, vLLM), "openrouter", "anthropic" (Messages API), "replay" (turns from a fixture or
// a trace). The names are what --provider, QUARRY_PROVIDER, fixtures and traces hold.
enum class Provider { kOpenAiCompatible, kOpenRouter, kAnthropic, kReplay };
std::string_view ProviderName(Provider provider);
// nullopt for a name not in the list above.
std::optional<Provider> ParseProvider(std::string_view name);

// Why the model stopped writing, in OpenAI's words (Anthropic's stop_reason is mapped at its
// edge): "stop", "tool_calls", "length" (cut off at the output token limit), "content_filter",
// "error"; a reason no provider documents reads as kOther, "other". kNone: the reply named none.
enum class FinishReason { kNone, kStop, kToolCalls, kLength, kContentFilter, kError, kOther };
std::string_view FinishReasonName(FinishReason reason);  // kNone: ""
FinishReason ParseFinishReason(std::string_view name);   // "": kNone; unknown: kOther

struct Message {
  Role role = Role::kUser;
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant turns only
  std::string tool_call_id;          // tool turns only: which call this answers
  // System message only: content[0, cache_split) is the same for every question on this data
  // (instructions, dialect); the rest may vary (retrieved schema cards). A client that places
  // cache breakpoints puts one at the split too. 0: no split.
  size_t cache_split = 0;
};

// A tool as the model sees it; `parameters` is a JSON Schema object.
struct ToolSchema {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters;
};

// Token counts of one call. input_tokens counts every prompt token, cached or not (Anthropic
// reports cache reads and writes apart from input_tokens; its client adds them in).
struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;       // the part of input_tokens read from the provider's cache
  int64_t cache_write_tokens = 0;  // the part of input_tokens written to the cache (Anthropic)
};

// A piece of a streamed reply, as it arrives: text, the start of a tool call (its name), or a
// fragment of a tool call's arguments. `index` is the tool call's position in the turn.
struct StreamDelta {
  enum class Kind { kText, kToolCall, kToolArguments };
  Kind kind = Kind::kText;
  std::string text;  // the text or argument fragment; the tool's name for kToolCall
  int index = 0;
};

struct Request {
  std::vector<Message> messages;
  std::vector<ToolSchema> tools;
  // Overrides of the client's settings (ClientConfig::temperature, max_output_tokens) for this
  // request; nullopt: the client's.
  std::optional<double> temperature{};
  std::optional<int> max_output_tokens{};
  StopToken stop{};  // a stop request aborts the HTTP exchange: Error::Code::kCancelled
  // The caller's estimate of the prompt's tokens, for error messages (0: not given).
  int64_t prompt_tokens_estimate = 0;
};

// The assistant's turn. `cost_usd` is the provider's reported cost when `cost_reported`,
// otherwise computed from the price table (0 when the model is not in it).
struct Turn {
  std::string content;
  std::vector<ToolCall> tool_calls;
  FinishReason finish_reason = FinishReason::kNone;
  Usage usage;
  double cost_usd = 0.0;
  bool cost_reported = false;
  bool cost_known = true;  // false: no reported cost and no price for the model (cost_usd 0)
  int64_t latency_ms = 0;  // wall time of the whole call, retries included
  int attempts = 1;        // HTTP attempts made (1 = no retry)
  bool streamed = false;   // the reply came as server-sent events
  // What caching saved on this call, in USD (PriceTable::CacheSavings of the usage): negative
  // when cache writes cost more than reads saved. nullopt: the model has no price, or the
  // provider reported the cost itself and no price is known.
  std::optional<double> cache_saved_usd{};
  // One line per failed attempt that was retried, e.g. "HTTP 429: rate limited; waited
  // 2000 ms", for the trace. Never holds the API key.
  std::vector<std::string> retried_errors;
};

// Thread safety: a Client is used from one thread at a time; distinct clients are independent.
class Client {
 public:
  virtual ~Client() = default;
  // Errors: Error::Code::kModel for HTTP failures (status and the provider's message, key
  // masked), network failures after retries, timeouts, and replies that cannot be parsed;
  // Error::Code::kCancelled when request.stop is requested (the exchange is aborted).
  virtual Result<Turn> Complete(const Request& request) = 0;
  virtual Provider provider() const = 0;
  virtual std::string model() const = 0;
  // Where the turns come from when they are not a live model's: a replay fixture's "source"
  // label ("recorded": saved by --record from a live run; "scripted": written by hand), or
  // "trace" for a trace.json. "" for live clients.
  virtual std::string turns_source() const { return ""; }
  // The most a request with a prompt of `prompt_tokens` can cost, in USD: prompt_tokens at the
  // input price plus the output token limit at the output price (cached input counted at the
  // full price). nullopt when the model has no price or no output limit is sent.
  virtual std::optional<double> MaxCostUsd(int64_t /*prompt_tokens*/) const { return std::nullopt; }
};

// Price per million tokens, USD. Cache reads and writes have their own rates (Anthropic: reads
// 0.1x, 5-minute writes 1.25x the input price; OpenAI: reads 0.5x or less, writes free).
struct Price {
  double input_per_mtok = 0.0;
  double output_per_mtok = 0.0;
  double cached_input_per_mtok = 0.0;
  double cache_write_per_mtok = 0.0;
};

// Model id -> price. Built-in entries for common models; the user extends or overrides them
// with a JSON file {"model-id": {"input": 3.0, "output": 15.0, "cached_input": 0.3,
// "cache_write": 3.75}, ...} (cached_input and cache_write default to the input price).
class PriceTable {
 public:
  static PriceTable BuiltIn();
  // Errors: kUsage when the file is missing or malformed (names the file and the entry).
  Result<void> MergeFile(const std::filesystem::path& path);
  std::optional<Price> Find(const std::string& model) const;
  // Cost of `usage` for `model`; nullopt when the model has no price.
  std::optional<double> Cost(const std::string& model, const Usage& usage) const;
  // What caching saved on `usage`, in USD: the cost with every input token at the input price
  // minus the cost as charged (negative when writes outweighed reads). nullopt: no price.
  std::optional<double> CacheSavings(const std::string& model, const Usage& usage) const;
  void Set(const std::string& model, Price price) { prices_[model] = price; }

 private:
  std::map<std::string, Price> prices_;
};

// Exponential backoff with full jitter on 429, 5xx and network errors; Retry-After (seconds
// or HTTP date) is honoured, capped at max_delay_ms. 400/401/402/403/404 are never retried,
// nor a 429/5xx whose message says the request is too large for the model (context length),
// nor a timed-out request (the timeout is the user's bound on the wait), nor a cancelled one.
struct RetryPolicy {
  int max_attempts = 4;
  int64_t base_delay_ms = 500;
  int64_t max_delay_ms = 30000;
};

struct ClientConfig {
  std::string base_url;  // e.g. "https://openrouter.ai/api/v1"; "/chat/completions" is appended
  std::string model;
  std::string api_key;  // never logged, traced or passed to a child process
  // kAnthropic: the Messages API (base_url then ends in /v1 and "/messages" is appended).
  Provider provider = Provider::kOpenAiCompatible;
  int64_t request_timeout_ms = 120000;  // the whole exchange, reply included
  int64_t connect_timeout_ms = 10000;
  // Sampling settings sent with every request. temperature nullopt: not sent (the endpoint's
  // default; OpenAI's reasoning models accept no other). The output limit is sent as
  // `max_tokens_param`: "max_tokens" or "max_completion_tokens" (OpenAI's reasoning models
  // accept only the latter).
  std::optional<double> temperature = 0.0;
  int max_output_tokens = 2048;
  std::string max_tokens_param = "max_tokens";
  RetryPolicy retry;
  PriceTable prices = PriceTable::BuiltIn();
  // How the client waits between attempts; tests inject one that records the delays. The
  // default sleep ends early on a stop request.
  std::function<void(std::chrono::milliseconds)> sleep;
  uint64_t jitter_seed = 0;  // 0: seeded from the clock
  // Called about once a second while a reply is awaited (milliseconds since the request went
  // out), then once with -1 when the exchange ends; for a "waiting for the model" line.
  std::function<void(int64_t elapsed_ms)> on_wait;
  // Called before each resend with one line saying what failed and what happens next (the
  // same line goes to Turn::retried_errors); for stderr.
  std::function<void(const std::string& line)> on_retry;
  // Ask for the reply as server-sent events (false: --no-stream). A server that answers a
  // stream request with a whole JSON reply is read as such.
  bool stream = true;
  // Called with each piece of a streamed reply as it arrives (from the thread calling
  // Complete); never called for a reply that was not streamed. A retried attempt starts over.
  std::function<void(const StreamDelta& delta)> on_stream;
};

// Whether `model` (with or without the "openai/" prefix) is one of OpenAI's reasoning models
// (o1, o3, o4-mini, gpt-5 and their variants), which take max_completion_tokens and reject a
// temperature other than the default.
bool IsOpenAiReasoningModel(const std::string& model);

// OpenAI-compatible Chat Completions with tool calling: POST {base_url}/chat/completions.
// When the endpoint rejects a sampling parameter as unsupported (HTTP 400 naming temperature,
// max_tokens or max_completion_tokens), the request is resent once without it (an output
// limit is resent under the other name first), the change is listed in
// Turn::retried_errors, and the client keeps it for every later request. Errors besides
// kModel: kCancelled when Request::stop is requested (never retried). Replies over 8 MiB are
// not read (kModel). With ClientConfig::stream the reply is asked for as server-sent events
// (stream_options.include_usage too; a server that rejects stream_options gets the request
// again without it, kept off like a rejected sampling parameter) and assembled into the same
// Turn a whole reply gives (openai_stream_internal.h); a whole JSON reply is read as such. An
// error event or a broken connection is retried only while nothing of the reply has arrived.
// Tool-call arguments come back exactly as the provider sent them. In the history sent back,
// arguments that are not valid JSON are wrapped as {"invalid_json": "<raw text>"}, because
// several servers (llama.cpp, Anthropic behind OpenRouter) reject a conversation whose
// arguments do not parse. Uses libcurl; curl_global_init runs once, on first use.
std::unique_ptr<Client> MakeOpenAiClient(ClientConfig config);

// Anthropic's Messages API with tool use: POST {base_url}/messages, x-api-key (when a key is
// set) and anthropic-version: 2023-06-01 headers; max_tokens always sent; a temperature over
// 1 is sent as 1 (the API's range). Cache breakpoints (at most 4) on the last tool, the
// system prompt (two blocks when Message::cache_split falls inside it) and the newest
// message's last block, so each call after the first reads the prefix from the cache; usage
// adds cache reads and writes into input_tokens, and cost prices each at its own rate.
// Retried like the OpenAI-compatible client's (RetryPolicy, Retry-After): 429, 5xx and 529
// overloaded_error; 4xx and "prompt is too long" (or 413) are not. Streaming (config.stream):
// the assembled Turn equals the whole reply's; an error event (overloaded_error, api_error,
// rate_limit_error) is resent only while no text or tool-call piece has arrived, a dropped
// connection only while no byte has; a stream that ends without message_stop is a kModel
// error naming the events received. MaxCostUsd prices the prompt at the higher of the input
// and cache-write prices (any prompt token may be a cache write). Errors as MakeOpenAiClient's.
std::unique_ptr<Client> MakeAnthropicClient(ClientConfig config);

// The client for config.provider: MakeAnthropicClient for "anthropic", else MakeOpenAiClient.
std::unique_ptr<Client> MakeLiveClient(ClientConfig config);

// Plays recorded assistant turns in order while every tool really executes. Accepts a fixture
//   {"source": ..., "model"?: ..., "turns": [{"content", "tool_calls": [{"id"?, "name",
//    "arguments"}], "usage": {"input_tokens", "output_tokens", "cached_tokens",
//    "cache_write_tokens"?}, "cost_usd"?, "cache_saved_usd"?, "finish_reason"?}]}
// (a trace.json's model steps become one through trace::ReplayFixtureOf; its optional
// "turn_labels", one string per turn, name the turns in errors). Arguments
// given as JSON are serialised; a string is passed on raw, so a fixture can hold malformed
// arguments. A missing id becomes "call_<turn>_<i>" (both 0-based). The request is ignored;
// cost is the turn's cost_usd (reported) or 0; latency 0. provider() is "replay", model() the
// document's "model" or "replay", turns_source() its "source" ("" when a fixture has none). Errors:
// kUsage when the file is missing or malformed (names the file and the entry); a Complete() past
// the last turn is a kModel error "replay exhausted".
Result<std::unique_ptr<Client>> MakeReplayClient(const std::filesystem::path& path);
// --record: forwards every call to `inner` (which must outlive it) and keeps each turn that
// came back, in order, so the run can be saved as a replay fixture that reproduces the same
// final turns. Failed calls are not kept. Thread safety as Client.
class RecordingClient final : public Client {
 public:
  explicit RecordingClient(Client& inner) : inner_(inner) {}
  Result<Turn> Complete(const Request& request) override;
  Provider provider() const override { return inner_.provider(); }
  std::string model() const override { return inner_.model(); }
  std::string turns_source() const override { return inner_.turns_source(); }
  std::optional<double> MaxCostUsd(int64_t prompt_tokens) const override {
    return inner_.MaxCostUsd(prompt_tokens);
  }
  const std::vector<Turn>& turns() const { return turns_; }

 private:
  Client& inner_;
  std::vector<Turn> turns_;
};

// What a recorded fixture says about where its turns came from. Never a key, a URL or a
// header: the base URL can carry credentials.
struct FixtureLabel {
  std::string question;
  std::optional<std::string> reply;  // a clarification's continuation: the user's reply
  std::vector<std::string> data;     // the data files (only their base names are written)
  std::string model;
  Provider provider = Provider::kOpenAiCompatible;
  std::string recorded_at;  // UTC ISO 8601
  std::string quarry_version;
  std::string stop_reason;  // how the recorded run ended, for the reader
};
// The fixture document MakeReplayClient plays back: {"source": "recorded", "note", "question",
// "reply"?, "data": [base names], "model", "provider", "recorded_at", "quarry_version"?,
// "stop_reason"?, "turns": [{"content", "tool_calls": [{"id", "name", "arguments": raw text}],
// "usage": {"input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens"},
// "cost_usd"? (absent when unknown), "cache_saved_usd"?, "finish_reason", "streamed"?}]}.
nlohmann::ordered_json RecordedFixture(const FixtureLabel& label, const std::vector<Turn>& turns);
// Writes `doc` to `path` through a temporary file in the same folder and a rename, so a reader
// never sees half a file. Errors: kUsage naming the file when it cannot be written.
Result<void> WriteFixture(const std::filesystem::path& path, const nlohmann::ordered_json& doc);

// Recorded turns are found by question and data: questions agree when their keys are equal (case,
// runs of whitespace and trailing spaces, '?' and '.' ignored), data when the sorted base names
// of the files are (a recording names its data by file name; a PostgreSQL server by its
// database, "postgresql:chinook", or its "service=NAME").
std::string RecordingKey(std::string_view question);
std::vector<std::string> DataFileNames(const std::vector<std::string>& paths);
Result<std::unique_ptr<Client>> MakeReplayClientFromJson(const nlohmann::ordered_json& doc,
                                                         const std::string& origin);

// Where a live client's settings come from, in order: explicit flags, the environment
// (QUARRY_PROVIDER, QUARRY_BASE_URL, QUARRY_MODEL, QUARRY_API_KEY; OPENROUTER_API_KEY or
// ANTHROPIC_API_KEY choose their provider when no base URL is set), then a .env file, which
// never overrides the environment; see ResolveConfig for the rules.
struct Settings {
  std::optional<std::string> base_url;
  std::optional<std::string> model;
  std::optional<std::string> api_key;
  // As typed on the command line; each falls back to its variable, then to the default.
  std::optional<std::string> request_timeout;   // QUARRY_REQUEST_TIMEOUT, seconds (120)
  std::optional<std::string> max_tokens;        // QUARRY_MAX_TOKENS (2048)
  std::optional<std::string> temperature;       // QUARRY_TEMPERATURE, a number or "default"
  std::optional<std::string> max_tokens_param;  // QUARRY_MAX_TOKENS_PARAM
  std::optional<std::string> provider;  // --provider: openai-compatible, openrouter, anthropic
  std::optional<std::string> profile;   // --profile: the config file's profile (config_file.h)
  bool stream = true;                   // false: --no-stream (also QUARRY_STREAM=0)
};
// Reads KEY=VALUE lines (comments, `export`, quotes allowed). Missing file: empty map.
std::map<std::string, std::string> ReadDotEnv(const std::filesystem::path& path);

using GetEnv = std::function<std::optional<std::string>(const char*)>;

// A profile of the user's config file (llm/config_file.h), as settings by variable name.
struct ConfigProfile {
  std::string name;                           // "" when no profile applies
  std::string file;                           // the file, as shown: "~/.config/quarry/config.toml"
  std::string chosen_by;                      // "--profile", "QUARRY_PROFILE", "default_profile"...
  std::map<std::string, std::string> values;  // "QUARRY_MODEL" -> "qwen2.5-coder-7b"
  std::map<std::string, std::string> keys;    // "QUARRY_MODEL" -> "model", for origins
};

// Where settings come from below the command line and the environment, in order: ./.env, then
// the config profile.
struct SettingFiles {
  std::map<std::string, std::string> dotenv;
  ConfigProfile profile;
};

// Where each resolved setting came from, for `quarry doctor`: "--model", "QUARRY_MODEL",
// "QUARRY_MODEL in .env", "the default for anthropic", "OPENROUTER_API_KEY is set", ...
struct SettingOrigins {
  std::string provider;
  std::string base_url;
  std::string model;    // "" while the model is still to be asked from the server
  std::string api_key;  // the variable the key came from, or why none is needed
};

// The model used when none is configured, for endpoints whose provider documents one:
// OpenAI (api.openai.com), OpenRouter and Anthropic (api.anthropic.com); each has a built-in
// price. nullopt for any other endpoint.
std::optional<std::string> DefaultModel(Provider provider, const std::string& base_url);

// An empty variable counts as unset. Each QUARRY_* setting is read from the flag, else the
// environment, else ./.env, else `profile` (the config file's). The rules, in order:
// - Provider: --provider, else QUARRY_PROVIDER ("openai-compatible", "openrouter" or
//   "anthropic"; anything else is a kUsage error naming them), else chosen from the base URL's
//   host (api.anthropic.com: anthropic; openrouter.ai: openrouter; else openai-compatible).
// - Base URL: --base-url, else QUARRY_BASE_URL, else the provider's default
//   (https://openrouter.ai/api/v1; ANTHROPIC_BASE_URL, else https://api.anthropic.com/v1;
//   OPENAI_BASE_URL, else https://api.openai.com/v1, for openai-compatible once an OPENAI_*
//   variable is set). With neither a base URL nor a provider, OPENROUTER_API_KEY selects
//   OpenRouter; else ANTHROPIC_API_KEY selects Anthropic, else OPENAI_API_KEY or
//   OPENAI_BASE_URL selects OpenAI, both only when QUARRY_API_KEY is unset (QUARRY_API_KEY
//   needs its own QUARRY_BASE_URL).
// - Key: a provider's own variable is only ever sent to that provider's host: its public host
//   (openrouter.ai, api.anthropic.com, api.openai.com) or the host of its own base URL
//   variable (ANTHROPIC_BASE_URL, OPENAI_BASE_URL). For a base URL the user gave, QUARRY_API_KEY
//   comes first, then the host's own variable; for a provider's default base URL, the
//   provider's variable comes first, then QUARRY_API_KEY. A key is required unless the host
//   is loopback (llama.cpp, Ollama, vLLM on this machine). A base URL that ./.env chose gets
//   only a key from ./.env: a .env that came with a checkout must not choose where the
//   user's own key goes.
// - Model: --model, else QUARRY_MODEL, else DefaultModel; for a loopback endpoint without one
//   the model is left empty, to be asked from the server (llm/models.h OnlyServedModel; the
//   CLI's LiveConfig does it). Any other endpoint without a model is a kUsage error.
// QUARRY_PRICES names a price file merged into the built-in table. Request settings: the
// timeout in seconds (fractions allowed, 0.1 to 86400), max tokens (1 to 1000000),
// temperature (0 to 2, or "default": not sent; unset: 0, but not sent to an OpenAI reasoning
// model), max_tokens_param ("auto", "max_tokens", "max_completion_tokens"; auto: the latter
// for OpenAI reasoning models, else the former); QUARRY_STREAM=0 (or false) turns streaming
// off. Errors: kUsage with one line saying what to set, e.g. "no model endpoint configured:
// set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY, or QUARRY_BASE_URL and
// QUARRY_MODEL (with QUARRY_API_KEY) for another endpoint; pass --base-url/--model, or use
// --offline"; also a
// malformed base URL or price file. `origins`, when given, receives where each setting came
// from.
Result<ClientConfig> ResolveConfig(const Settings& flags, const GetEnv& getenv,
                                   const std::map<std::string, std::string>& dotenv,
                                   SettingOrigins* origins = nullptr,
                                   const ConfigProfile* profile = nullptr);
// Whether `base_url` is http(s) on this machine (localhost, 127.x, ::1).
bool IsLoopbackUrl(const std::string& base_url);
// The process environment, for ResolveConfig.
std::optional<std::string> ProcessEnv(const char* name);

// An OpenAI-compatible embeddings endpoint (llama.cpp's server with an e5 model, Ollama, vLLM,
// OpenAI): POST {url} {"model", "input": [texts]} -> {"data": [{"index", "embedding": [...]}]}.
struct EmbeddingsConfig {
  std::string url;      // the endpoint itself, e.g. "http://127.0.0.1:8080/v1/embeddings"
  std::string model;    // may be empty: llama.cpp serves one model and ignores it
  std::string api_key;  // never logged or traced; empty: no Authorization header
  int64_t timeout_ms = 30000;
  int64_t connect_timeout_ms = 5000;
  size_t batch = 64;  // inputs per request
  // A stop request aborts the exchange within about a second: Error::Code::kCancelled.
  StopToken stop{};
};

// Embeds `texts` (one vector each, in order), in batches of config.batch, without retries (the
// caller falls back to another ranking). Errors: kModel naming the endpoint and what failed
// (transport, HTTP status with the server's message, a reply without one vector per input or
// with vectors of different lengths); the key never appears in a message.
Result<std::vector<std::vector<double>>> Embed(const EmbeddingsConfig& config,
                                               const std::vector<std::string>& texts);

// The embeddings endpoint from the environment (then .env): QUARRY_EMBEDDINGS_URL (a base URL
// like ".../v1", to which "/embeddings" is appended, or the endpoint itself), and
// QUARRY_EMBEDDINGS_MODEL. The key is QUARRY_EMBEDDINGS_API_KEY, else QUARRY_API_KEY when the
// endpoint is on the same host as QUARRY_BASE_URL (a key is never sent to another host than
// the one it was given for). nullopt when QUARRY_EMBEDDINGS_URL is unset. Errors: kUsage for a
// URL that is not http(s).
Result<std::optional<EmbeddingsConfig>> ResolveEmbeddingsConfig(
    const GetEnv& getenv, const std::map<std::string, std::string>& dotenv);

// A setting by name from the environment, then `dotenv` (an empty value counts as unset).
std::optional<std::string> LookupSetting(const char* name, const GetEnv& getenv,
                                         const std::map<std::string, std::string>& dotenv);

// "sk-or-v1-abcd...wxyz" -> "sk-o...wxyz": for error messages that must not leak a key.
// Secrets shorter than 20 characters, or with anything but printable ASCII, become "****"
// entirely, so at most 8 characters of a key of 20 or more are ever shown.
std::string MaskSecret(const std::string& secret);

// A URL as it may be shown: a user name and password before the host are replaced
// ("http://alice:pw@host/v1" -> "http://***@host/v1"); any other URL is returned unchanged.
std::string RedactUrl(std::string_view url);

}  // namespace quarry::llm
