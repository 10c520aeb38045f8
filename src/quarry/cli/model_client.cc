// The model client a question is asked with: recorded turns (--replay FILE, --offline matched
// by question and data file names) or the live endpoint from flags, the environment and .env
// (a local server without a configured model: the one model it lists).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/installation.h"
#include "quarry/cli/live_text.h"
#include "quarry/cli/run_question.h"
#include "quarry/llm/config_file.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/common/read_file.h"
#include "quarry/llm/models.h"
#include "quarry/trace/trace.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::vector<fs::path> FixtureDirs(const AskOptions& o) {
  if (!o.fixtures.empty()) return {o.fixtures};
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("QUARRY_FIXTURES"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back("fixtures/offline");
  dirs.emplace_back(ShareDir() / "fixtures" / "offline");
  return dirs;
}

// A recording fits when it answers this question about files of the same names.
bool Fits(const json& doc, const AskOptions& o) {
  if (!doc.is_object() || !doc.contains("question") || !doc["question"].is_string()) return false;
  if (llm::RecordingKey(doc["question"].get<std::string>()) != llm::RecordingKey(o.question)) {
    return false;
  }
  // A fixture names its data files; a trace.json, its sources.
  std::vector<std::string> recorded;
  if (doc.contains("data") && doc["data"].is_array()) {
    for (const auto& d : doc["data"]) {
      if (d.is_string()) recorded.push_back(d.get<std::string>());
    }
  }
  for (const auto& src :
       doc.contains("sources") && doc["sources"].is_array() ? doc["sources"] : json::array()) {
    if (src.is_object() && src.contains("path") && src["path"].is_string()) {
      recorded.push_back(src["path"].get<std::string>());
    }
  }
  // A recording of a turn continued after a clarification names the reply it continues with.
  const bool has_reply = doc.contains("reply") && doc["reply"].is_string();
  if (has_reply != o.offline_reply.has_value()) return false;
  if (has_reply &&
      llm::RecordingKey(doc["reply"].get<std::string>()) != llm::RecordingKey(*o.offline_reply)) {
    return false;
  }
  return recorded.empty() || llm::DataFileNames(recorded) == llm::DataFileNames(o.data);
}

Result<std::unique_ptr<llm::Client>> OfflineClient(const AskOptions& o) {
  std::vector<std::string> known;
  for (const fs::path& dir : FixtureDirs(o)) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const Result<std::string> text = ReadFileText(f, "fixture");
      if (!text) continue;  // a directory named *.json, a broken link: not a fixture
      json doc = ParseJson(*text);
      if (doc.is_discarded() || !doc.contains("question")) continue;
      if (Fits(doc, o)) return llm::MakeReplayClientFromJson(doc, f.string());
      std::string data;
      std::vector<std::string> data_files;
      ReadJsonField(doc, "data", data_files);
      for (const auto& d : data_files) data += " --data " + d;
      if (doc.contains("reply") && doc["reply"].is_string()) {
        data += " (continued with the reply \"" + doc["reply"].get<std::string>() + "\")";
      }
      known.push_back("\"" + JsonString(doc, "question", "(no question)") + "\"" + data);
    }
    if (!known.empty()) break;
  }
  std::string list;
  for (const auto& k : known) list += "\n  " + k;
  const std::string what = o.offline_reply ? "the continuation of \"" + o.question +
                                                 "\" with the reply \"" + *o.offline_reply + "\""
                                           : std::string("this question");
  return Fail(
      Error::Code::kUsage,
      "--offline has no recorded model turns for " + what +
          " on this data; configure "
          "a model (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY, or QUARRY_BASE_URL "
          "+ QUARRY_MODEL) or ask a recorded "
          "one:" +
          list);
}

}  // namespace

