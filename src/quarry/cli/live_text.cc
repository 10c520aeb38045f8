// The live display of a streamed model reply (live_text.h).
#include "quarry/cli/live_text.h"

#include "quarry/cli/cli_internal.h"

namespace quarry::cli {
namespace {

bool Continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Delegates everything; ends the display's line whatever the call's outcome.
class LiveTextClient final : public llm::Client {
 public:
  LiveTextClient(std::unique_ptr<llm::Client> inner, std::shared_ptr<LiveText> display)
      : inner_(std::move(inner)), display_(std::move(display)) {}
  Result<llm::Turn> Complete(const llm::Request& request) override {
    Result<llm::Turn> turn = inner_->Complete(request);
    display_->End();
    return turn;
  }
  llm::Provider provider() const override { return inner_->provider(); }
  std::string model() const override { return inner_->model(); }
  std::optional<double> MaxCostUsd(int64_t prompt_tokens) const override {
    return inner_->MaxCostUsd(prompt_tokens);
  }

 private:
  std::unique_ptr<llm::Client> inner_;
  std::shared_ptr<LiveText> display_;
};

}  // namespace

std::string LiveText::Safe(const std::string& piece) {
  std::string text = held_ + piece;
  held_.clear();
  // A character cut between two pieces is judged once all its bytes are here: C1 controls
  // (0xC2 0x80..0x9F) and bidirectional controls (0xE2 0x80/0x81 ..) are escaped whole.
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    if (length > back) {
      held_ = text.substr(text.size() - back);
      text.resize(text.size() - back);
    }
    break;
  }
  return TerminalText(text);
}

void LiveText::Write(const std::string& text) {
  if (text.empty()) return;
  out_ << (color_ ? "\033[2m" + text + "\033[0m" : text) << std::flush;
}

void LiveText::Show(const llm::StreamDelta& delta) {
  using Kind = llm::StreamDelta::Kind;
  std::string out;
  switch (delta.kind) {
    case Kind::kText: {
      if (state_ == State::kCall) {
        out += "\n";
        line_open_ = false;
      }
      state_ = State::kText;
      for (char c : Safe(delta.text)) {
        if (!line_open_ && c != '\n') {
          out += "  ";
          line_open_ = true;
        }
        out += c;
        if (c == '\n') line_open_ = false;
      }
      break;
    }
    case Kind::kToolCall: {
      held_.clear();
      if (line_open_) out += "\n";
      out += "  \u2192 " + Safe(delta.text);
      held_.clear();
      line_open_ = true;
      state_ = State::kCall;
      call_index_ = delta.index;
      shown_ = 0;
      cut_ = false;
      space_ = true;  // a space follows the name before the first argument character
      break;
    }
    case Kind::kToolArguments: {
      // Parallel calls can interleave their arguments; only the newest call's are shown.
      if (state_ != State::kCall || delta.index != call_index_ || cut_) return;
      for (char c : Safe(delta.text)) {
        const bool blank = c == ' ' || c == '\n' || c == '\t';
        if (blank && space_) continue;
        if (!Continuation(c)) {
          if (shown_ == kArgumentsShown) {
            out += "\u2026";
            cut_ = true;
            held_.clear();
            break;
          }
          if (shown_ == 0) out += " ";
          ++shown_;
        }
        out += blank ? ' ' : c;
        space_ = blank;
      }
      break;
    }
  }
  Write(out);
}

void LiveText::End() {
  held_.clear();
  if (line_open_) out_ << "\n" << std::flush;
  line_open_ = false;
  state_ = State::kIdle;
  call_index_ = -1;
}

std::unique_ptr<llm::Client> WithLiveText(std::unique_ptr<llm::Client> client,
                                          std::shared_ptr<LiveText> display) {
  return std::make_unique<LiveTextClient>(std::move(client), std::move(display));
}

}  // namespace quarry::cli
