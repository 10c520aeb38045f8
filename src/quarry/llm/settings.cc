// Where a live client's settings come from: flags, then the environment, then .env. Also the
// secret masking used wherever a key might otherwise be shown.
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "quarry/llm/llm.h"

namespace quarry::llm {
namespace {

constexpr const char* kOpenRouterUrl = "https://openrouter.ai/api/v1";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

bool IsOpenRouter(const std::string& host) {
  return host == "openrouter.ai" || host.ends_with(".openrouter.ai");
}

}  // namespace

std::map<std::string, std::string> ReadDotEnv(const std::filesystem::path& path) {
  std::map<std::string, std::string> values;
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

Result<ClientConfig> ResolveConfig(const Settings& flags, const GetEnv& getenv,
                                   const std::map<std::string, std::string>& dotenv) {
  auto lookup = [&](const char* name) -> std::optional<std::string> {
    if (std::optional<std::string> value = getenv(name); value && !value->empty()) return value;
    auto it = dotenv.find(name);
    if (it != dotenv.end() && !it->second.empty()) return it->second;
    return std::nullopt;
  };
  auto flag = [](const std::optional<std::string>& value) -> std::optional<std::string> {
    return value && !value->empty() ? value : std::nullopt;
  };

  std::optional<std::string> base_url = flag(flags.base_url);
  if (!base_url) base_url = lookup("QUARRY_BASE_URL");
  std::optional<std::string> model = flag(flags.model);
  if (!model) model = lookup("QUARRY_MODEL");
  std::optional<std::string> api_key = flag(flags.api_key);
  if (!api_key) api_key = lookup("QUARRY_API_KEY");
  std::optional<std::string> openrouter_key = lookup("OPENROUTER_API_KEY");
  if (!base_url && openrouter_key) base_url = kOpenRouterUrl;

  if (!model) {
    return Fail(Error::Code::kUsage,
                "no model configured: set QUARRY_MODEL and QUARRY_API_KEY (or "
                "OPENROUTER_API_KEY), pass --model/--base-url, or use --offline");
  }
  if (!base_url) {
    return Fail(Error::Code::kUsage,
                "no model endpoint configured: set QUARRY_BASE_URL and QUARRY_API_KEY (or "
                "OPENROUTER_API_KEY), pass --base-url, or use --offline");
  }
  std::optional<std::string> host = UrlHost(*base_url);
  if (!host) {
    return Fail(Error::Code::kUsage, "invalid base URL \"" + *base_url +
                                         "\": expected http(s)://host[:port]/path, e.g. " +
                                         kOpenRouterUrl + " (QUARRY_BASE_URL or --base-url)");
  }

  ClientConfig config;
  config.base_url = *base_url;
  while (config.base_url.ends_with('/')) config.base_url.pop_back();
  config.model = *model;
  config.provider = IsOpenRouter(*host) ? "openrouter" : "openai-compatible";
  // The OpenRouter key goes to OpenRouter only, never to whatever other endpoint is set.
  if (!api_key && config.provider == "openrouter") api_key = openrouter_key;
  if (!api_key && !IsLoopback(*host)) {
    return Fail(Error::Code::kUsage,
                "no API key for " + config.base_url + ": set QUARRY_API_KEY" +
                    (config.provider == "openrouter" ? " or OPENROUTER_API_KEY" : "") +
                    " in the environment or .env, or use --offline");
  }
  config.api_key = api_key.value_or("");

  if (std::optional<std::string> prices = lookup("QUARRY_PRICES")) {
    if (Result<void> merged = config.prices.MergeFile(*prices); !merged) {
      return Fail(merged.error().code, merged.error().message + " (QUARRY_PRICES)");
    }
  }
  return config;
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
  return std::optional<EmbeddingsConfig>(std::move(config));
}

std::string MaskSecret(const std::string& secret) {
  if (secret.empty()) return "";
  if (secret.size() < 12) return "****";
  return secret.substr(0, 4) + "..." + secret.substr(secret.size() - 4);
}

}  // namespace quarry::llm
