// Reading traces back: trace.json with every field's type checked (a wrong type names the file
// and the field), and a run that never wrote trace.json (killed) rebuilt from events.jsonl.
#include <fstream>
#include <sstream>

#include "quarry/common/read_file.h"
#include "quarry/common/json.h"
#include "quarry/common/json_fields.h"
#include "quarry/trace/trace.h"

namespace quarry::trace {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// Reads fields of one object, keeping the first problem; `where` is the object's path.
class Fields {
 public:
  Fields(const json& object, std::string where, std::string* problem)
      : object_(object), where_(std::move(where)), problem_(problem) {}

  template <typename T>
  void operator()(std::string_view key, T& out) {
    if (!problem_->empty()) return;
    *problem_ = ReadJsonField(object_, key, out, where_);
  }
  // The child object at `key`, or null when absent; a present non-object is a problem.
  const json* Object(std::string_view key) { return Child(key, true); }
  // The array at `key`, or null when absent; a present non-array is a problem.
  const json* Array(std::string_view key) { return Child(key, false); }
  std::string Path(std::string_view key) const {
    return where_.empty() ? std::string(key) : where_ + "." + std::string(key);
  }

 private:
  const json* Child(std::string_view key, bool object) {
    if (!problem_->empty() || !object_.is_object()) return nullptr;
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    if (object ? it->is_object() : it->is_array()) return &*it;
    *problem_ = "field '" + Path(key) + "' should be " + (object ? "an object" : "an array") +
                ", found " + JsonKind(*it);
    return nullptr;
  }

