// --record FILE for `ask` and `chat`: the checks made before a run, and the replay fixture
// written from the turns a RecordingClient kept (llm.h) once the run has ended.
#include <iostream>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/run_question.h"

namespace quarry::cli {

namespace fs = std::filesystem;

namespace {

// A fixture replaces only a regular file: a device, a FIFO or a socket would be replaced by a
// plain file (as root, /dev/full), and a symbolic link by a file where the link was.
Result<void> CheckTarget(const fs::path& path, const std::string& flag) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec || status.type() == fs::file_type::not_found || status.type() == fs::file_type::regular) {
    return {};
  }
  if (status.type() == fs::file_type::directory) {
    return Fail(Error::Code::kUsage, flag + " is a folder: name a file in it");
  }
  const std::string what = status.type() == fs::file_type::symlink
                               ? "a symbolic link: name the file it points to"
                               : "not a regular file (a device, a pipe or a socket): name a "
                                 "file";
  return Fail(Error::Code::kUsage, flag + " is " + what);
}

}  // namespace

Result<void> CheckRecord(const AskOptions& o) {
  if (o.record.empty()) return {};
  if (o.offline || !o.replay.empty()) {
    return Fail(Error::Code::kUsage, std::string("--record saves a live model's turns; ") +
                                         (o.offline ? "--offline" : "--replay") +
                                         " plays recorded ones back: drop one of them");
  }
  const fs::path path(o.record);
  if (path.filename().empty() || path.filename() == "." || path.filename() == "..") {
    return Fail(Error::Code::kUsage, "--record " + o.record + ": name a file, not a folder");
  }
  if (auto target = CheckTarget(path, "--record " + o.record); !target) return target;
  std::error_code ec;
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(dir, ec)) {
    return Fail(Error::Code::kUsage, "--record " + o.record + ": the folder " + dir.string() +
                                         " does not exist; create it first");
  }
  return {};
}

fs::path RecordPath(const std::string& file, int index) {
  const fs::path path(file);
  if (index <= 1) return path;
  const std::string ext = path.has_extension() ? path.extension().string() : ".json";
  return path.parent_path() / (path.stem().string() + "-" + std::to_string(index) + ext);
}

Result<void> SaveRecording(const fs::path& path, const llm::RecordingClient& recorder,
                           const QuestionRun& run, const std::vector<std::string>& data) {
  if (recorder.turns().empty()) {
    std::cerr << Paint("quarry: --record: no model turn completed, so nothing was written to " +
                           TerminalText(path.string()),
                       "33")
              << "\n";
    return {};
  }
  if (auto target = CheckTarget(path, "--record " + path.string()); !target) return target;
  llm::FixtureLabel label;
  // A continued clarification is recorded as --offline finds it: the turn's own question and
  // the reply it was continued with.
  label.question = run.trace.question;
  if (run.resumed) {
    for (const trace::ClarificationRecord& c : run.trace.clarifications) {
      if (c.step == 0) label.reply = c.reply;
    }
  }
  label.data = data;
  label.model = recorder.model();
  label.provider = recorder.provider();
  label.recorded_at = trace::UtcTimestamp();
  label.quarry_version = QUARRY_VERSION;
  label.stop_reason = trace::StopReasonName(run.trace.stop_reason);
  if (auto w = llm::WriteFixture(path, llm::RecordedFixture(label, recorder.turns())); !w) {
    return std::unexpected(w.error());
  }
  const size_t n = recorder.turns().size();
  std::cerr << Paint("quarry: recorded " + std::to_string(n) +
                         (n == 1 ? " model turn to " : " model turns to ") +
                         TerminalText(path.string()) + " (replay it with --replay " +
                         TerminalText(path.string()) + ")",
                     "2")
            << "\n";
  return {};
}

}  // namespace quarry::cli
