// The dbt import's own helpers, shared by dbt.cc (tables and tests) and dbt_metrics.cc
// (semantic models and metrics): typed reads of manifest JSON whose errors name the field's
// path. Only the knowledge module includes this.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "quarry/knowledge/dbt.h"

namespace quarry::knowledge::dbt_internal {

// File order is kept: a table's columns are written in the order dbt documents them.
using Json = nlohmann::ordered_json;

// A problem with the manifest, thrown inside the import only; ParseDbtManifest turns it into an
// Error that starts with the file's name.
struct Bad {
  std::string message;
};

enum class Shape { kObject, kList, kText };

// "an object", "a list", "text", "a number", "true or false", "null".
std::string KindOf(const Json& value);

// `path` and one more key or index, as a reader finds it: nodes["model.shop.orders"].columns,
// measures[2]. Keys come from the file: they are cut to 60 bytes and kept printable.
std::string Child(const std::string& path, const std::string& key);
std::string Child(const std::string& path, size_t index);

// obj[key] when it is of `shape`; nullptr when absent or null (dbt writes null for "not set").
// Another kind throws Bad: "nodes["m"].columns is a list, not an object".
const Json* Member(const Json& obj, const std::string& key, const std::string& path, Shape shape);

// obj[key] as text without control characters (but newline and tab), trimmed; "" when absent
// or null; Bad when it is not text.
std::string Text(const Json& obj, const std::string& key, const std::string& path);

// A value dbt lets be text, a number or a boolean (an accepted value, a measure's expr), as
// text; Bad for a list, an object or null.
std::string Scalar(const Json& value, const std::string& path);

// A plain column name (letters, digits, '_', not starting with a digit; bytes of UTF-8 letters
// too): what a join, a time column or a check can name without quoting.
bool Identifier(const std::string& text);

// An expression as one operand: as it is when it is a name or a whole number, else in
// parentheses, so that `a + b` stays whole inside sum() or a comparison.
std::string Operand(const std::string& expr);

// What ref('orders'), ref('pkg', 'orders'), ref('orders', v=2) or source('raw', 'orders') in
// `text` points at: {"ref", "orders"} or {"source", "raw.orders"}; nullopt when it holds none.
std::optional<std::pair<std::string, std::string>> Target(const std::string& text);

// The table a ref() or source() names, "" when the import knows none.
using TableOfTarget = std::function<std::string(const std::string& text)>;

// Reads the manifest's semantic_models and metrics (dbt_metrics.cc): each simple metric into
// out.metrics, each one left out into out.skipped with its reason, changes into out.notes.
// Throws Bad for a field of the wrong kind.
void ReadMetrics(const Json& manifest, const TableOfTarget& table_of, DbtImport& out);

}  // namespace quarry::knowledge::dbt_internal