  const json& object_;
  std::string where_;
  std::string* problem_;
};

std::string Element(const std::string& array_path, size_t i) {
  return array_path + "[" + std::to_string(i) + "]";
}

void ReadSources(const json& sources, std::vector<SourceRecord>& out, std::string& problem) {
  for (size_t i = 0; i < sources.size() && problem.empty(); ++i) {
    const std::string path = Element("sources", i);
    if (!sources[i].is_object()) {
      problem = "field '" + path + "' should be an object, found " + JsonKind(sources[i]);
      return;
    }
    SourceRecord r;
    Fields sf(sources[i], path, &problem);
    sf("path", r.path);
    sf("format", r.format);
    sf("size_bytes", r.size_bytes);
    sf("sha256", r.sha256);
    sf("tables", r.tables);
    sf("cache", r.cache);
    out.push_back(std::move(r));
  }
}

// A field holding one of the trace's names (a stop reason, a step kind or status), read into its
// enum. An absent field (or "", where no name is "") leaves `out` as it was; a name no quarry
// writes is a problem naming the field.
template <typename E>
void ReadNamed(Fields& f, const char* key, std::optional<E> (*parse)(std::string_view), E& out,
               const char* what, std::string& problem) {
  std::string name;
  f(key, name);
  if (!problem.empty()) return;
  if (auto value = parse(name)) {
    out = *value;
  } else if (!name.empty()) {
    problem =
        "field '" + f.Path(key) + "' holds '" + name + "', which is no " + what + " quarry writes";
  }
}

void ReadStep(const json& s, const std::string& where, Step& st, std::string& problem) {
  if (!s.is_object()) {
    problem = "field '" + where + "' should be an object, found " + JsonKind(s);
    return;
  }
  Fields f(s, where, &problem);
  f("index", st.index);
  ReadNamed(f, "kind", ParseStepKind, st.kind, "step kind", problem);
  f("duration_ms", st.duration_ms);
  f("content", st.content);
  f("cost_usd", st.cost_usd);
  f("attempts", st.attempts);
  f("streamed", st.streamed);
  if (s.contains("cache_saved_usd") && !s["cache_saved_usd"].is_null()) {
    double saved = 0.0;
    f("cache_saved_usd", saved);
    st.cache_saved_usd = saved;
  }
  if (const json* u = f.Object("usage")) {
    Fields uf(*u, f.Path("usage"), &problem);
    uf("input_tokens", st.input_tokens);
    uf("output_tokens", st.output_tokens);
    uf("cached_tokens", st.cached_tokens);
    uf("cache_write_tokens", st.cache_write_tokens);
  }
  if (const json* calls = f.Array("tool_calls")) {
    for (size_t i = 0; i < calls->size() && problem.empty(); ++i) {
      const std::string path = Element(f.Path("tool_calls"), i);
      if (!(*calls)[i].is_object()) {
        problem = "field '" + path + "' should be an object, found " + JsonKind((*calls)[i]);
        break;
      }
      ToolCallRecord r;
      Fields cf((*calls)[i], path, &problem);
      cf("id", r.id);
      cf("name", r.name);
      cf("arguments", r.arguments);
      st.tool_calls.push_back(std::move(r));
    }
  }
  f("tool", st.tool);
  f("tool_call_id", st.tool_call_id);
  f("arguments", st.arguments);
  ReadNamed(f, "status", ParseStepStatus, st.status, "step status", problem);
  f("failure_class", st.failure_class);
  f("rule", st.rule);
  f("repair", st.repair);
  f("observation", st.observation);
  f("detail", st.detail);
}

// Reads every field FromJson knows; the first problem wins and names its field.
void ReadTraceFields(const json& j, Trace& t, std::string& problem) {
  Fields f(j, "", &problem);
  f("id", t.id);
  f("created_at", t.created_at);
  f("question", t.question);
  f("dialect", t.dialect);
  ReadNamed(f, "stop_reason", ParseStopReason, t.stop_reason, "stop reason", problem);
  f("incomplete", t.incomplete);
  f("artifacts", t.artifacts);
  f("notes", t.notes);
  f("config", t.config);
  if (const json* m = f.Object("model")) {
    Fields mf(*m, "model", &problem);
    mf("provider", t.provider);
    mf("model", t.model);
    mf("source", t.turns_source);
  }
  if (const json* sources = f.Array("sources")) ReadSources(*sources, t.sources, problem);
  if (const json* steps = f.Array("steps")) {
    for (size_t i = 0; i < steps->size() && problem.empty(); ++i) {
      Step st;
      ReadStep((*steps)[i], Element("steps", i), st, problem);
      t.steps.push_back(std::move(st));
    }
  }
  if (const json* x = f.Object("totals")) {
    Fields xf(*x, "totals", &problem);
    xf("model_turns", t.totals.model_turns);
    xf("tool_calls", t.totals.tool_calls);
    xf("repair_attempts", t.totals.repair_attempts);
    xf("repair_successes", t.totals.repair_successes);
    // Traces written before the total have the steps to count it from.
    if (x->contains("send_backs")) {
      xf("send_backs", t.totals.send_backs);
    } else {
      for (const Step& s : t.steps) t.totals.send_backs += IsSendBack(s) ? 1 : 0;
    }
    xf("input_tokens", t.totals.input_tokens);
    xf("output_tokens", t.totals.output_tokens);
    xf("cached_tokens", t.totals.cached_tokens);
    xf("cache_write_tokens", t.totals.cache_write_tokens);
    xf("cost_usd", t.totals.cost_usd);
    xf("cache_saved_usd", t.totals.cache_saved_usd);
    xf("wall_ms", t.totals.wall_ms);
    xf("load_ms", t.totals.load_ms);
  }
  if (const json* a = f.Object("answer")) {
    Fields af(*a, "answer", &problem);
    af("text", t.answer);
    af("supporting_values", t.supporting_values);
    af("sql", t.answer_sql);
    af("assumptions", t.assumptions);
    af("rests_on", t.rests_on);
    if (const json* queries = af.Array("queries")) {
      for (size_t i = 0; i < queries->size() && problem.empty(); ++i) {
        AnswerQuery aq;
        Fields qf((*queries)[i], Element("answer.queries", i), &problem);
        qf("step", aq.step);
        qf("tool", aq.tool);
        qf("query", aq.query);
        t.answer_queries.push_back(std::move(aq));
      }
    }
  }
  if (const json* r = f.Object("reply")) Fields(*r, "reply", &problem)("text", t.reply);
  if (const json* th = f.Object("thread")) {
    Fields tf(*th, "thread", &problem);
    tf("name", t.thread);
    tf("turn", t.thread_turn);
  }
  if (const json* cs = f.Array("clarifications")) {
    for (size_t i = 0; i < cs->size() && problem.empty(); ++i) {
      ClarificationRecord c;
      Fields cf((*cs)[i], Element("clarifications", i), &problem);
      cf("step", c.step);
      cf("question", c.question);
      cf("choices", c.choices);
      cf("reply", c.reply);
      cf("term", c.term);
      t.clarifications.push_back(std::move(c));
    }
  }
  if (const json* is = f.Array("injection_suspected")) {
    for (size_t i = 0; i < is->size() && problem.empty(); ++i) {
      InjectionRecord r;
      Fields rf((*is)[i], Element("injection_suspected", i), &problem);
      rf("step", r.step);
      rf("where", r.where);
      rf("pattern", r.pattern);
      rf("excerpt", r.excerpt);
      t.injection_suspected.push_back(std::move(r));
    }
  }
  if (const json* e = f.Object("explanation"))
    Fields(*e, "explanation", &problem)("text", t.explanation);
  if (const json* d = f.Object("declined")) Fields(*d, "declined", &problem)("text", t.declined);
  if (const json* v = f.Object("verify")) {
    Fields vf(*v, "verify", &problem);
    vf("grounded", t.grounded);
    if (const json* checks = vf.Array("checks")) {
      for (size_t i = 0; i < checks->size() && problem.empty(); ++i) {
        VerifyCheck vc;
        Fields cf((*checks)[i], Element("verify.checks", i), &problem);
        cf("value", vc.value);
        cf("origin", vc.origin);
        cf("rule", vc.rule);
        cf("matched", vc.matched);
        cf("grounded", vc.grounded);
        cf("step", vc.step);
        cf("tool", vc.tool);
        cf("query", vc.query);
        cf("column", vc.column);
        cf("reason", vc.reason);
        t.verify.push_back(std::move(vc));
      }
    }
  }
}

// A clarification step's question and choices (its arguments) and reply (detail.reply), for a
// run rebuilt from its events; steps whose arguments were refused asked nothing.
void AddClarification(const Step& s, std::vector<ClarificationRecord>& out) {
  if (s.status != StepStatus::kOk && s.status != StepStatus::kWaiting) return;
  const json args = ParseJson(s.arguments);
  if (!args.is_object()) return;
  ClarificationRecord c;
  c.step = s.index;
  c.question = JsonString(args, "question");
  if (const auto it = args.find("choices"); it != args.end() && it->is_array()) {
    for (const auto& choice : *it) {
      if (choice.is_string()) c.choices.push_back(choice.get<std::string>());
    }
  }
  if (s.detail.is_object()) c.reply = JsonString(s.detail, "reply");
  out.push_back(std::move(c));
}

Result<std::string> ReadText(const fs::path& path) { return ReadFileText(path, ""); }

}  // namespace

