// --record: a Client decorator that keeps every turn a live client returned, and the fixture
// document those turns are saved as (the shape replay_client.cc reads), written atomically.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "quarry/llm/llm.h"

namespace quarry::llm {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

Result<Turn> RecordingClient::Complete(const Request& request) {
  Result<Turn> turn = inner_.Complete(request);
  if (turn) turns_.push_back(*turn);
  return turn;
}

json RecordedFixture(const FixtureLabel& label, const std::vector<Turn>& turns) {
  json doc = json::object();
  doc["source"] = "recorded";
  doc["note"] =
      "Model turns saved by quarry ask/chat --record from a live run of the model named here "
      "(tools really execute on replay). Only recorded fixtures may be presented as a model's "
      "behaviour; \"scripted\" ones are written by hand.";
  doc["question"] = label.question;
  if (label.reply) doc["reply"] = *label.reply;
  // Base names only: a recording is matched by file name, and a full path could say more
  // about the user's machine than the fixture needs.
  json data = json::array();
  for (const std::string& name : DataFileNames(label.data)) data.push_back(name);
  doc["data"] = std::move(data);
  doc["model"] = label.model;
  doc["provider"] = ProviderName(label.provider);
  doc["recorded_at"] = label.recorded_at;
  if (!label.quarry_version.empty()) doc["quarry_version"] = label.quarry_version;
  if (!label.stop_reason.empty()) doc["stop_reason"] = label.stop_reason;
  json list = json::array();
  for (const Turn& t : turns) {
    json entry = json::object();
    entry["content"] = t.content;
    json calls = json::array();
    for (const ToolCall& c : t.tool_calls) {
      // Arguments as the raw text the model wrote, so malformed ones replay as malformed and
      // valid ones byte for byte.
      calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments_json}});
    }
    entry["tool_calls"] = std::move(calls);
    entry["usage"] = {{"input_tokens", t.usage.input_tokens},
                      {"output_tokens", t.usage.output_tokens},
                      {"cached_tokens", t.usage.cached_tokens},
                      {"cache_write_tokens", t.usage.cache_write_tokens}};
    // Absent when no cost was known, so the replay shows it as unknown rather than free.
    if (t.cost_known || t.cost_reported) entry["cost_usd"] = t.cost_usd;
    if (t.cache_saved_usd) entry["cache_saved_usd"] = *t.cache_saved_usd;
    entry["finish_reason"] = FinishReasonName(t.finish_reason);
    if (t.streamed) entry["streamed"] = true;
    list.push_back(std::move(entry));
  }
  doc["turns"] = std::move(list);
  return doc;
}

Result<void> WriteFixture(const fs::path& path, const json& doc) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Fail(Error::Code::kUsage,
                "--record " + path.string() + ": the folder " + dir.string() + " does not exist");
  }
  std::random_device rd;
  const fs::path tmp = dir / ("." + path.filename().string() + "." + std::to_string(getpid()) +
                              "." + std::to_string(rd() & 0xffffu) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return Fail(Error::Code::kUsage,
                  "--record " + path.string() + ": cannot write " + tmp.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Fail(Error::Code::kUsage,
                "--record " + path.string() + ": cannot write it: " + ec.message());
  }
  return {};
}

}  // namespace quarry::llm
