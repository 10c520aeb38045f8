// `quarry report`, gathering (report.h): what the given path is, which traces it names, and
// each trace read and counted; one that cannot be read is kept as a reason, never fatal.
#include "quarry/bench/report.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr int kMaxScanDepth = 3;  // runs/, runs/bench-<id>/, and a run folder below them
constexpr size_t kMaxListingBytes = size_t{256} << 20;

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A run folder's record: trace.json, or events.jsonl alone when the run was killed.
std::optional<fs::path> RunRecordIn(const fs::path& dir) {
  if (IsFile(dir / "trace.json")) return dir / "trace.json";
  if (IsFile(dir / "events.jsonl")) return dir / "events.jsonl";
  return std::nullopt;
}

Result<std::string> ReadText(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return Fail(Error::Code::kData, "cannot read " + path.string() + ": " + ec.message());
  if (size > kMaxListingBytes) {
    return Fail(Error::Code::kData, path.string() + " is larger than 256 MiB; not a listing");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(Error::Code::kData, "cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Fail(Error::Code::kData, "cannot read " + path.string());
  return text.str();
}

std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A task or question id, which a listing may write as text or as a number.
std::string LabelOf(const json& entry) {
  for (const char* key : {"task", "question_id", "id"}) {
    auto it = entry.find(key);
    if (it == entry.end()) continue;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return it->dump();
  }
  return "";
}

class Collector {
 public:
  explicit Collector(Report& report) : report_(report) {}

  // Reads one trace (or events.jsonl) and counts it, or keeps why it could not be read.
  void Add(const fs::path& path, std::string group = "", std::string label = "") {
    auto trace = trace::ReadTrace(path);
    if (!trace) {
      report_.skipped.push_back({path, trace.error().message});
      return;
    }
    ReportRun run;
    run.group = std::move(group);
    run.label = std::move(label);
    run.run_id = trace->id;
    run.trace_path = path;
    run.question = trace->question;
    run.provider = trace->provider;
    run.model = trace->model;
    if (llm::ParseProvider(run.provider) == llm::Provider::kReplay) ++report_.replayed;
    run.stop_reason = trace::StopReasonName(trace->stop_reason);
    run.incomplete = trace->incomplete;
    run.metrics = MetricsOf(*trace);
    report_.runs.push_back(std::move(run));
  }

  // Every run folder under `root`, by path; a run folder's own folders (its workdir) are not
  // searched, nor are symlinked folders followed.
  void Scan(const fs::path& root) {
    if (auto record = RunRecordIn(root)) {
      Add(*record);
      return;
    }
    std::vector<fs::path> records;
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      report_.skipped.push_back({root, "cannot list the folder: " + ec.message()});
      return;
    }
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      std::error_code e;
      if (it->is_symlink(e) || !it->is_directory(e)) continue;
      if (auto record = RunRecordIn(it->path())) {
        records.push_back(*record);
        it.disable_recursion_pending();
      } else if (it.depth() + 1 >= kMaxScanDepth) {
        it.disable_recursion_pending();
      }
    }
    if (ec) report_.skipped.push_back({root, "stopped listing the folder: " + ec.message()});
    std::sort(records.begin(), records.end());
    for (const fs::path& r : records) Add(r);
  }

  // One entry of a bench results file or an eval's questions.jsonl.
  void AddListed(const json& entry, const fs::path& listing, const std::string& runs_dir) {
    const std::string group = StringField(entry, "arm");
    const std::string label = LabelOf(entry);
    std::string written = StringField(entry, "trace");
    if (written.empty()) written = StringField(entry, "trace_path");
    const std::string run_id = StringField(entry, "run_id");
    if (written.empty() && run_id.empty()) {
      ++report_.not_run;
      return;
    }
    if (!written.empty()) {
      if (auto path = ResolveTrace(written, listing)) return Add(*path, group, label);
    }
    if (!run_id.empty() && !runs_dir.empty() && SafeRunId(run_id)) {
      for (const fs::path& dir : Candidates(runs_dir, listing)) {
        if (auto record = RunRecordIn(dir / run_id)) return Add(*record, group, label);
      }
    }
    const std::string what = !written.empty() ? written : "run " + run_id;
    report_.skipped.push_back({written.empty() ? fs::path(runs_dir) / run_id : fs::path(written),
                               "listed in " + listing.string() +
                                   (label.empty() ? "" : " (" + label + ")") +
                                   ", but no trace.json or events.jsonl was found for " + what});
  }

 private:
  // A path a listing wrote: as written (from the working directory), then from the listing's
  // folder and that folder's parent (results/ sits beside runs/); a relative path written from
  // another working directory is also tried by its last components ("out/x/runs/<id>/..." as
  // "runs/<id>/..." beside the listing), down to `min_parts` components.
  static std::vector<fs::path> Candidates(const fs::path& written, const fs::path& listing,
                                          size_t min_parts = 1) {
    if (written.is_absolute()) return {written};
    const fs::path dir = listing.parent_path();
    std::vector<fs::path> parts(written.begin(), written.end());
    std::vector<fs::path> out = {written};
    for (size_t first = 0; first + min_parts <= parts.size(); ++first) {
      fs::path tail;
      for (size_t i = first; i < parts.size(); ++i) tail /= parts[i];
      out.push_back(dir / tail);
      out.push_back(dir.parent_path() / tail);
    }
    return out;
  }

  static std::optional<fs::path> ResolveTrace(const std::string& written, const fs::path& listing) {
    for (const fs::path& p : Candidates(written, listing, 2)) {
      if (IsFile(p)) return p;
      // The listing names trace.json; a killed run left only events.jsonl beside it.
      if (p.filename() == "trace.json" && IsFile(p.parent_path() / "events.jsonl")) {
        return p.parent_path() / "events.jsonl";
      }
    }
    return std::nullopt;
  }

  static bool SafeRunId(const std::string& id) {
    return id != "." && id != ".." && id.find('/') == std::string::npos &&
           id.find('\0') == std::string::npos;
  }

  Report& report_;
};

