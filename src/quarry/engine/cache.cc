// The parse cache: a large CSV/TSV/JSON file is loaded once into a DuckDB database under the
// user's cache directory, with its profile and the loader's notes, so later commands open it
// read-only in well under a second. Entries are keyed by the file's path, size, mtime, ctime,
// inode and reading options (any write to the file changes its ctime), carry the content hash
// computed once when built, and are rebuilt, never trusted, when any of those differ.
// Anyone who can stat the file can compute its key, so the key proves nothing about who wrote
// an entry: what does is where it lives. The directory must be private to the user (owned by
// them, writable by neither group nor others: refused otherwise), and an entry is used only
// when both of its files are regular files (no links) owned by the user and writable by no one
// else. Then only the user (or root) can have written it.
#include <duckdb.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <cerrno>
#include <fstream>

#include <nlohmann/json.hpp>

#include "quarry/common/sha256.h"
#include "quarry/common/private_dir.h"
#include "quarry/engine/duckdb_internal.h"
#include "quarry/engine/engine_internal.h"

namespace quarry::engine {
namespace internal {
namespace {

using json = nlohmann::ordered_json;

// Bumped whenever the loader's decisions change, so old entries are rebuilt.
constexpr const char* kLoaderVersion = "loader-5";

// A short-lived DuckDB for building entries: quarry's own SQL only, never the model's.
class Builder {
 public:
  ~Builder() {
    if (conn_) duckdb_disconnect(&conn_);
    if (db_) duckdb_close(&db_);
  }
  Result<void> Open(int64_t memory_limit_mb) {
    internal::Config config;
    if (auto set = config.SetAll({{"autoinstall_known_extensions", "false"},
                                  {"autoload_known_extensions", "false"},
                                  {"memory_limit", std::to_string(memory_limit_mb) + "MB"}});
        !set) {
      return set;
    }
    char* err = nullptr;
    if (duckdb_open_ext(nullptr, &db_, config.get(), &err) == DuckDBError) {
      std::string msg = err ? err : "unknown error";
      duckdb_free(err);
      return Fail(Error::Code::kInternal, "duckdb open failed: " + msg);
    }
    if (duckdb_connect(db_, &conn_) == DuckDBError) {
      return Fail(Error::Code::kInternal, "duckdb connect failed");
    }
    // Progress() reads DuckDB's progress bar, a setting of the connection: on, never printed,
    // from the first moment.
    for (const char* set : {"SET enable_progress_bar = true",
                            "SET enable_progress_bar_print = false", "SET progress_bar_time = 0"}) {
      if (auto r = Run(set); !r) return std::unexpected(r.error());
    }
    return {};
  }
  // The running statement's progress, 0-100, or -1 when DuckDB cannot tell (another thread
  // may ask while Run() blocks: DuckDB's C API allows it).
  double Progress() {
    if (!conn_) return -1;
    return duckdb_query_progress(conn_).percentage;
  }
  Result<Rows> Run(const std::string& sql) {
    duckdb_result result{};
    if (duckdb_query(conn_, sql.c_str(), &result) == DuckDBError) {
      std::string e = duckdb_result_error(&result) ? duckdb_result_error(&result) : "query failed";
      duckdb_destroy_result(&result);
      return Fail(Error::Code::kData, e);
    }
    Rows rows;
    const idx_t cols = duckdb_column_count(&result);
    for (idx_t r = 0; r < duckdb_row_count(&result); ++r) {
      std::vector<std::optional<std::string>> row;
      for (idx_t c = 0; c < cols; ++c) {
        if (duckdb_value_is_null(&result, c, r)) {
          row.emplace_back(std::nullopt);
          continue;
        }
        char* v = duckdb_value_varchar(&result, c, r);
        row.emplace_back(v ? std::optional<std::string>(v) : std::nullopt);
        duckdb_free(v);
      }
      rows.push_back(std::move(row));
    }
    duckdb_destroy_result(&result);
    return rows;
  }

