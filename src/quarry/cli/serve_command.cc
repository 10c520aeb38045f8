// `quarry serve --data PATH...`: the web app (serve/serve.h) with `quarry mcp`'s set-up of runs,
// threads and the model; prints the URL with its one-time token, and opens it with --open.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/common/exit_codes.h"
#include "quarry/serve/serve.h"

extern char** environ;

namespace quarry::cli {

namespace {

// A page that sends the browser on to `url`, in a directory only this user can read: the
// browser is started on the file, so the token never stands in a process's arguments, which
// every user of the machine can list (ps). Removed when the server stops.
class RedirectFile {
 public:
  explicit RedirectFile(const std::string& url) {
    std::string dir = (std::filesystem::temp_directory_path() / "quarry-open-XXXXXX").string();
    if (!mkdtemp(dir.data())) return;  // mode 0700
    dir_ = dir;
    const std::string path = dir + "/open.html";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return;
    // The URL is ours (an address, a port, hex): nothing in it needs escaping in HTML.
    const std::string html =
        "<!DOCTYPE html>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"0;url=" +
        url + "\">\n<title>quarry</title>\n<p><a href=\"" + url + "\">Open quarry</a></p>\n";
    const bool written = ::write(fd, html.data(), html.size()) == static_cast<ssize_t>(html.size());
    ::close(fd);
    if (written) path_ = path;
  }
  ~RedirectFile() {
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }
  RedirectFile(const RedirectFile&) = delete;
  RedirectFile& operator=(const RedirectFile&) = delete;
  const std::string& path() const { return path_; }  // "" when it could not be written

 private:
  std::string dir_;
  std::string path_;
};

// The desktop's browser on `target` (a file), not waited for; a failure is said, not fatal.
void OpenBrowser(const std::string& target) {
  pid_t pid = 0;
  const char* argv[] = {"xdg-open", target.c_str(), nullptr};
  if (posix_spawnp(&pid, "xdg-open", nullptr, nullptr, const_cast<char* const*>(argv), environ) !=
      0) {
    std::cerr << "quarry serve: cannot start xdg-open: open the URL above yourself\n";
    return;
  }
  std::thread([pid] { waitpid(pid, nullptr, 0); }).detach();  // reaped, never left a zombie
}

}  // namespace

int RunServe(const ServeCommandOptions& given) {
  ServeCommandOptions o = given;
  o.mcp.paths.insert(o.mcp.paths.end(), given.data.begin(), given.data.end());
  if (o.mcp.paths.empty()) {
    std::cerr << "quarry serve: no data: give files, a folder or a server URL (quarry serve "
                 "--data sales.csv)\n";
    return kExitUsage;
  }
  auto tools = ToolServerOptions(o.mcp);
  if (!tools) return Report(tools.error());
  serve::ServeOptions options;
  options.data = tools->data;
  options.runs_dir = tools->runs_dir;
  options.threads_path = tools->threads_path;
  options.config = tools->config;
  options.config.limits.timeout_ms = o.timeout_ms;
  options.open = tools->open;
  options.on_open = tools->on_open;
  options.make_client = tools->make_client;
  options.allow_python = o.mcp.allow_python;
  options.version = QUARRY_VERSION;
  options.host = o.host;
  options.port = o.port;
  options.allow_remote = o.allow_remote;
  options.allow_hosts = o.allow_hosts;
  options.max_running = static_cast<size_t>(o.max_running);
  options.max_queued = static_cast<size_t>(o.max_queued);
  options.questions_per_minute = o.questions_per_minute;
  // What the page says the model is; a missing key is said now and fails each question.
  if (auto client = options.make_client()) {
    options.model_label =
        (*client)->model() + " via " + std::string(llm::ProviderName((*client)->provider()));
  } else {
    std::cerr << "quarry serve: warning: no model: " << TerminalText(client.error().message)
              << "\n";
  }
  std::unique_ptr<RedirectFile> redirect;
  options.on_listening = [open = o.open, &redirect](const std::string& url) {
    std::cout << url << std::endl;  // stdout: the one line a script reads
    if (!open) return;
    redirect = std::make_unique<RedirectFile>(url);
    if (redirect->path().empty()) {
      std::cerr << "quarry serve: cannot write the page that opens the browser: open the URL "
                   "above yourself\n";
      return;
    }
    OpenBrowser(redirect->path());
  };
  const InterruptScope interrupt;
  options.stop = interrupt.token();
  options.open.stop = interrupt.token();
  return serve::Serve(options);
}

}  // namespace quarry::cli
