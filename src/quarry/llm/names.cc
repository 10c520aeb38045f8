// The llm vocabulary's names, both ways: providers and finish reasons (llm.h).
#include "quarry/common/names.h"
#include "quarry/llm/llm.h"

namespace quarry::llm {
namespace {

constexpr NamePair<Provider> kProviderNames[] = {
    {Provider::kOpenAiCompatible, "openai-compatible"},
    {Provider::kOpenRouter, "openrouter"},
    {Provider::kAnthropic, "anthropic"},
    {Provider::kReplay, "replay"},
};

constexpr NamePair<FinishReason> kFinishReasonNames[] = {
    {FinishReason::kNone, ""},
    {FinishReason::kStop, "stop"},
    {FinishReason::kToolCalls, "tool_calls"},
    {FinishReason::kLength, "length"},
    {FinishReason::kContentFilter, "content_filter"},
    {FinishReason::kError, "error"},
    {FinishReason::kOther, "other"},
};

}  // namespace

std::string_view ProviderName(Provider provider) { return NameOf(kProviderNames, provider); }
std::optional<Provider> ParseProvider(std::string_view name) {
  return ValueOf(kProviderNames, name);
}

std::string_view FinishReasonName(FinishReason reason) {
  return NameOf(kFinishReasonNames, reason);
}
FinishReason ParseFinishReason(std::string_view name) {
  return ValueOf(kFinishReasonNames, name).value_or(FinishReason::kOther);
}

}  // namespace quarry::llm
