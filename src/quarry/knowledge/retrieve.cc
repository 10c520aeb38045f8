// What of the knowledge a question is given (knowledge.h, Retrieve): rules always, the metrics
// it names, then the rest ranked by bm25 (engine::RankDocuments) within the token budget.
#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "quarry/common/text.h"
#include "quarry/engine/rank.h"
#include "quarry/knowledge/knowledge.h"

namespace quarry::knowledge {

namespace {

// Verified queries given as worked examples, at most.
constexpr size_t kMaxExamples = 2;

std::string Where(const Origin& o) {
  return o.line > 0 ? o.file + ":" + std::to_string(o.line) : o.file;
}

// `phrase` stands in `text` as whole words, any case ("net revenue" in "What was net revenue?").
bool Names(const std::string& text, const std::string& phrase) {
  const std::string t = " " + engine::JoinWords(text) + " ";
  const std::string p = engine::JoinWords(phrase);
  return !p.empty() && t.find(" " + p + " ") != std::string::npos;
}

struct Candidate {
  std::string label;  // "metric revenue (metrics.yaml:3)"
  std::string text;   // as the prompt shows it
  std::string section;
  std::vector<std::string> fields;  // name, words, body: for the ranking
};

std::string MetricText(const Metric& m) {
  std::string out = "- " + m.name + ": " + m.sql + " over " + m.table;
  if (!m.filter.empty()) out += " where " + m.filter;
  if (!m.time.empty()) out += "; dates from " + m.time;
  if (!m.description.empty()) out += ". " + m.description;
  if (!m.synonyms.empty()) {
    out += " (also called:";
    for (size_t i = 0; i < m.synonyms.size(); ++i) out += (i ? ", " : " ") + m.synonyms[i];
    out += ")";
  }
  return out + " [" + Where(m.origin) + "]\n";
}

// Whether `table_column` ("sales.customer_id", any case) is a column the knowledge marks personal.
bool Personal(const Knowledge& k, const std::string& table_column) {
  for (const TableDoc& t : k.tables) {
    for (const ColumnDoc& c : t.columns) {
      if (c.personal && Lower(t.table + "." + c.name) == Lower(table_column)) return true;
    }
  }
  return false;
}

// A term as the prompt shows it; the value of a personal column stays out, as in the cards.
std::string TermText(const Term& t, bool personal) {
  std::string out = "- " + t.name;
  if (!t.synonyms.empty()) {
    out += " (or:";
    for (size_t i = 0; i < t.synonyms.size(); ++i) out += (i ? ", " : " ") + t.synonyms[i];
    out += ")";
  }
  out += ": " + t.means;
  if (!t.metric.empty()) out += " → metric " + t.metric;
  if (!t.column.empty()) out += " → column " + t.column;
  if (!t.value.empty()) {
    out += personal ? " = a value not shown (personal data)" : " = '" + t.value + "'";
  }
  return out + " [" + Where(t.origin) + "]\n";
}

std::string TableText(const TableDoc& t) {
  std::string out = "- " + t.table;
  if (!t.grain.empty()) out += ": one row is " + t.grain;
  if (!t.description.empty()) out += ". " + t.description;
  out += " [" + Where(t.origin) + "]\n";
  for (const ColumnDoc& c : t.columns) {
    out += "  - " + c.name + ": " + c.meaning;
    if (!c.unit.empty()) out += " (" + c.unit + ")";
    if (!c.values.empty() && !c.personal) {  // a personal column's values stay out
      out += "; values:";
      for (size_t i = 0; i < c.values.size(); ++i) {
        out += (i ? ", " : " ") + c.values[i].first;
        if (!c.values[i].second.empty()) out += " = " + c.values[i].second;
      }
    }
    if (c.personal) out += "; personal data";
    out += "\n";
  }
  return out;
}

std::string QueryText(const VerifiedQuery& q) {
  std::string out = "- \"" + q.question + "\"";
  if (!q.verified_by.empty()) out += ", verified by " + q.verified_by;
  if (!q.verified_at.empty()) out += " on " + q.verified_at;
  return out + " [" + q.origin.file + "]:\n```sql\n" + q.sql + "\n```\n";
}

bool HasTable(const std::set<std::string>& tables, const std::string& name) {
  return tables.empty() || tables.contains(Lower(name));
}

}  // namespace

Selection Retrieve(const Knowledge& k, const std::string& question, int64_t budget_tokens,
                   const std::vector<std::string>& engine_tables) {
  std::set<std::string> tables;
  for (const auto& t : engine_tables) tables.insert(Lower(t));

  // In the order sections are shown.
  static const std::vector<std::string> kSections = {
      "Rules (always apply them)",
      "Metrics (use a metric the question names as defined; say so "
      "in the assumptions instead of asking which measure)",
      "Glossary",
      "Tables",
      "Joins the database does not declare",
      "Verified queries (worked examples: adapt them to the question)"};
  std::vector<Candidate> must;    // rules, named metrics
  std::vector<Candidate> ranked;  // the rest, in ranking order
  std::vector<Candidate> pool;
  std::set<std::string> named;
  for (const Rule& r : k.rules) {
    must.push_back({"rule " + r.name + " (" + r.origin.file + ")",
                    "- " + r.title + ": " + r.text + " [" + r.origin.file + "]\n",
                    kSections[0],
                    {}});
  }
  for (const Metric& m : k.metrics) {
    if (!HasTable(tables, m.table)) continue;
    bool by_name = Names(question, m.name);
    for (const auto& s : m.synonyms) by_name = by_name || Names(question, s);
    Candidate c{"metric " + m.name + " (" + Where(m.origin) + ")", MetricText(m), kSections[1], {}};
    std::string words = m.name + " " + engine::JoinWords(m.name);
    for (const auto& s : m.synonyms) words += " " + s;
    c.fields = {words, m.description + " " + m.table + " " + m.time, m.sql + " " + m.filter};
    if (by_name) {
      named.insert(Lower(m.name));
      must.push_back(std::move(c));
    } else {
      pool.push_back(std::move(c));
    }
  }
  for (const Term& t : k.terms) {
    Candidate c{"term " + t.name + " (" + Where(t.origin) + ")",
                TermText(t, Personal(k, t.column)),
                kSections[2],
                {}};
    std::string words = t.name;
    for (const auto& s : t.synonyms) words += " " + s;
    c.fields = {words, t.means,
                t.column + " " + (Personal(k, t.column) ? "" : t.value) + " " + t.metric};
    pool.push_back(std::move(c));
  }
  for (const TableDoc& t : k.tables) {
    if (!HasTable(tables, t.table)) continue;
    std::string columns;
    for (const auto& col : t.columns) {
      columns += col.name + " " + engine::JoinWords(col.name) + " " + col.meaning + " ";
    }
    pool.push_back(
        {"table " + t.table + " (" + Where(t.origin) + ")",
         TableText(t),
         kSections[3],
         {t.table + " " + engine::JoinWords(t.table), t.grain + " " + t.description, columns}});
  }
  for (const Relationship& r : k.relationships) {
    std::string text = "- " + r.from + " = " + r.to;
    if (!r.cardinality.empty()) text += " (" + r.cardinality + ")";
    if (!r.note.empty()) text += ": " + r.note;
    text += " [" + Where(r.origin) + "]\n";
    pool.push_back({"join " + r.from + " = " + r.to + " (" + Where(r.origin) + ")",
                    text,
                    kSections[4],
                    {engine::JoinWords(r.from) + " " + engine::JoinWords(r.to), r.note, ""}});
  }
  const size_t first_query = pool.size();
  for (const VerifiedQuery& q : k.queries) {
    std::string tags;
    for (const auto& t : q.tags) tags += t + " ";
    pool.push_back({"verified query " + q.name + " (" + q.origin.file + ")",
                    QueryText(q),
                    kSections[5],
                    {q.question, tags, q.sql}});
  }
  std::vector<std::vector<std::string>> documents;
  for (const auto& c : pool) documents.push_back(c.fields);
  auto order = engine::RankDocuments(documents, {8.0, 3.0, 1.0}, question);
  size_t examples = 0;
  if (order) {
    for (const auto& r : *order) {
      if (r.document >= first_query && examples++ >= kMaxExamples) continue;
      ranked.push_back(pool[r.document]);
    }
  }

  const std::string intro =
      "## Knowledge\nThe user's own definitions for this data, from their knowledge files: apply "
      "them, and name the metric or verified query an answer rests on in its assumptions.\n";
  Selection out;
  std::vector<const Candidate*> chosen;
  std::set<std::string> opened;
  // The frame counts too: the intro, and each section's heading once it has an item.
  int64_t used = engine::EstimateTokens(intro);
  auto take = [&](const Candidate& c) {
    const int64_t heading =
        opened.contains(c.section) ? 0 : engine::EstimateTokens("\n" + c.section + ":\n");
    const int64_t cost = engine::EstimateTokens(c.text) + heading;
    if (used + cost > budget_tokens) {
      out.left_out.push_back(c.label);
      return;
    }
    used += cost;
    opened.insert(c.section);
    chosen.push_back(&c);
  };
  for (const auto& c : must) take(c);
  for (const auto& c : ranked) take(c);
  if (chosen.empty()) return out;
  out.text = intro;
  for (const std::string& section : kSections) {
    bool open = false;
    for (const Candidate* c : chosen) {
      if (c->section != section) continue;
      if (!open) out.text += "\n" + section + ":\n";
      open = true;
      out.text += c->text;
    }
  }
  for (const std::string& section : kSections) {
    for (const Candidate* c : chosen) {
      if (c->section == section) out.items.push_back(c->label);
    }
  }
  out.tokens = engine::EstimateTokens(out.text);
  return out;
}

std::vector<std::string> RestsOn(const Knowledge& k, const std::string& sql) {
  // Case and spacing differ between a definition and the SQL written from it.
  const auto squeeze = [](const std::string& text) {
    std::string out;
    for (char c : text) {
      if (!std::isspace(static_cast<unsigned char>(c))) {
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    while (!out.empty() && out.back() == ';') out.pop_back();
    return out;
  };
  const std::string query = squeeze(sql);
  std::vector<std::string> out;
  if (query.empty()) return out;
  for (const Metric& m : k.metrics) {
    const std::string expression = squeeze(m.sql);
    if (expression.empty() || query.find(expression) == std::string::npos) continue;
    if (!Names(sql, m.table)) continue;
    if (!m.filter.empty() && query.find(squeeze(m.filter)) == std::string::npos) continue;
    out.push_back("metric " + m.name + " (" + Where(m.origin) + ")");
  }
  for (const VerifiedQuery& q : k.queries) {
    const std::string verified = squeeze(q.sql);
    if (!verified.empty() && query.find(verified) != std::string::npos) {
      out.push_back("verified query " + q.name + " (" + q.origin.file + ")");
    }
  }
  return out;
}

std::optional<Definition> Define(const Knowledge& k, const std::string& term,
                                 const std::string& question) {
  const auto one_line = [](std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text.substr(2);  // without the list's "- "
  };
  const auto same = [](const std::string& a, const std::string& b) {
    const std::string x = engine::JoinWords(a);
    return !x.empty() && x == engine::JoinWords(b);
  };
  const auto names = [&](const std::vector<std::string>& synonyms, const std::string& name,
                         auto&& match) {
    if (match(name)) return true;
    return std::any_of(synonyms.begin(), synonyms.end(), match);
  };
  if (!engine::JoinWords(term).empty()) {
    const auto is_term = [&](const std::string& n) { return same(n, term); };
    for (const Term& t : k.terms) {
      if (names(t.synonyms, t.name, is_term)) {
        std::string text = one_line(TermText(t, Personal(k, t.column)));
        // A term pointing at a metric brings the metric's definition with it.
        for (const Metric& m : k.metrics) {
          if (!t.metric.empty() && same(m.name, t.metric)) text += "; " + one_line(MetricText(m));
        }
        return Definition{"term " + t.name + " (" + Where(t.origin) + ")", text};
      }
    }
    for (const Metric& m : k.metrics) {
      if (names(m.synonyms, m.name, is_term)) {
        return Definition{"metric " + m.name + " (" + Where(m.origin) + ")",
                          one_line(MetricText(m))};
      }
    }
    return std::nullopt;
  }
  const Term* found = nullptr;
  const auto in_question = [&](const std::string& n) { return Names(question, n); };
  for (const Term& t : k.terms) {
    if (!names(t.synonyms, t.name, in_question)) continue;
    if (found) return std::nullopt;  // two terms: which one the question is about is unclear
    found = &t;
  }
  if (!found) return std::nullopt;
  return Define(k, found->name, "");
}

}  // namespace quarry::knowledge
