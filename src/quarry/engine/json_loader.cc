// The JSON loader: read_json_auto's reading, judged. Its sniffer makes a column of integers
// DOUBLE as soon as one is past 64 bits, which rounds 98765432109876543210987 to
// 9.876543210987654e22 and merges ids that differ in their last digits; and it makes a column
// BIGINT when its sample held only small ones, so 18446744073709551615 later fails the whole
// read. Every number in the file, at the top or inside objects and lists, is checked as the
// file writes it, and a field of integers that a BIGINT or DOUBLE cannot hold is read again
// exact, as the CSV loader does, with a note.
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "quarry/engine/engine_internal.h"

namespace quarry::engine::internal {
namespace {

// A column's type as DESCRIBE writes it: a named type, a STRUCT of named fields, or a list.
// MAP and other composite types stay whole, as one named type, and are not looked into.
struct JsonType {
  std::string name;  // a named type ("DOUBLE", "MAP(VARCHAR, BIGINT)"); empty for the others
  std::vector<std::pair<std::string, JsonType>> fields;  // a STRUCT's fields
  std::shared_ptr<JsonType> element;                     // a list's element
};

// Reads one type from the front of `s`, leaving what follows it.
std::optional<JsonType> ParseType(std::string_view& s) {
  JsonType type;
  if (s.starts_with("STRUCT(")) {
    s.remove_prefix(7);
    while (true) {
      std::string name;
      if (s.starts_with('"')) {
        size_t at = 1;
        for (; at < s.size(); ++at) {
          if (s[at] != '"') {
            name += s[at];
          } else if (at + 1 < s.size() && s[at + 1] == '"') {
            name += '"';
            ++at;
          } else {
            break;
          }
        }
        if (at >= s.size()) return std::nullopt;
        s.remove_prefix(at + 1);
      } else {
        const size_t space = s.find(' ');
        if (space == std::string_view::npos || space == 0) return std::nullopt;
        name = std::string(s.substr(0, space));
        s.remove_prefix(space);
      }
      if (!s.starts_with(' ')) return std::nullopt;
      s.remove_prefix(1);
      auto field = ParseType(s);
      if (!field) return std::nullopt;
      type.fields.emplace_back(std::move(name), std::move(*field));
      if (s.starts_with(", ")) {
        s.remove_prefix(2);
      } else if (s.starts_with(')')) {
        s.remove_prefix(1);
        break;
      } else {
        return std::nullopt;
      }
    }
  } else {
    size_t at = 0;
    int depth = 0;
    for (; at < s.size(); ++at) {
      const char c = s[at];
      if (c == '(') ++depth;
      if (c == ')' && depth-- == 0) break;
      if (depth == 0 && (c == ',' || c == '[')) break;
    }
    if (at == 0) return std::nullopt;
    type.name = std::string(s.substr(0, at));
    s.remove_prefix(at);
  }
  while (s.starts_with("[]")) {
    s.remove_prefix(2);
    JsonType list;
    list.element = std::make_shared<JsonType>(std::move(type));
    type = std::move(list);
  }
  return type;
}

std::string Render(const JsonType& type) {
  if (type.element) return Render(*type.element) + "[]";
  if (!type.fields.empty()) {
    std::string out = "STRUCT(";
    for (size_t i = 0; i < type.fields.size(); ++i) {
      out +=
          (i ? ", " : "") + QuoteIdent(type.fields[i].first) + " " + Render(type.fields[i].second);
    }
    return out + ")";
  }
  return type.name;
}

bool Numeric(const std::string& name) {
  return name == "DOUBLE" || name == "BIGINT" || name == "UBIGINT";
}

// A numeric field somewhere in a column: where it is, for a note ("a.s.deep"), and its values
// as a VARCHAR list, SQL over the column read with such fields as VARCHAR.
struct Leaf {
  JsonType* type;
  std::string path, values;
};

void Leaves(JsonType& type, const std::string& path, const std::string& expr, int depth,
            std::vector<Leaf>& out) {
  if (type.element) {
    const std::string x = "x" + std::to_string(depth);
    std::vector<Leaf> inner;
    Leaves(*type.element, path + "[]", x, depth + 1, inner);
    for (Leaf& leaf : inner) {
      leaf.values = "flatten(list_transform(" + expr + ", " + x + " -> " + leaf.values + "))";
      out.push_back(std::move(leaf));
    }
    return;
  }
  for (auto& [name, field] : type.fields) {
    Leaves(field, path + "." + name, "struct_extract(" + expr + ", " + QuoteLiteral(name) + ")",
           depth, out);
  }
  if (type.fields.empty() && Numeric(type.name)) out.push_back({&type, path, "[" + expr + "]"});
}

}  // namespace

Result<CsvPlan> PlanJson(const RunRows& run, const std::string& abs_path) {
  const std::string lit = QuoteLiteral(abs_path);
  CsvPlan plan;
  plan.select = "SELECT * FROM read_json_auto(" + lit + ")";
  // A file DuckDB cannot read fails where the view is made, with the message it always had.
  auto described = run("DESCRIBE " + plan.select);
  if (!described) return plan;
  std::vector<std::pair<std::string, JsonType>> columns;
  for (const auto& row : *described) {
    if (row.size() < 2 || !row[0] || !row[1]) return plan;
    std::string_view text = *row[1];
    auto type = ParseType(text);
    if (!type || !text.empty()) return plan;  // a type this reading does not know: as sniffed
    columns.emplace_back(*row[0], std::move(*type));
  }
  auto reader = [&] {
    std::string spec;
    for (const auto& [name, type] : columns) {
      spec += (spec.empty() ? "" : ", ") + QuoteLiteral(name) + ": " + QuoteLiteral(Render(type));
    }
    return "read_json(" + lit + ", columns = {" + spec + "})";
  };
  std::vector<Leaf> leaves;
  std::vector<std::string> owners;  // the column each leaf is in
  std::vector<std::string> sniffed;
  bool doubles = false;
  for (auto& [name, type] : columns) {
    const size_t before = leaves.size();
    Leaves(type, name, QuoteIdent(name), 1, leaves);
    owners.resize(leaves.size(), name);
    for (size_t i = before; i < leaves.size(); ++i) {
      sniffed.push_back(leaves[i].type->name);
      doubles = doubles || sniffed.back() == "DOUBLE";
    }
  }
  // The check is one more pass over the file. DOUBLE fields always need it; for BIGINT ones
  // alone (ids, nearly every file) it is paid on files up to kExactBytes, and a larger file
  // whose value past BIGINT's range the sniffer's sample missed fails with DuckDB's message.
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(abs_path, size_error);
  const bool small = !size_error && bytes <= static_cast<uintmax_t>(kExactBytes);
  if (leaves.empty() || (!doubles && !small)) return plan;
  // The numbers as the file writes them: DuckDB keeps a number's own text as VARCHAR.
  for (Leaf& leaf : leaves) leaf.type->name = "VARCHAR";
  std::string sql;
  for (const Leaf& leaf : leaves) {
    const std::string& l = leaf.values;
    sql += std::string(sql.empty() ? "" : ", ") + "sum(len(list_filter(" + l +
           ", v -> v IS NOT NULL))), sum(len(list_filter(" + l +
           ", v -> regexp_full_match(trim(v), '-?[0-9]+')))), max(list_max(list_transform(" + l +
           ", v -> length(regexp_extract(ltrim(trim(v), '-'), '^[0-9]+'))))), " +
           "sum(len(list_filter(" + l +
           ", v -> regexp_full_match(trim(v), '-?[0-9]+') AND "
           "TRY_CAST(trim(v) AS BIGINT) IS NULL)))";
  }
  auto counts = run("SELECT " + sql + " FROM " + reader());
  auto restore = [&] {
    for (size_t i = 0; i < leaves.size(); ++i) leaves[i].type->name = sniffed[i];
  };
  if (!counts || counts->size() != 1) return plan;
  const auto& row = counts->front();
  auto num = [&](size_t k) { return k < row.size() && row[k] ? std::stoll(*row[k]) : int64_t{0}; };
  restore();
  bool changed = false;
  for (size_t d = 0; d < leaves.size(); ++d) {
    const int64_t values = num(4 * d), integers = num(4 * d + 1), digits = num(4 * d + 2);
    const int64_t past_bigint = num(4 * d + 3);
    // Only integers, and DOUBLE (some are past 64 bits, or a BIGINT would have held them all),
    // or BIGINT with a value past its range, which fails the whole read.
    const bool doubled = sniffed[d] == "DOUBLE";
    const std::string where = leaves[d].path == owners[d] ? std::string() : leaves[d].path + ": ";
    if (doubled && values > 0 && integers != values && digits > 17) {
      // Decimals beside long integers: DOUBLE is the only number type for both, and it rounds.
      plan.column_notes[owners[d]].push_back(
          where +
          "some values have more than 17 digits, more than a DOUBLE keeps: rounded (ids "
          "that differ only in their last digits read as equal)");
    }
    if (values == 0 || integers != values) continue;
    if (!doubled && past_bigint == 0) continue;
    changed = true;
    if (digits > 38) {
      leaves[d].type->name = "VARCHAR";
      plan.column_notes[owners[d]].push_back(where +
                                             "integers longer than 38 digits: kept exact "
                                             "as text; compare them as strings, never as numbers");
    } else {
      leaves[d].type->name = "HUGEINT";
      plan.column_notes[owners[d]].push_back(
          where + (doubled ? "integers past 64 bits: kept exact as HUGEINT (a DOUBLE would "
                             "round them and merge distinct ids)"
                           : "integers past BIGINT's range (2^63 and more): kept exact as "
                             "HUGEINT (as BIGINT they failed the whole read)"));
    }
  }
  if (!changed) return plan;
  const std::string select = "SELECT * FROM " + reader();
  // The explicit reading must read what the automatic one did; if it cannot, keep that one.
  if (!run("DESCRIBE " + select)) {
    plan.column_notes.clear();
    return plan;
  }
  plan.select = select;
  return plan;
}

}  // namespace quarry::engine::internal
