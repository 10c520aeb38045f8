// The behaviour suite's runner (behaviour.h): makes the copies, runs each case's questions
// through the agent (the follow-up as turns of one thread in the work directory), computes the
// expected values with reference queries, judges each case, and writes the results as JSON and
// a markdown table.
#include <cstring>
#include <stdlib.h>

#include <algorithm>
#include <fstream>

#include "quarry/agent/threads.h"
#include "quarry/bench/behaviour_internal.h"
#include "quarry/common/json.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using behaviour::CaseDef;
using behaviour::CaseRun;
using json = nlohmann::ordered_json;

// The copies' directory; a temporary one is removed when the suite ends.
class WorkDir {
 public:
  // The copies always go into a folder made new for them, so no file already there (the
  // user's own chinook.sqlite beside a --work-dir, say) can be overwritten. With `given`, that
  // folder is made inside it and kept; else in the temporary directory, and removed.
  static Result<WorkDir> Make(const fs::path& given) {
    std::error_code ec;
    if (!given.empty()) fs::create_directories(given, ec);
    const fs::path parent = given.empty() ? fs::temp_directory_path(ec) : given;
    std::string pattern =
        (parent / (given.empty() ? "quarry-behaviour-XXXXXX" : "behaviour-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) {
      return Fail(Error::Code::kUsage, "cannot create a folder for the copies in " +
                                           parent.string() + ": " + std::strerror(errno));
    }
    return WorkDir(pattern, given.empty());
  }
  WorkDir(WorkDir&& o) noexcept : path_(std::move(o.path_)), remove_(o.remove_) {
    o.remove_ = false;
  }
  WorkDir& operator=(WorkDir&&) = delete;
  ~WorkDir() {
    std::error_code ec;
    if (remove_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  WorkDir(fs::path p, bool remove) : path_(std::move(p)), remove_(remove) {}
  fs::path path_;
  bool remove_ = false;
};

// Runs the case's questions; fills `result`'s run ids and `run`'s traces. A false return means
// the case stopped early, with result.status and reason set.
bool RunQuestions(const CaseDef& def, const BehaviourOptions& o, const fs::path& db,
                  const fs::path& work, const ClientFactory& clients, CaseRun& run,
                  CaseResult& result) {
  auto engine = engine::Open({db});
  if (!engine) {
    result.status = CaseStatus::kFail;
    result.reason = "cannot open the copy: " + engine.error().message;
    return false;
  }
  std::optional<agent::ThreadStore> store;
  std::string thread;
  if (def.thread) {
    auto opened = agent::ThreadStore::Open(work / "threads.sqlite3");
    if (!opened) {
      result.status = CaseStatus::kFail;
      result.reason = "threads: " + opened.error().message;
      return false;
    }
    store.emplace(std::move(*opened));
  }
  for (const std::string& question : def.questions) {
    auto client = clients(question, {db.string()});
    if (!client) {
      result.status =
          client.error().code == Error::Code::kUsage ? CaseStatus::kSkipped : CaseStatus::kFail;
      result.reason = "no model for \"" + question + "\": " + client.error().message;
      return false;
    }
    agent::RunInput input;
    input.question = question;
    input.run_id = trace::NewRunId();
    int turn = 0;
    if (store) {
      if (thread.empty()) thread = "behaviour-" + def.id + "-" + input.run_id;
      auto start = store->StartTurn(thread, question, input.run_id, (*engine)->sources());
      if (!start) {
        result.status = CaseStatus::kFail;
        result.reason = "threads: " + start.error().message;
        return false;
      }
      turn = start->number;
      input.question = start->question;
      input.history = std::move(start->history);
      input.resume = std::move(start->resume);
      input.thread = thread;
      input.thread_turn = turn;
    }
    auto record = RunAgent(std::move(input), **engine, **client, o.config, o.runs_dir);
    if (!record) {
      result.status = CaseStatus::kFail;
      result.reason = "the run could not start: " + record.error().message;
      return false;
    }
    if (store) {
      if (auto f = store->FinishTurn(thread, turn, record->trace); !f) {
        result.status = CaseStatus::kFail;
        result.reason = "threads: " + f.error().message;
        return false;
      }
    }
    result.run_ids.push_back(record->trace.id);
    result.trace_paths.push_back(record->trace_path.string());
    run.traces.push_back(std::move(record->trace));
    run.trace_paths.push_back(record->trace_path);
  }
  return true;
}

CaseResult RunCase(const CaseDef& def, const BehaviourOptions& o, const behaviour::Copies& copies,
                   const ClientFactory& clients) {
  CaseResult result;
  result.id = def.id;
  result.checks = def.checks;
  result.questions = def.questions;
  if (std::find(o.not_built.begin(), o.not_built.end(), def.id) != o.not_built.end()) {
    result.status = CaseStatus::kNotBuilt;
    result.reason = "the capability this case checks has not landed; nothing was run";
    return result;
  }
  CaseRun run;
  run.source = o.source;
  run.copy = def.wide ? copies.wide : copies.copy;
  run.max_tool_calls = o.config.max_tool_calls;
  run.max_cost_usd = o.config.max_cost_usd;
  if (!def.references.empty()) {
    auto db = behaviour::ReferenceDb::Open(run.copy);
    auto expected = db ? behaviour::Expected(def, *db) : Result<json>(std::unexpected(db.error()));
    if (!expected) {
      result.status = CaseStatus::kFail;
      result.reason = expected.error().message;
      return result;
    }
    run.expected = std::move(*expected);
    result.expected = run.expected.dump();
  }
  auto before = Sha256OfFile(run.copy);
  run.copy_sha256_before = before ? *before : "";
  if (!RunQuestions(def, o, run.copy, copies.dir, clients, run, result)) return result;
  auto after = Sha256OfFile(run.copy);
  run.copy_sha256_after = after ? *after : "";
  const behaviour::Verdict v = def.check(run);
  result.status = v.pass ? CaseStatus::kPass : CaseStatus::kFail;
  result.reason = v.reason;
  return result;
}

}  // namespace

std::string_view CaseStatusName(CaseStatus status) {
  switch (status) {
    case CaseStatus::kPass:
      return "pass";
    case CaseStatus::kFail:
      return "fail";
    case CaseStatus::kNotBuilt:
      return "not built";
    case CaseStatus::kSkipped:
      return "skipped";
  }
  return "skipped";
}

Result<std::vector<BehaviourCase>> BehaviourCases() {
  const auto& defs = behaviour::CaseDefs();
  if (!defs) return std::unexpected(defs.error());
  std::vector<BehaviourCase> out;
  for (const auto& d : *defs) out.push_back({d.id, d.checks, d.questions});
  return out;
}

Result<BehaviourReport> RunBehaviour(const BehaviourOptions& o, const ClientFactory& clients) {
  const auto& defs = behaviour::CaseDefs();
  if (!defs) return std::unexpected(defs.error());
  for (const auto& id : o.only) {
    if (!behaviour::FindCase(id)) {
      std::string known;
      for (const auto& d : *defs) known += (known.empty() ? "" : ", ") + d.id;
      return Fail(Error::Code::kUsage,
                  "no behaviour case named \"" + id + "\"; the cases are: " + known);
    }
  }
  BehaviourReport report;
  report.created_at = trace::UtcTimestamp();
  report.scripted = o.scripted;
  report.model = o.model;
  report.source = o.source.string();
  auto before = Sha256OfFile(o.source);
  if (!before) {
    return Fail(Error::Code::kData,
                before.error().message + "; the behaviour suite needs data/chinook.sqlite");
  }
  report.source_sha256_before = *before;
  auto work = WorkDir::Make(o.work_dir);
  if (!work) return std::unexpected(work.error());
  auto copies = behaviour::MakeCopies(o.source, work->path());
  if (!copies) return std::unexpected(copies.error());
  report.copy = copies->copy.string();
  report.wide_copy = copies->wide.string();
  report.planted = behaviour::PlantedSql();
  for (const auto& def : *defs) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), def.id) == o.only.end()) {
      continue;
    }
    report.cases.push_back(RunCase(def, o, *copies, clients));
    const CaseResult& r = report.cases.back();
    switch (r.status) {
      case CaseStatus::kPass:
        ++report.passed;
        break;
      case CaseStatus::kFail:
        ++report.failed;
        break;
      case CaseStatus::kNotBuilt:
        ++report.not_built;
        break;
      case CaseStatus::kSkipped:
        ++report.skipped;
        break;
    }
    if (report.model.empty() && !r.trace_paths.empty()) {
      if (auto t = trace::ReadTrace(r.trace_paths.front())) report.model = t->model;
    }
  }
  auto after = Sha256OfFile(o.source);
  report.source_sha256_after = after ? *after : "unreadable: " + after.error().message;
  return report;
}

