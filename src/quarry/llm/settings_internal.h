// The request settings of a live client (timeout, max tokens, temperature, the max-tokens
// parameter's name): shared by settings.cc, which finds where each value came from, and
// request_settings.cc, which reads and checks them. Only the llm module includes it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "quarry/llm/llm.h"

namespace quarry::llm {

// The request settings: flag, else the variable `lookup_at` finds, else the default. `lookup_at`
// sets its second argument to where a value came from ("QUARRY_MAX_TOKENS in .env",
// "max_tokens in profile ..."), which the error for a bad value names. Errors: kUsage, naming
// the value, where it came from and what is expected.
Result<void> ResolveRequestSettings(
    const Settings& flags,
    const std::function<std::optional<std::string>(const char*, std::string*)>& lookup_at,
    ClientConfig& config);

}  // namespace quarry::llm
