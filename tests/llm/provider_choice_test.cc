// How ResolveConfig chooses the provider, base URL, key and model (the table in the README's
// "Choosing the provider"), where each came from, and that no key reaches a host it was not
// given for.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "quarry/llm/llm.h"

namespace quarry::llm {
namespace {

using Env = std::map<std::string, std::string>;

GetEnv FakeEnv(Env env) {
  return [env = std::move(env)](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

constexpr const char* kAnthropic = "sk-ant-api03-anthropic-key-0000";
constexpr const char* kRouter = "sk-or-v1-openrouter-key-0000";
constexpr const char* kQuarry = "sk-quarry-own-key-000000";
constexpr const char* kOpenAi = "sk-proj-openai-key-000000";

struct Row {
  std::string name;
  Env env;
  std::string provider_flag;  // --provider ("" none)
  std::string base_url_flag;  // --base-url
  // Expected: either an error fragment, or the resolved fields.
  std::string error;
  std::string provider, base_url, model, key;
  std::string provider_from, model_from, key_from;
};

// A configuration that resolves, and where its provider, model and key came from ("" : not
// checked).
Row Resolves(std::string name, Env env, std::string provider_flag, std::string base_url_flag,
             std::string provider, std::string base_url, std::string model, std::string key,
             std::string provider_from = "", std::string model_from = "",
             std::string key_from = "") {
  Row row;
  row.name = std::move(name);
  row.env = std::move(env);
  row.provider_flag = std::move(provider_flag);
  row.base_url_flag = std::move(base_url_flag);
  row.provider = std::move(provider);
  row.base_url = std::move(base_url);
  row.model = std::move(model);
  row.key = std::move(key);
  row.provider_from = std::move(provider_from);
  row.model_from = std::move(model_from);
  row.key_from = std::move(key_from);
  return row;
}

// A configuration refused with a kUsage error containing `error`.
Row Refused(std::string name, Env env, std::string provider_flag, std::string base_url_flag,
            std::string error) {
  Row row;
  row.name = std::move(name);
  row.env = std::move(env);
  row.provider_flag = std::move(provider_flag);
  row.base_url_flag = std::move(base_url_flag);
  row.error = std::move(error);
  return row;
}

class ProviderChoiceTest : public ::testing::TestWithParam<Row> {};

TEST_P(ProviderChoiceTest, Resolves) {
  const Row& row = GetParam();
  Settings flags;
  if (!row.provider_flag.empty()) flags.provider = row.provider_flag;
  if (!row.base_url_flag.empty()) flags.base_url = row.base_url_flag;
  SettingOrigins origins;
  Result<ClientConfig> config = ResolveConfig(flags, FakeEnv(row.env), {}, &origins);
  if (!row.error.empty()) {
    ASSERT_FALSE(config) << row.name << ": resolved to " << ProviderName(config->provider) << " "
                         << config->base_url;
    EXPECT_EQ(config.error().code, Error::Code::kUsage);
    EXPECT_NE(config.error().message.find(row.error), std::string::npos)
        << row.name << ": " << config.error().message;
    for (const char* key : {kAnthropic, kRouter, kQuarry, kOpenAi}) {
      EXPECT_EQ(config.error().message.find(key), std::string::npos) << "a key in the message";
    }
    return;
  }
  ASSERT_TRUE(config) << row.name << ": " << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), row.provider) << row.name;
  EXPECT_EQ(config->base_url, row.base_url) << row.name;
  EXPECT_EQ(config->model, row.model) << row.name;
  EXPECT_EQ(config->api_key, row.key) << row.name;
  if (!row.provider_from.empty()) {
    EXPECT_EQ(origins.provider, row.provider_from) << row.name;
  }
  if (!row.model_from.empty()) {
    EXPECT_EQ(origins.model, row.model_from) << row.name;
  }
  if (!row.key_from.empty()) {
    EXPECT_EQ(origins.api_key, row.key_from) << row.name;
  }
}

const std::string kLocal = "http://127.0.0.1:8080/v1";

INSTANTIATE_TEST_SUITE_P(
    Rules, ProviderChoiceTest,
    ::testing::Values(
        Resolves("AnthropicKeyAlone", {{"ANTHROPIC_API_KEY", kAnthropic}}, "", "", "anthropic",
                 "https://api.anthropic.com/v1", "claude-haiku-4-5", kAnthropic,
                 "ANTHROPIC_API_KEY is set", "the default for anthropic", "ANTHROPIC_API_KEY"),
        Resolves("OpenRouterKeyBeatsAnthropicKey",
                 {{"OPENROUTER_API_KEY", kRouter}, {"ANTHROPIC_API_KEY", kAnthropic}}, "", "",
                 "openrouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini", kRouter,
                 "OPENROUTER_API_KEY is set", "the default for openrouter", "OPENROUTER_API_KEY"),
        Resolves("OwnKeyNotQuarryKeyForADefaultUrl",
                 {{"OPENROUTER_API_KEY", kRouter}, {"QUARRY_API_KEY", kQuarry}}, "", "",
                 "openrouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini", kRouter),
        Refused("QuarryKeyWithoutBaseUrlChoosesNothing",
                {{"QUARRY_API_KEY", kQuarry}, {"ANTHROPIC_API_KEY", kAnthropic}}, "", "",
                "QUARRY_API_KEY is set but no endpoint is: set QUARRY_BASE_URL"),
        Refused("QuarryKeyWithoutBaseUrlPointsAtProviderFlag",
                {{"QUARRY_API_KEY", kQuarry}, {"ANTHROPIC_API_KEY", kAnthropic}}, "", "",
                "--provider anthropic uses ANTHROPIC_API_KEY"),
        Resolves("ExplicitAnthropicPrefersItsOwnKey",
                 {{"QUARRY_PROVIDER", "anthropic"},
                  {"QUARRY_API_KEY", kQuarry},
                  {"ANTHROPIC_API_KEY", kAnthropic}},
                 "", "", "anthropic", "https://api.anthropic.com/v1", "claude-haiku-4-5",
                 kAnthropic, "QUARRY_PROVIDER"),
        Resolves("ExplicitAnthropicWithOnlyQuarryKey", {{"QUARRY_API_KEY", kQuarry}}, "anthropic",
                 "", "anthropic", "https://api.anthropic.com/v1", "claude-haiku-4-5", kQuarry,
                 "--provider", "", "QUARRY_API_KEY"),
        Resolves("AnthropicKeyNeverGoesToAnotherHost",
                 {{"ANTHROPIC_API_KEY", kAnthropic}, {"QUARRY_BASE_URL", kLocal}}, "anthropic", "",
                 "anthropic", kLocal, "", "", "--provider", "",
                 "none (a loopback endpoint needs none)"),
        Refused("AnthropicKeyNotSentToAProxy",
                {{"ANTHROPIC_API_KEY", kAnthropic}, {"QUARRY_MODEL", "claude-haiku-4-5"}},
                "anthropic", "https://llm-proxy.example.com/v1",
                "no API key for https://llm-proxy.example.com/v1: set QUARRY_API_KEY"),
        Resolves("AnthropicHostMeansAnthropic",
                 {{"QUARRY_BASE_URL", "https://api.anthropic.com/v1/"},
                  {"ANTHROPIC_API_KEY", kAnthropic}},
                 "", "", "anthropic", "https://api.anthropic.com/v1", "claude-haiku-4-5",
                 kAnthropic, "chosen from the base URL's host"),
        Resolves("QuarryKeyFirstForAUserGivenUrl",
                 {{"QUARRY_BASE_URL", "https://openrouter.ai/api/v1"},
                  {"QUARRY_API_KEY", kQuarry},
                  {"OPENROUTER_API_KEY", kRouter}},
                 "", "", "openrouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini",
                 kQuarry, "", "", "QUARRY_API_KEY"),
        Resolves("OpenAiDefaultModel",
                 {{"QUARRY_BASE_URL", "https://api.openai.com/v1"}, {"QUARRY_API_KEY", kQuarry}},
                 "", "", "openai-compatible", "https://api.openai.com/v1", "gpt-4o-mini", kQuarry,
                 "", "the default for openai-compatible"),
        Resolves("OpenRouterKeyNotSentToALocalOpenRouterProxy",
                 {{"OPENROUTER_API_KEY", kRouter}, {"QUARRY_MODEL", "m"}}, "openrouter", kLocal,
                 "openrouter", kLocal, "m", "", "--provider", "QUARRY_MODEL"),
        Resolves("LocalServerWithoutModelAsksTheServer", {{"QUARRY_BASE_URL", kLocal}}, "", "",
                 "openai-compatible", kLocal, "", ""),
        Refused("UnknownHostNeedsAModel",
                {{"QUARRY_BASE_URL", "https://llm.example.com/v1"}, {"QUARRY_API_KEY", kQuarry}},
                "", "",
                "no model configured for https://llm.example.com/v1: set QUARRY_MODEL or pass "
                "--model"),
        Refused("UnknownProviderVariable", {{"QUARRY_PROVIDER", "openai"}}, "", "",
                "unknown provider \"openai\" (QUARRY_PROVIDER): expected openai-compatible, "
                "openrouter or anthropic"),
        Refused("UnknownProviderFlag", {}, "claude", "",
                "unknown provider \"claude\" (--provider)"),
        Refused("OpenAiCompatibleNeedsABaseUrl", {{"OPENROUTER_API_KEY", kRouter}},
                "openai-compatible", "",
                "provider openai-compatible (--provider) needs a base URL"),
        Refused("NothingSet", {}, "", "",
                "no model endpoint configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or "
                "OPENROUTER_API_KEY, or QUARRY_BASE_URL and QUARRY_MODEL"),
        // The providers' own SDK variables (issue 24): OPENAI_API_KEY alone is OpenAI.
        Resolves("OpenAiKeyAlone", {{"OPENAI_API_KEY", kOpenAi}}, "", "", "openai-compatible",
                 "https://api.openai.com/v1", "gpt-4o-mini", kOpenAi, "OPENAI_API_KEY is set",
                 "the default for openai-compatible", "OPENAI_API_KEY"),
        Resolves("OpenAiKeyInDotEnvStyleWithProviderFlag", {{"OPENAI_API_KEY", kOpenAi}},
                 "openai-compatible", "", "openai-compatible", "https://api.openai.com/v1",
                 "gpt-4o-mini", kOpenAi, "--provider", "", "OPENAI_API_KEY"),
        Resolves("OpenAiBaseUrlIsOpenAisHost",
                 {{"OPENAI_API_KEY", kOpenAi},
                  {"OPENAI_BASE_URL", "https://gateway.example.com/v1"},
                  {"QUARRY_MODEL", "gpt-5-mini"}},
                 "", "", "openai-compatible", "https://gateway.example.com/v1", "gpt-5-mini",
                 kOpenAi, "OPENAI_API_KEY is set", "QUARRY_MODEL", "OPENAI_API_KEY"),
        Resolves("OpenAiBaseUrlOnThisMachineNeedsNoKey", {{"OPENAI_BASE_URL", kLocal}}, "", "",
                 "openai-compatible", kLocal, "", "", "OPENAI_BASE_URL is set"),
        Refused("OpenAiKeyNotSentToAnotherHost",
                {{"OPENAI_API_KEY", kOpenAi},
                 {"QUARRY_BASE_URL", "https://llm.example.com/v1"},
                 {"QUARRY_MODEL", "m"}},
                "", "", "no API key for https://llm.example.com/v1: set QUARRY_API_KEY"),
        Resolves("OpenAiKeyNotSentToALocalServer",
                 {{"OPENAI_API_KEY", kOpenAi}, {"QUARRY_BASE_URL", kLocal}}, "", "",
                 "openai-compatible", kLocal, "", ""),
        Resolves("OpenAiKeyFollowsItsBaseUrlWhenQuarryNamesTheSameHost",
                 {{"OPENAI_API_KEY", kOpenAi},
                  {"OPENAI_BASE_URL", "https://gateway.example.com/v1"},
                  {"QUARRY_BASE_URL", "https://gateway.example.com/v2"},
                  {"QUARRY_MODEL", "m"}},
                 "", "", "openai-compatible", "https://gateway.example.com/v2", "m", kOpenAi),
        Resolves("OpenAiKeyNotSentToAnotherPortOfItsBaseUrlsHost",
                 {{"OPENAI_API_KEY", kOpenAi},
                  {"OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"},
                  {"QUARRY_BASE_URL", kLocal}},
                 "", "", "openai-compatible", kLocal, "", ""),
        Refused("OpenAiKeyNotSentToAnthropic", {{"OPENAI_API_KEY", kOpenAi}}, "anthropic", "",
                "no API key for https://api.anthropic.com/v1: set ANTHROPIC_API_KEY"),
        Resolves("OpenRouterKeyBeatsOpenAiKey",
                 {{"OPENROUTER_API_KEY", kRouter}, {"OPENAI_API_KEY", kOpenAi}}, "", "",
                 "openrouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini", kRouter),
        Resolves("AnthropicKeyBeatsOpenAiKey",
                 {{"ANTHROPIC_API_KEY", kAnthropic}, {"OPENAI_API_KEY", kOpenAi}}, "", "",
                 "anthropic", "https://api.anthropic.com/v1", "claude-haiku-4-5", kAnthropic),
        Refused("QuarryKeyWithOpenAiKeyStillNeedsItsBaseUrl",
                {{"QUARRY_API_KEY", kQuarry}, {"OPENAI_API_KEY", kOpenAi}}, "", "",
                "QUARRY_API_KEY is set but no endpoint is"),
        Resolves("AnthropicBaseUrlIsAnthropicsHost",
                 {{"ANTHROPIC_API_KEY", kAnthropic},
                  {"ANTHROPIC_BASE_URL", "https://claude-gateway.example.com"},
                  {"QUARRY_MODEL", "claude-sonnet-4-5"}},
                 "", "", "anthropic", "https://claude-gateway.example.com/v1", "claude-sonnet-4-5",
                 kAnthropic, "ANTHROPIC_API_KEY is set", "QUARRY_MODEL", "ANTHROPIC_API_KEY"),
        Resolves("AnthropicBaseUrlWithTheProviderFlag",
                 {{"ANTHROPIC_API_KEY", kAnthropic}, {"ANTHROPIC_BASE_URL", kLocal}}, "anthropic",
                 "", "anthropic", kLocal, "", kAnthropic, "--provider", "", "ANTHROPIC_API_KEY"),
        Refused("AnthropicBaseUrlGetsNoOpenAiKey",
                {{"OPENAI_API_KEY", kOpenAi},
                 {"ANTHROPIC_BASE_URL", "https://claude-gateway.example.com"},
                 {"QUARRY_MODEL", "m"}},
                "anthropic", "",
                "no API key for https://claude-gateway.example.com/v1: set ANTHROPIC_API_KEY"),
        // Found by a fresh-user trial of issue 24: a key over plain http to another machine,
        // and a base URL with a query (its secret printed, the API path appended after it).
        Refused(
            "NoKeyOverPlainHttp",
            {{"OPENAI_API_KEY", kOpenAi}, {"QUARRY_BASE_URL", "http://api.openai.com/v1"}}, "", "",
            "refusing to send OPENAI_API_KEY over plain http to api.openai.com (QUARRY_BASE_URL): "
            "use https://"),
        Resolves("PlainHttpToThisMachineKeepsItsKey",
                 {{"QUARRY_API_KEY", kQuarry}, {"QUARRY_BASE_URL", kLocal}}, "", "",
                 "openai-compatible", kLocal, "", kQuarry),
        // Found by the third trial: a name that starts like 127.0.0.1 is no loopback address.
        Refused("NoKeyOverPlainHttpToANameThatLooksLocal",
                {{"QUARRY_API_KEY", kQuarry},
                 {"QUARRY_BASE_URL", "http://127.0.0.1.evil.test/v1"},
                 {"QUARRY_MODEL", "m"}},
                "", "", "refusing to send QUARRY_API_KEY over plain http to 127.0.0.1.evil.test"),
        Refused("NoKeyOverPlainHttpToAShortNameThatLooksLocal",
                {{"QUARRY_API_KEY", kQuarry},
                 {"QUARRY_BASE_URL", "http://127.evil.test/v1"},
                 {"QUARRY_MODEL", "m"}},
                "", "", "refusing to send QUARRY_API_KEY over plain http to 127.evil.test"),
        Resolves("PlainHttpToAnotherLoopbackAddressKeepsItsKey",
                 {{"QUARRY_API_KEY", kQuarry},
                  {"QUARRY_BASE_URL", "http://127.0.0.2:8080/v1"},
                  {"QUARRY_MODEL", "m"}},
                 "", "", "openai-compatible", "http://127.0.0.2:8080/v1", "m", kQuarry),
        Refused("NoQueryInTheBaseUrl",
                {{"QUARRY_BASE_URL", "http://127.0.0.1:8080/v1?api_key=PASSW0RD"}}, "", "",
                "holds a '?' or '#'"),
        Refused("NoLineBreakInTheBaseUrl",
                {{"QUARRY_BASE_URL", "http://127.0.0.1:8080/v1\nX-Injected: 1"}}, "", "",
                "holds a space, a line break or another control character"),
        Refused("NoSpaceInTheBaseUrl",
                {{"OPENAI_API_KEY", kOpenAi}, {"OPENAI_BASE_URL", "https://api.openai.com/v1 "}},
                "", "", "holds a space, a line break or another control character"),
        Refused("OpenAiBaseUrlGetsNoAnthropicKey",
                {{"ANTHROPIC_API_KEY", kAnthropic},
                 {"OPENAI_BASE_URL", "https://gateway.example.com/v1"},
                 {"QUARRY_MODEL", "m"}},
                "openai-compatible", "",
                "no API key for https://gateway.example.com/v1: set OPENAI_API_KEY")),
    [](const ::testing::TestParamInfo<Row>& row) { return row.param.name; });

// A .env in the working directory that names a provider's base URL gets no key from the
// environment: it would choose where the user's key goes (a trial's .env did just that).
TEST(ProviderChoiceOriginsTest, ADotEnvBaseUrlGetsNoKeyFromTheEnvironment) {
  for (const char* key : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}) {
    const std::string url =
        std::string(key).starts_with("OPENAI") ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL";
    Settings flags;
    if (!std::string(key).starts_with("OPENAI")) flags.provider = "anthropic";
    Result<ClientConfig> config =
        ResolveConfig(flags, FakeEnv({{key, kOpenAi}, {"QUARRY_MODEL", "m"}}),
                      {{url, "https://collector.example.net/v1"}});
    ASSERT_FALSE(config) << key << ": the key went to " << config->base_url;
    EXPECT_NE(config.error().message.find("no API key for https://collector.example.net/v1"),
              std::string::npos)
        << config.error().message;
    EXPECT_EQ(config.error().message.find(kOpenAi), std::string::npos);
    // Both in .env: the user's own file names its own server.
    Result<ClientConfig> both =
        ResolveConfig(flags, FakeEnv({{"QUARRY_MODEL", "m"}}),
                      {{key, kOpenAi}, {url, "https://collector.example.net/v1"}});
    ASSERT_TRUE(both) << both.error().message;
    EXPECT_EQ(both->api_key, kOpenAi);
  }
}

TEST(ProviderChoiceOriginsTest, DotEnvIsNamed) {
  SettingOrigins origins;
  Result<ClientConfig> config =
      ResolveConfig(Settings{}, FakeEnv({}), {{"ANTHROPIC_API_KEY", kAnthropic}}, &origins);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), "anthropic");
  EXPECT_EQ(origins.api_key, "ANTHROPIC_API_KEY in .env");
  EXPECT_EQ(origins.base_url, "ANTHROPIC_API_KEY in .env is set");
}

TEST(ProviderChoiceOriginsTest, DefaultModelsArePriced) {
  const PriceTable prices = PriceTable::BuiltIn();
  for (const auto& [provider, url] :
       std::map<std::string, std::string>{{"openai-compatible", "https://api.openai.com/v1"},
                                          {"openrouter", "https://openrouter.ai/api/v1"},
                                          {"anthropic", "https://api.anthropic.com/v1"}}) {
    const std::optional<std::string> model = DefaultModel(*ParseProvider(provider), url);
    ASSERT_TRUE(model) << provider;
    EXPECT_TRUE(prices.Find(*model)) << *model << " has no built-in price";
  }
  EXPECT_FALSE(DefaultModel(Provider::kOpenAiCompatible, "http://127.0.0.1:8080/v1"));
  EXPECT_FALSE(DefaultModel(Provider::kAnthropic, "http://127.0.0.1:8080/v1"))
      << "a proxy or stand-in gets no provider default";
}

}  // namespace
}  // namespace quarry::llm
