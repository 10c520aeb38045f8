// One question through the agent for a suite (bench.h): the run's folder laid out as
// `quarry ask` lays it out, so `quarry view` and `quarry report` read a suite's runs like any
// other; and the figures a suite counts, read back from the trace.
#include "quarry/bench/bench.h"
#include "quarry/common/replace_file.h"

#include <fstream>

namespace quarry::bench {

Result<RunRecord> RunAgent(agent::RunInput input, engine::Engine& engine, llm::Client& client,
                           const agent::Config& base, const std::filesystem::path& runs_dir,
                           agent::Observer* observer) {
  if (input.run_id.empty()) input.run_id = trace::NewRunId();
  auto writer = trace::Writer::Create(runs_dir, input.run_id);
  if (!writer) return std::unexpected(writer.error());
  const agent::Config config = agent::ConfigForRun(base, writer->dir());
  RunRecord record;
  record.trace = agent::Run(input, engine, client, config, observer, &*writer);
  record.trace_path = writer->dir() / "trace.json";
  return record;
}

RunMetrics MetricsOf(const trace::Trace& t) {
  RunMetrics m;
  m.model_calls = t.totals.model_turns;
  m.tool_calls = t.totals.tool_calls;
  m.repair_attempts = t.totals.repair_attempts;
  m.repair_successes = t.totals.repair_successes;
  m.send_backs = t.totals.send_backs;
  m.prompt_tokens = t.totals.input_tokens;
  m.completion_tokens = t.totals.output_tokens;
  m.cached_tokens = t.totals.cached_tokens;
  m.cache_write_tokens = t.totals.cache_write_tokens;
  m.cost_usd = t.totals.cost_usd;
  m.wall_ms = t.totals.wall_ms;
  for (const trace::Step& s : t.steps) {
    if (s.kind == trace::StepKind::kLoad) continue;
    ++m.steps;
    if (s.failure_class == "guard_violation") ++m.guard_violations;
  }
  m.answered = t.stop_reason == trace::StopReason::kAnswered;
  m.grounded = m.answered && t.grounded;
  return m;
}

Result<void> WriteFileAtomically(const std::filesystem::path& path, std::string_view text) {
  if (auto replaceable = CheckReplaceable(path); !replaceable) return replaceable;
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return Fail(Error::Code::kInternal, "cannot write " + path.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    return Fail(Error::Code::kInternal, "cannot write " + path.string() + ": " + why);
  }
  return {};
}

std::string MarkdownCell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace quarry::bench
