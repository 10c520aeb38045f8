// The config file's profiles (config_file.h). The file is the user's own: one another account
// owns or may write is refused, as ./.env is ignored, since it would choose where the user's
// keys go; a key written in it needs a file only its owner can read.
#include "quarry/llm/config_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <toml++/toml.h>

namespace quarry::llm {
namespace {

Result<ConfigProfile> Refuse(const std::string& file, const std::string& why) {
  return std::unexpected(Error{Error::Code::kUsage, file + ": " + why});
}

// "/home/ana/.config/quarry/config.toml" -> "~/.config/quarry/config.toml".
std::string Shown(const std::filesystem::path& path, const GetEnv& getenv) {
  const std::string text = path.string();
  if (std::optional<std::string> home = getenv("HOME"); home && !home->empty() && *home != "/") {
    std::string prefix = *home;
    if (!prefix.ends_with('/')) prefix += '/';
    if (text.starts_with(prefix)) return "~/" + text.substr(prefix.size());
  }
  return text;
}

std::string AllowedKeys() {
  std::string keys;
  for (const ProfileKey& k : ProfileKeys()) keys += (keys.empty() ? "" : ", ") + std::string(k.key);
  return keys + ", api_key_env";
}

// A value as the variable it stands for would hold it: strings as they are, numbers and
// booleans written out ("0.5", "false").
std::optional<std::string> AsSetting(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) {
    // Fixed notation, the shortest that reads back the same: 1e-5 is "0.00001".
    char buf[400];
    const auto r = std::to_chars(buf, buf + sizeof buf, f->get(), std::chars_format::fixed);
    if (r.ec != std::errc()) return std::nullopt;
    return std::string(buf, r.ptr);
  }
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::nullopt;
}

// A config file is a few hundred bytes; past this it is no config file.
constexpr size_t kMaxConfigBytes = 1 << 20;
// Key paths deeper than this are refused before parsing: toml++ recurses once per level of a
// dotted key or table header, and 40,000 of them overflowed the stack.
constexpr size_t kMaxKeyDepth = 32;

// The deepest dotted key or table header of `text`, counting dots outside quotes before a
// line's '=' (or inside its [header]). Multi-line strings may be miscounted, only upwards.
size_t KeyDepth(std::string_view text) {
  size_t deepest = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    size_t dots = 0;
    char quote = 0;
    bool header = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quote) {
        if (c == '\\' && quote == '"')
          ++i;
        else if (c == quote)
          quote = 0;
        continue;
      }
      if (c == '"' || c == '\'')
        quote = c;
      else if (c == '#')
        break;
      else if (c == '[' && i == line.find_first_not_of(" \t"))
        header = true;
      else if (c == '.')
        ++dots;
      else if ((c == '=' && !header) || (c == ']' && header))
        break;
    }
    deepest = std::max(deepest, dots + 1);
  }
  return deepest;
}