Result<ClientFactory> BehaviourFixtureClients(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Fail(Error::Code::kUsage, "the behaviour fixtures directory " + dir.string() +
                                         " is not a directory; run from the repository root");
  }
  struct Fixture {
    std::string question;
    std::vector<std::string> data;
    json doc;
    std::string origin;
  };
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  auto fixtures = std::make_shared<std::vector<Fixture>>();
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string problem = "unreadable";
    const json doc = in ? ParseJson(std::string((std::istreambuf_iterator<char>(in)),
                                                std::istreambuf_iterator<char>()),
                                    &problem)
                        : json(json::value_t::discarded);
    if (doc.is_discarded() || !doc.is_object()) {
      return Fail(Error::Code::kData, "behaviour fixture " + f.string() +
                                          " is not a JSON object (" + problem +
                                          "); fix or remove it");
    }
    if (!doc.contains("question") || !doc["question"].is_string()) {
      return Fail(Error::Code::kData, "behaviour fixture " + f.string() + " has no \"question\"");
    }
    if (doc.value("source", json()) != "scripted") {
      return Fail(Error::Code::kData, "behaviour fixture " + f.string() +
                                          " is not labelled \"source\": \"scripted\"; hand-"
                                          "written turns must say so");
    }
    Fixture fx{llm::RecordingKey(doc["question"].get<std::string>()), {}, doc, f.string()};
    if (doc.contains("data") && doc["data"].is_array()) {
      for (const auto& d : doc["data"]) {
        if (d.is_string()) fx.data.push_back(d.get<std::string>());
      }
    }
    fx.data = llm::DataFileNames(fx.data);
    fixtures->push_back(std::move(fx));
  }
  return ClientFactory(
      [fixtures, dir](
          const std::string& question,
          const std::vector<std::string>& data) -> Result<std::unique_ptr<llm::Client>> {
        const std::string q = llm::RecordingKey(question);
        const auto names = llm::DataFileNames(data);
        for (const auto& fx : *fixtures) {
          if (fx.question == q && (fx.data.empty() || fx.data == names)) {
            return llm::MakeReplayClientFromJson(fx.doc, fx.origin);
          }
        }
        return Fail(Error::Code::kUsage,
                    "no recorded turns in " + dir.string() + " for this question on this data");
      });
}

