// The schema settings shared by ask, schema and mcp: the budget, --no-samples and the
// embeddings endpoint, each from a flag, the environment or .env (the model's order).
#include <cctype>
#include <charconv>
#include <string_view>

#include "quarry/cli/commands.h"

namespace quarry::cli {
namespace {

constexpr int64_t kMinBudget = 100;
constexpr int64_t kMaxBudget = 1'000'000;

}  // namespace

Result<agent::SchemaOptions> ResolveSchemaOptions(std::optional<int64_t> budget_flag,
                                                  bool no_samples_flag, bool embeddings) {
  const auto dotenv = llm::ReadDotEnv(".env");
  agent::SchemaOptions options;
  if (budget_flag) {
    options.budget_tokens = *budget_flag;
  } else if (auto text = llm::LookupSetting("QUARRY_SCHEMA_BUDGET", llm::ProcessEnv, dotenv)) {
    // Spaces around the number are ignored, as the flag's parser ignores them.
    std::string_view number = *text;
    while (!number.empty() && std::isspace(static_cast<unsigned char>(number.front())))
      number.remove_prefix(1);
    while (!number.empty() && std::isspace(static_cast<unsigned char>(number.back())))
      number.remove_suffix(1);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
        value < kMinBudget || value > kMaxBudget) {
      return Fail(Error::Code::kUsage,
                  "QUARRY_SCHEMA_BUDGET must be a whole number of tokens from " +
                      std::to_string(kMinBudget) + " to " + std::to_string(kMaxBudget) + ", got '" +
                      text->substr(0, 40) + "'");
    }
    options.budget_tokens = value;
  }
  if (no_samples_flag) {
    options.samples = false;
  } else if (auto text = llm::LookupSetting("QUARRY_NO_SAMPLES", llm::ProcessEnv, dotenv)) {
    std::string v = *text;
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "1" || v == "true" || v == "yes") {
      options.samples = false;
    } else if (v != "0" && v != "false" && v != "no") {
      return Fail(Error::Code::kUsage, "QUARRY_NO_SAMPLES must be 1/true/yes or 0/false/no, got '" +
                                           text->substr(0, 40) + "'");
    }
  }
  if (embeddings) {
    auto config = llm::ResolveEmbeddingsConfig(llm::ProcessEnv, dotenv);
    if (!config) return std::unexpected(config.error());
    options.embeddings = std::move(*config);
  }
  return options;
}

}  // namespace quarry::cli
