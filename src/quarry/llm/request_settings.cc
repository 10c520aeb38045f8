// Reading and checking a live client's request settings (settings_internal.h).
#include <cctype>
#include <charconv>

#include "quarry/common/text.h"
#include "quarry/llm/settings_internal.h"

namespace quarry::llm {
namespace {

// A whole number or decimal within [low, high]; nullopt for anything else ("1e3", "12s", "").
std::optional<double> ParseNumber(const std::string& text, double low, double high) {
  std::string_view s = Trim(text);
  if (s.empty()) return std::nullopt;
  double value = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::fixed);
  if (ec != std::errc() || end != s.data() + s.size() || !(value >= low && value <= high)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

Result<void> ResolveRequestSettings(
    const Settings& flags,
    const std::function<std::optional<std::string>(const char*, std::string*)>& lookup_at,
    ClientConfig& config) {
  auto pick = [&](const std::optional<std::string>& flag, const char* variable,
                  std::string& where) -> std::optional<std::string> {
    if (flag && !flag->empty()) {
      where = "--" + std::string(variable + 7);  // QUARRY_MAX_TOKENS -> --MAX_TOKENS
      for (char& c : where) c = c == '_' ? '-' : static_cast<char>(std::tolower(c));
      return flag;
    }
    where = variable;
    return lookup_at(variable, &where);
  };
  std::string where;
  if (auto text = pick(flags.request_timeout, "QUARRY_REQUEST_TIMEOUT", where)) {
    std::optional<double> seconds = ParseNumber(*text, 0.1, 86400.0);
    if (!seconds) {
      return Fail(Error::Code::kUsage,
                  where + " \"" + *text + "\": expected seconds from 0.1 to 86400, e.g. 300");
    }
    config.request_timeout_ms = static_cast<int64_t>(*seconds * 1000.0 + 0.5);
  }
  if (auto text = pick(flags.max_tokens, "QUARRY_MAX_TOKENS", where)) {
    std::optional<double> tokens = ParseNumber(*text, 1.0, 1e6);
    if (!tokens || *tokens != static_cast<double>(static_cast<int>(*tokens))) {
      return Fail(Error::Code::kUsage, where + " \"" + *text +
                                           "\": expected a whole number of tokens from 1 to "
                                           "1000000, e.g. 4096");
    }
    config.max_output_tokens = static_cast<int>(*tokens);
  }
  const bool reasoning = IsOpenAiReasoningModel(config.model);
  if (auto text = pick(flags.temperature, "QUARRY_TEMPERATURE", where)) {
    if (Trim(*text) == "default") {
      config.temperature = std::nullopt;
    } else if (std::optional<double> t = ParseNumber(*text, 0.0, 2.0)) {
      config.temperature = *t;
    } else {
      return Fail(
          Error::Code::kUsage,
          where + " \"" + *text + "\": expected a number from 0 to 2, or \"default\" to send none");
    }
  } else {
    config.temperature = reasoning ? std::nullopt : std::optional<double>(0.0);
  }
  std::string param = "auto";
  if (auto text = pick(flags.max_tokens_param, "QUARRY_MAX_TOKENS_PARAM", where)) {
    param = std::string(Trim(*text));
    if (param != "auto" && param != "max_tokens" && param != "max_completion_tokens") {
      return Fail(Error::Code::kUsage,
                  where + " \"" + *text + "\": expected auto, max_tokens or max_completion_tokens");
    }
  }
  if (param == "auto") param = reasoning ? "max_completion_tokens" : "max_tokens";
  config.max_tokens_param = param;
  return {};
}

}  // namespace quarry::llm
