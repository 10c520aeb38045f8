// Where a live client's settings come from: flags, then the environment, then .env. Also the
// secret masking used wherever a key might otherwise be shown.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quarry/common/text.h"
#include "quarry/llm/llm.h"
#include "quarry/llm/settings_internal.h"

namespace quarry::llm {
namespace {

constexpr const char* kOpenRouterUrl = "https://openrouter.ai/api/v1";
constexpr const char* kAnthropicUrl = "https://api.anthropic.com/v1";
constexpr const char* kAnthropicHost = "api.anthropic.com";
constexpr const char* kOpenAiHost = "api.openai.com";
constexpr const char* kOpenAiUrl = "https://api.openai.com/v1";

// The models used when none is configured: each provider's small, cheap model that calls
// tools well, as listed on its models page (platform.openai.com/docs/models,
// openrouter.ai/models, docs.anthropic.com "Models overview"), all priced in prices.cc. One
// place to change when a provider retires them.
constexpr const char* kDefaultOpenAiModel = "gpt-4o-mini";
constexpr const char* kDefaultOpenRouterModel = "openai/gpt-4o-mini";
constexpr const char* kDefaultAnthropicModel = "claude-haiku-4-5";

bool IsEnvName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// The value part of a .env line: "double quoted" (with \n \t \" \\ escapes), 'single quoted'
// (literal), or bare up to a " #" comment. nullopt for an unterminated quote.
std::optional<std::string> DotEnvValue(std::string_view raw) {
  raw = Trim(raw);
  if (raw.empty()) return std::string();
  if (raw.front() == '\'') {
    size_t end = raw.find('\'', 1);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(raw.substr(1, end - 1));
  }
  if (raw.front() == '"') {
    std::string out;
    for (size_t i = 1; i < raw.size(); ++i) {
      char c = raw[i];
      if (c == '"') return out;
      if (c == '\\' && i + 1 < raw.size()) {
        char next = raw[++i];
        out += next == 'n' ? '\n' : next == 't' ? '\t' : next;
      } else {
        out += c;
      }
    }
    return std::nullopt;
  }
  for (size_t i = 1; i < raw.size(); ++i) {
    if (raw[i] == '#' && std::isspace(static_cast<unsigned char>(raw[i - 1]))) {
      raw = raw.substr(0, i);
      break;
    }
  }
  return std::string(Trim(raw));
}

// Lower-cased host of an http(s) URL; nullopt when the URL is not http(s) or has no host.
std::optional<std::string> UrlHost(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  std::string scheme(url.substr(0, scheme_end));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https") return std::nullopt;
  std::string_view authority = url.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);
  }
  std::string_view host;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
  } else {
    host = authority.substr(0, authority.find(':'));
  }
  if (host.empty()) return std::nullopt;
  std::string out(host);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "https://host:port" of an http(s) URL, lower-cased, without user info or path; nullopt when
// not http(s). Two URLs with one origin are one server.
std::optional<std::string> UrlOrigin(std::string_view url) {
  const std::optional<std::string> host = UrlHost(url);
  if (!host) return std::nullopt;
  const size_t scheme_end = url.find("://");
  std::string origin(url.substr(0, scheme_end + 3));
  std::string_view authority = url.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);
  }
  origin += authority;
  for (char& c : origin) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return origin;
}

// Only an address that is this machine by its form: a name such as "127.0.0.1.evil.test" starts
// like one and resolves anywhere (found by a fresh-user trial, which sent a key to one).
bool IsLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

bool IsOpenRouter(const std::string& host) {
  return host == "openrouter.ai" || host.ends_with(".openrouter.ai");
}

// A key goes into an HTTP header as is: a line break in it would end the header and start
// another one of the value's choosing.
bool HasControl(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
}

std::string KeyWithControlMessage(const std::string& where) {
  return "the API key from " + where +
         " contains a line break or another control character (a copy-paste slip?): set it "
         "again as one line";
}

}  // namespace