Result<json> ReplayFixtureOf(const json& doc) {
  if (!doc.is_object() || !doc.contains("steps") || doc.contains("turns")) return doc;
  const json& steps = doc["steps"];
  if (!steps.is_array()) return Fail(Error::Code::kData, "\"steps\" must be an array");
  json turns = json::array();
  json labels = json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& step = steps[i];
    if (!step.is_object()) continue;
    const auto kind = step.find("kind");
    if (kind == step.end() || !kind->is_string()) continue;
    if (ParseStepKind(kind->get<std::string>()) == StepKind::kModel) {
      turns.push_back(step);
      labels.push_back("steps[" + std::to_string(i) + "]");
    }
  }
  json fixture = {{"source", "trace"}, {"turns", std::move(turns)}, {"turn_labels", labels}};
  // A trace names its model in an object ({"provider", "model"}); a fixture, as a string.
  if (const auto model = doc.find("model"); model != doc.end() && model->is_string()) {
    fixture["model"] = *model;
  } else if (model != doc.end() && model->is_object()) {
    if (const auto name = model->find("model"); name != model->end() && name->is_string()) {
      fixture["model"] = *name;
    }
  }
  return fixture;
}

Result<Trace> FromJson(const json& j) {
  if (!j.is_object() || !j.contains("format_version")) {
    return Fail(Error::Code::kData,
                "not a quarry trace (no format_version): pass a runs/<id>/trace.json");
  }
  Trace t;
  std::string problem;
  if (problem = ReadJsonField(j, "format_version", t.format_version); !problem.empty()) {
    return Fail(Error::Code::kData, "trace: " + problem);
  }
  if (t.format_version != kFormatVersion) {
    return Fail(Error::Code::kData, "trace: format_version " + std::to_string(t.format_version) +
                                        " is not supported (this quarry reads " +
                                        std::to_string(kFormatVersion) + ")");
  }
  ReadTraceFields(j, t, problem);
  if (!problem.empty()) return Fail(Error::Code::kData, "trace: " + problem);
  return t;
}

