// The subcommands, each a function of its parsed options returning the exit code.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "quarry/agent/agent.h"
#include "quarry/cli/cli_internal.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace quarry::cli {

struct AskOptions {
  LoadFlags load;
  std::string question;
  std::vector<std::string> data;
  bool offline = false;
  // --offline continuing a thread's waiting clarification: the reply, which picks the
  // recording of that continuation (its "question" the turn's, its "reply" this).
  std::optional<std::string> offline_reply;
  std::string replay;
  std::string fixtures;
  std::string model;
  std::string base_url;
  std::string provider;  // --provider: openai-compatible, openrouter, anthropic ("" : chosen)
  std::string profile;   // --profile: the config file's profile ("" : QUARRY_PROFILE, the default)
  bool no_stream = false;  // --no-stream: whole replies, no live text
  std::string record;      // --record FILE: save the live run's model turns as a fixture
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
  std::string knowledge;      // --knowledge DIR ("": .quarry/ beside the data or here, if any)
  bool no_knowledge = false;  // --no-knowledge
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
  std::string provider;    // --provider for ask_database ("" : chosen)
  std::string profile;     // --profile for ask_database
  bool no_stream = false;  // --no-stream: ask_database's model replies whole
  std::optional<int64_t> schema_budget;
  bool no_samples = false;
  std::string knowledge;  // as AskOptions
  bool no_knowledge = false;
};

// `quarry knowledge import dbt MANIFEST` (knowledge_command.cc): knowledge files written from a
// dbt manifest, never over a file.
struct ImportDbtOptions {
  bool given = false;  // the subcommand was used
  std::string manifest;
  std::string knowledge = ".quarry";  // --knowledge DIR
  bool yes = false;                   // --yes: write without asking
  bool dry_run = false;               // --dry-run: print the files, write nothing
};

// `quarry knowledge check` (knowledge_command.cc): every definition run against the data; and
// `quarry knowledge import dbt`.
struct KnowledgeOptions {
  LoadFlags load;
  std::vector<std::string> paths;
  std::string knowledge;  // --knowledge DIR ("": discovered)
  int64_t timeout_ms = 10000;
  std::string format_name = "text";
  ImportDbtOptions import_dbt;
};

// `quarry serve` (serve_command.cc): the web app over the data, with MCP's model flags for
// its questions.
struct ServeCommandOptions {
  McpOptions mcp;                 // the data (positional), --runs-dir, the model, load and schema
  std::vector<std::string> data;  // --data: more data, the same as the positional paths
  std::string host = "127.0.0.1";
  int port = 8765;
  bool allow_remote = false;
  std::vector<std::string> allow_hosts;
  bool open = false;              // --open: start the browser on the URL
  int max_running = 2;            // questions run at once
  int max_queued = 8;             // questions waiting for a run; past it, "busy"
  int questions_per_minute = 30;  // per client
  int64_t timeout_ms = 10000;     // --timeout-ms: every query (the model's, the SQL box's, /mcp's)
};

