// The replay client: recorded assistant turns (a fixture, or a trace.json's model steps made
// one by the trace module) played in order, so a run is reproducible offline while every tool
// still executes for real.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "quarry/common/read_file.h"
#include "quarry/llm/llm.h"
#include "quarry/common/json.h"

namespace quarry::llm {
namespace {

using json = nlohmann::ordered_json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<int64_t> TokenCount(const json& usage, const char* key, const std::string& where) {
  auto it = usage.find(key);
  if (it == usage.end() || it->is_null()) return 0;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return Fail(Error::Code::kData, where + ".usage." + key + ": expected a non-negative integer");
  }
  return it->get<int64_t>();
}

Result<ToolCall> ParseToolCall(const json& call, size_t turn_index, size_t i,
                               const std::string& where) {
  if (!call.is_object()) return Fail(Error::Code::kData, where + ": expected an object");
  auto name = call.find("name");
  if (name == call.end() || !name->is_string() || name->get<std::string>().empty()) {
    return Fail(Error::Code::kData, where + ": missing \"name\"");
  }
  ToolCall out;
  out.name = name->get<std::string>();
  auto id = call.find("id");
  if (id != call.end() && id->is_string() && !id->get<std::string>().empty()) {
    out.id = id->get<std::string>();
  } else {
    out.id = "call_" + std::to_string(turn_index) + "_" + std::to_string(i);
  }
  auto args = call.find("arguments");
  if (args == call.end() || args->is_null()) {
    out.arguments_json = "{}";
  } else if (args->is_string()) {
    // A string is the model's raw text, malformed or not; that is how fixtures test repair.
    out.arguments_json = args->get<std::string>();
  } else {
    out.arguments_json = Dump(*args);
  }
  return out;
}

Result<Turn> ParseTurn(const json& entry, size_t index, const std::string& where) {
  if (!entry.is_object()) return Fail(Error::Code::kData, where + ": expected an object");
  Turn turn;
  turn.latency_ms = 0;
  auto content = entry.find("content");
  if (content != entry.end() && content->is_string()) {
    turn.content = content->get<std::string>();
  } else if (content != entry.end() && !content->is_null()) {
    return Fail(Error::Code::kData, where + ".content: expected a string");
  }

  auto calls = entry.find("tool_calls");
  if (calls != entry.end() && !calls->is_null()) {
    if (!calls->is_array()) {
      return Fail(Error::Code::kData, where + ".tool_calls: expected an array");
    }
    for (size_t i = 0; i < calls->size(); ++i) {
      Result<ToolCall> call =
          ParseToolCall((*calls)[i], index, i, where + ".tool_calls[" + std::to_string(i) + "]");
      if (!call) return std::unexpected(call.error());
      turn.tool_calls.push_back(std::move(*call));
    }
  }

  auto usage = entry.find("usage");
  if (usage != entry.end() && !usage->is_null()) {
    if (!usage->is_object()) return Fail(Error::Code::kData, where + ".usage: expected an object");
    Result<int64_t> input = TokenCount(*usage, "input_tokens", where);
    Result<int64_t> output = TokenCount(*usage, "output_tokens", where);
    Result<int64_t> cached = TokenCount(*usage, "cached_tokens", where);
    // Absent in fixtures and traces written before cache writes were counted: 0.
    Result<int64_t> written = TokenCount(*usage, "cache_write_tokens", where);
    if (!input) return std::unexpected(input.error());
    if (!output) return std::unexpected(output.error());
    if (!cached) return std::unexpected(cached.error());
    if (!written) return std::unexpected(written.error());
    turn.usage = Usage{*input, *output, *cached, *written};
  }

  auto cost = entry.find("cost_usd");
  if (cost != entry.end() && !cost->is_null()) {
    if (!cost->is_number()) return Fail(Error::Code::kData, where + ".cost_usd: expected a number");
    turn.cost_usd = cost->get<double>();
    turn.cost_reported = true;
  } else {
    turn.cost_known = false;  // recorded without a cost: shown as $0, not as free
  }

  // Beside cost_usd in a fixture's turn and a trace's model step alike.
  auto saved = entry.find("cache_saved_usd");
  if (saved != entry.end() && !saved->is_null()) {
    if (!saved->is_number()) {
      return Fail(Error::Code::kData, where + ".cache_saved_usd: expected a number");
    }
    turn.cache_saved_usd = saved->get<double>();
  }

  auto finish = entry.find("finish_reason");
  if (finish != entry.end() && finish->is_string()) {
    turn.finish_reason = ParseFinishReason(finish->get<std::string>());
  } else {
    turn.finish_reason = turn.tool_calls.empty() ? FinishReason::kStop : FinishReason::kToolCalls;
  }
  return turn;
}

class ReplayClient final : public Client {
 public:
  ReplayClient(std::vector<Turn> turns, std::string model, std::string origin, std::string source)
      : turns_(std::move(turns)),
        model_(std::move(model)),
        origin_(std::move(origin)),
        source_(std::move(source)) {}