json BehaviourJson(const BehaviourReport& r) {
  json cases = json::array();
  for (const auto& c : r.cases) {
    json expected = c.expected.empty() ? json(nullptr) : ParseJson(c.expected);
    if (expected.is_discarded()) expected = c.expected;
    cases.push_back({{"id", c.id},
                     {"checks", c.checks},
                     {"questions", c.questions},
                     {"status", std::string(CaseStatusName(c.status))},
                     {"reason", c.reason},
                     {"expected", expected},
                     {"run_ids", c.run_ids},
                     {"trace_paths", c.trace_paths}});
  }
  return {{"suite", "behaviour"},
          {"created_at", r.created_at},
          {"turns", r.scripted ? "scripted" : "live"},
          {"label", r.scripted ? "harness run on scripted model turns, not a model's quality"
                               : "live run of the model named here"},
          {"model", r.model},
          {"source", r.source},
          {"source_sha256_before", r.source_sha256_before},
          {"source_sha256_after", r.source_sha256_after},
          {"copy", r.copy},
          {"wide_copy", r.wide_copy},
          {"planted", r.planted},
          {"counts",
           {{"pass", r.passed},
            {"fail", r.failed},
            {"not built", r.not_built},
            {"skipped", r.skipped}}},
          {"cases", cases}};
}

std::string BehaviourMarkdown(const BehaviourReport& r) {
  std::string md = "# Behaviour suite\n\n";
  if (r.scripted) {
    md +=
        "**Harness run on scripted model turns** (fixtures/behaviour, labelled \"source\": "
        "\"scripted\"): the tools really ran on a copy of Chinook and every check is real, but "
        "the model turns were written by hand. This tests quarry and the checks, not any "
        "model's quality.\n\n";
  } else {
    md += "Live run: model `" + MarkdownCell(r.model) + "`.\n\n";
  }
  md += "Run " + r.created_at + " on a copy of `" + MarkdownCell(r.source) + "` (sha256 " +
        r.source_sha256_before +
        (r.source_sha256_after == r.source_sha256_before
             ? ", unchanged after the suite"
             : ", CHANGED after the suite: " + r.source_sha256_after) +
        ") with planted rows:\n\n";
  for (const auto& p : r.planted) md += "- `" + MarkdownCell(p) + "`\n";
  md += "\n" + std::to_string(r.passed) + " pass, " + std::to_string(r.failed) + " fail, " +
        std::to_string(r.not_built) + " not built, " + std::to_string(r.skipped) +
        " skipped.\n\n| case | checks | status | reason | runs |\n|---|---|---|---|---|\n";
  for (const auto& c : r.cases) {
    std::string runs;
    for (size_t i = 0; i < c.run_ids.size(); ++i) {
      runs += (i ? "<br>" : "") + std::string("`") + c.run_ids[i] + "`";
    }
    md += "| " + MarkdownCell(c.id) + " | " + MarkdownCell(c.checks) + " | " +
          std::string(CaseStatusName(c.status)) + " | " + MarkdownCell(c.reason) + " | " + runs +
          " |\n";
  }
  md += "\nTraces: `quarry view <run id>` (with the suite's --runs-dir).\n";
  return md;
}

Result<std::vector<fs::path>> WriteBehaviourResults(const BehaviourReport& report,
                                                    const fs::path& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    return Fail(Error::Code::kInternal, "cannot create " + out_dir.string() + ": " + ec.message());
  }
  const fs::path json_path = out_dir / "behaviour_results.json";
  const fs::path md_path = out_dir / "BEHAVIOUR.md";
  const std::string text =
      BehaviourJson(report).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  if (auto w = WriteFileAtomically(json_path, text); !w) return std::unexpected(w.error());
  if (auto w = WriteFileAtomically(md_path, BehaviourMarkdown(report)); !w) {
    return std::unexpected(w.error());
  }
  return std::vector<fs::path>{json_path, md_path};
}

}  // namespace quarry::bench
