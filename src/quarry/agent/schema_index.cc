// What inspect_schema says of many tables, bounded whatever their number: the index of names
// (filtered by prefix, paged by offset, with counts by prefix) and the nearest names to one
// that does not exist.
#include <algorithm>
#include <cctype>
#include <map>

#include "quarry/common/text.h"
#include "quarry/agent/agent_internal.h"

namespace quarry::agent {
namespace {

// Levenshtein distance, with one row of the table kept.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The part of a name up to and including its first '_' or '.', or the name.
std::string Group(const std::string& name) {
  const size_t at = name.find_first_of("_.");
  return at == std::string::npos || at == 0 ? name : name.substr(0, at + 1);
}

std::string Shown(const engine::TableCard& card) {
  return engine::PromptText(card.name, engine::kCardNameBytes);
}

}  // namespace

std::string TableIndex(const std::vector<engine::TableCard>& cards, const std::string& prefix,
                       size_t offset) {
  const std::string want = Lower(prefix);
  std::vector<const engine::TableCard*> match;
  for (const auto& card : cards) {
    if (Lower(card.name).starts_with(want)) match.push_back(&card);
  }
  const std::string which =
      prefix.empty() ? "" : " whose names start with '" + engine::PromptText(prefix, 80) + "'";
  if (match.empty()) {
    return "no table" + which + " (of " + std::to_string(cards.size()) +
           "); inspect_schema without `prefix` lists them all";
  }
  std::string lines;
  size_t end = std::min(offset, match.size());
  for (; end < match.size(); ++end) {
    const auto& card = *match[end];
    std::string line =
        "  " + Shown(card) + " (" +
        (card.profiled ? std::to_string(card.row_count) + " rows, " : std::string()) +
        std::to_string(card.columns.size()) + " columns)\n";
    if (lines.size() + line.size() > kIndexPageBytes) break;
    lines += line;
  }
  std::string out = std::to_string(match.size()) + (match.size() == 1 ? " table" : " tables") +
                    which + " (give `table` for one table's card)";
  if (offset > 0 || end < match.size()) {
    out += "; " + (end > offset ? std::to_string(offset + 1) + " to " + std::to_string(end)
                                : std::string("none"));
    out += " below";
    if (end < match.size()) out += ", `offset` " + std::to_string(end) + " for the next";
  }
  out += ":\n";
  // Over one page, the counts by prefix say which `prefix` narrows the list.
  if (offset == 0 && end < match.size()) {
    std::map<std::string, size_t> count;
    std::vector<std::string> order;
    for (const auto* card : match) {
      const std::string g = Group(card->name);
      if (count[g]++ == 0) order.push_back(g);
    }
    if (order.size() > 1) {
      std::string groups;
      size_t listed = 0;
      for (const auto& g : order) {
        const std::string item = engine::PromptText(g, 80) + " " + std::to_string(count[g]);
        if (groups.size() + item.size() > kIndexPageBytes / 4) break;
        groups += (groups.empty() ? "" : ", ") + item;
        ++listed;
      }
      out += "by name prefix: " + groups;
      if (listed < order.size()) out += ", and " + std::to_string(order.size() - listed) + " more";
      out += "\n";
    }
  }
  return out + lines;
}

std::string UnknownTableText(const std::vector<engine::TableCard>& cards, const std::string& want) {
  const std::string head =
      "no table named '" + engine::PromptText(want, engine::kCardNameBytes) + "'";
  std::string all;
  for (const auto& card : cards) all += (all.empty() ? "" : ", ") + Shown(card);
  if (all.size() <= kNamesInErrorBytes) return head + "; the tables are: " + all;
  // Names holding what was asked for come first, then the fewest edits away.
  const std::string w = Lower(want);
  std::vector<std::pair<size_t, size_t>> ranked;  // (score, index)
  for (size_t i = 0; i < cards.size(); ++i) {
    const std::string n = Lower(cards[i].name);
    const bool holds =
        !w.empty() && (n.find(w) != std::string::npos || w.find(n) != std::string::npos);
    ranked.push_back({holds ? 0 : 1 + EditDistance(w, n), i});
  }
  const size_t keep = std::min<size_t>(kNearestNames, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep),
                    ranked.end());
  std::string near;
  for (size_t k = 0; k < keep; ++k)
    near += (near.empty() ? "" : ", ") + Shown(cards[ranked[k].second]);
  return head + "; the nearest names: " + near + " (of " + std::to_string(cards.size()) +
         " tables: inspect_schema without `table` lists them, `prefix` filters by name)";
}

}  // namespace quarry::agent
