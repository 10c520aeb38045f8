// The CSV loader: turns one CSV/TSV file into the SELECT that defines its table, and says what
// it decided. DuckDB's sniffer finds the dialect and types; this file judges its guesses
// against the whole file (preamble or ragged rows, a one-column file, a header repeated
// mid-file, integers past 64 bits, decimal commas, thousands separators, missing-value
// markers), retries as an analyst would (full-file sniff, the offending column as text, another
// encoding), and turns every decision into a note for the model and the user.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "quarry/engine/csv_internal.h"
#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

std::string Plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string FirstLine(const std::string& message) { return message.substr(0, message.find('\n')); }

// DuckDB's CSV errors carry "CSV Error on Line: N"; the number is the file's line.
std::optional<int64_t> ErrorLine(const std::string& message) {
  const auto at = message.find("on Line: ");
  if (at == std::string::npos) return std::nullopt;
  int64_t line = 0;
  const char* begin = message.data() + at + 9;
  auto [ptr, ec] = std::from_chars(begin, message.data() + message.size(), line);
  if (ec != std::errc()) return std::nullopt;
  return line;
}

// Aggregates per statement stay in the hundreds; see Measure.
constexpr size_t kColumnsPerQuery = 200;
// Files wider than this skip the quality checks of csv_quality.cc.
constexpr size_t kQualityColumns = 200;

// As many rows as DuckDB's sniffer samples by default.
constexpr int64_t kSampleRows = 20480;

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

class Planner {
 public:
  Planner(const RunRows& run, std::string path, bool tsv, const CsvOptions& user, bool deep)
      : run_(run),
        path_(std::move(path)),
        lit_(QuoteLiteral(path_)),
        tsv_(tsv),
        user_(user),
        deep_(deep) {}

  Result<CsvPlan> Plan() {
    if (auto r = RefuseBlankCsv(path_); !r) return std::unexpected(r.error());
    encoding_ = user_.encoding;
    if (!encoding_) CheckByteOrderMark();
    if (bom_big_endian_) {
      // DuckDB's UTF-16 is little-endian; reading big-endian as it would give garbage names.
      return Fail(Error::Code::kData,
                  "the file is UTF-16 big-endian, which quarry cannot read: "
                  "convert it first (iconv -f UTF-16BE -t UTF-8)");
    }
    if (!user_.delimiter && !user_.skip) {
      if (auto r = CheckExcelSeparatorLine(); !r) return std::unexpected(r.error());
    }
    if (!user_.skip && !user_.header && forced_skip_ == 0) {
      if (auto r = CheckQuotedTitle(); !r) return std::unexpected(r.error());
    }
    auto sniffed = Sniff(Dialect(true), deep_);
    if (!sniffed && !user_.encoding && Mentions(sniffed.error().message, "not utf-8")) {
      // Most non-UTF-8 CSVs in the wild are Latin-1 or its Windows superset; every byte
      // sequence is valid Latin-1, so the retry cannot fail on encoding again.
      encoding_ = "latin-1";
      plan_.table_notes.push_back(
          "the file is not valid UTF-8; it was read as Latin-1 (ISO-8859-1)");
      plan_.user_notes.push_back(
          "not valid UTF-8, so read as Latin-1 (ISO-8859-1): if accented "
          "letters look wrong, give the encoding as FILE?encoding=cp1252 "
          "(or utf-16, or another)");
      sniffed = Sniff(Dialect(true), deep_);
    }
    if (!sniffed && Mentions(sniffed.error().message, "not possible to automatically detect")) {
      // A short or long row past the sniffer's first chunk defeats its dialect search; padded,
      // the search succeeds and the rows are kept (Measure names them).
      auto padded = Sniff(Dialect(true) + ", null_padding = true", deep_);
      if (padded) {
        padded_ = true;
        sniffed = padded;
      }
    }
    if (!sniffed && Mentions(sniffed.error().message, "maximum line size")) {
      // One huge cell (a pasted document) should not make the whole file unreadable.
      long_lines_ = true;
      plan_.table_notes.push_back("some lines are longer than 2 MB; read with a 64 MB line limit");
      sniffed = Sniff(Dialect(true), deep_);
    }
    if (!sniffed) return std::unexpected(sniffed.error());
    s_ = *sniffed;
    CleanNames();
    if (!user_.delimiter && forced_delimiter_.empty()) {
      if (auto r = CheckOneColumn(); !r) return std::unexpected(r.error());
      if (auto r = CheckRaggedDelimiter(); !r) return std::unexpected(r.error());
      if (auto r = CheckHeaderDelimiter(); !r) return std::unexpected(r.error());
    }
    if (s_.skip > 0 && !user_.skip && forced_skip_ == 0) {
      if (auto r = CheckSkip(); !r) return std::unexpected(r.error());
    }
    if (!user_.header && !user_.skip && forced_skip_ == 0 && !padded_ && !s_.delimiter.empty()) {
      if (auto r = CheckHeader(); !r) return std::unexpected(r.error());
    }
    if (!user_.header && !forced_header_ && forced_skip_ == 0 && s_.header &&
        s_.columns.size() == 1) {
      if (auto r = CheckOneColumnHeader(); !r) return std::unexpected(r.error());
    }
    if (deep_) {
      if (auto r = Deepen(); !r) return std::unexpected(r.error());
    } else {
      // A large file's first command judges the sniffer's types on the sample it read, with the
      // same rules as the whole-file check, so that the cache built later (every row) reads the
      // file the same way; a later row that breaks the sample's reading fails the query, and
      // the engine then checks every row and retries.
      sample_ = true;
      if (auto r = Measure(); !r) return std::unexpected(r.error());
      plan_.table_notes.push_back(SampledPlanNote());
      plan_.sampled = true;
    }
    if (!s_.date_format.empty() && s_.date_format != "%Y-%m-%d") {
      plan_.table_notes.push_back("dates read in the format " + s_.date_format +
                                  " (as the sniffer found it)");
      plan_.user_notes.push_back("dates were read in the format " + s_.date_format +
                                 "; to keep a column as written, give FILE?types=COLUMN:VARCHAR");
    }
    plan_.delimiter = s_.delimiter;
    plan_.header = s_.header;
    plan_.padded = padded_;
    return plan_;
  }