std::map<std::string, std::string> ReadDotEnv(const std::filesystem::path& path) {
  std::map<std::string, std::string> values;
  // A .env another account owns or may write would choose where this user's keys go (a
  // shared or world-writable directory): it is not read.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return values;
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    // Once per process: a command reads .env for the schema settings and again for the model.
    static std::atomic<bool> warned{false};
    if (warned.exchange(true)) return values;
    std::cerr << "quarry: ignoring " << path.string() << ": "
              << (st.st_uid != ::geteuid() ? "another user owns it" : "other users can write it")
              << ", so it could send your keys elsewhere; make it yours with mode 600 to use "
                 "it\n";
    return values;
  }
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::string_view rest = Trim(line);
    if (rest.empty() || rest.front() == '#') continue;
    if (rest.starts_with("export") && rest.size() > 6 &&
        std::isspace(static_cast<unsigned char>(rest[6]))) {
      rest = Trim(rest.substr(6));
    }
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = Trim(rest.substr(0, eq));
    std::optional<std::string> value = DotEnvValue(rest.substr(eq + 1));
    // A malformed line is skipped rather than fatal: .env files are shared with other tools.
    if (!IsEnvName(name) || !value) continue;
    values[std::string(name)] = *value;
  }
  return values;
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> DefaultModel(Provider provider, const std::string& base_url) {
  const std::optional<std::string> host = UrlHost(base_url);
  if (!host) return std::nullopt;
  switch (provider) {
    case Provider::kAnthropic:
      if (*host == kAnthropicHost) return kDefaultAnthropicModel;
      break;
    case Provider::kOpenRouter:
      if (IsOpenRouter(*host)) return kDefaultOpenRouterModel;
      break;
    case Provider::kOpenAiCompatible:
      if (*host == kOpenAiHost) return kDefaultOpenAiModel;
      break;
    case Provider::kReplay:
      break;
  }
  return std::nullopt;
}

bool IsLoopbackUrl(const std::string& base_url) {
  const std::optional<std::string> host = UrlHost(base_url);
  return host && IsLoopback(*host);
}

