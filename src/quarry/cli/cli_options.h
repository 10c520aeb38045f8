// Validators the subcommands' flags share (CLI11).
#pragma once

#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

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

}  // namespace quarry::cli
