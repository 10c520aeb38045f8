// LineReader (line_reader.h) on libedit's native API. libedit reads characters through our
// function, which waits on stdin and on a pipe that SIGINT writes to, so Ctrl-C ends the read
// at once instead of being retried inside libedit, and a run's stop request does too.
#include "quarry/cli/line_reader.h"

#include <fcntl.h>
#include <histedit.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cwchar>

namespace quarry::cli {
namespace {

// Written by the SIGINT handler while a read waits; created once, never closed.
int g_sigint_pipe[2] = {-1, -1};

void OnSigint(int) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(g_sigint_pipe[1], &byte, 1);
}

void DrainSigintPipe() {
  char buf[64];
  while (read(g_sigint_pipe[0], buf, sizeof buf) > 0) {
  }
}

}  // namespace

// While it lives, SIGINT is a byte in the pipe; the handler it replaced comes back after (the
// InterruptScope of a running question, when the model's question is being answered).
class LineReader::SigintToPipe {
 public:
  SigintToPipe() {
    if (g_sigint_pipe[0] < 0 && pipe2(g_sigint_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
    DrainSigintPipe();
    struct sigaction action {};
    action.sa_handler = OnSigint;
    sigemptyset(&action.sa_mask);
    installed_ = sigaction(SIGINT, &action, &old_) == 0;
  }
  ~SigintToPipe() {
    if (installed_) sigaction(SIGINT, &old_, nullptr);
  }
  SigintToPipe(const SigintToPipe&) = delete;
  SigintToPipe& operator=(const SigintToPipe&) = delete;

 private:
  struct sigaction old_ {};
  bool installed_ = false;
};

namespace {

enum class Wait { kReady, kInterrupted };

// Until stdin has a byte (or its end), Ctrl-C, or a stop request.
Wait WaitForInput(const StopToken& stop) {
  while (true) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_sigint_pipe[0], POLLIN, 0}};
    const int ready = poll(fds, g_sigint_pipe[0] >= 0 ? 2 : 1, 100);
    if (ready > 0 && (fds[1].revents & POLLIN)) {
      DrainSigintPipe();
      return Wait::kInterrupted;
    }
    if (stop.stop_requested()) return Wait::kInterrupted;
    if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) return Wait::kReady;
  }
}

}  // namespace

struct LineReader::Editor {
  EditLine* el = nullptr;
  History* history = nullptr;
  std::string prompt;
  StopToken stop;
  bool interrupted = false;

  ~Editor() {
    if (el) el_end(el);
    if (history) history_end(history);
  }

  static Editor* Of(EditLine* el) {
    void* data = nullptr;
    el_get(el, EL_CLIENTDATA, &data);
    return static_cast<Editor*>(data);
  }

  static char* Prompt(EditLine* el) { return Of(el)->prompt.data(); }

  // One character for libedit: 1 read, 0 end of input, -1 interrupted (el_gets then returns).
  static int GetChar(EditLine* el, wchar_t* out) {
    Editor* self = Of(el);
    char bytes[MB_LEN_MAX];
    size_t n = 0;
    while (true) {
      if (WaitForInput(self->stop) == Wait::kInterrupted) {
        self->interrupted = true;
        return -1;
      }
      char c = 0;
      const ssize_t got = read(STDIN_FILENO, &c, 1);
      if (got == 0) return 0;
      if (got < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return -1;
      }
      bytes[n++] = c;
      std::mbstate_t state{};
      wchar_t wc = 0;
      const size_t used = std::mbrtowc(&wc, bytes, n, &state);
      if (used == static_cast<size_t>(-2) && n < sizeof bytes) continue;  // more bytes to come
      // A byte the locale cannot decode is passed on as itself rather than lost.
      *out = used <= n ? wc : static_cast<wchar_t>(static_cast<unsigned char>(bytes[0]));
      return 1;
    }
  }

  // ^C typed as a character (a terminal without ISIG): the same as the signal.
  static unsigned char OnCtrlC(EditLine* el, int) {
    Of(el)->interrupted = true;
    return CC_EOF;
  }
};

LineReader::LineReader(std::filesystem::path history_file)
    : sigint_(std::make_unique<SigintToPipe>()), history_file_(std::move(history_file)) {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return;
  auto editor = std::make_unique<Editor>();
  editor->el = el_init("quarry", stdin, stdout, stderr);
  if (!editor->el) return;
  editor->history = history_init();
  HistEvent event;
  if (editor->history) {
    history(editor->history, &event, H_SETSIZE, 1000);
    history(editor->history, &event, H_SETUNIQUE, 1);
    if (!history_file_.empty()) history(editor->history, &event, H_LOAD, history_file_.c_str());
    el_set(editor->el, EL_HIST, history, editor->history);
  }
  el_set(editor->el, EL_EDITOR, "emacs");
  el_set(editor->el, EL_CLIENTDATA, editor.get());
  el_set(editor->el, EL_PROMPT, &Editor::Prompt);
  el_set(editor->el, EL_GETCFN, &Editor::GetChar);
  el_set(editor->el, EL_ADDFN, "quarry-interrupt", "Drop the line", &Editor::OnCtrlC);
  el_set(editor->el, EL_BIND, "^C", "quarry-interrupt", nullptr);
  editor_ = std::move(editor);
}

LineReader::~LineReader() = default;

LineReader::Input LineReader::Read(const std::string& prompt, StopToken stop) {
  const SigintToPipe sigint;
  if (editor_) {
    editor_->prompt = prompt;
    editor_->stop = stop;
    editor_->interrupted = false;
    // Raw mode before the prompt is drawn: libedit would enter it only at the first key, and a
    // Ctrl-D typed in between, read by the terminal in cooked mode, would come through as NUL.
    el_set(editor_->el, EL_PREP_TERM, 1);
    int count = 0;
    const char* line = el_gets(editor_->el, &count);
    if (editor_->interrupted) {
      std::fputs("^C\n", stdout);
      std::fflush(stdout);
      return {Status::kInterrupted, ""};
    }
    if (!line || count <= 0) {
      std::fputs("\n", stdout);
      std::fflush(stdout);
      return {Status::kEnd, ""};
    }
    std::string text(line, static_cast<size_t>(count));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (editor_->history && text.find_first_not_of(" \t") != std::string::npos) {
      HistEvent event;
      history(editor_->history, &event, H_ENTER, text.c_str());
      // libedit writes the file with mode 0600.
      if (!history_file_.empty()) history(editor_->history, &event, H_SAVE, history_file_.c_str());
    }
    return {Status::kLine, text};
  }
  // Plain lines: read through the same wait, so Ctrl-C and a stop request end it too.
  while (true) {
    if (const size_t end = pending_.find('\n'); end != std::string::npos) {
      std::string text = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      if (!text.empty() && text.back() == '\r') text.pop_back();
      return {Status::kLine, text};
    }
    if (eof_) {
      if (pending_.empty()) return {Status::kEnd, ""};
      return {Status::kLine, std::exchange(pending_, std::string())};
    }
    if (WaitForInput(stop) == Wait::kInterrupted) return {Status::kInterrupted, ""};
    char buf[4096];
    const ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      eof_ = true;
      continue;
    }
    pending_.append(buf, static_cast<size_t>(got));
  }
}

}  // namespace quarry::cli
