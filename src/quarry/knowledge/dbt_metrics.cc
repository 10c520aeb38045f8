// dbt's semantic layer as metrics (dbt.h, the metrics of a DbtImport): each simple metric is its
// measure's aggregation over its semantic model's table, with the where filters that are SQL.
// Ratio, derived, cumulative and conversion metrics combine other metrics or windows: no single
// aggregate over one table says them, so they are left out by name.
#include <algorithm>
#include <map>

#include "quarry/common/text.h"
#include "quarry/engine/rank.h"
#include "quarry/knowledge/dbt_internal.h"

namespace quarry::knowledge::dbt_internal {

namespace {

// A dbt aggregation as SQL over `expr`; "" with `why` set for those it does not take.
std::string Aggregate(const std::string& agg, const std::string& expr, std::string& why) {
  const std::string a = Lower(agg);
  if (a == "sum" || a == "min" || a == "max" || a == "count") return a + "(" + expr + ")";
  if (a == "average") return "avg(" + expr + ")";
  if (a == "count_distinct") return "count(distinct " + expr + ")";
  if (a == "sum_boolean") return "sum(CASE WHEN " + expr + " THEN 1 ELSE 0 END)";
  why = a == "median" || a == "percentile"
            ? "its measure's " + a + " is written differently by each database"
            : "its measure's aggregation '" + agg + "' is not known";
  return "";
}

struct Dimension {
  std::string name, expr;
};

// A semantic model's measure, with what its metric needs from the model.
struct Measure {
  std::string name, agg, expr, description, time, table, why_not;
  std::vector<std::string> entities;
  std::vector<Dimension> dimensions;
};

// A column expression for a dimension: its expr, else its name.
std::string DimensionSql(const Dimension& d) { return Operand(d.expr.empty() ? d.name : d.expr); }

// A MetricFlow where filter as SQL over the measure's table: {{ Dimension('order__status') }}
// becomes the dimension's column when `order` is an entity of the measure's semantic model and
// `status` one of its dimensions. nullopt, with `why`, for anything else in {{ }} or {% %}.
std::optional<std::string> FilterSql(const std::string& text, const Measure& m, std::string& why) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t open = text.find("{{", at);
    if (open == std::string::npos) break;
    const size_t close = text.find("}}", open);
    if (close == std::string::npos) break;
    out += text.substr(at, open - at);
    const std::string inner(Trim(std::string_view(text).substr(open + 2, close - open - 2)));
    std::optional<std::string> column;
    constexpr std::string_view kCall = "Dimension(";
    if (inner.starts_with(kCall) && inner.ends_with(")")) {
      // The one argument, quoted: 'entity__dimension'.
      const std::string arg(
          Trim(std::string_view(inner).substr(kCall.size(), inner.size() - kCall.size() - 1)));
      const size_t sep = arg.find("__");
      if (arg.size() >= 2 && (arg[0] == '\'' || arg[0] == '"') && arg.back() == arg[0] &&
          sep != std::string::npos && sep + 2 < arg.size()) {
        const std::string entity = arg.substr(1, sep - 1);
        const std::string name = arg.substr(sep + 2, arg.size() - sep - 3);
        const auto dim = std::ranges::find(m.dimensions, name, &Dimension::name);
        if (std::ranges::find(m.entities, entity) != m.entities.end() &&
            dim != m.dimensions.end()) {
          column = DimensionSql(*dim);
        }
      }
    }
    if (!column) {
      why = "its filter uses {{ " + inner.substr(0, Utf8Prefix(inner, 80)) +
            " }}, which is not a column of " + m.table;
      return std::nullopt;
    }
    out += *column;
    at = close + 2;
  }
  out += text.substr(at);
  if (out.find("{{") != std::string::npos || out.find("{%") != std::string::npos ||
      out.find("}}") != std::string::npos) {
    why = "its filter is Jinja, not SQL";
    return std::nullopt;
  }
  return std::string(Trim(out));
}

