// Serve(): opens the data, keeps stdout for protocol messages alone, and runs the reader loop of
// MCP's stdio transport (one JSON-RPC message per line in, one per line out, until EOF), with
// tools/call handed to the worker pool (calls.cc) so the reader never waits for a tool.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "quarry/common/exit_codes.h"
#include "quarry/mcp/mcp_internal.h"

namespace quarry::mcp {
namespace {

// Where responses go. When `out` is std::cout, the protocol moves to a private duplicate of
// fd 1 and fd 1 itself points at stderr while serving, so nothing else in the process (a
// library's printf, a child that inherits fd 1) can put a stray byte into the protocol stream.
// The duplicate is close-on-exec: no child can hold the client's pipe open either.
class ProtocolOut {
 public:
  explicit ProtocolOut(std::ostream& out) : out_(out) {
    if (&out != &std::cout) return;
    std::cout.flush();
    std::fflush(stdout);
    fd_ = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd_ < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      Log("cannot set stdout aside for the protocol; serving on it directly");
      if (fd_ >= 0) close(fd_);
      fd_ = -1;
      return;
    }
    // A client that goes away mid-write is an ordinary end (EPIPE), not a fatal signal.
    previous_sigpipe_ = std::signal(SIGPIPE, SIG_IGN);
  }
  ~ProtocolOut() {
    if (fd_ < 0) return;
    std::cout.flush();
    std::fflush(stdout);
    dup2(fd_, STDOUT_FILENO);
    close(fd_);
    std::signal(SIGPIPE, previous_sigpipe_);
  }
  ProtocolOut(const ProtocolOut&) = delete;
  ProtocolOut& operator=(const ProtocolOut&) = delete;

  // Writes one message and its newline, flushed; one line at a time whatever the thread.
  // False when the client is gone.
  bool WriteLine(std::string line) {
    line += '\n';
    std::lock_guard lock(mu_);
    if (fd_ < 0) {
      out_ << line;
      out_.flush();
      return static_cast<bool>(out_);
    }
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  std::mutex mu_;
  std::ostream& out_;
  int fd_ = -1;
  void (*previous_sigpipe_)(int) = SIG_DFL;
};

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find("\nLINE "));
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

enum class LineRead { kLine, kTooLong, kEnd };

// One line without its '\n' (and a '\r' before it) into `line`, keeping at most `max_bytes`:
// a longer line is read on to its end and dropped (kTooLong). `complete`: the line ended with a
// newline, not EOF. kEnd: EOF with nothing read.
LineRead ReadLine(std::istream& in, size_t max_bytes, std::string& line, bool& complete) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  bool any = false, too_long = false;
  while (true) {
    const int c = buf ? buf->sbumpc() : std::char_traits<char>::eof();
    if (c == std::char_traits<char>::eof()) {
      complete = false;
      if (!any) return LineRead::kEnd;
      break;
    }
    any = true;
    if (c == '\n') {
      complete = true;
      break;
    }
    if (too_long) continue;
    if (line.size() >= max_bytes) {
      too_long = true;
      std::string().swap(line);  // the memory back, not only the length
      continue;
    }
    line.push_back(static_cast<char>(c));
  }
  if (too_long) return LineRead::kTooLong;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return LineRead::kLine;
}

}  // namespace

