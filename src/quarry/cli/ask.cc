// `quarry ask`: opens the data, picks the model client (live, --offline, --replay), runs the
// agent with progress on stderr, prints the answer, its SQL and the totals, keeps the trace.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "quarry/cli/cli.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/interrupt.h"
#include "quarry/cli/commands.h"

namespace quarry::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Questions match a recording when they agree up to case, spacing and end punctuation.
std::string NormalizeQuestion(const std::string& q) {
  std::string out;
  for (char c : q) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isspace(u)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(u));
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '?' || out.back() == '.')) out.pop_back();
  return out;
}

std::vector<fs::path> FixtureDirs(const AskOptions& o) {
  if (!o.fixtures.empty()) return {o.fixtures};
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("QUARRY_FIXTURES"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back("fixtures/offline");
  dirs.emplace_back(fs::path(QUARRY_SOURCE_DIR) / "fixtures" / "offline");
  return dirs;
}

std::vector<std::string> Basenames(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(fs::path(p).filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A recording fits when it answers this question about files of the same names.
bool Fits(const json& doc, const AskOptions& o) {
  if (!doc.is_object() || !doc.contains("question") || !doc["question"].is_string()) return false;
  if (NormalizeQuestion(doc["question"].get<std::string>()) != NormalizeQuestion(o.question)) {
    return false;
  }
  // A fixture names its data files; a trace.json, its sources.
  std::vector<std::string> recorded;
  if (doc.contains("data") && doc["data"].is_array()) {
    for (const auto& d : doc["data"]) {
      if (d.is_string()) recorded.push_back(d.get<std::string>());
    }
  }
  for (const auto& src : doc.contains("sources") && doc["sources"].is_array() ? doc["sources"] : json::array()) {
    if (src.is_object() && src.contains("path") && src["path"].is_string()) {
      recorded.push_back(src["path"].get<std::string>());
    }
  }
  return recorded.empty() || Basenames(recorded) == Basenames(o.data);
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
      std::ifstream in(f);
      json doc = ParseJson(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
      if (doc.is_discarded() || !doc.contains("question")) continue;
      if (Fits(doc, o)) return llm::MakeReplayClientFromJson(doc, f.string());
      std::string data;
      std::vector<std::string> data_files;
      ReadJsonField(doc, "data", data_files);
      for (const auto& d : data_files) data += " --data " + d;
      known.push_back("\"" + JsonString(doc, "question", "(no question)") + "\"" + data);
    }
    if (!known.empty()) break;
  }
  std::string list;
  for (const auto& k : known) list += "\n  " + k;
  return Fail(Error::Code::kUsage,
              "--offline has no recorded model turns for this question on this data; configure "
              "a model (QUARRY_MODEL + QUARRY_API_KEY, or OPENROUTER_API_KEY) or ask a recorded "
              "one:" + list);
}

Result<std::unique_ptr<llm::Client>> MakeClient(const AskOptions& o) {
  if (!o.replay.empty() && o.offline) {
    return Fail(Error::Code::kUsage, "--offline and --replay both choose recorded turns: pass one");
  }
  if (!o.replay.empty()) {
    std::ifstream in(o.replay);
    std::string problem = "unreadable";
    const json doc =
        in ? ParseJson(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()),
                       &problem)
           : json(json::value_t::discarded);
    if (doc.is_discarded()) {
      return Fail(Error::Code::kData, "--replay " + o.replay + " is not a readable JSON file (" + problem + ")");
    }
    if (doc.contains("question") && !Fits(doc, o)) {
      return Fail(Error::Code::kUsage, "--replay " + o.replay + " records the question \"" +
                                           JsonString(doc, "question", "(not a string)") +
                                           "\" about other data files or another question; "
                                           "replay it with the same question and --data files");
    }
    return llm::MakeReplayClientFromJson(doc, o.replay);
  }
  if (o.offline) return OfflineClient(o);
  llm::Settings flags;
  auto set = [](std::optional<std::string>& to, const std::string& value) {
    if (!value.empty()) to = value;
  };
  set(flags.model, o.model);
  set(flags.base_url, o.base_url);
  set(flags.request_timeout, o.request_timeout);
  set(flags.max_tokens, o.max_tokens);
  set(flags.temperature, o.temperature);
  set(flags.max_tokens_param, o.max_tokens_param);
  return LiveClient(flags);
}

// Prints each step on stderr as it happens.
class Progress final : public agent::Observer {
 public:
  void OnStep(const trace::Step& s) override {
    char line[512];
    if (s.kind == "model") {
      std::snprintf(line, sizeof line, "  [%2d] %-14s %lld+%lld tokens  $%.4f  %lld ms", s.index,
                    "model", static_cast<long long>(s.input_tokens),
                    static_cast<long long>(s.output_tokens), s.cost_usd,
                    static_cast<long long>(s.duration_ms));
      std::cerr << Paint(line, "2") << "\n";
      return;
    }
    const bool ok = s.status == "ok";
    std::snprintf(line, sizeof line, "  [%2d] %-14s ", s.index, s.tool.c_str());
    std::string out = line;
    char status[16];
    std::snprintf(status, sizeof status, "%-8s", s.status.c_str());
    out += Paint(status, ok ? "32" : "31");
    const bool classed = !ok && s.failure_class != "none";
    std::snprintf(line, sizeof line, " %-16s %6lld ms%s", classed ? s.failure_class.c_str() : "",
                  static_cast<long long>(s.duration_ms), s.repair ? "  repair" : "");
    out += line;
    std::cerr << out << "\n";
    if (s.status == "rejected") {
      std::string values;
      for (const auto& v : s.detail.value("unsupported", json::array())) {
        values += (values.empty() ? "" : ", ") + v.get<std::string>();
      }
      std::cerr << Paint("       not grounded: " + TerminalText(values), "2") << "\n";
    } else if (!ok) {
      // The error, not a note quarry put before it (a removed code fence).
      size_t from = 0;
      while (s.observation.compare(from, 6, "note: ") == 0 &&
             s.observation.find('\n', from) != std::string::npos) {
        from = s.observation.find('\n', from) + 1;
      }
      std::string first = s.observation.substr(from, s.observation.find('\n', from) - from);
      if (first.size() > 160) first = first.substr(0, 157) + "...";
      std::cerr << Paint("       " + TerminalText(first), "2") << "\n";
    }
  }
};

int ExitFor(const trace::Trace& t) {
  if (t.stop_reason == agent::kStopAnswered && t.grounded) return kExitOk;
  if (t.stop_reason == agent::kStopInterrupted) return kExitInterrupted;
  if (t.stop_reason == agent::kStopModelError) return kExitModel;
  return kExitNoAnswer;
}

}  // namespace