Result<ClientConfig> ResolveConfig(const Settings& flags, const GetEnv& getenv,
                                   const std::map<std::string, std::string>& dotenv,
                                   SettingOrigins* origins, const ConfigProfile* config_profile) {
  static const ConfigProfile kNoProfile;
  const ConfigProfile& profile = config_profile ? *config_profile : kNoProfile;
  // Each lookup also says where the value was found, for `quarry doctor`.
  auto lookup_at = [&](const char* name, std::string* where) -> std::optional<std::string> {
    if (std::optional<std::string> value = getenv(name); value && !value->empty()) {
      if (where) *where = name;
      return value;
    }
    auto it = dotenv.find(name);
    if (it != dotenv.end() && !it->second.empty()) {
      if (where) *where = std::string(name) + " in .env";
      return it->second;
    }
    if (auto p = profile.values.find(name); p != profile.values.end() && !p->second.empty()) {
      if (where) {
        auto key = profile.keys.find(name);
        *where = (key != profile.keys.end() ? key->second : std::string(name)) + " in profile \"" +
                 profile.name + "\" of " + profile.file;
      }
      return p->second;
    }
    return std::nullopt;
  };
  auto lookup = [&](const char* name) { return lookup_at(name, nullptr); };
  auto flag = [](const std::optional<std::string>& value) -> std::optional<std::string> {
    return value && !value->empty() ? value : std::nullopt;
  };
  SettingOrigins from;

  std::optional<std::string> provider_name = flag(flags.provider);
  if (provider_name) {
    from.provider = "--provider";
  } else {
    provider_name = lookup_at("QUARRY_PROVIDER", &from.provider);
  }
  // Whether a provider was chosen, and which: a plain pair, as g++ 12 reports an optional enum
  // read on these paths as maybe uninitialized (GCC bug 80635).
  bool chosen = false;
  Provider provider = Provider::kOpenAiCompatible;
  if (provider_name) {
    const std::optional<Provider> parsed = ParseProvider(*provider_name);
    chosen = parsed && *parsed != Provider::kReplay;
    if (chosen) provider = *parsed;
    if (!chosen) {
      return Fail(Error::Code::kUsage, "unknown provider \"" + *provider_name + "\" (" +
                                           from.provider +
                                           "): expected openai-compatible, openrouter or "
                                           "anthropic");
    }
  }

  std::string api_key_from;
  std::optional<std::string> api_key = flag(flags.api_key);
  if (api_key) {
    api_key_from = "--api-key";
  } else {
    api_key = lookup_at("QUARRY_API_KEY", &api_key_from);
  }
  std::string openrouter_from;
  std::string anthropic_from;
  std::string openai_from;
  const std::optional<std::string> openrouter_key =
      lookup_at("OPENROUTER_API_KEY", &openrouter_from);
  const std::optional<std::string> anthropic_key = lookup_at("ANTHROPIC_API_KEY", &anthropic_from);
  const std::optional<std::string> openai_key = lookup_at("OPENAI_API_KEY", &openai_from);
  // The base URLs the providers' own SDKs read. A host set here is that provider's host too,
  // so its key may go there (the user pointed that provider's variables at it).
  std::string anthropic_url_from;
  std::string openai_url_from;
  // Anthropic's SDKs take the URL without the API version and add /v1 to it; quarry's base
  // URL carries the version, as for the other providers.
  std::optional<std::string> anthropic_url = lookup_at("ANTHROPIC_BASE_URL", &anthropic_url_from);
  if (anthropic_url) {
    while (anthropic_url->ends_with('/')) anthropic_url->pop_back();
    if (!anthropic_url->ends_with("/v1")) *anthropic_url += "/v1";
  }
  const std::optional<std::string> openai_url = lookup_at("OPENAI_BASE_URL", &openai_url_from);
  // Only when the URL and the key were set in one place: a .env in the working directory that
  // names OPENAI_BASE_URL must not receive the environment's OPENAI_API_KEY (a trial's .env
  // sent the user's key to a server of its choosing).
  auto in_dotenv = [](const std::string& where) { return where.ends_with(" in .env"); };
  const bool anthropic_together = in_dotenv(anthropic_url_from) == in_dotenv(anthropic_from);
  const bool openai_together = in_dotenv(openai_url_from) == in_dotenv(openai_from);
  const std::optional<std::string> anthropic_own_origin =
      anthropic_url && anthropic_together ? UrlOrigin(*anthropic_url) : std::nullopt;
  const std::optional<std::string> openai_own_origin =
      openai_url && openai_together ? UrlOrigin(*openai_url) : std::nullopt;

  // The endpoint is one setting however it is named: a provider's own base URL variable in the
  // environment or ./.env comes before a profile's base_url (and the profile's provider), as
  // the environment comes before the file everywhere else. A trial's exported
  // ANTHROPIC_BASE_URL had been ignored for a profile's local server.
  auto in_profile = [](const std::string& where) {
    return where.find(" in profile \"") != std::string::npos;
  };
  const bool sdk_url_outside_profile = (anthropic_url && !in_profile(anthropic_url_from)) ||
                                       (openai_url && !in_profile(openai_url_from));
  std::string profile_url_from;
  const bool profile_endpoint_yields = !flag(flags.base_url) && sdk_url_outside_profile &&
                                       lookup_at("QUARRY_BASE_URL", &profile_url_from) &&
                                       in_profile(profile_url_from);
  if (profile_endpoint_yields && chosen && in_profile(from.provider)) {
    chosen = false;
    from.provider.clear();
  }

  std::optional<std::string> base_url = flag(flags.base_url);
  bool base_url_given = true;
  // The OpenAI SDK's variables choose OpenAI (or the server OPENAI_BASE_URL names).
  auto use_openai = [&](const std::string& why) {
    base_url = openai_url ? *openai_url : std::string(kOpenAiUrl);
    from.base_url = openai_url ? openai_url_from : "the default for OpenAI (" + why + ")";
    base_url_given = false;
  };
  if (base_url) {
    from.base_url = "--base-url";
  } else if (!profile_endpoint_yields &&
             (base_url = lookup_at("QUARRY_BASE_URL", &from.base_url))) {
  } else if (chosen && provider == Provider::kAnthropic && anthropic_url) {
    base_url = *anthropic_url;
    from.base_url = anthropic_url_from;
    base_url_given = false;
  } else if (chosen && (provider == Provider::kAnthropic || provider == Provider::kOpenRouter)) {
    base_url = provider == Provider::kAnthropic ? kAnthropicUrl : kOpenRouterUrl;
    from.base_url = "the default for " + std::string(ProviderName(provider));
    base_url_given = false;
  } else if (chosen && provider == Provider::kOpenAiCompatible && (openai_url || openai_key)) {
    use_openai(openai_url ? openai_url_from : openai_from + " is set");
  } else if (!chosen && openrouter_key) {
    base_url = kOpenRouterUrl;
    from.base_url = from.provider = openrouter_from + " is set";
    base_url_given = false;
  } else if (!chosen && anthropic_key && !api_key) {
    base_url = anthropic_url ? *anthropic_url : std::string(kAnthropicUrl);
    from.base_url = anthropic_url ? anthropic_url_from : anthropic_from + " is set";
    from.provider = anthropic_from + " is set";
    chosen = true;
    provider = Provider::kAnthropic;
    base_url_given = false;
  } else if (!chosen && (openai_key || openai_url) && !api_key) {
    const std::string why = openai_key ? openai_from + " is set" : openai_url_from + " is set";
    use_openai(why);
    from.provider = why;
    chosen = true;
    provider = Provider::kOpenAiCompatible;
  }
  if (!base_url) {
    if (chosen) {
      return Fail(Error::Code::kUsage, "provider " + std::string(ProviderName(provider)) + " (" +
                                           from.provider +
                                           ") needs a base URL: set QUARRY_BASE_URL (e.g. "
                                           "http://127.0.0.1:8080/v1) or pass --base-url");
    }
    if (api_key) {
      return Fail(
          Error::Code::kUsage,
          api_key_from +
              " is set but no endpoint is: set QUARRY_BASE_URL (e.g. "
              "https://api.openai.com/v1) or pass --base-url" +
              std::string(anthropic_key ? "; --provider anthropic uses ANTHROPIC_API_KEY" : "") +
              ", or use --offline");
    }
    return Fail(Error::Code::kUsage,
                "no model endpoint configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or "
                "OPENROUTER_API_KEY, or QUARRY_BASE_URL and QUARRY_MODEL (with QUARRY_API_KEY) "
                "for another endpoint; pass --base-url/--model, or use --offline");
  }
  // A control character or a space would reach libcurl and the trace as part of the URL: a
  // line break in it is a copy-paste slip, never an endpoint.
  if (std::any_of(base_url->begin(), base_url->end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7F; })) {
    return Fail(Error::Code::kUsage,
                "the base URL (" + from.base_url +
                    ") holds a space, a line break or another "
                    "control character (a copy-paste slip?): set it again as one line, e.g. "
                    "http://127.0.0.1:8080/v1");
  }
  if (base_url->find_first_of("?#") != std::string::npos) {
    return Fail(Error::Code::kUsage,
                "the base URL (" + from.base_url +
                    ") holds a '?' or '#': quarry adds the API's "
                    "path to it, so give the endpoint without a query or fragment (a key goes in "
                    "the environment, never in the URL)");
  }
  std::optional<std::string> host = UrlHost(*base_url);
  if (!host) {
    return Fail(Error::Code::kUsage, "invalid base URL \"" + RedactUrl(*base_url) +
                                         "\": expected http(s)://host[:port]/path, e.g. " +
                                         kOpenRouterUrl + " (QUARRY_BASE_URL or --base-url)");
  }

  ClientConfig config;
  config.base_url = *base_url;
  while (config.base_url.ends_with('/')) config.base_url.pop_back();
  if (!chosen) {
    provider = *host == kAnthropicHost ? Provider::kAnthropic
               : IsOpenRouter(*host)   ? Provider::kOpenRouter
                                       : Provider::kOpenAiCompatible;
    if (from.provider.empty()) from.provider = "chosen from the base URL's host";
  }
  config.provider = provider;

  // A provider's own key goes to that provider's host only: its public host, or the server
  // (scheme, host and port) its own base URL variable names. QUARRY_API_KEY belongs to the
  // base URL the user set; against a provider's default URL, the provider's own key comes first.
  const std::optional<std::string> origin = UrlOrigin(*base_url);
  const bool anthropic_host =
      *host == kAnthropicHost || (anthropic_own_origin && origin == anthropic_own_origin);
  const bool openai_host =
      *host == kOpenAiHost || (openai_own_origin && origin == openai_own_origin);
  const std::optional<std::string> host_key = anthropic_host        ? anthropic_key
                                              : IsOpenRouter(*host) ? openrouter_key
                                              : openai_host         ? openai_key
                                                                    : std::nullopt;
  const std::string host_key_from = anthropic_host        ? anthropic_from
                                    : IsOpenRouter(*host) ? openrouter_from
                                                          : openai_from;
  // A base URL that ./.env chose gets a key from that .env only (the same rule as for the
  // providers' own base URL variables above).
  std::string withheld;
  if (api_key && in_dotenv(from.base_url) && !in_dotenv(api_key_from)) {
    withheld = api_key_from;
    api_key.reset();
  }
  if (host_key && (!api_key || !base_url_given)) {
    api_key = host_key;
    from.api_key = host_key_from;
  } else if (api_key) {
    from.api_key = api_key_from;
  }
  if (!api_key && !withheld.empty() && !IsLoopback(*host)) {
    return Fail(Error::Code::kUsage,
                "no API key for " + RedactUrl(config.base_url) + ", which " + from.base_url +
                    " chose: a base URL from ./.env gets only a key from that .env, not " +
                    withheld +
                    " (a .env that came with a checkout would choose where your "
                    "key goes); put the key in that .env, or set the base URL yourself "
                    "(QUARRY_BASE_URL or --base-url)");
  }
  if (!api_key && !IsLoopback(*host)) {
    const std::string own = anthropic_host        ? "ANTHROPIC_API_KEY or "
                            : IsOpenRouter(*host) ? "OPENROUTER_API_KEY or "
                            : openai_host         ? "OPENAI_API_KEY or "
                                                  : "";
    return Fail(Error::Code::kUsage, "no API key for " + RedactUrl(config.base_url) + ": set " +
                                         own +
                                         "QUARRY_API_KEY in the environment or .env, or use "
                                         "--offline");
  }
  if (!api_key) from.api_key = "none (a loopback endpoint needs none)";
  // A key in clear text crosses every network between here and the host: only over https,
  // or to this machine.
  if (api_key && !IsLoopback(*host) && UrlOrigin(*base_url).value_or("").starts_with("http://")) {
    return Fail(Error::Code::kUsage, "refusing to send " + from.api_key + " over plain http to " +
                                         *host + " (" + from.base_url + "): use https://");
  }
  config.api_key = api_key.value_or("");
  if (HasControl(config.api_key)) {
    return Fail(Error::Code::kUsage, KeyWithControlMessage(from.api_key));
  }

  std::optional<std::string> model = flag(flags.model);
  if (model) {
    from.model = "--model";
  } else if ((model = lookup_at("QUARRY_MODEL", &from.model))) {
  } else if ((model = DefaultModel(config.provider, config.base_url))) {
    from.model = "the default for " + std::string(ProviderName(config.provider));
  } else if (!IsLoopback(*host)) {
    return Fail(Error::Code::kUsage, "no model configured for " + RedactUrl(config.base_url) +
                                         ": set QUARRY_MODEL or pass --model");
  }
  config.model = model.value_or("");

  config.stream = flags.stream;
  std::string stream_from;
  if (std::optional<std::string> stream = lookup_at("QUARRY_STREAM", &stream_from)) {
    std::string value(Trim(*stream));
    for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (value == "0" || value == "false" || value == "no" || value == "off") {
      config.stream = false;
    } else if (value != "1" && value != "true" && value != "yes" && value != "on") {
      return Fail(Error::Code::kUsage, stream_from + " \"" + *stream +
                                           "\": expected false (or 0, no, off) to turn "
                                           "streaming off, or true");
    }
  }
  if (Result<void> request = ResolveRequestSettings(flags, lookup_at, config); !request) {
    return std::unexpected(request.error());
  }

  if (std::optional<std::string> prices = lookup("QUARRY_PRICES")) {
    if (Result<void> merged = config.prices.MergeFile(*prices); !merged) {
      return Fail(merged.error().code, merged.error().message + " (QUARRY_PRICES)");
    }
  }
  if (origins) *origins = std::move(from);
  return config;
}

