// The CSV loader: turns one CSV/TSV file into the SELECT that defines its table, and says what
// it decided. DuckDB's sniffer finds the dialect and types; this file judges its guesses
// against the whole file (preamble or ragged rows, a one-column file, a header repeated
// mid-file, integers past 64 bits, decimal commas, thousands separators, missing-value
// markers), retries as an analyst would (full-file sniff, the offending column as text, another
// encoding), and turns every decision into a note for the model and the user.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "quarry/engine/csv_planner_internal.h"

namespace quarry::engine::internal::csv_plan {

Result<CsvPlan> Planner::Plan() {
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
    plan_.table_notes.push_back("the file is not valid UTF-8; it was read as Latin-1 (ISO-8859-1)");
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

bool Planner::Mentions(const std::string& text, const char* what) {
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(what) != std::string::npos;
}

// The read_csv options fixed so far. `sniffing`: only what the user gave (and the encoding).
std::string Planner::Dialect(bool sniffing) const {
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
  if (!s_.timestamp_format.empty()) o += ", timestampformat = " + QuoteLiteral(s_.timestamp_format);
  if (!strict_) o += ", strict_mode = false";
  return o;
}

// A header name holding a NUL or another control character cannot be written in SQL (the
// statement's text ends at a NUL): such characters become '_', and a note says so.
void Planner::CleanNames() {
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

// The reader with the dialect and columns fixed: no sniffing at query time, so every read
// of the table sees the same columns. `as_text`: every column VARCHAR.
std::string Planner::Reader(bool as_text, const std::string& extra) const {
  std::string cols;
  for (const auto& [n, t] : s_.columns) {
    cols +=
        (cols.empty() ? "" : ", ") + QuoteLiteral(n) + ": " + QuoteLiteral(as_text ? "VARCHAR" : t);
  }
  std::string user = Dialect(false);
  // Column types are fixed in `columns` here; the user's types already shaped the sniff.
  if (const auto at = user.find(", types = {"); at != std::string::npos) {
    user.erase(at, user.find('}', at) + 1 - at);
  }
  return "read_csv(" + lit_ + user + Padding() + ", auto_detect = false, columns = {" + cols + "}" +
         extra + ")";
}

Result<Sniffed> Planner::Sniff(const std::string& options, bool full) {
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
std::string Planner::RawReader(bool ordered) const {
  return "read_csv(" + lit_ +
         ", columns = {'line': 'VARCHAR'}, delim = '', quote = '', "
         "escape = '', header = false, auto_detect = false, ignore_errors = true" +
         (encoding_ ? ", encoding = " + QuoteLiteral(*encoding_) : std::string()) +
         (long_lines_ ? ", max_line_size = 67108864" : "") + (ordered ? ", parallel = false" : "") +
         ")";
}

// The raw lines Measure looks at: all of them, or the sample's.
std::string Planner::RawRows() const {
  return sample_ ? "(SELECT * FROM " + RawReader() + " LIMIT " +
                       std::to_string(kSampleRows + s_.skip + 1) + ")"
                 : RawReader();
}

// The first physical lines: what a person sees with `head`.
Result<std::vector<std::string>> Planner::RawLines(int64_t n) {
  auto rows = run_("SELECT line FROM " + RawReader() + " LIMIT " + std::to_string(n));
  if (!rows) return std::unexpected(rows.error());
  std::vector<std::string> lines;
  for (const auto& r : *rows) lines.push_back(r[0].value_or(""));
  return lines;
}

int64_t Planner::Fields(const std::string& line) const {
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
Result<void> Planner::CheckOneColumn() {
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
Result<void> Planner::CheckOneColumnHeader() {
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
void Planner::CheckByteOrderMark() {
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
Result<void> Planner::CheckExcelSeparatorLine() {
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
Result<void> Planner::CheckQuotedTitle() {
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
Result<void> Planner::CheckHeaderDelimiter() {
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
Result<void> Planner::CheckRaggedDelimiter() {
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
Result<void> Planner::CheckSkip() {
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
std::string Planner::KeepDelimiter(const std::string& o) const {
  return o.find(", delim = ") == std::string::npos ? o + ", delim = " + QuoteLiteral(s_.delimiter)
                                                   : o;
}

// A header of years read as data, or a title line read as the header (csv_header.cc): read
// again with the header and skip it says.
Result<void> Planner::CheckHeader() {
  std::string reader = "read_csv(" + lit_ + ", delim = " + QuoteLiteral(s_.delimiter) +
                       ", quote = " + QuoteLiteral(s_.quote) +
                       ", escape = " + QuoteLiteral(s_.escape) +
                       ", all_varchar = true, null_padding = true, "
                       "strict_mode = false";
  if (encoding_) reader += ", encoding = " + QuoteLiteral(*encoding_);
  if (long_lines_) reader += ", max_line_size = 67108864";
  auto resniff = [this](int64_t skip) -> Result<CsvSniffedColumns> {
    auto s = Sniff(KeepDelimiter(Dialect(true)) + ", header = true, skip = " + std::to_string(skip),
                   deep_);
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
Result<void> Planner::Repad() {
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

// One pass over the file read as text: per column, how many values fit each type and
// pattern, and which rows repeat the header. The sniffer only sampled; this saw every row.
Result<void> Planner::Deepen() {
  // Strictness first: a stray quote far into the file is an error in strict mode.
  for (int attempt = 0;; ++attempt) {
    auto r = Measure();
    if (r) break;
    const std::string& message = r.error().message;
    if (attempt == 0 && strict_ && (Mentions(message, "quote") || Mentions(message, "columns"))) {
      strict_ = false;
      const auto line = ErrorLine(message);
      plan_.table_notes.push_back("read leniently (strict_mode off): " +
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

}  // namespace quarry::engine::internal::csv_plan

namespace quarry::engine::internal {

std::string SampledPlanNote() {
  return "large file: read on its first " + std::to_string(csv_plan::kSampleRows) +
         " rows' evidence; every row is checked when its parse-cache entry is built";
}

Result<CsvPlan> PlanCsv(const RunRows& run, const std::string& abs_path, bool tsv,
                        const CsvOptions& options, bool deep) {
  csv_plan::Planner planner(run, abs_path, tsv, options, deep);
  auto plan = planner.Plan();
  if (!plan) return plan;
  // Check the plan reads: a short probe catches a dialect the whole-file pass did not.
  auto probe = run("SELECT * FROM (" + plan->select + ") LIMIT 1");
  if (!probe) return std::unexpected(probe.error());
  return plan;
}

}  // namespace quarry::engine::internal
