// The schema the model sees in its system prompt, kept within a token budget: the whole schema
// when it fits, else the tables the question is about (bm25, fused with embeddings when an
// endpoint is configured) and their foreign-key neighbours, with every other table by name.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "quarry/common/text.h"
#include "quarry/agent/agent.h"

namespace quarry::agent {
namespace {

constexpr double kRrfK = 60;                  // Cormack, Clarke and Buettcher, SIGIR 2009
constexpr size_t kEmbeddingNeighbours = 10;   // tables the embeddings alone may call relevant
constexpr size_t kEmbeddingTextBytes = 4000;  // of a card, sent to the embeddings endpoint

// Whether `question` holds `name` as a whole word, ignoring case.
bool NamedIn(const std::string& question, const std::string& name) {
  if (name.empty()) return false;
  const std::string q = Lower(question);
  const std::string n = Lower(name);
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = q.find(n); at != std::string::npos; at = q.find(n, at + 1)) {
    const bool left = at == 0 || !word(q[at - 1]);
    const bool right = at + n.size() == q.size() || !word(q[at + n.size()]);
    if (left && right) return true;
  }
  return false;
}

double Cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double dot = 0;
  double na = 0;
  double nb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0;
}

// Tables linked to table `i` by a foreign key, either way: the ones it references first.
std::vector<size_t> Neighbours(const std::vector<engine::TableCard>& cards, size_t i) {
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < cards.size(); ++k) index.emplace(Lower(cards[k].name), k);
  std::vector<size_t> out;
  for (const auto& fk : cards[i].foreign_keys) {
    auto it = index.find(Lower(fk.ref_table));
    if (it != index.end() && it->second != i) out.push_back(it->second);
  }
  const std::string self = Lower(cards[i].name);
  for (size_t k = 0; k < cards.size(); ++k) {
    if (k == i) continue;
    for (const auto& fk : cards[k].foreign_keys) {
      if (Lower(fk.ref_table) == self) {
        out.push_back(k);
        break;
      }
    }
  }
  return out;
}

