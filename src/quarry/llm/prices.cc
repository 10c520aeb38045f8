// The price table that turns token usage into USD when the provider does not report a cost:
// a few built-in entries plus a user file (QUARRY_PRICES) that extends or overrides them.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "quarry/common/read_file.h"
#include "quarry/llm/llm.h"
#include "quarry/common/json.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;

// Optional price field: absent -> fallback; present -> a finite non-negative number.
Result<double> PriceField(const json& entry, const char* key, std::optional<double> fallback,
                          const std::string& where) {
  auto it = entry.find(key);
  if (it == entry.end()) {
    if (fallback) return *fallback;
    return Fail(Error::Code::kData, where + ": missing \"" + key + "\" (USD per million tokens)");
  }
  if (!it->is_number() || !(it->get<double>() >= 0.0) || it->get<double>() > 1e9) {
    return Fail(Error::Code::kData,
                where + ": \"" + key + "\" must be a non-negative number (USD per million tokens)");
  }
  return it->get<double>();
}

}  // namespace

PriceTable PriceTable::BuiltIn() {
  // USD per million tokens (input, output, cache read, cache write), list prices as of late
  // 2025. Stale entries only affect the estimate shown when the provider reports no cost
  // itself. OpenAI charges nothing extra to write its cache; Anthropic's 5-minute writes cost
  // 1.25x the input price.
  PriceTable table;
  const Price gpt_4o_mini{0.15, 0.60, 0.075, 0.15};
  const Price gpt_4_1_mini{0.40, 1.60, 0.10, 0.40};
  const Price gpt_4o{2.50, 10.00, 1.25, 2.50};
  const Price gpt_4_1{2.00, 8.00, 0.50, 2.00};
  table.Set("openai/gpt-4o-mini", gpt_4o_mini);
  table.Set("gpt-4o-mini", gpt_4o_mini);
  table.Set("openai/gpt-4.1-mini", gpt_4_1_mini);
  table.Set("gpt-4.1-mini", gpt_4_1_mini);
  table.Set("openai/gpt-4o", gpt_4o);
  table.Set("gpt-4o", gpt_4o);
  table.Set("openai/gpt-4.1", gpt_4_1);
  table.Set("gpt-4.1", gpt_4_1);
  const Price sonnet{3.00, 15.00, 0.30, 3.75};
  const Price haiku{1.00, 5.00, 0.10, 1.25};
  const Price opus{5.00, 25.00, 0.50, 6.25};
  table.Set("anthropic/claude-sonnet-4.5", sonnet);
  table.Set("claude-sonnet-4-5", sonnet);
  table.Set("claude-sonnet-4-5-20250929", sonnet);
  table.Set("anthropic/claude-haiku-4.5", haiku);
  table.Set("claude-haiku-4-5", haiku);
  table.Set("claude-haiku-4-5-20251001", haiku);
  table.Set("anthropic/claude-opus-4.5", opus);
  table.Set("claude-opus-4-5", opus);
  table.Set("claude-opus-4-5-20251101", opus);
  return table;
}

Result<void> PriceTable::MergeFile(const std::filesystem::path& path) {
  const std::string name = "price file " + path.string();
  const Result<std::string> text = ReadFileText(path, "price file");
  if (!text) return std::unexpected(text.error());
  json doc = ParseJson(*text);
  if (doc.is_discarded()) return Fail(Error::Code::kData, name + ": not valid JSON");
  if (!doc.is_object()) {
    return Fail(Error::Code::kData,
                name + ": expected an object {\"model-id\": {\"input\": .., \"output\": ..}}");
  }
  // Validate everything before changing anything, so a bad file leaves the table as it was.
  std::map<std::string, Price> parsed;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string where = name + ": entry \"" + it.key() + "\"";
    if (!it->is_object()) return Fail(Error::Code::kData, where + ": expected an object");
    Result<double> input = PriceField(*it, "input", std::nullopt, where);
    if (!input) return std::unexpected(input.error());
    Result<double> output = PriceField(*it, "output", std::nullopt, where);
    if (!output) return std::unexpected(output.error());
    // Without a cache price, cached tokens cost what any input token costs.
    Result<double> cached = PriceField(*it, "cached_input", *input, where);
    if (!cached) return std::unexpected(cached.error());
    Result<double> write = PriceField(*it, "cache_write", *input, where);
    if (!write) return std::unexpected(write.error());
    parsed[it.key()] = Price{*input, *output, *cached, *write};
  }
  for (auto& [model, price] : parsed) prices_[model] = price;
  return {};
}

std::optional<Price> PriceTable::Find(const std::string& model) const {
  auto it = prices_.find(model);
  if (it == prices_.end()) return std::nullopt;
  return it->second;
}

namespace {

// USD of `usage` at `price`; with `uncached`, every input token at the input price.
double CostAt(const Price& price, const Usage& usage, bool uncached) {
  const int64_t input = std::max<int64_t>(usage.input_tokens, 0);
  const int64_t cached = std::clamp<int64_t>(usage.cached_tokens, 0, input);
  const int64_t written = std::clamp<int64_t>(usage.cache_write_tokens, 0, input - cached);
  const double output =
      static_cast<double>(std::max<int64_t>(usage.output_tokens, 0)) * price.output_per_mtok;
  if (uncached) return (static_cast<double>(input) * price.input_per_mtok + output) / 1e6;
  return (static_cast<double>(input - cached - written) * price.input_per_mtok +
          static_cast<double>(cached) * price.cached_input_per_mtok +
          static_cast<double>(written) * price.cache_write_per_mtok + output) /
         1e6;
}

}  // namespace

std::optional<double> PriceTable::Cost(const std::string& model, const Usage& usage) const {
  std::optional<Price> price = Find(model);
  if (!price) return std::nullopt;
  return CostAt(*price, usage, false);
}

std::optional<double> PriceTable::CacheSavings(const std::string& model, const Usage& usage) const {
  std::optional<Price> price = Find(model);
  if (!price) return std::nullopt;
  return CostAt(*price, usage, true) - CostAt(*price, usage, false);
}

}  // namespace quarry::llm
