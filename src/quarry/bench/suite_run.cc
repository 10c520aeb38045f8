// Running the task suite (suite.h): the selected tasks in every arm and sample, one at a time
// or `jobs` at a time, each run with its own engine and model client and its own folder under
// the bench's runs directory; the whole bench kept within --max-cost; every answer graded.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include "quarry/bench/suite.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const char* kNoFixture = "no fixture for --offline";
std::string NoServerFixture(const std::string& engine) {
  return "no " + engine + " fixture (fixtures/" + ServerFixtureDir(engine) + "/) for --offline";
}
const char* kNeedsJudge = "needs a live judge";
const char* kInterrupted = "interrupted";

std::string BudgetReason(double max_cost_usd) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "budget: --max-cost %.4g USD reached", max_cost_usd);
  return buf;
}

// The knowledge a task is given, keyed by its first data file.
std::string KnowledgeKey(const Task& task) {
  return task.data_paths.empty() ? std::string() : task.data_paths.front().string();
}

struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0;
  double spent = 0.0;
  double reserved = 0.0;
  int in_flight = 0;
  bool budget_stopped = false;
  bool interrupted = false;
  std::string model, provider, judge_model;
  std::string server;  // the server as the first engine opened on it names it
};

class Runner {
 public:
  // tasks_of[i] is the task of result.runs[i].
  Runner(const BenchOptions& options, BenchResult& result, std::vector<const Task*> tasks_of,
         std::map<std::string, std::shared_ptr<const knowledge::Knowledge>> knowledge)
      : options_(options),
        result_(result),
        tasks_of_(std::move(tasks_of)),
        knowledge_(std::move(knowledge)) {}

  void Run() {
    const int jobs = std::max(1, std::min<int>(options_.jobs, static_cast<int>(pending())));
    std::vector<std::thread> workers;
    for (int i = 1; i < jobs; ++i) workers.emplace_back([this] { Work(); });
    Work();
    for (auto& w : workers) w.join();
    result_.budget_stopped = shared_.budget_stopped;
    result_.interrupted = shared_.interrupted;
    if (!shared_.model.empty()) result_.model = shared_.model;
    if (!shared_.provider.empty()) result_.provider = shared_.provider;
    if (!shared_.judge_model.empty()) result_.judge_model = shared_.judge_model;
    result_.server = shared_.server;
  }

 private:
  size_t pending() const {
    size_t n = 0;
    for (const TaskRun& r : result_.runs) n += Pending(r) ? 1 : 0;
    return n;
  }
  bool Pending(const TaskRun& r) const {
    return r.status == RunStatus::kSkipped && r.reason.empty();
  }

  void Work() {
    std::unique_lock lock(shared_.mu);
    const double bound = options_.config.max_cost_usd;
    while (true) {
      while (shared_.next < result_.runs.size() && !Pending(result_.runs[shared_.next])) {
        ++shared_.next;
      }
      if (shared_.next >= result_.runs.size()) return;
      TaskRun& run = result_.runs[shared_.next];
      if (options_.stop.stop_requested()) {
        shared_.interrupted = true;
        run.reason = kInterrupted;
        continue;
      }
      if (shared_.budget_stopped) {
        run.reason = BudgetReason(*options_.max_cost_usd);
        continue;
      }
      if (options_.max_cost_usd &&
          shared_.spent + shared_.reserved + bound > *options_.max_cost_usd + 1e-12) {
        // A run in flight may cost less than its bound: wait for it before deciding.
        if (shared_.in_flight > 0) {
          shared_.cv.wait(lock);
          continue;
        }
        shared_.budget_stopped = true;
        continue;
      }
      const size_t index = shared_.next++;
      shared_.reserved += bound;
      ++shared_.in_flight;
      lock.unlock();
      TaskRun done = RunOne(*tasks_of_[index], result_.runs[index]);
      lock.lock();
      shared_.spent += done.cost_usd;
      shared_.reserved -= bound;
      --shared_.in_flight;
      if (done.reason == kInterrupted) shared_.interrupted = true;
      result_.runs[index] = std::move(done);
      if (options_.on_run) options_.on_run(Line(result_.runs[index]));
      shared_.cv.notify_all();
    }
  }