// The where filters of a metric or of its input measure: a WhereFilterIntersection
// ({"where_filters": [{"where_sql_template": ...}]}) or, in older manifests, text.
std::vector<std::string> WhereTemplates(const Json& owner, const std::string& path) {
  std::vector<std::string> out;
  const auto it = owner.find("filter");
  if (it == owner.end() || it->is_null()) return out;
  const std::string here = Child(path, "filter");
  if (it->is_string()) {
    if (std::string t(Trim(Scalar(*it, here))); !t.empty()) out.push_back(t);
    return out;
  }
  if (!it->is_object()) throw Bad{here + " is " + KindOf(*it) + ", not an object"};
  const Json* filters = Member(*it, "where_filters", here, Shape::kList);
  if (!filters) return out;
  for (size_t i = 0; i < filters->size(); ++i) {
    const Json& f = (*filters)[i];
    const std::string at = Child(Child(here, "where_filters"), i);
    if (!f.is_object()) throw Bad{at + " is " + KindOf(f) + ", not an object"};
    if (std::string t = Text(f, "where_sql_template", at); !t.empty()) out.push_back(t);
  }
  return out;
}

void ReadSemanticModel(const std::string& id, const Json& model, const TableOfTarget& table_of,
                       std::map<std::string, Measure>& measures) {
  const std::string path = Child("semantic_models", id);
  if (!model.is_object()) throw Bad{path + " is " + KindOf(model) + ", not an object"};
  Measure base;
  // node_relation names the table itself; model is the ref() it is built on.
  if (const Json* relation = Member(model, "node_relation", path, Shape::kObject)) {
    base.table = Text(*relation, "alias", Child(path, "node_relation"));
  }
  if (base.table.empty()) base.table = table_of(Text(model, "model", path));
  if (const Json* defaults = Member(model, "defaults", path, Shape::kObject)) {
    base.time = Text(*defaults, "agg_time_dimension", Child(path, "defaults"));
  }
  for (const std::string list : {"entities", "dimensions"}) {
    const Json* items = Member(model, list, path, Shape::kList);
    for (size_t i = 0; items && i < items->size(); ++i) {
      const Json& item = (*items)[i];
      const std::string at = Child(Child(path, list), i);
      if (!item.is_object()) throw Bad{at + " is " + KindOf(item) + ", not an object"};
      if (list == "entities") {
        // Only an entity that identifies this model's rows reaches its own dimensions; a
        // foreign one's dimensions are another model's columns.
        const std::string type = Lower(Text(item, "type", at));
        if (type == "primary" || type == "unique" || type == "natural") {
          base.entities.push_back(Text(item, "name", at));
        }
      } else {
        base.dimensions.push_back({Text(item, "name", at), Text(item, "expr", at)});
      }
    }
  }
  const Json* list = Member(model, "measures", path, Shape::kList);
  for (size_t i = 0; list && i < list->size(); ++i) {
    const Json& item = (*list)[i];
    const std::string at = Child(Child(path, "measures"), i);
    if (!item.is_object()) throw Bad{at + " is " + KindOf(item) + ", not an object"};
    Measure m = base;
    m.name = Text(item, "name", at);
    m.agg = Text(item, "agg", at);
    const auto expr = item.find("expr");
    // No expr (or an empty one) means the column of the measure's name, as in MetricFlow.
    if (expr != item.end() && !expr->is_null()) m.expr = Trim(Scalar(*expr, Child(at, "expr")));
    if (m.expr.empty()) m.expr = m.name;
    m.description = Text(item, "description", at);
    if (std::string time = Text(item, "agg_time_dimension", at); !time.empty()) m.time = time;
    if (Member(item, "non_additive_dimension", at, Shape::kObject)) {
      m.why_not = "its measure is semi-additive (non_additive_dimension)";
    }
    if (m.table.empty()) m.why_not = "its semantic model's table is not known";
    if (!m.name.empty()) measures.emplace(m.name, std::move(m));
  }
}

