// Reading what the user types in `quarry chat`: on a terminal, libedit's line editing (emacs
// keys) with a history file; otherwise plain lines from stdin, so a script can pipe questions.
// Ctrl-C while reading ends the read as kInterrupted (the line is dropped), Ctrl-D on an empty
// line (or the end of input) as kEnd.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "quarry/common/common.h"

namespace quarry::cli {

class LineReader {
 public:
  enum class Status { kLine, kInterrupted, kEnd };
  struct Input {
    Status status = Status::kEnd;
    std::string text;  // kLine: without the line end
  };

  // Line editing when stdin and stdout are both terminals. `history_file` (may be empty: no
  // history kept) is loaded now and saved after every line, mode 0600. While the reader lives,
  // a SIGINT outside Read() (a slash command running) is dropped rather than ending the
  // process; a running question's InterruptScope takes SIGINT over while it lives.
  explicit LineReader(std::filesystem::path history_file);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool interactive() const { return editor_ != nullptr; }

  // Shows `prompt` (terminal only) and reads one line. While it waits, SIGINT ends it as
  // kInterrupted, and so does a stop requested on `stop` (a run's Ctrl-C while the model's
  // question waits for its reply).
  Input Read(const std::string& prompt, StopToken stop = {});

 private:
  struct Editor;
  class SigintToPipe;
  std::unique_ptr<SigintToPipe> sigint_;
  std::unique_ptr<Editor> editor_;
  std::filesystem::path history_file_;
  std::string pending_;  // plain mode: bytes read past the last line end
  bool eof_ = false;
};

}  // namespace quarry::cli
