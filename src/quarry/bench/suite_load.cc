// Loading the task suite (suite.h): suite.json, truth.json and the fixtures, checked field by
// field so that a mistake in a task file is reported with the file, the task and the field,
// before any run starts.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>

#include "quarry/common/read_file.h"
#include "quarry/bench/suite.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"

namespace quarry::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const std::set<std::string, std::less<>> kDifficulties = {"easy", "medium", "hard"};
const std::set<std::string, std::less<>> kTags = {"aggregation",   "group-by",      "filters",
                                                  "time-series",   "correlation",   "nulls",
                                                  "type-coercion", "messy-columns", "joins"};

std::string Join(const std::set<std::string, std::less<>>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Error DataError(const fs::path& file, const std::string& what) {
  return {Error::Code::kData, file.string() + ": " + what};
}

Result<json> ReadJsonFile(const fs::path& file) {
  const Result<std::string> text = ReadFileText(file, "");
  if (!text) return std::unexpected(text.error());
  std::string problem = "not valid JSON";
  json doc = ParseJson(*text, &problem);
  if (doc.is_discarded()) {
    return std::unexpected(DataError(file, problem + "; fix the file (see tasks/README.md)"));
  }
  if (!doc.is_object()) {
    return std::unexpected(DataError(file, "should hold a JSON object, found " + JsonKind(doc)));
  }
  return doc;
}

bool ValidId(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// An item list: each entry a non-empty string or a non-empty array of non-empty strings.
std::string ReadItems(const json& v, std::vector<Alternatives>& out) {
  if (!v.is_array()) return "should be an array of strings or of arrays of strings";
  for (const json& item : v) {
    Alternatives alts;
    if (item.is_string()) {
      alts.push_back(item.get<std::string>());
    } else if (item.is_array() && !item.empty()) {
      for (const json& a : item) {
        if (!a.is_string()) return "has an alternative that is " + JsonKind(a) + ", not a string";
        alts.push_back(a.get<std::string>());
      }
    } else {
      return "has an item that is " + JsonKind(item) +
             (item.is_array() ? " with no alternatives" : "") + ", not a string or an array";
    }
    for (const auto& a : alts) {
      if (a.find_first_not_of(" \t\n") == std::string::npos) return "has an empty string";
    }
    out.push_back(std::move(alts));
  }
  return "";
}

Result<Task> ReadTask(const json& t, size_t index, const fs::path& file, const fs::path& root,
                      std::set<std::string>& seen) {
  const std::string at = "tasks[" + std::to_string(index) + "]";
  if (!t.is_object()) return std::unexpected(DataError(file, at + " should be an object"));
  Task task;
  if (auto p = ReadJsonField(t, "id", task.id, at); !p.empty()) {
    return std::unexpected(DataError(file, p));
  }
  if (!ValidId(task.id)) {
    return std::unexpected(
        DataError(file, at + ": field 'id' should match [a-z0-9_]+, found \"" + task.id + "\""));
  }
  if (!seen.insert(task.id).second) {
    return std::unexpected(DataError(file, "task " + task.id + ": the id is used twice"));
  }
  const std::string where = "task " + task.id;
  auto field_error = [&](const std::string& problem) {
    return std::unexpected(DataError(file, where + ": " + problem));
  };
  for (const char* key : {"question", "difficulty", "grader"}) {
    if (!t.contains(key)) return field_error(std::string("field '") + key + "' is missing");
  }
  std::string grader;
  for (auto [key, out] :
       {std::pair{"question", &task.question}, std::pair{"difficulty", &task.difficulty},
        std::pair{"grader", &grader}, std::pair{"rubric", &task.rubric}}) {
    if (auto p = ReadJsonField(t, key, *out); !p.empty()) return field_error(p);
  }
  if (task.question.find_first_not_of(" \t\n") == std::string::npos) {
    return field_error("field 'question' is empty");
  }
  if (auto p = ReadJsonField(t, "data", task.data); !p.empty()) return field_error(p);
  if (task.data.empty()) return field_error("field 'data' should name at least one data file");
  for (const std::string& d : task.data) {
    const fs::path path = fs::path(d).is_absolute() ? fs::path(d) : root / d;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      return field_error("data file " + d + " does not exist (looked for " + path.string() + ")");
    }
    task.data_paths.push_back(path);
  }
  if (!kDifficulties.contains(task.difficulty)) {
    return field_error("unknown difficulty \"" + task.difficulty +
                       "\"; use one of: " + Join(kDifficulties));
  }
  if (auto p = ReadJsonField(t, "tags", task.tags); !p.empty()) return field_error(p);
  for (const std::string& tag : task.tags) {
    if (!kTags.contains(tag)) {
      return field_error("unknown tag \"" + tag + "\"; use any of: " + Join(kTags));
    }
  }
  if (grader == "numeric") {
    task.grader = GraderKind::kNumeric;
    const json tol = t.value("tolerance", json());
    if (!tol.is_object()) {
      return field_error("a numeric task needs 'tolerance': {\"abs\": x} or {\"rel\": r}");
    }
    const bool has_abs = tol.contains("abs"), has_rel = tol.contains("rel");
    if (has_abs == has_rel || tol.size() != 1) {
      return field_error("field 'tolerance' should hold exactly one of abs or rel, found " +
                         tol.dump());
    }
    const json& amount = has_abs ? tol["abs"] : tol["rel"];
    if (!amount.is_number() || !std::isfinite(amount.get<double>()) || amount.get<double>() < 0) {
      return field_error("field 'tolerance." + std::string(has_abs ? "abs" : "rel") +
                         "' should be a finite number >= 0, found " + amount.dump());
    }
    task.tolerance = {has_rel, amount.get<double>()};
  } else if (grader == "predicate") {
    task.grader = GraderKind::kPredicate;
  } else if (grader == "judge") {
    task.grader = GraderKind::kJudge;
    if (task.rubric.find_first_not_of(" \t\n") == std::string::npos) {
      return field_error("a judge task needs a 'rubric': what a good answer says");
    }
  } else {
    return field_error("unknown grader \"" + grader + "\"; use numeric, predicate or judge");
  }
  return task;
}

Result<void> ReadTruth(Task& task, const json& truth, const fs::path& file) {
  const std::string where = "task " + task.id + ": ";
  auto fail = [&](const std::string& problem) {
    return std::unexpected(DataError(file, where + problem));
  };
  if (!truth.is_object()) return fail("the truth should be an object, found " + JsonKind(truth));
  switch (task.grader) {
    case GraderKind::kNumeric: {
      const json v = truth.value("values", json());
      if (!v.is_array() || v.empty()) {
        return fail(
            "a numeric task's truth needs 'values': a non-empty array of numbers "
            "(regenerate with python3 scripts/ground_truth.py)");
      }
      for (const json& x : v) {
        if (!x.is_number() || !std::isfinite(x.get<double>())) {
          return fail("'values' holds " + x.dump() + ", not a finite number");
        }
        task.values.push_back(x.get<double>());
      }
      break;
    }
    case GraderKind::kPredicate: {
      for (auto [key, out] : {std::pair{"must_contain", &task.must_contain},
                              std::pair{"must_not_contain", &task.must_not_contain}}) {
        if (!truth.contains(key)) continue;
        if (auto p = ReadItems(truth[key], *out); !p.empty()) {
          return fail("'" + std::string(key) + "' " + p);
        }
      }
      if (task.must_contain.empty() && task.must_not_contain.empty()) {
        return fail("a predicate task's truth needs 'must_contain' or 'must_not_contain'");
      }
      break;
    }
    case GraderKind::kJudge: {
      if (auto p = ReadJsonField(truth, "facts", task.facts); !p.empty()) return fail(p);
      if (task.facts.empty()) {
        return fail(
            "a judge task's truth needs 'facts': the computed figures the judge "
            "checks the answer against");
      }
      break;
    }
  }
  return {};
}

// `server`: a server engine's fixture (fixtures/postgres/<id>.json, fixtures/mysql/<id>.json),
// read into task.server_fixtures[server]; empty: fixtures/<id>.json.
Result<void> ReadFixture(Task& task, const fs::path& file, const std::string& server = "") {
  const bool postgres = !server.empty();
  auto doc = ReadJsonFile(file);
  if (!doc) return std::unexpected(doc.error());
  auto fail = [&](const std::string& problem) {
    return std::unexpected(DataError(file, "fixture of task " + task.id + ": " + problem));
  };
  if (postgres && !RunsOnServer(task)) {
    return fail(std::string("only tasks whose data is ") + kServerStandIn +
                " run on a server; remove this file or fix the task's data");
  }
  if (postgres && JsonString(*doc, "engine") != server) {
    return fail("a fixture under fixtures/" + ServerFixtureDir(server) + "/ says \"engine\": \"" +
                server + "\" (its SQL is that server's dialect)");
  }
  if (!doc->contains("turns") || !(*doc)["turns"].is_array()) {
    return fail("field 'turns' should be the array of scripted model turns");
  }
  const std::string question = JsonString(*doc, "question");
  if (llm::RecordingKey(question) != llm::RecordingKey(task.question)) {
    return fail("its question \"" + question + "\" is not the task's \"" + task.question + "\"");
  }
  std::vector<std::string> data;
  if (auto p = ReadJsonField(*doc, "data", data); !p.empty()) return fail(p);
  if (!data.empty() && llm::DataFileNames(data) != llm::DataFileNames(task.data)) {
    return fail("its data files are not the task's");
  }
  if (postgres && doc->contains("judge_turns")) {
    return fail("judge replies judge the answer, not the SQL: keep them in fixtures/" + task.id +
                ".json only");
  }
  if (doc->contains("judge_turns")) {
    const json& jt = (*doc)["judge_turns"];
    if (!jt.is_array() || jt.size() != static_cast<size_t>(kJudgeCalls)) {
      return fail("field 'judge_turns' should hold exactly " + std::to_string(kJudgeCalls) +
                  " judge replies");
    }
    for (const json& turn : jt) {
      if (turn.is_string()) {
        task.judge_turns.push_back({{"content", turn}});
      } else if (turn.is_object() && turn.contains("content") && turn["content"].is_string()) {
        task.judge_turns.push_back(turn);
      } else {
        return fail(
            "each of 'judge_turns' should be a string or an object with a 'content' "
            "string, found " +
            JsonKind(turn));
      }
    }
    doc->erase("judge_turns");
  }
  // Replaying it checks every turn's shape; a mistake there is the file's, named now.
  if (auto client = llm::MakeReplayClientFromJson(*doc, file.string()); !client) {
    return std::unexpected(Error{Error::Code::kData, client.error().message});
  }
  if (postgres) {
    task.server_fixtures[server] = std::move(*doc);
    task.server_fixture_paths[server] = file;
  } else {
    task.fixture = std::move(*doc);
    task.fixture_path = file;
  }
  return {};
}

}  // namespace