// `quarry doctor` (doctor_command.cc): the model flags `ask` takes, --no-probe and --format.
struct DoctorOptions {
  std::string model;
  std::string base_url;
  std::string provider;
  std::string profile;
  std::string request_timeout;
  std::string max_tokens;  // also the probe's output limit ("" : 256)
  std::string temperature;
  std::string max_tokens_param;
  bool no_probe = false;
  std::string format_name = "text";
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

// quarry eval spider|bird: the benchmark's flags; `ask` holds the model and agent flags shared
// with ask (data and question are set per question).
struct EvalCommandOptions {
  std::string benchmark;  // "spider" or "bird"
  std::string dir;
  std::string split = "dev";
  size_t n = 0;  // 0: every question
  uint64_t seed = 0;
  std::string tag;
  bool gold = false;
  std::string out;
  std::string rules;  // "" : the benchmark's own (spider test-suite, bird bird)
  bool keep_distinct = false;
  int64_t query_timeout_ms = 60000;
  int max_rows = 100000;
  std::string format_name = "text";
  std::string evidence = "hint";     // bird: hint, knowledge or none (bench::Evidence)
  std::vector<std::string> compare;  // `eval compare A B`: two results folders
  AskOptions ask;                    // ask.knowledge: --knowledge DIR
};

struct TraceOptions {
  std::string which = "latest";
  std::string runs_dir = "runs";
};

// `quarry bench` (bench_command.cc): the model, budget and data flags in `ask`.
struct BenchCmdOptions {
  AskOptions ask;
  std::string tasks;  // "" : tasks/ here, else the source tree's
  std::string arms = "on,off";
  CLI::Option* arms_option = nullptr;  // --arms, to tell it given from its default
  bool no_self_correction = false;
  int samples = 1;
  int limit = 0;
  std::string tags;
  bool verbose = false;
  double max_cost_usd = -1;  // < 0: no bench budget
  int jobs = 1;
  std::string out = "results";
  std::string runs_dir;  // "" : runs/bench-<id>
  std::string judge_model;
  bool render_site = false;
  std::string results;
  std::string site = "site/index.html";
  // --postgres / --mysql: a server spec serving data/chinook.sqlite's tasks ("" : files).
  std::string postgres;
  std::string mysql;
  // --suite behaviour: the behaviour suite (RunBehaviourCommand) with the flags below.
  std::string suite = "tasks";
  std::vector<std::string> cases;  // --case
  std::string source;              // --source
  std::string work_dir;            // --work-dir
};
CLI::App* AddBenchCommand(CLI::App& app, BenchCmdOptions& options);
int RunBenchCommand(const BenchCmdOptions& options);
// The behaviour suite (`quarry bench --suite behaviour`): `run` carries the model and run flags
// as `ask` takes them (--offline, --fixtures, --model, --base-url, --runs-dir, --schema-budget,
// --no-python, ...; the question is unused).
struct BehaviourCommandOptions {
  AskOptions run;
  std::string out_dir = "results";  // behaviour_results.json and BEHAVIOUR.md
  std::string source;               // "": data/chinook.sqlite
  std::string work_dir;             // "": a temporary directory for the copies
  std::vector<std::string> only;    // case ids; empty: all
};
struct ReportOptions {
  std::string path = "runs";  // a runs folder, a bench results file or an eval output folder
  std::string html;           // --html: the page to write ("" none)
  std::string format_name = "text";
};

int RunAsk(const AskOptions& options);
int RunEvalCommand(const EvalCommandOptions& options);
// Adds `eval` with its `spider` and `bird` subcommands, their flags bound to `options`.
CLI::App* AddEvalCommand(CLI::App& app, EvalCommandOptions& options);
int RunSchema(const DataOptions& options);
int RunSql(const DataOptions& options);
int RunTrace(const TraceOptions& options);
int RunPythonScript(const PythonOptions& options);
int RunMcp(const McpOptions& options);
int RunServe(const ServeCommandOptions& options);
// `quarry knowledge check` or `quarry knowledge import dbt`, whichever was given.
int RunKnowledge(const KnowledgeOptions& options);

// `quarry learn WHICH` (knowledge_command.cc): an answered, grounded run saved as a verified
// query, after the user has seen it.
struct LearnOptions {
  std::string which = "latest";
  std::string runs_dir = "runs";
  std::string knowledge;  // --knowledge DIR ("": discovered, else ./.quarry)
  std::string name;       // --name: the file's name ("": from the question)
  bool yes = false;       // --yes: save without asking
  LoadFlags load;
};
int RunLearn(const LearnOptions& options);

// quarry remember [latest|ID]: keeps a run's clarification replies as glossary terms.
struct RememberOptions {
  std::string which = "latest";
  std::string runs_dir = "runs";
  std::string knowledge;  // --knowledge DIR ("": discovered, else ./.quarry)
  std::string term;       // --term: the name to keep the reply under ("": the one asked about)
  bool yes = false;       // --yes: save without asking
};
int RunRemember(const RememberOptions& options);
// Registers `remember` on `app`.
CLI::App* AddRememberCommand(CLI::App& app, RememberOptions& options);
// Registers `knowledge check`, `knowledge import dbt` and `learn` on `app` (the load flags of
// check and learn are the caller's to add); returns the `knowledge` and `learn` subcommands.
std::pair<CLI::App*, CLI::App*> AddKnowledgeCommands(CLI::App& app, KnowledgeOptions& knowledge,
                                                     LearnOptions& learn);
int RunView(const ViewOptions& options);
int RunCache(const CacheOptions& options);
int RunThreads(const ThreadsOptions& options);
int RunReport(const ReportOptions& options);
// Checks the configured model endpoint and prints one line per check (or one JSON document).
// Exit: 0 when everything needed works (warnings allowed); 2 when the settings cannot be
// resolved or the server lists several models and none is chosen; 3 for a bad price file; 4
// when the endpoint fails a check (unreachable, key refused, model not served, no model list
// and no model set, the probe failed or came back without a tool call).
int RunDoctor(const DoctorOptions& options);
// `quarry chat`: AskOptions without the question; `thread` continues that thread.
int RunChat(const AskOptions& options);
// Exit: 0 when no case failed, 5 (no answer) when one did, else the error's code.
int RunBehaviourCommand(const BehaviourCommandOptions& options);

// What the model is shown of the schema, from flags, then the environment, then .env:
// --schema-budget or QUARRY_SCHEMA_BUDGET (tokens, 100 to 1,000,000; default 2000),
// --no-samples or QUARRY_NO_SAMPLES (1/true/yes or 0/false/no), and the embeddings endpoint
// (llm::ResolveEmbeddingsConfig) unless `embeddings` is false. Errors: kUsage naming the setting.
Result<agent::SchemaOptions> ResolveSchemaOptions(std::optional<int64_t> budget_flag,
                                                  bool no_samples_flag, bool embeddings = true);

// The model settings from flags, the environment, .env and the config profile
// (llm::ReadSettingFiles, llm::ResolveConfig), without asking the server anything.
Result<llm::ClientConfig> ResolveModelSettings(const llm::Settings& flags,
                                               llm::SettingOrigins* origins = nullptr,
                                               llm::ConfigProfile* profile = nullptr);
// The live client's configuration from flags, the environment, .env and the config profile;
// when that leaves the model empty (a loopback endpoint), the only model the server lists
// (llm::OnlyServedModel). `origins`, when given, says where each setting came from.
Result<llm::ClientConfig> LiveConfig(const llm::Settings& flags,
                                     llm::SettingOrigins* origins = nullptr);
// The live client from flags, the environment and .env. While a reply is awaited, stderr shows
// the seconds waited on one rewritten line when it is a terminal; every resend is said there.
// With `live_text`, a streamed reply's text and tool calls are shown there as they arrive
// (LiveText), when stderr is a terminal and streaming is on.
Result<std::unique_ptr<llm::Client>> LiveClient(const llm::Settings& flags, bool live_text = false);

}  // namespace quarry::cli
