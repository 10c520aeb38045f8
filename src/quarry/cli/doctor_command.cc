// `quarry doctor`: checks the configured model endpoint one step at a time (the settings and
// where they came from, the connection, the model list, the model, its context length, and
// one tiny tool-calling probe) and says what to fix at each failed step.
#include <cstdio>
#include <iostream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "quarry/cli/cli.h"
#include "quarry/common/text.h"
#include "quarry/cli/commands.h"
#include "quarry/common/json.h"
#include "quarry/llm/config_file.h"
#include "quarry/llm/models.h"

namespace quarry::cli {
namespace {

using json = nlohmann::ordered_json;

// The probe's output limit unless --max-tokens says otherwise: enough for one short tool call.
constexpr int kProbeMaxTokens = 256;
constexpr const char* kProbeTool = "quarry_ping";

// What to do when tools do not work, by server.
constexpr const char* kToolFix =
    "the endpoint must pass tools to the model: start llama-server with --jinja; start vLLM "
    "with --enable-auto-tool-choice --tool-call-parser hermes (Qwen; other models name their "
    "parser in vLLM's tool calling docs); with Ollama, use a model that supports tools (e.g. "
    "qwen2.5:7b); else pick a model that calls tools";

struct Check {
  std::string name;
  std::string status;  // ok, warn, fail, skip, or ".." (about to happen)
  std::string detail;
  std::string fix;
};

class Doctor {
 public:
  explicit Doctor(const DoctorOptions& o) : o_(o), json_(o.format_name == "json") {}

  int Run();

 private:
  void Add(Check check) {
    if (!json_) {
      std::string line = check.detail;
      if (!check.fix.empty()) line += ". Fix: " + check.fix;
      // One check, one line: a line break in a value (a model name from the config file)
      // would start a line of its own that looks like another check.
      for (size_t at = line.find_first_of("\r\n"); at != std::string::npos;
           at = line.find_first_of("\r\n", at + 2)) {
        line.replace(at, 1, line[at] == '\n' ? "\\n" : "\\r");
      }
      char head[32];
      std::snprintf(head, sizeof head, "%-5s %-10s ", check.status.c_str(), check.name.c_str());
      std::cout << head << TerminalText(line) << "\n" << std::flush;
    }
    if (check.status == "fail") ++failed_;
    if (check.status != "..") checks_.push_back(std::move(check));
  }
  void Fail(int code, Check check) {
    // The first failure decides the exit code; later ones follow from it.
    if (exit_ == kExitOk) exit_ = code;
    check.status = "fail";
    Add(std::move(check));
  }
  int Finish();
  bool CheckList(const llm::ModelListReply& list);
  void CheckModel(const llm::ModelListReply& list);
  void Probe();
  std::string ProbeFix(const std::string& message) const;
  bool CheckToolCalls(const llm::Turn& turn, const std::string& used);
  std::string ApiRoot() const;

  const DoctorOptions& o_;
  bool json_;
  std::vector<Check> checks_;
  int failed_ = 0;
  int exit_ = kExitOk;
  llm::ClientConfig config_;
  llm::SettingOrigins origins_;
  std::optional<double> probe_cost_;
  bool probed_ = false;
};

llm::Settings Flags(const DoctorOptions& o) {
  llm::Settings flags;
  auto set = [](std::optional<std::string>& to, const std::string& value) {
    if (!value.empty()) to = value;
  };
  set(flags.model, o.model);
  set(flags.base_url, o.base_url);
  set(flags.provider, o.provider);
  set(flags.profile, o.profile);
  set(flags.request_timeout, o.request_timeout);
  set(flags.max_tokens, o.max_tokens);
  set(flags.temperature, o.temperature);
  set(flags.max_tokens_param, o.max_tokens_param);
  flags.stream = false;  // the probe checks tool calls, not the event stream
  return flags;
}

std::string Usd(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.6f", usd);
  return buf;
}

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ms) / 1000.0);
  return buf;
}

bool Has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// At most 80 bytes of a reply's text, for a check's line.
std::string Excerpt(const std::string& text) {
  return text.size() > 80 ? text.substr(0, Utf8Prefix(text, 80)) + "..." : text;
}

