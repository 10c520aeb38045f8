// The user's config file: named profiles of model settings (model, provider, base URL, key),
// read below the command line, the environment and ./.env. TOML, parsed with toml++.
//
//   default_profile = "local"
//
//   [profiles.local]
//   base_url = "http://127.0.0.1:8080/v1"
//   model = "qwen2.5-coder-7b"
//
//   [profiles.claude]
//   provider = "anthropic"
//   model = "claude-sonnet-4-5"
//   api_key_env = "WORK_ANTHROPIC_KEY"   # the variable that holds the key
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "quarry/common/common.h"
#include "quarry/llm/llm.h"

namespace quarry::llm {

// QUARRY_CONFIG, else $XDG_CONFIG_HOME/quarry/config.toml, else
// $HOME/.config/quarry/config.toml; nullopt without any of those variables.
std::optional<std::filesystem::path> ConfigFilePath(const GetEnv& getenv);

// A profile's keys and the variable each stands for, in the file's order of documentation.
struct ProfileKey {
  const char* key;       // "model"
  const char* variable;  // "QUARRY_MODEL"
  const char* meaning;   // for the error naming the allowed keys and for docs
};
const std::vector<ProfileKey>& ProfileKeys();

// The profile a command uses. The profile is `requested` (--profile), else QUARRY_PROFILE,
// else the file's default_profile, else one named "default", else none (an empty `values`).
// Keys: those of ProfileKeys(); `api_key` only in a file no other user can read (mode 600),
// `api_key_env` names the variable that holds the key (read from the environment now).
// No file is no profile, unless one was requested by name. Errors, kUsage, each naming the
// file: a TOML syntax error (with its line and column); a requested profile the file lacks
// (naming those it has); an unknown key (naming the allowed ones) or a value of the wrong
// type; an api_key in a file others can read; api_key_env naming an unset variable; a file
// another user owns or others may write (it could send the user's keys elsewhere).
Result<ConfigProfile> ReadConfigProfile(const GetEnv& getenv,
                                        const std::optional<std::string>& requested);

// ./.env and the config profile together, as ResolveConfig reads them.
Result<SettingFiles> ReadSettingFiles(const GetEnv& getenv,
                                      const std::optional<std::string>& profile);

}  // namespace quarry::llm
