// DuckDB behind the guard: files registered as views over read_csv/read_parquet/read_json, or
// a .duckdb database opened read-only; then external access off (only the registered files
// stay readable), extension auto-loading off, a memory limit, and the configuration locked.
#include <duckdb.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <map>
#include <thread>

#include "quarry/engine/duckdb_internal.h"
#include "quarry/engine/isolated_query.h"
#include "quarry/engine/workbook.h"

namespace quarry::engine::internal {
namespace {

// A DuckDB error for a card's note: its first line (the rest points at the SQL), at most 300
// bytes.
std::string FirstLine(const std::string& message) {
  return message.substr(0, std::min(message.find('\n'), size_t{300}));
}

class DuckDbEngine final : public Engine {
 public:
  Dialect dialect() const override { return Dialect::kDuckDB; }
  const std::vector<TableCard>& describe() const override { return cards_; }
  uint64_t cards_version() const override { return cards_version_; }
  const std::vector<Source>& sources() const override { return sources_; }

  QueryOutcome Query(std::string_view sql, const Limits& limits) override {
    auto outcome = QueryOnce(sql, limits);
    // A file opened on the sniffer's sample alone can hold a value the sample did not (a
    // 'n/a' 60,000 rows in): plan every such file again against all its rows, and retry once.
    if (!outcome && outcome.error().failure_class == FailureClass::kRuntimeError &&
        (outcome.error().message.find("CSV Error") != std::string::npos ||
         outcome.error().message.find("Could not convert") != std::string::npos ||
         outcome.error().message.find("Could not parse string") != std::string::npos) &&
        std::any_of(files_.begin(), files_.end(),
                    [](const FileTable& f) { return f.csv && !f.deep; })) {
      if (auto r = Deepen(); !r) {
        return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "", r.error().message});
      }
      return QueryOnce(sql, limits);
    }
    return outcome;
  }

  // The text guard here; everything else in the query process (isolated_query.h), which alone
  // takes the configured threads and then locks the configuration.
  QueryOutcome QueryOnce(std::string_view sql, const Limits& limits, bool text_guard = true) {
    if (auto v = text_guard ? CheckQueryText(sql, Dialect::kDuckDB, table_names_) : std::nullopt) {
      return std::unexpected(*v);
    }
    if (limits.stop.stop_requested()) return std::unexpected(CancelledFailure());
    return process_.Run(sql, limits, progress_);
  }

