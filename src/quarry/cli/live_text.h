// The model's streamed reply shown as it arrives, for `quarry ask` and `quarry chat`: its text
// dimmed on stderr, and one line per tool call it makes. Only a terminal gets it; a log or a
// pipe keeps the step lines alone.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "quarry/llm/llm.h"

namespace quarry::cli {

// Renders llm::StreamDelta pieces on `out`: text indented by two spaces (dimmed when `color`),
// each tool call as "  → NAME " followed by up to kArgumentsShown characters of its arguments
// on the same line (whitespace runs as one space, "…" when cut). Everything from the model is
// passed through TerminalText, a control character split across two pieces included, so a
// reply cannot send escape sequences. Not thread safe.
class LiveText {
 public:
  static constexpr size_t kArgumentsShown = 100;
  LiveText(std::ostream& out, bool color) : out_(out), color_(color) {}
  void Show(const llm::StreamDelta& delta);
  // Ends the open line, if any, so that what follows (a step line, a retry, an error) starts
  // on its own. Call when a model call returns.
  void End();

 private:
  enum class State { kIdle, kText, kCall };
  void Write(const std::string& text);
  std::string Safe(const std::string& piece);  // TerminalText, holding back a trailing 0xC2

  std::ostream& out_;
  bool color_;
  State state_ = State::kIdle;
  bool line_open_ = false;  // something was written since the last newline
  std::string held_;        // a lead byte of U+0080..U+009F waiting for its second byte
  int call_index_ = -1;     // the call whose arguments are being shown
  size_t shown_ = 0;        // characters of its arguments shown
  bool cut_ = false;        // "…" written for it
  bool space_ = false;      // the last argument character shown was a space
};

// `client` whose calls end `display`'s line when they return (the step line comes next).
std::unique_ptr<llm::Client> WithLiveText(std::unique_ptr<llm::Client> client,
                                          std::shared_ptr<LiveText> display);

}  // namespace quarry::cli
