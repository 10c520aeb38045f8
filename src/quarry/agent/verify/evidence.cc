// The verify gate's evidence: what successful executions showed the model, with where each
// value came from, and how a column's name classifies what it holds (identifiers, decreases).
#include <algorithm>
#include <cctype>

#include "quarry/agent/verify.h"
#include "quarry/agent/verify/internal.h"

namespace quarry::agent {

using internal::Contains;
ColumnRole RoleOfColumn(std::string_view name, const std::vector<std::string>& keys) {
  const std::string lower = internal::LowerAscii(name);
  for (const std::string& k : keys) {
    if (internal::LowerAscii(k) == lower) return ColumnRole::kIdentifier;
  }
  // Window functions keep their call as the column name: "row_number() OVER (...)".
  for (std::string_view call : {"row_number(", "rank(", "dense_rank(", "ntile("}) {
    if (lower.starts_with(call)) return ColumnRole::kIdentifier;
  }
  const std::vector<std::string> words = internal::NameWords(name);
  if (words.empty()) return ColumnRole::kMeasure;
  if (Contains(
          {"rn", "rownum", "rowid", "idx", "index", "rank", "dense_rank", "row_number", "row_num",
           "ranking", "position", "pos", "code", "zip", "zipcode", "postcode", "sku", "isbn"},
          lower)) {
    return ColumnRole::kIdentifier;
  }
  const std::string& last = words.back();
  if (Contains({"id", "ids", "key", "uuid", "guid", "pk", "fk"}, last)) {
    return ColumnRole::kIdentifier;
  }
  // "order_no", "zip_code", "order_number" name an entity; "total_number" counts.
  if (words.size() >= 2 && Contains({"no", "num", "nr", "number", "code", "zip"}, last) &&
      !Contains({"total", "count", "num", "number", "avg", "mean", "sum", "n"}, words.front())) {
    return ColumnRole::kIdentifier;
  }
  if (words.size() >= 2 && words[words.size() - 2] == "row" && last == "number") {
    return ColumnRole::kIdentifier;
  }
  return ColumnRole::kMeasure;
}

int DirectionOfColumn(std::string_view name) {
  for (const std::string& w : internal::NameWords(name)) {
    if (Contains({"decline",   "declines", "decrease", "decreases", "drop",  "drops",     "loss",
                  "losses",    "lost",     "fall",     "falls",     "down",  "reduction", "shrink",
                  "shrinkage", "deficit",  "churn",    "churned",   "lower", "less",      "fewer"},
                 w)) {
      return -1;
    }
  }
  return 1;
}

int Evidence::Source(const EvidenceSource& source) {
  sources_.push_back(source);
  const int id = static_cast<int>(sources_.size()) - 1;
  ran_.push_back({source, id});
  return id;
}

void Evidence::AddCode(const EvidenceSource& source) { ran_.push_back({source, -1}); }

void Evidence::AddResult(const EvidenceSource& source, const std::vector<std::string>& columns,
                         const std::vector<std::vector<std::optional<std::string>>>& rows,
                         const std::vector<std::string>& keys) {
  const int id = Source(source);
  std::vector<ColumnRole> roles;
  std::vector<int> directions;
  for (const std::string& c : columns) {
    roles.push_back(RoleOfColumn(c, keys));
    directions.push_back(DirectionOfColumn(c));
  }
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < columns.size(); ++c) {
      cells_.push_back({row[c], id, columns[c], roles[c], directions[c]});
    }
  }
}

void Evidence::AddText(const EvidenceSource& source, std::string_view text) {
  texts_.push_back({std::string(text), Source(source)});
}

void Evidence::AddCard(std::string_view full_card) {
  // A key column's line ("customer_id BIGINT, unique, 1..412", "ReportsTo INTEGER ->
  // Employee.EmployeeId") holds ids, never a count: it grounds nothing.
  std::string kept;
  kept.reserve(full_card.size());
  for (size_t at = 0; at < full_card.size();) {
    const size_t nl = std::min(full_card.find('\n', at), full_card.size());
    const std::string_view line = full_card.substr(at, nl - at);
    at = nl + 1;
    bool key = false;
    if (line.starts_with("  ") && !line.starts_with("   ")) {
      const std::string_view body = line.substr(2);
      const std::string_view name = body.substr(0, body.find(' '));
      key = line.find(" -> ") != std::string_view::npos ||
            RoleOfColumn(name) == ColumnRole::kIdentifier;
    }
    if (!key) kept.append(line).append("\n");
  }
  const std::string_view card = kept;
  std::string facts;
  facts.reserve(card.size());
  size_t at = 0;
  for (size_t d = card.find(" distinct"); d != std::string_view::npos;
       d = card.find(" distinct", d + 1)) {
    size_t begin = d;
    while (begin > at && std::isdigit(static_cast<unsigned char>(card[begin - 1]))) --begin;
    if (begin > at && card[begin - 1] == '~') --begin;  // "~977 distinct": an estimate
    if (begin == d) continue;
    facts.append(card.substr(at, begin - at));
    at = d + std::string_view(" distinct").size();
  }
  facts.append(card.substr(at));
  // "2012-01-01..2015-12-31": both ends are dates the scan must see apart.
  for (size_t r = facts.find(".."); r != std::string::npos; r = facts.find("..", r + 4)) {
    facts.replace(r, 2, " .. ");
  }
  AddText({0, std::string(kSchemaCardTool), "", -1}, facts);
}

void Evidence::AddValue(std::string value) {
  if (sources_.empty() || sources_.back().tool != "run_sql" || sources_.back().step != 0) {
    Source({0, "run_sql", "", -1});
  }
  const int id = static_cast<int>(sources_.size()) - 1;
  cells_.push_back({std::move(value), id, "", ColumnRole::kMeasure, 1});
}

void Evidence::AddText(std::string_view text) { AddText({0, "run_python", "", -1}, text); }

}  // namespace quarry::agent