  // Setup-time SQL (loading, profiling), written by quarry, not the model; the guard does not
  // apply. Bounded by the load timeout.
  Result<Rows> RunTrusted(const std::string& sql) {
    QueryResult result;
    duckdb_state state;
    bool timed_out = false;
    bool cancelled = load_stop_.stop_requested();
    if (cancelled) {
      state = DuckDBError;
    } else if (load_timeout_ms_ > 0 || progress_ || load_stop_.stop_possible()) {
      // A table's statements share one deadline (BuildCards): a view just under the limit
      // must not cost it once per statement.
      int64_t timeout_ms = load_timeout_ms_;
      if (load_timeout_ms_ > 0 && table_deadline_) {
        timeout_ms = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(
                                              *table_deadline_ - std::chrono::steady_clock::now())
                                              .count());
      }
      Watchdog watchdog(conn_.get(), timeout_ms, &progress_, stage_, load_stop_);
      state = duckdb_query(conn_.get(), sql.c_str(), result.out());
      timed_out = watchdog.fired();
      cancelled = watchdog.cancelled();
    } else {
      state = duckdb_query(conn_.get(), sql.c_str(), result.out());
    }
    if (state == DuckDBError) {
      if (cancelled)
        return Fail(Error::Code::kCancelled,
                    "loading was interrupted: the caller asked it to stop");
      if (timed_out) {
        return Fail(Error::Code::kData, (stage_.empty() ? std::string("loading") : stage_) +
                                            " took longer than " +
                                            std::to_string(load_timeout_ms_) +
                                            " ms and was stopped; raise --timeout-ms");
      }
      return Fail(Error::Code::kData, result.error());
    }
    Rows rows;
    const idx_t cols = duckdb_column_count(result.get());
    for (idx_t r = 0; r < duckdb_row_count(result.get()); ++r) {
      std::vector<std::optional<std::string>> row;
      for (idx_t c = 0; c < cols; ++c) row.push_back(Cell(result.get(), c, r));
      rows.push_back(std::move(row));
    }
    return rows;
  }

  // A database table's loading error as its card quotes it; advice to raise a flag goes to the
  // user (the database's Source::notes).
  std::string ForCard(const std::string& table, std::string message) {
    if (TakeTimeoutAdvice(message) && !sources_.empty()) {
      sources_.front().notes.push_back(table + ": " + message + std::string(kRaiseTimeout));
    }
    return message;
  }

  // Cards for every registered table: DESCRIBE gives names and types, the loader's notes are
  // attached, and (when profiling) one scan per table fills in the statistics. `database`: the
  // tables are a .duckdb file's, whose views are SQL the data chose; one that fails or runs
  // past the load timeout gets a card that says so (told to the user and the model), and the
  // other tables are still served. A file's failure fails the open, naming the file.
  Result<void> BuildCards(const std::vector<std::pair<std::string, std::string>>& tables,
                          bool profile, bool exact, bool database = false) {
    for (const auto& [name, source] : tables) {
      const auto quoted = sql_names_.find(name);
      const std::string sql_name = quoted != sql_names_.end() ? quoted->second : QuoteIdent(name);
      // Every error names the file it came from: in a loop over files, "cannot load a.csv"
      // must not be said of b.csv.
      stage_ = "describing " + name;
      table_deadline_ =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(load_timeout_ms_);
      const struct ClearDeadline {
        std::optional<std::chrono::steady_clock::time_point>& deadline;
        ~ClearDeadline() { deadline.reset(); }
      } clear_deadline{table_deadline_};
      auto desc = RunTrusted("DESCRIBE " + sql_name);
      if (!desc && database && desc.error().code != Error::Code::kCancelled) {
        TableCard unreadable;
        unreadable.name = name;
        unreadable.source = source;
        unreadable.notes.push_back("cannot be queried: " +
                                   ForCard(name, FirstLine(desc.error().message)));
        cards_.push_back(std::move(unreadable));
        table_names_.push_back(name);
        continue;
      }
      if (!desc) return std::unexpected(Context(desc.error(), "cannot load " + source));
      std::vector<ColumnInfo> columns;
      TableCard card;
      card.name = name;
      card.source = source;
      const FileTable* file = nullptr;
      for (const auto& f : files_) {
        if (f.name == name) file = &f;
      }
      if (file && file->cached) {
        // Profiled when the entry was built; the entry is immutable, so the card still holds.
        TableCard cached = file->cached->card;
        cached.name = name;
        cached.source = source;
        cards_.push_back(std::move(cached));
        table_names_.push_back(name);
        continue;
      }
      columns = DescribeInto(card, *desc, file ? &file->plan : nullptr);
      if (profile) {
        stage_ = "profiling " + name;
        TableCard described = card;
        auto r = ProfileDuckDb(
            card, sql_name, columns, [this](const std::string& s) { return RunTrusted(s); }, exact);
        if (!r && database && r.error().code != Error::Code::kCancelled) {
          card = std::move(described);
          card.notes.push_back("no statistics: " + ForCard(name, FirstLine(r.error().message)));
        } else if (!r) {
          return std::unexpected(Context(r.error(), "cannot load " + source));
        }
      }
      cards_.push_back(std::move(card));
      table_names_.push_back(name);
    }
    return {};
  }

  // Plans every file read only on the sniffer's sample again, against all its rows, and
  // redefines its view; the notes reach the cards.
  Result<void> Deepen() {
    if (auto r = RunTrusted("SET threads = " + std::to_string(threads_)); !r) {
      return std::unexpected(r.error());
    }
    const struct OneThread {
      DuckDbEngine* engine;
      ~OneThread() { (void)engine->RunTrusted("SET threads = 1"); }
    } one_thread{this};
    process_.Reset();  // its copy of the views is the old one
    for (auto& f : files_) {
      if (!f.csv || f.deep) continue;
      auto plan = PlanCsv([this](const std::string& s) { return RunTrusted(s); }, f.read,
                          f.format == SourceFormat::kTsv, f.options, true);
      if (!plan) return std::unexpected(Context(plan.error(), "cannot load " + f.path));
      if (auto r =
              RunTrusted("CREATE OR REPLACE VIEW " + QuoteIdent(f.name) + " AS " + plan->select);
          !r) {
        return std::unexpected(Context(r.error(), "cannot load " + f.path));
      }
      f.plan = std::move(*plan);
      f.plan.table_notes.insert(f.plan.table_notes.begin(), f.read_notes.begin(),
                                f.read_notes.end());
      f.plan.table_notes.insert(
          f.plan.table_notes.begin(),
          "a value past the sniffer's sample did not fit the sample's reading: every row was "
          "checked, the table read again, and the query run again");
      f.deep = true;
      ++cards_version_;
      for (auto& source : sources_) {
        if (source.tables != std::vector<std::string>{f.name}) continue;
        source.select = f.plan.select;
        source.notes = f.plan.user_notes;
      }
      // The card is rebuilt from the new view: types and notes may all have changed.
      auto desc = RunTrusted("DESCRIBE " + QuoteIdent(f.name));
      if (!desc) return std::unexpected(Context(desc.error(), "cannot load " + f.path));
      for (auto& card : cards_) {
        if (card.name != f.name) continue;
        TableCard fresh;
        fresh.name = card.name;
        fresh.source = card.source;
        DescribeInto(fresh, *desc, &f.plan);
        card = std::move(fresh);
      }
    }
    return {};
  }

  struct FileTable {
    std::string path;  // as the user gave it
    std::string abs;
    // What DuckDB reads: `abs`, or a UTF-8 CSV copy in the spill directory when the file is in
    // an 8-bit encoding DuckDB lacks (encoding.cc) or is a workbook's sheet (workbook.cc), and
    // the notes that say what the copy changed.
    std::string read;
    std::vector<std::string> read_notes;
    SourceFormat format = SourceFormat::kCsv;
    std::string name;
    CsvOptions options;
    std::string sheet;  // a workbook's sheet, or ""
    bool csv = false;
    bool deep = false;
    CsvPlan plan;
    std::optional<CacheHit> cached;
  };

  // A CSV in Windows-1252 (detected) or in an 8-bit encoding the user named that DuckDB lacks
  // is read through a UTF-8 copy in the private spill directory, gone with the engine.
  Result<void> Transcode(FileTable& f, size_t index) {
    if (spill_.path().empty()) return {};
    const std::string copy = spill_.path() + "/source-" + std::to_string(index) + ".utf8.csv";
    auto note = ReadThroughUtf8Copy(f.abs, f.options, copy);
    if (!note) return std::unexpected(note.error());
    if (!*note) return {};
    f.read = copy;
    f.read_notes = {**note};
    return {};
  }

  // A workbook: one table per sheet (book_sheet), each read from a CSV copy of its cells.
  Result<std::vector<FileTable>> CopySheets(const FileTable& book, size_t index) {
    if (spill_.path().empty()) {
      return Fail(Error::Code::kData,
                  "cannot load " + book.path +
                      ": a workbook is read through "
                      "a copy in a private temporary directory, and none could be "
                      "made; check TMPDIR");
    }
    auto copies =
        CopySheetsAsCsv(book.abs, book.path, book.format, book.options.sheet, book.options.range,
                        book.options.header.value_or(true), spill_.path(), index, load_stop_);
    if (!copies) return std::unexpected(Context(copies.error(), "cannot load " + book.path));
    std::vector<FileTable> sheets;
    for (auto& copy : *copies) {
      FileTable f = book;
      f.csv = true;
      f.format = SourceFormat::kCsv;
      f.read = copy.csv_path;
      f.read_notes = std::move(copy.notes);
      f.options.sheet.reset();
      f.options.range.reset();
      f.options.delimiter = ",";
      f.options.quote = "\"";
      f.options.encoding = "utf-8";
      f.sheet = copy.sheet;
      sheets.push_back(std::move(f));
    }
    return sheets;
  }

  Result<void> Connect(const char* path, bool read_only, const OpenOptions& options) {
    // Extensions must never be fetched or loaded behind the user's back.
    Config::Settings settings = {
        {"autoinstall_known_extensions", "false"},
        {"autoload_known_extensions", "false"},
        {"allow_community_extensions", "false"},
        {"memory_limit", std::to_string(options.memory_limit_mb) + "MB"},
        {"max_temp_directory_size", std::to_string(4 * options.memory_limit_mb) + "MB"}};
    if (!spill_.path().empty()) settings.emplace_back("temp_directory", spill_.path());
    // Progress is polled (duckdb_query_progress) only when someone shows it, and switched on
    // per connection below: DuckDB refuses enable_progress_bar in a database's configuration.
    if (options.progress) progress_ = options.progress;
    if (read_only) settings.emplace_back("access_mode", "READ_ONLY");
    Config config;
    if (auto set = config.SetAll(settings); !set) return set;
    char* err = nullptr;
    if (duckdb_open_ext(path, db_.out(), config.get(), &err) == DuckDBError) {
      std::string msg = err ? err : "unknown error";
      duckdb_free(err);
      return Fail(Error::Code::kData, std::string("duckdb open failed: ") + msg);
    }
    if (duckdb_connect(db_.get(), conn_.out()) == DuckDBError) {
      return Fail(Error::Code::kInternal, "duckdb connect failed");
    }
    if (progress_) {
      // A connection's own setting: without it duckdb_query_progress always answers -1.
      for (const char* set :
           {"SET enable_progress_bar = true", "SET enable_progress_bar_print = false",
            "SET progress_bar_time = 1000"}) {
        if (auto r = RunTrusted(set); !r) progress_ = nullptr;
      }
    }
    return {};
  }

  // Before any SQL that data defines runs: see ConfineStatements. Spill files, up to a few
  // times the memory limit, go to this engine's own directory.
  Result<void> Confine(const std::vector<std::string>& allowed_paths) {
    for (const std::string& s : ConfineStatements(spill_.path(), allowed_paths)) {
      if (auto r = RunTrusted(s); !r) return std::unexpected(r.error());
    }
    // DuckDB checks for an interrupt only between chunks of rows: see BuiltValueCaps.
    for (const std::string& m : BuiltValueCaps()) {
      if (auto r = RunTrusted(m); !r) return std::unexpected(r.error());
    }
    return {};
  }

  // External access goes off for good. The configuration is locked in each query's child
  // (QueryOnce), after it takes back the threads: a child forked while DuckDB's worker threads
  // exist would inherit a scheduler whose threads are gone, so the parent keeps one thread
  // (none of its own workers) between queries.
  Result<void> Lock() {
    if (auto n = RunTrusted("SELECT current_setting('threads')::VARCHAR"); n && !n->empty()) {
      threads_ = std::max<int64_t>(1, std::atoll((*n)[0][0].value_or("1").c_str()));
    }
    for (const char* s : {"SET enable_external_access = false", "SET threads = 1"}) {
      if (auto r = RunTrusted(s); !r) return std::unexpected(r.error());
    }
    return {};
  }

  // Declared before the database, so it is removed only after DuckDB closed its files in it.
  SpillDirectory spill_;
  Database db_;
  Connection conn_;
  std::vector<FileTable> files_;
  int64_t threads_ = 1;  // DuckDB's own choice (the cores), which each query's child takes
  int64_t load_timeout_ms_ = 0;
  std::optional<std::chrono::steady_clock::time_point> table_deadline_;  // BuildCards
  StopToken load_stop_;  // OpenOptions::stop, while opening
  ProgressFn progress_;
  std::string stage_;  // what RunTrusted is doing, for progress: "loading data/x.csv"
  std::vector<TableCard> cards_;
  uint64_t cards_version_ = 0;
  std::vector<Source> sources_;
  std::vector<std::string> table_names_;
  std::map<std::string, std::string> sql_names_;  // display name -> quoted SQL name, if not simple
  // Last, so it is ended before the database closes.
  QueryProcess process_{
      [this] {
        for (const std::string& s : {"SET threads = " + std::to_string(threads_),
                                     std::string("SET lock_configuration = true")}) {
          if (auto r = RunTrusted(s); !r) _exit(3);  // never a query on an unlocked engine
        }
      },
      [this](const IsolatedQuery& q, const ProgressFn& report) {
        if (progress_) progress_ = report;
        return ExecuteDuckDbQuery(conn_.get(), q.sql, Limits{q.timeout_ms, q.max_rows, {}},
                                  progress_);
      }};
};

}  // namespace

