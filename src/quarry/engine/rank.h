// Relevance of short documents to a question without a model: SQLite FTS5 and bm25, in an
// in-memory database of its own. Schema cards (RankTables) and knowledge files rank through it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quarry/common/common.h"

namespace quarry::engine {

// One document's relevance (RankDocuments).
struct RankedDocument {
  size_t document = 0;  // index into the documents
  double score = 0;     // -bm25: higher is more relevant
};

// Ranks `documents`, each the same number of fields (1 to 8), by relevance to `question`: an FTS5
// index (tokenizer "porter unicode61") queried with the question's words (OR; stop words, words
// of one letter and numbers of fewer than 4 digits dropped) and ordered by bm25 with `weights`,
// one per field. Only documents that share a word with the question are returned, best first,
// ties in document order. Errors: kInternal when SQLite cannot build the index (no FTS5), or the
// fields and weights disagree in number.
Result<std::vector<RankedDocument>> RankDocuments(
    const std::vector<std::vector<std::string>>& documents, const std::vector<double>& weights,
    std::string_view question);

// `text`'s words, lower case, split at anything that is not a letter or digit (bytes of
// multi-byte UTF-8 characters count as letters) and at camelCase humps, joined by spaces:
// "InvoiceLine" is "invoice line", so a question's words find it.
std::string JoinWords(std::string_view text);

}  // namespace quarry::engine