 private:
  duckdb_database db_ = nullptr;
  duckdb_connection conn_ = nullptr;
};

std::string OptionsText(const CsvOptions& o) {
  json j = json::object();
  if (o.delimiter) j["delim"] = *o.delimiter;
  if (o.quote) j["quote"] = *o.quote;
  if (o.header) j["header"] = *o.header;
  if (o.skip) j["skip"] = *o.skip;
  if (o.encoding) j["encoding"] = *o.encoding;
  if (o.decimal) j["decimal"] = *o.decimal;
  if (!o.nulls.empty()) j["null"] = o.nulls;
  for (const auto& [c, t] : o.types) j["types"][c] = t;
  return j.dump();
}

json CardJson(const TableCard& card) {
  json cols = json::array();
  for (const auto& c : card.columns) {
    cols.push_back({{"name", c.name},
                    {"type", c.type},
                    {"null_count", c.null_count},
                    {"distinct_count", c.distinct_count},
                    {"distinct_approx", c.distinct_approx},
                    {"min", c.min ? json(*c.min) : json(nullptr)},
                    {"max", c.max ? json(*c.max) : json(nullptr)},
                    {"date_format", c.date_format},
                    {"samples", c.samples},
                    {"notes", c.notes}});
  }
  return {{"row_count", card.row_count}, {"columns", cols}, {"notes", card.notes}};
}

// The stored card, read defensively: an entry is a file on disk like any other input.
std::optional<TableCard> CardFromJson(const json& j) {
  if (!j.is_object() || !j.contains("columns") || !j["columns"].is_array()) return std::nullopt;
  TableCard card;
  card.row_count = j.value("row_count", int64_t{0});
  card.profiled = true;
  for (const auto& n : j.value("notes", json::array())) {
    if (n.is_string()) card.notes.push_back(n.get<std::string>());
  }
  for (const auto& c : j["columns"]) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return std::nullopt;
    ColumnCard col;
    col.name = c["name"].get<std::string>();
    col.type = c.value("type", "");
    col.null_count = c.value("null_count", int64_t{0});
    col.distinct_count = c.value("distinct_count", int64_t{0});
    col.distinct_approx = c.value("distinct_approx", false);
    if (c.contains("min") && c["min"].is_string()) col.min = c["min"].get<std::string>();
    if (c.contains("max") && c["max"].is_string()) col.max = c["max"].get<std::string>();
    col.date_format = c.value("date_format", "");
    for (const auto& s : c.value("samples", json::array())) {
      if (s.is_string()) col.samples.push_back(s.get<std::string>());
    }
    for (const auto& n : c.value("notes", json::array())) {
      if (n.is_string()) col.notes.push_back(n.get<std::string>());
    }
    col.profiled = true;
    card.columns.push_back(std::move(col));
  }
  return card;
}

}  // namespace

std::filesystem::path CacheDir(const OpenOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') {
    return std::filesystem::path(xdg) / "quarry" / "parse";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "quarry" / "parse";
  }
  return {};
}

namespace {

// An entry file usable as the user's own: a regular file, not a link, that only they can have
// written.
bool OwnEntryFile(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && NotPrivateReason(st).empty();
}

// The cache directory checked (see the file comment). nullopt: it does not exist (nothing is
// cached yet). The default directory is quarry's own: an older quarry may have left it with
// the umask's mode, so it is made 0700 again instead of refused; each entry is still checked.
Result<std::optional<UniqueFd>> CheckedCacheDir(const std::filesystem::path& dir,
                                                const OpenOptions& open, bool create) {
  std::error_code ec;
  if (!create && !std::filesystem::exists(dir, ec)) return std::nullopt;
  struct stat st {};
  if (open.cache_dir.empty() && ::stat(dir.c_str(), &st) == 0 && st.st_uid == ::geteuid() &&
      S_ISDIR(st.st_mode) && (st.st_mode & 077) != 0) {
    ::chmod(dir.c_str(), 0700);
  }
  auto fd = OpenPrivateDir(dir, "the parse cache directory", "--cache-dir (or --no-cache)");
  if (!fd) return std::unexpected(fd.error());
  return std::optional<UniqueFd>(std::move(*fd));
}

}  // namespace

