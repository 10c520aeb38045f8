// The CSV loader's planner (csv_loader.cc: the dialect, the sniff and its checks;
// csv_measure.cc: the whole-file measure of each column's type and the notes on rejected rows).
// Internal to the engine.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "quarry/engine/csv_internal.h"
#include "quarry/engine/engine_internal.h"

// Its own namespace: the helpers' short names (Plural, FirstLine) are the engine's other files'
// too.
namespace quarry::engine::internal::csv_plan {

inline std::string Plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

inline std::string FirstLine(const std::string& message) {
  return message.substr(0, message.find('\n'));
}

// DuckDB's CSV errors carry "CSV Error on Line: N"; the number is the file's line.
inline std::optional<int64_t> ErrorLine(const std::string& message) {
  const auto at = message.find("on Line: ");
  if (at == std::string::npos) return std::nullopt;
  int64_t line = 0;
  const char* begin = message.data() + at + 9;
  auto [ptr, ec] = std::from_chars(begin, message.data() + message.size(), line);
  if (ec != std::errc()) return std::nullopt;
  return line;
}

// Aggregates per statement stay in the hundreds; see Measure.
inline constexpr size_t kColumnsPerQuery = 200;
// Files wider than this skip the quality checks of csv_quality.cc.
inline constexpr size_t kQualityColumns = 200;

// As many rows as DuckDB's sniffer samples by default.
inline constexpr int64_t kSampleRows = 20480;

struct Sniffed {
  std::string delimiter;
  std::string quote;
  std::string escape;
  int64_t skip = 0;
  bool header = true;
  std::string date_format;
  std::string timestamp_format;
  std::vector<std::pair<std::string, std::string>> columns;  // name, type
};

// Plans one CSV/TSV file (PlanCsv); one use per file.
class Planner {
 public:
  Planner(const RunRows& run, std::string path, bool tsv, const CsvOptions& user, bool deep)
      : run_(run),
        path_(std::move(path)),
        lit_(QuoteLiteral(path_)),
        tsv_(tsv),
        user_(user),
        deep_(deep) {}
  // The plan for the file: its read_csv SELECT, the notes for the model and the user.
  Result<CsvPlan> Plan();

 private:
  // How much of a column Measure looks at (see there).
  enum Level { kCount, kDouble, kText, kFull };

  using ColumnStats = CsvColumnStats;

  static bool Mentions(const std::string& text, const char* what);
  std::string Dialect(bool sniffing) const;
  void CleanNames();
  std::string Reader(bool as_text, const std::string& extra = "") const;
  Result<Sniffed> Sniff(const std::string& options, bool full);
  std::string RawReader(bool ordered = false) const;
  std::string RawRows() const;
  Result<std::vector<std::string>> RawLines(int64_t n);
  int64_t Fields(const std::string& line) const;
  Result<void> CheckOneColumn();
  Result<void> CheckOneColumnHeader();
  void CheckByteOrderMark();
  Result<void> CheckExcelSeparatorLine();
  Result<void> CheckQuotedTitle();
  Result<void> CheckHeaderDelimiter();
  Result<void> CheckRaggedDelimiter();
  Result<void> CheckSkip();
  std::string KeepDelimiter(const std::string& o) const;
  Result<void> CheckHeader();
  Result<void> Repad();
  Result<void> Deepen();
  Result<void> Measure();
  Result<void> FindMissingValues(const std::vector<std::string>& cols,
                                 const std::vector<int>& level, std::vector<ColumnStats>& stats);
  std::string Typed(const std::string& q, const std::string& type) const;
  std::string HeaderLines();
  static std::string RejectsOptions(const std::string& table);
  Result<void> NoteRaggedLines(const std::string& table);
  Result<void> NoteRejects(const std::string& table);

  std::string Padding() const { return padded_ ? ", null_padding = true" : ""; }

  const RunRows& run_;
  std::string path_;
  std::string lit_;
  bool tsv_;
  const CsvOptions& user_;
  bool deep_;
  std::optional<std::string> encoding_;
  Sniffed s_;
  bool padded_ = false;
  bool strict_ = true;
  bool noted_rejects_ = false;
  bool sample_ = false;  // Measure sees only the first kSampleRows rows
  bool long_lines_ = false;
  bool bom_big_endian_ = false;
  std::string forced_delimiter_;  // found by quarry (sep= line, header check), not the user
  int64_t forced_skip_ = 0;
  bool forced_header_ = false;     // a header the sniffer missed (CheckHeader)
  bool forced_no_header_ = false;  // a one-column file's first value (CheckOneColumnHeader)
  CsvPlan plan_;
};

}  // namespace quarry::engine::internal::csv_plan