  std::string Line(const TaskRun& r) const {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "[%-3s] %s #%d %-7s steps %d  repairs %d/%d  send-backs %d  $%.4f  %lld ms  "
                  "on %s",
                  ArmName(options_.ablation, r.arm).c_str(), r.task.c_str(), r.sample,
                  std::string(RunStatusName(r.status)).c_str(), r.metrics.steps,
                  r.metrics.repair_successes, r.metrics.repair_attempts, r.metrics.send_backs,
                  r.cost_usd, static_cast<long long>(r.metrics.wall_ms),
                  r.engine.empty() ? "no engine" : r.engine.c_str());
    return std::string(buf) + (r.reason.empty() ? "" : "  " + r.reason);
  }

  Result<std::unique_ptr<llm::Client>> AgentClient(const Task& task) {
    if (options_.offline && !options_.server.empty()) {
      return llm::MakeReplayClientFromJson(
          task.server_fixtures.at(options_.server_engine),
          task.server_fixture_paths.at(options_.server_engine).string());
    }
    if (options_.offline)
      return llm::MakeReplayClientFromJson(*task.fixture, task.fixture_path.string());
    auto client = options_.live_client(task.question, task.data);
    if (client) {
      std::lock_guard lock(shared_.mu);
      if (shared_.model.empty()) {
        shared_.model = (*client)->model();
        shared_.provider = llm::ProviderName((*client)->provider());
      }
    }
    return client;
  }

  Result<std::unique_ptr<llm::Client>> JudgeClient(const Task& task) {
    if (options_.offline) {
      const json doc = {
          {"source", "scripted"}, {"model", "scripted-judge"}, {"turns", json(task.judge_turns)}};
      return llm::MakeReplayClientFromJson(doc, task.fixture_path.string() + " judge_turns");
    }
    auto client = options_.live_judge();
    if (client) {
      std::lock_guard lock(shared_.mu);
      if (shared_.judge_model.empty()) shared_.judge_model = (*client)->model();
    }
    return client;
  }

  TaskRun RunOne(const Task& task, TaskRun run) {
    auto engine = options_.server.empty()
                      ? options_.open_engine(task.data_paths)
                      : options_.open_engine({std::filesystem::path(options_.server)});
    if (!engine) {
      run.status = RunStatus::kError;
      run.reason = "the data did not open: " + engine.error().message;
      return run;
    }
    run.engine = engine::DialectName((*engine)->dialect());
    for (const engine::Source& source : (*engine)->sources()) {
      run.data += (run.data.empty() ? "" : ", ") + source.path;
    }
    if (!options_.server.empty()) {
      std::lock_guard lock(shared_.mu);
      if (shared_.server.empty()) shared_.server = run.data;
    }
    auto client = AgentClient(task);
    if (!client) {
      run.status = RunStatus::kError;
      run.reason = "no model client: " + client.error().message;
      return run;
    }
    agent::Config config = options_.config;
    config.self_correction = run.self_correction;
    config.knowledge = nullptr;
    if (run.knowledge) config.knowledge = knowledge_.at(KnowledgeKey(task));
    agent::RunInput input;
    input.question = task.question;
    input.stop = options_.stop;
    auto record = RunAgent(input, **engine, **client, config, options_.runs_dir);
    if (!record) {
      run.status = RunStatus::kError;
      run.reason = record.error().message;
      return run;
    }
    run.ran = true;
    run.run_id = record->trace.id;
    run.trace_path = record->trace_path;
    run.stop_reason = trace::StopReasonName(record->trace.stop_reason);
    run.answer = record->trace.answer;
    run.metrics = MetricsOf(record->trace);
    run.cost_usd = run.metrics.cost_usd;
    if (record->trace.stop_reason == trace::StopReason::kInterrupted) {
      run.status = RunStatus::kError;
      run.reason = kInterrupted;
      return run;
    }
    if (!run.metrics.answered) {
      run.status = RunStatus::kFail;
      run.reason = "no answer: the run ended " + run.stop_reason;
      return run;
    }
    if (!run.metrics.grounded) {
      run.status = RunStatus::kFail;
      run.reason = "the answer is not grounded";
      return run;
    }
    Grade grade;
    switch (task.grader) {
      case GraderKind::kNumeric:
        grade = GradeNumeric(run.answer, task.values, task.tolerance);
        break;
      case GraderKind::kPredicate:
        grade = GradePredicate(run.answer, task.must_contain, task.must_not_contain);
        break;
      case GraderKind::kJudge: {
        auto judge = JudgeClient(task);
        if (!judge) {
          run.status = RunStatus::kError;
          run.reason = "no judge client: " + judge.error().message;
          return run;
        }
        run.judge = JudgeAnswer(**judge, task, run.answer);
        run.cost_usd += run.judge->cost_usd;
        const JudgeResult& j = *run.judge;
        const std::string tally = std::to_string(j.pass_votes) + " pass, " +
                                  std::to_string(j.fail_votes) + " fail, " +
                                  std::to_string(j.no_votes) + " no vote";
        if (!j.decided) {
          run.status = RunStatus::kError;
          run.reason = "judge: no majority (" + tally + ")";
          return run;
        }
        grade.pass = j.pass;
        grade.reason = "judge: " + tally;
        for (const JudgeVote& v : j.votes) {
          if (v.verdict == (j.pass ? "pass" : "fail") && !v.reason.empty()) {
            grade.reason += "; " + v.reason;
            break;
          }
        }
        break;
      }
    }
    run.status = grade.pass ? RunStatus::kPass : RunStatus::kFail;
    run.reason = grade.reason;
    return run;
  }

  const BenchOptions& options_;
  BenchResult& result_;
  std::vector<const Task*> tasks_of_;
  // Read before the workers start, only read after.
  const std::map<std::string, std::shared_ptr<const knowledge::Knowledge>> knowledge_;
  Shared shared_;
};

}  // namespace