// initialize's "instructions": what the data is and how the tools fit together.
std::string Instructions(const engine::Engine& engine, const ServerOptions& options) {
  std::string tables;
  const auto& cards = engine.describe();
  for (size_t i = 0; i < cards.size() && i < 20; ++i) tables += (i ? ", " : "") + cards[i].name;
  if (cards.size() > 20) tables += ", ... (" + std::to_string(cards.size()) + " tables)";
  // A server is named (its spec as the engine keeps it: redacted, never a password), so a
  // client that serves several can tell them apart; files are named in the cards.
  std::string where;
  if (engine.dialect() == engine::Dialect::kPostgreSQL && !engine.sources().empty()) {
    where = " on the PostgreSQL server " + engine.sources().front().path;
  }
  if (engine.dialect() == engine::Dialect::kMySQL && !engine.sources().empty()) {
    where = " on the MySQL-protocol server " + engine.sources().front().path;
  }
  if (engine.dialect() == engine::Dialect::kClickHouse && !engine.sources().empty()) {
    where = " on the ClickHouse server " + engine.sources().front().path;
  }
  return "quarry serves read-only access to " + std::to_string(cards.size()) + " table(s)" + where +
         " (" + DialectTitle(engine.dialect()) + " SQL): " + tables +
         ". Call describe_schema before writing SQL. run_sql runs one read-only query and "
         "returns at most " +
         std::to_string(options.config.limits.max_rows) +
         " rows with the true row count; its errors name the problem so you can fix the query. "
         "make_chart draws a PNG chart from a spec whose data.sql is a query. ask_database "
         "hands a whole question to quarry's own agent, which answers only with numbers found "
         "in real query results and returns the SQL and a trace path." +
         (options.allow_python ? " run_python runs sandboxed pandas code over the same tables."
                               : "");
}

int Serve(const ServerOptions& options, std::istream& in, std::ostream& out) {
  auto engine = engine::Open(options.data, options.open);
  if (options.stop.stop_requested()) {
    std::cerr << "quarry: interrupted while opening the data\n";
    return kExitInterrupted;
  }
  if (!engine) {
    std::cerr << "quarry: " << FirstLine(engine.error().message) << "\n";
    // The CLI's codes: 2 for what the user gave wrong (a password in a URL), 3 for the data.
    return engine.error().code == Error::Code::kUsage ? 2 : 3;
  }
  if (options.on_open) options.on_open(**engine);
  ProtocolOut protocol(out);
  ToolBox tools(options, **engine);
  Dispatcher dispatcher(tools, Instructions(**engine, options));
  Log("serving " + std::to_string((*engine)->describe().size()) + " table(s) on stdio");

  Calls calls(
      [&dispatcher](const PendingCall& call, const CallContext& context) {
        return dispatcher.RunCall(call, context);
      },
      [&protocol](const json& message) { return protocol.WriteLine(DumpLine(message)); });
  dispatcher.SetCalls(&calls);
  ClientRequests requests(
      [&protocol](const json& message) { return protocol.WriteLine(DumpLine(message)); });
  dispatcher.SetClientRequests(&requests);
  // The reader may be blocked on input that never comes: the stop ends the process from the
  // thread that requested it, once every running call has stopped and written its trace.
  const std::stop_callback on_stop(options.stop, [&calls, &requests] {
    Log("interrupted: stopping the calls in flight");
    requests.Close();
    calls.Drain(true);
    Log("exiting");
    std::cerr.flush();
    std::_Exit(kExitInterrupted);
  });

  std::string line;
  bool client_gone = false;
  bool complete = false;
  for (LineRead read; (read = ReadLine(in, kMaxMessageBytes, line, complete)) != LineRead::kEnd;) {
    std::optional<json> response;
    if (read == LineRead::kTooLong) {
      const std::string what = "a message longer than " +
                               std::to_string(kMaxMessageBytes / (1024 * 1024)) +
                               " MiB was skipped unread";
      Log(what);
      response = ErrorResponse(
          nullptr, kInvalidRequest,
          "Invalid Request: " + what + " (the limit of one line); send smaller arguments");
    } else if (line.find_first_not_of(" \t") == std::string::npos) {
      continue;
    } else {
      response = dispatcher.Handle(line, complete);
    }
    if (response && !protocol.WriteLine(DumpLine(*response))) {
      Log("the client closed the connection");
      client_gone = true;
      break;
    }
  }
  // The client closed its input: the calls it sent are still answered (MCP's stdio shutdown).
  if (!client_gone) Log("end of input; finishing the calls in flight");
  // No reply can come any more: a run waiting on an elicitation ends as waiting.
  requests.Close();
  calls.Drain(client_gone);
  dispatcher.SetCalls(nullptr);
  dispatcher.SetClientRequests(nullptr);
  Log("exiting");
  return 0;
}

}  // namespace quarry::mcp