Result<std::unique_ptr<llm::Client>> MakeClient(const AskOptions& o, bool live_text) {
  if (!o.replay.empty() && o.offline) {
    return Fail(Error::Code::kUsage, "--offline and --replay both choose recorded turns: pass one");
  }
  if (!o.replay.empty()) {
    const Result<std::string> text = ReadFileText(o.replay, "--replay");
    if (!text) return std::unexpected(text.error());
    std::string problem = "unreadable";
    const json doc = ParseJson(*text, &problem);
    if (doc.is_discarded()) {
      return Fail(Error::Code::kData,
                  "--replay " + o.replay + " is not a readable JSON file (" + problem + ")");
    }
    if (doc.contains("question") && !Fits(doc, o)) {
      return Fail(Error::Code::kUsage, "--replay " + o.replay + " records the question \"" +
                                           JsonString(doc, "question", "(not a string)") +
                                           "\" about other data files or another question; "
                                           "replay it with the same question and --data files");
    }
    const Result<json> fixture = trace::ReplayFixtureOf(doc);
    if (!fixture) {
      return Fail(Error::Code::kData, "replay file " + o.replay + ": " + fixture.error().message);
    }
    return llm::MakeReplayClientFromJson(*fixture, o.replay);
  }
  if (o.offline) return OfflineClient(o);
  return LiveClient(ModelSettings(o), live_text);
}

llm::Settings ModelSettings(const AskOptions& o, const std::string& model) {
  llm::Settings flags;
  auto set = [](std::optional<std::string>& to, const std::string& value) {
    if (!value.empty()) to = value;
  };
  set(flags.model, model.empty() ? o.model : model);
  set(flags.base_url, o.base_url);
  set(flags.provider, o.provider);
  set(flags.profile, o.profile);
  flags.stream = !o.no_stream;
  set(flags.request_timeout, o.request_timeout);
  set(flags.max_tokens, o.max_tokens);
  set(flags.temperature, o.temperature);
  set(flags.max_tokens_param, o.max_tokens_param);
  return flags;
}

Result<llm::ClientConfig> ResolveModelSettings(const llm::Settings& flags,
                                               llm::SettingOrigins* origins,
                                               llm::ConfigProfile* profile) {
  Result<llm::SettingFiles> files = llm::ReadSettingFiles(llm::ProcessEnv, flags.profile);
  if (!files) return std::unexpected(files.error());
  if (profile) *profile = files->profile;
  return llm::ResolveConfig(flags, llm::ProcessEnv, files->dotenv, origins, &files->profile);
}

Result<llm::ClientConfig> LiveConfig(const llm::Settings& flags, llm::SettingOrigins* origins) {
  llm::SettingOrigins from;
  if (!origins) origins = &from;
  auto config = ResolveModelSettings(flags, origins);
  if (!config) return std::unexpected(config.error());
  // A .env in the working directory may have come with the data (a bundle), and the endpoint
  // gets the schema and results: where they go is said whenever a .env chose it.
  if (origins->base_url.ends_with(" in .env")) {
    std::cerr << "quarry: the model endpoint " << TerminalText(llm::RedactUrl(config->base_url))
              << " comes from ./.env (" << TerminalText(origins->base_url)
              << "); the schema and query results go there\n";
  }
  // A local server without a configured model: the one it serves, when it serves one.
  if (config->model.empty()) {
    Result<std::string> model = llm::OnlyServedModel(*config);
    if (!model) return std::unexpected(model.error());
    config->model = *model;
    if (origins) origins->model = "the only model the server lists";
  }
  return config;
}

Result<std::unique_ptr<llm::Client>> LiveClient(const llm::Settings& flags, bool live_text) {
  auto config = LiveConfig(flags);
  if (!config) return std::unexpected(config.error());
  // Only a terminal gets the rewritten line; a log or a pipe would fill with them.
  if (isatty(2)) {
    config->on_wait = [](int64_t elapsed_ms) {
      if (elapsed_ms < 0) {
        std::cerr << "\r\033[K" << std::flush;
        return;
      }
      std::cerr << "\r"
                << Paint("  waiting for the model: " + std::to_string(elapsed_ms / 1000) + " s",
                         "2")
                << std::flush;
    };
  }
  std::shared_ptr<LiveText> display;
  if (live_text && config->stream && isatty(2)) {
    display = std::make_shared<LiveText>(std::cerr, UseColor());
    config->on_stream = [display](const llm::StreamDelta& delta) { display->Show(delta); };
  }
  config->on_retry = [display](const std::string& line) {
    if (display) display->End();
    std::cerr << Paint("quarry: model: " + TerminalText(line), "33") << "\n";
  };
  auto client = llm::MakeLiveClient(std::move(*config));
  if (display) return WithLiveText(std::move(client), std::move(display));
  return client;
}

}  // namespace quarry::cli