Result<std::shared_ptr<const knowledge::Knowledge>> KnowledgeFor(
    const std::filesystem::path& dir, const std::vector<std::filesystem::path>& data) {
  std::filesystem::path folder = dir;
  std::error_code ec;
  if (!data.empty() && !data.front().stem().empty() &&
      std::filesystem::is_directory(dir / data.front().stem(), ec)) {
    folder = dir / data.front().stem();
  }
  auto k = knowledge::Load(folder);
  if (!k) return std::unexpected(k.error());
  return std::make_shared<const knowledge::Knowledge>(std::move(*k));
}

std::string_view RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kPass:
      return "pass";
    case RunStatus::kFail:
      return "fail";
    case RunStatus::kSkipped:
      return "skipped";
    case RunStatus::kError:
      return "error";
  }
  return "error";
}

Result<BenchResult> RunBench(const Suite& suite, const BenchOptions& options) {
  if (options.arms.empty()) return Fail(Error::Code::kUsage, "no arm to run: pass --arms on,off");
  if (options.samples < 1) return Fail(Error::Code::kUsage, "--samples must be at least 1");
  if (options.jobs < 1) return Fail(Error::Code::kUsage, "--jobs must be at least 1");
  if (!options.open_engine) return Fail(Error::Code::kUsage, "no way to open the data");
  if (!options.offline && (!options.live_client || !options.live_judge)) {
    return Fail(Error::Code::kUsage, "a live bench needs a model: configure one or pass --offline");
  }
  std::vector<const Task*> selected;
  for (const Task& t : suite.tasks) {
    if (!options.server.empty() && !RunsOnServer(t)) continue;
    bool tagged = options.tags.empty();
    for (const std::string& tag : options.tags) {
      tagged = tagged || std::find(t.tags.begin(), t.tags.end(), tag) != t.tags.end();
    }
    if (tagged) selected.push_back(&t);
  }
  if (selected.empty()) {
    std::string tags;
    for (const auto& t : options.tags) tags += (tags.empty() ? "" : ",") + t;
    if (!options.server.empty()) {
      return Fail(Error::Code::kUsage, "a server runs the tasks whose data is " +
                                           std::string(kServerStandIn) +
                                           (tags.empty() ? "" : " (and --tags " + tags + ")") +
                                           ": none in " + (suite.dir / "suite.json").string());
    }
    return Fail(Error::Code::kUsage,
                "--tags " + tags + " selects no task of " + (suite.dir / "suite.json").string());
  }
  if (options.limit > 0 && selected.size() > static_cast<size_t>(options.limit)) {
    selected.resize(static_cast<size_t>(options.limit));
  }

  BenchResult result;
  result.date = trace::UtcTimestamp();
  result.mode = options.offline ? "offline" : "live";
  result.source = options.offline ? "scripted" : "live";
  result.model = options.offline ? "none (scripted turns)" : "";
  result.provider = options.offline ? llm::ProviderName(llm::Provider::kReplay) : "";
  result.judge_model = options.offline ? "none (scripted judge replies)" : "";
  result.runs_dir = options.runs_dir;
  result.samples = options.samples;
  result.jobs = options.jobs;
  result.max_cost_usd = options.max_cost_usd;
  result.tags = options.tags;
  result.limit = options.limit;
  result.tasks_selected = static_cast<int>(selected.size());
  result.on_server = !options.server.empty();
  result.server_engine = options.server_engine;

  std::vector<const Task*> task_of_run;
  for (const Task* task : selected) {
    std::string skip;
    if (options.offline && result.on_server &&
        !task->server_fixtures.contains(options.server_engine)) {
      skip = NoServerFixture(options.server_engine);
    } else if (options.offline && !result.on_server && !task->fixture) {
      skip = kNoFixture;
    } else if (options.offline && task->grader == GraderKind::kJudge && task->judge_turns.empty()) {
      skip = kNeedsJudge;
    }
    for (int sample = 1; sample <= options.samples; ++sample) {
      for (bool arm : options.arms) {
        TaskRun run;
        run.task = task->id;
        run.grader = task->grader;
        run.arm = arm;
        const bool knowledge_arm = options.ablation == Ablation::kKnowledge;
        run.self_correction = knowledge_arm ? options.config.self_correction : arm;
        run.knowledge = knowledge_arm && arm;
        run.sample = sample;
        run.status = RunStatus::kSkipped;
        run.reason = skip;  // "" : still to run
        result.runs.push_back(std::move(run));
        task_of_run.push_back(task);
      }
    }
  }
  // Each task's knowledge, read once before any run: a folder that does not load stops the
  // bench here, not in every run.
  std::map<std::string, std::shared_ptr<const knowledge::Knowledge>> knowledge;
  if (options.ablation == Ablation::kKnowledge) {
    for (const Task* task : selected) {
      if (knowledge.contains(KnowledgeKey(*task))) continue;
      auto k = KnowledgeFor(options.knowledge, task->data_paths);
      if (!k) return Fail(Error::Code::kUsage, "--knowledge: " + k.error().message);
      knowledge[KnowledgeKey(*task)] = std::move(*k);
    }
  }
  std::error_code ec;
  fs::create_directories(options.runs_dir, ec);
  if (ec) {
    return Fail(Error::Code::kInternal,
                "cannot create the runs folder " + options.runs_dir.string() + ": " + ec.message());
  }
  Runner runner(options, result, std::move(task_of_run), std::move(knowledge));
  runner.Run();

  result.ablation = options.ablation;
  result.knowledge = options.knowledge;
  for (bool arm : options.arms) {
    result.arms.push_back(Summarise(result.runs, arm, options.ablation));
  }
  const bool on = std::find(options.arms.begin(), options.arms.end(), true) != options.arms.end();
  const bool off = std::find(options.arms.begin(), options.arms.end(), false) != options.arms.end();
  if (on && off) result.paired = ComparePaired(result.runs);
  for (const TaskRun& r : result.runs) result.total_cost_usd += r.cost_usd;
  return result;
}

}  // namespace quarry::bench