int Doctor::Run() {
  // The config file is read first so that its errors point at its docs, not at .env's.
  if (auto files = llm::ReadSettingFiles(llm::ProcessEnv, Flags(o_).profile); !files) {
    const int code = files.error().code == Error::Code::kUsage ? kExitUsage : kExitData;
    Fail(code, {"settings", "", files.error().message,
                "see \"Profiles: the config file\" in docs/models.md (QUARRY_CONFIG names "
                "another file)"});
    return Finish();
  }
  llm::ConfigProfile profile;
  auto config = ResolveModelSettings(Flags(o_), &origins_, &profile);
  if (!config) {
    const int code = config.error().code == Error::Code::kUsage ? kExitUsage : kExitData;
    Fail(code, {"settings", "", config.error().message,
                "see the model recipes in docs/models.md; .env.example lists every variable"});
    return Finish();
  }
  config_ = std::move(*config);
  if (!profile.name.empty()) {
    Add({"profile", "ok",
         "\"" + profile.name + "\" of " + profile.file + " (" + profile.chosen_by +
             "); the command line, the environment and ./.env come before it",
         ""});
  }
  Add({"provider", "ok",
       std::string(llm::ProviderName(config_.provider)) + " (" + origins_.provider + ")", ""});
  Add({"endpoint", "ok", llm::RedactUrl(config_.base_url) + " (" + origins_.base_url + ")", ""});
  Add({"key", "ok",
       config_.api_key.empty() ? origins_.api_key
                               : llm::MaskSecret(config_.api_key) + " (" + origins_.api_key + ")",
       ""});

  const llm::ModelListReply list = llm::ListModels(config_);
  if (!CheckList(list)) return Finish();
  CheckModel(list);
  if (exit_ != kExitOk) return Finish();
  Probe();
  return Finish();
}

// The connection and the model list; false when nothing more can be checked.
bool Doctor::CheckList(const llm::ModelListReply& list) {
  // curl names a timeout in the connect phase "Connection timed out" ("Resolving timed out"
  // for DNS): no server was reached, so a longer request timeout would not help.
  const bool connect_timeout = list.network_error.starts_with("Connection timed out") ||
                               list.network_error.starts_with("Resolving timed out");
  if (list.status == 0 && list.too_large) {
    // The server answered: with --model the list is not needed to go on.
    Add({"reachable", "ok",
         "GET " + list.url + ": a reply came in " + std::to_string(list.latency_ms) + " ms", ""});
    const std::string detail =
        "no model list: the reply to GET " + list.url + " is over 8 MiB and was not read";
    const std::string fix = "a model list is a few KiB: check that " + origins_.base_url +
                            " points at " + ApiRoot() + ", not a web page or a file server";
    if (config_.model.empty()) {
      Fail(kExitModel, {"models", "", detail, "set QUARRY_MODEL or pass --model; " + fix});
      return false;
    }
    Add({"models", "warn", detail, fix});
    return true;
  }
  if (list.status == 0 && list.timed_out && !connect_timeout) {
    Fail(kExitModel,
         {"reachable", "",
          "timed out: GET " + list.url + ": no reply within " + Seconds(list.timeout_ms) + " s (" +
              list.network_error + ")",
          "if the server is busy or still loading a model, wait or raise --request-timeout "
          "(QUARRY_REQUEST_TIMEOUT; the model list waits 30 s at most); else check that " +
              origins_.base_url + " is the endpoint you meant"});
    return false;
  }
  if (list.status == 0) {
    const bool local = llm::IsLoopbackUrl(config_.base_url);
    Fail(kExitModel,
         {"reachable", "", "cannot connect: GET " + list.url + ": " + list.network_error,
          local ? "start the server (see the recipes in docs/models.md: llama-server, ollama "
                  "serve, vllm serve) or point " +
                      origins_.base_url + " at the port it listens on"
                : "check the network, or set QUARRY_BASE_URL if this is not the endpoint you "
                  "meant"});
    return false;
  }
  Add({"reachable", "ok",
       "GET " + list.url + ": HTTP " + std::to_string(list.status) + " in " +
           std::to_string(list.latency_ms) + " ms",
       ""});
  if (list.status == 401 || list.status == 403) {
    const std::string status = "HTTP " + std::to_string(list.status) + ": " + list.problem;
    if (config_.api_key.empty()) {
      Fail(kExitModel, {"models", "", "the server wants a key (" + status + ")",
                        "set QUARRY_API_KEY to the key it was started with (vllm serve "
                        "--api-key, llama-server --api-key)"});
    } else {
      Fail(kExitModel, {"models", "", "the key was refused (" + status + ")",
                        "check " + origins_.api_key + ": it must be a key for " +
                            llm::RedactUrl(config_.base_url)});
    }
    return false;
  }
  if (!list.models) {
    Check check{"models", "warn",
                "no model list (HTTP " + std::to_string(list.status) + ": " + list.problem + ")",
                list.status == 404 ? "is the base URL the API root, ending in /v1?" : ""};
    if (config_.model.empty()) {
      Fail(kExitModel, {"models", "", check.detail,
                        "set QUARRY_MODEL or pass --model" +
                            (check.fix.empty() ? std::string() : "; " + check.fix)});
      return false;
    }
    Add(std::move(check));
    return true;
  }
  std::string names;
  for (size_t i = 0; i < list.models->size() && i < 5; ++i) {
    names += (i ? ", " : ": ") + (*list.models)[i].id;
  }
  if (list.models->size() > 5) names += ", ...";
  Add({"models", "ok", std::to_string(list.models->size()) + " listed" + names, ""});
  return true;
}