std::optional<std::string> CacheKey(const std::filesystem::path& abs, const CsvOptions& options) {
  struct stat st {};
  if (::stat(abs.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const std::string identity =
      std::string(kLoaderVersion) + "\n" + abs.string() + "\n" + std::to_string(st.st_size) + "\n" +
      std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "\n" +
      std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec) + "\n" +
      std::to_string(st.st_ino) + "." + std::to_string(st.st_dev) + "\n" + OptionsText(options);
  // No key when OpenSSL fails: the file is then read without the cache, never under a wrong key.
  Result<std::string> digest = Sha256Hex(identity);
  if (!digest) return std::nullopt;
  return digest->substr(0, 40);
}

Result<std::optional<CacheHit>> LookupCache(const std::filesystem::path& abs,
                                            const CsvOptions& options, const OpenOptions& open) {
  const auto dir = CacheDir(open);
  if (dir.empty()) return std::nullopt;
  auto checked = CheckedCacheDir(dir, open, false);
  if (!checked) return std::unexpected(checked.error());
  if (!*checked) return std::nullopt;
  const auto key = CacheKey(abs, options);
  if (!key) return std::nullopt;
  const auto entry = dir / (*key + ".duckdb");
  const auto meta = dir / (*key + ".json");
  if (!OwnEntryFile(entry) || !OwnEntryFile(meta)) return std::nullopt;
  const UniqueFd meta_fd(::open(meta.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!meta_fd.valid()) return std::nullopt;
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(meta_fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  const json m = json::parse(text, nullptr, false);
  if (!m.is_object() || m.value("key", "") != *key || m.value("source", "") != abs.string()) {
    return std::nullopt;
  }
  auto card = CardFromJson(m.value("card", json()));
  if (!card) return std::nullopt;
  CacheHit hit;
  hit.entry = entry;
  hit.card = std::move(*card);
  hit.sha256 = m.value("sha256", "");
  hit.delimiter = m.value("delimiter", "");
  hit.header = m.value("header", true);
  hit.padded = m.value("padded", false);
  for (const auto& n : m.value("user_notes", json::array())) {
    if (n.is_string()) hit.user_notes.push_back(n.get<std::string>());
  }
  return hit;
}

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The builder's progress, written into its lock file every 200 ms for commands that arrive
// meanwhile: "STAGE PERCENT STAGE_START_MS" (stage plan, table or profile; percent of the
// CREATE TABLE's scan, -1 when unknown).
class BuildProgress {
 public:
  BuildProgress(int fd, Builder& builder)
      : fd_(fd), builder_(builder), thread_([this] { Loop(); }) {
    Stage("plan");
  }
  ~BuildProgress() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  BuildProgress(const BuildProgress&) = delete;
  BuildProgress& operator=(const BuildProgress&) = delete;

  void Stage(const char* stage) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stage_ = stage;
      started_ms_ = NowMs();
    }
    Write();
  }

 private:
  void Write() {
    std::string stage;
    int64_t started = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stage = stage_;
      started = started_ms_;
    }
    const double percent = stage == "table" ? builder_.Progress() : -1;
    const std::string line =
        stage + " " + std::to_string(percent) + " " + std::to_string(started) + "\n";
    if (::pwrite(fd_, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size())) {
      (void)::ftruncate(fd_, static_cast<off_t>(line.size()));
    }
  }
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; })) {
      lock.unlock();
      Write();
      lock.lock();
    }
  }

  int fd_;
  Builder& builder_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string stage_;
  int64_t started_ms_ = 0;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