Result<std::unique_ptr<llm::Client>> LiveClient(const std::string& model,
                                                const std::string& base_url) {
  llm::Settings flags;
  if (!model.empty()) flags.model = model;
  if (!base_url.empty()) flags.base_url = base_url;
  return LiveClient(flags);
}

Result<std::unique_ptr<llm::Client>> LiveClient(const llm::Settings& flags) {
  auto config = llm::ResolveConfig(flags, llm::ProcessEnv, llm::ReadDotEnv(".env"));
  if (!config) return std::unexpected(config.error());
  // Only a terminal gets the rewritten line; a log or a pipe would fill with them.
  if (isatty(2)) {
    config->on_wait = [](int64_t elapsed_ms) {
      if (elapsed_ms < 0) {
        std::cerr << "\r\033[K" << std::flush;
        return;
      }
      std::cerr << "\r" << Paint("  waiting for the model: " + std::to_string(elapsed_ms / 1000) +
                                     " s", "2")
                << std::flush;
    };
  }
  config->on_retry = [](const std::string& line) {
    std::cerr << Paint("quarry: model: " + TerminalText(line), "33") << "\n";
  };
  return llm::MakeOpenAiClient(std::move(*config));
}

int RunAsk(const AskOptions& o) {
  if (o.question.find_first_not_of(" \t\n") == std::string::npos) {
    return Report({Error::Code::kUsage, "the question is empty: ask something about the data"});
  }
  const InterruptScope interrupt;
  LoadFlags load = o.load;
  load.timeout_ms = o.config.limits.timeout_ms;
  load.stop = interrupt.token();
  const auto load_start = std::chrono::steady_clock::now();
  auto engine = OpenData(o.data, load);
  const int64_t load_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - load_start).count();
  // Whatever the loader made of the interruption, it was one.
  if (interrupt.token().stop_requested()) {
    return Report({Error::Code::kCancelled, "interrupted while opening the data; nothing was asked"});
  }
  if (!engine) return Report(engine.error());
  const FillCacheAtExit fill(**engine, o.data, load);
  auto client = MakeClient(o);
  if (!client) return Report(client.error());

  const std::string id = trace::NewRunId();
  auto writer = trace::Writer::Create(o.runs_dir, id);
  if (!writer) return Report(writer.error());
  agent::Config config = o.config;
  // Recorded turns need no embeddings: an offline run makes no network call.
  auto schema = ResolveSchemaOptions(o.schema_budget, o.no_samples, !o.offline && o.replay.empty());
  if (!schema) return Report(schema.error());
  config.schema = std::move(*schema);
  config.self_correction = !o.no_self_correction;
  config.python = !o.no_python;
  config.sandbox.workdir = writer->dir() / "workdir";
  config.artifacts_dir = writer->dir();
  config.sandbox.allow_unisolated = o.allow_unisolated;
  if (config.python && o.allow_unisolated) {
    if (auto why = sandbox::NamespaceUnavailableReason()) {
      std::cerr << Paint("quarry: warning: run_python is NOT isolated here (" + *why +
                             "): rlimits, seccomp and the Python guard only", "33")
                << "\n";
    }
  }
  std::cerr << Paint("quarry: " + (*client)->model() + " via " + (*client)->provider() + ", " +
                         std::string(engine::DialectName((*engine)->dialect())) + ", run " + id,
                     "2")
            << "\n";
  Progress progress;
  agent::RunInput input;
  input.question = o.question;
  input.run_id = id;
  input.load_ms = load_ms;
  input.stop = interrupt.token();
  const trace::Trace t = agent::Run(input, **engine, **client, config, &progress, &*writer);
  const fs::path trace_path = writer->dir() / "trace.json";

  if (o.format_name == "json") {
    json out = {{"answer", t.answer},        {"grounded", t.grounded},
                {"stop_reason", t.stop_reason}, {"sql", t.answer_sql},
                {"supporting_values", t.supporting_values}, {"assumptions", t.assumptions},
                {"queries", trace::ToJson(t)["answer"]["queries"]},
                {"verify", trace::ToJson(t)["verify"]["checks"]}, {"figures", t.artifacts},
                {"trace", trace_path.string()}, {"totals", trace::ToJson(t)["totals"]}};
    if (!t.notes.empty()) out["notes"] = t.notes;
    if (!t.reply.empty()) out["reply"] = {{"text", t.reply}, {"verified", false}};
    if (!t.explanation.empty()) out["explanation"] = {{"text", t.explanation}, {"answer", false}};
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return ExitFor(t);
  }
  if (t.stop_reason == agent::kStopAnswered) {
    std::cout << "\n" << TerminalText(t.answer) << "\n";
    if (!t.assumptions.empty()) {
      std::cout << "\nAssumptions:\n";
      for (const auto& a : t.assumptions) std::cout << "- " << TerminalText(a) << "\n";
    }
    if (!t.answer_sql.empty()) std::cout << "\nSQL:\n" << TerminalText(t.answer_sql) << "\n";
    for (const auto& a : t.artifacts) std::cout << "figure: " << a << "\n";
  } else {
    std::cout << "\nno answer: " << t.stop_reason << "\n";
    if (!t.reply.empty()) {
      std::cout << "the model replied without a tool call (not verified): "
                << TerminalText(t.reply) << "\n";
    }
    if (!t.explanation.empty()) {
      std::cout << "not an answer: " << TerminalText(t.explanation) << "\n";
    }
    if (t.stop_reason == agent::kStopUngrounded) {
      std::cout << "values not supported by any result:\n";
      std::vector<std::string> seen;
      for (const auto& c : t.verify) {
        if (c.grounded || std::find(seen.begin(), seen.end(), c.value) != seen.end()) continue;
        seen.push_back(c.value);
        std::cout << "- " << TerminalText(c.value) << (c.reason.empty() ? "" : ": " + TerminalText(c.reason))
                  << "\n";
      }
    }
    for (const auto& n : t.notes) std::cout << TerminalText(n) << "\n";
  }
  std::cout << "\n" << trace::TotalsLine(t) << "\ntrace: " << trace_path.string() << "\n";
  if (t.stop_reason == agent::kStopAnswered) {
    for (const auto& n : t.notes) std::cerr << Paint("note: " + n, "2") << "\n";
  }
  return ExitFor(t);
}

}  // namespace quarry::cli
