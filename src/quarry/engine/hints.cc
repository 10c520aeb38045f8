// What an "unknown name" error should tell the model: SQLite says only "no such column: x" or
// "ambiguous column name: x", where DuckDB lists candidate bindings. These helpers add the real
// names, nearest first, and the tables that share an ambiguous name.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <utility>

#include "quarry/common/text.h"
#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

constexpr size_t kMaxListed = 60;  // columns listed per table; the rest are counted
constexpr size_t kMaxTables = 8;   // tables listed when the query names none of them
constexpr size_t kMaxNearest = 3;

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

// A SQL text's tokens, as far as naming tables goes: identifiers (lowercased: bare words and
// the insides of "..", [..], `..`) and single punctuation characters. String literals and
// whitespace are skipped.
struct Token {
  std::string word;  // "" for punctuation
  char punct = 0;
};

std::vector<Token> Tokens(std::string_view sql) {
  std::vector<Token> out;
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
      out.push_back({Lower(sql.substr(i + 1, end == std::string_view::npos ? end : end - i - 1))});
      i = end == std::string_view::npos ? sql.size() : end + 1;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < sql.size() && (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_'))
        ++j;
      out.push_back({Lower(sql.substr(i, j - i))});
      i = j;
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) out.push_back({"", c});
      ++i;
    }
  }
  return out;
}

// Words that can follow a table's name in a FROM clause and are not its alias.
bool IsClauseWord(std::string_view w) {
  static constexpr std::string_view kWords[] = {
      "as",     "on",    "using",   "join",      "inner",   "left",       "right",   "full",
      "outer",  "cross", "natural", "where",     "group",   "order",      "having",  "limit",
      "offset", "union", "except",  "intersect", "window",  "qualify",    "indexed", "not",
      "select", "set",   "values",  "returning", "and",     "or",         "lateral", "positional",
      "asof",   "semi",  "anti",    "pivot",     "unpivot", "tablesample"};
  return std::find(std::begin(kWords), std::end(kWords), w) != std::end(kWords);
}

// A table the query names, with the aliases it gives it ("Track t", "Track AS t").
struct NamedTable {
  const TableCard* card = nullptr;
  std::vector<std::string> aliases;  // lowercased
};

// The tables among `cards` whose names appear in `sql` as identifiers, in the order they first
// appear. A word right after a '.' is a column, not a table.
std::vector<NamedTable> TablesNamed(std::string_view sql, const std::vector<TableCard>& cards) {
  const std::vector<Token> tokens = Tokens(sql);
  std::vector<std::pair<size_t, NamedTable>> found;  // first position, table
  for (const TableCard& card : cards) {
    const std::string name = Lower(card.name);
    std::optional<size_t> first;
    NamedTable named{&card, {}};
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].word != name || (i > 0 && tokens[i - 1].punct == '.')) continue;
      if (!first) first = i;
      if (i + 1 < tokens.size() && tokens[i + 1].punct == '.') continue;  // Track.Name
      size_t a = i + 1;
      if (a < tokens.size() && tokens[a].word == "as") ++a;
      if (a < tokens.size() && !tokens[a].word.empty() && !IsClauseWord(tokens[a].word) &&
          (a + 1 >= tokens.size() || tokens[a + 1].punct != '.') &&
          std::find(named.aliases.begin(), named.aliases.end(), tokens[a].word) ==
              named.aliases.end()) {
        named.aliases.push_back(tokens[a].word);
      }
    }
    if (first) found.emplace_back(*first, std::move(named));
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<NamedTable> out;
  for (auto& f : found) out.push_back(std::move(f.second));
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
  // table, or is its alias, puts that table first.
  std::string qualifier;
  std::string column(missing);
  if (const size_t dot = missing.rfind('.'); dot != std::string_view::npos) {
    qualifier = Lower(missing.substr(0, dot));
    column = std::string(missing.substr(dot + 1));
  }
  std::vector<NamedTable> named = TablesNamed(sql, cards);
  auto qualified = [&](const NamedTable& t) {
    return !qualifier.empty() &&
           (Lower(t.card->name) == qualifier ||
            std::find(t.aliases.begin(), t.aliases.end(), qualifier) != t.aliases.end());
  };
  std::stable_partition(named.begin(), named.end(), qualified);
  std::vector<const TableCard*> tables;
  for (const NamedTable& t : named) tables.push_back(t.card);
  const bool any_named = !tables.empty();
  if (!any_named) {
    for (size_t i = 0; i < cards.size() && i < kMaxTables; ++i) tables.push_back(&cards[i]);
  }
  if (tables.empty()) return "";
  // The qualifier's table's near columns first, then the nearest of the others.
  struct Near {
    bool other_table;
    size_t nearness;
    std::string name;
  };
  std::vector<Near> near;
  for (size_t t = 0; t < tables.size(); ++t) {
    const bool other = !(t < named.size() && qualified(named[t]));
    for (const ColumnCard& c : tables[t]->columns) {
      if (auto n = Nearness(column, c.name)) {
        near.push_back({other, *n, tables[t]->name + "." + c.name});
      }
    }
  }
  std::stable_sort(near.begin(), near.end(), [](const Near& a, const Near& b) {
    return std::pair(a.other_table, a.nearness) < std::pair(b.other_table, b.nearness);
  });
  std::string out;
  if (!near.empty()) {
    out += ". Did you mean ";
    for (size_t i = 0; i < near.size() && i < kMaxNearest; ++i) {
      out +=
          (i ? (i + 1 == std::min(near.size(), kMaxNearest) ? " or " : ", ") : "") + near[i].name;
    }
    out += "?";
  }
  out += (out.empty() ? ". " : " ") + std::string(any_named
                                                      ? "Columns of the tables this query names: "
                                                      : "Columns of the tables: ");
  for (size_t i = 0; i < tables.size(); ++i) {
    out += (i ? "; " : "") + tables[i]->name + "(" + ColumnList(*tables[i]) + ")";
  }
  if (!any_named && cards.size() > tables.size()) {
    out += "; and " + std::to_string(cards.size() - tables.size()) + " more tables";
  }
  return out;
}

std::string AmbiguousColumnHint(std::string_view column, std::string_view sql,
                                const std::vector<TableCard>& cards) {
  const std::string wanted = Lower(column);
  std::vector<std::string> holders, qualified;
  for (const NamedTable& t : TablesNamed(sql, cards)) {
    const auto col = std::find_if(t.card->columns.begin(), t.card->columns.end(),
                                  [&](const ColumnCard& c) { return Lower(c.name) == wanted; });
    if (col == t.card->columns.end()) continue;
    std::string holder = t.card->name;
    for (size_t i = 0; i < t.aliases.size(); ++i) holder += (i ? ", " : " (as ") + t.aliases[i];
    if (!t.aliases.empty()) holder += ")";
    holders.push_back(holder);
    // Once the query gives a table an alias, SQLite knows it only by the alias.
    if (t.aliases.empty()) qualified.push_back(t.card->name + "." + col->name);
    for (const std::string& alias : t.aliases) qualified.push_back(alias + "." + col->name);
  }
  if (qualified.size() < 2) {
    return ". More than one table in the query has this column: qualify it with its table's "
           "name or alias (table.column)";
  }
  std::string out = ". These tables in the query have a column " + std::string(column) + ": ";
  for (size_t i = 0; i < holders.size(); ++i) out += (i ? ", " : "") + holders[i];
  out += ". Qualify it with the table's name or alias: ";
  for (size_t i = 0; i < qualified.size(); ++i) {
    out += (i ? (i + 1 == qualified.size() ? " or " : ", ") : "") + qualified[i];
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
