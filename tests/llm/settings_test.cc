// Settings resolution (flags > environment > .env), .env parsing, secret masking and prices.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <map>

#include "quarry/llm/client_internal.h"
#include "quarry/llm/llm.h"
#include "support/test_support.h"

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

const std::string kLocal = "http://127.0.0.1:8080/v1";

TEST(SettingsTest, FlagsBeatEnvironmentWhichBeatsDotEnv) {
  Env env = {{"QUARRY_MODEL", "env-model"}, {"QUARRY_BASE_URL", kLocal}};
  Env dotenv = {{"QUARRY_MODEL", "dotenv-model"},
                {"QUARRY_BASE_URL", "https://elsewhere/v1"},
                {"QUARRY_API_KEY", "dotenv-key-123456"}};

  Settings flags;
  flags.model = "flag-model";
  Result<ClientConfig> with_flag = ResolveConfig(flags, FakeEnv(env), dotenv);
  ASSERT_TRUE(with_flag) << with_flag.error().message;
  EXPECT_EQ(with_flag->model, "flag-model");

  Result<ClientConfig> from_env = ResolveConfig(Settings{}, FakeEnv(env), dotenv);
  ASSERT_TRUE(from_env) << from_env.error().message;
  EXPECT_EQ(from_env->model, "env-model");
  EXPECT_EQ(from_env->base_url, kLocal) << ".env must never override the environment";
  EXPECT_EQ(from_env->api_key, "dotenv-key-123456") << ".env fills what the environment lacks";

  Result<ClientConfig> from_dotenv = ResolveConfig(Settings{}, FakeEnv({}), dotenv);
  ASSERT_TRUE(from_dotenv) << from_dotenv.error().message;
  EXPECT_EQ(from_dotenv->model, "dotenv-model");
  EXPECT_EQ(from_dotenv->base_url, "https://elsewhere/v1");
  EXPECT_EQ(ProviderName(from_dotenv->provider), "openai-compatible");
}

TEST(SettingsTest, OpenRouterKeyAloneSelectsOpenRouter) {
  Env env = {{"OPENROUTER_API_KEY", "sk-or-v1-routerkey0000"},
             {"QUARRY_MODEL", "openai/gpt-4o-mini"}};
  Result<ClientConfig> config = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->base_url, "https://openrouter.ai/api/v1");
  EXPECT_EQ(ProviderName(config->provider), "openrouter");
  EXPECT_EQ(config->api_key, "sk-or-v1-routerkey0000");

  // QUARRY_API_KEY belongs to QUARRY_BASE_URL: OpenRouter's default URL gets OpenRouter's key.
  env["QUARRY_API_KEY"] = "sk-quarry-key-000000";
  Result<ClientConfig> both_keys = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_TRUE(both_keys);
  EXPECT_EQ(both_keys->api_key, "sk-or-v1-routerkey0000");
}

TEST(SettingsTest, OpenRouterHostMeansOpenRouterProvider) {
  Settings flags;
  flags.base_url = "https://openrouter.ai/api/v1/";
  flags.model = "anthropic/claude-haiku-4.5";
  Env env = {{"OPENROUTER_API_KEY", "sk-or-v1-routerkey0000"}};
  Result<ClientConfig> config = ResolveConfig(flags, FakeEnv(env), {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(ProviderName(config->provider), "openrouter");
  EXPECT_EQ(config->base_url, "https://openrouter.ai/api/v1");
  EXPECT_EQ(config->api_key, "sk-or-v1-routerkey0000");
}

TEST(SettingsTest, OpenRouterKeyIsNeverSentToAnotherHost) {
  Env env = {{"OPENROUTER_API_KEY", "sk-or-v1-routerkey0000"},
             {"QUARRY_BASE_URL", "https://api.openai.com/v1"},
             {"QUARRY_MODEL", "gpt-4o-mini"}};
  Result<ClientConfig> config = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, Error::Code::kUsage);
  EXPECT_NE(config.error().message.find("QUARRY_API_KEY"), std::string::npos)
      << config.error().message;
}

TEST(SettingsTest, LocalServerNeedsNoKey) {
  Env env = {{"QUARRY_BASE_URL", "http://localhost:11434/v1"}, {"QUARRY_MODEL", "qwen2.5:7b"}};
  Result<ClientConfig> config = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->api_key, "");
  EXPECT_EQ(ProviderName(config->provider), "openai-compatible");
}

