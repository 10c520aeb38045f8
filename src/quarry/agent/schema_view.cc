// The schema the model sees in its system prompt, kept within a token budget: the whole schema
// when it fits, else the tables the question is about (bm25, fused with embeddings when an
// endpoint is configured) and their foreign-key neighbours, with every other table by name.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "quarry/agent/agent.h"

namespace quarry::agent {
namespace {

constexpr double kRrfK = 60;                  // Cormack, Clarke and Buettcher, SIGIR 2009
constexpr size_t kEmbeddingNeighbours = 10;   // tables the embeddings alone may call relevant
constexpr size_t kEmbeddingTextBytes = 4000;  // of a card, sent to the embeddings endpoint

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

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

}  // namespace

SchemaView ViewSchema(const engine::Engine& engine, const std::string& question,
                      const SchemaOptions& options) {
  const auto& cards = engine.describe();
  SchemaView view;
  engine::CardOptions full;
  full.max_columns = engine::kCardColumns;
  full.samples = options.samples;
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
  head += "The schema has " + std::to_string(cards.size()) +
          " tables, more than this prompt holds. Below: the tables the question seems to be "
          "about and the tables their foreign keys link, in full as far as room allows, then "
          "every other table by name. inspect_schema with `table` shows any table's card.\n";
  full.sources =
      one_source ? engine::CardOptions::Sources::kNone : engine::CardOptions::Sources::kPerTable;
  engine::CardOptions compact = full;
  compact.statistics = false;

  // Names of the tables not shown in full, in order of relevance, then of the cards. The list of
  // every name is reserved first (at most 60% of the budget), so the cards fill what is left.
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
  const int64_t names_cap = options.budget_tokens * 6 / 10;
  const int64_t names_cost = engine::EstimateTokens(grouped_prefix + NameList(all_names) + "\n");
  int64_t room =
      options.budget_tokens - engine::EstimateTokens(head) - std::min(names_cost, names_cap);

  std::vector<int> tier(cards.size(), 0);  // 2 full, 1 compact, 0 name
  std::string body;
  for (size_t i : candidates) {
    const std::string card = engine::RenderCards({cards[i]}, full);
    const int64_t cost = engine::EstimateTokens(card);
    if (cost <= room) {
      tier[i] = 2;
      room -= cost;
      body += card;
      view.full.push_back(cards[i].name);
      continue;
    }
    const std::string small = engine::RenderCards({cards[i]}, compact);
    const int64_t small_cost = engine::EstimateTokens(small);
    if (small_cost <= room) {
      tier[i] = 1;
      room -= small_cost;
      body += small;
      view.compact.push_back(cards[i].name);
    }
  }
  // The names left, as many as the cap allows (the rest counted), grouped by prefix.
  std::vector<std::string> names;
  size_t more = 0;
  const int64_t more_cost = 20;
  for (size_t i : name_order) {
    if (tier[i] != 0) continue;
    ++view.listed;
    if (more > 0) {
      ++more;
      continue;
    }
    names.push_back(shown_name[i]);
    if (names_cost > names_cap &&
        engine::EstimateTokens(grouped_prefix + NameList(names)) + more_cost > names_cap) {
      names.pop_back();
      more = 1;
    }
  }
  std::string list;
  if (!names.empty() || more > 0) {
    const std::string joined = NameList(names);
    list = (joined.find('{') == std::string::npos ? list_prefix : grouped_prefix) + joined;
    if (more > 0) {
      list += (names.empty() ? "" : ", ") + std::string("and ") + std::to_string(more) +
              " more (inspect_schema without arguments lists them all)";
    }
    list += "\n";
  }
  view.text = head + body + list;
  view.tokens_estimated = engine::EstimateTokens(view.text);
  view.notes.push_back("schema: " + std::to_string(cards.size()) + " tables, ~" +
                       std::to_string(view.whole_tokens_estimated) + " tokens in full, over the " +
                       std::to_string(options.budget_tokens) +
                       "-token budget: " + std::to_string(view.full.size()) + " in full, " +
                       std::to_string(view.compact.size()) + " with columns only, " +
                       std::to_string(view.listed) + " by name (ranked by " + view.ranking + ")");
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