void Doctor::CheckModel(const llm::ModelListReply& list) {
  std::optional<llm::ListedModel> listed;
  if (config_.model.empty()) {
    const auto& models = *list.models;
    if (models.empty()) {
      Fail(kExitModel, {"model", "", "none configured, and the server lists no models",
                        "load a model into the server, or set QUARRY_MODEL / pass --model"});
      return;
    }
    if (models.size() > 1) {
      std::string names;
      for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.id;
      Fail(kExitUsage, {"model", "",
                        "none configured, and the server lists " + std::to_string(models.size()) +
                            " (" + names + ")",
                        "pick one with --model or QUARRY_MODEL"});
      return;
    }
    config_.model = models.front().id;
    origins_.model = "the only model the server lists";
    listed = models.front();
    Add({"model", "ok", config_.model + " (" + origins_.model + ")", ""});
  } else if (list.models) {
    listed = llm::FindListedModel(*list.models, config_.model);
    const std::string what = config_.model + " (" + origins_.model + ")";
    if (listed) {
      Add({"model", "ok",
           what + ", listed" + (listed->id == config_.model ? "" : " as " + listed->id), ""});
    } else if (!list.models->empty() && list.models->front().owned_by == "llamacpp") {
      Add({"model", "warn",
           what + " is not listed; llama-server answers with the model it loaded (" +
               list.models->front().id + ") whatever the name",
           ""});
    } else {
      Fail(kExitModel, {"model", "", what + " is not in the server's list",
                        "pick a listed model with --model or QUARRY_MODEL"});
      return;
    }
  } else {
    Add({"model", "warn", config_.model + " (" + origins_.model + "), not checked: no list", ""});
  }
  if (listed && listed->context_length) {
    Add({"context", "ok",
         std::to_string(*listed->context_length) + " tokens (" + listed->context_field +
             (listed->context_field == "meta.n_ctx_train"
                  ? ", the trained context; llama-server's --ctx-size may set less"
                  : "") +
             ")",
         ""});
  } else {
    Add({"context", "skip", "the model list does not report it", ""});
  }
}

