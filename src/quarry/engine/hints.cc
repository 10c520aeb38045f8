// What an "unknown name" error should tell the model: SQLite says only "no such column: x",
// where DuckDB lists candidate bindings. These helpers add the real names, nearest first.
#include <algorithm>
#include <cctype>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

constexpr size_t kMaxListed = 60;  // columns listed per table; the rest are counted
constexpr size_t kMaxTables = 8;   // tables listed when the query names none of them
constexpr size_t kMaxNearest = 3;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Lowercase letters and digits only: "Total Sales ($)" and total_sales meet as "totalsales".
std::string Folded(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// Edit distance with adjacent transpositions (optimal string alignment: "nmae" is one edit
// from "name"); names longer than 64 bytes are compared on their first 64.
size_t EditDistance(std::string_view a, std::string_view b) {
  a = a.substr(0, 64);
  b = b.substr(0, 64);
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// How near `candidate` is to `wanted`, lower is nearer; nullopt when not near at all. Names
// equal but for case and punctuation come first, then small edit distances, then containment.
std::optional<size_t> Nearness(std::string_view wanted, std::string_view candidate) {
  const std::string w = Folded(wanted), c = Folded(candidate);
  if (w.empty() || c.empty()) return std::nullopt;
  if (Lower(wanted) == Lower(candidate) || w == c) return 0;
  const size_t d = EditDistance(Lower(wanted), Lower(candidate));
  // One edit for names of up to 3 characters, else up to a third of the shorter name (two at
  // least).
  const size_t shorter = std::min(wanted.size(), candidate.size());
  if (d <= (shorter <= 3 ? 1 : std::max<size_t>(2, shorter / 3))) return 1 + d;
  if (std::min(w.size(), c.size()) >= 3 &&
      (w.find(c) != std::string::npos || c.find(w) != std::string::npos)) {
    return 100 + (std::max(w.size(), c.size()) - std::min(w.size(), c.size()));
  }
  return std::nullopt;
}

// The identifiers of a SQL text, lowercased: bare words and the insides of "..", [..], `..`.
// String literals are skipped.
std::vector<std::string> Identifiers(std::string_view sql) {
  std::vector<std::string> out;
  for (size_t i = 0; i < sql.size();) {
    const char c = sql[i];
    if (c == '\'') {
      for (++i; i < sql.size(); ++i) {
        if (sql[i] == '\'' && (i + 1 >= sql.size() || sql[i + 1] != '\'')) break;
        if (sql[i] == '\'') ++i;
      }
      ++i;
    } else if (c == '"' || c == '`' || c == '[') {
      const char close = c == '[' ? ']' : c;
      const size_t end = sql.find(close, i + 1);
      out.push_back(Lower(sql.substr(i + 1, end == std::string_view::npos ? end : end - i - 1)));
      i = end == std::string_view::npos ? sql.size() : end + 1;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < sql.size() && (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_'))
        ++j;
      out.push_back(Lower(sql.substr(i, j - i)));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

std::string ColumnList(const TableCard& card) {
  std::string out;
  for (size_t i = 0; i < card.columns.size() && i < kMaxListed; ++i) {
    out += (i ? ", " : "") + card.columns[i].name;
  }
  if (card.columns.size() > kMaxListed) {
    out += ", ... " + std::to_string(card.columns.size() - kMaxListed) +
           " more (inspect_schema with `table` lists them)";
  }
  return out;
}

}  // namespace

std::string NoSuchColumnHint(std::string_view missing, std::string_view sql,
                             const std::vector<TableCard>& cards) {
  // "t.col" or "alias.col": the column part is what to look for; a table part that names a
  // table narrows the search to it.
  std::string qualifier;
  std::string column(missing);
  if (const size_t dot = missing.rfind('.'); dot != std::string_view::npos) {
    qualifier = Lower(missing.substr(0, dot));
    column = std::string(missing.substr(dot + 1));
  }
  const std::vector<std::string> words = Identifiers(sql);
  // The qualifier as a table's name, or as its alias: "Track t" or "Track AS t".
  auto qualifies = [&](const TableCard& card) {
    const std::string name = Lower(card.name);
    if (name == qualifier) return true;
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] != name) continue;
      if (words[i + 1] == qualifier) return true;
      if (words[i + 1] == "as" && i + 2 < words.size() && words[i + 2] == qualifier) return true;
    }
    return false;
  };
  std::vector<const TableCard*> tables;
  if (!qualifier.empty()) {
    for (const TableCard& card : cards) {
      if (qualifies(card)) tables.push_back(&card);
    }
  }
  if (tables.empty()) {
    for (const TableCard& card : cards) {
      if (std::find(words.begin(), words.end(), Lower(card.name)) != words.end())
        tables.push_back(&card);
    }
  }
  const bool named = !tables.empty();
  if (!named) {
    for (size_t i = 0; i < cards.size() && i < kMaxTables; ++i) tables.push_back(&cards[i]);
  }
  if (tables.empty()) return "";
  std::vector<std::pair<size_t, std::string>> near;
  for (const TableCard* t : tables) {
    for (const ColumnCard& c : t->columns) {
      if (auto n = Nearness(column, c.name)) near.emplace_back(*n, t->name + "." + c.name);
    }
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  if (!near.empty()) {
    out += ". Did you mean ";
    for (size_t i = 0; i < near.size() && i < kMaxNearest; ++i) {
      out +=
          (i ? (i + 1 == std::min(near.size(), kMaxNearest) ? " or " : ", ") : "") + near[i].second;
    }
    out += "?";
  }
  out += (out.empty() ? ". " : " ") + std::string(named ? "Columns of the tables this query names: "
                                                        : "Columns of the tables: ");
  for (size_t i = 0; i < tables.size(); ++i) {
    out += (i ? "; " : "") + tables[i]->name + "(" + ColumnList(*tables[i]) + ")";
  }
  if (!named && cards.size() > tables.size()) {
    out += "; and " + std::to_string(cards.size() - tables.size()) + " more tables";
  }
  return out;
}

std::string NoSuchTableHint(std::string_view missing, const std::vector<TableCard>& cards) {
  if (cards.empty()) return "";
  std::string bare(missing);
  if (const size_t dot = bare.rfind('.'); dot != std::string::npos) bare = bare.substr(dot + 1);
  std::vector<std::pair<size_t, std::string>> near;
  for (const TableCard& card : cards) {
    if (auto n = Nearness(bare, card.name)) near.emplace_back(*n, card.name);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  if (!near.empty()) {
    out += ". Did you mean ";
    for (size_t i = 0; i < near.size() && i < kMaxNearest; ++i)
      out += (i ? " or " : "") + near[i].second;
    out += "?";
  }
  out += out.empty() ? ". The tables are: " : " The tables are: ";
  constexpr size_t kMaxNames = 100;
  for (size_t i = 0; i < cards.size() && i < kMaxNames; ++i) out += (i ? ", " : "") + cards[i].name;
  if (cards.size() > kMaxNames)
    out += ", ... " + std::to_string(cards.size() - kMaxNames) + " more";
  return out;
}

}  // namespace quarry::engine::internal