  Result<Turn> Complete(const Request&) override {
    if (next_ >= turns_.size()) {
      return Fail(Error::Code::kModel, "replay exhausted: " + origin_ + " has " +
                                           std::to_string(turns_.size()) +
                                           " model turns and all were used");
    }
    return turns_[next_++];
  }
  Provider provider() const override { return Provider::kReplay; }
  std::string model() const override { return model_; }
  std::string turns_source() const override { return source_; }

 private:
  std::vector<Turn> turns_;
  std::string model_;
  std::string origin_;
  std::string source_;
  size_t next_ = 0;
};

}  // namespace

Result<std::unique_ptr<Client>> MakeReplayClientFromJson(const json& doc,
                                                         const std::string& origin) {
  const std::string name = "replay file " + origin;
  if (!doc.is_object()) {
    return Fail(
        Error::Code::kData,
        name + ": expected a JSON object with \"turns\" (a fixture) or \"steps\" (a trace)");
  }
  std::vector<Turn> turns;
  std::string source;
  if (auto s = doc.find("source"); s != doc.end() && s->is_string()) source = s->get<std::string>();
  if (auto list = doc.find("turns"); list != doc.end()) {
    if (!list->is_array()) return Fail(Error::Code::kData, name + ": \"turns\" must be an array");
    // A fixture made from a trace names each turn as the trace did ("steps[4]"), so an error
    // points at the file the user gave.
    const auto labels = doc.find("turn_labels");
    for (size_t i = 0; i < list->size(); ++i) {
      std::string label = "turns[" + std::to_string(i) + "]";
      if (labels != doc.end() && labels->is_array() && i < labels->size() &&
          (*labels)[i].is_string()) {
        label = (*labels)[i].get<std::string>();
      }
      Result<Turn> turn = ParseTurn((*list)[i], i, name + ": " + label);
      if (!turn) return std::unexpected(turn.error());
      turns.push_back(std::move(*turn));
    }
  } else {
    return Fail(Error::Code::kData,
                name + ": has neither \"turns\" (a fixture) nor \"steps\" (a trace)");
  }
  if (turns.empty()) return Fail(Error::Code::kData, name + ": holds no model turns");

  std::string model = "replay";
  if (auto m = doc.find("model");
      m != doc.end() && m->is_string() && !m->get<std::string>().empty()) {
    model = m->get<std::string>();
  }
  return std::make_unique<ReplayClient>(std::move(turns), std::move(model), origin,
                                        std::move(source));
}

Result<std::unique_ptr<Client>> MakeReplayClient(const std::filesystem::path& path) {
  const Result<std::string> text = ReadFileText(path, "replay file");
  if (!text) return std::unexpected(text.error());
  json doc = ParseJson(*text);
  if (doc.is_discarded()) {
    return Fail(Error::Code::kData, "replay file " + path.string() + ": not valid JSON");
  }
  return MakeReplayClientFromJson(doc, path.string());
}

std::string RecordingKey(std::string_view question) {
  std::string out;
  for (char c : question) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isspace(u)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(u));
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '?' || out.back() == '.')) {
    out.pop_back();
  }
  return out;
}

namespace {

// A server is named by its protocol and database ("postgresql:chinook", "mysql:Chinook",
// "clickhouse:Chinook") or
// service ("service=warehouse"): the host, port, socket and options differ from machine to
// machine, and the last "/" of a URL starts no file name.
std::string DataName(const std::string& path) {
  for (std::string_view scheme : {"postgresql://", "postgres://", "mysql://", "mariadb://",
                                  "clickhouse://", "clickhouse+http://", "clickhouse+https://"}) {
    if (!path.starts_with(scheme)) continue;
    std::string_view rest = std::string_view(path).substr(scheme.size());
    rest = rest.substr(0, rest.find_first_of("?#"));
    const size_t slash = rest.find('/');
    const char* protocol = scheme.starts_with("postgres")     ? "postgresql:"
                           : scheme.starts_with("clickhouse") ? "clickhouse:"
                                                              : "mysql:";
    return std::string(protocol) +
           std::string(slash == std::string_view::npos ? "" : rest.substr(slash + 1));
  }
  if (path.starts_with("service=")) return path.substr(0, path.find_first_of(" \t"));
  // Reading options after the path (sales.csv?delim=;) choose how a file is read, not which.
  std::string name = std::filesystem::path(path).filename().string();
  if (const size_t q = name.rfind('?');
      q != std::string::npos && q > 0 && name.find('=', q) != std::string::npos) {
    name.resize(q);
  }
  return name;
}

}  // namespace

std::vector<std::string> DataFileNames(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(DataName(p));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace quarry::llm