 private:
  static bool Mentions(const std::string& text, const char* what) {
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower.find(what) != std::string::npos;
  }

  // The read_csv options fixed so far. `sniffing`: only what the user gave (and the encoding).
  std::string Dialect(bool sniffing) const {
    std::string o;
    if (long_lines_) o += ", max_line_size = 67108864";
    if (encoding_) o += ", encoding = " + QuoteLiteral(*encoding_);
    if (user_.decimal) o += ", decimal_separator = " + QuoteLiteral(*user_.decimal);
    if (!user_.nulls.empty()) {
      o += ", nullstr = [";
      for (size_t i = 0; i < user_.nulls.size(); ++i)
        o += (i ? ", " : "") + QuoteLiteral(user_.nulls[i]);
      o += "]";
    }
    if (!user_.types.empty()) {
      o += ", types = {";
      for (size_t i = 0; i < user_.types.size(); ++i) {
        o += (i ? ", " : "") + QuoteLiteral(user_.types[i].first) + ": " +
             QuoteLiteral(user_.types[i].second);
      }
      o += "}";
    }
    if (sniffing) {
      if (user_.delimiter)
        o += ", delim = " + QuoteLiteral(*user_.delimiter);
      else if (!forced_delimiter_.empty())
        o += ", delim = " + QuoteLiteral(forced_delimiter_);
      else if (tsv_)
        o += ", delim = '\\t'";
      if (forced_skip_ > 0 && !user_.skip) o += ", skip = " + std::to_string(forced_skip_);
      // Excel's sep= files always have a header; an all-text table gives the sniffer no clue.
      if ((forced_skip_ > 0 || forced_header_) && !user_.header) o += ", header = true";
      if (forced_no_header_ && !user_.header) o += ", header = false";
      if (user_.quote) o += ", quote = " + QuoteLiteral(*user_.quote);
      if (user_.header) o += std::string(", header = ") + (*user_.header ? "true" : "false");
      if (user_.skip) o += ", skip = " + std::to_string(*user_.skip);
      return o;
    }
    o += ", delim = " + QuoteLiteral(s_.delimiter) + ", quote = " + QuoteLiteral(s_.quote) +
         ", escape = " + QuoteLiteral(s_.escape) + ", header = " + (s_.header ? "true" : "false") +
         ", skip = " + std::to_string(s_.skip);
    if (!s_.date_format.empty()) o += ", dateformat = " + QuoteLiteral(s_.date_format);
    if (!s_.timestamp_format.empty())
      o += ", timestampformat = " + QuoteLiteral(s_.timestamp_format);
    if (!strict_) o += ", strict_mode = false";
    return o;
  }

  // A header name holding a NUL or another control character cannot be written in SQL (the
  // statement's text ends at a NUL): such characters become '_', and a note says so.
  void CleanNames() {
    std::set<std::string> taken;
    for (const auto& [n, t] : s_.columns) taken.insert(n);
    for (auto& [n, t] : s_.columns) {
      if (std::none_of(n.begin(), n.end(),
                       [](char c) { return (c >= 0 && c < 0x20) || c == 0x7f; })) {
        continue;
      }
      std::string clean = n;
      for (char& c : clean) {
        if ((c >= 0 && c < 0x20) || c == 0x7f) c = '_';
      }
      std::string name = clean;
      for (int k = 2; taken.count(name) > 0; ++k) name = clean + "_" + std::to_string(k);
      taken.insert(name);
      plan_.table_notes.push_back("the header name '" + PromptText(n, 60) +
                                  "' holds control characters: the column is named " + name);
      n = name;
    }
  }

  std::string Padding() const { return padded_ ? ", null_padding = true" : ""; }

  // The reader with the dialect and columns fixed: no sniffing at query time, so every read
  // of the table sees the same columns. `as_text`: every column VARCHAR.
  std::string Reader(bool as_text, const std::string& extra = "") const {
    std::string cols;
    for (const auto& [n, t] : s_.columns) {
      cols += (cols.empty() ? "" : ", ") + QuoteLiteral(n) + ": " +
              QuoteLiteral(as_text ? "VARCHAR" : t);
    }
    std::string user = Dialect(false);
    // Column types are fixed in `columns` here; the user's types already shaped the sniff.
    if (const auto at = user.find(", types = {"); at != std::string::npos) {
      user.erase(at, user.find('}', at) + 1 - at);
    }
    return "read_csv(" + lit_ + user + Padding() + ", auto_detect = false, columns = {" + cols +
           "}" + extra + ")";
  }

  Result<Sniffed> Sniff(const std::string& options, bool full) {
    auto rows = run_(
        "SELECT Delimiter, Quote, Escape, SkipRows, HasHeader, "
        "CAST(to_json(Columns) AS VARCHAR), DateFormat, TimestampFormat "
        "FROM sniff_csv(" +
        lit_ + options + (full ? ", sample_size = -1" : "") + ")");
    if (!rows) return std::unexpected(rows.error());
    if (rows->empty()) return Fail(Error::Code::kData, "the CSV sniffer returned nothing");
    const auto& r = rows->front();
    Sniffed s;
    // sniff_csv shows an absent quote or escape as the text "(empty)".
    auto field = [&](size_t k, const char* absent) {
      const std::string v = r[k].value_or(absent);
      return v == "(empty)" ? std::string() : v;
    };
    s.delimiter = field(0, ",");
    s.quote = field(1, "");
    s.escape = field(2, "");
    s.skip = std::stoll(r[3].value_or("0"));
    s.header = r[4].value_or("true") == "true";
    s.date_format = r[6].value_or("");
    s.timestamp_format = r[7].value_or("");
    auto cols = nlohmann::json::parse(r[5].value_or("[]"), nullptr, false);
    if (cols.is_array()) {
      for (const auto& c : cols) {
        if (c.is_object() && c.value("name", nlohmann::json()).is_string()) {
          s.columns.emplace_back(c["name"].get<std::string>(), c.value("type", "VARCHAR"));
        }
      }
    }
    return s;
  }