TEST(SettingsTest, MissingModelOrEndpointSaysWhatToSet) {
  Result<ClientConfig> nothing = ResolveConfig(Settings{}, FakeEnv({}), {});
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code, Error::Code::kUsage);
  EXPECT_EQ(nothing.error().message,
            "no model endpoint configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or "
            "OPENROUTER_API_KEY, or QUARRY_BASE_URL and QUARRY_MODEL (with QUARRY_API_KEY) for "
            "another endpoint; pass --base-url/--model, or use --offline");

  Result<ClientConfig> no_endpoint =
      ResolveConfig(Settings{}, FakeEnv({{"QUARRY_MODEL", "gpt-4o-mini"}}), {});
  ASSERT_FALSE(no_endpoint);
  EXPECT_EQ(no_endpoint.error().code, Error::Code::kUsage);
  EXPECT_NE(no_endpoint.error().message.find("QUARRY_BASE_URL"), std::string::npos);

  Result<ClientConfig> bad_url = ResolveConfig(
      Settings{}, FakeEnv({{"QUARRY_MODEL", "m"}, {"QUARRY_BASE_URL", "localhost:8080"}}), {});
  ASSERT_FALSE(bad_url);
  EXPECT_NE(bad_url.error().message.find("invalid base URL"), std::string::npos);
}

TEST(SettingsTest, DotEnvSyntax) {
  quarry::testing::TempDir dir;
  auto path = dir.Write(".env",
                        "# settings\n"
                        "QUARRY_MODEL=openai/gpt-4o-mini\n"
                        "export QUARRY_API_KEY=\"sk-quoted \\\"key\\\"\"\n"
                        "  QUARRY_BASE_URL = 'http://127.0.0.1:8080/v1'  \n"
                        "PLAIN=value # trailing comment\n"
                        "HASH=abc#def\n"
                        "not a setting\n"
                        "UNTERMINATED=\"oops\n");
  std::map<std::string, std::string> values = ReadDotEnv(path);
  EXPECT_EQ(values["QUARRY_MODEL"], "openai/gpt-4o-mini");
  EXPECT_EQ(values["QUARRY_API_KEY"], "sk-quoted \"key\"");
  EXPECT_EQ(values["QUARRY_BASE_URL"], "http://127.0.0.1:8080/v1");
  EXPECT_EQ(values["PLAIN"], "value");
  EXPECT_EQ(values["HASH"], "abc#def");
  EXPECT_FALSE(values.contains("UNTERMINATED"));
  EXPECT_EQ(values.size(), 5u);
  EXPECT_TRUE(ReadDotEnv(dir.path() / "missing.env").empty());
}

// A .env others may write is not read: it could point this user's keys at a server of its own.
TEST(SettingsTest, ADotEnvOthersCanWriteIsNotRead) {
  quarry::testing::TempDir dir;
  auto path = dir.Write(".env", "OPENAI_BASE_URL=https://collector.example.net/v1\n");
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  EXPECT_TRUE(ReadDotEnv(path).empty());
  ASSERT_EQ(::chmod(path.c_str(), 0620), 0);
  EXPECT_TRUE(ReadDotEnv(path).empty());
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_EQ(ReadDotEnv(path).size(), 1u);
}

TEST(SettingsTest, MaskSecretShowsOnlyTheEnds) {
  EXPECT_EQ(MaskSecret("sk-or-v1-abcdefghijklmnopwxyz"), "sk-o...wxyz");
  EXPECT_EQ(MaskSecret("short"), "****");
  // Eight of twelve characters would be most of the key.
  EXPECT_EQ(MaskSecret("sk-abcdefghi"), "****");
  EXPECT_EQ(MaskSecret("sk-abcdefghijklmnop"), "****");
  EXPECT_EQ(MaskSecret("sk-abcdefghijklmnopq"), "sk-a...nopq");
  // A multi-byte character is never cut in half (nor shown).
  EXPECT_EQ(MaskSecret("\xc3\xa9"
                       "abcdefghijklmnopqrstuvw\xc3\xa9"),
            "****");
  EXPECT_EQ(MaskSecret(""), "");
}

