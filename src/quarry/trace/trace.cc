// Trace serialisation (stable key order), the run directory writer and the summary printer.
#include "quarry/trace/trace.h"
#include "quarry/common/json.h"
#include "quarry/common/names.h"
#include "quarry/common/replace_file.h"
#include "quarry/trace/trace_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>

namespace quarry::trace {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string Dump(const json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace

json ToJson(const Step& s) {
  json j;
  j["index"] = s.index;
  j["kind"] = StepKindName(s.kind);
  if (s.kind == StepKind::kModel) {
    j["content"] = s.content;
    json calls = json::array();
    for (const auto& c : s.tool_calls) {
      calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    }
    j["tool_calls"] = calls;
    j["usage"] = {{"input_tokens", s.input_tokens},
                  {"output_tokens", s.output_tokens},
                  {"cached_tokens", s.cached_tokens},
                  {"cache_write_tokens", s.cache_write_tokens}};
    j["cost_usd"] = s.cost_usd;
    if (s.cache_saved_usd) j["cache_saved_usd"] = *s.cache_saved_usd;
    j["attempts"] = s.attempts;
    if (s.streamed) j["streamed"] = true;
    if (!s.detail.is_null()) j["detail"] = s.detail;  // {"purpose": "explanation"}
  } else {
    j["tool"] = s.tool;
    j["tool_call_id"] = s.tool_call_id;
    j["arguments"] = s.arguments;
    j["status"] = StepStatusName(s.status);
    j["failure_class"] = s.failure_class;
    if (!s.rule.empty()) j["rule"] = s.rule;
    j["repair"] = s.repair;
    j["observation"] = s.observation;
    if (!s.detail.is_null()) j["detail"] = s.detail;
  }
  j["duration_ms"] = s.duration_ms;
  return j;
}

bool IsSendBack(const Step& s) {
  if (s.kind != StepKind::kTool || s.tool != "final_answer" || s.status != StepStatus::kRejected)
    return false;
  if (s.detail.is_object()) {
    const auto it = s.detail.find("sent_back");
    if (it != s.detail.end() && it->is_boolean()) return it->get<bool>();
  }
  return !s.observation.starts_with("verify: not grounded again");
}

json ToJson(const Trace& t) {
  json j;
  j["format_version"] = t.format_version;
  j["id"] = t.id;
  j["created_at"] = t.created_at;
  j["question"] = t.question;
  json sources = json::array();
  for (const auto& s : t.sources) {
    sources.push_back({{"path", s.path},
                       {"format", s.format},
                       {"size_bytes", s.size_bytes},
                       {"sha256", s.sha256},
                       {"tables", s.tables},
                       {"cache", s.cache}});
  }
  j["sources"] = sources;
  j["dialect"] = t.dialect;
  j["model"] = {{"provider", t.provider}, {"model", t.model}};
  if (!t.turns_source.empty()) j["model"]["source"] = t.turns_source;
  j["config"] = t.config;
  json steps = json::array();
  for (const auto& s : t.steps) steps.push_back(ToJson(s));
  j["steps"] = steps;
  const Totals& x = t.totals;
  j["totals"] = {{"model_turns", x.model_turns},
                 {"tool_calls", x.tool_calls},
                 {"repair_attempts", x.repair_attempts},
                 {"repair_successes", x.repair_successes},
                 {"send_backs", x.send_backs},
                 {"input_tokens", x.input_tokens},
                 {"output_tokens", x.output_tokens},
                 {"cached_tokens", x.cached_tokens},
                 {"cache_write_tokens", x.cache_write_tokens},
                 {"cost_usd", x.cost_usd},
                 {"cache_saved_usd", x.cache_saved_usd},
                 {"wall_ms", x.wall_ms},
                 {"load_ms", x.load_ms}};
  j["stop_reason"] = StopReasonName(t.stop_reason);
  json queries = json::array();
  for (const auto& q : t.answer_queries) {
    queries.push_back({{"step", q.step}, {"tool", q.tool}, {"query", q.query}});
  }
  j["answer"] = {{"text", t.answer},
                 {"supporting_values", t.supporting_values},
                 {"sql", t.answer_sql},
                 {"queries", queries},
                 {"assumptions", t.assumptions}};
  if (!t.rests_on.empty()) j["answer"]["rests_on"] = t.rests_on;
  if (!t.reply.empty()) j["reply"] = {{"text", t.reply}, {"verified", false}};
  json checks = json::array();
  for (const auto& c : t.verify) {
    json check = {{"value", c.value},
                  {"origin", c.origin},
                  {"grounded", c.grounded},
                  {"rule", c.rule},
                  {"matched", c.matched}};
    if (c.step > 0)
      check.update({{"step", c.step}, {"tool", c.tool}, {"query", c.query}, {"column", c.column}});
    if (!c.reason.empty()) check["reason"] = c.reason;
    checks.push_back(std::move(check));
  }
  j["verify"] = {{"grounded", t.grounded}, {"checks", checks}};
  j["artifacts"] = t.artifacts;
  j["notes"] = t.notes;
  if (!t.thread.empty()) j["thread"] = {{"name", t.thread}, {"turn", t.thread_turn}};
  if (!t.clarifications.empty()) {
    json cs = json::array();
    for (const auto& c : t.clarifications) {
      json record = {
          {"step", c.step}, {"question", c.question}, {"choices", c.choices}, {"reply", c.reply}};
      if (!c.term.empty()) record["term"] = c.term;
      cs.push_back(std::move(record));
    }
    j["clarifications"] = cs;
  }
  if (!t.injection_suspected.empty()) {
    json is = json::array();
    for (const auto& i : t.injection_suspected) {
      is.push_back(
          {{"step", i.step}, {"where", i.where}, {"pattern", i.pattern}, {"excerpt", i.excerpt}});
    }
    j["injection_suspected"] = is;
  }
  if (!t.explanation.empty()) j["explanation"] = {{"text", t.explanation}, {"answer", false}};
  if (!t.declined.empty()) j["declined"] = {{"text", t.declined}, {"answer", false}};
  if (t.incomplete) j["incomplete"] = true;
  return j;
}

namespace {

constexpr NamePair<StopReason> kStopReasonNames[] = {
    {StopReason::kAnswered, "answered"},
    {StopReason::kUngrounded, "final_answer_ungrounded"},
    {StopReason::kExecutionFailed, "execution_failed"},
    {StopReason::kStepBudget, "step_budget_exhausted"},
    {StopReason::kRepairBudget, "repair_budget_exhausted"},
    {StopReason::kCostBudget, "cost_budget_exhausted"},
    {StopReason::kToolCallBudget, "tool_call_budget_exhausted"},
    {StopReason::kNoToolCall, "no_tool_call"},
    {StopReason::kModelError, "model_error"},
    {StopReason::kInterrupted, "interrupted"},
    {StopReason::kClarification, "clarification_needed"},
    {StopReason::kDeclined, "declined"},
    {StopReason::kIncomplete, "incomplete"},
};

constexpr NamePair<StepKind> kStepKindNames[] = {
    {StepKind::kModel, "model"},
    {StepKind::kTool, "tool"},
    {StepKind::kClarification, "clarification"},
    {StepKind::kLoad, "load"},
};

constexpr NamePair<StepStatus> kStepStatusNames[] = {
    {StepStatus::kNone, ""},           {StepStatus::kOk, "ok"},
    {StepStatus::kFailed, "failed"},   {StepStatus::kRejected, "rejected"},
    {StepStatus::kWaiting, "waiting"}, {StepStatus::kInterrupted, "interrupted"},
};

constexpr NamePair<AnswerOutcome> kAnswerOutcomeNames[] = {
    {AnswerOutcome::kAnswer, "answer"},
    {AnswerOutcome::kDeclined, "declined"},
};

}  // namespace

std::string_view AnswerOutcomeName(AnswerOutcome outcome) {
  return NameOf(kAnswerOutcomeNames, outcome);
}
std::optional<AnswerOutcome> ParseAnswerOutcome(std::string_view name) {
  return ValueOf(kAnswerOutcomeNames, name);
}

std::string_view StepKindName(StepKind kind) { return NameOf(kStepKindNames, kind); }
std::optional<StepKind> ParseStepKind(std::string_view name) {
  return ValueOf(kStepKindNames, name);
}
std::string_view StepStatusName(StepStatus status) { return NameOf(kStepStatusNames, status); }
std::optional<StepStatus> ParseStepStatus(std::string_view name) {
  return ValueOf(kStepStatusNames, name);
}

std::string_view StopReasonName(StopReason reason) { return NameOf(kStopReasonNames, reason); }
std::optional<StopReason> ParseStopReason(std::string_view name) {
  return ValueOf(kStopReasonNames, name);
}

std::string UtcTimestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string NewRunId() {
  const auto now_point = std::chrono::system_clock::now();
  const std::time_t now = std::chrono::system_clock::to_time_t(now_point);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  // Milliseconds first, so ids sort by start time within a second; then 3 random hex digits.
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now_point.time_since_epoch()).count() %
      1000;
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%03lld%03x", static_cast<long long>(ms), rd() & 0xfffu);
  return std::string(stamp) + "-" + suffix;
}

Result<Writer> Writer::Create(const fs::path& runs_dir, const std::string& id) {
  if (id.empty() || id == "." || id == ".." || id.find('/') != std::string::npos) {
    return Fail(Error::Code::kInternal, "not a run id: " + id);
  }
  const auto retention = RetentionFromEnv();
  if (!retention) return std::unexpected(retention.error());
  auto runs = OpenPrivateDir(runs_dir, "the runs directory", "--runs-dir");
  if (!runs) return std::unexpected(runs.error());
  Writer w;
  w.dir_ = runs_dir / id;
  // Exclusively: a directory that already exists (planted, or a clash of ids) is never reused,
  // so every file of the run is created inside a directory this process made, mode 0700.
  if (::mkdirat(runs->get(), id.c_str(), 0700) != 0) {
    return Fail(Error::Code::kInternal,
                "cannot create the run directory " + w.dir_.string() + ": " + std::strerror(errno));
  }
  w.dir_fd_ =
      UniqueFd(::openat(runs->get(), id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!w.dir_fd_.valid()) {
    return Fail(Error::Code::kInternal,
                "cannot open the run directory " + w.dir_.string() + ": " + std::strerror(errno));
  }
  // Each new run tidies the old ones' scratch space (Retention); their traces stay.
  PruneWorkdirsAt(runs->get(), *retention, std::time(nullptr), id);
  return w;
}

namespace {

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Creates `name` in `dir_fd` for writing: never through a link, never an existing file.
UniqueFd CreateExclusive(int dir_fd, const char* name) {
  return UniqueFd(
      ::openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
}

}  // namespace

Result<void> Writer::AppendEvent(const json& event) {
  // Told first: a listener (the web app's live steps) sees the event even when the file fails.
  if (listener_) listener_(event);
  if (events_error_.empty() && !events_fd_.valid()) {
    events_fd_ = CreateExclusive(dir_fd_.get(), "events.jsonl");
    if (!events_fd_.valid()) events_error_ = std::strerror(errno);
  }
  if (events_error_.empty() && !WriteAll(events_fd_.get(), Dump(event) + "\n")) {
    events_error_ = std::strerror(errno);
  }
  if (events_error_.empty()) return {};
  return Fail(Error::Code::kInternal, "cannot write " + (dir_ / "events.jsonl").string() + ": " +
                                          events_error_ +
                                          "; trace.json, written at the end, is the record");
}

Result<fs::path> Writer::WriteFinal(const Trace& trace) {
  const fs::path final_path = dir_ / "trace.json";
  const fs::path tmp = dir_ / "trace.json.tmp";
  ::unlinkat(dir_fd_.get(), "trace.json.tmp", 0);  // a leftover of an earlier WriteFinal
  {
    const UniqueFd out = CreateExclusive(dir_fd_.get(), "trace.json.tmp");
    if (!out.valid() || !WriteAll(out.get(), Dump(ToJson(trace), 2) + "\n")) {
      return Fail(Error::Code::kInternal,
                  "cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
  }
  if (::renameat(dir_fd_.get(), "trace.json.tmp", dir_fd_.get(), "trace.json") != 0) {
    return Fail(Error::Code::kInternal,
                "cannot write " + final_path.string() + ": " + std::strerror(errno));
  }
  return final_path;
}

Result<void> WritePrivateFile(const fs::path& path, std::string_view bytes) {
  if (auto replaceable = CheckReplaceable(path); !replaceable) return replaceable;
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string name = path.filename().string();
  const std::string tmp = name + ".tmp";
  const UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) {
    return Fail(Error::Code::kUsage, "cannot write " + path.string() + ": " + std::strerror(errno));
  }
  // unlinkat removes a planted link itself, never its target; O_EXCL refuses one planted again.
  ::unlinkat(dir_fd.get(), tmp.c_str(), 0);
  {
    const UniqueFd out = CreateExclusive(dir_fd.get(), tmp.c_str());
    if (!out.valid() || !WriteAll(out.get(), bytes)) {
      return Fail(Error::Code::kUsage,
                  "cannot write " + path.string() + ".tmp: " + std::strerror(errno));
    }
  }
  if (::renameat(dir_fd.get(), tmp.c_str(), dir_fd.get(), name.c_str()) != 0) {
    const int error = errno;
    ::unlinkat(dir_fd.get(), tmp.c_str(), 0);  // no stray NAME.tmp beside a directory NAME
    return Fail(Error::Code::kUsage, "cannot write " + path.string() + ": " + std::strerror(error));
  }
  return {};
}

namespace {

// 5045 -> "5,045".
std::string Grouped(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "cached 4,100 of 5,045 prompt tokens, 900 written, saved $0.0110"; "" when the cache was
// not used. A negative saving (writes cost more than reads saved so far) reads "cost".
std::string CacheText(const Totals& x) {
  if (x.cached_tokens == 0 && x.cache_write_tokens == 0) return "";
  std::string out =
      "cached " + Grouped(x.cached_tokens) + " of " + Grouped(x.input_tokens) + " prompt tokens";
  if (x.cache_write_tokens > 0) out += ", " + Grouped(x.cache_write_tokens) + " written";
  char money[48];
  if (x.cache_saved_usd >= 0) {
    std::snprintf(money, sizeof money, ", saved $%.4f", x.cache_saved_usd);
  } else {
    std::snprintf(money, sizeof money, ", caching cost $%.4f more", -x.cache_saved_usd);
  }
  // A saving is known only for priced models; an unpriced one has 0 and says nothing.
  if (x.cache_saved_usd != 0) out += money;
  return out;
}

}  // namespace

std::string TotalsLine(const Trace& t) {
  const Totals& x = t.totals;
  char cost[32];
  std::snprintf(cost, sizeof cost, "$%.4f", x.cost_usd);
  const std::string cache = CacheText(x);
  return "steps " + std::to_string(x.model_turns) + " · tool calls " +
         std::to_string(x.tool_calls) + " · repairs " + std::to_string(x.repair_successes) + "/" +
         std::to_string(x.repair_attempts) + " · send-backs " + std::to_string(x.send_backs) +
         " · grounded " + (t.grounded ? "yes" : "no") + " · tokens " +
         std::to_string(x.input_tokens) + "+" + std::to_string(x.output_tokens) +
         (cache.empty() ? "" : " · " + cache) + " · cost " + cost + " · " +
         std::to_string(x.wall_ms) + " ms" +
         (x.load_ms > 0 ? " (opening the data " + std::to_string(x.load_ms) + " ms)" : "");
}

namespace {

// The first request's size as quarry estimated it beside what the provider counted for the first
// model turn, so the estimate can be checked on every run; "" for traces without the estimate.
std::string PromptLine(const Trace& t) {
  const auto it = t.config.find("prompt_tokens_estimated");
  if (it == t.config.end() || !it->is_number_integer()) return "";
  std::string out =
      "prompt:   first request ~" + std::to_string(it->get<int64_t>()) + " tokens estimated";
  for (const auto& s : t.steps) {
    if (s.kind != StepKind::kModel) continue;
    if (s.input_tokens > 0) {
      out += ", " + std::to_string(s.input_tokens) + " input tokens reported for the first turn";
    }
    break;
  }
  if (const auto b = t.config.find("schema_tokens_estimated");
      b != t.config.end() && b->is_number()) {
    out += " (schema ~" + std::to_string(b->get<int64_t>()) + ")";
  }
  return out + "\n";
}

}  // namespace

std::string Summary(const Trace& t) {
  std::string out = "run " + t.id + " (" + t.created_at + ")\n";
  out += "question: " + t.question + "\n";
  for (const auto& s : t.sources) {
    out += "source:   " + s.path + " (" + s.format + ", " + std::to_string(s.size_bytes) +
           " bytes, sha256 " + s.sha256.substr(0, 12) + ")\n";
  }
  out += "model:    " + t.model + " via " + t.provider +
         (t.turns_source.empty() ? "" : " (" + t.turns_source + " turns)") + "\n";
  out += PromptLine(t);
  // Model turns get a line of their own only when the run used the cache: their tokens, read
  // from and written to it.
  const bool cache_used = t.totals.cached_tokens > 0 || t.totals.cache_write_tokens > 0;
  for (const auto& s : t.steps) {
    if (s.kind == StepKind::kModel && cache_used) {
      char line[256];
      std::snprintf(
          line, sizeof line, "  [%2d] %-14s %lld in, %lld cached, %lld written, %lld out%s\n",
          s.index, "model turn", static_cast<long long>(s.input_tokens),
          static_cast<long long>(s.cached_tokens), static_cast<long long>(s.cache_write_tokens),
          static_cast<long long>(s.output_tokens), s.streamed ? " (streamed)" : "");
      out += line;
      continue;
    }
    if (s.kind != StepKind::kTool && s.kind != StepKind::kClarification) continue;
    char line[256];
    std::snprintf(line, sizeof line, "  [%2d] %-14s %-8s %-16s %6lld ms%s\n", s.index,
                  s.tool.c_str(), std::string(StepStatusName(s.status)).c_str(),
                  s.failure_class == "none" ? "" : s.failure_class.c_str(),
                  static_cast<long long>(s.duration_ms),
                  s.repair        ? "  (repair)"
                  : IsSendBack(s) ? "  (send-back)"
                                  : "");
    out += line;
  }
  out += "stop:     " + std::string(StopReasonName(t.stop_reason)) +
         (t.incomplete ? " (incomplete: rebuilt from events.jsonl)" : "") + "\n";
  if (t.incomplete) {
    for (const auto& n : t.notes) out += "note:     " + n + "\n";
  }
  if (!t.answer.empty()) out += "answer:   " + t.answer + "\n";
  for (const auto& a : t.assumptions) out += "assumed:  " + a + "\n";
  if (!t.reply.empty()) {
    out += "reply:    (the model replied without a tool call; not verified) " + t.reply + "\n";
  }
  for (const auto& c : t.clarifications) {
    std::string choices;
    for (const auto& x : c.choices) choices += (choices.empty() ? "" : " | ") + x;
    out += "asked:    " +
           (c.step > 0 ? "[step " + std::to_string(c.step) + "] " : std::string("[earlier run] ")) +
           c.question + (choices.empty() ? "" : " (choices: " + choices + ")") + "\n";
    out += "          " +
           (c.reply.empty() ? std::string("waiting for the user's reply")
                            : "the user replied: " + c.reply) +
           "\n";
  }
  for (const auto& i : t.injection_suspected) {
    out += "warning:  text that reads like instructions in the " + i.where +
           (i.step > 0 ? " of step " + std::to_string(i.step) : std::string()) + " (" + i.pattern +
           "): \"" + i.excerpt + "\"\n";
  }
  if (!t.explanation.empty()) {
    out += "not an answer (the model's explanation of the stop, not verified): " + t.explanation +
           "\n";
  }
  if (!t.declined.empty()) out += "declined: " + t.declined + "\n";
  if (!t.answer_sql.empty()) out += "sql:      " + t.answer_sql + "\n";
  for (const auto& c : t.verify) {
    out += "  verify " + std::string(c.grounded ? "ok " : "NO ") + c.value + " [" +
           (c.origin == "supporting_values" ? "supporting"
            : c.origin == "answer_text"     ? "answer"
                                            : c.origin) +
           "] (" + c.rule;
    if (c.step > 0)
      out += ", step " + std::to_string(c.step) + (c.column.empty() ? "" : ", column " + c.column);
    out += ")" + (c.reason.empty() ? std::string() : ": " + c.reason) + "\n";
  }
  out += TotalsLine(t) + "\n";
  return out;
}

}  // namespace quarry::trace