  // The file's physical lines, unparsed, as one column `line`.
  std::string RawReader(bool ordered = false) const {
    return "read_csv(" + lit_ +
           ", columns = {'line': 'VARCHAR'}, delim = '', quote = '', "
           "escape = '', header = false, auto_detect = false, ignore_errors = true" +
           (encoding_ ? ", encoding = " + QuoteLiteral(*encoding_) : std::string()) +
           (long_lines_ ? ", max_line_size = 67108864" : "") +
           (ordered ? ", parallel = false" : "") + ")";
  }

  // The raw lines Measure looks at: all of them, or the sample's.
  std::string RawRows() const {
    return sample_ ? "(SELECT * FROM " + RawReader() + " LIMIT " +
                         std::to_string(kSampleRows + s_.skip + 1) + ")"
                   : RawReader();
  }

  // The first physical lines: what a person sees with `head`.
  Result<std::vector<std::string>> RawLines(int64_t n) {
    auto rows = run_("SELECT line FROM " + RawReader() + " LIMIT " + std::to_string(n));
    if (!rows) return std::unexpected(rows.error());
    std::vector<std::string> lines;
    for (const auto& r : *rows) lines.push_back(r[0].value_or(""));
    return lines;
  }

  int64_t Fields(const std::string& line) const {
    if (s_.delimiter.empty()) return 1;
    int64_t n = 1;
    for (size_t at = line.find(s_.delimiter); at != std::string::npos;
         at = line.find(s_.delimiter, at + s_.delimiter.size())) {
      ++n;
    }
    return n;
  }

  // A file whose lines mostly hold no delimiter at all is one column, whatever character the
  // sniffer settled on (`c0\nv0\na;b` is two rows of c0, not a table split at ';').
  Result<void> CheckOneColumn() {
    auto lines = RawLines(200);
    if (!lines) return std::unexpected(lines.error());
    int64_t with = 0, total = 0;
    for (const auto& line : *lines) {
      if (line.empty()) continue;
      ++total;
      if (line.find(s_.delimiter) != std::string::npos) ++with;
      if (!s_.quote.empty() && line.find(s_.quote) != std::string::npos) return {};
    }
    if (total == 0 || s_.columns.size() <= 1 || with * 2 >= total) return {};
    auto resniffed = Sniff(Dialect(true) + ", delim = ''", deep_);
    if (!resniffed) return std::unexpected(resniffed.error());
    s_ = *resniffed;
    CleanNames();
    s_.delimiter = "";
    plan_.table_notes.push_back(
        "read as one column: " + std::to_string(total - with) + " of " + std::to_string(total) +
        " sampled lines hold no delimiter, so the few that do keep it as text");
    return {};
  }

  // A one-column file gives the sniffer nothing to tell a header by. A first line that is a
  // number ('1,000' above '2,000') is the first value; one that reads like a value in quotes
  // ('"Smith, John"') is noted, since no one can tell.
  Result<void> CheckOneColumnHeader() {
    auto lines = RawLines(3);
    if (!lines || lines->size() < 3) return {};
    std::string first = lines->front();
    if (!first.empty() && first.back() == '\r') first.pop_back();
    std::string bare = first;
    if (bare.size() >= 2 && bare.front() == '"' && bare.back() == '"') {
      bare = bare.substr(1, bare.size() - 2);
    }
    if (CsvLineIsANumber(bare)) {
      forced_no_header_ = true;
      auto resniffed = Sniff(Dialect(true), deep_);
      if (!resniffed) {
        forced_no_header_ = false;
        return {};
      }
      s_ = *resniffed;
      CleanNames();
      plan_.table_notes.push_back("the first line " + first.substr(0, 40) +
                                  " is a number like the lines below it, not a column's name: "
                                  "read as the first row");
      return {};
    }
    if (first.size() > 2 && first.front() == '"' && bare.find(',') != std::string::npos) {
      plan_.table_notes.push_back("the first line " + first.substr(0, 60) +
                                  " was read as the column's name, as a header; if it is a "
                                  "value like the lines below it, read the file with "
                                  "?header=false");
    }
    return {};
  }

  // Excel's UTF-16 ("Unicode text") and other BOM-marked files: the BOM says the encoding.
  void CheckByteOrderMark() {
    std::ifstream in(path_, std::ios::binary);
    unsigned char bom[2] = {0, 0};
    in.read(reinterpret_cast<char*>(bom), 2);
    if (in.gcount() == 2 &&
        ((bom[0] == 0xFF && bom[1] == 0xFE) || (bom[0] == 0xFE && bom[1] == 0xFF))) {
      encoding_ = "utf-16";
      bom_big_endian_ = bom[0] == 0xFE;
      plan_.table_notes.push_back("read as UTF-16 (the file starts with a UTF-16 byte-order mark)");
    }
  }