Result<json> ReadJsonFile(const fs::path& path) {
  auto text = ReadText(path);
  if (!text) return std::unexpected(text.error());
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded()) {
    return Fail(Error::Code::kData, path.string() +
                                        " is not valid JSON; give a runs folder, "
                                        "a bench results file or an eval output folder");
  }
  return doc;
}

// An eval's questions.jsonl: one JSON object per question; a line that is not one is skipped
// and said.
Result<void> AddQuestionLines(const fs::path& path, const std::string& runs_dir, Collector& c,
                              Report& report) {
  auto text = ReadText(path);
  if (!text) return std::unexpected(text.error());
  std::istringstream lines(*text);
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json entry = json::parse(line, nullptr, false);
    if (!entry.is_object()) {
      report.skipped.push_back({path, "line " + std::to_string(number) + " is not a JSON object"});
      continue;
    }
    c.AddListed(entry, path, runs_dir);
  }
  return {};
}

// An eval output folder (or its summary.json): questions.jsonl beside summary.json, the runs
// in summary.json's runs_dir.
Result<void> AddEvalOutput(const fs::path& dir, Collector& c, Report& report) {
  std::string runs_dir;
  fs::path questions = dir / "questions.jsonl";
  if (IsFile(dir / "summary.json")) {
    auto summary = ReadJsonFile(dir / "summary.json");
    if (summary && summary->is_object()) runs_dir = StringField(*summary, "runs_dir");
  }
  if (!IsFile(questions)) {
    return Fail(Error::Code::kUsage, dir.string() +
                                         " has summary.json but no questions.jsonl: "
                                         "not a complete eval output folder");
  }
  return AddQuestionLines(questions, runs_dir, c, report);
}

Result<void> AddBenchResults(const fs::path& file, const json& doc, Collector& c) {
  const std::string runs_dir = StringField(doc, "runs_dir");
  for (const json& entry : doc["runs"]) {
    if (entry.is_object()) c.AddListed(entry, file, runs_dir);
  }
  return {};
}

bool LooksLikeTrace(const json& doc) {
  return doc.contains("format_version") && doc.contains("steps");
}

// Whether a .jsonl file is a run's events (its first line an event) rather than a listing.
bool IsEventsFile(const fs::path& path) {
  if (path.filename() == "events.jsonl") return true;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json first = json::parse(line, nullptr, false);
    return first.is_object() && first.contains("event");
  }
  return false;
}