bool Printable(std::string_view name) {
  return !name.empty() && std::none_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

bool IsVariableName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

const std::vector<ProfileKey>& ProfileKeys() {
  static const std::vector<ProfileKey> keys = {
      {"provider", "QUARRY_PROVIDER", "openai-compatible, openrouter or anthropic"},
      {"base_url", "QUARRY_BASE_URL", "the API's base URL, e.g. http://127.0.0.1:8080/v1"},
      {"model", "QUARRY_MODEL", "the model id"},
      {"api_key", "QUARRY_API_KEY", "the key itself (only in a file of mode 600)"},
      {"request_timeout", "QUARRY_REQUEST_TIMEOUT", "seconds per model request"},
      {"max_tokens", "QUARRY_MAX_TOKENS", "the reply's token cap"},
      {"temperature", "QUARRY_TEMPERATURE", "0 to 2, or \"default\""},
      {"max_tokens_param", "QUARRY_MAX_TOKENS_PARAM", "auto, max_tokens or max_completion_tokens"},
      {"stream", "QUARRY_STREAM", "false turns streaming off"},
  };
  return keys;
}

std::optional<std::filesystem::path> ConfigFilePath(const GetEnv& getenv) {
  auto set = [&](const char* name) -> std::optional<std::string> {
    std::optional<std::string> value = getenv(name);
    return value && !value->empty() ? value : std::nullopt;
  };
  if (auto path = set("QUARRY_CONFIG")) return std::filesystem::path(*path);
  // The XDG spec: a relative XDG_CONFIG_HOME is invalid and ignored.
  if (auto xdg = set("XDG_CONFIG_HOME"); xdg && xdg->starts_with('/')) {
    return std::filesystem::path(*xdg) / "quarry" / "config.toml";
  }
  if (auto home = set("HOME")) return std::filesystem::path(*home) / ".config/quarry/config.toml";
  return std::nullopt;
}

Result<ConfigProfile> ReadConfigProfile(const GetEnv& getenv,
                                        const std::optional<std::string>& requested) {
  ConfigProfile profile;
  std::optional<std::string> wanted;
  if (requested) {
    wanted = requested;
    profile.chosen_by = "--profile";
  } else if (std::optional<std::string> env = getenv("QUARRY_PROFILE"); env && !env->empty()) {
    wanted = env;
    profile.chosen_by = "QUARRY_PROFILE";
  }
  if (wanted && !Printable(*wanted)) {
    return std::unexpected(
        Error{Error::Code::kUsage, profile.chosen_by + " names no profile: give a profile's name "
                                                       "(no control characters)"});
  }
  const std::optional<std::filesystem::path> path = ConfigFilePath(getenv);
  const std::string file = path ? Shown(*path, getenv) : "the config file";
  profile.file = file;
  struct stat st {};
  const bool named = getenv("QUARRY_CONFIG").value_or("") != "";
  if (!path || ::stat(path->c_str(), &st) != 0) {
    const int err = errno;
    if (path && (named || err != ENOENT)) {
      // A file the user named, or one that is there but cannot be reached, is no "no file".
      return Refuse(file, std::string(err == ENOENT ? "no such file" : std::strerror(err)) +
                              (named ? " (QUARRY_CONFIG names it): fix QUARRY_CONFIG or unset it"
                                     : ": make it readable, or move it away"));
    }
    if (wanted) {
      return Refuse(file, "no such file, so there is no profile \"" + *wanted + "\" (" +
                              profile.chosen_by + "); create it (docs/models.md) or unset " +
                              profile.chosen_by);
    }
    return ConfigProfile{};
  }
  if (!S_ISREG(st.st_mode)) return Refuse(file, "not a regular file");
  if (st.st_uid != ::geteuid()) {
    return Refuse(file,
                  "another user owns it, and it would choose where your keys go: make it "
                  "yours (or set QUARRY_CONFIG to your own)");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Refuse(file,
                  "other users can write it, and it would choose where your keys go: "
                  "chmod go-w " +
                      path->string());
  }

  if (static_cast<size_t>(st.st_size) > kMaxConfigBytes) {
    return Refuse(file, "over 1 MiB, which no config file needs: is it the file you meant?");
  }
  std::ifstream in(*path, std::ios::binary);
  if (!in) {
    return Refuse(file, std::string("cannot read it (") + std::strerror(errno) + "): chmod u+r " +
                            path->string());
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (KeyDepth(text) > kMaxKeyDepth) {
    return Refuse(file, "a key or table nested deeper than " + std::to_string(kMaxKeyDepth) +
                            " levels: a profile needs two ([profiles.NAME])");
  }
  toml::table root;
  try {
    root = toml::parse(text, path->string());
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return Refuse(file, "not valid TOML at line " + std::to_string(where.line) + ", column " +
                            std::to_string(where.column) + ": " + std::string(e.description()));
  }
  for (const auto& [key, node] : root) {
    if (key != "default_profile" && key != "profiles") {
      return Refuse(file, "unknown top-level key \"" + std::string(key.str()) +
                              "\": expected default_profile and [profiles.NAME] tables");
    }
  }
  const toml::table* profiles = root["profiles"].as_table();
  if (root.contains("profiles") && !profiles) {
    return Refuse(file, "profiles must be tables: [profiles.NAME]");
  }
  if (!wanted) {
    if (const auto* d = root["default_profile"].as_string()) {
      wanted = d->get();
      profile.chosen_by = "default_profile";
    } else if (root.contains("default_profile")) {
      return Refuse(file, "default_profile must be a string, the name of a profile");
    } else if (profiles && profiles->contains("default")) {
      wanted = "default";
      profile.chosen_by = "the profile named default";
    } else {
      return ConfigProfile{};
    }
  }
  const toml::table* chosen = profiles ? (*profiles)[*wanted].as_table() : nullptr;
  if (!chosen && profiles && profiles->contains(*wanted)) {
    return Refuse(file, "profiles." + *wanted + " must be a table: [profiles." + *wanted + "]");
  }
  if (!chosen) {
    std::string names;
    if (profiles) {
      for (const auto& [name, node] : *profiles) {
        names += (names.empty() ? "" : ", ") + std::string(name.str());
      }
    }
    return Refuse(file, "no profile \"" + *wanted + "\" (" + profile.chosen_by + "); " +
                            (names.empty() ? "it has none" : "it has " + names));
  }
  profile.name = *wanted;
  for (const auto& [key_name, node] : *chosen) {
    const std::string key(key_name.str());
    const std::string at = "profile \"" + profile.name + "\": ";
    if (key == "api_key_env") {
      const auto* variable = node.as_string();
      if (!variable || !IsVariableName(variable->get())) {
        return Refuse(file, at + "api_key_env must be a variable's name (letters, digits, _)");
      }
      std::optional<std::string> value = getenv(variable->get().c_str());
      if (!value || value->empty()) {
        return Refuse(file, at + "api_key_env names " + variable->get() + ", which is " +
                                (value ? "empty" : "not set"));
      }
      profile.values["QUARRY_API_KEY"] = *value;
      profile.keys["QUARRY_API_KEY"] = "api_key_env (" + variable->get() + ")";
      continue;
    }
    const auto known = std::find_if(ProfileKeys().begin(), ProfileKeys().end(),
                                    [&](const ProfileKey& k) { return key == k.key; });
    if (known == ProfileKeys().end()) {
      return Refuse(file, at + "unknown key \"" + key + "\": expected " + AllowedKeys());
    }
    std::optional<std::string> value = AsSetting(node);
    if (!value) return Refuse(file, at + key + " must be a string, a number or a boolean");
    if (key == "api_key" && (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
      return Refuse(file, at + "holds an api_key, but other users can read the file: chmod 600 " +
                              path->string() + " (or name the key's variable with api_key_env)");
    }
    profile.values[known->variable] = *value;
    profile.keys[known->variable] = key;
  }
  return profile;
}

Result<SettingFiles> ReadSettingFiles(const GetEnv& getenv,
                                      const std::optional<std::string>& profile) {
  SettingFiles files;
  files.dotenv = ReadDotEnv(".env");
  Result<ConfigProfile> read = ReadConfigProfile(getenv, profile);
  if (!read) return std::unexpected(read.error());
  files.profile = std::move(*read);
  return files;
}

}  // namespace quarry::llm