void ReadMetric(const std::string& id, const Json& metric,
                const std::map<std::string, Measure>& measures, DbtImport& imported) {
  const std::string path = Child("metrics", id);
  if (!metric.is_object()) throw Bad{path + " is " + KindOf(metric) + ", not an object"};
  const std::string name = Text(metric, "name", path);
  if (name.empty()) throw Bad{path + " has no name"};
  // Every field read is read before any is judged, so a wrong kind is an error even in a
  // metric that is left out.
  const std::string type = Lower(Text(metric, "type", path));
  const std::string description = Text(metric, "description", path);
  const std::string label = Text(metric, "label", path);
  std::vector<std::string> filters = WhereTemplates(metric, path);
  const Json* params = Member(metric, "type_params", path, Shape::kObject);
  const std::string params_path = Child(path, "type_params");
  const Json* input = params ? Member(*params, "measure", params_path, Shape::kObject) : nullptr;
  std::string measure_name;
  if (input) {
    const std::string input_path = Child(params_path, "measure");
    measure_name = Text(*input, "name", input_path);
    for (auto& f : WhereTemplates(*input, input_path)) filters.push_back(std::move(f));
  }

  auto skip = [&](const std::string& why) {
    imported.skipped.push_back("metric " + name + " (" + why + ")");
  };
  if (type.empty()) {
    return skip(metric.contains("calculation_method")
                    ? "a metric of dbt before 1.6 (calculation_method) is not imported"
                    : "it has no type");
  }
  if (type != "simple") return skip(type + " metrics are not imported");
  if (!input) return skip("it names no measure");
  const auto found = measures.find(measure_name);
  if (found == measures.end()) {
    return skip("its measure " + measure_name + " is in no semantic model");
  }
  const Measure& m = found->second;
  if (!m.why_not.empty()) return skip(m.why_not);
  std::string why;
  Metric out;
  out.name = name;
  out.table = m.table;
  out.sql = Aggregate(m.agg, Operand(m.expr), why);
  if (out.sql.empty()) return skip(why);
  for (const std::string& f : filters) {
    const auto sql = FilterSql(f, m, why);
    if (!sql) return skip(why);
    if (sql->empty()) continue;
    out.filter +=
        (out.filter.empty() ? "" : " AND ") + (filters.size() > 1 ? "(" + *sql + ")" : *sql);
  }
  if (!m.time.empty()) {
    const auto dim = std::ranges::find(m.dimensions, m.time, &Dimension::name);
    const std::string time = dim == m.dimensions.end() ? m.time : DimensionSql(*dim);
    if (Identifier(time)) {
      out.time = time;
    } else {
      imported.notes.push_back("metric " + name + ": its time dimension " + m.time +
                               " is an expression, not a column: time left out");
    }
  }
  out.description = description.empty() ? m.description : description;
  if (!label.empty() && engine::JoinWords(label) != engine::JoinWords(name)) {
    out.synonyms.push_back(label);
  }
  out.origin = {id, 0};
  if (std::ranges::any_of(imported.metrics,
                          [&](const Metric& o) { return Lower(o.name) == Lower(name); })) {
    return skip("another metric has the same name");
  }
  imported.metrics.push_back(std::move(out));
}

}  // namespace

void ReadMetrics(const Json& manifest, const TableOfTarget& table_of, DbtImport& out) {
  std::map<std::string, Measure> measures;  // by name, unique in a dbt project
  if (const Json* models = Member(manifest, "semantic_models", "", Shape::kObject)) {
    for (const auto& [id, model] : models->items())
      ReadSemanticModel(id, model, table_of, measures);
  }
  if (const Json* metrics = Member(manifest, "metrics", "", Shape::kObject)) {
    for (const auto& [id, metric] : metrics->items()) ReadMetric(id, metric, measures, out);
  }
}

}  // namespace quarry::knowledge::dbt_internal