std::string_view GraderName(GraderKind kind) {
  switch (kind) {
    case GraderKind::kNumeric:
      return "numeric";
    case GraderKind::kPredicate:
      return "predicate";
    case GraderKind::kJudge:
      return "judge";
  }
  return "numeric";
}

bool RunsOnServer(const Task& task) {
  return task.data.size() == 1 && task.data[0] == kServerStandIn;
}

std::string ServerFixtureDir(std::string_view engine) {
  return engine == "postgresql" ? "postgres" : std::string(engine);
}

Result<Suite> LoadSuite(const fs::path& dir, const fs::path& root) {
  Suite suite;
  suite.dir = dir;
  suite.root = root;
  const fs::path suite_file = dir / "suite.json";
  std::error_code ec;
  if (!fs::is_regular_file(suite_file, ec)) {
    return Fail(Error::Code::kUsage, "no task suite at " + suite_file.string() +
                                         "; pass --tasks DIR (a folder with suite.json and "
                                         "truth.json, see tasks/README.md)");
  }
  auto doc = ReadJsonFile(suite_file);
  if (!doc) return std::unexpected(doc.error());
  if (!doc->contains("tasks") || !(*doc)["tasks"].is_array()) {
    return std::unexpected(DataError(suite_file, "field 'tasks' should be an array of tasks"));
  }
  if ((*doc)["tasks"].empty()) {
    return std::unexpected(DataError(suite_file, "field 'tasks' holds no task"));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < (*doc)["tasks"].size(); ++i) {
    auto task = ReadTask((*doc)["tasks"][i], i, suite_file, root, seen);
    if (!task) return std::unexpected(task.error());
    suite.tasks.push_back(std::move(*task));
  }

  const fs::path truth_file = dir / "truth.json";
  if (!fs::is_regular_file(truth_file, ec)) {
    return std::unexpected(
        DataError(truth_file, "is missing; generate it with python3 scripts/ground_truth.py"));
  }
  auto truth = ReadJsonFile(truth_file);
  if (!truth) return std::unexpected(truth.error());
  if (!truth->contains("tasks") || !(*truth)["tasks"].is_object()) {
    return std::unexpected(DataError(truth_file, "field 'tasks' should be an object by task id"));
  }
  for (Task& task : suite.tasks) {
    if (!(*truth)["tasks"].contains(task.id)) {
      return std::unexpected(DataError(truth_file, "task " + task.id +
                                                       " has no truth; regenerate it with "
                                                       "python3 scripts/ground_truth.py"));
    }
    if (auto r = ReadTruth(task, (*truth)["tasks"][task.id], truth_file); !r) {
      return std::unexpected(r.error());
    }
    const fs::path fixture = dir / "fixtures" / (task.id + ".json");
    if (fs::is_regular_file(fixture, ec)) {
      if (auto r = ReadFixture(task, fixture); !r) return std::unexpected(r.error());
    }
    for (const char* server : {"postgresql", "mysql"}) {
      const fs::path file = dir / "fixtures" / ServerFixtureDir(server) / (task.id + ".json");
      if (fs::is_regular_file(file, ec)) {
        if (auto r = ReadFixture(task, file, server); !r) return std::unexpected(r.error());
      }
    }
  }
  return suite;
}

}  // namespace quarry::bench
