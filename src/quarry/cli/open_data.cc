// Opening the user's data for every subcommand: engine options from flags, the loader's notes
// on stderr, the parse cache filled in the background after a command on a large file, and
// `quarry cache`.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "quarry/cli/cli.h"
#include "quarry/cli/cli_internal.h"
#include "quarry/cli/commands.h"
#include "quarry/common/private_dir.h"

extern char** environ;

namespace quarry::cli {
namespace {

using json = nlohmann::ordered_json;

// The first question on a new file should cost one scan; the entry is built after it, by a
// detached `quarry cache build`, so this command does not wait for it.
void SpawnBuilder(const std::string& spec, const std::string& cache_dir) {
  std::vector<std::string> args = {"quarry", "cache", "build", "--quiet"};
  if (!cache_dir.empty()) {
    args.push_back("--cache-dir");
    args.push_back(cache_dir);
  }
  args.push_back(spec);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd = 0; fd <= 2; ++fd) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own session: Ctrl-C in the terminal, or the end of this command, does not stop it.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = 0;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    // At a lower priority: the user's next question, reading the file beside the build, gets
    // the cores first (on 2 cores, a scan beside an equal-priority build took 2.5 times as
    // long). Set before the builder starts DuckDB's threads, which inherit it.
    if (posix_spawn(&pid, self, &actions, &attr, argv.data(), environ) == 0) {
      (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), 10);
    }
  }
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
}

}  // namespace

engine::OpenOptions ToOpenOptions(const LoadFlags& flags) {
  engine::OpenOptions o;
  o.profile = flags.profile;
  o.fingerprint = flags.fingerprint;
  o.timeout_ms = flags.timeout_ms;
  o.stop = flags.stop;
  o.use_cache = !flags.no_cache;
  if (!flags.cache_dir.empty()) o.cache_dir = flags.cache_dir;
  // A load or query past a second shows its progress on one line of a terminal's stderr.
  if (isatty(2)) {
    o.progress = [](const std::string& what, double percent) {
      if (percent < 0) {
        std::fprintf(stderr, "\r\033[2K");
      } else {
        std::fprintf(stderr, "\r\033[2Kquarry: %s %.0f%%", what.c_str(), percent);
      }
      std::fflush(stderr);
    };
  }
  return o;
}

Result<std::unique_ptr<engine::Engine>> OpenData(const std::vector<std::string>& specs,
                                                 const LoadFlags& flags) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> notes;
  auto paths = engine::ExpandFolders({specs.begin(), specs.end()}, &notes);
  if (!paths) return std::unexpected(paths.error());
  for (const auto& n : notes) std::cerr << Paint("quarry: " + TerminalText(n), "2") << "\n";
  auto engine = engine::Open(*paths, ToOpenOptions(flags));
  if (!engine) return engine;
  PrintSourceNotes(**engine);
  if (flags.show_notes) PrintNotes(**engine);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (ms > 1000 && isatty(2)) {
    std::cerr << Paint("quarry: opened the data in " + std::to_string(ms) + " ms", "2") << "\n";
  }
  return engine;
}

// About the source as a whole (a PostgreSQL role that can write) and advice that names an option
// (FILE?types=..., --timeout-ms): the user's alone, said by every command.
void PrintSourceNotes(const engine::Engine& engine) {
  for (const auto& source : engine.sources()) {
    for (const auto& n : source.notes) {
      std::cerr << Paint("quarry: warning: " + engine::PromptText(source.path, 400) + ": " +
                             engine::PromptText(n, 2000),
                         "33")
                << "\n";
    }
  }
}

// What the loader decided, for commands without cards on stdout. Names and notes come from the
// data (a table comment may hold escapes), so they are shown escaped. A database's own
// documentation (COMMENT ON, "comment: ...") is in the cards, not a decision: not repeated.
void PrintNotes(const engine::Engine& engine) {
  auto print = [](const std::string& where, const std::string& note) {
    if (note.starts_with("comment: ")) return;
    std::cerr << Paint("quarry: note: " + engine::PromptText(where, 400) + ": " +
                           engine::PromptText(note, 2000),
                       "2")
              << "\n";
  };
  for (const auto& card : engine.describe()) {
    for (const auto& n : card.notes) print(card.name, n);
    for (const auto& c : card.columns) {
      for (const auto& n : c.notes) print(card.name + "." + c.name, n);
    }
  }
}

