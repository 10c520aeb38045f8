// The man page and the shell completions, generated from the CLI's own definitions (the
// CLI::App that Main builds), so neither can drift from the flags. `quarry generate
// man|bash|zsh|fish` prints them; the build writes them for `cmake --install` and the package.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace quarry::cli {

// quarry.1 in roff (man(7)): every subcommand with its description, positionals and options,
// the exit codes of cli.h, the model variables, and where the docs are. `version` goes in the
// page's header ("quarry 0.1.0").
std::string ManPage(const CLI::App& app, const std::string& version);

// A completion script for `shell` ("bash", "zsh" or "fish"): subcommands, each one's options,
// the values of options that take one of a fixed set (--format text|json), and file names
// elsewhere. Empty for another shell.
std::string Completion(const CLI::App& app, const std::string& shell);

}  // namespace quarry::cli
