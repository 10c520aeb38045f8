// Run directories' retention: which runs keep their sandbox work directory (the newest
// QUARRY_KEEP_WORKDIRS, or those younger than QUARRY_KEEP_WORKDIR_DAYS), and the pruning of the
// rest, which keeps the figures `quarry view` embeds.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>

#include "quarry/common/private_dir.h"
#include "quarry/trace/trace.h"
#include "quarry/trace/trace_internal.h"

namespace quarry::trace {
namespace fs = std::filesystem;

namespace {

// "20261129-120000-abcdef" -> its UTC start; nullopt for a name that is not a run id.
std::optional<std::time_t> RunIdTime(const std::string& name) {
  if (name.size() < 16 || name[8] != '-' || name[15] != '-') return std::nullopt;
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (name[i] < '0' || name[i] > '9')) return std::nullopt;
  }
  std::tm tm{};
  if (!strptime(name.substr(0, 15).c_str(), "%Y%m%d-%H%M%S", &tm)) return std::nullopt;
  return timegm(&tm);
}

// The names in a directory fd (a dup is read, `dir_fd` stays open), without "." and "..".
std::vector<std::string> NamesIn(int dir_fd) {
  std::vector<std::string> names;
  const int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return names;
  DIR* d = ::fdopendir(dup);
  if (!d) {
    ::close(dup);
    return names;
  }
  ::rewinddir(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  return names;
}

// Removes `name` in `dir_fd` and, for a directory, everything under it; never follows a link
// (a link is removed itself). A directory the sandbox left unreadable is opened up first.
void RemoveTreeAt(int dir_fd, const std::string& name, int depth) {
  if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || depth > 256) return;
  UniqueFd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub.valid() && errno == EACCES && ::fchmodat(dir_fd, name.c_str(), 0700, 0) == 0) {
    sub = UniqueFd(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!sub.valid()) return;
  for (const auto& n : NamesIn(sub.get())) RemoveTreeAt(sub.get(), n, depth + 1);
  ::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR);
}

// A figure `quarry view` embeds from a pruned workdir: kept.
bool IsKeptFigure(int dir_fd, const std::string& name) {
  const std::string ext = fs::path(name).extension().string();
  struct stat st {};
  return (ext == ".png" || ext == ".svg") &&
         ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

Result<int> EnvCount(const char* var, int fallback, bool* all) {
  const char* v = std::getenv(var);
  if (!v || !*v) return fallback;
  const std::string text = v;
  if (all && text == "all") {
    *all = true;
    return fallback;
  }
  if (text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos) {
    return Fail(Error::Code::kUsage, std::string(var) + "=" + text + ": expected a whole number" +
                                         (all ? " of runs, or all" : " of days"));
  }
  return std::stoi(text);
}

}  // namespace

int PruneWorkdirsAt(int runs_fd, const Retention& keep, std::time_t now,
                    const std::string& current) {
  if (!keep.enabled) return 0;
  std::vector<std::pair<std::string, std::time_t>> runs;
  for (auto& n : NamesIn(runs_fd)) {
    if (auto t = RunIdTime(n)) runs.emplace_back(std::move(n), *t);
  }
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  int pruned = 0;
  const std::time_t cutoff = now - static_cast<std::time_t>(keep.keep_days) * 86400;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& [name, started] = runs[i];
    if (i < static_cast<size_t>(keep.keep_runs) || started >= cutoff || name == current) continue;
    const UniqueFd run(
        ::openat(runs_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!run.valid()) continue;
    const UniqueFd work(
        ::openat(run.get(), "workdir", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!work.valid()) continue;
    bool removed = false;
    for (const auto& n : NamesIn(work.get())) {
      if (IsKeptFigure(work.get(), n)) continue;
      RemoveTreeAt(work.get(), n, 0);
      removed = true;
    }
    pruned += removed ? 1 : 0;
  }
  return pruned;
}

Result<Retention> RetentionFromEnv() {
  Retention r;
  bool all = false;
  auto runs = EnvCount("QUARRY_KEEP_WORKDIRS", r.keep_runs, &all);
  if (!runs) return std::unexpected(runs.error());
  auto days = EnvCount("QUARRY_KEEP_WORKDIR_DAYS", r.keep_days, nullptr);
  if (!days) return std::unexpected(days.error());
  r.keep_runs = *runs;
  r.keep_days = *days;
  r.enabled = !all;
  return r;
}

int PruneWorkdirs(const fs::path& runs_dir, const Retention& keep, std::time_t now) {
  const UniqueFd fd(::open(runs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return fd.valid() ? PruneWorkdirsAt(fd.get(), keep, now, "") : 0;
}

}  // namespace quarry::trace