  // Excel writes "sep=;" as the first line of a CSV to name its delimiter.
  Result<void> CheckExcelSeparatorLine() {
    auto first = RawLines(1);
    if (!first || first->empty()) return {};
    std::string line = first->front();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() == 5 && line.starts_with("sep=")) {
      forced_delimiter_ = line.substr(4);
      forced_skip_ = 1;
      plan_.table_notes.push_back("the first line '" + line +
                                  "' names the delimiter (as Excel "
                                  "writes it) and was skipped");
    }
    return {};
  }

  // A title written as one quoted field above the table ('"Sales, all regions"'): skipped
  // before the sniffer sees it and reads its delimiters as a header's.
  Result<void> CheckQuotedTitle() {
    auto lines = RawLines(20);
    if (!lines) return {};  // the sniffer's own error is the clearer one
    const char quote = user_.quote && !user_.quote->empty() ? user_.quote->front() : '"';
    if (auto title = QuotedTitleLine(*lines, quote)) {
      forced_skip_ = 1;
      plan_.table_notes.push_back("the first line " + title->substr(0, 60) +
                                  " is a title, not the header: skipped as a preamble");
    }
    return {};
  }

  // A header holds no decimal commas: when the sniffer's delimiter is absent from the header
  // line but another common one is there, and every line has it as often, that one is the
  // delimiter (x;y / 1,5;2,5 is two columns, not a split at the decimal comma).
  Result<void> CheckHeaderDelimiter() {
    if (s_.delimiter.empty() || user_.skip) return {};
    // The first line: the sniffer may have skipped the header for lacking its delimiter.
    auto lines = RawLines(101);
    if (!lines || lines->size() < 2) return {};
    const std::string& header = lines->front();
    auto count = [](const std::string& line, const std::string& d) {
      int64_t n = 0;
      for (size_t at = line.find(d); at != std::string::npos; at = line.find(d, at + d.size())) ++n;
      return n;
    };
    if (count(header, s_.delimiter) > 0) return {};
    const std::string delimiter_was = s_.delimiter;
    for (const char* candidate : {";", "\t", "|", ","}) {
      if (candidate == s_.delimiter) continue;
      const int64_t in_header = count(header, candidate);
      if (in_header == 0) continue;
      int64_t same = 0, total = 0;
      for (size_t i = 1; i < lines->size(); ++i) {
        if ((*lines)[i].empty()) continue;
        ++total;
        same += count((*lines)[i], candidate) == in_header ? 1 : 0;
      }
      if (total == 0 || same * 10 < total * 9) continue;
      forced_delimiter_ = candidate;
      auto resniffed = Sniff(Dialect(true), deep_);
      if (!resniffed) return std::unexpected(resniffed.error());
      s_ = *resniffed;
      CleanNames();
      s_.delimiter = candidate;
      plan_.table_notes.push_back(std::string("read with '") +
                                  (std::string(candidate) == "\t" ? "\\t" : candidate) +
                                  "' as the delimiter: the header and every line hold it equally "
                                  "often, while the sniffer's '" +
                                  delimiter_was + "' is not in the header");
      return {};
    }
    return {};
  }

  // A ragged file can make the sniffer give up on its delimiter and settle on one column
  // (`a,b,c\n1,2,3\n4,5\n`): when nearly every line holds a common delimiter the sniffer did
  // not pick, the file is that delimiter's table with some rows short or long.
  Result<void> CheckRaggedDelimiter() {
    if (s_.columns.size() > 1) return {};
    auto lines = RawLines(200);
    if (!lines) return std::unexpected(lines.error());
    std::string best;
    int64_t best_count = 0, total = 0;
    for (const auto& line : *lines) total += line.empty() ? 0 : 1;
    for (const char* candidate : {",", ";", "\t", "|"}) {
      if (candidate == s_.delimiter) continue;
      int64_t n = 0;
      for (const auto& line : *lines) n += line.find(candidate) != std::string::npos ? 1 : 0;
      if (n > best_count) {
        best = candidate;
        best_count = n;
      }
    }
    if (total < 2 || best_count * 10 < total * 8) return {};
    s_.delimiter = best;
    return Repad();
  }

  // The sniffer skips lines it cannot fit. Lines before a header that hold at most half its
  // fields are a preamble (a title, an export date) and stay skipped; anything else is data
  // with missing or extra fields, read padded instead of dropped.
  Result<void> CheckSkip() {
    auto lines = RawLines(s_.skip + 1);
    if (!lines) return std::unexpected(lines.error());
    const int64_t width = static_cast<int64_t>(s_.columns.size());
    bool preamble = s_.header && static_cast<int64_t>(lines->size()) > s_.skip;
    for (int64_t i = 0; preamble && i < s_.skip; ++i) {
      const std::string& line = (*lines)[static_cast<size_t>(i)];
      if (!line.empty() && Fields(line) > std::max<int64_t>(1, width / 2)) preamble = false;
    }
    if (preamble) {
      std::string shown;
      for (int64_t i = 0; i < s_.skip && i < 3; ++i) {
        shown += (i ? ", '" : "'") + (*lines)[static_cast<size_t>(i)].substr(0, 60) + "'";
      }
      plan_.table_notes.push_back(Plural(s_.skip, "line", "lines") +
                                  " before the header skipped as a preamble: " + shown);
      return {};
    }
    padded_ = true;
    return Repad();
  }

  // Sniffing options `o` with the delimiter found so far, unless they name one already.
  std::string KeepDelimiter(const std::string& o) const {
    return o.find(", delim = ") == std::string::npos ? o + ", delim = " + QuoteLiteral(s_.delimiter)
                                                     : o;
  }

  // A header of years read as data, or a title line read as the header (csv_header.cc): read
  // again with the header and skip it says.
  Result<void> CheckHeader() {
    std::string reader = "read_csv(" + lit_ + ", delim = " + QuoteLiteral(s_.delimiter) +
                         ", quote = " + QuoteLiteral(s_.quote) +
                         ", escape = " + QuoteLiteral(s_.escape) +
                         ", all_varchar = true, null_padding = true, "
                         "strict_mode = false";
    if (encoding_) reader += ", encoding = " + QuoteLiteral(*encoding_);
    if (long_lines_) reader += ", max_line_size = 67108864";
    auto resniff = [this](int64_t skip) -> Result<CsvSniffedColumns> {
      auto s = Sniff(
          KeepDelimiter(Dialect(true)) + ", header = true, skip = " + std::to_string(skip), deep_);
      if (!s) return std::unexpected(s.error());
      return s->columns;
    };
    // A judgement that cannot be made (a query the file's shape defeats) keeps the sniffer's
    // reading: this check may only improve a reading, never fail a load.
    auto fix = CheckCsvHeader(run_, reader, s_.header, s_.skip, s_.columns, resniff);
    if (!fix || !*fix) return {};
    forced_header_ = true;
    forced_skip_ = (*fix)->skip;
    const std::string delimiter = s_.delimiter;
    auto resniffed = Sniff(KeepDelimiter(Dialect(true)), deep_);
    if (!resniffed) {
      forced_header_ = false;
      forced_skip_ = 0;
      return {};
    }
    s_ = *resniffed;
    CleanNames();
    s_.delimiter = delimiter;
    plan_.table_notes.push_back((*fix)->note);
    return {};
  }

  // Reads again with missing fields padded with NULL and extra fields in extra columns,
  // keeping the delimiter: sniffing a ragged file afresh can settle on another one.
  Result<void> Repad() {
    padded_ = true;
    std::string o = Dialect(true);
    if (!user_.delimiter && !tsv_) o += ", delim = " + QuoteLiteral(s_.delimiter);
    auto resniffed = Sniff(o + ", null_padding = true", deep_);
    if (!resniffed) return std::unexpected(resniffed.error());
    const std::string delimiter = s_.delimiter;
    s_ = *resniffed;
    CleanNames();
    s_.delimiter = delimiter;
    s_.skip = user_.skip.value_or(0);
    return {};
  }

  // How much of a column Measure looks at (see there).
  enum Level { kCount, kDouble, kText, kFull };

  using ColumnStats = CsvColumnStats;

  // One pass over the file read as text: per column, how many values fit each type and
  // pattern, and which rows repeat the header. The sniffer only sampled; this saw every row.
  Result<void> Deepen() {
    // Strictness first: a stray quote far into the file is an error in strict mode.
    for (int attempt = 0;; ++attempt) {
      auto r = Measure();
      if (r) break;
      const std::string& message = r.error().message;
      if (attempt == 0 && strict_ && (Mentions(message, "quote") || Mentions(message, "columns"))) {
        strict_ = false;
        const auto line = ErrorLine(message);
        plan_.table_notes.push_back(
            "read leniently (strict_mode off): " +
            (line ? "line " + std::to_string(*line) : std::string("a line")) +
            " breaks the CSV "
            "rules (" +
            FirstLine(message).substr(0, 120) + ")");
        continue;
      }
      return std::unexpected(r.error());
    }
    return {};
  }

  Result<void> Measure() {
    std::vector<std::string> cols;
    for (const auto& [n, t] : s_.columns) cols.push_back(n);
    std::map<std::string, std::string> sniffed_type;
    for (const auto& [n, t] : s_.columns) sniffed_type[n] = t;

    // Rows that repeat the header: every field equals the header's field as written (DuckDB
    // renames duplicate names, id,name,name -> name_1, so the names alone would not match).
    std::string header_row = "false";
    if (s_.header && !cols.empty()) {
      std::vector<std::string> written = cols;
      if (auto head = RawLines(s_.skip + 1);
          head && static_cast<int64_t>(head->size()) == s_.skip + 1 && !s_.delimiter.empty() &&
          (s_.quote.empty() || head->back().find(s_.quote) == std::string::npos)) {
        std::vector<std::string> fields;
        const std::string& line = head->back();
        size_t start = 0;
        for (size_t at; (at = line.find(s_.delimiter, start)) != std::string::npos;
             start = at + s_.delimiter.size()) {
          fields.push_back(line.substr(start, at - start));
        }
        fields.push_back(line.substr(start));
        if (!fields.empty() && !fields.back().empty() && fields.back().back() == '\r') {
          fields.back().pop_back();
        }
        if (fields.size() == cols.size()) written = fields;
      }
      header_row = "";
      for (size_t i = 0; i < cols.size(); ++i) {
        header_row += (header_row.empty() ? "" : " AND ") + QuoteIdent(cols[i]) + " = " +
                      QuoteLiteral(written[i]);
      }
      header_row = "(" + header_row + ")";
    }
    // Columns are measured in groups, and without FILTER clauses: DuckDB runs each filtered
    // aggregate as its own pass over the chunk, so 13,000 of them took over 20 GB.
    const std::string rejects = "quarry_rejects";
    int64_t total = 0;
    // A repeated header is a line equal to the header line: one cheap pass over raw lines
    // instead of a comparison per column.
    int64_t header_rows = 0;
    if (s_.header) {
      auto head = RawLines(s_.skip + 1);
      if (!head) return std::unexpected(head.error());
      if (static_cast<int64_t>(head->size()) == s_.skip + 1) {
        auto n = run_("SELECT count(*) - 1 FROM " + RawRows() +
                      " WHERE line = " + QuoteLiteral(head->back()));
        if (!n) return std::unexpected(n.error());
        header_rows = std::max<int64_t>(0, std::stoll(n->front()[0].value_or("0")));
      }
    }
    // What each column needs measured: a column the whole-file sniff typed as a number, date
    // or boolean needs only its count; DOUBLE, whether it is really long integers; text, the
    // patterns, but only when some value starts like a number. Patterns on 17 M rows of text
    // cost minutes, so they run only where they can change the reading.
    std::vector<int> level(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
      const std::string& t = sniffed_type[cols[i]];
      level[i] = header_rows > 0  ? kFull
                 : t == "VARCHAR" ? kText
                 : t == "DOUBLE"  ? kDouble
                                  : kCount;
    }
    std::vector<ColumnStats> stats_by_column(cols.size());
    // The quality checks (csv_quality.cc) count in the same pass, on every row only: a sample's
    // copies or totals are no count to give. Very wide and very large files skip them: their
    // DISTINCT counts hold every distinct value (or row) in memory, as the profile's exact
    // counts would (kExactBytes).
    std::error_code size_error;
    const auto bytes = std::filesystem::file_size(path_, size_error);
    const bool quality = !sample_ && cols.size() <= kQualityColumns && !size_error &&
                         bytes <= static_cast<uintmax_t>(kExactBytes);
    int64_t distinct_rows = -1;
    auto measure = [&](const std::vector<size_t>& which, bool first_pass) -> Result<bool> {
      for (size_t from = 0; from == 0 || from < which.size(); from += kColumnsPerQuery) {
        const size_t to = std::min(which.size(), from + kColumnsPerQuery);
        std::string sql = "SELECT count(*)";
        const bool whole_rows = quality && first_pass && from == 0;
        if (whole_rows) {
          std::vector<std::string> quoted;
          for (const auto& c : cols) quoted.push_back(QuoteIdent(c));
          sql += ", " + CsvDistinctRowsAggregate(quoted);
        }
        std::vector<std::pair<size_t, std::vector<int64_t ColumnStats::*>>> layout;
        for (size_t w = from; w < to; ++w) {
          const size_t i = which[w];
          const std::string q = QuoteIdent(cols[i]);
          const std::string v = "trim(" + q + ")";
          std::vector<int64_t ColumnStats::*> fields = {&ColumnStats::non_null};
          sql += ", count(" + q + ")";
          auto add = [&](int64_t ColumnStats::*field, const std::string& expr) {
            fields.push_back(field);
            sql += ", " + expr;
          };
          auto matches = [&](const char* pattern) {
            return "count_if(regexp_full_match(" + v + ", '" + pattern + "'))";
          };
          if (level[i] == kDouble || level[i] == kFull) {
            // Past 1.8e308: a DOUBLE's infinity, or an integer part of over 308 digits.
            add(&ColumnStats::infinite, "count_if((isinf(TRY_CAST(" + q +
                                            " AS DOUBLE)) AND NOT contains(lower(" + v +
                                            "), 'inf')) OR length(ltrim(replace(regexp_extract(" +
                                            v + ", '[0-9][0-9,]*'), ',', ''), '0')) > 308)");
            // An integer part of more than 17 digits: ids a DOUBLE would merge. Long decimals
            // (3.14159265358979323846) are only more precise than a DOUBLE, which is no news.
            add(&ColumnStats::long_digits, "count_if(length(ltrim(replace(regexp_extract(" + v +
                                               ", '[0-9][0-9,]*'), ',', "
                                               "''), '0')) > 17)");
            add(&ColumnStats::ints, matches("[+-]?[0-9]{1,18}"));
            add(&ColumnStats::long_ints, matches("[+-]?[0-9]{19,38}"));
            add(&ColumnStats::too_long, matches("[+-]?[0-9]{39,}"));
            add(&ColumnStats::leading_zero, matches("[+-]?0[0-9]+"));
          }
          if (level[i] == kText) {
            // Numbers written for people start with a bracket, a currency or Excel's '="'.
            const std::string currency = "(" + CsvCurrencyPattern() + ")";
            add(&ColumnStats::numeric_start, "count_if(regexp_matches(" + v +
                                                 ", '^([+−-]?[.]?[0-9]|[(](" + currency +
                                                 "\\s?)?[0-9]|[+−-]?" + currency + "|=\")'))");
            if (quality) {
              const std::vector<std::string> checks = CsvTextQualityAggregates(q);
              add(&ColumnStats::distinct, checks[0]);
              add(&ColumnStats::distinct_folded, checks[1]);
              add(&ColumnStats::total_labels, checks[2]);
              add(&ColumnStats::with_unit, checks[3]);
            }
          }
          if (level[i] == kFull) {
            const std::string dot =
                "regexp_full_match(" + v + ", '" + CsvPeopleNumberPattern(false) + "')";
            const std::string comma =
                "regexp_full_match(" + v + ", '" + CsvPeopleNumberPattern(true) + "')";
            const std::string people = "(" + dot + " OR " + comma + ")";
            add(&ColumnStats::people, "count_if(" + dot + ")");
            add(&ColumnStats::people_comma, "count_if(" + comma + ")");
            add(&ColumnStats::paren, "count_if(" + people + " AND contains(" + v + ", '('))");
            add(&ColumnStats::trailing_minus,
                "count_if(" + people + " AND ends_with(" + v + ", '-'))");
            add(&ColumnStats::minus_sign, "count_if(" + people + " AND contains(" + v + ", '−'))");
            add(&ColumnStats::space_grouped,
                "count_if(" + people + " AND " + CsvSpaceGrouped(v) + ")");
            const std::string point =
                people + " AND contains(" + v + ", '.') AND NOT contains(" + v + ", ',')";
            add(&ColumnStats::with_point, "count_if(" + point + ")");
            add(&ColumnStats::three_decimals,
                "count_if(" + point + " AND regexp_matches(" + v + ", '[.][0-9]{3}([^0-9]|$)'))");
            add(&ColumnStats::credit_debit,
                "count_if(regexp_full_match(" + v + ", '(" + CsvPeopleNumberPattern(false) + "|" +
                    CsvPeopleNumberPattern(true) + ")\\s?(CR|DR|Cr|Dr|cr|dr)'))");
            add(&ColumnStats::percent, "count_if(" + people + " AND contains(" + v + ", '%'))");
            const std::string kind = CsvCurrencyKind(v);
            add(&ColumnStats::currency, "count_if(" + people + " AND " + kind + " IS NOT NULL)");
            add(&ColumnStats::currency_kinds,
                "count(DISTINCT CASE WHEN " + people + " THEN " + kind + " END)");
            std::string kinds;
            for (const std::string& k : CsvCurrencies()) {
              kinds += (kinds.empty() ? "" : ", ") + QuoteLiteral(k);
            }
            add(&ColumnStats::currency_sign, "max(list_position([" + kinds + "], " + kind + "))");
            add(&ColumnStats::excel_text, "count_if(regexp_full_match(" + v + ", '=\"[^\"]*\"'))");
          }
          if (level[i] == kFull) {
            add(&ColumnStats::doubles, "count(TRY_CAST(" + q + " AS DOUBLE))");
            add(&ColumnStats::decimal_comma,
                matches(
                    "[+-]?([0-9]{1,3}(\\.[0-9]{3})+|[0-9]+),[0-9]+|[+-]?[0-9]{1,3}(\\.[0-9]{3})+"));
            add(&ColumnStats::thousands, matches("[+-]?[0-9]{1,3}(,[0-9]{3})+(\\.[0-9]+)?"));
            add(&ColumnStats::thousands_decimals, matches("[+-]?[0-9]{1,3}(,[0-9]{3})+\\.[0-9]+"));
            add(&ColumnStats::dates, "count(TRY_CAST(" + q + " AS DATE))");
            add(&ColumnStats::timestamps, "count(TRY_CAST(" + q + " AS TIMESTAMP))");
          }
          if (level[i] == kText || level[i] == kFull) {
            add(&ColumnStats::markers, "count_if(lower(" + v + ") IN (" + kMarkerList + "))");
            add(&ColumnStats::upper_codes, matches("[A-Z]{2,3}"));
          }
          if (level[i] == kFull) {
            // A sentinel is the smallest or largest number; FindSentinels looks closer.
            sql += ", CAST(min(" + CsvLeadingNumber(q) + ") AS VARCHAR), CAST(max(" +
                   CsvLeadingNumber(q) + ") AS VARCHAR)";
          }
          layout.emplace_back(i, std::move(fields));
        }
        // The first query also records the lines a strict reading refuses.
        const bool record = first_pass && from == 0;
        const std::string rows = sample_ ? "(SELECT * FROM " + Reader(true) + " LIMIT " +
                                               std::to_string(kSampleRows) + ")"
                                         : Reader(true, record ? RejectsOptions(rejects) : "");
        auto stats = run_(sql + " FROM " + rows);
        if (!stats) return std::unexpected(stats.error());
        if (record && !padded_ && !sample_) {
          // Lines with missing or extra fields were left out of this pass: read them padded.
          auto ragged =
              run_("SELECT count(*) FROM " + rejects +
                   " WHERE CAST(error_type AS VARCHAR) IN ('MISSING COLUMNS', 'TOO MANY COLUMNS')");
          if (ragged && !ragged->empty() && ragged->front()[0].value_or("0") != "0") {
            if (auto r = NoteRejects(rejects); !r) return std::unexpected(r.error());
            if (auto r = Repad(); !r) return std::unexpected(r.error());
            return false;
          }
        }
        if (stats->size() != 1)
          return Fail(Error::Code::kInternal, "loader statistics returned no row");
        const auto& row = stats->front();
        auto num = [&](size_t k) { return std::stoll(row[k].value_or("0")); };
        total = num(0);
        size_t k = 1;
        if (whole_rows) distinct_rows = num(k++);
        for (const auto& [i, fields] : layout) {
          ColumnStats& st = stats_by_column[i];
          for (auto field : fields) st.*field = num(k++);
          if (level[i] == kFull) {
            st.lead_low = row[k++];
            st.lead_high = row[k++];
          }
          // The header rows were counted as text values of every column; take them out.
          if (first_pass) st.non_null -= header_rows;
        }
      }
      return true;
    };
    std::vector<size_t> all(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) all[i] = i;
    auto first = measure(all, true);
    if (!first) return std::unexpected(first.error());
    if (!*first) return Measure();  // read padded now
    // Text columns with values that start like numbers get the full set of patterns.
    std::vector<size_t> numeric_text;
    for (size_t i = 0; i < cols.size(); ++i) {
      if (level[i] == kText && stats_by_column[i].numeric_start > 0) {
        level[i] = kFull;
        numeric_text.push_back(i);
      }
    }
    if (!numeric_text.empty()) {
      const auto kept = stats_by_column;
      auto second = measure(numeric_text, false);
      if (!second) return std::unexpected(second.error());
      for (size_t i : numeric_text) stats_by_column[i].non_null = kept[i].non_null;
    }
    if (padded_ && !noted_rejects_ && !sample_) {
      if (auto r = NoteRaggedLines(rejects); !r) return r;
    }
    if (auto r = NoteRejects(rejects); !r) return r;
    if (auto r = FindMissingValues(cols, level, stats_by_column); !r) return r;
    for (ColumnStats& st : stats_by_column) {
      // Among codes of capital letters, 'NA' is a code (Namibia), not a missing value.
      if (st.markers == 0 || st.upper_codes < st.non_null) continue;
      std::erase_if(st.marker_values, [&](const ValueCount& m) {
        const bool code = m.value.size() >= 2 && m.value.size() <= 3 &&
                          std::all_of(m.value.begin(), m.value.end(),
                                      [](char c) { return c >= 'A' && c <= 'Z'; });
        if (code) st.markers -= m.rows;
        return code;
      });
    }
    std::string select;
    bool transformed = header_rows > 0;
    std::vector<CsvReading> readings;
    for (size_t i = 0; i < cols.size(); ++i) {
      const auto it = sniffed_type.find(cols[i]);
      const std::string sniffed = it != sniffed_type.end() ? it->second : "VARCHAR";
      const bool user_typed = std::any_of(user_.types.begin(), user_.types.end(),
                                          [&](const auto& t) { return t.first == cols[i]; });
      const std::string typed = Typed(QuoteIdent(cols[i]), sniffed);
      readings.push_back(DecideCsvColumn({cols[i], sniffed, typed, user_typed, header_rows > 0},
                                         stats_by_column[i], plan_.column_notes[cols[i]]));
      if (readings.back().expr != typed) transformed = true;
      select += (select.empty() ? "" : ", ") + readings.back().expr + " AS " + QuoteIdent(cols[i]);
    }
    const std::string data_rows =
        header_rows > 0 ? " WHERE NOT coalesce(" + header_row + ", false)" : "";
    if (quality) {
      // A header repeated mid-file is one distinct row among the data's: not a copy to count.
      const int64_t distinct = distinct_rows - (header_rows > 0 ? 1 : 0);
      if (auto r = NoteCsvQuality(run_, "(SELECT * FROM " + Reader(true) + data_rows + ")", cols,
                                  readings, stats_by_column, total - header_rows, distinct,
                                  plan_.table_notes, plan_.column_notes);
          !r) {
        return r;
      }
    }
    if (header_rows > 0) {
      plan_.table_notes.push_back(Plural(header_rows, "row repeats", "rows repeat") +
                                  " the header mid-file (concatenated exports) and " +
                                  (header_rows == 1 ? "was" : "were") + " dropped" + HeaderLines() +
                                  ": " + std::to_string(total - header_rows) + " data rows remain");
    }
    if (!transformed) {
      // The sniffer was right about every column: read typed, which is also faster.
      plan_.select = "SELECT * FROM " + Reader(false);
    } else {
      plan_.select = "SELECT " + select + " FROM " + Reader(true) + data_rows;
    }
    return {};
  }

  // Which markers the columns that hold some are, and the sentinels among the numbers that
  // text columns start with: one more look at those columns only.
  Result<void> FindMissingValues(const std::vector<std::string>& cols,
                                 const std::vector<int>& level, std::vector<ColumnStats>& stats) {
    const std::string rows = "(SELECT * FROM " + Reader(true) +
                             (sample_ ? " LIMIT " + std::to_string(kSampleRows) : "") + ")";
    for (size_t i = 0; i < cols.size(); ++i) {
      const std::string q = QuoteIdent(cols[i]);
      if (stats[i].markers > 0) {
        auto markers = CountMarkers(run_, rows, q);
        if (!markers) return std::unexpected(markers.error());
        stats[i].marker_values = std::move(*markers);
      }
      if (level[i] == kFull) {
        auto found = FindSentinels(run_, rows, CsvLeadingNumber(q), ParseNumber(stats[i].lead_low),
                                   ParseNumber(stats[i].lead_high));
        if (!found) return std::unexpected(found.error());
        stats[i].sentinels = std::move(*found);
      }
    }
    return {};
  }

  // `q` (text) as `type`, reading dates and timestamps in the format the sniffer found
  // (01.03.2024 is no ISO date, and a plain CAST would refuse it).
  std::string Typed(const std::string& q, const std::string& type) const {
    if (type == "DATE" && !s_.date_format.empty()) {
      return "CAST(strptime(" + q + ", " + QuoteLiteral(s_.date_format) + ") AS DATE)";
    }
    if (type.starts_with("TIMESTAMP") && !s_.timestamp_format.empty()) {
      return "CAST(strptime(" + q + ", " + QuoteLiteral(s_.timestamp_format) + ") AS " + type + ")";
    }
    return "CAST(" + q + " AS " + type + ")";
  }

  // Lines the strict reading refused: named in a note (the first few), since the table keeps
  // them padded or leaves them out.
  // " (lines 4, 9)": where the header repeats, counted as a text editor counts lines. Read
  // single-threaded so the row numbers follow the file.
  std::string HeaderLines() {
    auto head = RawLines(s_.skip + 1);
    if (!head || head->empty()) return "";
    auto rows = run_("SELECT n FROM (SELECT line, row_number() OVER () AS n FROM " +
                     (sample_ ? "(SELECT * FROM " + RawReader(true) + " LIMIT " +
                                    std::to_string(kSampleRows + 1) + ")"
                              : RawReader(true)) +
                     ") WHERE line = " + QuoteLiteral(head->back()) + " AND n > " +
                     std::to_string(s_.skip + 1) + " ORDER BY n LIMIT 6");
    if (!rows || rows->empty()) return "";
    std::string out;
    for (size_t i = 0; i < rows->size() && i < 5; ++i) {
      out += (i ? ", " : "") + (*rows)[i][0].value_or("?");
    }
    return std::string(rows->size() == 1 ? " (line " : " (lines ") + out +
           (rows->size() > 5 ? ", ..." : "") + ")";
  }

  static std::string RejectsOptions(const std::string& table) {
    return ", store_rejects = true, ignore_errors = true, rejects_table = '" + table +
           "', rejects_scan = '" + table + "_scan'";
  }

  // A padded read refuses nothing, so the lines it padded are found by a strict read of the
  // header's width.
  Result<void> NoteRaggedLines(const std::string& table) {
    auto lines = RawLines(s_.skip + 1);
    if (!lines || lines->empty()) return {};
    const int64_t width =
        s_.header ? Fields(lines->back()) : static_cast<int64_t>(s_.columns.size());
    std::string cols;
    for (int64_t i = 0; i < width && i < static_cast<int64_t>(s_.columns.size()); ++i) {
      cols += (cols.empty() ? "" : ", ") + QuoteLiteral(s_.columns[static_cast<size_t>(i)].first) +
              ": 'VARCHAR'";
    }
    std::string user = Dialect(false);
    if (const auto at = user.find(", types = {"); at != std::string::npos) {
      user.erase(at, user.find('}', at) + 1 - at);
    }
    auto r =
        run_("SELECT count(*) FROM read_csv(" + lit_ + user + ", auto_detect = false, columns = {" +
             cols + "}" + RejectsOptions(table + "_strict") + ")");
    if (!r) return {};  // the notes are best effort; the padded table itself is right
    return NoteRejects(table + "_strict");
  }

  Result<void> NoteRejects(const std::string& table) {
    auto rows = run_("SELECT line, min(CAST(error_type AS VARCHAR)), any_value(csv_line) FROM " +
                     table + " GROUP BY line ORDER BY line LIMIT 6");
    run_("DROP TABLE IF EXISTS " + table).value_or(Rows{});
    run_("DROP TABLE IF EXISTS " + table + "_scan").value_or(Rows{});
    if (!rows || rows->empty()) return {};
    std::string missing, extra, other;
    int64_t n_missing = 0, n_extra = 0, n_other = 0;
    std::string last_line;
    for (const auto& r : *rows) {
      const std::string line = r[0].value_or("?");
      const std::string type = r[1].value_or("");
      // One line can be refused once per column it lacks; name it once.
      if (line == last_line) continue;
      last_line = line;
      if (type == "MISSING COLUMNS") {
        missing += (n_missing++ ? ", " : "") + line;
      } else if (type == "TOO MANY COLUMNS") {
        extra += (n_extra++ ? ", " : "") + line;
      } else if (type != "CAST") {
        other += (n_other++ ? ", " : "") + line;
      }
    }
    const std::string more = rows->size() > 5 ? " (and more)" : "";
    if (n_missing > 0) {
      plan_.table_notes.push_back(
          "rows with fewer fields than the header were padded with "
          "NULL: line " +
          missing + more);
      noted_rejects_ = true;
    }
    if (n_extra > 0) {
      plan_.table_notes.push_back(
          "rows with more fields than the header were kept, the extra "
          "fields in extra columns after the header's: line " +
          extra + more);
      noted_rejects_ = true;
    }
    if (n_other > 0 && strict_) {
      plan_.table_notes.push_back("lines that break the CSV rules: " + other + more);
    }
    return {};
  }

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

}  // namespace

std::string SampledPlanNote() {
  return "large file: read on its first " + std::to_string(kSampleRows) +
         " rows' evidence; every row is checked when its parse-cache entry is built";
}

Result<CsvPlan> PlanCsv(const RunRows& run, const std::string& abs_path, bool tsv,
                        const CsvOptions& options, bool deep) {
  Planner planner(run, abs_path, tsv, options, deep);
  auto plan = planner.Plan();
  if (!plan) return plan;
  // Check the plan reads: a short probe catches a dialect the whole-file pass did not.
  auto probe = run("SELECT * FROM (" + plan->select + ") LIMIT 1");
  if (!probe) return std::unexpected(probe.error());
  return plan;
}

}  // namespace quarry::engine::internal
