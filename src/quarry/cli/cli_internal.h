// Shared by the CLI's subcommand files.
#pragma once

#include <filesystem>
#include <string>

#include "quarry/common/common.h"

namespace quarry::cli {

enum class Format { kText, kJson };

// Whether stderr gets colour: a terminal, and NO_COLOR unset (https://no-color.org).
bool UseColor();
std::string Paint(const std::string& text, const char* ansi);

// Prints "quarry: <message>" on stderr and returns the exit code for the error's kind.
int Report(const Error& error);

}  // namespace quarry::cli