QueryOutcome QueryDuckDbPastTextGuard(Engine& engine, std::string_view sql, const Limits& limits) {
  auto* duck = dynamic_cast<DuckDbEngine*>(&engine);
  if (!duck) {
    return std::unexpected(QueryFailure{FailureClass::kRuntimeError, "", "not a DuckDB engine"});
  }
  return duck->QueryOnce(sql, limits, false);
}

// The file pipeline: register (paths, names, fingerprints), create views (the CSV loader's
// plans), describe and profile; then lock.
Result<std::unique_ptr<Engine>> OpenDuckDbFiles(const std::vector<std::filesystem::path>& paths,
                                                const std::vector<SourceFormat>& formats,
                                                const std::vector<CsvOptions>& csv_options,
                                                const OpenOptions& options) {
  auto engine = std::make_unique<DuckDbEngine>();
  if (auto r = engine->Connect(nullptr, false, options); !r) return std::unexpected(r.error());
  engine->load_stop_ = options.stop;  // from the first statement: hashing, sniffing, loading
  std::vector<std::string> allowed;
  std::vector<std::pair<std::string, std::string>> tables;
  std::vector<std::string> taken, keywords;
  if (auto kw = engine->RunTrusted("SELECT lower(keyword_name) FROM duckdb_keywords() "
                                   "WHERE keyword_category <> 'unreserved'")) {
    for (const auto& row : *kw) keywords.push_back(row[0].value_or(""));
  }
  int64_t total_bytes = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    DuckDbEngine::FileTable f;
    f.path = paths[i].string();
    f.abs = std::filesystem::absolute(paths[i]).lexically_normal().string();
    f.format = formats[i];
    f.csv = formats[i] == SourceFormat::kCsv || formats[i] == SourceFormat::kTsv;
    f.options = i < csv_options.size() ? csv_options[i] : CsvOptions{};
    if (f.format == SourceFormat::kXlsx || f.format == SourceFormat::kXls) {
      auto source = Fingerprint(paths[i], formats[i], options.fingerprint, options.stop);
      if (!source) return std::unexpected(source.error());
      total_bytes += source->size_bytes;
      allowed.push_back(f.abs);
      auto sheets = engine->CopySheets(f, engine->files_.size());
      if (!sheets) return std::unexpected(sheets.error());
      for (auto& sheet : *sheets) {
        // book.xlsx, sheet 'Q3 2024' -> book_q3_2024 (TableNameFor takes a file name).
        std::string base = paths[i].stem().string() + "_" + sheet.sheet;
        for (char& ch : base) ch = ch == '/' || ch == '\\' || ch == '.' ? '_' : ch;
        sheet.name = TableNameFor(base + ".xlsx", taken, keywords);
        sheet.deep = true;  // at most Excel's 1,048,576 rows, and the copy is ours: read all
        allowed.push_back(sheet.read);
        taken.push_back(sheet.name);
        Source s = *source;
        s.tables = {sheet.name};
        engine->sources_.push_back(std::move(s));
        tables.emplace_back(sheet.name, f.path + ", sheet '" + sheet.sheet + "'");
        engine->files_.push_back(std::move(sheet));
      }
      continue;
    }
    const bool cacheable = options.use_cache && (f.csv || f.format == SourceFormat::kJson);
    // A compressed file cut short reads as fewer rows, quietly: checked before its first load.
    if (cacheable) {
      auto hit = LookupCache(f.abs, f.options, options);
      if (!hit) return std::unexpected(hit.error());
      if (auto r = *hit ? Result<void>{} : CheckGzipWhole(paths[i], f.path, options.stop); !r) {
        return std::unexpected(r.error());
      }
      if (!*hit) hit = WaitForCacheBuild(f.abs, f.options, options);
      if (!hit) return std::unexpected(hit.error());
      f.cached = std::move(*hit);
    } else if (auto r = CheckGzipWhole(paths[i], f.path, options.stop); !r) {
      return std::unexpected(r.error());
    }
    auto source = Fingerprint(paths[i], formats[i], options.fingerprint && !f.cached, options.stop);
    if (!source) return std::unexpected(source.error());
    if (cacheable) source->cache = f.cached ? CacheUse::kHit : CacheUse::kMiss;
    if (f.cached) {
      source->sha256 = f.cached->sha256;
      source->delimiter = f.cached->delimiter;
      source->header = f.cached->header;
      source->padded = f.cached->padded;
      source->notes = f.cached->user_notes;
      f.plan.table_notes = f.cached->card.notes;
    }
    total_bytes += source->size_bytes;
    f.name = TableNameFor(paths[i], taken, keywords);
    f.deep = f.cached || (f.csv && (options.profile || source->size_bytes <= options.deep_bytes));
    allowed.push_back(f.abs);
    f.read = f.abs;
    if (f.csv && !f.cached) {
      auto copy = engine->Transcode(f, engine->files_.size());
      if (!copy) return std::unexpected(Context(copy.error(), "cannot load " + f.path));
      if (f.read != f.abs) allowed.push_back(f.read);
    }
    if (f.cached) {
      // Read-only: nothing, the model least of all, can change an entry through this engine.
      const std::string schema = "quarry_cache_" + std::to_string(engine->files_.size());
      auto r = engine->RunTrusted("ATTACH " + QuoteLiteral(f.cached->entry.string()) + " AS " +
                                  schema + " (READ_ONLY)");
      if (!r) {
        // An unreadable entry is skipped, never trusted: the file is read as if uncached.
        f.cached.reset();
        f.plan.table_notes.clear();
        source->notes.clear();
        if (auto full = Fingerprint(paths[i], formats[i], options.fingerprint, options.stop); full)
          *source = *full;
        source->cache = CacheUse::kMiss;
      }
    }
    taken.push_back(f.name);
    source->tables = {f.name};
    engine->sources_.push_back(std::move(*source));
    tables.emplace_back(f.name, f.path);
    engine->files_.push_back(std::move(f));
  }
  // Views keep the data in the files; external access goes off before any view is read, and
  // only these exact paths stay readable (not DuckDB's default ./.tmp either).
  if (auto r = engine->Confine(allowed); !r) return std::unexpected(r.error());
  engine->load_timeout_ms_ = options.timeout_ms;
  auto run = [&engine](const std::string& s) { return engine->RunTrusted(s); };
  for (size_t i = 0; i < engine->files_.size(); ++i) {
    auto& f = engine->files_[i];
    const std::string context = "cannot load " + f.path;
    engine->stage_ = "loading " + f.path;
    std::string select;
    if (f.cached) {
      select = "SELECT * FROM quarry_cache_" + std::to_string(i) + ".data";
      engine->sources_[i].cache_entry = f.cached->entry;
    } else if (f.csv) {
      auto plan = PlanCsv(run, f.read, f.format == SourceFormat::kTsv, f.options, f.deep);
      if (!plan) return std::unexpected(Context(plan.error(), context));
      plan->table_notes.insert(plan->table_notes.begin(), f.read_notes.begin(), f.read_notes.end());
      select = plan->select;
      engine->sources_[i].delimiter = plan->delimiter;
      engine->sources_[i].header = plan->header;
      engine->sources_[i].padded = plan->padded;
      engine->sources_[i].notes = plan->user_notes;
      f.plan = std::move(*plan);
    } else if (f.format == SourceFormat::kJson) {
      auto plan = PlanJson(run, f.abs);
      if (!plan) return std::unexpected(Context(plan.error(), context));
      select = plan->select;
      f.plan = std::move(*plan);
    } else {
      select = "SELECT * FROM " + FileReader(f.format, f.abs);
    }
    if (!f.cached) engine->sources_[i].select = select;
    if (f.read != f.abs && !f.cached) engine->sources_[i].read_copy = f.read;
    auto r = engine->RunTrusted("CREATE VIEW " + QuoteIdent(f.name) + " AS " + select);
    if (!r) {
      return Fail(Error::Code::kData, context + " as " + std::string(SourceFormatName(f.format)) +
                                          ": " + r.error().message.substr(0, 300));
    }
  }
  if (auto r = engine->BuildCards(tables, options.profile, total_bytes <= kExactBytes); !r) {
    return std::unexpected(r.error());
  }
  for (const TableCard& card : engine->cards_) {
    if (card.profiled && card.row_count == 0) {
      return Fail(Error::Code::kData, card.source +
                                          " has a header but no rows: there is nothing "
                                          "to query; add data rows or pick another file");
    }
  }
  if (auto r = engine->Lock(); !r) return std::unexpected(r.error());
  engine->load_timeout_ms_ = 0;
  engine->load_stop_ = {};
  return engine;
}