Result<std::optional<CacheHit>> WaitForCacheBuild(const std::filesystem::path& abs,
                                                  const CsvOptions& options,
                                                  const OpenOptions& open) {
  const auto dir = CacheDir(open);
  const auto key = CacheKey(abs, options);
  if (dir.empty() || !key) return std::nullopt;
  const auto lock_path = dir / (*key + ".lock");
  for (;;) {
    if (open.stop.stop_requested()) return std::nullopt;
    const UniqueFd fd(::open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return LookupCache(abs, options, open);  // no build (or it just ended)
    if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return LookupCache(abs, options, open);
    char buf[128] = {};
    const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    std::string stage;
    double percent = -1;
    long long started = 0;
    if (n > 0) {
      char name[16] = {};
      if (std::sscanf(buf, "%15s %lf %lld", name, &percent, &started) == 3) stage = name;
    }
    // The figures below are measured ratios on 2 cores (bench/load_bench.py, 170 MB): the
    // CREATE TABLE takes about 2.2 times a direct scan, and the profile after it 0.45 of it.
    // A scan beside the build takes about 2.5 times as long as alone (on the 1 GB file 2.5 to
    // 3.1, even with the builder at nice 10, cli/open_data.cc; 1.5 to 2.1 on 170 MB). A
    // command waits when the build's estimated remainder is shorter than that scan.
    const double elapsed_s = static_cast<double>(NowMs() - started) / 1000.0;
    if (stage == "table" && percent >= 5 && percent <= 100) {
      const double table_s = elapsed_s * 100.0 / percent;
      const double remaining_s = (table_s - elapsed_s) + 0.45 * table_s;
      const double shared_scan_s = 2.5 * (table_s / 2.2);
      if (remaining_s > shared_scan_s) return std::nullopt;
    } else if (stage == "table" || stage == "plan") {
      if (elapsed_s > 30) return std::nullopt;  // no estimate yet, and a while: scan instead
    } else if (stage != "profile") {
      return std::nullopt;  // not a builder this version knows
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<std::filesystem::path> BuildCacheEntry(const std::filesystem::path& given,
                                              const OpenOptions& options) {
  // The path may carry reading options (data.csv?delim=;), as everywhere else.
  std::filesystem::path path = given;
  CsvOptions csv;
  std::error_code ec;
  const std::string text = given.string();
  if (const auto q = text.rfind('?');
      q != std::string::npos && !std::filesystem::exists(given, ec)) {
    path = text.substr(0, q);
    auto parsed = ParseCsvOptions(std::string_view(text).substr(q + 1));
    if (!parsed) return std::unexpected(Context(parsed.error(), text));
    csv = std::move(*parsed);
  }
  const std::optional<SourceFormat> known = FormatOf(path);
  const SourceFormat format = known.value_or(SourceFormat::kParquet);
  if (format != SourceFormat::kCsv && format != SourceFormat::kTsv &&
      format != SourceFormat::kJson) {
    return Fail(Error::Code::kUsage,
                "the parse cache holds CSV, TSV and JSON files; " + path.string() + " is not one");
  }
  const auto abs = std::filesystem::absolute(path).lexically_normal();
  const auto key = CacheKey(abs, csv);
  const auto dir = CacheDir(options);
  if (!key || dir.empty()) {
    return Fail(Error::Code::kUsage, "no cache directory: set XDG_CACHE_HOME or HOME");
  }
  // The cache holds the user's data: a directory quarry creates is 0700, and one that others
  // can write is refused (a --cache-dir that exists keeps its mode: it is the user's).
  auto dir_fd = CheckedCacheDir(dir, options, true);
  if (!dir_fd) return std::unexpected(dir_fd.error());
  const auto entry = dir / (*key + ".duckdb");
  // One builder per entry: a second command that starts one while the first runs leaves.
  const auto lock_path = dir / (*key + ".lock");
  const int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock < 0) return Fail(Error::Code::kData, "cannot create " + lock_path.string());
  struct Unlock {
    int fd;
    std::filesystem::path path;
    bool held = false;
    ~Unlock() {
      std::error_code e;
      // Only its holder removes the lock file: a second builder that found it held must leave
      // it, or a third would create a new one and build beside the first.
      if (held) std::filesystem::remove(path, e);
      ::close(fd);
    }
  } unlock{lock, lock_path};
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    return Fail(Error::Code::kData, "the cache entry for " + path.string() + " is being built");
  }
  unlock.held = true;
  // Taken before the hash of the whole file: a follow-up that starts as the first command ends
  // sees the build under way (WaitForCacheBuild) rather than no build at all.
  {
    const std::string line = "plan -1 " + std::to_string(NowMs()) + "\n";
    (void)!::pwrite(lock, line.data(), line.size(), 0);
  }
  auto source = Fingerprint(path, format, true);
  if (!source) return std::unexpected(source.error());
  const auto tmp = dir / (*key + ".duckdb.tmp-" + std::to_string(::getpid()));
  std::filesystem::remove(tmp, ec);
  Builder b;
  if (auto r = b.Open(options.memory_limit_mb); !r) return std::unexpected(r.error());
  BuildProgress progress(lock, b);
  // An entry that exists and reads is kept (another command built it meanwhile); a damaged
  // one (truncated, overwritten) is built again rather than skipped forever.
  auto existing = LookupCache(abs, csv, options);
  if (!existing) return std::unexpected(existing.error());
  if (*existing && b.Run("ATTACH " + QuoteLiteral(entry.string()) + " AS existing (READ_ONLY)") &&
      b.Run("SELECT count(*) FROM existing.data") && b.Run("DETACH existing")) {
    return entry;
  }
  auto run = [&b](const std::string& s) { return b.Run(s); };
  std::string select, read_path, transcoded_note;
  CsvOptions read_options_used;
  CsvPlan plan;
  struct RemovedCopy {
    std::filesystem::path path;
    ~RemovedCopy() {
      std::error_code e;
      if (!path.empty()) std::filesystem::remove(path, e);
    }
  } utf8_copy;
  if (format == SourceFormat::kJson) {
    auto p = PlanJson(run, abs.string());
    if (!p) return std::unexpected(Context(p.error(), "cannot load " + path.string()));
    plan = std::move(*p);
    select = plan.select;
  } else {
    // An 8-bit file DuckDB lacks is read through a UTF-8 copy here too, beside the entry in the
    // private cache directory, and removed once the entry holds the rows (encoding.cc).
    CsvOptions read_options = csv;
    const auto copy = dir / (*key + ".utf8.tmp-" + std::to_string(::getpid()));
    utf8_copy.path = copy;  // removed however this ends, half written or not at all
    auto note = ReadThroughUtf8Copy(abs, read_options, copy);
    if (!note) return std::unexpected(Context(note.error(), "cannot load " + path.string()));
    // Past kExactBytes, the plan is the first command's, judged on the sample (csv_loader.cc),
    // and the CREATE TABLE below checks it against every row: its casts are strict and so is
    // the reader. Only when a row breaks it is the whole file sniffed and measured (the second
    // and third full reads a one-pass build avoids). Smaller files get the whole-file plan at
    // once, with the quality checks that run only there.
    const bool sampled = source->size_bytes > kExactBytes;
    read_path = (*note ? copy : abs).string();
    auto p = PlanCsv(run, read_path, format == SourceFormat::kTsv, read_options, !sampled);
    if (!p) return std::unexpected(Context(p.error(), "cannot load " + path.string()));
    plan = std::move(*p);
    if (*note) plan.table_notes.insert(plan.table_notes.begin(), **note);
    select = plan.select;
    read_options_used = read_options;
    transcoded_note = *note ? **note : std::string();
  }
  auto fail = [&](const Error& e) {
    std::filesystem::remove(tmp, ec);
    std::filesystem::remove(tmp.string() + ".wal", ec);
    return std::unexpected(Context(e, "cannot cache " + path.string()));
  };
  if (auto r = run("ATTACH " + QuoteLiteral(tmp.string()) + " AS entry"); !r)
    return fail(r.error());
  progress.Stage("table");
  auto created = run("CREATE TABLE entry.data AS " + select);
  if (!created && plan.sampled) {
    // A row past the sample does not fit its reading: judge the file on every row instead.
    (void)run("DROP TABLE IF EXISTS entry.data");
    auto p = PlanCsv(run, read_path, format == SourceFormat::kTsv, read_options_used, true);
    if (!p) return fail(p.error());
    plan = std::move(*p);
    if (!transcoded_note.empty())
      plan.table_notes.insert(plan.table_notes.begin(), transcoded_note);
    select = plan.select;
    progress.Stage("table");
    created = run("CREATE TABLE entry.data AS " + select);
  }
  if (!created) return fail(created.error());
  progress.Stage("profile");
  if (plan.sampled) {
    // Every row has now been read through the plan's strict casts: the sample's caveat is void.
    std::erase(plan.table_notes, SampledPlanNote());
  }
  auto desc = run("DESCRIBE entry.data");
  if (!desc) return fail(desc.error());
  TableCard card;
  const std::vector<ColumnInfo> columns = DescribeInto(card, *desc, &plan);
  if (auto r = ProfileDuckDb(card, "entry.data", columns, run, source->size_bytes <= kExactBytes);
      !r) {
    return fail(r.error());
  }
  if (auto r = run("DETACH entry"); !r) return fail(r.error());
  // DuckDB creates the file with the umask's mode; an entry others could write is never used.
  if (::chmod(tmp.c_str(), 0600) != 0) {
    return fail(Error{Error::Code::kData, "cannot make " + tmp.string() + " private"});
  }
  // The file must not have changed while it was read; otherwise the entry describes neither.
  if (CacheKey(abs, csv) != key) {
    return fail(Error{Error::Code::kData, "the file changed while it was being cached"});
  }
  const json meta = {{"key", *key},
                     {"source", abs.string()},
                     {"size_bytes", source->size_bytes},
                     {"sha256", source->sha256},
                     {"loader", kLoaderVersion},
                     {"options", OptionsText(csv)},
                     {"delimiter", plan.delimiter},
                     {"header", plan.header},
                     {"padded", plan.padded},
                     {"user_notes", plan.user_notes},
                     {"card", CardJson(card)}};
  const auto meta_tmp = dir / (*key + ".json.tmp-" + std::to_string(::getpid()));
  {
    std::filesystem::remove(meta_tmp, ec);
    const UniqueFd out(
        ::open(meta_tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    const std::string meta_text = meta.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string_view bytes = meta_text;
    while (out.valid() && !bytes.empty()) {
      const ssize_t n = ::write(out.get(), bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    if (!out.valid() || !bytes.empty()) {
      return fail(Error{Error::Code::kData, "cannot write " + meta_tmp.string()});
    }
  }
  std::filesystem::rename(tmp, entry, ec);
  if (ec)
    return fail(Error{Error::Code::kData, "cannot write " + entry.string() + ": " + ec.message()});
  std::filesystem::rename(meta_tmp, dir / (*key + ".json"), ec);
  if (ec) return fail(Error{Error::Code::kData, "cannot write the cache index: " + ec.message()});
  return entry;
}

}  // namespace internal

Result<std::filesystem::path> BuildCacheEntry(const std::filesystem::path& path,
                                              const OpenOptions& options) {
  return internal::BuildCacheEntry(path, options);
}

std::filesystem::path CacheDirectory(const OpenOptions& options) {
  return internal::CacheDir(options);
}

}  // namespace quarry::engine
