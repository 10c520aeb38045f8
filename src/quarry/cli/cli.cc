// Argument parsing (CLI11) and dispatch to the subcommands; the one place where exceptions
// from anywhere below turn into an error line and an exit code.
#include "quarry/cli/cli.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "quarry/agent/threads.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/cli_options.h"
#include "quarry/cli/commands.h"
#include "quarry/cli/installation.h"
#include "quarry/cli/manual.h"
#include "quarry/cli/terminal.h"

namespace quarry::cli {

bool UseColor() {
  switch (GetColorMode()) {
    case ColorMode::kAlways:
      return true;
    case ColorMode::kNever:
      return false;
    case ColorMode::kAuto:
      break;
  }
  const char* no_color = std::getenv("NO_COLOR");
  // A dumb terminal (Emacs' shell, some CI logs) shows escape codes as text.
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return isatty(2) && (no_color == nullptr || no_color[0] == '\0');
}

std::string Paint(const std::string& text, const char* ansi) {
  if (!UseColor()) return text;
  return std::string("\033[") + ansi + "m" + text + "\033[0m";
}

namespace {

// TerminalText, or (json) the same characters as JSON \u escapes.
std::string Escaped(std::string_view text, bool json) {
  std::string out;
  char buf[12];
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      std::snprintf(buf, sizeof buf, json ? "\\u%04x" : "\\x%02x", c);
      out += buf;
    } else if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {  // U+0080..U+009F
      std::snprintf(buf, sizeof buf, "\\u%04x", next);
      out += buf;
      ++i;
    } else if (const unsigned third =
                   i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
               c == 0xE2 && ((next == 0x80 && ((third >= 0x8E && third <= 0x8F) ||
                                               (third >= 0xAA && third <= 0xAE))) ||
                             (next == 0x81 && third >= 0xA6 && third <= 0xA9))) {
      // Bidirectional controls (U+200E/F, U+202A..E, U+2066..9) reorder what follows on the
      // line: a name could show as another.
      std::snprintf(buf, sizeof buf, "\\u%04x", 0x2000u + ((next & 0x3Fu) << 6) + (third & 0x3Fu));
      out += buf;
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string TerminalText(std::string_view text) { return Escaped(text, false); }

std::string TerminalTextIfTty(int fd, std::string_view text) {
  return isatty(fd) ? TerminalText(text) : std::string(text);
}

std::string JsonText(const nlohmann::ordered_json& j, int indent) {
  // A dump holds no raw C0 control but the newlines of its indentation, which stay.
  return Escaped(j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                 true);
}

int Report(const Error& error) {
  // One line: engines' messages carry "LINE 1:" excerpts and carets meant for a SQL console.
  std::string line = error.message.substr(0, error.message.find("\nLINE "));
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "quarry: " << TerminalText(line) << "\n";
  switch (error.code) {
    case Error::Code::kUsage:
      return kExitUsage;
    case Error::Code::kData:
      return kExitData;
    case Error::Code::kModel:
      return kExitModel;
    case Error::Code::kInternal:
      return kExitInternal;
    case Error::Code::kCancelled:
      return kExitInterrupted;
  }
  return kExitInternal;
}

namespace {

void AddLoadFlags(CLI::App* cmd, LoadFlags& load) {
  cmd->add_flag("--no-cache", load.no_cache,
                "Neither read nor fill the parse cache (large CSV/TSV/JSON files are "
                "materialised once under $XDG_CACHE_HOME/quarry/parse)");
  cmd->add_option("--cache-dir", load.cache_dir, "The parse cache's directory");
}

template <typename Options>
void AddSchemaFlags(CLI::App* cmd, Options& o) {
  cmd->add_option("--schema-budget", o.schema_budget,
                  "Tokens (estimated) the schema cards may take in the model's prompt; over it, "
                  "the tables the question is about go in full and the rest by name (else "
                  "QUARRY_SCHEMA_BUDGET; default 2000)")
      ->check(CLI::Range(int64_t{100}, int64_t{1000000}));
  cmd->add_flag("--no-samples", o.no_samples,
                "Send types and statistics only: no sample values and no min/max of text columns "
                "(else QUARRY_NO_SAMPLES=1)");
}

// --knowledge DIR and --no-knowledge, for the commands that ask the model.
template <typename Options>
void AddKnowledgeFlags(CLI::App* cmd, Options& o) {
  auto* dir = cmd->add_option("--knowledge", o.knowledge,
                              "The knowledge folder: metrics, glossary, rules, verified queries "
                              "(default: .quarry/ beside the data or here, when there is one)");
  cmd->add_flag("--no-knowledge", o.no_knowledge, "Use no knowledge folder")->excludes(dir);
}

CLI::Validator ThreadName() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        auto v = agent::ValidateThreadName(name);
        return v ? std::string() : v.error().message;
      },
      "NAME", "thread name");
}

// The flags `ask` and `chat` share: the data, the model, budgets, Python, the runs folder.
// Returns --runs-dir, whose presence also moves the threads there.
CLI::Option* AddQuestionFlags(CLI::App* cmd, AskOptions& o) {
  cmd->add_option("-d,--data", o.data,
                  "A data file (repeat for several), or one database server: "
                  "postgresql://USER@HOST:PORT/DB or service=NAME (password from PGPASSWORD, "
                  "~/.pgpass or a service file), mysql://USER@HOST:PORT/DB (MariaDB, MySQL; "
                  "password from MYSQL_PWD or ~/.my.cnf), or clickhouse://USER@HOST:8123/DB "
                  "(password from CLICKHOUSE_PASSWORD)");  // required, checked after parsing
  cmd->add_flag("--offline", o.offline,
                "Replay recorded model turns from fixtures/offline (tools still execute)");
  cmd->add_option("--fixtures", o.fixtures, "Where --offline looks for recorded turns");
  cmd->add_option("--model", o.model, "Model id (else QUARRY_MODEL)");
  cmd->add_option("--base-url", o.base_url,
                  "OpenAI-compatible endpoint (else QUARRY_BASE_URL; from OPENROUTER_API_KEY, "
                  "ANTHROPIC_API_KEY or OPENAI_API_KEY when set)");
  cmd->add_option("--provider", o.provider,
                  "openai-compatible, openrouter or anthropic (else QUARRY_PROVIDER; chosen "
                  "from the base URL and which key is set)")
      ->check(ProviderFlag());
  cmd->add_option(
      "--profile", o.profile,
      "A profile of the config file, ~/.config/quarry/config.toml (else QUARRY_PROFILE, "
      "else its default_profile)");
  cmd->add_flag("--no-stream", o.no_stream,
                "Wait for whole model replies instead of showing the text as it arrives");
  cmd->add_option("--record", o.record,
                  "Save this live run's model turns to FILE, a fixture --replay and --offline "
                  "can play back")
      ->check(CLI::Validator(
          [](std::string& file) {
            return file.empty() ? std::string("name the file to record to") : std::string();
          },
          "FILE", "record file"));
  cmd->add_option("--request-timeout", o.request_timeout,
                  "Seconds to wait for one model reply; a request that times out is not "
                  "resent (else QUARRY_REQUEST_TIMEOUT; default 120)");
  cmd->add_option("--max-tokens", o.max_tokens,
                  "Output token limit of each model turn (else QUARRY_MAX_TOKENS; default "
                  "2048)");
  cmd->add_option("--temperature", o.temperature,
                  "Sampling temperature, or \"default\" to send none (else "
                  "QUARRY_TEMPERATURE; default 0, none for OpenAI reasoning models)");
  cmd->add_option("--max-tokens-param", o.max_tokens_param,
                  "How the output limit is sent: auto, max_tokens or max_completion_tokens "
                  "(else QUARRY_MAX_TOKENS_PARAM; auto: max_completion_tokens for OpenAI "
                  "reasoning models)");
  CLI::Option* runs_dir =
      cmd->add_option("--runs-dir", o.runs_dir,
                      "Where runs/<id>/trace.json goes; when given, threads.sqlite3 too (else "
                      "$XDG_STATE_HOME/quarry)")
          ->default_val("runs");
  cmd->add_flag("--no-self-correction", o.no_self_correction,
                "End the run at the first failed tool call (the ablation arm)");
  cmd->add_option("--max-steps", o.config.max_steps, "Model turns at most")
      ->default_val(12)
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-repairs", o.config.max_repairs, "Repair attempts at most")
      ->default_val(6)
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--max-tool-calls", o.config.max_tool_calls,
                  "Tool calls per question at most (parallel calls count one each)")
      ->default_val(16)
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--max-cost", o.config.max_cost_usd, "Cost budget in USD")
      ->default_val(1.0)
      ->check(UsdAmount());
  cmd->add_option("--timeout-ms", o.config.limits.timeout_ms, "Per-query timeout")
      ->default_val(10000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  cmd->add_flag("--allow-unisolated", o.allow_unisolated,
                "Where bubblewrap cannot isolate Python, run it with rlimits, seccomp and "
                "the guard only (said on every run)");
  cmd->add_flag("--no-python", o.no_python, "Do not offer run_python to the model");
  AddLoadFlags(cmd, o.load);
  AddSchemaFlags(cmd, o);
  AddKnowledgeFlags(cmd, o);
  return runs_dir;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{
      "quarry: ask questions about CSV, TSV, Parquet, JSON, Excel, SQLite and DuckDB data, and "
      "PostgreSQL servers. "
      "A model writes SQL; quarry runs it read-only, lets the model repair its errors, "
      "and refuses answers whose numbers never appeared in a real result."};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return VersionText(); });
  // Before or after the command's name: `quarry sql --color never ...` as `quarry --color ...`.
  app.fallthrough();
  std::string color = "auto";
  app.add_option("--color", color,
                 "Colour on stderr: auto (a terminal, and NO_COLOR unset), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  bool no_pager = false;
  app.add_flag("--no-pager", no_pager,
               "Print long tables straight instead of through the pager (QUARRY_PAGER, else "
               "PAGER, else less -S -R -F -X)");

  AskOptions ask;
  CLI::App* ask_cmd = app.add_subcommand("ask", "Answer a question about the data with a model");
  // Not required to CLI11: --data takes every value up to the next option, so a question
  // followed by options lands in it, and is taken back after parsing.
  CLI::Option* question_opt =
      ask_cmd->add_option("question", ask.question, "The question, in English (required)");
  ask_cmd->add_option("--replay", ask.replay, "Replay model turns from this fixture or trace.json");
  CLI::Option* ask_runs_dir = AddQuestionFlags(ask_cmd, ask);
  ask_cmd
      ->add_option("--thread", ask.thread,
                   "Ask in this conversation: earlier turns are context, the turn is saved; "
                   "when the thread waits on a clarification, the question is the reply")
      ->check(ThreadName());
  ask_cmd->add_option("--format", ask.format_name, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");

  AskOptions chat;
  CLI::App* chat_cmd = app.add_subcommand(
      "chat", "Ask question after question in one conversation: quarry chat --data FILE...");
  CLI::Option* chat_runs_dir = AddQuestionFlags(chat_cmd, chat);
  chat_cmd
      ->add_option("--thread", chat.thread,
                   "Continue this thread (one that ask --thread or an earlier chat started); "
                   "default: a new one")
      ->check(ThreadName());

  ThreadsOptions threads;
  CLI::App* threads_cmd = app.add_subcommand(
      "threads", "Saved conversations: quarry threads [list | show NAME | delete NAME]");
  threads_cmd->add_option("action", threads.action, "list, show or delete")
      ->check(CLI::IsMember({"list", "show", "delete"}))
      ->default_val("list");
  threads_cmd->add_option("name", threads.name, "The thread (show, delete)");
  threads_cmd->add_option("--runs-dir", threads.runs_dir,
                          "Threads of runs made with this --runs-dir (else the XDG state "
                          "directory)");
  threads_cmd->add_option("--format", threads.format_name, "text or json (list, show)")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");

  DataOptions schema;
  CLI::App* schema_cmd = app.add_subcommand("schema", "Print the schema cards of data files");
  schema_cmd->add_option("paths", schema.paths, "Data files, or a PostgreSQL server URL")
      ->required();
  schema_cmd->add_option("--format", schema.format_name, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  schema_cmd->add_option("--timeout-ms", schema.timeout_ms, "Limit per loading statement")
      ->default_val(60000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  AddLoadFlags(schema_cmd, schema.load);
  AddSchemaFlags(schema_cmd, schema);
  // Diagnostic: the first request `ask` would send (for bench/prompt_tokens.mjs); not in --help.
  schema_cmd
      ->add_option("--prompt", schema.prompt_question,
                   "Print the first request ask would send for this question, as JSON")
      ->group("");

  DataOptions sql;
  CLI::App* sql_cmd =
      app.add_subcommand("sql", "Run one read-only query: quarry sql PATH... \"SELECT ...\"");
  sql_cmd->add_option("args", sql.paths, "Data files (or a database server's URL), then the SQL")
      ->required()
      ->expected(2, -1);
  sql_cmd
      ->add_option("--format", sql.format_name,
                   "text (a table), json (typed cells, see README) or csv (RFC 4180)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->default_val("text");
  sql_cmd->add_option("--timeout-ms", sql.timeout_ms, "Query timeout")
      ->default_val(10000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  sql_cmd->add_option("--max-rows", sql.max_rows, "Rows fetched at most")
      ->default_val(200)
      ->check(CLI::Range(0, 100000));
  AddLoadFlags(sql_cmd, sql.load);

  PythonOptions python;
  CLI::App* python_cmd = app.add_subcommand(
      "python",
      "Run a Python script in the sandbox against the data: quarry python PATH... SCRIPT.py");
  python_cmd->add_option("args", python.args, "Data files, then the script")
      ->required()
      ->expected(2, -1);
  python_cmd->add_option("--runs-dir", python.runs_dir, "Where runs/<id>/workdir goes")
      ->default_val("runs");
  python_cmd->add_flag("--allow-unisolated", python.allow_unisolated,
                       "Run without namespaces where bubblewrap cannot start");
  python_cmd->add_option("--timeout-ms", python.timeout_ms, "Wall-clock limit")
      ->default_val(30000)
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  AddLoadFlags(python_cmd, python.load);

  ViewOptions view;
  CLI::App* view_cmd = app.add_subcommand(
      "view", "Render a trace to one self-contained HTML page: quarry view [latest|ID|trace.json]");
  view_cmd->add_option("which", view.which, "latest, a run id, or a trace.json path")
      ->default_val("latest");
  view_cmd->add_option("-o,--out", view.out,
                       "The HTML file (default: trace.html beside the trace)");
  view_cmd->add_option("--runs-dir", view.runs_dir, "Where the runs are")->default_val("runs");

  McpOptions mcp;
  CLI::App* mcp_cmd = app.add_subcommand(
      "mcp", "Serve quarry's tools over MCP (stdio) for Claude Code and other MCP clients");
  mcp_cmd->add_option("paths", mcp.paths, "Data files, or a database server URL")->required();
  mcp_cmd->add_flag("--allow-python", mcp.allow_python, "Offer run_python (sandboxed) to clients");
  mcp_cmd->add_option("--runs-dir", mcp.runs_dir,
                      "Where runs/<id>/ go (default runs); threads.sqlite3 too when given");
  mcp_cmd->add_option("--model", mcp.model, "Model id for ask_database (else QUARRY_MODEL)");
  mcp_cmd->add_option("--base-url", mcp.base_url, "Endpoint for ask_database");
  mcp_cmd
      ->add_option("--provider", mcp.provider,
                   "openai-compatible, openrouter or anthropic for ask_database (else "
                   "QUARRY_PROVIDER)")
      ->check(ProviderFlag());
  mcp_cmd->add_option("--profile", mcp.profile,
                      "The config file's profile for ask_database (else QUARRY_PROFILE)");
  mcp_cmd->add_flag("--no-stream", mcp.no_stream,
                    "ask_database waits for whole model replies instead of streamed ones");
  AddLoadFlags(mcp_cmd, mcp.load);
  AddSchemaFlags(mcp_cmd, mcp);
  AddKnowledgeFlags(mcp_cmd, mcp);

  ServeCommandOptions serve;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve",
      "The local web app: ask in a browser, follow each run live (quarry serve --data FILE)");
  // One list under two spellings; each on its own, so the help shows neither as required and
  // RunServe says what to give when both are empty.
  serve_cmd->add_option("paths", serve.mcp.paths, "Data files, a folder, or a server URL");
  serve_cmd->add_option("--data", serve.data, "The same as the paths (repeatable)");
  serve_cmd->add_option("--host", serve.host, "Address to listen on (default 127.0.0.1)");
  serve_cmd->add_option("--port", serve.port, "Port (default 8765; 0 picks a free one)")
      ->check(CLI::Range(0, 65535));
  serve_cmd->add_flag("--allow-remote", serve.allow_remote,
                      "Allow a --host other than loopback (the token still applies)");
  serve_cmd->add_option("--allow-host", serve.allow_hosts,
                        "Another name the Host header may carry (repeatable)");
  serve_cmd->add_flag("--open", serve.open, "Open the page in the browser");
  serve_cmd->add_option("--max-running", serve.max_running, "Questions run at once (default 2)")
      ->check(CLI::Range(1, 64));
  serve_cmd
      ->add_option("--max-queued", serve.max_queued,
                   "Questions that may wait; past it the page is told busy (default 8)")
      ->check(CLI::Range(0, 1000));
  serve_cmd
      ->add_option("--questions-per-minute", serve.questions_per_minute,
                   "Questions one client may ask a minute (default 30)")
      ->check(CLI::Range(1, 100000));
  serve_cmd->add_option("--timeout-ms", serve.timeout_ms, "Per-query timeout (default 10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  serve_cmd->add_flag("--allow-python", serve.mcp.allow_python,
                      "Let the model run sandboxed Python");
  serve_cmd->add_option("--runs-dir", serve.mcp.runs_dir,
                        "Where runs/<id>/ go (default runs); threads.sqlite3 too when given");
  serve_cmd->add_option("--model", serve.mcp.model, "Model id (else QUARRY_MODEL)");
  serve_cmd->add_option("--base-url", serve.mcp.base_url, "The model's endpoint");
  serve_cmd
      ->add_option("--provider", serve.mcp.provider,
                   "openai-compatible, openrouter or anthropic (else QUARRY_PROVIDER)")
      ->check(ProviderFlag());
  serve_cmd->add_option("--profile", serve.mcp.profile, "The config file's profile");
  serve_cmd->add_flag("--no-stream", serve.mcp.no_stream, "Wait for whole model replies");
  AddLoadFlags(serve_cmd, serve.mcp.load);
  AddSchemaFlags(serve_cmd, serve.mcp);
  AddKnowledgeFlags(serve_cmd, serve.mcp);

  KnowledgeOptions knowledge;
  LearnOptions learn;
  const auto [knowledge_cmd, learn_cmd] = AddKnowledgeCommands(app, knowledge, learn);
  AddLoadFlags(knowledge_cmd->get_subcommand("check"), knowledge.load);
  AddLoadFlags(learn_cmd, learn.load);
  RememberOptions remember;
  CLI::App* remember_cmd = AddRememberCommand(app, remember);

  CacheOptions cache;
  CLI::App* cache_cmd =
      app.add_subcommand("cache", "The parse cache: quarry cache [list|build FILE...|clear]");
  cache_cmd->add_option("action", cache.action, "list, build or clear")
      ->check(CLI::IsMember({"list", "build", "clear"}))
      ->default_val("list");
  cache_cmd->add_option("paths", cache.paths, "Files to build entries for (build)");
  cache_cmd->add_option("--cache-dir", cache.cache_dir, "The parse cache's directory");
  cache_cmd->add_option("--format", cache.format_name, "text or json (list)")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  cache_cmd->add_flag("--quiet", cache.quiet, "Print nothing on success");

  TraceOptions trace;
  CLI::App* trace_cmd = app.add_subcommand("trace", "Summarise a run: quarry trace [latest|ID]");
  trace_cmd->add_option("which", trace.which, "latest, a run id, or a trace.json path")
      ->default_val("latest");
  trace_cmd->add_option("--runs-dir", trace.runs_dir, "Where the runs are")->default_val("runs");

  BenchCmdOptions bench;
  CLI::App* bench_cmd = AddBenchCommand(app, bench);
  EvalCommandOptions eval;
  CLI::App* eval_cmd = AddEvalCommand(app, eval);
  ReportOptions report;
  CLI::App* report_cmd = app.add_subcommand(
      "report", "Figures over many runs: quarry report [RUNS_DIR | bench_results.json | EVAL_DIR]");
  report_cmd
      ->add_option("path", report.path,
                   "A runs folder, a bench results file, or an eval output folder")
      ->default_val("runs");
  report_cmd->add_option("--html", report.html,
                         "Also write the tables and a latency histogram to this HTML page");
  report_cmd->add_option("--format", report.format_name, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");

  DoctorOptions doctor;
  CLI::App* doctor_cmd = app.add_subcommand(
      "doctor",
      "Check the model endpoint: settings, connection, model list, context length "
      "and one tiny tool-calling probe (its cost said first)");
  doctor_cmd->add_option("--model", doctor.model, "Model id (else QUARRY_MODEL)");
  doctor_cmd->add_option("--base-url", doctor.base_url, "Endpoint (else QUARRY_BASE_URL)");
  doctor_cmd
      ->add_option("--provider", doctor.provider,
                   "openai-compatible, openrouter or anthropic (else QUARRY_PROVIDER)")
      ->check(ProviderFlag());
  doctor_cmd->add_option("--profile", doctor.profile,
                         "The config file's profile (else QUARRY_PROFILE, else its "
                         "default_profile)");
  doctor_cmd->add_option("--request-timeout", doctor.request_timeout,
                         "Seconds to wait for the probe's reply");
  doctor_cmd->add_option("--max-tokens", doctor.max_tokens,
                         "The probe's output token limit (default 256)");
  doctor_cmd->add_option("--temperature", doctor.temperature,
                         "Sampling temperature, or \"default\"");
  doctor_cmd->add_option("--max-tokens-param", doctor.max_tokens_param,
                         "auto, max_tokens or max_completion_tokens");
  doctor_cmd->add_flag("--no-probe", doctor.no_probe,
                       "Send no model request: check settings, connection and model list only");
  doctor_cmd->add_option("--format", doctor.format_name, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");

  std::string generate;
  CLI::App* generate_cmd =
      app.add_subcommand("generate",
                         "Print the man page or a shell's completion script, made from these "
                         "definitions: quarry generate man|bash|zsh|fish");
  generate_cmd->add_option("what", generate, "man, bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"man", "bash", "zsh", "fish"}));

  // CLI11 says "A subcommand is required" for `quarry frobnicate`: name the word and the commands.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "quarry: unknown command '" << TerminalText(argv[1]) << "'; the commands are "
                << names << " (quarry --help)\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  // Checked here rather than by CLI11, which reports a missing --data before an unknown
  // option ("ask --bogus" said "--data is required").
  if ((*ask_cmd && ask.data.empty()) || (*chat_cmd && chat.data.empty())) {
    std::cerr << "quarry: --data is required: a data file (repeat for several) or a PostgreSQL "
                 "server URL\nRun with --help for more information.\n";
    return kExitUsage;
  }
  SetColorMode(color == "always"  ? ColorMode::kAlways
               : color == "never" ? ColorMode::kNever
                                  : ColorMode::kAuto);
  SetPagerEnabled(!no_pager);
  try {
    ask.runs_dir_given = ask_runs_dir->count() > 0;
    chat.runs_dir_given = chat_runs_dir->count() > 0;
    if (*ask_cmd) {
      // `--data a.csv "Which region?" --runs-dir x`: the last value of --data that is no file
      // and no server is the question.
      std::error_code ec;
      if (question_opt->count() == 0 && ask.data.size() >= 2 &&
          !engine::IsServerSpec(ask.data.back()) && !std::filesystem::exists(ask.data.back(), ec)) {
        ask.question = ask.data.back();
        ask.data.pop_back();
      } else if (question_opt->count() == 0) {
        std::cerr << "quarry: ask needs a question after the data files: quarry ask --data "
                     "FILE... \"QUESTION\" [options]\n";
        return kExitUsage;
      }
      return RunAsk(ask);
    }
    if (*schema_cmd) return RunSchema(schema);
    if (*sql_cmd) {
      sql.sql = sql.paths.back();
      sql.paths.pop_back();
      return RunSql(sql);
    }
    if (*trace_cmd) return RunTrace(trace);
    if (*python_cmd) return RunPythonScript(python);
    if (*mcp_cmd) return RunMcp(mcp);
    if (*serve_cmd) return RunServe(serve);
    if (*knowledge_cmd) return RunKnowledge(knowledge);
    if (*learn_cmd) return RunLearn(learn);
    if (*remember_cmd) return RunRemember(remember);
    if (*view_cmd) return RunView(view);
    if (*cache_cmd) return RunCache(cache);
    if (*chat_cmd) return RunChat(chat);
    if (*threads_cmd) return RunThreads(threads);
    if (*bench_cmd) return RunBenchCommand(bench);
    if (*eval_cmd) return RunEvalCommand(eval);
    if (*report_cmd) return RunReport(report);
    if (*doctor_cmd) return RunDoctor(doctor);
    if (*generate_cmd) {
      std::cout << (generate == "man" ? ManPage(app, std::string("quarry ") + QUARRY_VERSION)
                                      : Completion(app, generate));
      return kExitOk;
    }
  } catch (const std::exception& e) {
    std::cerr << "quarry: internal error: " << TerminalText(e.what()) << "\n";
    return kExitInternal;
  }
  return kExitUsage;
}

}  // namespace quarry::cli