Result<std::unique_ptr<Engine>> OpenDuckDbDatabase(const std::filesystem::path& path,
                                                   const OpenOptions& options) {
  auto engine = std::make_unique<DuckDbEngine>();
  auto source = Fingerprint(path, SourceFormat::kDuckDb, options.fingerprint, options.stop);
  if (!source) return std::unexpected(source.error());
  const int64_t source_bytes = source->size_bytes;
  if (auto r = engine->Connect(path.c_str(), true, options); !r) return std::unexpected(r.error());
  // A view stored in the file is SQL the data chose: it is described and profiled below, so
  // nothing but the database itself may be readable from here on (a view over
  // read_text('.env') must fail, not put the file into the card).
  if (auto r = engine->Confine({}); !r) return std::unexpected(r.error());
  engine->load_timeout_ms_ = options.timeout_ms;
  engine->load_stop_ = options.stop;
  // Tables outside the main schema are named schema.table, as queries must name them.
  auto names = engine->RunTrusted(
      "SELECT CASE WHEN schema_name = 'main' THEN '\"' || replace(table_name, '\"', '\"\"') || "
      "'\"' "
      "ELSE '\"' || replace(schema_name, '\"', '\"\"') || '\".\"' || replace(table_name, '\"', "
      "'\"\"') || '\"' END, "
      "CASE WHEN schema_name = 'main' THEN table_name ELSE schema_name || '.' || table_name END "
      "FROM (SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = "
      "current_database() "
      "UNION SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal "
      "AND database_name = current_database()) ORDER BY 2");
  if (!names) return std::unexpected(names.error());
  std::vector<std::pair<std::string, std::string>> tables;
  for (const auto& row : *names) {
    tables.emplace_back(row[1].value_or(""), path.string());
    source->tables.push_back(row[1].value_or(""));
    engine->sql_names_[row[1].value_or("")] = row[0].value_or("");
  }
  engine->sources_.push_back(std::move(*source));
  if (auto r = engine->BuildCards(tables, options.profile, source_bytes <= kExactBytes, true); !r) {
    return std::unexpected(r.error());
  }
  if (auto r = engine->Lock(); !r) return std::unexpected(r.error());
  engine->load_timeout_ms_ = 0;
  engine->load_stop_ = {};
  return engine;
}

}  // namespace quarry::engine::internal
