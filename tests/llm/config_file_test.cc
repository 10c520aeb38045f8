// The config file's profiles (llm/config_file.h): which profile applies, what its keys set,
// the order of the layers (flag, environment, ./.env, profile), and the refusals that keep a
// key from going where the user did not send it.
#include "quarry/llm/config_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

#include "support/test_support.h"

namespace quarry::llm {
namespace {

using quarry::testing::TempDir;
using Env = std::map<std::string, std::string>;

constexpr const char* kKey = "sk-profile-key-0123456789abcdef";

class ConfigFileTest : public ::testing::Test {
 protected:
  // Writes the config file with `mode` and returns an environment whose QUARRY_CONFIG names it.
  Env Write(const std::string& text, mode_t mode = 0600) {
    const auto path = tmp_.Write("config.toml", text);
    chmod(path.c_str(), mode);
    return {{"QUARRY_CONFIG", path.string()}};
  }
  static GetEnv Fake(Env env) {
    return [env = std::move(env)](const char* name) -> std::optional<std::string> {
      auto it = env.find(name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
  }
  static std::string ErrorOf(const Env& env, std::optional<std::string> requested = {}) {
    Result<ConfigProfile> p = ReadConfigProfile(Fake(env), requested);
    return p ? "" : p.error().message;
  }
  TempDir tmp_;
};

const char* kTwoProfiles = R"(
default_profile = "local"

[profiles.local]
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5-coder-7b"
request_timeout = 300
stream = false

[profiles.claude]
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_env = "WORK_ANTHROPIC_KEY"
)";

TEST_F(ConfigFileTest, WhereTheFileIs) {
  EXPECT_EQ(ConfigFilePath(Fake({{"QUARRY_CONFIG", "/etc/q.toml"}, {"HOME", "/home/ana"}})),
            "/etc/q.toml");
  EXPECT_EQ(ConfigFilePath(Fake({{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/home/ana"}})),
            "/x/quarry/config.toml");
  EXPECT_EQ(ConfigFilePath(Fake({{"XDG_CONFIG_HOME", ""}, {"HOME", "/home/ana"}})),
            "/home/ana/.config/quarry/config.toml");
  EXPECT_FALSE(ConfigFilePath(Fake({})));
}

TEST_F(ConfigFileTest, NoFileIsNoProfileUnlessOneIsAskedFor) {
  const Env env = {{"XDG_CONFIG_HOME", (tmp_.path() / "absent").string()}};
  Result<ConfigProfile> none = ReadConfigProfile(Fake(env), std::nullopt);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->name.empty());
  EXPECT_TRUE(none->values.empty());
  const std::string asked = ErrorOf(env, "work");
  EXPECT_NE(asked.find("no such file, so there is no profile \"work\" (--profile)"),
            std::string::npos)
      << asked;
  Env by_env = env;
  by_env["QUARRY_PROFILE"] = "work";
  EXPECT_NE(ErrorOf(by_env).find("(QUARRY_PROFILE)"), std::string::npos) << ErrorOf(by_env);
  // A file the user named is no "no file": a typo in QUARRY_CONFIG is said.
  const std::string named = ErrorOf({{"QUARRY_CONFIG", (tmp_.path() / "typo.toml").string()}});
  EXPECT_NE(named.find("typo.toml: no such file (QUARRY_CONFIG names it)"), std::string::npos)
      << named;
  // The XDG spec: a relative XDG_CONFIG_HOME is ignored.
  EXPECT_EQ(ConfigFilePath(Fake({{"XDG_CONFIG_HOME", "rel"}, {"HOME", "/home/ana"}})),
            "/home/ana/.config/quarry/config.toml");
}

TEST_F(ConfigFileTest, TheProfileIsTheFlagsThenTheVariablesThenTheFilesDefault) {
  Env env = Write(kTwoProfiles);
  env["WORK_ANTHROPIC_KEY"] = kKey;
  Result<ConfigProfile> by_default = ReadConfigProfile(Fake(env), std::nullopt);
  ASSERT_TRUE(by_default) << by_default.error().message;
  EXPECT_EQ(by_default->name, "local");
  EXPECT_EQ(by_default->chosen_by, "default_profile");
  EXPECT_EQ(by_default->values.at("QUARRY_BASE_URL"), "http://127.0.0.1:8080/v1");
  EXPECT_EQ(by_default->values.at("QUARRY_REQUEST_TIMEOUT"), "300");
  EXPECT_EQ(by_default->values.at("QUARRY_STREAM"), "false");
  EXPECT_EQ(by_default->keys.at("QUARRY_MODEL"), "model");

  env["QUARRY_PROFILE"] = "claude";
  Result<ConfigProfile> by_env = ReadConfigProfile(Fake(env), std::nullopt);
  ASSERT_TRUE(by_env) << by_env.error().message;
  EXPECT_EQ(by_env->name, "claude");
  EXPECT_EQ(by_env->chosen_by, "QUARRY_PROFILE");
  EXPECT_EQ(by_env->values.at("QUARRY_API_KEY"), kKey);
  EXPECT_EQ(by_env->keys.at("QUARRY_API_KEY"), "api_key_env (WORK_ANTHROPIC_KEY)");

  Result<ConfigProfile> by_flag = ReadConfigProfile(Fake(env), "local");
  ASSERT_TRUE(by_flag) << by_flag.error().message;
  EXPECT_EQ(by_flag->name, "local");
  EXPECT_EQ(by_flag->chosen_by, "--profile");

  // Without default_profile, a profile named "default" applies; else none does.
  Result<ConfigProfile> named =
      ReadConfigProfile(Fake(Write("[profiles.default]\nmodel = \"m\"\n")), std::nullopt);
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(named->chosen_by, "the profile named default");
  Result<ConfigProfile> neither =
      ReadConfigProfile(Fake(Write("[profiles.other]\nmodel = \"m\"\n")), std::nullopt);
  ASSERT_TRUE(neither) << neither.error().message;
  EXPECT_TRUE(neither->values.empty());
  EXPECT_EQ(ReadConfigProfile(Fake(Write("[profiles.default]\ntemperature = 1e-5\n")), std::nullopt)
                ->values.at("QUARRY_TEMPERATURE"),
            "0.00001");
}

TEST_F(ConfigFileTest, AMistakeInTheFileNamesItsPlaceAndWhatIsAllowed) {
  const std::string syntax = ErrorOf(Write("[profiles.local]\nmodel = \"unclosed\n"));
  EXPECT_NE(syntax.find("config.toml: not valid TOML at line 2"), std::string::npos) << syntax;
  const std::string missing = ErrorOf(Write(kTwoProfiles), "wrok");
  EXPECT_NE(missing.find("no profile \"wrok\" (--profile); it has claude, local"),
            std::string::npos)
      << missing;
  const std::string typo = ErrorOf(Write("[profiles.default]\nmodle = \"m\"\n"));
  EXPECT_NE(typo.find("profile \"default\": unknown key \"modle\": expected provider, "
                      "base_url, model, api_key,"),
            std::string::npos)
      << typo;
  const std::string type = ErrorOf(Write("[profiles.default]\nmodel = [\"a\", \"b\"]\n"));
  EXPECT_NE(type.find("model must be a string, a number or a boolean"), std::string::npos) << type;
  const std::string top = ErrorOf(Write("model = \"m\"\n"));
  EXPECT_NE(top.find("unknown top-level key \"model\""), std::string::npos) << top;
  const std::string unset = ErrorOf(Write("[profiles.default]\napi_key_env = \"NOT_SET_HERE\"\n"));
  EXPECT_NE(unset.find("api_key_env names NOT_SET_HERE, which is not set"), std::string::npos)
      << unset;
  const std::string nul = ErrorOf(Write("[profiles.default]\napi_key_env = \"HOME\\u0000X\"\n"));
  EXPECT_NE(nul.find("api_key_env must be a variable's name"), std::string::npos) << nul;
  // toml++ recurses once per level of a dotted key: 50,000 levels overflowed the stack.
  std::string deep = "[profiles.default]\n";
  for (int i = 0; i < 50000; ++i) deep += "a.";
  deep += "a = 1\n";
  const std::string nested = ErrorOf(Write(deep));
  EXPECT_NE(nested.find("nested deeper than 32 levels"), std::string::npos)
      << nested.substr(0, 200);
  std::string header = "[";
  for (int i = 0; i < 50000; ++i) header += "a.";
  EXPECT_NE(ErrorOf(Write(header + "a]\n")).find("nested deeper"), std::string::npos);
  EXPECT_NE(ErrorOf(Write("[profiles.\"x\"]\nmodel = \"a.b.c.d\" # x.y.z\n")).find("nested"), 0u);
  Result<ConfigProfile> dots_in_values = ReadConfigProfile(
      Fake(Write("[profiles.default]\nmodel = \"" + std::string(200, '.') + "\"\n")), std::nullopt);
  EXPECT_TRUE(dots_in_values) << "dots inside a string are no nesting: "
                              << dots_in_values.error().message;
  const std::string not_table = ErrorOf(Write("default_profile = \"x\"\n[profiles]\nx = 5\n"));
  EXPECT_NE(not_table.find("profiles.x must be a table"), std::string::npos) << not_table;
  EXPECT_NE(ErrorOf(Write(kTwoProfiles), "a\nok    model"), "") << "a name with a newline";
}

// A key written in the file needs a file only its owner reads; a file others may write, or
// another user's, is refused whole: it would choose where the key goes.
TEST_F(ConfigFileTest, KeysAndOwnershipAreChecked) {
  const std::string with_key = std::string(
                                   "[profiles.default]\nbase_url = \"https://llm.example.com/v1\"\n"
                                   "model = \"m\"\napi_key = \"") +
                               kKey + "\"\n";
  const std::string readable = ErrorOf(Write(with_key, 0644));
  EXPECT_NE(readable.find("holds an api_key, but other users can read the file: chmod 600"),
            std::string::npos)
      << readable;
  EXPECT_EQ(readable.find(kKey), std::string::npos) << "the key is never in a message";
  Result<ConfigProfile> own = ReadConfigProfile(Fake(Write(with_key, 0600)), std::nullopt);
  ASSERT_TRUE(own) << own.error().message;
  EXPECT_EQ(own->values.at("QUARRY_API_KEY"), kKey);

  const std::string writable = ErrorOf(Write("[profiles.default]\nmodel = \"m\"\n", 0664));
  EXPECT_NE(writable.find("other users can write it"), std::string::npos) << writable;
  if (geteuid() == 0) {  // only root can give a file away (CI runs as root)
    const Env env = Write("[profiles.default]\nmodel = \"m\"\n", 0644);
    ASSERT_EQ(chown(env.at("QUARRY_CONFIG").c_str(), 65534, 65534), 0);
    EXPECT_NE(ErrorOf(env).find("another user owns it"), std::string::npos) << ErrorOf(env);
  }
}

// The layers: the flag, then the environment, then ./.env, then the profile; and the origins
// name the profile and the file.
TEST_F(ConfigFileTest, TheProfileIsTheLastLayerAndIsNamedAsTheOrigin) {
  Env env = Write(kTwoProfiles);
  const ConfigProfile profile = *ReadConfigProfile(Fake(env), std::nullopt);
  SettingOrigins origins;
  Result<ClientConfig> config = ResolveConfig(Settings{}, Fake({}), {}, &origins, &profile);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->base_url, "http://127.0.0.1:8080/v1");
  EXPECT_EQ(config->model, "qwen2.5-coder-7b");
  EXPECT_EQ(config->request_timeout_ms, 300000);
  EXPECT_FALSE(config->stream);
  EXPECT_EQ(origins.model, "model in profile \"local\" of " + env.at("QUARRY_CONFIG"));

  const std::map<std::string, std::string> dotenv = {{"QUARRY_MODEL", "from-dotenv"}};
  EXPECT_EQ(ResolveConfig(Settings{}, Fake({}), dotenv, nullptr, &profile)->model, "from-dotenv");
  EXPECT_EQ(
      ResolveConfig(Settings{}, Fake({{"QUARRY_MODEL", "from-env"}}), dotenv, nullptr, &profile)
          ->model,
      "from-env");
  // A bad value says which profile holds it, not a variable the user never set.
  const ConfigProfile zero =
      *ReadConfigProfile(Fake(Write("[profiles.default]\nbase_url = \"http://127.0.0.1:9/v1\"\n"
                                    "model = \"m\"\nrequest_timeout = 0\n")),
                         std::nullopt);
  Result<ClientConfig> bad = ResolveConfig(Settings{}, Fake({}), {}, nullptr, &zero);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.find("request_timeout in profile \"default\" of "), 0u)
      << bad.error().message;
  for (const auto& [value, streams] :
       std::map<std::string, bool>{{"\"off\"", false}, {"\"NO\"", false}, {"true", true}}) {
    const ConfigProfile p = *ReadConfigProfile(
        Fake(Write("[profiles.default]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n"
                   "stream = " +
                   value + "\n")),
        std::nullopt);
    Result<ClientConfig> c = ResolveConfig(Settings{}, Fake({}), {}, nullptr, &p);
    ASSERT_TRUE(c) << value << ": " << c.error().message;
    EXPECT_EQ(c->stream, streams) << value;
  }
  const ConfigProfile maybe = *ReadConfigProfile(
      Fake(Write("[profiles.default]\nbase_url = \"http://127.0.0.1:9/v1\"\nstream = \"maybe\"\n")),
      std::nullopt);
  Result<ClientConfig> unclear = ResolveConfig(Settings{}, Fake({}), {}, nullptr, &maybe);
  ASSERT_FALSE(unclear);
  EXPECT_NE(unclear.error().message.find("stream in profile"), std::string::npos)
      << unclear.error().message;

  Settings flags;
  flags.model = "from-flag";
  EXPECT_EQ(
      ResolveConfig(flags, Fake({{"QUARRY_MODEL", "from-env"}}), dotenv, nullptr, &profile)->model,
      "from-flag");
}

// A provider's own base URL variable in the environment is the endpoint, over a profile's
// base_url and provider: the environment comes before the file (found by a fresh-user trial,
// whose exported ANTHROPIC_BASE_URL was ignored for the profile's local server).
TEST_F(ConfigFileTest, AnSdkBaseUrlInTheEnvironmentBeatsTheProfilesEndpoint) {
  Env env = Write(
      "default_profile = \"local\"\n[profiles.local]\nprovider = "
      "\"openai-compatible\"\nbase_url = \"http://127.0.0.1:18081/v1\"\n");
  const ConfigProfile profile = *ReadConfigProfile(Fake(env), std::nullopt);
  SettingOrigins origins;
  Result<ClientConfig> anthropic =
      ResolveConfig(Settings{},
                    Fake({{"ANTHROPIC_API_KEY", "sk-ant-0123456789abcdefghij"},
                          {"ANTHROPIC_BASE_URL", "http://127.0.0.1:18082"},
                          {"QUARRY_MODEL", "m"}}),
                    {}, &origins, &profile);
  ASSERT_TRUE(anthropic) << anthropic.error().message;
  EXPECT_EQ(ProviderName(anthropic->provider), "anthropic");
  EXPECT_EQ(anthropic->base_url, "http://127.0.0.1:18082/v1");
  EXPECT_EQ(anthropic->api_key, "sk-ant-0123456789abcdefghij");
  EXPECT_EQ(origins.base_url, "ANTHROPIC_BASE_URL");
  Result<ClientConfig> openai = ResolveConfig(
      Settings{}, Fake({{"OPENAI_BASE_URL", "http://127.0.0.1:18083/v1"}, {"QUARRY_MODEL", "m"}}),
      {}, nullptr, &profile);
  ASSERT_TRUE(openai) << openai.error().message;
  EXPECT_EQ(openai->base_url, "http://127.0.0.1:18083/v1");
  // Without such a variable the profile's endpoint stands, and a flag beats them all.
  EXPECT_EQ(
      ResolveConfig(Settings{}, Fake({{"QUARRY_MODEL", "m"}}), {}, nullptr, &profile)->base_url,
      "http://127.0.0.1:18081/v1");
  Settings flags;
  flags.base_url = "http://127.0.0.1:18084/v1";
  EXPECT_EQ(
      ResolveConfig(flags,
                    Fake({{"OPENAI_BASE_URL", "http://127.0.0.1:18083/v1"}, {"QUARRY_MODEL", "m"}}),
                    {}, nullptr, &profile)
          ->base_url,
      "http://127.0.0.1:18084/v1");
}

// A base URL that ./.env chose gets no key from anywhere else: not the environment's
// QUARRY_API_KEY, not the profile's. Its own key, in the same .env, it does get.
TEST_F(ConfigFileTest, ADotEnvBaseUrlGetsNoKeyFromTheEnvironmentOrTheProfile) {
  const std::map<std::string, std::string> dotenv_url = {
      {"QUARRY_BASE_URL", "https://collector.example.net/v1"}, {"QUARRY_MODEL", "m"}};
  Result<ClientConfig> from_env =
      ResolveConfig(Settings{}, Fake({{"QUARRY_API_KEY", kKey}}), dotenv_url);
  ASSERT_FALSE(from_env) << "the key went to " << from_env->base_url;
  EXPECT_NE(from_env.error().message.find(
                "no API key for https://collector.example.net/v1, which QUARRY_BASE_URL in "
                ".env chose: a base URL from ./.env gets only a key from that .env, not "
                "QUARRY_API_KEY"),
            std::string::npos)
      << from_env.error().message;
  EXPECT_EQ(from_env.error().message.find(kKey), std::string::npos);

  ConfigProfile with_key;
  with_key.name = "default";
  with_key.file = "config.toml";
  with_key.values = {{"QUARRY_API_KEY", kKey}};
  EXPECT_FALSE(ResolveConfig(Settings{}, Fake({}), dotenv_url, nullptr, &with_key));

  // A loopback server a .env names is still used, without the key.
  std::map<std::string, std::string> local = dotenv_url;
  local["QUARRY_BASE_URL"] = "http://127.0.0.1:9/v1";
  Result<ClientConfig> keyless = ResolveConfig(Settings{}, Fake({{"QUARRY_API_KEY", kKey}}), local);
  ASSERT_TRUE(keyless) << keyless.error().message;
  EXPECT_EQ(keyless->api_key, "");

  std::map<std::string, std::string> together = dotenv_url;
  together["QUARRY_API_KEY"] = kKey;
  Result<ClientConfig> own = ResolveConfig(Settings{}, Fake({}), together);
  ASSERT_TRUE(own) << own.error().message;
  EXPECT_EQ(own->api_key, kKey);
  // The environment's own base URL takes the environment's key, whatever .env says.
  Result<ClientConfig> env_url = ResolveConfig(
      Settings{},
      Fake({{"QUARRY_API_KEY", kKey}, {"QUARRY_BASE_URL", "https://llm.example.com/v1"}}),
      dotenv_url);
  ASSERT_TRUE(env_url) << env_url.error().message;
  EXPECT_EQ(env_url->api_key, kKey);
}

}  // namespace
}  // namespace quarry::llm