Result<void> AddFile(const fs::path& path, Collector& c, Report& report) {
  if (path.extension() == ".jsonl") {
    if (IsEventsFile(path)) {
      report.source = ReportSource::kTrace;
      c.Add(path);
      return {};
    }
    report.source = ReportSource::kEvalOutput;
    std::string runs_dir;
    if (IsFile(path.parent_path() / "summary.json")) {
      auto summary = ReadJsonFile(path.parent_path() / "summary.json");
      if (summary && summary->is_object()) runs_dir = StringField(*summary, "runs_dir");
    }
    return AddQuestionLines(path, runs_dir, c, report);
  }
  auto doc = ReadJsonFile(path);
  if (!doc) return std::unexpected(doc.error());
  if (doc->is_object() && LooksLikeTrace(*doc)) {
    report.source = ReportSource::kTrace;
    c.Add(path);
    return {};
  }
  if (doc->is_object() && doc->contains("questions_file")) {
    report.source = ReportSource::kEvalOutput;
    return AddEvalOutput(path.parent_path().empty() ? fs::path(".") : path.parent_path(), c,
                         report);
  }
  if (doc->is_object() && doc->contains("runs") && (*doc)["runs"].is_array()) {
    report.source = ReportSource::kBenchResults;
    return AddBenchResults(path, *doc, c);
  }
  return Fail(Error::Code::kUsage,
              path.string() +
                  " is neither a trace, a bench results file (an object with a "
                  "\"runs\" list) nor an eval summary; give a runs folder, "
                  "results/bench_results.json or an eval output folder");
}

std::vector<GroupFigures> Group(const std::vector<ReportRun>& runs) {
  std::vector<std::string> order;
  bool any_group = false;
  for (const ReportRun& r : runs) {
    if (!r.group.empty()) any_group = true;
    if (std::find(order.begin(), order.end(), r.group) == order.end()) order.push_back(r.group);
  }
  std::vector<GroupFigures> groups;
  if (!any_group) {
    std::vector<const ReportRun*> all;
    for (const ReportRun& r : runs) all.push_back(&r);
    groups.push_back(FiguresOf(all, ""));
    return groups;
  }
  for (const std::string& g : order) {
    std::vector<const ReportRun*> members;
    for (const ReportRun& r : runs) {
      if (r.group == g) members.push_back(&r);
    }
    // A listed run without an arm, among runs with one, is its own group: "(no arm)".
    groups.push_back(FiguresOf(members, g.empty() ? "(no arm)" : g));
  }
  return groups;
}

}  // namespace

std::string_view ReportSourceName(ReportSource source) {
  switch (source) {
    case ReportSource::kRunsFolder:
      return "runs folder";
    case ReportSource::kBenchResults:
      return "bench results";
    case ReportSource::kEvalOutput:
      return "eval output";
    case ReportSource::kTrace:
      return "trace";
  }
  return "runs folder";
}

Result<Report> BuildReport(const fs::path& path) {
  Report report;
  report.path = path;
  Collector c(report);
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    return Fail(Error::Code::kUsage, "no such file or folder: " + path.string() +
                                         "; give a runs folder (default runs/), "
                                         "results/bench_results.json or an eval output folder");
  }
  Result<void> added;
  if (fs::is_directory(status)) {
    if (IsFile(path / "bench_results.json")) {
      report.source = ReportSource::kBenchResults;
      added = AddFile(path / "bench_results.json", c, report);
    } else if (IsFile(path / "questions.jsonl") || IsFile(path / "summary.json")) {
      report.source = ReportSource::kEvalOutput;
      added = AddEvalOutput(path, c, report);
    } else {
      report.source = ReportSource::kRunsFolder;
      c.Scan(path);
    }
  } else if (fs::is_regular_file(status)) {
    added = AddFile(path, c, report);
  } else {
    return Fail(Error::Code::kUsage, path.string() + " is neither a file nor a folder");
  }
  if (!added) return std::unexpected(added.error());
  if (report.runs.empty() && report.skipped.empty()) {
    std::string message = "no runs found under " + path.string();
    if (report.not_run > 0) {
      message += ": its " + std::to_string(report.not_run) +
                 " listed entries have no run id and no trace (skipped tasks, or --gold)";
    } else if (report.source == ReportSource::kRunsFolder) {
      message +=
          " (no runs/<id>/trace.json or events.jsonl); run `quarry ask` or `quarry "
          "bench` first, or give --runs-dir's folder";
    }
    return Fail(Error::Code::kUsage, message);
  }
  report.groups = Group(report.runs);
  return report;
}

}  // namespace quarry::bench