// Found by the third fresh-user trial: an error body cut at 300 bytes with the key across the
// cut, or a server that echoes most of the key, showed 20 of its 25 characters; a reply that
// quotes the key put it into the trace.
TEST(SettingsTest, ScrubSecretMasksPiecesOfTheKeyToo) {
  const std::string key = "fake-test-key-0123456789";
  using internal::ScrubSecret;
  EXPECT_EQ(ScrubSecret("denied for " + key + ".", key), "denied for fake...6789.");
  EXPECT_EQ(ScrubSecret("AAAA" + key.substr(0, 20) + "...", key), "AAAA****...");
  EXPECT_EQ(ScrubSecret(key.substr(0, key.size() - 2) + " and " + key.substr(2), key),
            "**** and ****");
  // Seven characters of it are no piece: ordinary text stays.
  EXPECT_EQ(ScrubSecret("fake-te and 1234567 are fine", key), "fake-te and 1234567 are fine");
  EXPECT_EQ(ScrubSecret("nothing here", key), "nothing here");
  Turn turn;
  turn.content = "Your key is " + key;
  turn.tool_calls.push_back({"c1", "final_answer", "{\"answer\": \"" + key.substr(3) + "\"}"});
  internal::ScrubTurn(turn, key);
  EXPECT_EQ(turn.content, "Your key is fake...6789");
  EXPECT_EQ(turn.tool_calls[0].arguments_json, "{\"answer\": \"****\"}");
}

