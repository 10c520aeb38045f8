// Which tables a question is about, without a model: SQLite FTS5 and bm25 over the schema cards'
// words, in an in-memory database of its own. The agent asks it when the schema does not fit
// the prompt's budget.
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine {
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Words that say nothing about which table is meant.
const std::set<std::string>& StopWords() {
  static const std::set<std::string> words = {
      "a",     "about", "all",    "an",    "and",  "any",  "are",   "as",   "at",
      "be",    "by",    "can",    "data",  "did",  "do",   "does",  "each", "for",
      "from",  "give",  "had",    "has",   "have", "how",  "i",     "in",   "is",
      "it",    "its",   "list",   "many",  "me",   "much", "of",    "on",   "or",
      "show",  "table", "tables", "than",  "that", "the",  "their", "them", "there",
      "these", "they",  "this",   "to",    "was",  "we",   "were",  "what", "when",
      "where", "which", "who",    "whose", "why",  "with", "would", "you",  "your"};
  return words;
}

// Splits text into lower-case words at anything that is not a letter or digit (bytes of
// multi-byte UTF-8 characters count as letters) and at camelCase humps.
std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool letter = std::isalnum(c) || c >= 0x80;
    if (!letter) {
      flush();
      continue;
    }
    const bool hump =
        std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(text[i - 1]));
    if (hump) flush();
    word += static_cast<char>(std::tolower(c));
  }
  flush();
  return out;
}

std::string JoinWords(std::string_view text) {
  std::string out;
  for (const std::string& w : Words(text)) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The FTS5 query: every useful word of the question as a quoted term, OR'ed.
std::string MatchQuery(std::string_view question) {
  std::set<std::string> seen;
  std::string out;
  for (const std::string& w : Words(question)) {
    const bool number = std::all_of(
        w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (StopWords().contains(w) || (number && w.size() < 4) || (!number && w.size() < 2)) continue;
    if (!seen.insert(w).second) continue;
    std::string quoted = "\"";
    for (char c : w) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    out += (out.empty() ? "" : " OR ") + quoted + "\"";
  }
  return out;
}

Error SqliteError(sqlite3* db, const std::string& what) {
  return Error{Error::Code::kInternal, "table search: " + what + ": " + sqlite3_errmsg(db)};
}

}  // namespace

Result<std::vector<TableMatch>> RankTables(const std::vector<TableCard>& cards,
                                           std::string_view question) {
  const std::string match = MatchQuery(question);
  if (match.empty() || cards.empty()) return std::vector<TableMatch>{};
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK)
    return std::unexpected(SqliteError(raw, "cannot open an in-memory database"));
  // The name keeps its original spelling too, so "InvoiceLine" in a question finds InvoiceLine.
  if (sqlite3_exec(db.get(),
                   "CREATE VIRTUAL TABLE cards USING fts5(name, columns, notes, samples, "
                   "tokenize = 'porter unicode61')",
                   nullptr, nullptr, nullptr) != SQLITE_OK) {
    return std::unexpected(SqliteError(db.get(), "cannot create the FTS5 index"));
  }
  sqlite3_stmt* insert_raw = nullptr;
  if (sqlite3_prepare_v2(
          db.get(),
          "INSERT INTO cards(rowid, name, columns, notes, samples) VALUES (?, ?, ?, ?, ?)", -1,
          &insert_raw, nullptr) != SQLITE_OK) {
    return std::unexpected(SqliteError(db.get(), "cannot prepare the index insert"));
  }
  StmtPtr insert(insert_raw);
  sqlite3_exec(db.get(), "BEGIN", nullptr, nullptr, nullptr);
  for (size_t i = 0; i < cards.size(); ++i) {
    const TableCard& t = cards[i];
    const std::string name = t.name + " " + JoinWords(t.name);
    std::string columns;
    std::string notes;
    std::string samples;
    for (const ColumnCard& c : t.columns) {
      columns += c.name + " " + JoinWords(c.name) + "\n";
      for (const std::string& n : c.notes) notes += n + "\n";
      for (const std::string& s : c.samples) samples += s.substr(0, 200) + "\n";
    }
    for (const std::string& n : t.notes) notes += n + "\n";
    sqlite3_reset(insert.get());
    sqlite3_bind_int64(insert.get(), 1, static_cast<sqlite3_int64>(i) + 1);
    sqlite3_bind_text(insert.get(), 2, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    sqlite3_bind_text(insert.get(), 3, columns.data(), static_cast<int>(columns.size()),
                      SQLITE_STATIC);
    sqlite3_bind_text(insert.get(), 4, notes.data(), static_cast<int>(notes.size()), SQLITE_STATIC);
    sqlite3_bind_text(insert.get(), 5, samples.data(), static_cast<int>(samples.size()),
                      SQLITE_STATIC);
    if (sqlite3_step(insert.get()) != SQLITE_DONE) {
      return std::unexpected(SqliteError(db.get(), "cannot index table " + t.name));
    }
  }
  sqlite3_exec(db.get(), "COMMIT", nullptr, nullptr, nullptr);

  sqlite3_stmt* query_raw = nullptr;
  if (sqlite3_prepare_v2(db.get(),
                         "SELECT rowid, bm25(cards, 10.0, 4.0, 2.0, 1.0) AS rank FROM cards "
                         "WHERE cards MATCH ? ORDER BY rank, rowid",
                         -1, &query_raw, nullptr) != SQLITE_OK) {
    return std::unexpected(SqliteError(db.get(), "cannot prepare the search"));
  }
  StmtPtr query(query_raw);
  sqlite3_bind_text(query.get(), 1, match.data(), static_cast<int>(match.size()), SQLITE_STATIC);
  std::vector<TableMatch> out;
  int step = SQLITE_ROW;
  while ((step = sqlite3_step(query.get())) == SQLITE_ROW) {
    const auto row = sqlite3_column_int64(query.get(), 0);
    out.push_back({static_cast<size_t>(row - 1), -sqlite3_column_double(query.get(), 1)});
  }
  if (step != SQLITE_DONE) return std::unexpected(SqliteError(db.get(), "search failed"));
  return out;
}

}  // namespace quarry::engine
