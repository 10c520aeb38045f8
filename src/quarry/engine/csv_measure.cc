// The CSV planner's whole-file pass: each column's type judged on every row (or the sample of a
// large file's first command), missing-value markers, a header repeated mid-file, and the notes
// on rows DuckDB rejected or padded. The planner's other half is csv_loader.cc.
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "quarry/engine/csv_planner_internal.h"

namespace quarry::engine::internal::csv_plan {

Result<void> Planner::Measure() {
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
    level[i] = header_rows > 0 ? kFull : t == "VARCHAR" ? kText : t == "DOUBLE" ? kDouble : kCount;
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
                                          "), 'inf')) OR length(ltrim(replace(regexp_extract(" + v +
                                          ", '[0-9][0-9,]*'), ',', ''), '0')) > 308)");
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
      const std::string rows =
          sample_ ? "(SELECT * FROM " + Reader(true) + " LIMIT " + std::to_string(kSampleRows) + ")"
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
      const bool code =
          m.value.size() >= 2 && m.value.size() <= 3 &&
          std::all_of(m.value.begin(), m.value.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
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
Result<void> Planner::FindMissingValues(const std::vector<std::string>& cols,
                                        const std::vector<int>& level,
                                        std::vector<ColumnStats>& stats) {
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
std::string Planner::Typed(const std::string& q, const std::string& type) const {
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
std::string Planner::HeaderLines() {
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

std::string Planner::RejectsOptions(const std::string& table) {
  return ", store_rejects = true, ignore_errors = true, rejects_table = '" + table +
         "', rejects_scan = '" + table + "_scan'";
}

// A padded read refuses nothing, so the lines it padded are found by a strict read of the
// header's width.
Result<void> Planner::NoteRaggedLines(const std::string& table) {
  auto lines = RawLines(s_.skip + 1);
  if (!lines || lines->empty()) return {};
  const int64_t width = s_.header ? Fields(lines->back()) : static_cast<int64_t>(s_.columns.size());
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

Result<void> Planner::NoteRejects(const std::string& table) {
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
}  // namespace quarry::engine::internal::csv_plan