bool IsOpenAiReasoningModel(const std::string& model) {
  std::string name = model;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.starts_with("openai/")) name = name.substr(7);
  if (name.starts_with("gpt-5")) return true;
  // o1, o1-mini, o3, o3-mini, o4-mini, ...: "o", a digit, then the end or a dash.
  return name.size() >= 2 && name[0] == 'o' && std::isdigit(static_cast<unsigned char>(name[1])) &&
         (name.size() == 2 || name[2] == '-');
}

std::optional<std::string> LookupSetting(const char* name, const GetEnv& getenv,
                                         const std::map<std::string, std::string>& dotenv) {
  if (std::optional<std::string> value = getenv(name); value && !value->empty()) return value;
  auto it = dotenv.find(name);
  if (it != dotenv.end() && !it->second.empty()) return it->second;
  return std::nullopt;
}

Result<std::optional<EmbeddingsConfig>> ResolveEmbeddingsConfig(
    const GetEnv& getenv, const std::map<std::string, std::string>& dotenv) {
  std::optional<std::string> url = LookupSetting("QUARRY_EMBEDDINGS_URL", getenv, dotenv);
  if (!url) return std::optional<EmbeddingsConfig>();
  std::optional<std::string> host = UrlHost(*url);
  if (!host) {
    return Fail(Error::Code::kUsage, "invalid QUARRY_EMBEDDINGS_URL \"" + *url +
                                         "\": expected http(s)://host[:port]/path, e.g. "
                                         "http://127.0.0.1:8080/v1");
  }
  EmbeddingsConfig config;
  config.url = *url;
  while (config.url.ends_with('/')) config.url.pop_back();
  if (!config.url.ends_with("/embeddings")) config.url += "/embeddings";
  config.model = LookupSetting("QUARRY_EMBEDDINGS_MODEL", getenv, dotenv).value_or("");
  if (auto key = LookupSetting("QUARRY_EMBEDDINGS_API_KEY", getenv, dotenv)) {
    config.api_key = *key;
  } else if (auto model_key = LookupSetting("QUARRY_API_KEY", getenv, dotenv)) {
    // The model's key goes only to the model's own host.
    const std::optional<std::string> base = LookupSetting("QUARRY_BASE_URL", getenv, dotenv);
    const std::optional<std::string> base_host = base ? UrlHost(*base) : std::nullopt;
    if (base_host && *base_host == *host) config.api_key = *model_key;
  }
  if (HasControl(config.api_key)) {
    return Fail(Error::Code::kUsage,
                KeyWithControlMessage("QUARRY_EMBEDDINGS_API_KEY or QUARRY_API_KEY"));
  }
  return std::optional<EmbeddingsConfig>(std::move(config));
}

std::string RedactUrl(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const size_t host_start = scheme_end + 3;
  const size_t authority_end = url.find_first_of("/?#", host_start);
  const std::string_view authority = url.substr(host_start, authority_end - host_start);
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, host_start)) + "***" + std::string(url.substr(host_start + at));
}

std::string MaskSecret(const std::string& secret) {
  if (secret.empty()) return "";
  // Eight characters of a short key are most of it; and a byte cut out of a multi-byte
  // character would put invalid UTF-8 into the message.
  const bool printable =
      std::all_of(secret.begin(), secret.end(), [](char c) { return c > 0x20 && c < 0x7F; });
  if (secret.size() < 20 || !printable) return "****";
  return secret.substr(0, 4) + "..." + secret.substr(secret.size() - 4);
}

}  // namespace quarry::llm