void Doctor::Probe() {
  if (o_.no_probe) {
    Add({"tools", "skip", "not probed (--no-probe)", ""});
    return;
  }
  llm::ClientConfig config = config_;
  if (o_.max_tokens.empty()) config.max_output_tokens = kProbeMaxTokens;
  config.stream = false;
  config.retry.max_attempts = 2;

  llm::Request request;
  request.messages.push_back({llm::Role::kUser,
                              "This is a connection check. Call the tool " +
                                  std::string(kProbeTool) +
                                  " with {\"ok\": true}. Do not answer in text.",
                              {},
                              "",
                              0});
  request.tools.push_back(
      {kProbeTool, "Confirms that tool calls work. Call it with ok = true.",
       json::parse(R"({"type": "object", "properties": {"ok": {"type": "boolean"}},
                       "required": ["ok"]})")});
  // About 4 bytes a token, plus the chat template's own tokens.
  const int64_t prompt_tokens = static_cast<int64_t>(request.messages[0].content.size() +
                                                     request.tools[0].description.size() +
                                                     request.tools[0].parameters.dump().size()) /
                                    4 +
                                100;
  if (const auto price = config.prices.Find(config.model)) {
    probe_cost_ = (static_cast<double>(prompt_tokens) * price->input_per_mtok +
                   static_cast<double>(config.max_output_tokens) * price->output_per_mtok) /
                  1e6;
  }
  // Said before the request goes out, so the cost is known before it is spent (with
  // --format json on stderr, stdout holding the one document).
  const std::string at_most =
      "at most " +
      (probe_cost_ ? Usd(*probe_cost_)
                   : "an unknown cost (no price for " + config.model + "; QUARRY_PRICES adds one)");
  const std::string what = "one request with one tool, about " + std::to_string(prompt_tokens) +
                           " prompt tokens and at most " +
                           std::to_string(config.max_output_tokens) + " output tokens";
  if (json_) {
    std::cerr << "quarry doctor: probe: " << TerminalText(at_most + ": " + what) << "\n"
              << std::flush;
  }
  Add({"probe", "..", what + ": " + at_most + " (--no-probe skips it)", ""});
  probed_ = true;
  auto client = llm::MakeLiveClient(config);
  Result<llm::Turn> turn = client->Complete(request);
  if (!turn) {
    const std::string& message = turn.error().message;
    Fail(kExitModel, {"tools", "", "the probe request failed: " + message, ProbeFix(message)});
    return;
  }
  const std::string cost = turn->cost_known ? Usd(turn->cost_usd) : "cost unknown";
  const std::string used = std::to_string(turn->usage.input_tokens) + " + " +
                           std::to_string(turn->usage.output_tokens) + " tokens, " + cost;
  if (turn->tool_calls.empty()) {
    std::string text = turn->content.substr(0, Utf8Prefix(turn->content, 80));
    if (turn->content.size() > 80) text += "...";
    Fail(kExitModel,
         {"tools", "",
          "no tool call came back: the model answered with text (\"" + text + "\"; " + used + ")",
          kToolFix});
    return;
  }
  if (!CheckToolCalls(*turn, used)) return;
  Add({"tools", "ok", "the model called " + turn->tool_calls.front().name + " (" + used + ")", ""});
}

// The API root this provider's requests go to, for fixes that say the base URL is wrong.
std::string Doctor::ApiRoot() const {
  return config_.provider == llm::Provider::kAnthropic
             ? "the Messages API root, e.g. https://api.anthropic.com/v1"
             : "an OpenAI-compatible API root ending in /v1 (llama-server, vLLM and Ollama "
               "serve one at http://HOST:PORT/v1)";
}

// What to do about a failed probe request, told apart by the client's error message (the
// phrases the OpenAI and Anthropic clients build their errors with).
std::string Doctor::ProbeFix(const std::string& message) const {
  const std::string base_url = "check that " + origins_.base_url + " points at " + ApiRoot();
  if (Has(message, "jinja")) return "start llama-server with --jinja";
  if (Has(message, "enable-auto-tool-choice") || Has(message, "tool-call-parser")) {
    return "start vLLM with --enable-auto-tool-choice --tool-call-parser hermes (Qwen; other "
           "models name their parser in vLLM's tool calling docs)";
  }
  if (Has(message, "does not support tools")) {
    return "this Ollama model has no tool support: pull one that has (e.g. qwen2.5:7b)";
  }
  if (Has(message, "MiB and was not read")) {
    return "a chat completion is a few KiB, so this is not one: " + base_url +
           ", not a web page or a file server";
  }
  if (Has(message, "empty \"choices\" list") || Has(message, "reply choice has no message")) {
    return "the server answered but gave no message: try again, and look in the server's log "
           "for why (a model that crashed or ran out of memory, a filter, a proxy in between)";
  }
  if (Has(message, "reply refused, ") || Has(message, "is not a JSON object") ||
      Has(message, "reply has no choices") || Has(message, "reply has no content array")) {
    return "the reply is not a chat completion: " + base_url + ", not a web UI or another API";
  }
  if (Has(message, "no reply within the request timeout")) {
    return "raise --request-timeout (QUARRY_REQUEST_TIMEOUT): a local server may load the "
           "model on its first request, which can take minutes";
  }
  if (Has(message, "network error: ")) {
    return "the server stopped answering after it listed its models: check that it still runs "
           "(its log says why the connection closed)";
  }
  if (Has(message, "HTTP 401") || Has(message, "HTTP 403")) return "check " + origins_.api_key;
  if (Has(message, "HTTP 404")) return "no chat endpoint there: " + base_url;
  if (Has(message, "HTTP 429")) {
    return "the provider is limiting the request rate: wait a minute and run doctor again, or "
           "check the account's limits";
  }
  // Another refusal of a request that carries a tool: most often the tool itself.
  return kToolFix;
}

// Whether the probe's calls are well formed: each names quarry_ping, the one tool offered,
// with arguments that parse as a JSON object. Fails the tools check otherwise.
bool Doctor::CheckToolCalls(const llm::Turn& turn, const std::string& used) {
  constexpr const char* kParserFix =
      "the server's tool-call parsing does not fit this model: on vLLM pick the "
      "--tool-call-parser its docs name for the model; on llama-server use --jinja with the "
      "model's own chat template; else pick a model that calls tools (e.g. qwen2.5:7b)";
  for (const llm::ToolCall& call : turn.tool_calls) {
    if (call.name.empty()) {
      Fail(kExitModel, {"tools", "",
                        "a malformed tool call came back: it names no function (\"name\" is "
                        "missing or not a string; " +
                            used + ")",
                        kParserFix});
      return false;
    }
    if (call.name != kProbeTool) {
      Fail(kExitModel,
           {"tools", "",
            "the model called " + Excerpt(call.name) + ", a tool it was not offered (only " +
                kProbeTool + " was; " + used + ")",
            "the model does not keep to the tools it is given: pick a model that calls tools "
            "(e.g. qwen2.5:7b), and check that the server passes the request's tools to it "
            "(llama-server --jinja)"});
      return false;
    }
    std::string problem;
    const json args = ParseJson(call.arguments_json, &problem);
    if (!args.is_object()) {
      const std::string why = args.is_discarded() ? problem : "not a JSON object";
      Fail(kExitModel, {"tools", "",
                        "the model called " + std::string(kProbeTool) +
                            " with arguments that are not a "
                            "JSON object (\"" +
                            Excerpt(call.arguments_json) + "\": " + why + "; " + used + ")",
                        kParserFix});
      return false;
    }
  }
  return true;
}

int Doctor::Finish() {
  if (json_) {
    json checks = json::array();
    for (const Check& c : checks_) {
      json entry = {{"check", c.name}, {"status", c.status}, {"detail", c.detail}};
      if (!c.fix.empty()) entry["fix"] = c.fix;
      checks.push_back(std::move(entry));
    }
    json out = {{"ok", exit_ == kExitOk}, {"exit_code", exit_}};
    if (!config_.base_url.empty()) {
      out["config"] = {{"provider", llm::ProviderName(config_.provider)},
                       {"base_url", llm::RedactUrl(config_.base_url)},
                       {"model", config_.model},
                       {"api_key", llm::MaskSecret(config_.api_key)},
                       {"origins",
                        {{"provider", origins_.provider},
                         {"base_url", origins_.base_url},
                         {"model", origins_.model},
                         {"api_key", origins_.api_key}}}};
    }
    out["probe_max_cost_usd"] = probed_ && probe_cost_ ? json(*probe_cost_) : json(nullptr);
    out["checks"] = std::move(checks);
    std::cout << JsonText(out) << "\n";
    return exit_;
  }
  if (exit_ == kExitOk) {
    std::cout << "quarry doctor: ready\n";
  } else {
    std::cout << "quarry doctor: " << failed_ << (failed_ == 1 ? " problem" : " problems")
              << " (exit " << exit_ << ")\n";
  }
  return exit_;
}

}  // namespace

int RunDoctor(const DoctorOptions& options) { return Doctor(options).Run(); }

}  // namespace quarry::cli
