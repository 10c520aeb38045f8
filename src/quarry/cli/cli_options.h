// Validators the subcommands' flags share (CLI11).
#pragma once

#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "quarry/llm/llm.h"

namespace quarry::cli {

// A cost in USD: a finite number from 0 to 1,000,000. CLI11's Range lets "nan" through (every
// comparison with NaN is false), and a NaN budget would never stop anything.
inline CLI::Validator UsdAmount() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0 ||
            v > 1e6) {
          return "a cost in USD is a number from 0 to 1000000, not " + text;
        }
        return "";
      },
      "USD");
}

// A provider a live run can use: openai-compatible, openrouter or anthropic. Checked when the
// flag is read, so a misspelt name (or an empty one) is a usage error at once, also for `mcp`,
// whose client is made only at the first ask_database call.
inline CLI::Validator ProviderFlag() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto p = llm::ParseProvider(text);
        if (p && *p != llm::Provider::kReplay) return "";
        return "unknown provider \"" + text +
               "\": expected openai-compatible, openrouter or anthropic";
      },
      "PROVIDER");
}

}  // namespace quarry::cli
