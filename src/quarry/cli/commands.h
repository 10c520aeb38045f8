// The subcommands, each a function of its parsed options returning the exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "quarry/agent/agent.h"
#include "quarry/cli/cli_internal.h"

namespace quarry::cli {

struct AskOptions {
  LoadFlags load;
  std::string question;
  std::vector<std::string> data;
  bool offline = false;
  std::string replay;
  std::string fixtures;
  std::string model;
  std::string base_url;
  // --request-timeout, --max-tokens, --temperature, --max-tokens-param, as typed.
  std::string request_timeout;
  std::string max_tokens;
  std::string temperature;
  std::string max_tokens_param;
  std::string runs_dir = "runs";
  bool runs_dir_given = false;  // --runs-dir was passed: threads live there too
  // --thread: the conversation this question belongs to ("" none).
  std::string thread;
  bool no_self_correction = false;
  agent::Config config;
  std::string format_name = "text";
  bool allow_unisolated = false;
  bool no_python = false;
  std::optional<int64_t> schema_budget;  // --schema-budget
  bool no_samples = false;
};

struct DataOptions {
  LoadFlags load;
  std::vector<std::string> paths;
  std::string sql;
  std::string format_name = "text";
  int64_t timeout_ms = 10000;
  int max_rows = 200;
  // quarry schema: --prompt prints the first request `ask` would send for this question.
  std::optional<std::string> prompt_question;
  std::optional<int64_t> schema_budget;
  bool no_samples = false;
};

struct PythonOptions {
  LoadFlags load;
  std::vector<std::string> args;  // data files, then the script
  std::string runs_dir = "runs";
  bool allow_unisolated = false;
  int64_t timeout_ms = 30000;
};

struct McpOptions {
  LoadFlags load;
  std::vector<std::string> paths;
  bool allow_python = false;
  std::string runs_dir;  // "": runs/ in the working directory, threads in the state directory
  std::string model;
  std::string base_url;
  std::optional<int64_t> schema_budget;
  bool no_samples = false;
};

struct CacheOptions {
  std::string action = "list";  // list, build, clear
  std::vector<std::string> paths;
  std::string cache_dir;
  std::string format_name = "text";
  bool quiet = false;
};

struct ThreadsOptions {
  std::string action = "list";  // list, show, delete
  std::string name;
  std::string runs_dir;  // "" : the XDG state directory
  std::string format_name = "text";
};

struct ViewOptions {
  std::string which = "latest";
  std::string out;
  std::string runs_dir = "runs";
};

struct TraceOptions {
  std::string which = "latest";
  std::string runs_dir = "runs";
};

struct ReportOptions {
  std::string path = "runs";  // a runs folder, a bench results file or an eval output folder
  std::string html;           // --html: the page to write ("" none)
  std::string format_name = "text";
};

int RunAsk(const AskOptions& options);
int RunSchema(const DataOptions& options);
int RunSql(const DataOptions& options);
int RunTrace(const TraceOptions& options);
int RunPythonScript(const PythonOptions& options);
int RunMcp(const McpOptions& options);
int RunView(const ViewOptions& options);
int RunCache(const CacheOptions& options);
int RunThreads(const ThreadsOptions& options);
int RunReport(const ReportOptions& options);
// `quarry chat`: AskOptions without the question; `thread` continues that thread.
int RunChat(const AskOptions& options);

// What the model is shown of the schema, from flags, then the environment, then .env:
// --schema-budget or QUARRY_SCHEMA_BUDGET (tokens, 100 to 1,000,000; default 2000),
// --no-samples or QUARRY_NO_SAMPLES (1/true/yes or 0/false/no), and the embeddings endpoint
// (llm::ResolveEmbeddingsConfig) unless `embeddings` is false. Errors: kUsage naming the setting.
Result<agent::SchemaOptions> ResolveSchemaOptions(std::optional<int64_t> budget_flag,
                                                  bool no_samples_flag, bool embeddings = true);

// The live model client from flags, the environment and .env (see llm::ResolveConfig).
Result<std::unique_ptr<llm::Client>> LiveClient(const std::string& model, const std::string& base_url);
// The live client from flags, the environment and .env. While a reply is awaited, stderr shows
// the seconds waited on one rewritten line when it is a terminal; every resend is said there.
Result<std::unique_ptr<llm::Client>> LiveClient(const llm::Settings& flags);

}  // namespace quarry::cli
