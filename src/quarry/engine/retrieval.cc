// Which tables a question is about, without a model: SQLite FTS5 and bm25 over the schema cards'
// words, in an in-memory database of its own. The agent asks it when the schema does not fit
// the prompt's budget.
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>

#include "quarry/engine/engine_internal.h"
#include "quarry/engine/rank.h"

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

std::string JoinWords(std::string_view text) {
  std::string out;
  for (const std::string& w : Words(text)) out += (out.empty() ? "" : " ") + w;
  return out;
}

Result<std::vector<RankedDocument>> RankDocuments(
    const std::vector<std::vector<std::string>>& documents, const std::vector<double>& weights,
    std::string_view question) {
  if (weights.empty() || weights.size() > 8) {
    return Fail(Error::Code::kInternal,
                "document search: 1 to 8 fields, not " + std::to_string(weights.size()));
  }
  const std::string match = MatchQuery(question);
  if (match.empty() || documents.empty()) return std::vector<RankedDocument>{};
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK)
    return std::unexpected(SqliteError(raw, "cannot open an in-memory database"));
  std::string fields, params, bm25;
  for (size_t f = 0; f < weights.size(); ++f) {
    fields += "f" + std::to_string(f) + ", ";
    params += ", ?";
    bm25 += ", " + std::to_string(weights[f]);
  }
  if (sqlite3_exec(
          db.get(),
          ("CREATE VIRTUAL TABLE docs USING fts5(" + fields + "tokenize = 'porter unicode61')")
              .c_str(),
          nullptr, nullptr, nullptr) != SQLITE_OK) {
    return std::unexpected(SqliteError(db.get(), "cannot create the FTS5 index"));
  }
  sqlite3_stmt* insert_raw = nullptr;
  const std::string insert_sql = "INSERT INTO docs VALUES (" + params.substr(2) + ")";
  if (sqlite3_prepare_v2(db.get(), insert_sql.c_str(), -1, &insert_raw, nullptr) != SQLITE_OK) {
    return std::unexpected(SqliteError(db.get(), "cannot prepare the index insert"));
  }
  StmtPtr insert(insert_raw);
  sqlite3_exec(db.get(), "BEGIN", nullptr, nullptr, nullptr);
  for (size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].size() != weights.size()) {
      return Fail(Error::Code::kInternal, "document search: document " + std::to_string(i) +
                                              " has " + std::to_string(documents[i].size()) +
                                              " fields, not " + std::to_string(weights.size()));
    }
    sqlite3_reset(insert.get());
    for (size_t f = 0; f < weights.size(); ++f) {
      const std::string& text = documents[i][f];
      sqlite3_bind_text(insert.get(), static_cast<int>(f) + 1, text.data(),
                        static_cast<int>(text.size()), SQLITE_STATIC);
    }
    if (sqlite3_step(insert.get()) != SQLITE_DONE) {
      return std::unexpected(SqliteError(db.get(), "cannot index document " + std::to_string(i)));
    }
  }
  sqlite3_exec(db.get(), "COMMIT", nullptr, nullptr, nullptr);

  sqlite3_stmt* query_raw = nullptr;
  const std::string query_sql = "SELECT rowid, bm25(docs" + bm25 +
                                ") AS rank FROM docs WHERE docs MATCH ? ORDER BY rank, rowid";
  if (sqlite3_prepare_v2(db.get(), query_sql.c_str(), -1, &query_raw, nullptr) != SQLITE_OK) {
    return std::unexpected(SqliteError(db.get(), "cannot prepare the search"));
  }
  StmtPtr query(query_raw);
  sqlite3_bind_text(query.get(), 1, match.data(), static_cast<int>(match.size()), SQLITE_STATIC);
  std::vector<RankedDocument> out;
  int step = SQLITE_ROW;
  while ((step = sqlite3_step(query.get())) == SQLITE_ROW) {
    const auto row = sqlite3_column_int64(query.get(), 0);  // rowids from 1, in insert order
    out.push_back({static_cast<size_t>(row - 1), -sqlite3_column_double(query.get(), 1)});
  }
  if (step != SQLITE_DONE) return std::unexpected(SqliteError(db.get(), "search failed"));
  return out;
}

Result<std::vector<TableMatch>> RankTables(const std::vector<TableCard>& cards,
                                           std::string_view question) {
  // The name keeps its original spelling too, so "InvoiceLine" in a question finds InvoiceLine.
  std::vector<std::vector<std::string>> documents;
  for (const TableCard& t : cards) {
    std::string columns, notes, samples;
    for (const ColumnCard& c : t.columns) {
      columns += c.name + " " + JoinWords(c.name) + "\n";
      for (const std::string& n : c.notes) notes += n + "\n";
      for (const std::string& s : c.samples) samples += s.substr(0, 200) + "\n";
    }
    for (const std::string& n : t.notes) notes += n + "\n";
    documents.push_back({t.name + " " + JoinWords(t.name), columns, notes, samples});
  }
  auto ranked = RankDocuments(documents, {10.0, 4.0, 2.0, 1.0}, question);
  if (!ranked) return std::unexpected(ranked.error());
  std::vector<TableMatch> out;
  for (const RankedDocument& r : *ranked) out.push_back({r.document, r.score});
  return out;
}

}  // namespace quarry::engine