// The embeddings ranking fused with bm25's. Returns the relevant tables, best first, or the
// error that made the caller keep bm25 alone.
Result<std::vector<size_t>> Fuse(const std::vector<engine::TableCard>& cards,
                                 const std::vector<engine::TableMatch>& bm25,
                                 const std::string& question, const SchemaOptions& options) {
  std::vector<std::string> texts = {question};
  engine::CardOptions card_options;
  card_options.max_columns = engine::kCardColumns;
  card_options.samples = options.samples;
  card_options.sources = engine::CardOptions::Sources::kNone;
  for (const auto& card : cards) {
    texts.push_back(
        engine::PromptText(engine::RenderCards({card}, card_options), kEmbeddingTextBytes));
  }
  auto vectors = llm::Embed(*options.embeddings, texts);
  if (!vectors) return std::unexpected(vectors.error());
  std::vector<std::pair<double, size_t>> by_cosine;
  for (size_t i = 0; i < cards.size(); ++i)
    by_cosine.push_back({-Cosine((*vectors)[0], (*vectors)[i + 1]), i});
  std::stable_sort(by_cosine.begin(), by_cosine.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::map<size_t, double> fused;
  for (size_t r = 0; r < bm25.size(); ++r)
    fused[bm25[r].table] += 1.0 / (kRrfK + static_cast<double>(r + 1));
  std::set<size_t> relevant;
  for (const auto& m : bm25) relevant.insert(m.table);
  for (size_t r = 0; r < by_cosine.size(); ++r) {
    fused[by_cosine[r].second] += 1.0 / (kRrfK + static_cast<double>(r + 1));
    if (r < kEmbeddingNeighbours) relevant.insert(by_cosine[r].second);
  }
  std::vector<size_t> out(relevant.begin(), relevant.end());
  std::stable_sort(out.begin(), out.end(), [&](size_t a, size_t b) { return fused[a] > fused[b]; });
  return out;
}

// The part of a name up to and including its first '_' or '.', when it has one inside.
std::string Prefix(const std::string& name) {
  const size_t at = name.find_first_of("_.");
  return at == std::string::npos || at == 0 || at + 1 == name.size() ? "" : name.substr(0, at + 1);
}

// Names as a comma-separated list, those sharing a prefix with at least two others written once
// as prefix_{a, b, c} (in the order of their first appearance): 300 names of 20 prefixes cost
// half as many tokens.
std::string NameList(const std::vector<std::string>& names) {
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& n : names) {
    const std::string p = Prefix(n);
    if (!p.empty()) groups[p].push_back(n.substr(p.size()));
  }
  std::string out;
  std::set<std::string> done;
  for (const auto& n : names) {
    const std::string p = Prefix(n);
    const auto it = groups.find(p);
    std::string item;
    if (!p.empty() && it->second.size() >= 3) {
      if (!done.insert(p).second) continue;
      item = p + "{";
      for (size_t k = 0; k < it->second.size(); ++k) item += (k ? ", " : "") + it->second[k];
      item += "}";
    } else {
      item = n;
    }
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

constexpr size_t kPartialMinColumns = 3;  // fewer say too little of a table to be worth a card

// The columns of `card` in the order a partial card takes them: those the question names, then
// those bm25 finds in their names, notes and samples (best first), then the rest in order.
std::vector<size_t> ColumnOrder(const engine::TableCard& card, const std::string& question) {
  std::vector<size_t> order;
  std::vector<bool> taken(card.columns.size(), false);
  auto take = [&](size_t k) {
    if (k < taken.size() && !taken[k]) {
      taken[k] = true;
      order.push_back(k);
    }
  };
  for (size_t k = 0; k < card.columns.size(); ++k) {
    if (NamedIn(question, card.columns[k].name)) take(k);
  }
  // Each column as a one-column card, so RankTables' bm25 ranks columns as it ranks tables.
  std::vector<engine::TableCard> columns;
  for (const auto& c : card.columns) {
    engine::TableCard one;
    one.name = c.name;
    one.columns = {c};
    columns.push_back(std::move(one));
  }
  if (auto matches = engine::RankTables(columns, question)) {
    for (const auto& m : *matches) take(m.table);
  }
  for (size_t k = 0; k < card.columns.size(); ++k) take(k);
  return order;
}

// `card` with the columns `order` names, in that order, and the foreign keys of those columns.
engine::TableCard Subset(const engine::TableCard& card, const std::vector<size_t>& order) {
  engine::TableCard out = card;
  out.columns.clear();
  out.foreign_keys.clear();
  for (size_t k : order) out.columns.push_back(card.columns[k]);
  for (const auto& fk : card.foreign_keys) {
    if (std::any_of(out.columns.begin(), out.columns.end(),
                    [&](const engine::ColumnCard& c) { return c.name == fk.column; })) {
      out.foreign_keys.push_back(fk);
    }
  }
  return out;
}

std::string MoreColumnsLine(size_t more) {
  return "  \u2026 and " + std::to_string(more) + (more == 1 ? " more column" : " more columns") +
         " (inspect_schema with `table` and `columns`)\n";
}

// A card of as many of `card`'s columns as `room` tokens hold, names and types only, the ones
// the question is about first, with a line counting the rest. "" when fewer than
// kPartialMinColumns fit. `shown` receives how many columns it lists.
std::string PartialCard(const engine::TableCard& card, const std::string& question, int64_t room,
                        const engine::CardOptions& compact, size_t* shown) {
  const size_t least = std::min(kPartialMinColumns, card.columns.size());
  const int64_t base = engine::EstimateTokens(engine::RenderCards({Subset(card, {})}, compact));
  if (least == 0 || base + 3 * static_cast<int64_t>(least) > room) return "";
  const std::vector<size_t> order = ColumnOrder(card, question);
  // Each column's line costs about what it costs alone; the whole is checked after.
  std::vector<size_t> take;
  int64_t cost = base + engine::EstimateTokens(MoreColumnsLine(card.columns.size()));
  for (size_t k : order) {
    const int64_t line =
        engine::EstimateTokens(engine::RenderCards({Subset(card, {k})}, compact)) - base;
    if (cost + line > room) break;
    cost += line;
    take.push_back(k);
  }
  while (take.size() >= least) {
    const size_t more = card.columns.size() - take.size();
    std::string text = engine::RenderCards({Subset(card, take)}, compact);
    if (more > 0) text += MoreColumnsLine(more);
    if (engine::EstimateTokens(text) <= room) {
      *shown = take.size();
      return text;
    }
    take.pop_back();
  }
  return "";
}

}  // namespace

SchemaView ViewSchema(const engine::Engine& engine, const std::string& question,
                      const SchemaOptions& options) {
  const auto& cards = engine.describe();
  SchemaView view;
  engine::CardOptions full;
  full.max_columns = engine::kCardColumns;
  full.samples = options.samples;
  full.max_table_notes = engine::kCardTableNotes;
  full.max_column_notes = engine::kCardColumnNotes;
  const std::string whole = engine::RenderCards(cards, full);
  view.whole_tokens_estimated = engine::EstimateTokens(whole);
  if (view.whole_tokens_estimated <= options.budget_tokens) {
    view.text = whole;
    view.tokens_estimated = view.whole_tokens_estimated;
    for (const auto& c : cards) view.full.push_back(c.name);
    return view;
  }
  view.whole = false;

  // Which tables the question is about.
  std::vector<size_t> relevant;
  auto bm25 = engine::RankTables(cards, question);
  if (!bm25) {
    view.notes.push_back("schema: " + bm25.error().message + "; tables kept in their order");
    bm25 = std::vector<engine::TableMatch>{};
  }
  // A table the question names outright comes first, whatever bm25 thinks of its neighbours.
  for (size_t i = 0; i < cards.size(); ++i) {
    if (NamedIn(question, cards[i].name)) relevant.push_back(i);
  }
  for (const auto& m : *bm25) {
    if (std::find(relevant.begin(), relevant.end(), m.table) == relevant.end())
      relevant.push_back(m.table);
  }
  view.ranking = "bm25";
  if (options.embeddings) {
    auto fused = Fuse(cards, *bm25, question, options);
    if (fused) {
      std::vector<size_t> named;
      for (size_t i = 0; i < cards.size(); ++i) {
        if (NamedIn(question, cards[i].name)) named.push_back(i);
      }
      for (size_t i : *fused) {
        if (std::find(named.begin(), named.end(), i) == named.end()) named.push_back(i);
      }
      relevant = std::move(named);
      view.ranking = "bm25+embeddings";
    } else {
      view.notes.push_back("schema: " + fused.error().message + "; tables ranked by bm25 alone");
    }
  }
  for (size_t i : relevant) view.ranked.push_back(cards[i].name);
  if (relevant.empty()) {
    for (size_t i = 0; i < cards.size(); ++i) relevant.push_back(i);
  }
  std::vector<size_t> candidates;
  std::set<size_t> seen;
  for (size_t i : relevant) {
    if (seen.insert(i).second) candidates.push_back(i);
    for (size_t n : Neighbours(cards, i)) {
      if (seen.insert(n).second) candidates.push_back(n);
    }
  }

  // The frame: the data line and what the selection means.
  std::string head;
  const bool one_source = std::all_of(cards.begin(), cards.end(), [&](const engine::TableCard& t) {
    return t.source == cards.front().source;
  });
  if (one_source) head += "data: " + engine::PromptPath(cards.front().source) + "\n";
  if (cards.size() == 1) {
    head +=
        "The table is larger than this prompt holds: below, as much of its card as fits (the "
        "columns the question seems to be about first). inspect_schema with `table` shows it "
        "all.\n";
  } else {
    head += "The schema has " + std::to_string(cards.size()) +
            " tables, more than this prompt holds. Below: the tables the question seems to be "
            "about and those their foreign keys link, in full or in part as room allows, then "
            "other tables by name. inspect_schema with `table` shows any table's card.\n";
  }
  full.sources =
      one_source ? engine::CardOptions::Sources::kNone : engine::CardOptions::Sources::kPerTable;
  engine::CardOptions compact = full;
  compact.statistics = false;

  // Names of the tables not shown, in order of relevance, then of the cards. Room for the list
  // of every name is reserved first (at most 60% of the budget), so the cards fill what is left.
  std::vector<size_t> name_order = candidates;
  for (size_t i = 0; i < cards.size(); ++i) {
    if (!seen.contains(i)) name_order.push_back(i);
  }
  std::vector<std::string> shown_name(cards.size());
  std::vector<std::string> all_names;
  for (size_t i : name_order) {
    shown_name[i] = engine::PromptText(cards[i].name, engine::kCardNameBytes);
    all_names.push_back(shown_name[i]);
  }
  const std::string list_prefix = "other tables (name only): ";
  const std::string grouped_prefix = "other tables (name only; a_{b, c} stands for a_b, a_c): ";
  const int64_t head_cost = engine::EstimateTokens(head);
  const int64_t names_cap = options.budget_tokens * 6 / 10;
  auto names_cost = [&](const std::vector<std::string>& names) {
    return names.empty() ? 0 : engine::EstimateTokens(grouped_prefix + NameList(names) + "\n");
  };
  int64_t room = options.budget_tokens - head_cost - std::min(names_cost(all_names), names_cap);

  std::vector<int> tier(cards.size(), 0);  // 3 full, 2 compact, 1 partial, 0 name
  std::vector<std::string> shown(cards.size());
  for (size_t i : candidates) {
    const std::string card = engine::RenderCards({cards[i]}, full);
    const int64_t cost = engine::EstimateTokens(card);
    if (cost <= room) {
      tier[i] = 3;
      room -= cost;
      shown[i] = card;
      continue;
    }
    const std::string small = engine::RenderCards({cards[i]}, compact);
    const int64_t small_cost = engine::EstimateTokens(small);
    if (small_cost <= room) {
      tier[i] = 2;
      room -= small_cost;
      shown[i] = small;
    }
  }
  // The candidates too big for even names and types get part of their card, best first: the
  // reservation for names shrinks to the tables still unnamed.
  {
    std::vector<std::string> unshown;
    for (size_t i : name_order) {
      if (tier[i] == 0) unshown.push_back(shown_name[i]);
    }
    room += std::min(names_cost(all_names), names_cap) - std::min(names_cost(unshown), names_cap);
  }
  for (size_t i : candidates) {
    if (tier[i] != 0 || room < 10) continue;
    size_t columns = 0;
    std::string part = PartialCard(cards[i], question, room, compact, &columns);
    if (part.empty()) continue;
    tier[i] = 1;
    room -= engine::EstimateTokens(part);
    shown[i] = std::move(part);
  }
  std::string body;
  for (size_t i : candidates) {
    if (tier[i] == 0) continue;
    body += shown[i];
    (tier[i] == 3   ? view.full
     : tier[i] == 2 ? view.compact
                    : view.partial)
        .push_back(cards[i].name);
  }

  // The names left, as many as the budget still holds (the rest counted), grouped by prefix.
  std::vector<std::string> unshown;
  for (size_t i : name_order) {
    if (tier[i] == 0) unshown.push_back(shown_name[i]);
  }
  view.listed = unshown.size();
  auto list_line = [&](size_t count) {
    const std::vector<std::string> names(unshown.begin(), unshown.begin() + count);
    const std::string joined = NameList(names);
    const size_t more = unshown.size() - count;
    std::string line = count == 0                              ? "other tables: "
                       : joined.find('{') == std::string::npos ? list_prefix
                                                               : grouped_prefix;
    line += joined;
    if (more > 0) {
      line += (count == 0 ? "" : ", and ") + std::to_string(more) + (count == 0 ? "" : " more") +
              " (inspect_schema without `table` lists them, `prefix` filters by name)";
    }
    return line + "\n";
  };
  std::string list;
  if (!unshown.empty()) {
    const int64_t cap = options.budget_tokens - head_cost - engine::EstimateTokens(body);
    // Every name when they fit; else the most whose line fits (the cost grows with the count,
    // but for grouping, hence the check of the whole list first).
    size_t lo = 0;
    size_t hi = unshown.size();
    if (engine::EstimateTokens(list_line(hi)) <= cap) lo = hi;
    while (lo < hi) {
      const size_t mid = (lo + hi + 1) / 2;
      if (engine::EstimateTokens(list_line(mid)) <= cap) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    list = list_line(lo);
  }
  view.text = head + body + list;
  view.tokens_estimated = engine::EstimateTokens(view.text);
  view.notes.push_back(
      "schema: " + std::to_string(cards.size()) + (cards.size() == 1 ? " table, ~" : " tables, ~") +
      std::to_string(view.whole_tokens_estimated) + " tokens in full, over the " +
      std::to_string(options.budget_tokens) + "-token budget: " + std::to_string(view.full.size()) +
      " in full, " + std::to_string(view.compact.size()) + " with columns only, " +
      std::to_string(view.partial.size()) + " in part, " + std::to_string(view.listed) +
      " by name (ranked by " + view.ranking + ")");
  if (view.tokens_estimated > options.budget_tokens) {
    view.notes.push_back("schema: the frame and the count of other tables take " +
                         std::to_string(view.tokens_estimated) + " tokens, over the " +
                         std::to_string(options.budget_tokens) + "-token budget");
  }
  return view;
}

int64_t EstimateRequestTokens(const std::vector<llm::Message>& messages,
                              const std::vector<llm::ToolSchema>& tools) {
  int64_t tokens = 0;
  for (const auto& m : messages) tokens += 4 + engine::EstimateTokens(m.content);
  for (const auto& t : tools) {
    tokens += 8 + engine::EstimateTokens(t.name) + engine::EstimateTokens(t.description) +
              engine::EstimateTokens(t.parameters.dump());
  }
  return tokens;
}

}  // namespace quarry::agent