Result<Trace> RebuildFromEvents(const fs::path& events_path) {
  auto text = ReadText(events_path);
  if (!text) return std::unexpected(text.error());
  Trace t;
  t.incomplete = true;
  size_t line_number = 0, unreadable = 0;
  bool started = false;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json event = ParseJson(line);
    // A process killed mid-write leaves a cut last line; any unreadable line is skipped and
    // counted, so the rest of the record still shows.
    if (!event.is_object()) {
      ++unreadable;
      continue;
    }
    const std::string kind = JsonString(event, "event");
    std::string problem;
    if (kind == "start") {
      started = true;
      Fields f(event, "", &problem);
      f("id", t.id);
      f("question", t.question);
      f("created_at", t.created_at);
      f("model", t.model);
      f("provider", t.provider);
      f("source", t.turns_source);
      f("dialect", t.dialect);
      f("config", t.config);
      if (const json* sources = f.Array("sources")) ReadSources(*sources, t.sources, problem);
    } else if (kind == "step") {
      Step st;
      ReadStep(event, "step", st, problem);
      if (problem.empty()) t.steps.push_back(std::move(st));
    } else if (kind == "end") {
      Fields end(event, "", &problem);
      ReadNamed(end, "stop_reason", ParseStopReason, t.stop_reason, "stop reason", problem);
    } else {
      ++unreadable;
    }
    if (!problem.empty()) {
      return Fail(Error::Code::kData,
                  events_path.string() + " line " + std::to_string(line_number) + ": " + problem);
    }
  }
  if (!started) {
    return Fail(Error::Code::kData,
                events_path.string() + ": no start event, so this is not a quarry run's record");
  }
  for (const Step& s : t.steps) {
    if (s.kind == StepKind::kModel) {
      ++t.totals.model_turns;
      t.totals.input_tokens += s.input_tokens;
      t.totals.output_tokens += s.output_tokens;
      t.totals.cached_tokens += s.cached_tokens;
      t.totals.cache_write_tokens += s.cache_write_tokens;
      t.totals.cost_usd += s.cost_usd;
      t.totals.cache_saved_usd += s.cache_saved_usd.value_or(0.0);
    } else if (s.kind == StepKind::kTool || s.kind == StepKind::kClarification) {
      ++t.totals.tool_calls;
      if (s.kind == StepKind::kClarification) AddClarification(s, t.clarifications);
      if (s.repair) {
        ++t.totals.repair_attempts;
        if (s.status == StepStatus::kOk) ++t.totals.repair_successes;
      }
      if (IsSendBack(s)) ++t.totals.send_backs;
    } else if (s.kind == StepKind::kLoad) {
      t.totals.load_ms += s.duration_ms;
    }
    t.totals.wall_ms += s.duration_ms;
  }
  t.notes.push_back(
      "incomplete: rebuilt from events.jsonl; the run ended without writing "
      "trace.json (the process was killed), so there is no verified answer and the "
      "totals are summed from the " +
      std::to_string(t.steps.size()) + " recorded steps");
  if (unreadable > 0) {
    t.notes.push_back(std::to_string(unreadable) +
                      " line(s) of events.jsonl were not quarry events (a kill can cut the last "
                      "line) and were skipped");
  }
  return t;
}

Result<fs::path> FindTrace(const fs::path& runs_dir, const std::string& which) {
  std::error_code ec;
  if ((which.ends_with(".json") || which.ends_with(".jsonl")) && fs::is_regular_file(which, ec)) {
    return fs::path(which);
  }
  // A run's record: trace.json, or events.jsonl alone when the run was killed before the end.
  const auto record = [](const fs::path& dir) -> std::optional<fs::path> {
    std::error_code e;
    if (fs::is_regular_file(dir / "trace.json", e)) return dir / "trace.json";
    if (fs::is_regular_file(dir / "events.jsonl", e)) return dir / "events.jsonl";
    return std::nullopt;
  };
  if (which != "latest") {
    if (auto p = record(runs_dir / which)) return *p;
    if (fs::is_directory(runs_dir / which, ec)) {
      return Fail(Error::Code::kData, "run " + which + " in " + runs_dir.string() +
                                          " has neither trace.json nor events.jsonl");
    }
    return Fail(Error::Code::kUsage, "no run " + which + " in " + runs_dir.string() +
                                         "; `quarry trace latest` shows the newest");
  }
  std::string newest;
  std::optional<fs::path> newest_record;
  for (const auto& e : fs::directory_iterator(runs_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name <= newest || name == "example") continue;
    if (auto p = record(e.path())) {
      newest = name;
      newest_record = *p;
    }
  }
  if (!newest_record) {
    return Fail(Error::Code::kUsage,
                "no runs in " + runs_dir.string() + " yet: run `quarry ask` first");
  }
  return *newest_record;
}

Result<Trace> ReadTrace(const fs::path& path) {
  if (path.filename() == "events.jsonl" || path.extension() == ".jsonl") {
    return RebuildFromEvents(path);
  }
  auto text = ReadText(path);
  if (!text) return std::unexpected(text.error());
  std::string problem;
  const json doc = ParseJson(*text, &problem);
  if (doc.is_discarded()) return Fail(Error::Code::kData, path.string() + ": " + problem);
  auto t = FromJson(doc);
  if (!t) return std::unexpected(Context(t.error(), path.string()));
  return t;
}

}  // namespace quarry::trace