TEST(SettingsTest, PriceFileIsMergedOverBuiltIns) {
  quarry::testing::TempDir dir;
  auto prices = dir.Write("prices.json", R"({
      "my/model": {"input": 1.0, "output": 2.0},
      "openai/gpt-4o-mini": {"input": 0.2, "output": 0.8, "cached_input": 0.05}})");
  Env env = {{"QUARRY_BASE_URL", kLocal},
             {"QUARRY_MODEL", "my/model"},
             {"QUARRY_PRICES", prices.string()}};
  Result<ClientConfig> config = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_TRUE(config) << config.error().message;
  std::optional<Price> mine = config->prices.Find("my/model");
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->cached_input_per_mtok, 1.0) << "no cache price: cached input costs as input";
  EXPECT_EQ(config->prices.Find("openai/gpt-4o-mini")->input_per_mtok, 0.2);
  EXPECT_TRUE(config->prices.Find("anthropic/claude-sonnet-4.5")) << "built-ins are kept";
  // 2M input (0.5M cached) and 1M output: 1.5*1 + 0.5*1 + 1*2 = 4 USD.
  EXPECT_NEAR(*config->prices.Cost("my/model", {2'000'000, 1'000'000, 500'000}), 4.0, 1e-9);
}

TEST(SettingsTest, MalformedPriceFileIsADataError) {
  quarry::testing::TempDir dir;
  Env env = {{"QUARRY_BASE_URL", kLocal},
             {"QUARRY_MODEL", "m"},
             {"QUARRY_PRICES", dir.Write("prices.json", "{\"m\": {\"input\": 1,").string()}};
  Result<ClientConfig> broken = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, Error::Code::kData);
  EXPECT_NE(broken.error().message.find("prices.json"), std::string::npos);

  PriceTable table = PriceTable::BuiltIn();
  Result<void> no_output = table.MergeFile(
      dir.Write("p2.json", R"({"ok": {"input": 1, "output": 1}, "m": {"input": 1}})"));
  ASSERT_FALSE(no_output);
  EXPECT_NE(no_output.error().message.find("entry \"m\": missing \"output\""), std::string::npos)
      << no_output.error().message;
  EXPECT_FALSE(table.Find("ok")) << "a bad file changes nothing";
  EXPECT_FALSE(table.MergeFile(dir.Write("p3.json", R"({"m": {"input": -1, "output": 1}})")));
}

TEST(SettingsTest, BuiltInCostArithmetic) {
  PriceTable table = PriceTable::BuiltIn();
  // claude-sonnet-4.5: 3 in / 15 out / 0.30 cached, per million tokens.
  std::optional<double> cost = table.Cost("anthropic/claude-sonnet-4.5", {10'000, 1'000, 8'000});
  ASSERT_TRUE(cost);
  EXPECT_NEAR(*cost, (2'000 * 3.0 + 8'000 * 0.30 + 1'000 * 15.0) / 1e6, 1e-12);
  EXPECT_FALSE(table.Cost("nobody/unknown", {1, 1, 0}));
}

TEST(SettingsTest, RequestSettingsFromFlagsThenEnvironmentThenDotEnv) {
  Env env = {{"QUARRY_MODEL", "local-model"}, {"QUARRY_BASE_URL", kLocal}};
  Result<ClientConfig> defaults = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->request_timeout_ms, 120000);
  EXPECT_EQ(defaults->max_output_tokens, 2048);
  EXPECT_EQ(defaults->temperature, 0.0);
  EXPECT_EQ(defaults->max_tokens_param, "max_tokens");

  env["QUARRY_REQUEST_TIMEOUT"] = "600";
  env["QUARRY_TEMPERATURE"] = "0.7";
  Env dotenv = {{"QUARRY_REQUEST_TIMEOUT", "5"},
                {"QUARRY_MAX_TOKENS", "8192"},
                {"QUARRY_MAX_TOKENS_PARAM", "max_completion_tokens"}};
  Result<ClientConfig> from_env = ResolveConfig(Settings{}, FakeEnv(env), dotenv);
  ASSERT_TRUE(from_env) << from_env.error().message;
  EXPECT_EQ(from_env->request_timeout_ms, 600000) << ".env never overrides the environment";
  EXPECT_EQ(from_env->max_output_tokens, 8192);
  EXPECT_EQ(from_env->temperature, 0.7);
  EXPECT_EQ(from_env->max_tokens_param, "max_completion_tokens");

  Settings flags;
  flags.request_timeout = "2.5";
  flags.temperature = "default";
  flags.max_tokens = "100";
  flags.max_tokens_param = "auto";
  Result<ClientConfig> from_flags = ResolveConfig(flags, FakeEnv(env), dotenv);
  ASSERT_TRUE(from_flags) << from_flags.error().message;
  EXPECT_EQ(from_flags->request_timeout_ms, 2500);
  EXPECT_FALSE(from_flags->temperature.has_value());
  EXPECT_EQ(from_flags->max_output_tokens, 100);
  EXPECT_EQ(from_flags->max_tokens_param, "max_tokens");

  // A reasoning model: no temperature and max_completion_tokens, unless told otherwise.
  env["QUARRY_MODEL"] = "gpt-5-mini";
  env.erase("QUARRY_TEMPERATURE");
  Result<ClientConfig> reasoning = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_TRUE(reasoning) << reasoning.error().message;
  EXPECT_FALSE(reasoning->temperature.has_value());
  EXPECT_EQ(reasoning->max_tokens_param, "max_completion_tokens");
  env["QUARRY_TEMPERATURE"] = "1";
  env["QUARRY_MAX_TOKENS_PARAM"] = "max_tokens";
  Result<ClientConfig> told = ResolveConfig(Settings{}, FakeEnv(env), {});
  ASSERT_TRUE(told) << told.error().message;
  EXPECT_EQ(told->temperature, 1.0);
  EXPECT_EQ(told->max_tokens_param, "max_tokens");
}

TEST(SettingsTest, BadRequestSettingsNameWhereTheyCameFrom) {
  const Env base = {{"QUARRY_MODEL", "m"}, {"QUARRY_BASE_URL", kLocal}};
  auto problem = [&](const char* name, const std::string& value) {
    Env env = base;
    env[name] = value;
    Result<ClientConfig> config = ResolveConfig(Settings{}, FakeEnv(env), {});
    if (config) return std::string("accepted");
    EXPECT_EQ(config.error().code, Error::Code::kUsage);
    return config.error().message;
  };
  EXPECT_EQ(problem("QUARRY_REQUEST_TIMEOUT", "2m"),
            "QUARRY_REQUEST_TIMEOUT \"2m\": expected seconds from 0.1 to 86400, e.g. 300");
  EXPECT_NE(problem("QUARRY_REQUEST_TIMEOUT", "0").find("expected seconds"), std::string::npos);
  EXPECT_NE(problem("QUARRY_MAX_TOKENS", "1.5").find("whole number"), std::string::npos);
  EXPECT_NE(problem("QUARRY_MAX_TOKENS", "0").find("whole number"), std::string::npos);
  EXPECT_NE(problem("QUARRY_TEMPERATURE", "hot").find("from 0 to 2"), std::string::npos);
  EXPECT_NE(problem("QUARRY_TEMPERATURE", "2.5").find("from 0 to 2"), std::string::npos);
  EXPECT_NE(problem("QUARRY_MAX_TOKENS_PARAM", "max_output_tokens").find("expected auto"),
            std::string::npos);
  EXPECT_EQ(problem("QUARRY_REQUEST_TIMEOUT", " 0.25 "), "accepted");

  Settings flags;
  flags.max_tokens = "-3";
  Result<ClientConfig> flagged = ResolveConfig(flags, FakeEnv(base), {});
  ASSERT_FALSE(flagged);
  EXPECT_EQ(flagged.error().message.rfind("--max-tokens \"-3\"", 0), 0u) << flagged.error().message;
}

// A line break in a key would end the Authorization header and start one of the value's
// choosing (found by a user trial with QUARRY_API_KEY="sk-...\r\nX-Injected: yes").
TEST(SettingsTest, AKeyWithALineBreakOrControlCharacterIsRefused) {
  for (const std::string& key :
       std::vector<std::string>{"sk-abcdefgh1234\r\nX-Injected: yes", "sk-abc\tdefgh1234",
                                std::string("sk-abcdefgh\x7f", 12)}) {
    Env env = {{"QUARRY_BASE_URL", "https://api.example.com/v1"},
               {"QUARRY_MODEL", "m"},
               {"QUARRY_API_KEY", key}};
    Result<ClientConfig> config = ResolveConfig(Settings{}, FakeEnv(env), {});
    ASSERT_FALSE(config) << key;
    EXPECT_EQ(config.error().code, Error::Code::kUsage);
    EXPECT_NE(config.error().message.find("QUARRY_API_KEY contains a line break"),
              std::string::npos)
        << config.error().message;
    EXPECT_EQ(config.error().message.find("X-Injected"), std::string::npos);
  }
  Env embeddings = {{"QUARRY_EMBEDDINGS_URL", "http://127.0.0.1:8080/v1"},
                    {"QUARRY_EMBEDDINGS_API_KEY", "key\nHost: evil"}};
  auto resolved = ResolveEmbeddingsConfig(FakeEnv(embeddings), {});
  ASSERT_FALSE(resolved);
  EXPECT_EQ(resolved.error().code, Error::Code::kUsage);
}

TEST(SettingsTest, CredentialsInAUrlAreRedactedForShowing) {
  EXPECT_EQ(RedactUrl("http://alice:pw@127.0.0.1:8080/v1"), "http://***@127.0.0.1:8080/v1");
  EXPECT_EQ(RedactUrl("https://token@host/v1?x=a@b"), "https://***@host/v1?x=a@b");
  EXPECT_EQ(RedactUrl("https://host/v1/a@b"), "https://host/v1/a@b");
  EXPECT_EQ(RedactUrl("https://openrouter.ai/api/v1"), "https://openrouter.ai/api/v1");
  EXPECT_EQ(RedactUrl("not a url"), "not a url");
  // A model call that fails names the endpoint without the password.
  Settings flags;
  flags.base_url = "https://alice:s3cret-pass@api.example.com/v1";
  Result<ClientConfig> config = ResolveConfig(flags, FakeEnv({}), {});
  ASSERT_FALSE(config);  // no key for a remote host
  EXPECT_EQ(config.error().message.find("s3cret-pass"), std::string::npos)
      << config.error().message;
}

}  // namespace
}  // namespace quarry::llm
