// `quarry serve --data PATH...`: the web app (serve/serve.h) with `quarry mcp`'s set-up of runs,
// threads and the model; prints the URL with its one-time token, and opens it with --open.
#include <spawn.h>
#include <sys/wait.h>

#include <iostream>

#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/interrupt.h"
#include "quarry/common/exit_codes.h"
#include "quarry/serve/serve.h"

extern char** environ;

namespace quarry::cli {

namespace {

// The desktop's browser on `url`, not waited for; a failure is said, not fatal.
void OpenBrowser(const std::string& url) {
  pid_t pid = 0;
  const char* argv[] = {"xdg-open", url.c_str(), nullptr};
  if (posix_spawnp(&pid, "xdg-open", nullptr, nullptr, const_cast<char* const*>(argv), environ) !=
      0) {
    std::cerr << "quarry serve: cannot start xdg-open: open the URL above yourself\n";
  }
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
  options.on_listening = [open = o.open](const std::string& url) {
    std::cout << url << std::endl;  // stdout: the one line a script reads
    if (open) OpenBrowser(url);
  };
  const InterruptScope interrupt;
  options.stop = interrupt.token();
  options.open.stop = interrupt.token();
  return serve::Serve(options);
}

}  // namespace quarry::cli