void FillCache(const engine::Engine& engine, const std::vector<std::string>& given,
               const LoadFlags& flags) {
  if (flags.no_cache) return;
  // Sources follow the specs with each folder expanded (engine::ExpandFolders), one per file.
  auto expanded = engine::ExpandFolders({given.begin(), given.end()}, nullptr);
  if (!expanded) return;
  std::vector<std::string> specs;
  for (const auto& p : *expanded) specs.push_back(p.string());
  const auto& sources = engine.sources();
  for (size_t i = 0; i < sources.size() && i < specs.size(); ++i) {
    // A server has no parse cache: its data is queried where it lives.
    if (engine::IsServerSpec(specs[i])) continue;
    if (sources[i].cache == engine::CacheUse::kMiss &&
        sources[i].size_bytes >= engine::kCacheMinBytes) {
      SpawnBuilder(specs[i], flags.cache_dir);
    }
  }
}

int RunCache(const CacheOptions& o) {
  LoadFlags flags;
  flags.cache_dir = o.cache_dir;
  const engine::OpenOptions options = ToOpenOptions(flags);
  const auto dir = engine::CacheDirectory(options);
  if (o.action == "build") {
    if (o.paths.empty()) return Report({Error::Code::kUsage, "quarry cache build FILE..."});
    for (const auto& p : o.paths) {
      if (engine::IsServerSpec(p)) {  // not echoed: the spec is the user's, maybe with a secret
        return Report({Error::Code::kUsage,
                       "the parse cache holds CSV, TSV and JSON files; a "
                       "database server is queried where it lives"});
      }
      auto entry = engine::BuildCacheEntry(p, options);
      if (!entry) return Report(entry.error());
      if (!o.quiet) std::cout << TerminalText(p + " -> " + entry->string()) << "\n";
    }
    return kExitOk;
  }
  std::error_code ec;
  // list and clear read a --cache-dir like every other command: not one others can write.
  if (!o.cache_dir.empty() && std::filesystem::exists(dir, ec)) {
    auto fd = OpenPrivateDir(dir, "the parse cache directory", "--cache-dir");
    if (!fd) return Report(fd.error());
  }
  if (o.action == "clear") {
    int64_t removed = 0;
    if (std::filesystem::is_directory(dir, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        // Only quarry's own entries: the directory might be shared by mistake.
        if (name.size() > 40 && name.find_first_not_of("0123456789abcdef") == 40) {
          removed += std::filesystem::remove(e.path(), ec) ? 1 : 0;
        }
      }
    }
    std::cout << "removed " << removed << " file(s) from " << TerminalText(dir.string()) << "\n";
    return kExitOk;
  }
  // list
  json entries = json::array();
  if (std::filesystem::is_directory(dir, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() != ".json") continue;
      std::ifstream in(e.path());
      const json m = json::parse(in, nullptr, false);
      if (!m.is_object()) continue;
      const auto entry = e.path().parent_path() / (e.path().stem().string() + ".duckdb");
      entries.push_back(
          {{"source", m.value("source", "")},
           {"source_bytes", m.value("size_bytes", int64_t{0})},
           {"entry", entry.string()},
           {"entry_bytes", static_cast<int64_t>(std::filesystem::file_size(entry, ec))}});
    }
  }
  if (o.format_name == "json") {
    std::cout << JsonText({{"dir", dir.string()}, {"entries", entries}}) << "\n";
  } else {
    std::cout << "parse cache: " << TerminalText(dir.string()) << "\n";
    for (const auto& e : entries) {
      // The source's path is whatever file was cached: its name may hold escapes.
      std::cout << "  " << TerminalText(e["source"].get<std::string>()) << " ("
                << e["source_bytes"].get<int64_t>() << " bytes) -> "
                << e["entry_bytes"].get<int64_t>() << " bytes\n";
    }
  }
  return kExitOk;
}

}  // namespace quarry::cli
